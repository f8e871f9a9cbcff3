"""Decoding and encoding images: the ``decode_image`` and ``encode_png`` ops.

Decoding runs on the CPU when the op runs (eagerly, or each time a traced function or a
``tf.data`` pipeline reaches it): its input is a scalar string of the file's bytes, its output
an image whose height and width (and, without ``channels``, depth) are known only then.  The
format is read from the bytes, as TF does: PNG and BMP are decoded by hybridtf itself (``ops``),
JPEG and GIF by Pillow, an optional dependency (``pip install "hybridtf[images]"``).

Channels follow TF: with ``channels=0`` an image keeps its own (gray 1, gray+alpha 2, RGB 3,
RGBA 4; a palette image 3, or 4 with transparency); otherwise gray is repeated to RGB, RGB
becomes gray as ``(9798 R + 19235 G + 3735 B) >> 15`` (libpng's integer weights of 0.299,
0.587, 0.114), alpha is dropped or added (opaque, or from the tRNS chunk).  16-bit samples
become uint8 by their high byte, 8-bit samples uint16 by ``* 257``.
"""
import importlib
import io
import struct

import numpy as np

from ops import bmp, png

from hybridtf.framework.errors import ResourceExhaustedError
from hybridtf.registry import OpDef, Spec, checks, register

INSTALL_HINT = 'pip install "hybridtf[images]"'
FORMATS = (("png", png.SIGNATURE), ("jpeg", b"\xff\xd8\xff"), ("gif", b"GIF8"),
           ("bmp", bmp.SIGNATURE))


def pillow_image(op_name, what):
    """Pillow's ``Image`` module, or an ImportError that says how to install it."""
    try:
        return importlib.import_module("PIL.Image")
    except ImportError as err:
        raise ImportError(f"{op_name}: decoding {what} images needs Pillow, which is not "
                          f"installed; install it with: {INSTALL_HINT}") from err


def image_format(data):
    for name, signature in FORMATS:
        if data.startswith(signature):
            return name
    return None


# ---- samples to TF's channels and dtypes --------------------------------------------------------
_GRAY_WEIGHTS = np.array([9798, 19235, 3735], np.int64)


def _gray(rgb):
    return ((rgb.astype(np.int64) @ _GRAY_WEIGHTS) >> 15).astype(rgb.dtype)[..., None]


def _opaque(image):
    return np.full(image.shape[:-1] + (1,), np.iinfo(image.dtype).max, image.dtype)


def to_channels(image, channels, alpha=None):
    """``image`` (..., 1-4 channels) with ``channels`` channels (0: as it is).  ``alpha``: the
    alpha channel to add for 4 channels when ``image`` has none (default opaque)."""
    have = image.shape[-1]
    if channels == 0 or channels == have:
        return image
    color = image[..., :1] if have <= 2 else image[..., :3]
    if channels == 1:
        return color if have <= 2 else _gray(color)
    rgb = np.repeat(color, 3, axis=-1) if have <= 2 else color
    if channels == 3:
        return rgb
    if have in (2, 4):
        alpha = image[..., -1:]
    return np.concatenate([rgb, alpha if alpha is not None else _opaque(image)], axis=-1)


def to_dtype(image, dtype):
    """uint8 or uint16 samples as ``dtype`` (uint8 or uint16), as TF rescales them."""
    if image.dtype == dtype:
        return image
    if dtype == np.uint16:
        return image.astype(np.uint16) * np.uint16(257)
    return (image >> 8).astype(np.uint8)


# ---- the formats --------------------------------------------------------------------------------
def _expand_bits(samples, depth):
    """Gray samples of 1, 2 or 4 bits scaled to 8 (1 -> 255 for one bit, as libpng)."""
    return samples if depth >= 8 else samples * np.uint8(255 // ((1 << depth) - 1))


def _png(op_name, data, channels, attrs):
    try:
        decoded = png.read(data)
    except png.FormatError as err:
        checks.fail(op_name, f"Invalid PNG data: {err}")
    samples, color, depth = decoded.samples, decoded.color_type, decoded.bit_depth
    trns = decoded.transparency
    alpha = None
    if color == png.PALETTE:
        table = np.zeros((256, 4), np.uint8)
        table[:, 3] = 255
        table[:len(decoded.palette), :3] = decoded.palette
        if trns is not None:
            table[:min(len(trns), 256), 3] = np.frombuffer(trns[:256], np.uint8)
        samples = table[samples[..., 0]]
        if trns is None or channels == 1:
            samples = samples[..., :3]
    elif color == png.GRAY:
        samples = _expand_bits(samples, depth)
        if trns is not None and len(trns) >= 2 and channels == 4:
            key = _expand_bits(np.array(int.from_bytes(trns[:2], "big"), samples.dtype), depth)
            alpha = np.where(samples == key, 0, np.iinfo(samples.dtype).max).astype(
                samples.dtype)
    elif color == png.RGB and trns is not None and len(trns) >= 6 and channels == 4:
        key = np.array([int.from_bytes(trns[i:i + 2], "big") for i in (0, 2, 4)])
        alpha = np.where(np.all(samples == key, axis=-1, keepdims=True), 0,
                         np.iinfo(samples.dtype).max).astype(samples.dtype)
    return to_channels(samples, channels, alpha)


def _bmp(op_name, data, channels, attrs):
    try:
        image = bmp.read(data)
    except bmp.FormatError as err:
        checks.fail(op_name, f"Invalid BMP data: {err}")
    return to_channels(image, channels)


# Pillow's errors for data it cannot decode (its readers index and unpack past the end of
# truncated data: IndexError, struct.error).
_PILLOW_ERRORS = (OSError, SyntaxError, ValueError, EOFError, IndexError, struct.error)


def _too_large(op_name, image_module, err):
    """Pillow refuses images whose header claims more pixels than ``MAX_IMAGE_PIXELS`` allows
    (a decompression bomb, or corrupt data)."""
    raise ResourceExhaustedError(
        None, op_name, f"{op_name}: {err} If the image is genuine, raise the limit by setting "
        f"PIL.Image.MAX_IMAGE_PIXELS (now {image_module.MAX_IMAGE_PIXELS}).") from None


def _jpeg(op_name, data, channels, attrs):
    image_module = pillow_image(op_name, "JPEG")
    ratio = attrs["ratio"]
    if attrs["recover"]:
        data += b"\xff\xd9"   # an end-of-image marker: the decoder fills in what is missing
    try:
        image = image_module.open(io.BytesIO(data))
        mode = "L" if channels == 1 or (channels == 0 and image.mode == "L") else "RGB"
        width, height = image.size
        # Decoding at 1/ratio scale: the decoder's DCT scaling, as TF's ``ratio``.
        image.draft(mode, None if ratio == 1 else (max(1, width // ratio),
                                                   max(1, height // ratio)))
        array = np.asarray(image.convert(mode))
    except _PILLOW_ERRORS as err:
        checks.fail(op_name, f"Invalid JPEG data: {err}")
    except image_module.DecompressionBombError as err:
        _too_large(op_name, image_module, err)
    return array[..., None] if array.ndim == 2 else array


def _gif_frames(op_name, data):
    image_module = pillow_image(op_name, "GIF")
    frames = []
    try:
        image = image_module.open(io.BytesIO(data))
        for index in range(getattr(image, "n_frames", 1)):
            image.seek(index)
            frames.append(np.asarray(image.convert("RGB")))
    except _PILLOW_ERRORS as err:
        checks.fail(op_name, f"Invalid GIF data: {err}")
    except image_module.DecompressionBombError as err:
        _too_large(op_name, image_module, err)
    if any(f.shape != frames[0].shape for f in frames):
        checks.fail(op_name, "Invalid GIF data: its frames have different sizes.")
    return np.stack(frames)


_DECODERS = {"png": _png, "bmp": _bmp, "jpeg": _jpeg}   # (op_name, data, channels, attrs)
_ALLOWED_CHANNELS = {"jpeg": (0, 1, 3), "gif": (0, 3), "bmp": (0, 3, 4), "png": (0, 1, 3, 4)}


def _decode_eager(arrays, attrs):
    op_name = attrs["name"]
    data = arrays[0][()]
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    kind = image_format(data)
    if kind is None:
        checks.fail(op_name, "Unknown image file format. One of JPEG, PNG, GIF, BMP required.")
    if attrs["only"] is not None and kind != attrs["only"]:
        checks.fail(op_name, f"Trying to decode {kind.upper()} format using {op_name}. Use "
                    "`decode_image` instead.")
    channels = attrs["channels"]
    if channels not in _ALLOWED_CHANNELS[kind]:
        allowed = ", ".join(map(str, _ALLOWED_CHANNELS[kind]))
        checks.fail(op_name, f"channels must be {allowed} for {kind.upper()}, but got "
                    f"{channels}.")
    if kind == "gif":
        frames = _gif_frames(op_name, data)
        image = frames if attrs["frames"] else frames[0]
    else:
        image = _DECODERS[kind](op_name, data, channels, attrs)
        if attrs["frames"] is True:
            image = image[None]
    return np.ascontiguousarray(to_dtype(image, np.dtype(attrs["dtype"])))


def _decode_infer(specs, attrs):
    contents, = specs
    op_name = attrs["name"]
    if contents.dtype != object:
        raise TypeError(f"{op_name}: contents must be a tf.string tensor (the bytes of the "
                        f"file), got {checks.dtype_name(contents.dtype)}.")
    if contents.shape is not None and len(contents.shape) != 0:
        checks.fail(op_name, f"`contents` must be scalar but got shape "
                    f"{checks.fmt_shape(contents.shape)}; decode one image at a time "
                    "(tf.map_fn or Dataset.map).")
    depth = attrs["channels"] or None
    dtype = np.dtype(attrs["dtype"])
    if attrs["frames"] == "unknown":
        return [Spec(None, dtype)]        # 4-D for a GIF, 3-D otherwise: unknown rank
    if attrs["frames"]:
        return [Spec((None, None, None, 3), dtype)]
    return [Spec((None, None, depth), dtype)]


DECODE_IMAGE = register(OpDef("decode_image", "opaque", {"cpu": _decode_eager}, _decode_infer))


# ---- encode_png ---------------------------------------------------------------------------------
def _encode_infer(specs, attrs):
    image, = specs
    checks.allowed_dtype("encode_png", image.dtype, ("uint8", "uint16"), "image")
    if image.shape is None:
        return [Spec((), np.dtype(object))]
    if len(image.shape) != 3:
        checks.fail("encode_png", f"image must be 3-D [height, width, channels], got shape "
                    f"{checks.fmt_shape(image.shape)}.")
    channels = image.shape[-1]
    if channels is not None and channels not in (1, 2, 3, 4):
        checks.fail("encode_png", f"image must have 1, 2, 3, or 4 channels, got {channels}.")
    if 0 in image.shape[:2]:
        checks.fail("encode_png", f"image must not be empty, got shape "
                    f"{checks.fmt_shape(image.shape)}.")
    return [Spec((), np.dtype(object))]


def _encode_eager(arrays, attrs):
    return np.array(png.write(arrays[0], attrs["compression"]), dtype=object)


ENCODE_PNG = register(OpDef("encode_png", "opaque", {"cpu": _encode_eager}, _encode_infer))
