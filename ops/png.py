"""PNG files: reading them into arrays of samples and writing arrays as PNG.

Written from the PNG specification (ISO/IEC 15948): chunks with CRCs, a zlib stream of
filtered scanlines, bit depths 1 to 16, palettes, transparency (tRNS) and Adam7 interlacing.
``read`` returns the samples as stored -- gray, gray+alpha, RGB, RGBA or palette indices --
widened to uint8 (depths 1-8) or uint16 (depth 16); what to make of them (palette lookup,
channel conversion) is the caller's.  Undoing and choosing the scanline filters, the only
sequential steps, are Numba kernels.
"""
import struct
import zlib

import numpy as np

from ops.kernel_cache import njit

_jit = njit(error_model="numpy")

SIGNATURE = b"\x89PNG\r\n\x1a\n"
GRAY, RGB, PALETTE, GRAY_ALPHA, RGBA = 0, 2, 3, 4, 6
SAMPLES = {GRAY: 1, RGB: 3, PALETTE: 1, GRAY_ALPHA: 2, RGBA: 4}
DEPTHS = {GRAY: (1, 2, 4, 8, 16), RGB: (8, 16), PALETTE: (1, 2, 4, 8), GRAY_ALPHA: (8, 16),
          RGBA: (8, 16)}
# Adam7: (first column, first row, column step, row step) of each pass.
ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2))
_MAX_SIDE = (1 << 31) - 1


class FormatError(ValueError):
    """The bytes are not a valid PNG file (the message says what is wrong)."""


class Png:
    """A decoded PNG: ``samples`` (height, width, samples per pixel) uint8 or uint16, its
    ``color_type`` and ``bit_depth``, the ``palette`` ((n, 3) uint8) and ``transparency`` (the
    tRNS chunk's bytes, or None)."""

    def __init__(self, samples, color_type, bit_depth, palette, transparency):
        self.samples = samples
        self.color_type = color_type
        self.bit_depth = bit_depth
        self.palette = palette
        self.transparency = transparency


# ---- filters ------------------------------------------------------------------------------------
@_jit
def _paeth(a, b, c):
    p = a + b - c
    pa = abs(p - a)
    pb = abs(p - b)
    pc = abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    if pb <= pc:
        return b
    return c


@_jit
def unfilter(data, start, height, row_bytes, bpp, out):
    """Undoes the filters of ``height`` scanlines of ``row_bytes`` bytes that start at
    ``data[start]``, each preceded by its filter type, into ``out`` (height, row_bytes) uint8.
    ``bpp``: bytes per complete pixel (at least 1).  Returns -1, or the first row whose filter
    type is not 0-4."""
    pos = start
    for y in range(height):
        kind = data[pos]
        pos += 1
        if kind > 4:
            return y
        for x in range(row_bytes):
            a = np.int32(out[y, x - bpp]) if x >= bpp else np.int32(0)
            b = np.int32(out[y - 1, x]) if y > 0 else np.int32(0)
            c = np.int32(out[y - 1, x - bpp]) if y > 0 and x >= bpp else np.int32(0)
            v = np.int32(data[pos + x])
            if kind == 1:
                v += a
            elif kind == 2:
                v += b
            elif kind == 3:
                v += (a + b) >> 1
            elif kind == 4:
                v += _paeth(a, b, c)
            out[y, x] = v & 255
        pos += row_bytes
    return -1


@_jit
def filter_rows(rows, bpp, out):
    """Filters each row of ``rows`` (height, row_bytes) uint8 into ``out`` (height,
    1 + row_bytes), choosing per row the filter whose output has the smallest sum of absolute
    values (as signed bytes): the usual heuristic for small files."""
    height, row_bytes = rows.shape
    trial = np.empty(row_bytes, np.uint8)
    for y in range(height):
        best = -1
        best_cost = 0
        for kind in range(5):
            cost = 0
            for x in range(row_bytes):
                a = np.int32(rows[y, x - bpp]) if x >= bpp else np.int32(0)
                b = np.int32(rows[y - 1, x]) if y > 0 else np.int32(0)
                c = np.int32(rows[y - 1, x - bpp]) if y > 0 and x >= bpp else np.int32(0)
                v = np.int32(rows[y, x])
                if kind == 1:
                    v -= a
                elif kind == 2:
                    v -= b
                elif kind == 3:
                    v -= (a + b) >> 1
                elif kind == 4:
                    v -= _paeth(a, b, c)
                v &= 255
                trial[x] = v
                cost += v if v < 128 else 256 - v
            if best < 0 or cost < best_cost:
                best = kind
                best_cost = cost
                out[y, 0] = kind
                for x in range(row_bytes):
                    out[y, 1 + x] = trial[x]


# ---- reading ------------------------------------------------------------------------------------
def _chunks(data):
    """(type, payload) of each chunk up to IEND, checking lengths and CRCs."""
    pos = len(SIGNATURE)
    while True:
        if pos + 8 > len(data):
            raise FormatError("the file is truncated: it ends before its IEND chunk.")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        end = pos + 8 + length
        if end + 4 > len(data):
            raise FormatError(f"the file is truncated inside its {kind!r} chunk.")
        payload = data[pos + 8:end]
        crc, = struct.unpack(">I", data[end:end + 4])
        if zlib.crc32(kind + payload) != crc:
            raise FormatError(f"the CRC of its {kind!r} chunk is wrong (corrupt data).")
        yield kind, payload
        if kind == b"IEND":
            return
        pos = end + 4


def _header(payload):
    if len(payload) != 13:
        raise FormatError("its IHDR chunk has the wrong length.")
    width, height, depth, color, compression, filtering, interlace = struct.unpack(
        ">IIBBBBB", payload)
    if not (0 < width <= _MAX_SIDE and 0 < height <= _MAX_SIDE):
        raise FormatError(f"its size {width}x{height} is invalid.")
    if color not in DEPTHS or depth not in DEPTHS[color]:
        raise FormatError(f"color type {color} with bit depth {depth} is invalid.")
    if compression != 0 or filtering != 0 or interlace not in (0, 1):
        raise FormatError("its compression, filter or interlace method is invalid.")
    return width, height, depth, color, interlace


def _passes(width, height, interlace):
    """(first column, first row, column step, row step, columns, rows) of each non-empty pass."""
    layout = ADAM7 if interlace else ((0, 0, 1, 1),)
    out = []
    for x0, y0, dx, dy in layout:
        columns = (width - x0 + dx - 1) // dx
        rows = (height - y0 + dy - 1) // dy
        if columns > 0 and rows > 0:
            out.append((x0, y0, dx, dy, columns, rows))
    return out


def _unpack(rows, columns, samples, depth):
    """Scanline bytes (rows, row_bytes) as samples (rows, columns, samples)."""
    count = columns * samples
    if depth == 16:
        values = rows.view(">u2")[:, :count].astype(np.uint16)
    elif depth == 8:
        values = rows[:, :count]
    else:
        bits = np.unpackbits(rows, axis=1)
        per = bits.reshape(rows.shape[0], -1, depth)[:, :count]
        values = np.zeros(per.shape[:2], np.uint8)
        for i in range(depth):
            values = (values << 1) | per[:, :, i]
    return values.reshape(rows.shape[0], columns, samples)


def read(data):
    """The ``Png`` in ``data`` (bytes); ``FormatError`` for anything that is not a valid PNG."""
    if not data.startswith(SIGNATURE):
        raise FormatError("the data do not start with the PNG signature.")
    header = None
    palette = transparency = None
    compressed = []
    for kind, payload in _chunks(data):
        if header is None:
            if kind != b"IHDR":
                raise FormatError("its first chunk is not IHDR.")
            header = _header(payload)
        elif kind == b"PLTE":
            if len(payload) % 3 or not 0 < len(payload) <= 768:
                raise FormatError("its palette (PLTE) has an invalid length.")
            palette = np.frombuffer(payload, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            transparency = payload
        elif kind == b"IDAT":
            compressed.append(payload)
        elif kind[0] < 97 and kind not in (b"IEND", b"IHDR"):   # an unknown critical chunk
            raise FormatError(f"it has an unknown critical chunk {kind!r}.")
    width, height, depth, color, interlace = header
    if color == PALETTE and palette is None:
        raise FormatError("it is a palette image without a palette (PLTE) chunk.")
    samples = SAMPLES[color]
    bits = samples * depth
    bpp = max(1, bits // 8)
    passes = _passes(width, height, interlace)
    sizes = [rows * (1 + (columns * bits + 7) // 8) for *_, columns, rows in passes]
    stream = zlib.decompressobj()
    try:
        raw = stream.decompress(b"".join(compressed), sum(sizes))
    except zlib.error as err:
        raise FormatError(f"its image data cannot be decompressed ({err}).") from None
    if len(raw) < sum(sizes):
        raise FormatError("its image data are truncated.")
    raw = np.frombuffer(raw, np.uint8)
    image = np.zeros((height, width, samples), np.uint16 if depth == 16 else np.uint8)
    start = 0
    for (x0, y0, dx, dy, columns, rows), size in zip(passes, sizes):
        row_bytes = size // rows - 1
        scanlines = np.empty((rows, row_bytes), np.uint8)
        bad = unfilter(raw, start, rows, row_bytes, bpp, scanlines)
        if bad >= 0:
            raise FormatError(f"scanline {bad} has an invalid filter type.")
        image[y0::dy, x0::dx] = _unpack(scanlines, columns, samples, depth)
        start += size
    return Png(image, color, depth, palette, transparency)


# ---- writing ------------------------------------------------------------------------------------
def _chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(
        ">I", zlib.crc32(kind + payload))


def write(image, level=-1):
    """PNG bytes of ``image`` (height, width, channels) uint8 or uint16 with 1 (gray), 2 (gray
    and alpha), 3 (RGB) or 4 (RGBA) channels; ``level``: zlib's compression level (-1: its
    default, 0: none, 1-9: fastest to smallest).  Rows are filtered adaptively except at
    level 0."""
    height, width, channels = image.shape
    depth = 16 if image.dtype == np.uint16 else 8
    color = {1: GRAY, 2: GRAY_ALPHA, 3: RGB, 4: RGBA}[channels]
    rows = np.ascontiguousarray(image.astype(">u2") if depth == 16 else image)
    rows = rows.view(np.uint8).reshape(height, width * channels * depth // 8)
    filtered = np.empty((height, rows.shape[1] + 1), np.uint8)
    if level == 0:
        filtered[:, 0] = 0
        filtered[:, 1:] = rows
    else:
        filter_rows(rows, channels * depth // 8, filtered)
    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(filtered.tobytes(), level))
            + _chunk(b"IEND", b""))
