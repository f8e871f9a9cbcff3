"""Writing test images byte by byte, independently of the decoders under test: PNG files of
every color type, bit depth and interlacing (scanlines unfiltered), and BMP files."""
import struct
import zlib

import numpy as np

ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2))


def _chunk(kind, payload):
    return (struct.pack(">I", len(payload)) + kind + payload
            + struct.pack(">I", zlib.crc32(kind + payload)))


def _scanlines(samples, depth):
    """Rows of (rows, columns, samples) values packed at ``depth`` bits, each after filter 0."""
    rows, columns, count = samples.shape
    flat = samples.reshape(rows, columns * count).astype(np.uint16)
    out = b""
    for row in flat:
        if depth == 16:
            packed = row.astype(">u2").tobytes()
        elif depth == 8:
            packed = row.astype(np.uint8).tobytes()
        else:
            bits = ((row[:, None] >> np.arange(depth - 1, -1, -1)) & 1).astype(np.uint8)
            packed = np.packbits(bits.reshape(-1)).tobytes()
        out += b"\x00" + packed
    return out


def png_bytes(samples, color_type, depth, palette=None, transparency=None, interlace=False,
              idat_pieces=1):
    """A PNG file of ``samples`` (height, width, samples per pixel) as stored values."""
    samples = np.asarray(samples)
    height, width = samples.shape[:2]
    if interlace:
        data = b"".join(_scanlines(samples[y0::dy, x0::dx], depth)
                        for x0, y0, dx, dy in ADAM7 if samples[y0::dy, x0::dx].size)
    else:
        data = _scanlines(samples, depth)
    compressed = zlib.compress(data)
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(
        ">IIBBBBB", width, height, depth, color_type, 0, 0, int(interlace)))
    if palette is not None:
        out += _chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes())
    if transparency is not None:
        out += _chunk(b"tRNS", bytes(transparency))
    step = -(-len(compressed) // idat_pieces)
    for i in range(0, len(compressed), step):
        out += _chunk(b"IDAT", compressed[i:i + step])
    return out + _chunk(b"IEND", b"")


def bmp_bytes(pixels, bits, top_down=False):
    """A BMP file of ``pixels`` (height, width, channels) uint8: RGB(A) for 24 and 32 bits
    (stored as BGR(A)), one channel of raw values (with a gray palette) for 8 bits."""
    pixels = np.asarray(pixels, np.uint8)
    height, width = pixels.shape[:2]
    if bits == 24:
        stored = pixels[:, :, ::-1]
    elif bits == 32:
        stored = pixels[:, :, [2, 1, 0, 3]]
    else:
        stored = pixels
    stride = (bits * width + 31) // 32 * 4
    rows = stored if top_down else stored[::-1]
    body = b"".join(row.tobytes().ljust(stride, b"\x00") for row in rows)
    palette = bytes(np.repeat(np.arange(256, dtype=np.uint8), 4)) if bits == 8 else b""
    offset = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, width, -height if top_down else height, 1, bits,
                       0, len(body), 2835, 2835, 256 if bits == 8 else 0, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(body), 0, 0, offset) + info + palette + body
