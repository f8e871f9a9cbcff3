"""Hostile arguments for fuzzing public ops, drawn by parameter name.

Every example shares a base shape and a base dtype, so most tensors drawn for one call fit
together and the checks deep inside an op are reached; a good share of every draw is hostile
instead (wrong dtypes, strings, bools, objects, None, huge/NaN/inf values, out-of-range or
non-integer axes and sizes, mismatched shapes, empty tensors, nested junk).

Sizes are drawn from small numbers and from numbers so large (>= 2**62) that any allocation of
them must fail at once: never from the range in between, where a valid call would just allocate
gigabytes.
"""
import io
import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from image_files import bmp_bytes, png_bytes

NAN, INF = math.nan, math.inf
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.5, 7.0, 1e-30, 1e20, -1e20, 3e38, -3e38, 1e300,
          NAN, INF, -INF]
INTS = [0, 1, -1, 2, 3, -5, 7, 100, 127, -128, 255, 2**15, 2**31 - 1, -2**31, 2**62, 2**63 - 1,
        -2**63]
STRINGS = [b"", b"a", b"hello", "\u00e9".encode()]
HUGE = [2**62, 2**63, 2**64, -2**63]
SIZES = [-2, -1, 0, 1, 2, 3, 4] + HUGE


class _Opaque:
    """An object hybridtf knows nothing about."""

    def __repr__(self):
        return "<opaque>"


JUNK = [None, "abc", b"xyz", 1 + 2j, _Opaque(), {}, {"a": 1}, [], [[]], [None], [1, None],
        [[1, 2], [3]], [1, "a"], (1, [2]), Ellipsis, slice(1, 2), np.array([_Opaque()], object),
        tf.float32, print, {1, 2}]

DTYPES = ["float32", "float64", "int32", "int64", "int8", "uint8", "bool", "string"]
DTYPE_ARGS = [tf.float32, tf.float64, tf.int32, tf.int64, tf.int8, tf.uint8, tf.bool, tf.string,
              tf.float16, tf.complex64, tf.uint16, "float32", "int64", np.float64, np.int32,
              "nonsense", 5, None, object, [tf.float32]]


def mostly(plausible, hostile, share=4):
    """``plausible`` about ``share`` times in ``share + 1``, else ``hostile``."""
    return st.integers(0, share).flatmap(lambda k: plausible if k < share else hostile)


junk = st.sampled_from(JUNK)


# ---- arrays and tensors -----------------------------------------------------------------------
def _elements(dtype):
    if dtype == "string":
        return st.sampled_from(STRINGS)
    if dtype == "bool":
        return st.booleans()
    if dtype.startswith("float"):
        return st.one_of(st.sampled_from(FLOATS), st.floats(-10, 10))
    info = np.iinfo(dtype)
    pool = [v for v in INTS if info.min <= v <= info.max]
    return st.one_of(st.sampled_from(pool), st.integers(max(info.min, -10), 10))


@st.composite
def arrays(draw, dtype, shape):
    values = draw(st.lists(_elements(dtype), min_size=int(np.prod(shape, dtype=np.int64)),
                           max_size=int(np.prod(shape, dtype=np.int64))))
    if dtype == "string":
        return np.array(values + [None], object)[:-1].reshape(shape)
    with np.errstate(over="ignore"):
        return np.array(values, np.float64 if dtype.startswith("float") else None).astype(
            dtype).reshape(shape)


class Context:
    """What one example's arguments share: a base shape and a base dtype."""

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    def __repr__(self):
        return f"Context(shape={self.shape}, dtype={self.dtype})"


contexts = st.builds(Context, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3),
                     st.sampled_from(DTYPES[:-1]))

# Parameters whose tensors usually have a particular kind of dtype.
_DTYPE_HINTS = {"indices": "int", "segment_ids": "int", "condition": "bool", "logits": "float",
                "features": "float", "filters": "float", "out_backprop": "float"}


def _shape_for(draw, ctx, param):
    """A shape for ``param``'s tensor: usually one that fits the base shape."""
    base = ctx.shape
    channels = base[-1] if base else 1
    image = base[:4] if len(base) >= 3 else base + (draw(st.integers(1, 3)),) * (3 - len(base))
    derived = {"filters": (draw(st.integers(1, 2)), draw(st.integers(1, 2)), channels,
                           draw(st.integers(1, 2))),
               "bias": (channels,), "image": image, "images": image,
               "labels": base[:-1] if draw(st.booleans()) else base,
               "segment_ids": base[:draw(st.integers(0, len(base)))]}
    choice = draw(st.integers(0, 9))
    if param in derived and choice < 6:
        return derived[param]
    if choice < 6:
        return base
    if choice < 8:
        return base[draw(st.integers(0, len(base))):]   # broadcasts against the base
    return draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))


def _dtype_for(draw, ctx, param):
    hint = _DTYPE_HINTS.get(param)
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(DTYPES))
    if hint == "int":
        return draw(st.sampled_from(["int32", "int64"]))
    if hint == "bool":
        return "bool"
    if hint == "float" and not ctx.dtype.startswith("float"):
        return "float32"
    return ctx.dtype


@st.composite
def tensor_args(draw, ctx, param="x"):
    """A value for a tensor parameter: mostly a tensor, else an array, variable, nested list,
    Python scalar or junk."""
    choice = draw(st.integers(0, 19))
    if choice >= 17:
        return draw(junk)
    if choice >= 14:
        return draw(st.one_of(st.sampled_from(FLOATS), st.sampled_from(INTS), st.booleans(),
                              st.sampled_from(STRINGS + ["text"])))
    array = draw(arrays(_dtype_for(draw, ctx, param), _shape_for(draw, ctx, param)))
    if choice < 10:
        return tf.constant(array)
    if choice == 10:
        return array
    if choice == 11 and array.dtype != object:
        return tf.Variable(array)
    return array.tolist()


@st.composite
def tensor_lists(draw, ctx, param="values"):
    if draw(st.integers(0, 5)) == 0:
        return draw(st.one_of(junk, tensor_args(ctx, param)))
    return draw(st.lists(tensor_args(ctx, param), min_size=0, max_size=3))


@st.composite
def scalar_tensors(draw, ctx, param="value"):
    """A value for a scalar parameter (on_value, minval, ...): a number, a scalar tensor, or
    any tensor argument."""
    return draw(mostly(st.one_of(st.sampled_from(FLOATS), st.integers(-3, 3),
                                 st.builds(tf.constant, st.sampled_from(FLOATS[:8]))),
                       tensor_args(ctx, param), share=2))


# ---- axes, sizes and shapes ---------------------------------------------------------------------
_NOT_AN_INT = [1.0, 1.5, -0.5, NAN, True, "0", None, b"1", [0, 0], [], 1 + 0j]


def _as_int_kinds(value):
    """The same integer as a Python int, NumPy int or int tensor."""
    return st.sampled_from([value, np.int64(value), tf.constant(value, tf.int64)])


@st.composite
def axes(draw, ctx, param="axis"):
    rank = len(ctx.shape)
    choice = draw(st.integers(0, 9))
    if choice < 6:
        return draw(_as_int_kinds(draw(st.integers(-rank - 1, rank))))
    if choice < 8:
        items = draw(st.lists(st.integers(-rank - 1, rank), max_size=3))
        return draw(st.sampled_from([items, tuple(items), tf.constant(items, tf.int32)]))
    return draw(st.one_of(st.sampled_from(HUGE + _NOT_AN_INT), junk))


@st.composite
def sizes(draw, ctx, param="size"):
    """A single size or count (depth, num_segments, num_rows, ...)."""
    choice = draw(st.integers(0, 9))
    if choice < 6:
        return draw(_as_int_kinds(draw(st.integers(0, 4))))
    if choice < 8:
        return draw(st.sampled_from(SIZES + [2.0, 2.5, NAN, INF]))
    return draw(st.one_of(st.sampled_from(_NOT_AN_INT), junk))


@st.composite
def shapes(draw, ctx, param="shape"):
    """A shape-like list: the base shape, a reshape of it (perhaps with -1), or hostile."""
    base = list(ctx.shape)
    choice = draw(st.integers(0, 11))
    if choice < 3:
        dims = base
    elif choice < 5:
        dims = base[::-1] + ([1] if draw(st.booleans()) else [])
        if dims and draw(st.booleans()):
            dims[draw(st.integers(0, len(dims) - 1))] = -1
    elif choice < 7:
        dims = draw(st.lists(st.integers(0, 4), max_size=4))
    elif choice < 9:
        dims = draw(st.lists(st.one_of(st.sampled_from(SIZES), st.sampled_from(_NOT_AN_INT)),
                             min_size=1, max_size=4))
    elif choice < 10:
        return draw(st.sampled_from([2, 0, -1, 2.0, None, "2", tf.TensorShape(base),
                                     tf.TensorShape([None, 2])]))
    else:
        return draw(junk)
    form = draw(st.integers(0, 4))
    if form == 1:
        return tuple(dims)
    if form == 2 and all(isinstance(d, int) and -2**31 <= d < 2**31 for d in dims):
        return tf.constant(dims, draw(st.sampled_from([tf.int32, tf.int64])))
    if form == 3:
        return np.array(dims, dtype=object if not all(isinstance(d, (int, float))
                                                      for d in dims) else None)
    return dims


@st.composite
def perms(draw, ctx, param="perm"):
    rank = len(ctx.shape)
    if draw(st.integers(0, 2)):
        return draw(st.permutations(list(range(rank))))
    return draw(shapes(ctx, param))


@st.composite
def paddings(draw, ctx, param="paddings"):
    rank = len(ctx.shape)
    if draw(st.integers(0, 2)):
        pair = st.lists(st.integers(0, 3), min_size=2, max_size=2)
        return draw(st.lists(pair, min_size=rank, max_size=rank))
    return draw(st.one_of(st.lists(st.lists(st.sampled_from(SIZES + _NOT_AN_INT), min_size=1,
                                            max_size=3), max_size=4), shapes(ctx, param)))


@st.composite
def split_sizes(draw, ctx, param="num_or_size_splits"):
    first = ctx.shape[0] if ctx.shape else 0
    divisors = [n for n in range(1, 4) if first % n == 0]
    choice = draw(st.integers(0, 4))
    if choice < 2:
        return draw(st.sampled_from(divisors))
    if choice < 4:
        cut = draw(st.integers(0, first))
        parts = [cut, first - cut]
        if draw(st.booleans()):
            parts[draw(st.integers(0, 1))] = -1
        return parts
    return draw(sizes(ctx, param))


@st.composite
def tensordot_axes(draw, ctx, param="axes"):
    if draw(st.booleans()):
        return draw(st.integers(0, 2))
    if draw(st.booleans()):
        return [draw(st.lists(st.integers(-2, 2), max_size=2)),
                draw(st.lists(st.integers(-2, 2), max_size=2))]
    return draw(axes(ctx, param))


def _choices(*values):
    return lambda ctx, param: mostly(st.sampled_from(values), junk)


# ---- files and records --------------------------------------------------------------------------
_PIXELS = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4) * 10
IMAGE_FILES = [
    png_bytes(_PIXELS[:, :, :1], 0, 8), png_bytes(_PIXELS[:, :, :3], 2, 8),
    png_bytes(_PIXELS, 6, 8), png_bytes(_PIXELS[:, :, :2].astype(np.uint16) * 257, 4, 16),
    png_bytes(_PIXELS[:, :, :3], 2, 8, interlace=True),
    bmp_bytes(_PIXELS[:, :, :3], 24), bmp_bytes(_PIXELS, 32)]


@st.composite
def image_files(draw, ctx, param="contents"):
    """An encoded image (PNG, BMP), mostly as a scalar string tensor: whole, truncated, with
    bytes flipped, or junk."""
    data = draw(st.sampled_from(IMAGE_FILES))
    choice = draw(st.integers(0, 9))
    if choice < 4:
        pass
    elif choice < 6:
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif choice < 8:
        position = draw(st.integers(0, len(data) - 1))
        data = data[:position] + bytes([data[position] ^ draw(st.integers(1, 255))]) + \
            data[position + 1:]
    else:
        return draw(tensor_args(ctx, param))
    return tf.constant(data) if draw(st.integers(0, 3)) else data


_FIELDS = ["1", "-2", "2.5", "", "NA", "x", '"a,b"', '"q""q"', '"open', 'a"b', "1e3", "inf",
           "99999999999", " 3 "]


@st.composite
def csv_records(draw, ctx, param="records"):
    """CSV records (a string tensor of the base shape, or a scalar), or any tensor argument."""
    if draw(st.integers(0, 4)) == 0:
        return draw(tensor_args(ctx, param))
    shape = ctx.shape if draw(st.booleans()) else ()
    count = int(np.prod(shape, dtype=np.int64))
    fields = st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=3).map(
        lambda f: ",".join(f).encode())
    records = draw(st.lists(fields, min_size=count, max_size=count))
    return tf.constant(np.array(records + [None], object)[:-1].reshape(shape))


_DEFAULTS = [[0], [0.0], [""], tf.constant([], tf.int32), tf.constant([], tf.string),
             tf.constant(0, tf.int64), [1.5], [[0]], tf.constant([0, 1]), [True], None]


@st.composite
def record_defaults(draw, ctx, param="record_defaults"):
    if draw(st.integers(0, 5)) == 0:
        return draw(st.one_of(junk, tensor_args(ctx, param)))
    return draw(st.lists(st.sampled_from(_DEFAULTS), min_size=0, max_size=3))


@st.composite
def box_sides(draw, ctx, param="offset_height"):
    """A crop box's offset (0 or 1) or extent (1 or 2), which fit a small image, or any size."""
    low = 0 if param.startswith("offset") else 1
    return draw(mostly(st.integers(low, low + 1).flatmap(_as_int_kinds), sizes(ctx, param),
                       share=2))


@st.composite
def fractions(draw, ctx, param="central_fraction"):
    """A fraction in (0, 1], or any scalar argument."""
    return draw(mostly(st.floats(0.05, 1.0), scalar_tensors(ctx, param), share=2))


@st.composite
def sizes_or_shapes(draw, ctx, param="size"):
    """A [height, width] pair (resize's size), or any shape argument."""
    pair = st.lists(st.integers(1, 4), min_size=2, max_size=2)
    return draw(mostly(pair.flatmap(lambda p: st.sampled_from([p, tf.constant(p)])),
                       shapes(ctx, param), share=1))


@st.composite
def seeds(draw, ctx, param="seed"):
    """An op seed (an int), or a stateless seed (a pair of ints), or hostile."""
    if draw(st.booleans()):
        return draw(sizes(ctx, param))
    pair = draw(st.lists(st.integers(-3, 3), min_size=2, max_size=2))
    return draw(st.sampled_from([pair, tf.constant(pair), tf.constant(pair, tf.int64),
                                 pair + [1], tf.constant(pair, tf.float32)]))


# ---- the parameter table ------------------------------------------------------------------------
BOOL_FLAGS = st.sampled_from([True, False, True, False, 0, 1, None, "yes", np.bool_(True), 2])
_SINK = io.StringIO()

PARAMS = {
    "axis": axes, "batch_dims": axes, "perm": perms, "axes": tensordot_axes,
    "shape": shapes, "dims": shapes, "multiples": shapes, "begin": shapes, "size": sizes_or_shapes,
    "batch_shape": shapes, "noise_shape": shapes, "filter_sizes": shapes, "input_sizes": shapes,
    "ksize": shapes, "strides": shapes, "dilations": shapes,
    "paddings": paddings, "num_or_size_splits": split_sizes,
    "depth": sizes, "num_rows": sizes, "num_columns": sizes, "num_segments": sizes, "num": sizes,
    "summarize": sizes,
    "values": tensor_lists, "inputs": tensor_lists,
    "on_value": scalar_tensors, "off_value": scalar_tensors, "constant_values": scalar_tensors,
    "clip_value_min": scalar_tensors, "clip_value_max": scalar_tensors, "mean": scalar_tensors,
    "stddev": scalar_tensors, "minval": scalar_tensors, "maxval": scalar_tensors,
    "start": scalar_tensors, "limit": scalar_tensors, "delta": scalar_tensors,
    "rate": scalar_tensors, "alpha": scalar_tensors, "seed": seeds,
    "dtype": lambda ctx, param: st.sampled_from(DTYPE_ARGS),
    "out_type": lambda ctx, param: st.sampled_from(DTYPE_ARGS),
    "output_type": lambda ctx, param: st.sampled_from(DTYPE_ARGS),
    "dtype_hint": lambda ctx, param: st.sampled_from(DTYPE_ARGS),
    "type_value": lambda ctx, param: st.sampled_from(DTYPE_ARGS),
    "padding": _choices("SAME", "VALID", "same", "FULL", "", b"SAME"),
    "data_format": _choices("NHWC", "NCHW", None, "NC", "bogus"),
    "mode": _choices("CONSTANT", "REFLECT", "SYMMETRIC", "reflect", "WRAP"),
    "sep": _choices(" ", "", ", "), "end": _choices("\n", ""),
    "output_stream": lambda ctx, param: st.just(_SINK),
    # tf.image and tf.io
    "contents": image_files, "channels": sizes, "ratio": sizes, "compression": sizes, "k": sizes,
    "offset_height": box_sides, "offset_width": box_sides, "target_height": box_sides,
    "target_width": box_sides,
    "central_fraction": fractions, "contrast_factor": scalar_tensors,
    "acceptable_fraction": scalar_tensors,
    "method": _choices("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
                       "gaussian", "mitchellcubic", "BILINEAR", "cubic"),
    "dct_method": _choices("", "INTEGER_FAST", "INTEGER_ACCURATE", "bogus"),
    "records": csv_records, "record_defaults": record_defaults,
    "field_delim": _choices(",", ";", "\t", "ab", "", b","),
    "na_value": _choices("", "NA", b"x"),
    "select_cols": _choices(None, [0], [0, 1], [1, 0], [-1], [0, 5], []),
}
for _flag in ("keepdims", "exclusive", "reverse", "transpose_a", "transpose_b", "adjoint_a",
              "adjoint_b", "a_is_sparse", "b_is_sparse", "conjugate", "validate_indices",
              "saturate", "preserve_aspect_ratio", "antialias", "expand_animations",
              "use_quote_delim", "fancy_upscaling", "try_recover_truncated"):
    PARAMS[_flag] = lambda ctx, param: BOOL_FLAGS


def for_param(ctx, param):
    """The strategy for parameter ``param``: by its name; anything else is a tensor argument."""
    return PARAMS.get(param, tensor_args)(ctx, param)


@st.composite
def index_keys(draw, ctx):
    """A key for ``tensor[key]``: ints, slices, None, Ellipsis, scalar tensors, or junk."""
    rank = len(ctx.shape)
    item = st.one_of(st.integers(-4, 4), st.just(None), st.just(Ellipsis),
                     st.builds(slice, st.one_of(st.none(), st.integers(-4, 4)),
                               st.one_of(st.none(), st.integers(-4, 4)),
                               st.sampled_from([None, 1, 2, -1, 0])),
                     st.builds(tf.constant, st.integers(-3, 3)))
    if draw(st.integers(0, 4)):
        return tuple(draw(st.lists(item, max_size=rank + 1)))
    return draw(st.one_of(st.sampled_from(HUGE + _NOT_AN_INT + [(Ellipsis, Ellipsis)]), junk,
                          st.builds(tf.constant, st.sampled_from([1.0, True])),
                          st.builds(tf.constant, st.just([0, 1]))))
