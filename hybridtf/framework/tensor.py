"""``Tensor``: an immutable n-dimensional array with a dtype and a shape.

An eager tensor holds its value as an array of one backend (``framework.devices``: on the CPU,
a NumPy array, or a NumPy scalar for rank 0) that is never written to after creation, so tensors
may share memory freely; its device is its array's.  Python operators are attached by
``hybridtf.api.operators`` so that this module does not depend on the op library.
"""
import numpy as np

from hybridtf.framework import devices, dtypes
from hybridtf.framework.tensor_shape import TensorShape


class Reference:
    """A hashable reference to a tensor or variable (``x.ref()``), usable as a dict key."""

    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def __eq__(self, other):
        return isinstance(other, Reference) and other._obj is self._obj

    def __hash__(self):
        return id(self._obj)

    def __repr__(self):
        return f"<Reference wrapping {self._obj!r}>"


def format_value(value, dtype):
    """The value part of a tensor's repr, in NumPy's notation (bytes for strings)."""
    if dtype is dtypes.string:
        return repr(value if np.ndim(value) == 0 else np.asarray(value))
    return np.array2string(np.asarray(value), separator=" ") if np.ndim(value) else str(value)


class Tensor:
    """A multi-dimensional array of elements of one dtype (``tf.Tensor``)."""

    __slots__ = ("_value", "__weakref__")
    __array_priority__ = 100  # NumPy defers to our reflected operators

    def __init__(self, value):
        self._value = value

    # ---- properties ---------------------------------------------------------------------------
    @property
    def dtype(self):
        return dtypes.of_array(self._value)

    @property
    def shape(self):
        return TensorShape(self._value.shape)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied "
                             f"shape {TensorShape(shape)}.")

    @property
    def ndim(self):
        return self._value.ndim

    # Shape and NumPy dtype for op code that must also work on symbolic (traced) tensors,
    # whose shapes may have None dimensions.
    @property
    def _shape_tuple(self):
        shape = self._value.shape
        # (a tuple, even for the CUDA simulator's device arrays, whose shape is not one)
        return shape if type(shape) is tuple else tuple(shape)

    @property
    def _np_dtype(self):
        return self._value.dtype

    @property
    def device(self):
        """The full name of the device holding this tensor's value."""
        return devices.backend_of(self._value).device_name

    @property
    def name(self):
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")

    def numpy(self):
        """The value as a NumPy array (a NumPy scalar for rank 0), copied to the host from
        another device."""
        value = devices.to_host(self._value)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return value[()]
        return value

    def ref(self):
        return Reference(self)

    experimental_ref = ref

    # ---- Python protocol ----------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        value = np.asarray(devices.to_host(self._value))
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)
        return value.copy() if copy else value

    def _scalar(self, kind):
        if self._value.ndim != 0 and self._value.size != 1:
            raise TypeError(f"Only a tensor with one element can be converted to a Python {kind}; "
                            f"this one has shape {self.shape}.")
        value = devices.to_host(self._value)   # (copied from a GPU)
        return value.reshape(()) if value.ndim else value

    def __bool__(self):
        if self._value.ndim != 0:
            raise ValueError(f"The truth value of a tensor of shape {self.shape} is ambiguous; "
                             "use tf.reduce_any or tf.reduce_all.")
        return bool(devices.to_host(self._value))

    def __float__(self):
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __index__(self):
        if not self.dtype.is_integer or self._value.ndim != 0:
            raise TypeError(f"Only scalar integer tensors can be used as an index, got "
                            f"dtype {self.dtype.name} and shape {self.shape}.")
        return int(devices.to_host(self._value))

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a scalar tensor is undefined.")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (self[i] for i in range(self._value.shape[0]))

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def __format__(self, spec):
        if self._value.ndim == 0:
            return format(self.numpy(), spec)
        return format(str(self), spec)

    def __repr__(self):
        dtype = self.dtype
        value = self.numpy()
        shown = repr(value) if isinstance(value, np.ndarray) else format_value(value, dtype)
        return f"<tf.Tensor: shape={self.shape}, dtype={dtype.name}, numpy={shown}>"

    def __str__(self):
        dtype = self.dtype
        return (f"tf.Tensor({format_value(self.numpy(), dtype)}, shape={self.shape}, "
                f"dtype={dtype.name})")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):   # (a GPU tensor is unpickled on the host, as TF's)
        return Tensor, (devices.to_host(self._value),)


def is_tensor(value):
    """True for tensors and variables (``tf.is_tensor``)."""
    return isinstance(value, Tensor) or getattr(value, "_is_variable", False)
