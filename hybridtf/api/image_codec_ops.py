"""Image files: ``tf.io.decode_png``, ``decode_jpeg``, ``decode_gif``, ``decode_bmp``,
``decode_image`` and ``encode_png`` (also in ``tf.image``).

Decoding reads the format from the bytes, as TF does (``decode_png`` decodes a JPEG too); PNG
and BMP need nothing more, JPEG and GIF need Pillow (``pip install "hybridtf[images]"``; an
ImportError saying so otherwise).  Inside a ``tf.function`` or ``Dataset.map`` the image's
height and width are unknown until it is decoded.
"""
from hybridtf.api.image_ops import convert_image_dtype
from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.registry import checks
from hybridtf.registry import image_codecs as IC


def _channels(op_name, channels):
    channels = 0 if channels is None else checks.integer(op_name, channels, "channels")
    if channels not in (0, 1, 3, 4):
        raise InvalidArgumentError(None, op_name, f"{op_name}: `channels` must be 0, 1, 3 or "
                                   f"4 but got {channels}.")
    return channels


def _decode(op_name, contents, channels, dtype=dtypes.uint8, frames=False, only=None, ratio=1,
            recover=False):
    return execute1(IC.DECODE_IMAGE, [as_tensor(contents)], {
        "name": op_name, "channels": channels, "dtype": dtypes.as_dtype(dtype).as_numpy_dtype,
        "frames": frames, "only": only, "ratio": ratio, "recover": recover})


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """Decodes a PNG image (scalar string ``contents``) into a uint8 or uint16 tensor of shape
    [height, width, channels].

    ``channels``: 0 keeps the image's own channels, 1 gives grayscale, 3 RGB, 4 RGBA.
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"decode_png: dtype must be uint8 or uint16, got {dtype.name}; use "
                        "decode_image for float images.")
    return _decode("decode_png", contents, _channels("decode_png", channels), dtype)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """Decodes a JPEG image into a uint8 tensor of shape [height, width, channels].

    ``channels``: 0 keeps the image's own (1 or 3), 1 gives grayscale, 3 RGB.  ``ratio`` (1,
    2, 4 or 8) decodes at that fraction of the size, by the decoder's DCT scaling.  A truncated
    file is an error, unless ``try_recover_truncated``: then the decoder fills what is missing
    (``acceptable_fraction``, the share of rows that must be present, cannot be checked by
    this decoder and is not).  Decoding uses libjpeg through Pillow with its defaults (fancy
    upsampling, the accurate integer DCT), whatever ``fancy_upscaling`` and ``dct_method``
    (hints in TF too) say, so values may differ from TF's decoder by a few levels.
    """
    ratio = checks.integer("decode_jpeg", ratio, "ratio")
    if ratio not in (1, 2, 4, 8):
        raise InvalidArgumentError(None, "decode_jpeg", f"decode_jpeg: ratio must be 1, 2, 4 "
                                   f"or 8, got {ratio}.")
    channels = _channels("decode_jpeg", channels)
    if channels == 4:
        raise InvalidArgumentError(None, "decode_jpeg", "decode_jpeg: JPEG does not support 4 "
                                   "channels; use channels=0, 1 or 3.")
    return _decode("decode_jpeg", contents, channels, ratio=ratio,
                   recover=bool(try_recover_truncated))


def decode_gif(contents, name=None):
    """Decodes the frames of a GIF image into a uint8 tensor [num_frames, height, width, 3]
    (each frame composed over the previous ones, as the animation shows it)."""
    return _decode("decode_gif", contents, 3, frames=True)


def decode_bmp(contents, channels=0, name=None):
    """Decodes an uncompressed BMP image (8, 24 or 32 bits per pixel) into a uint8 tensor
    [height, width, channels]."""
    return _decode("decode_bmp", contents, _channels("decode_bmp", channels), only="bmp")


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None, expand_animations=True):
    """Decodes a PNG, JPEG, GIF or BMP image, whichever ``contents`` holds.

    The result is [height, width, channels], or for a GIF with ``expand_animations``
    [num_frames, height, width, 3] (so the rank is unknown inside a ``tf.function``: pass
    ``expand_animations=False`` to get the first frame, 3-D, when resizing or cropping).
    ``dtype`` uint8 or uint16 gives the samples; any other dtype converts them with
    ``convert_image_dtype`` (floats in [0, 1]), from 16 bits.
    """
    dtype = dtypes.as_dtype(dtype)
    channels = _channels("decode_image", channels)
    frames = "unknown" if expand_animations else False
    if dtype in (dtypes.uint8, dtypes.uint16):
        return _decode("decode_image", contents, channels, dtype, frames)
    image = _decode("decode_image", contents, channels, dtypes.uint16, frames)
    return convert_image_dtype(image, dtype)


def encode_png(image, compression=-1, name=None):
    """PNG-encodes ``image`` (uint8 or uint16, [height, width, channels] with 1 to 4 channels)
    into a scalar string.  ``compression``: -1 for the default, 0 for none, up to 9 for the
    smallest file."""
    compression = checks.integer("encode_png", compression, "compression")
    if not -1 <= compression <= 9:
        raise InvalidArgumentError(None, "encode_png", f"encode_png: compression should be in "
                                   f"[-1,9], got {compression}.")
    return execute1(IC.ENCODE_PNG, [as_tensor(image)], {"compression": compression})
