"""``tf.keras.preprocessing.sequence``: ``pad_sequences``."""
from hybridtf.keras.utils.sequence_utils import pad_sequences  # noqa: F401
