"""TF's dtypes (``tf.float32`` ...), comparable with each other, NumPy dtypes and names."""
import warnings

import numpy as np


class DType:
    """A tensor element type, e.g. ``tf.float32``."""

    __slots__ = ("_name", "_np")

    def __init__(self, name, np_dtype):
        self._name = name
        self._np = np_dtype

    name = property(lambda self: self._name)
    as_numpy_dtype = property(lambda self: self._np.type, doc="The NumPy scalar type.")
    is_floating = property(lambda self: self._np.kind == "f")
    is_integer = property(lambda self: self._np.kind in "iu")
    is_unsigned = property(lambda self: self._np.kind == "u")
    is_bool = property(lambda self: self._np.kind == "b")
    is_complex = property(lambda self: self._np.kind == "c")
    is_numeric = property(lambda self: self._np.kind in "iufc")
    size = property(lambda self: self._np.itemsize)
    base_dtype = property(lambda self: self)
    real_dtype = property(lambda self: self)

    @property
    def min(self):
        if self.is_floating:
            return float(np.finfo(self._np).min)
        if self.is_integer:
            return int(np.iinfo(self._np).min)
        raise TypeError(f"Cannot find minimum value of {self._name}.")

    @property
    def max(self):
        if self.is_floating:
            return float(np.finfo(self._np).max)
        if self.is_integer:
            return int(np.iinfo(self._np).max)
        raise TypeError(f"Cannot find maximum value of {self._name}.")

    def is_compatible_with(self, other):
        return self == other

    def __eq__(self, other):
        if isinstance(other, DType):
            return self is other
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"tf.{self._name}"

    def __reduce__(self):
        return as_dtype, (self._name,)


float16 = DType("float16", np.dtype(np.float16))
float32 = DType("float32", np.dtype(np.float32))
float64 = DType("float64", np.dtype(np.float64))
int8 = DType("int8", np.dtype(np.int8))
int16 = DType("int16", np.dtype(np.int16))
int32 = DType("int32", np.dtype(np.int32))
int64 = DType("int64", np.dtype(np.int64))
uint8 = DType("uint8", np.dtype(np.uint8))
uint16 = DType("uint16", np.dtype(np.uint16))
uint32 = DType("uint32", np.dtype(np.uint32))
uint64 = DType("uint64", np.dtype(np.uint64))
bool = DType("bool", np.dtype(np.bool_))  # noqa: A001 - TF's name
complex64 = DType("complex64", np.dtype(np.complex64))
complex128 = DType("complex128", np.dtype(np.complex128))
string = DType("string", np.dtype(object))
half = float16
double = float64

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
        bool, complex64, complex128, string)
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, double=float64)
# NumPy dtype -> DType; object arrays hold bytes (tf.string).
NP_TO_DTYPE = {d._np: d for d in _ALL}
NP_TO_DTYPE[np.dtype("S")] = string
NP_TO_DTYPE[np.dtype("U")] = string


def as_dtype(type_value):
    """Converts a DType, NumPy dtype/type or name to a ``DType``; TypeError otherwise."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        found = _BY_NAME.get(type_value)
        if found is not None:
            return found
    try:
        with warnings.catch_warnings():   # a deprecated NumPy alias ('a') is not a dtype name
            warnings.simplefilter("error", DeprecationWarning)
            np_dtype = np.dtype(type_value)
    except (TypeError, DeprecationWarning):
        np_dtype = None
    if np_dtype is not None:
        found = NP_TO_DTYPE.get(np_dtype)
        if found is None and np_dtype.kind in "SUO":
            found = string
        if found is not None:
            return found
    raise TypeError(f"Cannot convert {type_value!r} to a hybridtf DType. Use one of "
                    f"{sorted(_BY_NAME)}.")


def of_array(array):
    """The DType of a NumPy array or scalar."""
    dt = array.dtype
    found = NP_TO_DTYPE.get(dt)
    return found if found is not None else as_dtype(dt)
