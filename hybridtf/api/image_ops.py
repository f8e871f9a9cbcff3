"""``tf.image``: resizing, flips, rotations, crops, dtype conversion, brightness and contrast;
and the projective transform of TF's ``ImageProjectiveTransformV3`` (used by the Keras
augmentation layers).

Images are 3-D ``[height, width, channels]`` or 4-D ``[batch, height, width, channels]``
tensors (NHWC), as in TF.  Every op works eagerly, inside ``tf.function`` and in
``tf.data`` pipelines; the resize, crop, flip, rotation and projective-transform ops and the
float conversions have gradients with respect to the image.
"""
import numpy as np

from hybridtf.api import array_ops as A
from hybridtf.api import manip_ops
from hybridtf.api import math_ops as M
from hybridtf.api import random_ops
from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import image as IR
from hybridtf.registry import checks, sizes


class ResizeMethod:
    """The methods of ``tf.image.resize``."""
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


_METHODS = tuple(v for k, v in vars(ResizeMethod).items() if k.isupper())


def _image(value, op_name, what="image"):
    """``value`` as a 3-D or 4-D tensor (a ValueError naming the op otherwise, as TF's Python
    checks)."""
    image = as_tensor(value)
    shape = image._shape_tuple
    if shape is None:
        raise ValueError(f"{op_name}: '{what}' has an unknown rank; it must be 3-D or 4-D.  "
                         "Decode images with expand_animations=False, or give the tensor a "
                         "known rank.")
    if len(shape) < 3:
        raise ValueError(f"{op_name}: '{what}' (shape {shape}) must be at least "
                         "three-dimensional.")
    if len(shape) > 4:
        raise ValueError(f"{op_name}: '{what}' (shape {shape}) must have either 3 or 4 "
                         "dimensions.")
    return image


def _is_symbolic(value):
    return isinstance(value, Tensor) and type(value) is not Tensor


# ---- resize -------------------------------------------------------------------------------------
def _method(method):
    if method not in _METHODS:
        raise ValueError(f"resize: method {method!r} is not one of {', '.join(_METHODS)} "
                         "(tf.image.ResizeMethod).")
    return method


def _size(size):
    """(static [new_height, new_width] or None, the size tensor or None)."""
    if _is_symbolic(size):
        static, dynamic = sizes.split(size, "resize", "size", rank=1)
        length = dynamic._shape_tuple[0]
    else:
        try:
            static, dynamic = checks.integers("resize", size, "size"), None
        except TypeError:
            raise ValueError(f"resize: 'size' must be a 1-D int32 Tensor (new_height, "
                             f"new_width), got {size!r}.") from None
        length = len(static)
    if length != 2:
        raise ValueError(f"resize: 'size' must be a 1-D Tensor of 2 elements: new_height, "
                         f"new_width; got {size!r}.")
    return static, dynamic


def _fit_size(images, static, dynamic):
    """The size that fits ``images`` inside the requested size keeping their aspect ratio,
    computed in float32 with round-half-to-even, as TF."""
    h, w = images._shape_tuple[-3], images._shape_tuple[-2]
    if 0 in (h, w):
        return static, dynamic     # an empty image: the resize rejects it
    if static is not None and h is not None and w is not None:
        f32 = np.float32
        scale = min(f32(static[0]) / f32(h), f32(static[1]) / f32(w))
        return [int(np.round(scale * f32(h))), int(np.round(scale * f32(w)))], None
    shape = M.cast(A.shape(images)[-3:-1], dtypes.float32)
    wanted = M.cast(dynamic if dynamic is not None else static, dtypes.float32)
    scale = M.reduce_min(wanted / shape)
    return None, M.cast(M.round(scale * shape), dtypes.int32)


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """Resizes ``images`` (3-D or 4-D) to ``size`` = [new_height, new_width] with ``method``.

    Bilinear, bicubic and nearest sample at pixel centres (TF 2's ``half_pixel_centers``);
    area averages the covered pixels; lanczos3, lanczos5, gaussian and mitchellcubic resample
    with those kernels.  ``antialias`` widens the kernel when downsampling (bilinear, bicubic
    and the kernel methods).  ``preserve_aspect_ratio`` scales the image to fit inside
    ``size`` instead.  The result is float32, except for nearest neighbour, which keeps the
    dtype of ``images``.
    """
    method = _method(method)
    images = _image(images, "resize", "images")
    static, dynamic = _size(size)
    if preserve_aspect_ratio:
        static, dynamic = _fit_size(images, static, dynamic)
    return execute1(IR.RESIZE, [images] + sizes.inputs(dynamic),
                    {"size": static, "method": method, "antialias": bool(antialias)})


def resize_like(values, like, method, antialias):
    """``values`` resized to the height and width of ``like`` (known perhaps only when the
    graph runs): the gradient of ``resize_grad``."""
    like = as_tensor(like)
    h, w = like._shape_tuple[-3], like._shape_tuple[-2]
    if h is not None and w is not None:
        static, dynamic = [h, w], None
    else:
        static, dynamic = None, A.shape(like)[-3:-1]
    return execute1(IR.RESIZE, [as_tensor(values)] + sizes.inputs(dynamic),
                    {"size": static, "method": method, "antialias": antialias})


def resize_grad(grads, images, method, antialias):
    """The gradient of a resize of ``images`` with respect to them, given ``grads``."""
    return execute1(IR.RESIZE_GRAD, [as_tensor(grads), as_tensor(images)],
                    {"method": method, "antialias": antialias})


# ---- flips and rotations ------------------------------------------------------------------------
def flip_left_right(image):
    """Flips ``image`` (3-D or 4-D) horizontally: the width axis reversed."""
    image = _image(image, "flip_left_right")
    return manip_ops.reverse(image, [-2])


def flip_up_down(image):
    """Flips ``image`` (3-D or 4-D) vertically: the height axis reversed."""
    image = _image(image, "flip_up_down")
    return manip_ops.reverse(image, [-3])


def _random_flip(image, axis, op_name, seed=None, stateless_seed=None):
    image = _image(image, op_name)
    if stateless_seed is None:
        seed_value, counter = random_ops.seeded_stream(seed)
        mask = execute1(IR.RANDOM_FLIP_MASK, [image],
                        {"seed": seed_value, "counter": counter, "name": op_name})
    else:
        seed_tensor = as_tensor(stateless_seed, dtypes.int64)
        mask = execute1(IR.STATELESS_RANDOM_FLIP_MASK, [image, seed_tensor], {"name": op_name})
    return flip_selected(image, mask, axis)


def flip_selected(image, mask, axis):
    """``image`` with the images that ``mask`` selects (one bool per image) reversed along
    ``axis`` (-2: width, -3: height)."""
    return execute1(IR.FLIP_SELECTED, [as_tensor(image), as_tensor(mask)], {"axis": axis})


def random_flip_left_right(image, seed=None):
    """Flips ``image`` horizontally with probability 1/2 (each image of a batch on its own).

    ``seed`` follows TF's seeding rules (``tf.random.set_seed``): with a seed, the sequence of
    flips repeats from one run to the next; inside a ``tf.function`` each call draws anew.
    """
    return _random_flip(image, -2, "random_flip_left_right", seed=seed)


def random_flip_up_down(image, seed=None):
    """Flips ``image`` vertically with probability 1/2 (each image of a batch on its own)."""
    return _random_flip(image, -3, "random_flip_up_down", seed=seed)


def stateless_random_flip_left_right(image, seed):
    """Flips ``image`` horizontally with probability 1/2, deterministically for ``seed`` (a
    shape [2] integer tensor): the same seed always gives the same flips."""
    return _random_flip(image, -2, "stateless_random_flip_left_right", stateless_seed=seed)


def stateless_random_flip_up_down(image, seed):
    """Flips ``image`` vertically with probability 1/2, deterministically for ``seed``."""
    return _random_flip(image, -3, "stateless_random_flip_up_down", stateless_seed=seed)


def rot90(image, k=1, name=None):
    """Rotates ``image`` (3-D or 4-D) by ``k`` quarter turns counter-clockwise; ``k`` may be a
    tensor computed inside a ``tf.function``."""
    image = _image(image, "rot90")
    static, dynamic = sizes.split(k, "rot90", "k")
    return execute1(IR.ROT90, [image] + sizes.inputs(dynamic), {"k": static})


# ---- crops --------------------------------------------------------------------------------------
def crop(image, box):
    """``image`` cropped to ``box`` = (offset_height, offset_width, target_height,
    target_width): a list of ints or a [4] integer tensor."""
    if _is_symbolic(box):
        return execute1(IR.CROP, [as_tensor(image), box], {"box": None})
    if isinstance(box, Tensor):
        box = box.numpy()
    return execute1(IR.CROP, [as_tensor(image)], {"box": tuple(int(v) for v in box)})


def crop_grad(grads, image, box):
    """The gradient of ``crop(image, box)``: ``grads`` placed into zeros shaped like ``image``."""
    if _is_symbolic(box):
        return execute1(IR.CROP_GRAD, [as_tensor(grads), as_tensor(image), box], {"box": None})
    return execute1(IR.CROP_GRAD, [as_tensor(grads), as_tensor(image)], {"box": tuple(box)})


def _box(values):
    """The box as a tuple of ints, or as a [4] int32 tensor when a value is known only when the
    graph runs."""
    names = ("offset_height", "offset_width", "target_height", "target_width")
    split = [sizes.split(v, "crop_to_bounding_box", what) for v, what in zip(values, names)]
    if all(dynamic is None for _, dynamic in split):
        return tuple(static for static, _ in split)
    return A.stack([M.cast(dynamic if dynamic is not None else static, dtypes.int32)
                    for static, dynamic in split])


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The ``target_height`` x ``target_width`` window of ``image`` (3-D or 4-D) whose top-left
    corner is at (``offset_height``, ``offset_width``)."""
    image = _image(image, "crop_to_bounding_box")
    return crop(image, _box((offset_height, offset_width, target_height, target_width)))


def central_crop(image, central_fraction):
    """The central region of ``image`` (3-D or 4-D): ``central_fraction`` (in (0, 1]) of its
    height and of its width, the margins rounded as TF rounds them.  The fraction may be a
    tensor computed inside a ``tf.function``."""
    image = _image(image, "central_crop")
    h, w = image._shape_tuple[-3], image._shape_tuple[-2]
    if not _is_symbolic(central_fraction):
        fraction = float(np.asarray(central_fraction))
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"central_crop: central_fraction must be within (0, 1], got "
                             f"{central_fraction!r}.")
        if fraction == 1.0:
            return image
        if h is not None and w is not None:
            top = int((h - h * fraction) / 2)
            left = int((w - w * fraction) / 2)
            return crop(image, (top, left, h - 2 * top, w - 2 * left))
    size = M.cast(A.shape(image)[-3:-1], dtypes.float64)
    fraction = M.cast(central_fraction, dtypes.float64)
    start = M.cast((size - size * fraction) / 2, dtypes.int32)
    extent = A.shape(image)[-3:-1] - 2 * start
    return crop(image, A.concat([start, extent], axis=0))


# ---- dtype conversion, brightness, contrast ------------------------------------------------------
class ImageDtypeError(AttributeError, TypeError):
    """A dtype ``convert_image_dtype`` cannot scale (neither floating point nor integer): TF
    raises AttributeError; it is a TypeError too, as for any bad dtype."""


def _real(dtype):
    return dtype.is_floating or dtype.is_integer


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Converts ``image`` to ``dtype``, rescaling its values: floats are in [0, 1], integers in
    [0, MAX] of their dtype.

    Integer to integer shifts the values by the ratio of the two ranges; integer to float
    divides by the input's MAX; float to integer multiplies by MAX + 0.5 and truncates (with
    ``saturate``, values out of range clamp instead of wrapping); float to float casts.
    """
    image = as_tensor(image)
    dtype = dtypes.as_dtype(dtype)
    if not _real(dtype):
        raise ImageDtypeError(f"convert_image_dtype: dtype must be either floating point or "
                              f"integer, got {dtype.name}.")
    source = image.dtype
    if not _real(source):
        raise ImageDtypeError(f"convert_image_dtype: image dtype must be either floating point "
                              f"or integer, got {source.name}.")
    if source is dtype:
        return A.identity(image)
    # (Python scalars below are rounded to the tensor's dtype before the op, as in TF.)
    to_dtype = M.saturate_cast if saturate else M.cast
    if source.is_integer and dtype.is_integer:
        if source.max > dtype.max:
            scale = (source.max + 1) // (dtype.max + 1)
            return to_dtype(M.floordiv(image, scale), dtype)
        scale = (dtype.max + 1) // (source.max + 1)
        return M.multiply(to_dtype(image, dtype), scale)
    if source.is_floating and dtype.is_floating:
        return M.cast(image, dtype)
    if source.is_integer:
        return M.multiply(M.cast(image, dtype), 1.0 / source.max)
    return to_dtype(M.multiply(image, dtype.max + 0.5), dtype)


def _as_float(image):
    """``image`` in float16 or float32, as TF's adjust ops compute (other dtypes convert to
    float32)."""
    if image.dtype in (dtypes.float16, dtypes.float32):
        return image
    return convert_image_dtype(image, dtypes.float32)


def adjust_brightness(image, delta):
    """Adds ``delta`` to ``image`` in float (integer images are converted to [0, 1] floats and
    back, saturating)."""
    image = as_tensor(image)
    flt = _as_float(image)
    adjusted = M.add(flt, M.cast(delta, flt.dtype))
    return convert_image_dtype(adjusted, image.dtype, saturate=True)


def adjust_contrast(images, contrast_factor):
    """Scales each channel's deviation from its mean over the image by ``contrast_factor``:
    ``(x - mean) * contrast_factor + mean``, the mean over height and width (the last three
    axes are height, width, channels)."""
    images = as_tensor(images)
    shape = images._shape_tuple
    if shape is not None and len(shape) < 3:
        raise ValueError(f"adjust_contrast: images must be at least 3-D, got shape "
                         f"{list(shape)}.")
    factor = as_tensor(contrast_factor, dtypes.float32)
    if factor._shape_tuple != ():
        raise ValueError(f"adjust_contrast: contrast_factor must be a scalar, got shape "
                         f"{list(factor._shape_tuple or [])}.")
    flt = _as_float(images)
    # Computed in float32, float16 images too: reduce_mean has no float16 kernel (and TF has
    # no float16 contrast kernel on the CPU).
    x = M.cast(flt, dtypes.float32)
    mean = M.reduce_mean(x, axis=[-3, -2], keepdims=True)
    adjusted = M.add(M.multiply(M.subtract(x, mean), M.cast(factor, dtypes.float32)), mean)
    return convert_image_dtype(M.cast(adjusted, flt.dtype), images.dtype, saturate=True)


# ---- projective transforms ----------------------------------------------------------------------
def _choice(op_name, value, allowed, what):
    if not isinstance(value, str) or value.lower() not in allowed:
        raise ValueError(f"{op_name}: {what} must be one of {', '.join(allowed)}, got "
                         f"{value!r}.")
    return value.lower()


def image_projective_transform(images, transforms, output_shape=None, interpolation="bilinear",
                               fill_mode="constant", fill_value=0.0):
    """Applies projective transforms to ``images`` (4-D, NHWC), as TF's
    ``ImageProjectiveTransformV3``.

    ``transforms`` is a float32 [1 or batch, 8] tensor: a row [a0, a1, a2, b0, b1, b2, c0, c1]
    maps each output point (x, y) to the input point ((a0 x + a1 y + a2) / k,
    (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1 (the inverse of the transform applied to the
    image).  ``output_shape`` = [height, width] of the result (default: the input's).
    ``interpolation``: "nearest" or "bilinear".  ``fill_mode`` says how points outside the
    image are read: "reflect" (d c b a | a b c d | d c b a), "wrap" (a b c d | a b c d),
    "nearest" (a a a a | a b c d | d d d d) or "constant" (``fill_value``).  The result has
    the dtype of ``images``; it is differentiable with respect to floating-point images.
    """
    op_name = "image_projective_transform"
    interpolation = _choice(op_name, interpolation, IR.INTERPOLATIONS, "interpolation")
    fill_mode = _choice(op_name, fill_mode, IR.FILL_MODES, "fill_mode")
    images = as_tensor(images)
    transforms = as_tensor(transforms)
    if output_shape is not None:
        if isinstance(output_shape, Tensor):
            output_shape = output_shape.numpy()
        output_shape = tuple(checks.integers(op_name, output_shape, "output_shape"))
        if len(output_shape) != 2 or min(output_shape) <= 0:
            raise ValueError(f"{op_name}: output_shape must be 2 positive integers [height, "
                             f"width], got {list(output_shape)}.")
    return execute1(IR.PROJECTIVE_TRANSFORM, [images, transforms],
                    {"output_shape": output_shape, "interpolation": interpolation,
                     "fill_mode": fill_mode, "fill_value": float(np.asarray(fill_value))})


def image_projective_transform_grad(grads, transforms, images, interpolation, fill_mode):
    """The gradient of ``image_projective_transform`` with respect to ``images``."""
    return execute1(IR.PROJECTIVE_TRANSFORM_GRAD,
                    [as_tensor(grads), as_tensor(transforms), as_tensor(images)],
                    {"interpolation": interpolation, "fill_mode": fill_mode})


def random_per_image_uniform(images, count, seed=None):
    """A float32 [batch, ``count``] tensor of uniform [0, 1) values, one row per image of
    ``images`` (one row for a 3-D image), whose batch size may be known only when the graph
    runs.  ``seed`` follows TF's seeding rules, like ``tf.random.uniform``'s."""
    images = _image(images, "random_per_image_uniform", "images")
    seed_value, counter = random_ops.seeded_stream(seed)
    return execute1(IR.RANDOM_PER_IMAGE_UNIFORM, [images],
                    {"count": int(count), "seed": seed_value, "counter": counter})
