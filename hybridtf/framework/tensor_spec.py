"""``TensorSpec``: the shape and dtype a tensor must have (shape dims may be None)."""
from hybridtf.framework import dtypes
from hybridtf.framework.tensor_shape import TensorShape, as_shape


class TensorSpec:
    """Describes a tensor: shape (possibly partial), dtype and an optional name."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    def is_compatible_with(self, spec_or_value):
        """True when a tensor/spec has this dtype and a compatible shape."""
        other_dtype = getattr(spec_or_value, "dtype", None)
        other_shape = getattr(spec_or_value, "shape", None)
        if other_dtype is None or other_shape is None:
            return False
        return (dtypes.as_dtype(other_dtype) is self._dtype
                and self._shape.is_compatible_with(TensorShape(tuple(other_shape))
                                                   if not isinstance(other_shape, TensorShape)
                                                   else other_shape))

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._shape == other._shape
                and self._dtype is other._dtype and self._name == other._name)

    def __hash__(self):
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self):
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"
