"""Turning Python values, NumPy arrays, tensors and variables into tensors.

Dtype inference follows TF: Python floats -> float32, ints -> int32 (int64 when they do not fit),
bools -> bool, strings -> string; NumPy arrays keep their dtype; a list holding tensors takes
theirs.  What TF cannot convert is a ValueError, as in TF: ragged nesting, strings mixed with
numbers, objects that are neither (None, dicts, functions), integers beyond int64 and, by
default, floats beyond float32.
"""
import itertools
import operator

import numpy as np

from hybridtf.framework import devices, dtypes, fp_errors
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor import Tensor

_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1
_PY_SCALARS = (int, float, bool)


def _raw_numpy(value, tensors):
    """A NumPy array for a Python value (scalar or nested list), at full precision; the tensors
    (and variables) found in a list are appended to ``tensors``."""
    if isinstance(value, (str, bytes)):
        return np.array(_as_bytes(value), dtype=object)
    nested = _unwrap_tensors(value, tensors)
    try:
        array = np.array(nested)
    except ValueError:   # NumPy refuses ragged nesting
        raise ValueError(f"Can't convert non-rectangular Python sequence {value!r} to a "
                         "Tensor.") from None
    kind = array.dtype.kind
    if kind in "SUO":
        return _string_array(array if kind == "O" else np.array(nested, dtype=object), value)
    if (kind == "u" and array.size and array.max() > _INT64_MAX) or (
            kind == "f" and np.any(np.abs(array) >= 2.0 ** 63)):
        if any(type(v) is int and not _INT64_MIN <= v <= _INT64_MAX for v in _leaves(nested)):
            raise _out_of_range(value)
    return array


def _leaves(nested):
    if isinstance(nested, (list, tuple)):
        for item in nested:
            yield from _leaves(item)
    else:
        yield nested


def _out_of_range(value):
    return ValueError(f"Can't convert {value!r} to a Tensor: an integer is out of the range of "
                      "int64.")


def _string_array(objects, value):
    """An object array of str/bytes as a tf.string array (of bytes); TF's ValueError when the
    value holds anything else."""
    others = [v for v in objects.reshape(-1) if not isinstance(v, (str, bytes))]
    if not others:
        return np.vectorize(_as_bytes, otypes=[object])(objects)
    kinds = {type(v) for v in others} | ({str} if len(others) < objects.size else set())
    if kinds == {int}:   # NumPy keeps ints beyond 64 bits as objects
        raise _out_of_range(value)
    if len(kinds) > 1:
        raise ValueError(f"Can't convert {value!r} to a Tensor: a Python sequence with mixed "
                         f"types ({', '.join(sorted(k.__name__ for k in kinds))}).")
    raise ValueError(f"Attempt to convert a value ({others[0]!r}) with an unsupported type "
                     f"({type(others[0])}) to a Tensor.")


def _with_default_dtype(array, value):
    """TF's default dtypes for Python values: float32 for floats, int32 for ints that fit."""
    if _from_numpy_scalars(value):
        return array
    kind = array.dtype.kind
    if kind == "f" and array.dtype == np.float64:
        token = fp_errors.ignore()
        try:
            narrowed = array.astype(np.float32)
        finally:
            fp_errors.restore(token)
        if np.any(np.isinf(narrowed) & np.isfinite(array)):
            raise ValueError(f"Can't convert {value!r} to a float32 Tensor: a value is out of "
                             "the range of float32; pass dtype=tf.float64.")
        return narrowed
    if kind in "iu" and array.dtype.itemsize == 8:
        fits = array.size == 0 or (array.min() >= _INT32_MIN and array.max() <= _INT32_MAX)
        return array.astype(np.int32 if fits else np.int64)
    return array


def _from_numpy_scalars(value):
    """True when the value is itself a NumPy scalar (whose dtype TF keeps)."""
    return isinstance(value, np.generic)


def _unwrap_tensors(value, tensors):
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        tensors.append(value)
        return np.asarray(value)[()]   # a scalar, not a 0-d array: an object one would nest
    if isinstance(value, (list, tuple)):
        return [_unwrap_tensors(v, tensors) for v in value]
    return value


def _packed(value, first):
    """``value``, a nested list holding tensors, as TF packs it: in the dtype of its first tensor
    ``first``.  Its other items are converted to that dtype (TypeError when one does not fit);
    a tensor of another dtype is InvalidArgumentError."""
    dtype = first.dtype
    leaves = itertools.count()   # the index of each item, for errors

    def convert(item):
        if isinstance(item, (list, tuple)):
            return [convert(v) for v in item]
        index = next(leaves)
        if isinstance(item, Tensor) or getattr(item, "_is_variable", False):
            if item.dtype is not dtype:
                raise InvalidArgumentError(
                    None, "pack", f"Cannot convert {value!r} to a tensor: element {index} has "
                    f"dtype {item.dtype.name}, but the first tensor's dtype is {dtype.name}; "
                    "the tensors of a list must share one dtype (cast them with tf.cast).")
            array = np.asarray(item)
        else:
            array = to_numpy(item, dtype)
        return array[()]

    return np.array(convert(value), dtype=dtype.as_numpy_dtype)


def _as_bytes(value):
    return value.encode() if isinstance(value, str) else value


def _cast_checked(array, dtype, value):
    """Casts ``array`` to ``dtype`` as TF's conversion does: no silent loss of a fraction/sign."""
    target = dtype.as_numpy_dtype
    if array.dtype == np.dtype(target):
        return array
    if dtype is dtypes.string and array.size == 0:   # [] and other empty values, as in TF
        return np.empty(array.shape, object)
    if dtype is dtypes.string or array.dtype == object:
        raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype.name}.")
    if dtype.is_integer or dtype.is_bool:
        if array.dtype.kind == "f" and not np.all(np.isfinite(array) & (array == np.round(array))):
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}: "
                            "it has a fractional or non-finite part. Use tf.cast to truncate.")
        if dtype.is_integer and array.size and (array.min() < dtype.min or array.max() > dtype.max):
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}: "
                            "out of range.")
    if array.dtype.kind == "c" and not dtype.is_complex:
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}: it is "
                        "complex.")
    token = fp_errors.ignore()   # a float beyond the target's range becomes inf, as in TF
    try:
        return array.astype(target)
    finally:
        fp_errors.restore(token)


def to_numpy(value, dtype=None):
    """The NumPy value (array or NumPy scalar) a Python value converts to."""
    if isinstance(value, (np.ndarray, np.generic)):
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
        if array.dtype.kind in "SU":
            array = np.vectorize(_as_bytes, otypes=[object])(array)
        elif array.dtype == object:
            others = [v for v in array.reshape(-1) if not isinstance(v, (str, bytes))]
            if others:
                raise ValueError(f"Failed to convert a NumPy array to a Tensor (Unsupported "
                                 f"object type {type(others[0]).__name__}).")
            array = np.vectorize(_as_bytes, otypes=[object])(array)
    else:
        tensors = []
        array = _raw_numpy(value, tensors)
        if dtype is None:
            return _packed(value, tensors[0]) if tensors else _with_default_dtype(array, value)
    if dtype is not None:
        array = _cast_checked(array, dtypes.as_dtype(dtype), value)
    return array


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """Converts a tensor, variable, NumPy array or Python value to a ``Tensor``.

    A tensor or variable of a different dtype than ``dtype`` is an error (use ``tf.cast``);
    ``dtype_hint`` is used only for values that have no dtype of their own.
    """
    if isinstance(value, Tensor):
        if dtype is not None and dtypes.as_dtype(dtype) is not value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} "
                             f"for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    if getattr(value, "_is_variable", False):
        if dtype is not None and dtypes.as_dtype(dtype) is not value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} "
                             f"for variable {value.name} with dtype {value.dtype.name}.")
        return value.value()
    if value is None:
        raise ValueError("Attempt to convert a value (None) with an unsupported type "
                         "(<class 'NoneType'>) to a Tensor.")
    if dtype is None and dtype_hint is not None and not isinstance(value, (np.ndarray, np.generic)):
        try:
            return Tensor(to_numpy(value, dtype_hint))
        except (TypeError, ValueError):
            pass
    return Tensor(to_numpy(value, dtype))


def constant(value, dtype=None, shape=None, name="Const"):
    """Creates a constant tensor from a Python value or NumPy array (``tf.constant``).

    With ``shape``, a scalar is broadcast to it and other values are reshaped to it.
    """
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        array = np.asarray(value)
        if dtype is not None:
            array = _cast_checked(array, dtypes.as_dtype(dtype), value)
    else:
        array = to_numpy(value, dtype)
        if isinstance(value, np.ndarray) and array is value:
            array = array.copy()  # the caller may mutate their array; a tensor never changes
    if shape is not None:
        try:
            shape = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise TypeError(f"constant: shape must be a list of integers, got {shape!r}.") from None
        if array.size == 1:
            array = np.broadcast_to(array.reshape(()), shape).copy()
        elif array.size == int(np.prod(shape)):
            array = array.reshape(shape)
        else:
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tried to "
                            f"convert {array.size} elements to shape {list(shape)}.")
    return Tensor(devices.placed(array))


def python_scalar_array(value, np_dtype, op_name):
    """A Python number as a NumPy scalar of an operand's dtype, refusing lossy conversions."""
    kind = np_dtype.kind
    if kind == "f":
        token = fp_errors.ignore()   # beyond the dtype's range: inf, as in TF
        try:
            return np_dtype.type(value)
        finally:
            fp_errors.restore(token)
    if kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise TypeError(f"{op_name}: cannot convert {value!r} to EagerTensor of dtype "
                            f"{np_dtype.name}; cast the tensor to a float dtype first.")
        info = np.iinfo(np_dtype)
        if not info.min <= value <= info.max:
            raise TypeError(f"{op_name}: {value!r} is out of range for dtype {np_dtype.name}.")
        return np_dtype.type(value)
    if kind == "b" and isinstance(value, bool):
        return np.bool_(value)
    if kind == "c":
        return np_dtype.type(value)
    raise TypeError(f"{op_name}: cannot convert {value!r} to a tensor of dtype "
                    f"{dtypes.of_array(np.empty(0, np_dtype)).name}.")
