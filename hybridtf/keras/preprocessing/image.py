"""``tf.keras.preprocessing.image``: loading, converting, saving and resizing images."""
from hybridtf.keras.utils.image_utils import (  # noqa: F401
    array_to_img, img_to_array, load_img, save_img, smart_resize)
