"""``tf.TensorArray``: a list of same-shaped tensors usable in eager code, traced code and loops.

It is functional, as in TF: ``write`` returns the new array (``ta = ta.write(i, x)``).  Its
contents live in one buffer tensor of shape [size, *element_shape], so a TensorArray can be a
``tf.while_loop`` variable; reads and writes are differentiable.
"""
import numpy as np

from hybridtf.api import array_ops, math_ops
from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.registry import checks
from hybridtf.registry import tensor_array as TA


class TensorArray:
    """A list of tensors of one dtype and element shape (``tf.TensorArray``)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        if size is None and not self._dynamic_size:
            raise ValueError("TensorArray: give a size, or dynamic_size=True.")
        self._size = 0 if size is None else size
        self._element_shape = TensorShape(element_shape) if element_shape is not None else None
        self._buffer = None
        if self._element_shape is not None and self._element_shape.is_fully_defined():
            self._buffer = self._zeros(self._element_shape.as_list())

    def _zeros(self, element_shape):
        size = self._size
        if isinstance(size, Tensor) and type(size).__name__ != "Tensor":
            raise ValueError("TensorArray: a size that is only known when the function runs "
                             "needs dynamic_size=True.")
        return array_ops.zeros([int(size)] + list(element_shape), dtype=self._dtype)

    def _with_buffer(self, buffer):
        other = TensorArray.__new__(TensorArray)
        other.__dict__.update(self.__dict__)
        other._buffer = buffer
        if buffer is not None:
            other._element_shape = TensorShape(buffer._shape_tuple[1:]) \
                if buffer._shape_tuple is not None else other._element_shape
        return other

    # ---- properties ------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._element_shape if self._element_shape is not None else TensorShape(None)

    @property
    def dynamic_size(self):
        return self._dynamic_size

    def size(self, name=None):
        """The number of elements, as an int32 scalar tensor."""
        if self._buffer is None:
            return as_tensor(np.int32(int(self._size)))
        return math_ops.cast(array_ops.shape(self._buffer)[0], dtypes.int32)

    # ---- element access ----------------------------------------------------------------------
    def write(self, index, value, name=None):
        """A new TensorArray with ``value`` at ``index``."""
        value = as_tensor(value, dtype=self._dtype)
        if value.dtype is not self._dtype:
            raise TypeError(f"TensorArray.write: value has dtype {value.dtype.name} but the "
                            f"TensorArray holds {self._dtype.name}.")
        buffer = self._buffer
        if buffer is None:
            if value._shape_tuple is None or None in value._shape_tuple:
                raise ValueError("TensorArray.write: the first value written needs a fully "
                                 "known shape, or give element_shape.")
            buffer = self._zeros(value._shape_tuple)
        index = math_ops.cast(as_tensor(index), dtypes.int32)
        new = execute1(TA.TENSOR_ARRAY_WRITE, [buffer, index, value],
                       {"dynamic_size": self._dynamic_size})
        return self._with_buffer(new)

    def read(self, index, name=None):
        """The element at ``index``."""
        self._require_buffer("read")
        return array_ops.gather(self._buffer, math_ops.cast(as_tensor(index), dtypes.int32))

    def gather(self, indices, name=None):
        self._require_buffer("gather")
        return array_ops.gather(self._buffer, math_ops.cast(as_tensor(indices), dtypes.int32))

    def stack(self, name=None):
        """All elements stacked along a new first dimension."""
        if self._buffer is None:
            if self._element_shape is not None and self._element_shape.is_fully_defined():
                return self._zeros(self._element_shape.as_list())
            self._require_buffer("stack")
        return array_ops.identity(self._buffer)

    def concat(self, name=None):
        """All elements concatenated along their first dimension."""
        self._require_buffer("concat")
        shape = self._buffer._shape_tuple
        if len(shape) < 2:
            checks.fail("TensorArray.concat", "elements must have rank >= 1 to concatenate.")
        return array_ops.reshape(self._buffer, [-1] + list(shape[2:]))

    def unstack(self, value, name=None):
        """A TensorArray whose elements are the rows of ``value``."""
        value = as_tensor(value, dtype=self._dtype)
        return self._with_buffer(array_ops.identity(value))

    def scatter(self, indices, value, name=None):
        """A TensorArray with the rows of ``value`` written at ``indices``."""
        value = as_tensor(value, dtype=self._dtype)
        result = self
        positions = np.asarray(indices).reshape(-1).tolist()
        for row, position in enumerate(positions):
            result = result.write(position, value[row])
        return result

    def close(self, name=None):
        return None

    def _require_buffer(self, what):
        if self._buffer is None:
            raise ValueError(f"TensorArray.{what}: nothing has been written yet and the element "
                             "shape is unknown; write first or give element_shape.")

    def __repr__(self):
        return (f"<TensorArray dtype={self._dtype.name} size={self._size} "
                f"element_shape={self.element_shape}>")
