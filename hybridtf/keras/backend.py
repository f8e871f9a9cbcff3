"""``tf.keras.backend``: global Keras settings, unique layer names and a few tensor helpers.

Layer and model names are made unique per prefix (``dense``, ``dense_1``, ...) by a counter
kept here; ``clear_session()`` resets the counters, as in Keras.
"""
import collections
import contextlib

import numpy as np

from hybridtf.api import math_ops, random_ops
from hybridtf.eager import tape as tape_lib
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph

_FLOATX = "float32"
_EPSILON = 1e-7
_IMAGE_DATA_FORMAT = "channels_last"
_FLOAT_TYPES = ("float16", "float32", "float64")

# prefix -> how many names with it were handed out (Keras's per-session name counters).
_NAME_COUNTS = collections.defaultdict(int)
_UIDS = collections.defaultdict(int)


# ---- settings ------------------------------------------------------------------------------------
def floatx():
    """The default float type of layers and weights, as a string (``"float32"``)."""
    return _FLOATX


def set_floatx(value):
    """Sets the default float type: ``"float16"``, ``"float32"`` or ``"float64"``."""
    global _FLOATX
    value = dtypes.as_dtype(value).name if not isinstance(value, str) else value
    if value not in _FLOAT_TYPES:
        raise ValueError(f"set_floatx: unknown floatx type {value!r}; expected one of "
                         f"{list(_FLOAT_TYPES)}.")
    _FLOATX = value


def epsilon():
    """The fuzz factor Keras adds to denominators (1e-7 by default)."""
    return _EPSILON


def set_epsilon(value):
    global _EPSILON
    _EPSILON = float(value)


def image_data_format():
    """``"channels_last"`` (NHWC) or ``"channels_first"`` (NCHW): the default of image layers."""
    return _IMAGE_DATA_FORMAT


def set_image_data_format(data_format):
    global _IMAGE_DATA_FORMAT
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"set_image_data_format: unknown data_format {data_format!r}; expected "
                         "'channels_last' or 'channels_first'.")
    _IMAGE_DATA_FORMAT = data_format


# ---- names -----------------------------------------------------------------------------------
def unique_object_name(prefix, zero_based=True):
    """``prefix`` the first time, then ``prefix_1``, ``prefix_2``, ... (until clear_session)."""
    count = _NAME_COUNTS[prefix]
    _NAME_COUNTS[prefix] = count + 1
    if zero_based:
        return prefix if count == 0 else f"{prefix}_{count}"
    return f"{prefix}_{count + 1}"


def get_uid(prefix=""):
    """A counter per prefix, starting at 1 (``keras.backend.get_uid``)."""
    _UIDS[prefix] += 1
    return _UIDS[prefix]


def reset_uids():
    _UIDS.clear()


def clear_session(free_memory=True):
    """Resets Keras's global state: layer names start again at ``dense``, ``dense_1``, ...
    (``free_memory`` is accepted for Keras's signature: hybridtf holds no graph to free)."""
    _NAME_COUNTS.clear()
    _UIDS.clear()


# ---- running code outside the function being traced --------------------------------------------
@contextlib.contextmanager
def init_scope():
    """Runs the body eagerly even while a function is being traced, and records on no tape.

    Layers compute the initial values of their weights in it (as TF's ``init_scope``): a weight
    created during the first trace of a ``tf.function`` gets a concrete value at once.
    """
    graphs = func_graph.tracing_graphs()
    saved = list(graphs)
    del graphs[:]
    try:
        with tape_lib.stop_recording():
            yield
    finally:
        graphs[:] = saved


# ---- tensor helpers ----------------------------------------------------------------------------
def int_shape(x):
    """The shape of a tensor or variable as a tuple of ints (None for unknown dimensions)."""
    shape = x.shape
    if hasattr(shape, "as_list"):
        return None if shape.rank is None else tuple(shape.as_list())
    return tuple(shape)


def ndim(x):
    """The rank of a tensor or variable."""
    return len(int_shape(x))


def dtype(x):
    """The dtype of a tensor or variable, as a string."""
    return dtypes.as_dtype(x.dtype).name


def count_params(x):
    """The number of scalars in a variable or tensor."""
    return int(np.prod(int_shape(x), dtype=np.int64))


def get_value(x):
    """The value of a variable (or tensor) as a NumPy array."""
    return np.array(x.numpy() if hasattr(x, "numpy") else x)


def batch_get_value(tensors):
    return [get_value(x) for x in tensors]


def set_value(x, value):
    """Assigns a NumPy value to a variable."""
    x.assign(np.asarray(value, dtype=dtypes.as_dtype(x.dtype).as_numpy_dtype))


def batch_set_value(tuples):
    for x, value in tuples:
        set_value(x, value)


def cast_to_floatx(x):
    """``x`` (a NumPy array, tensor or number) cast to ``floatx()``: a NumPy array for NumPy
    and Python input, a tensor for a tensor."""
    if isinstance(x, Tensor) or getattr(x, "_is_variable", False):
        return math_ops.cast(x, _FLOATX)
    return np.asarray(x, dtype=_FLOATX)


# ---- random tensors (Keras 2's backend functions, on tf.random) ---------------------------------
def _random_dtype(dtype, who):
    dtype = dtypes.as_dtype(dtype or _FLOATX)
    if not dtype.is_floating:
        raise ValueError(f"{who}: dtype must be a floating point type, got {dtype.name}.")
    return dtype


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """A tensor of ``shape`` drawn from a normal distribution (dtype ``floatx()`` by
    default); ``seed`` fixes the draws as in ``tf.random.normal``."""
    return random_ops.normal(shape, mean, stddev, dtype=_random_dtype(dtype, "random_normal"),
                             seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """A tensor of ``shape`` drawn uniformly from ``[minval, maxval)``."""
    return random_ops.uniform(shape, minval, maxval,
                              dtype=_random_dtype(dtype, "random_uniform"), seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """A tensor of ``shape`` from a normal distribution cut at two standard deviations."""
    return random_ops.truncated_normal(shape, mean, stddev,
                                       dtype=_random_dtype(dtype, "truncated_normal"),
                                       seed=seed)
