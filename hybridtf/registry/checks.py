"""Shared pieces of shape/dtype rules.  Dimensions may be None (unknown while tracing)."""
import operator

import numpy as np

from hybridtf.framework import dtypes
from hybridtf.framework.errors import InvalidArgumentError


def fail(op_name, message):
    raise InvalidArgumentError(None, op_name, f"{op_name}: {message}")


def fmt_shape(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def dtype_name(np_dtype):
    found = dtypes.NP_TO_DTYPE.get(np_dtype)   # a NumPy dtype: no array needed
    if found is not None:
        return found.name
    return dtypes.of_array(np.empty(0, np_dtype)).name if np_dtype != object else "string"


def broadcast(op_name, shapes):
    """The broadcast of ``shapes`` (NumPy rules), or InvalidArgumentError naming them.

    A shape of unknown rank (None, while tracing) makes the result unknown too.
    """
    first = shapes[0]
    for s in shapes:
        if s != first:
            break
    else:   # equal shapes (the common case) broadcast to themselves
        return None if first is None else tuple(first)
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dim = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d is None or dim is None:
                dim = dim if d is None else d
            elif d != dim:
                fail(op_name, "Incompatible shapes: " + " vs. ".join(fmt_shape(s) for s in shapes)
                     + ". Operands must have equal dimensions or 1 where they differ.")
        out.append(dim)
    return tuple(out)


def same_dtype(op_name, specs, names=("x", "y", "z")):
    first = specs[0].dtype
    for spec in specs:
        if spec.dtype != first:
            break
    else:
        return first
    for name, spec in zip(names[1:], specs[1:]):
        if spec.dtype != first:
            fail(op_name, f"{names[0]} has dtype {dtype_name(first)} but {name} has dtype "
                 f"{dtype_name(spec.dtype)} (shapes {fmt_shape(specs[0].shape)} and "
                 f"{fmt_shape(spec.shape)}). Cast one of them with tf.cast.")
    return first


def allowed_dtype(op_name, np_dtype, allowed, what="x"):
    if dtype_name(np_dtype) not in allowed:
        raise TypeError(f"{op_name}: {what} has dtype {dtype_name(np_dtype)}, which this op does "
                        f"not support; allowed: {', '.join(allowed)}.")


def integer_dtype(op_name, np_dtype, what="indices"):
    """TypeError naming ``what`` unless ``np_dtype`` is an integer dtype (ids, indices)."""
    if np.dtype(np_dtype).kind not in "iu":
        raise TypeError(f"{op_name}: {what} must be an integer tensor (int32 or int64), got "
                        f"{dtype_name(np_dtype)}; cast it with tf.cast.")


def integer(op_name, value, what):
    """``value`` (a Python or NumPy integer, or an integer scalar tensor) as a Python int.

    Anything else is a TypeError naming the argument: a float too, even 2.0, as in TF (a
    dimension or count is never silently truncated)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op_name}: {what} must be an integer, got {value!r}.") from None


def integers(op_name, values, what):
    """``values`` (a list or tuple of integers, a TensorShape, or a 1-D integer array or tensor)
    as a list of Python ints; anything else is a TypeError naming the argument."""
    if hasattr(values, "as_list"):   # a TensorShape (its unknown dimensions are not integers)
        values = values.as_list()
    if isinstance(values, (list, tuple)):
        for v in values:
            if type(v) is not int:   # anything else is converted (or rejected) one by one
                return [integer(op_name, v, f"{what}[{i}]") for i, v in enumerate(values)]
        return list(values)
    array = np.asarray(values) if hasattr(values, "__array__") else None
    if array is None or array.ndim != 1 or (array.dtype.kind not in "iu" and array.size):
        raise TypeError(f"{op_name}: {what} must be a list of integers or a 1-D integer tensor, "
                        f"got {values!r}.")
    return [int(v) for v in array]


def axis(op_name, value, rank, what="axis"):
    """A single axis normalized to [0, rank)."""
    value = integer(op_name, value, what)
    if not -rank <= value < rank:
        fail(op_name, f"{what} {value} is out of range for a tensor of rank {rank} "
             f"(expected [{-rank}, {rank})).")
    return value + rank if value < 0 else value


def axes(op_name, value, rank):
    """``axis`` argument of a reduction: None -> all axes, an int or a list -> a sorted tuple.

    Duplicates are an error, as in TF; so is any axis of a scalar.
    """
    if value is None:
        return tuple(range(rank))
    if type(value) is int:   # the commonest, without NumPy's conversions
        items = [value]
    elif np.ndim(value) == 0:
        items = [value]
    else:
        items = np.asarray(value, dtype=object).reshape(-1).tolist()
    normalized = [axis(op_name, v, rank) for v in items]
    if len(set(normalized)) != len(normalized):
        fail(op_name, f"Invalid reduction arguments: Axes contains duplicate dimension "
             f"(axis={list(items)} for a tensor of rank {rank}).")
    return tuple(sorted(normalized))


def contiguous(array):
    """``array`` as a C-contiguous ndarray of the same shape (np.ascontiguousarray turns a 0-d
    array into shape (1,))."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def num_elements(shape):
    """The product of the dimensions of ``shape``; None if one is unknown."""
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n
