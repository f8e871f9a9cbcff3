"""BMP files: reading uncompressed 8-, 24- and 32-bit bitmaps into arrays.

An 8-bit bitmap gives its raw values as one channel (its palette is not applied, as in TF),
24-bit gives RGB, 32-bit RGBA (the fourth byte as alpha).  Rows are stored bottom-up unless
the height is negative, each padded to a multiple of 4 bytes; pixels are stored as BGR(A).
"""
import struct

import numpy as np

SIGNATURE = b"BM"
_FILE_HEADER = 14
_CHANNELS = {8: 1, 24: 3, 32: 4}
_BI_RGB, _BI_BITFIELDS = 0, 3


class FormatError(ValueError):
    """The bytes are not a BMP file this reader can decode (the message says why)."""


def read(data):
    """The image in ``data`` (bytes) as a (height, width, channels) uint8 array."""
    if not data.startswith(SIGNATURE) or len(data) < _FILE_HEADER + 40:
        raise FormatError("the data are not a BMP file (too short, or no 'BM' signature).")
    offset, = struct.unpack_from("<I", data, 10)
    header_size, width, height, _, bits, compression = struct.unpack_from("<IiiHHI", data, 14)
    if header_size < 40:
        raise FormatError(f"its info header has {header_size} bytes; only the 40-byte and "
                          "larger Windows headers are supported.")
    if bits not in _CHANNELS:
        raise FormatError(f"Number of channels inherent in the image must be 1, 3 or 4, was "
                          f"{bits // 8} ({bits} bits per pixel).")
    if compression not in (_BI_RGB, _BI_BITFIELDS):
        raise FormatError(f"it is compressed (compression type {compression}); only "
                          "uncompressed bitmaps are supported.")
    if width <= 0 or height == 0:
        raise FormatError(f"its size {width}x{height} is invalid.")
    channels = _CHANNELS[bits]
    rows = abs(height)
    stride = (bits * width + 31) // 32 * 4
    if offset + stride * rows > len(data):
        raise FormatError("the file is truncated: its pixel data are incomplete.")
    pixels = np.frombuffer(data, np.uint8, stride * rows, offset).reshape(rows, stride)
    image = pixels[:, :width * channels].reshape(rows, width, channels)
    if height > 0:                      # bottom-up rows
        image = image[::-1]
    if channels == 3:
        image = image[:, :, ::-1]       # BGR -> RGB
    elif channels == 4:
        image = image[:, :, [2, 1, 0, 3]]
    return np.ascontiguousarray(image)
