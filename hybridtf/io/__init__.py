"""``tf.io``: reading and writing files, CSV records and images; ``tf.io.gfile``."""
from hybridtf.api.image_codec_ops import (  # noqa: F401
    decode_bmp, decode_gif, decode_image, decode_jpeg, decode_png, encode_png)
from hybridtf.api.parsing_ops import decode_csv  # noqa: F401
from hybridtf.io import gfile  # noqa: F401
from hybridtf.io.file_ops import read_file, write_file  # noqa: F401
