"""Gathering and scattering by index tuples, and boolean masks: ``tf.gather_nd``,
``tf.scatter_nd``, ``tf.tensor_scatter_nd_*``, ``tf.boolean_mask``."""
from hybridtf.api import array_ops as A
from hybridtf.api import math_ops as M
from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import checks, sizes
from hybridtf.registry import scatter as XR


def gather_nd(params, indices, batch_dims=0, name=None):
    """Gathers slices of ``params`` at the index tuples in the last axis of ``indices``.

    An index tuple of length K picks ``params[i0, ..., iK-1]`` (a slice over the remaining
    dimensions), so the result has shape ``indices.shape[:-1] + params.shape[batch_dims + K:]``.
    The first ``batch_dims`` dimensions of ``params`` and ``indices`` are batch dimensions:
    each batch entry indexes its own slice of ``params``.  An index out of range is an error.
    """
    p = as_tensor(params)
    i = as_tensor(indices)
    return execute1(XR.GATHER_ND, [p, i], {"batch_dims": _batch_dims(batch_dims)})


def _batch_dims(batch_dims):
    static, _ = sizes.split(batch_dims, "gather_nd", "batch_dims")
    if static is None:
        raise TypeError("gather_nd: batch_dims must be known when the function is traced (a "
                        "Python int), not a tensor computed inside it.")
    if static < 0:
        checks.fail("gather_nd", f"batch_dims must be >= 0, got {static}.")
    return static


def scatter_nd(indices, updates, shape, name=None):
    """A tensor of ``shape`` holding zeros, with ``updates`` added at the index tuples in the
    last axis of ``indices`` (repeated indices sum).

    ``updates`` has shape ``indices.shape[:-1] + shape[K:]`` where K is the length of the
    index tuples; an index out of range is an error.
    """
    return scatter_nd_batched(indices, updates, shape, 0)


def scatter_nd_batched(indices, updates, shape, batch_dims):
    """``scatter_nd`` whose first ``batch_dims`` dimensions are batch dimensions: the adjoint
    of ``gather_nd`` with ``batch_dims`` (its gradient)."""
    i = as_tensor(indices)
    u = as_tensor(updates)
    static, dynamic = sizes.split(_packed(shape), "scatter_nd", "shape", rank=1)
    return execute1(XR.SCATTER_ND, [i, u] + sizes.inputs(dynamic),
                    {"shape": static, "batch_dims": int(batch_dims)})


def _packed(shape):
    """A shape given as a list holding tensors computed inside a function, as one vector."""
    if isinstance(shape, (list, tuple)) and any(
            isinstance(d, Tensor) and type(d) is not Tensor for d in shape):
        return A.stack([M.cast(d, dtypes.int64) for d in shape])
    return shape


def _tensor_scatter(op, tensor, indices, updates):
    t = as_tensor(tensor)
    return execute1(op, [t, as_tensor(indices), as_tensor(updates, t.dtype)], None)


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with the slices at the index tuples ``indices`` replaced by
    ``updates`` (shape ``indices.shape[:-1] + tensor.shape[K:]``).  With repeated indices the
    last update is kept."""
    return _tensor_scatter(XR.TENSOR_SCATTER_UPDATE, tensor, indices, updates)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with ``updates`` added at the index tuples ``indices`` (repeated
    indices accumulate)."""
    return _tensor_scatter(XR.TENSOR_SCATTER_ADD, tensor, indices, updates)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with ``updates`` subtracted at the index tuples ``indices``."""
    return _tensor_scatter(XR.TENSOR_SCATTER_SUB, tensor, indices, updates)


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """A copy of ``tensor`` where each indexed element becomes the maximum of itself and the
    updates written to it."""
    return _tensor_scatter(XR.TENSOR_SCATTER_MAX, tensor, indices, updates)


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """A copy of ``tensor`` where each indexed element becomes the minimum of itself and the
    updates written to it."""
    return _tensor_scatter(XR.TENSOR_SCATTER_MIN, tensor, indices, updates)


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The slices of ``tensor`` where ``mask`` is true.

    ``mask`` (k dimensions) matches ``tensor``'s dimensions ``axis`` to ``axis + k``; those
    dimensions become one, of the number of true entries.  Its size is known only when the op
    runs, so inside a ``tf.function`` that dimension is unknown (None).
    """
    return execute1(XR.BOOLEAN_MASK, [as_tensor(tensor), as_tensor(mask)],
                    {"axis": 0 if axis is None else _int_axis(axis)})


def _int_axis(axis):
    static, _ = sizes.split(axis, "boolean_mask", "axis")
    if static is None:
        raise TypeError("boolean_mask: axis must be known when the function is traced (a Python "
                        "int), not a tensor computed inside it.")
    return static


def boolean_mask_grad(values, mask, tensor, axis):
    """The gradient of ``boolean_mask``: ``values`` placed where ``mask`` is true in zeros
    shaped like ``tensor``."""
    return execute1(XR.BOOLEAN_MASK_GRAD, [as_tensor(values), as_tensor(mask), as_tensor(tensor)],
                    {"axis": axis})


def take_along_axis(x, indices, axis):
    """``x``'s elements at ``indices`` along ``axis`` (NumPy's take_along_axis)."""
    return execute1(XR.TAKE_ALONG_AXIS, [as_tensor(x), as_tensor(indices)], {"axis": int(axis)})


def put_along_axis(values, indices, like, axis):
    """The adjoint of ``take_along_axis``: zeros shaped like ``like`` with ``values`` added at
    ``indices`` along ``axis``."""
    return execute1(XR.PUT_ALONG_AXIS, [as_tensor(values), as_tensor(indices), as_tensor(like)],
                    {"axis": int(axis)})
