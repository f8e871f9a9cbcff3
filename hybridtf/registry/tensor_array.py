"""TensorArray ops: writing one element of a TensorArray's buffer (and its gradient)."""
import numpy as np

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry import OpDef, Spec, checks, register


def _write_eager(arrays, attrs):
    buffer, index, value = arrays
    i = int(index)
    if i < 0 or (i >= buffer.shape[0] and not attrs["dynamic_size"]):
        checks.fail("TensorArray.write", f"index {i} is out of range for a TensorArray of size "
                    f"{buffer.shape[0]}; use dynamic_size=True to let it grow.")
    if tuple(value.shape) != tuple(buffer.shape[1:]):
        checks.fail("TensorArray.write", f"value of shape {list(value.shape)} does not match the "
                    f"element shape {list(buffer.shape[1:])}.")
    if i >= buffer.shape[0]:
        grown = np.zeros((i + 1,) + buffer.shape[1:], buffer.dtype)
        grown[:buffer.shape[0]] = buffer
        buffer = grown
    else:
        buffer = buffer.copy()
    buffer[i] = value
    return buffer


def _write_infer(specs, attrs):
    buffer, index, value = specs
    if index.dtype.kind not in "iu" or len(index.shape or ()) != 0:
        raise TypeError("TensorArray.write: index must be a scalar integer.")
    if value.dtype != buffer.dtype:
        raise TypeError(f"TensorArray.write: value has dtype {checks.dtype_name(value.dtype)} but "
                        f"the TensorArray holds {checks.dtype_name(buffer.dtype)}.")
    shape = buffer.shape
    if attrs["dynamic_size"] and shape is not None:
        shape = (None,) + tuple(shape[1:])
    return [Spec(shape, buffer.dtype)]


def _write_grad(record, grads):
    buffer, index, value = record.inputs
    g_buffer, g_value = A.tensor_array_write_grad(grads[0], buffer, index)
    return g_buffer, None, g_value


TENSOR_ARRAY_WRITE = register(OpDef("tensor_array_write", "opaque", {"cpu": _write_eager},
                                    _write_infer, _write_grad))


def _write_grad_eager(arrays, attrs):
    g, buffer, index = arrays
    i = int(index)
    g_buffer = np.array(g[:buffer.shape[0]])
    g_value = np.array(g[i])
    if i < g_buffer.shape[0]:
        g_buffer[i] = 0
    return g_buffer, g_value


TENSOR_ARRAY_WRITE_GRAD = register(OpDef(
    "tensor_array_write_grad", "opaque", {"cpu": _write_grad_eager},
    lambda specs, attrs: [Spec(specs[1].shape, specs[0].dtype),
                          Spec(None if specs[1].shape is None else tuple(specs[1].shape[1:]),
                               specs[0].dtype)],
    num_outputs=2))
