"""``tf.keras.preprocessing``: the dataset utilities under their earlier names, and the
``image`` and ``sequence`` helpers (the same functions as in ``keras.utils``)."""
from hybridtf.keras.preprocessing import image, sequence  # noqa: F401
from hybridtf.keras.utils.image_dataset_utils import (  # noqa: F401
    image_dataset_from_directory)
from hybridtf.keras.utils.text_dataset_utils import (  # noqa: F401
    text_dataset_from_directory)
from hybridtf.keras.utils.timeseries_dataset_utils import (  # noqa: F401
    timeseries_dataset_from_array)
