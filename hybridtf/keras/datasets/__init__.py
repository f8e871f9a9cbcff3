"""``tf.keras.datasets``: small datasets loaded from local files (never from the network)."""
from hybridtf.keras.datasets import mnist  # noqa: F401
