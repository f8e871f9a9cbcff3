"""``tf.image``."""
from hybridtf.api.image_ops import (  # noqa: F401
    ResizeMethod, adjust_brightness, adjust_contrast, central_crop, convert_image_dtype,
    crop_to_bounding_box, flip_left_right, flip_up_down, random_flip_left_right,
    random_flip_up_down, resize, rot90, stateless_random_flip_left_right,
    stateless_random_flip_up_down)
from hybridtf.api.image_codec_ops import (  # noqa: F401
    decode_bmp, decode_gif, decode_image, decode_jpeg, decode_png, encode_png)
