"""Images as arrays: ``keras.utils.load_img`` / ``img_to_array`` / ``array_to_img`` /
``save_img`` (also ``keras.preprocessing.image``), and ``smart_resize``.

``load_img``, ``array_to_img`` and ``save_img`` work with Pillow images, as Keras's do: Pillow is
an optional dependency (``pip install "hybridtf[images]"``); without it they raise an
ImportError saying so.  ``img_to_array`` and ``smart_resize`` need only NumPy.
"""
import importlib
import io
import os
import pathlib
import warnings

import numpy as np

from hybridtf.api import array_ops, image_ops
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.tensor import Tensor
from hybridtf.keras import backend

INSTALL_HINT = 'pip install "hybridtf[images]"'
COLOR_MODES = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
# Pillow's resampling filters by Keras's interpolation names.
PIL_FILTERS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def pillow(who):
    """Pillow's ``Image`` module, or an ImportError naming ``who`` and how to install it."""
    try:
        return importlib.import_module("PIL.Image")
    except ImportError as err:
        raise ImportError(f"{who} needs Pillow (PIL), which is not installed; install it with: "
                          f"{INSTALL_HINT}") from err


def _data_format(data_format):
    data_format = data_format or backend.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f'data_format must be "channels_last" or "channels_first", got '
                         f"{data_format!r}.")
    return data_format


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """Loads an image file into a Pillow image.

    Args:
      path: the image file (a path, or a ``BytesIO`` of its bytes).
      color_mode: ``"rgb"``, ``"rgba"`` or ``"grayscale"``: the image is converted to it
        (a 16- or 32-bit grayscale image stays as it is for ``"grayscale"``).
      target_size: ``(height, width)`` to resize to, or None to keep the size.
      interpolation: Pillow's filter for the resize: ``"nearest"``, ``"bilinear"``,
        ``"bicubic"``, ``"hamming"``, ``"box"`` or ``"lanczos"``.
      keep_aspect_ratio: resize the largest centered box of the target's aspect ratio
        instead of the whole image (no distortion).

    Returns:
      A ``PIL.Image.Image``.
    """
    image_module = pillow("load_img")
    if color_mode not in COLOR_MODES:
        raise ValueError(f'load_img: color_mode must be "grayscale", "rgb", or "rgba", got '
                         f"{color_mode!r}.")
    if isinstance(path, io.BytesIO):
        img = image_module.open(path)
    elif isinstance(path, (str, bytes, pathlib.PurePath)):
        with open(os.fspath(path), "rb") as f:
            img = image_module.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"load_img: path should be path-like or io.BytesIO, not "
                        f"{type(path).__name__}.")
    mode = COLOR_MODES[color_mode]
    keeps_grayscale = color_mode == "grayscale" and img.mode in ("L", "I;16", "I")
    if img.mode != mode and not keeps_grayscale:
        img = img.convert(mode)
    if target_size is None:
        return img
    height, width = target_size
    if img.size == (width, height):
        return img
    if interpolation not in PIL_FILTERS:
        raise ValueError(f"load_img: invalid interpolation method {interpolation!r}; supported "
                         f"methods are {', '.join(PIL_FILTERS)}.")
    resample = getattr(image_module.Resampling, interpolation.upper())
    box = None
    if keep_aspect_ratio:
        img_width, img_height = img.size
        crop_height = min(img_height, img_width * height // width)
        crop_width = min(img_width, img_height * width // height)
        top, left = (img_height - crop_height) // 2, (img_width - crop_width) // 2
        box = (left, top, left + crop_width, top + crop_height)
    return img.resize((width, height), resample, box=box)


def img_to_array(img, data_format=None, dtype=None):
    """A Pillow image (or anything NumPy reads as one) as a 3-D array ``(height, width,
    channels)`` -- ``(channels, height, width)`` for ``data_format="channels_first"`` -- of
    ``dtype`` (default: ``keras.backend.floatx()``); a grayscale image gets one channel."""
    data_format = _data_format(data_format)
    array = np.asarray(img, dtype=dtype or backend.floatx())
    if array.ndim == 2:
        array = array[:, :, None]
    elif array.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {array.shape}; an image is "
                         "(height, width) or (height, width, channels).")
    return array.transpose(2, 0, 1) if data_format == "channels_first" else array


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A 3-D array (one image) as a Pillow image: 1 channel gives a grayscale image, 3 an
    RGB one, 4 an RGBA one.  ``scale`` maps the array's values linearly onto 0-255 (its
    minimum to 0, its maximum to 255) first."""
    image_module = pillow("array_to_img")
    data_format = _data_format(data_format)
    array = np.asarray(x, dtype=dtype or backend.floatx())
    if array.ndim != 3:
        raise ValueError(f"array_to_img: expected an image array of rank 3 (one image), got an "
                         f"array of shape {array.shape}.")
    if data_format == "channels_first":
        array = array.transpose(1, 2, 0)
    if scale:
        array = array - array.min()
        peak = array.max()
        if peak != 0:
            array = array / peak
        array = array * 255
    channels = array.shape[2]
    if channels in (3, 4):
        return image_module.fromarray(array.astype(np.uint8), "RGB" if channels == 3 else "RGBA")
    if channels == 1:
        plane = array[:, :, 0]
        if plane.max() > 255:           # a wide grayscale image: 32-bit integer samples
            return image_module.fromarray(plane.astype(np.int32), "I")
        return image_module.fromarray(plane.astype(np.uint8), "L")
    raise ValueError(f"array_to_img: unsupported number of channels {channels}; use 1, 3 or 4.")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Saves the 3-D array ``x`` as an image file (``array_to_img``, then Pillow's
    ``save``; ``file_format`` or the file name's extension says which format).  An RGBA
    image saved as JPEG loses its alpha channel, with a warning."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    extension = os.path.splitext(os.fspath(path))[1].lower().lstrip(".") \
        if isinstance(path, (str, pathlib.PurePath)) else ""
    if file_format is not None and file_format.lower() == "jpg":
        file_format = "jpeg"
    if img.mode == "RGBA" and (file_format or extension) in ("jpg", "jpeg"):
        warnings.warn("save_img: the JPEG format does not support RGBA images; the image is "
                      "saved as RGB.", stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


# ---- resizing without distortion ---------------------------------------------------------------
def _crop_box(height, width, target_height, target_width):
    """``(top, left, crop_height, crop_width)``: the largest centered box of the target's
    aspect ratio."""
    crop_height = max(min(height, int(float(width * target_height) / target_width)), 1)
    crop_width = max(min(width, int(float(height * target_width) / target_height)), 1)
    return (int(float(height - crop_height) / 2), int(float(width - crop_width) / 2),
            crop_height, crop_width)


def smart_resize(x, size, interpolation="bilinear", data_format="channels_last"):
    """Resizes images to ``size`` = ``(height, width)`` without distorting them: the largest
    centered box of the target's aspect ratio is cropped, then resized with
    ``tf.image.resize`` (``interpolation`` is its method).

    ``x``: one image ``(height, width, channels)`` or a batch ``(batch, height, width,
    channels)`` (channels first with ``data_format="channels_first"``), as an array or an
    eager tensor; a NumPy array gives a NumPy array, a tensor a tensor.
    """
    if len(size) != 2:
        raise ValueError(f"smart_resize: expected `size` to be a tuple of 2 integers, got "
                         f"{size!r}.")
    data_format = _data_format(data_format)
    image = x if isinstance(x, Tensor) else convert_to_tensor(np.asarray(x))
    rank = image.shape.rank
    if rank not in (3, 4):
        raise ValueError("smart_resize: expected an image array with shape (height, width, "
                         "channels), or (batch_size, height, width, channels), but got input "
                         f"with incorrect rank, of shape {tuple(image.shape.as_list())}.")
    if data_format == "channels_first":
        image = array_ops.transpose(image, [0, 2, 3, 1] if rank == 4 else [1, 2, 0])
    height, width = image.shape.as_list()[-3:-1]
    top, left, crop_height, crop_width = _crop_box(height, width, *size)
    image = image[..., top:top + crop_height, left:left + crop_width, :]
    image = image_ops.resize(image, size, method=interpolation)
    if data_format == "channels_first":
        image = array_ops.transpose(image, [0, 3, 1, 2] if rank == 4 else [2, 0, 1])
    return image.numpy() if isinstance(x, np.ndarray) else image


def resize_with_pad(image, target_height, target_width, method="bilinear"):
    """``image`` (eager, ``(height, width, channels)``) scaled to fit ``(target_height,
    target_width)`` keeping its aspect ratio, then padded with zeros around it, centered (as
    ``tf.image.resize_with_pad``)."""
    height, width = image.shape.as_list()[-3:-1]
    ratio = max(width / target_width, height / target_height)
    new_height, new_width = int(np.floor(height / ratio)), int(np.floor(width / ratio))
    top = max(0, (target_height - new_height) // 2)
    left = max(0, (target_width - new_width) // 2)
    resized = image_ops.resize(image, (new_height, new_width), method=method)
    return array_ops.pad(resized, [[top, target_height - new_height - top],
                                   [left, target_width - new_width - left], [0, 0]])
