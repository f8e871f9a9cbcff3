"""Image ops: resize (every method) and its gradient, cropping, rot90, the random flips (their
coin flips, and the flips of the images they select), projective transforms and their gradient,
and per-image random draws (the parameters of the augmentation layers).

Images are 3-D ``[height, width, channels]`` or 4-D ``[batch, height, width, channels]``.  The
resize size, the crop box and rot90's ``k`` are attributes when known while tracing and inputs
otherwise (``sizes``), so that ``tf.image.resize(x, tf.shape(y)[1:3])`` works in a trace.
"""
import functools

import numpy as np

from ops import image as kernels
from ops import random as random_kernels

from hybridtf.registry.public_ops import image_ops as IM
from hybridtf.registry import OpDef, Spec, checks, register, sizes

REAL = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16")
FLOATS = ("float16", "float32", "float64")


def _one(name, cpu_kernel, infer, grad=None, **kw):
    """Registers opaque op ``name`` with its CPU kernel (see ``OpDef`` for the rest)."""
    return register(OpDef(name, "opaque", {"cpu": cpu_kernel}, infer, grad, **kw))


def _check_image(op_name, shape, what="image"):
    """The rank check of every image op: 3-D or 4-D, and known while tracing."""
    if shape is None:
        checks.fail(op_name, f"{what} must have a known rank of 3 or 4; decode images with "
                    "expand_animations=False (or reshape them) before this op.")
    if len(shape) not in (3, 4):
        checks.fail(op_name, f"{what} must be 3-D [height, width, channels] or 4-D [batch, "
                    f"height, width, channels], got shape {checks.fmt_shape(shape)}.")


def _spatial(shape):
    return shape[-3], shape[-2]


def _as_batch(array):
    return array if array.ndim == 4 else array[None]


def _like_input(result, array):
    return result if array.ndim == 4 else result[0]


# ---- resize -------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _taps(in_size, out_size, method, antialias):
    return kernels.resize_taps(in_size, out_size, method, antialias)


def _resize_infer(specs, attrs):
    images = specs[0]
    _check_image("resize", images.shape, "images")
    checks.allowed_dtype("resize", images.dtype, REAL, "images")
    size = attrs["size"]
    if size is None:
        sizes_spec = specs[1]
        if sizes_spec.shape != (2,):
            checks.fail("resize", f"size must be a 1-D tensor of 2 elements (new_height, "
                        f"new_width), got shape {checks.fmt_shape(sizes_spec.shape)}.")
        size = (None, None)
    else:
        _check_size(size)
    h, w = _spatial(images.shape)
    if h == 0 or w == 0:
        checks.fail("resize", f"input image must be of non-zero size, got images of shape "
                    f"{checks.fmt_shape(images.shape)}.")
    if images.shape[-1] == 0:
        checks.fail("resize", f"image must have at least one channel, got images of shape "
                    f"{checks.fmt_shape(images.shape)}.")
    dtype = images.dtype if attrs["method"] == "nearest" else np.dtype(np.float32)
    return [Spec(tuple(images.shape[:-3]) + tuple(size) + (images.shape[-1],), dtype)]


def _check_size(size):
    if any(d <= 0 for d in size):
        checks.fail("resize", f"output dimensions must be positive, got size {list(size)}.")


def _resize_eager(arrays, attrs):
    images = arrays[0]
    new_h, new_w = sizes.value(arrays, attrs, "size")
    method, antialias = attrs["method"], attrs["antialias"]
    h, w = _spatial(images.shape)
    taps_h = _taps(h, new_h, method, antialias)
    taps_w = _taps(w, new_w, method, antialias)
    batch = _as_batch(images)
    if method == "nearest":
        out = kernels.resize_nearest(batch, taps_h, taps_w)
    else:
        out = kernels.resize(batch, taps_h, taps_w, np.float32)
    return _like_input(out, images)


def _resize_grad(record, grads):
    images = record.inputs[0]
    if grads[0] is None or not images.dtype.is_floating:
        return (None,) * len(record.inputs)
    grad = IM.resize_grad(grads[0], images, record.attrs["method"], record.attrs["antialias"])
    return (grad,) + (None,) * (len(record.inputs) - 1)


RESIZE = _one("resize", _resize_eager, _resize_infer, _resize_grad,
              check_values=lambda arrays, attrs: _check_size(sizes.value(arrays, attrs, "size")))


def _resize_grad_infer(specs, attrs):
    grads, images = specs
    _check_image("resize_grad", grads.shape, "grads")
    _check_image("resize_grad", images.shape, "images")
    checks.allowed_dtype("resize_grad", images.dtype, FLOATS, "images")
    return [Spec(images.shape, images.dtype)]


def _resize_grad_eager(arrays, attrs):
    grads, images = arrays
    h, w = _spatial(images.shape)
    new_h, new_w = _spatial(grads.shape)
    method, antialias = attrs["method"], attrs["antialias"]
    out = kernels.resize_adjoint(_as_batch(grads), _taps(h, new_h, method, antialias),
                                 _taps(w, new_w, method, antialias), h, w, images.dtype)
    return _like_input(out, images)


def _resize_grad_grad(record, grads):
    # resize_grad is linear in its gradient input: its own gradient is the resize again.
    grads_in = record.inputs[0]
    if grads[0] is None:
        return None, None
    return IM.resize_like(grads[0], grads_in, record.attrs["method"],
                          record.attrs["antialias"]), None


RESIZE_GRAD = _one("resize_grad", _resize_grad_eager, _resize_grad_infer, _resize_grad_grad)


# ---- crop ---------------------------------------------------------------------------------------
def _box_infer(op_name, specs, attrs, at):
    """The (target_height, target_width) of a crop box, None where known only at run time."""
    box = attrs["box"]
    if box is not None:
        return box[2], box[3]
    if specs[at].shape != (4,):
        checks.fail(op_name, f"the box must be 4 integers, got shape "
                    f"{checks.fmt_shape(specs[at].shape)}.")
    return None, None


def _check_box(op_name, shape, box):
    """``box`` = (offset_height, offset_width, target_height, target_width) inside ``shape``'s
    height and width (each may be None: unknown while tracing)."""
    offset_h, offset_w, target_h, target_w = box
    for value, what in ((offset_h, "offset_height"), (offset_w, "offset_width")):
        if value is not None and value < 0:
            checks.fail(op_name, f"{what} must be >= 0, got {value}.")
    for value, what in ((target_h, "target_height"), (target_w, "target_width")):
        if value is not None and value <= 0:
            checks.fail(op_name, f"{what} must be > 0, got {value}.")
    h, w = _spatial(shape)
    for size, offset, target, what in ((h, offset_h, target_h, "height"),
                                       (w, offset_w, target_w, "width")):
        if None not in (size, offset, target) and size < offset + target:
            checks.fail(op_name, f"{what} must be >= target + offset: the image's {what} is "
                        f"{size}, the box's offset {offset} and size {target}.")


def _crop_infer(specs, attrs):
    image = specs[0]
    _check_image("crop_to_bounding_box", image.shape)
    target_h, target_w = _box_infer("crop_to_bounding_box", specs, attrs, 1)
    if attrs["box"] is not None:
        _check_box("crop_to_bounding_box", image.shape, attrs["box"])
    return [Spec(tuple(image.shape[:-3]) + (target_h, target_w, image.shape[-1]), image.dtype)]


def _window(rank, box):
    offset_h, offset_w, target_h, target_w = box
    window = (slice(offset_h, offset_h + target_h), slice(offset_w, offset_w + target_w),
              slice(None))
    return (slice(None),) * (rank - 3) + window


def _crop_eager(arrays, attrs):
    image = arrays[0]
    return checks.contiguous(image[_window(image.ndim, sizes.value(arrays, attrs, "box"))])


def _crop_check(arrays, attrs):
    _check_box("crop_to_bounding_box", arrays[0].shape, sizes.value(arrays, attrs, "box"))


def _crop_grad(record, grads):
    rest = (None,) * (len(record.inputs) - 1)
    if grads[0] is None:
        return (None,) + rest
    box = record.attrs["box"] if record.attrs["box"] is not None else record.inputs[1]
    return (IM.crop_grad(grads[0], record.inputs[0], box),) + rest


CROP = _one("crop_to_bounding_box", _crop_eager, _crop_infer, _crop_grad,
            check_values=_crop_check)


def _crop_grad_infer(specs, attrs):
    grads, image = specs[:2]
    _check_image("crop_to_bounding_box_grad", image.shape)
    return [Spec(image.shape, grads.dtype)]


def _crop_grad_eager(arrays, attrs):
    grads, image = arrays[:2]
    out = np.zeros(image.shape, grads.dtype)
    out[_window(image.ndim, sizes.value(arrays, attrs, "box"))] = grads
    return out


def _crop_grad_grad(record, grads):
    rest = (None,) * (len(record.inputs) - 1)
    if grads[0] is None:
        return (None,) + rest
    box = record.attrs["box"] if record.attrs["box"] is not None else record.inputs[2]
    return (IM.crop(grads[0], box),) + rest


CROP_GRAD = _one("crop_to_bounding_box_grad", _crop_grad_eager, _crop_grad_infer,
                 _crop_grad_grad)


# ---- rot90 --------------------------------------------------------------------------------------
def _rot90_infer(specs, attrs):
    image = specs[0]
    _check_image("rot90", image.shape)
    k = attrs["k"]
    if k is None:
        sizes.check_scalar("rot90", specs[1], "k")
    h, w = _spatial(image.shape)
    if k is None:
        if h != w or h is None:   # unknown: k odd swaps height and width
            h = w = None
    elif k % 2:
        h, w = w, h
    return [Spec(tuple(image.shape[:-3]) + (h, w, image.shape[-1]), image.dtype)]


def _rot90_eager(arrays, attrs):
    image = arrays[0]
    k = sizes.value(arrays, attrs, "k")
    rank = image.ndim
    return checks.contiguous(np.rot90(image, k % 4, axes=(rank - 3, rank - 2)))


def _rot90_grad(record, grads):
    rest = (None,) * (len(record.inputs) - 1)
    if grads[0] is None:
        return (None,) + rest
    k = record.attrs["k"]
    return (IM.rot90(grads[0], -k if k is not None else -record.inputs[1]),) + rest


ROT90 = _one("rot90", _rot90_eager, _rot90_infer, _rot90_grad)


# ---- random flips: the coin flips, and the flips they select ------------------------------------
def _check_seed(op_name, seed):
    """A stateless seed: a shape [2] integer tensor (its length perhaps unknown while tracing)."""
    if seed.dtype.kind not in "iu" or seed.shape is None or len(seed.shape) != 1 \
            or seed.shape[0] not in (2, None):
        shape = "unknown" if seed.shape is None else checks.fmt_shape(seed.shape)
        checks.fail(op_name, f"seed must be a shape [2] int32 or int64 tensor, got "
                    f"{checks.dtype_name(seed.dtype)} of shape {shape}.")


def _mask_shape(image_shape):
    """One coin per image: shape [batch, 1, 1, 1] for a batch, [] for one image."""
    return (image_shape[0], 1, 1, 1) if len(image_shape) == 4 else ()


def _flip_mask_infer(specs, attrs):
    image = specs[0]
    _check_image(attrs["name"], image.shape)
    if len(specs) > 1:
        _check_seed(attrs["name"], specs[1])
    return [Spec(_mask_shape(image.shape), np.dtype(np.bool_))]


def _coins(image, seed, counter):
    """True for each image (of a batch) to flip: a uniform draw below 0.5, as TF."""
    count = image.shape[0] if image.ndim == 4 else 1
    draws = random_kernels.uniform((count,), np.dtype(np.float32), seed, counter)
    return (draws < 0.5).reshape(_mask_shape(image.shape))


RANDOM_FLIP_MASK = _one(
    "random_flip_mask",
    lambda arrays, attrs: _coins(arrays[0], attrs["seed"], attrs["counter"]),
    _flip_mask_infer, stateful=True, random_stream=True)

_MASK31 = (1 << 31) - 1
_MASK32 = (1 << 32) - 1


def _stateless_coins(arrays, attrs):
    image, seed = arrays
    first, second = (int(s) & _MASK32 for s in seed)
    # The 64 bits of the seed pair name the stream: 63 the Philox key (the kernels take keys
    # below 2**63), the last the counter.
    return _coins(image, first | ((second & _MASK31) << 32), second >> 31)


STATELESS_RANDOM_FLIP_MASK = _one(
    "stateless_random_flip_mask", _stateless_coins, _flip_mask_infer,
    check_values=lambda arrays, attrs: _check_seed(
        attrs["name"], Spec(arrays[1].shape, arrays[1].dtype)))


def _flip_selected_infer(specs, attrs):
    image, mask = specs
    _check_image("flip_selected", image.shape)
    if mask.dtype != np.bool_:
        raise TypeError(f"flip_selected: mask must be bool, got {checks.dtype_name(mask.dtype)}.")
    return [Spec(image.shape, image.dtype)]


def _flip_selected_eager(arrays, attrs):
    image, mask = arrays
    flipped = np.flip(image, attrs["axis"])
    return np.ascontiguousarray(np.where(mask, flipped, image))


# Flipping is its own inverse and its own transpose: the gradient flips the same images back.
FLIP_SELECTED = _one(
    "flip_selected", _flip_selected_eager, _flip_selected_infer,
    lambda record, grads: (None if grads[0] is None else IM.flip_selected(
        grads[0], record.inputs[1], record.attrs["axis"]), None))


# ---- projective transforms ----------------------------------------------------------------------
TRANSFORM_DTYPES = ("uint8", "int32", "int64", "float16", "float32", "float64")
FILL_MODES = kernels.FILL_MODES
INTERPOLATIONS = kernels.INTERPOLATIONS


def _transform_infer(specs, attrs):
    name = "image_projective_transform"
    images, transforms = specs
    if images.shape is None or len(images.shape) != 4:
        checks.fail(name, f"images must be 4-D [batch, height, width, channels], got shape "
                    f"{'unknown' if images.shape is None else checks.fmt_shape(images.shape)}.")
    checks.allowed_dtype(name, images.dtype, TRANSFORM_DTYPES, "images")
    if transforms.dtype != np.float32:
        checks.fail(name, f"transforms must be float32, got "
                    f"{checks.dtype_name(transforms.dtype)}; cast them with tf.cast.")
    if transforms.shape is None or len(transforms.shape) != 2 \
            or transforms.shape[1] not in (8, None):
        shape = "unknown" if transforms.shape is None else checks.fmt_shape(transforms.shape)
        checks.fail(name, f"transforms must be 2-D [1 or batch, 8], got shape {shape}.")
    rows, batch = transforms.shape[0], images.shape[0]
    if None not in (rows, batch) and rows not in (1, batch):
        checks.fail(name, f"transforms must have 1 row or one per image: got {rows} rows for "
                    f"images of shape {checks.fmt_shape(images.shape)}.")
    height, width = attrs["output_shape"] or images.shape[1:3]
    return [Spec((batch, height, width, images.shape[3]), images.dtype)]


def _transform_check(arrays, attrs):
    images, transforms = arrays
    if transforms.shape[0] not in (1, images.shape[0]):
        checks.fail("image_projective_transform", f"transforms must have 1 row or one per "
                    f"image: got {transforms.shape[0]} rows for images of shape "
                    f"{checks.fmt_shape(images.shape)}.")


def _transform_eager(arrays, attrs):
    images, transforms = arrays
    height, width = attrs["output_shape"] or images.shape[1:3]
    work = images.astype(np.float32) if images.dtype == np.float16 else images
    out = np.empty((images.shape[0], height, width, images.shape[3]), work.dtype)
    kernels.projective_transform(np.ascontiguousarray(work), np.ascontiguousarray(transforms),
                                 kernels.fill_mode_code(attrs["fill_mode"]),
                                 attrs["interpolation"] == "bilinear",
                                 float(attrs["fill_value"]), out)
    return out.astype(images.dtype, copy=False)


def _transform_grad(record, grads):
    images, transforms = record.inputs
    if grads[0] is None or not images.dtype.is_floating:
        return None, None
    attrs = record.attrs
    return IM.image_projective_transform_grad(grads[0], transforms, images,
                                              attrs["interpolation"], attrs["fill_mode"]), None


# The transform is differentiable with respect to the images (a linear map plus the fill); the
# transforms get no gradient, as in TF.
PROJECTIVE_TRANSFORM = _one("image_projective_transform", _transform_eager, _transform_infer,
                            _transform_grad, check_values=_transform_check)


def _transform_grad_infer(specs, attrs):
    name = "image_projective_transform_grad"
    grads, transforms, images = specs
    for spec, what in ((grads, "grads"), (images, "images")):
        if spec.shape is None or len(spec.shape) != 4:
            checks.fail(name, f"{what} must be 4-D [batch, height, width, channels], got "
                        f"{'unknown' if spec.shape is None else checks.fmt_shape(spec.shape)}.")
    checks.allowed_dtype(name, grads.dtype, FLOATS, "grads")
    return [Spec(images.shape, grads.dtype)]


def _transform_grad_eager(arrays, attrs):
    grads, transforms, images = arrays
    work = grads.astype(np.float64)
    out = np.zeros(images.shape, np.float64)
    kernels.projective_transform_adjoint(np.ascontiguousarray(work),
                                         np.ascontiguousarray(transforms),
                                         kernels.fill_mode_code(attrs["fill_mode"]),
                                         attrs["interpolation"] == "bilinear", out)
    return out.astype(grads.dtype, copy=False)


def _transform_grad_grad(record, grads):
    # Linear in its gradient input: its own gradient is the transform with a zero fill.
    grads_in, transforms, images = record.inputs
    if grads[0] is None:
        return None, None, None
    attrs = record.attrs
    return IM.image_projective_transform(
        grads[0], transforms, output_shape=grads_in._shape_tuple[1:3],
        interpolation=attrs["interpolation"], fill_mode=attrs["fill_mode"],
        fill_value=0.0), None, None


PROJECTIVE_TRANSFORM_GRAD = _one("image_projective_transform_grad", _transform_grad_eager,
                                 _transform_grad_infer, _transform_grad_grad)


# ---- per-image random draws ---------------------------------------------------------------------
def _per_image_infer(specs, attrs):
    image = specs[0]
    _check_image("random_per_image_uniform", image.shape)
    count = image.shape[0] if len(image.shape) == 4 else 1
    return [Spec((count, attrs["count"]), np.dtype(np.float32))]


def _per_image_eager(arrays, attrs):
    image = arrays[0]
    rows = image.shape[0] if image.ndim == 4 else 1
    return random_kernels.uniform((rows, attrs["count"]), np.dtype(np.float32), attrs["seed"],
                                  attrs["counter"])


# ``count`` uniform [0, 1) values per image of a batch whose size may be known only when the
# graph runs (the random parameters of the augmentation layers).
RANDOM_PER_IMAGE_UNIFORM = _one("random_per_image_uniform", _per_image_eager, _per_image_infer,
                                stateful=True, random_stream=True)
