"""``tf.keras.utils``: helpers for data, custom objects, seeding and model plots."""
from hybridtf.keras.object_registration import (  # noqa: F401
    CustomObjectScope, custom_object_scope, get_custom_objects, get_registered_name,
    get_registered_object, register_keras_serializable)
from hybridtf.keras.utils.file_utils import get_file  # noqa: F401
from hybridtf.keras.utils.image_dataset_utils import (  # noqa: F401
    image_dataset_from_directory)
from hybridtf.keras.utils.image_utils import (  # noqa: F401
    array_to_img, img_to_array, load_img, save_img)
from hybridtf.keras.utils.model_visualization import model_to_dot, plot_model  # noqa: F401
from hybridtf.keras.utils.numerical_utils import normalize, to_categorical  # noqa: F401
from hybridtf.keras.utils.rng_utils import set_random_seed  # noqa: F401
from hybridtf.keras.utils.sequence_utils import pad_sequences  # noqa: F401
from hybridtf.keras.utils.text_dataset_utils import (  # noqa: F401
    text_dataset_from_directory)
from hybridtf.keras.utils.timeseries_dataset_utils import (  # noqa: F401
    timeseries_dataset_from_array)
