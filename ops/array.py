"""Index-driven array kernels: gather, its adjoint scatter-add, one-hot.

Arrays are viewed as C-contiguous blocks: ``params`` of a gather as (batch, outer, N, inner)
where N is the gathered axis, so one kernel serves every rank, axis and batch_dims and the inner
copies are contiguous.  Indices must have been validated by the caller; the kernels still refuse
(IndexError) an out-of-range gather index rather than read out of bounds.
"""
from math import prod

import numpy as np

from ops.kernel_cache import njit

_jit = njit(error_model="numpy")


# ---- kernels ---------------------------------------------------------------------------------
@_jit
def gather_kernel(params, indices, out):
    """out[t, a, m, :] = params[t, a, indices[t, m], :].

    params: (T, A, N, B) C-contiguous; indices: (T, M) int; out: (T, A, M, B).
    Raises IndexError for an index outside [0, N).
    """
    T, A, N, B = params.shape
    M = indices.shape[1]
    for t in range(T):
        for m in range(M):
            if indices[t, m] < 0 or indices[t, m] >= N:
                raise IndexError("gather: index out of range")
        for a in range(A):
            for m in range(M):
                src = params[t, a, indices[t, m]]
                dst = out[t, a, m]
                for b in range(B):
                    dst[b] = src[b]


@_jit
def scatter_add_kernel(updates, indices, out):
    """out[t, a, indices[t, m], :] += updates[t, a, m, :]; indices outside [0, N) are dropped.

    updates: (T, A, M, B) C-contiguous; indices: (T, M) int; out: (T, A, N, B), accumulated into
    (the caller zero-fills it).
    """
    T, A, N, B = out.shape
    M = indices.shape[1]
    for t in range(T):
        for a in range(A):
            for m in range(M):
                i = indices[t, m]
                if i < 0 or i >= N:
                    continue
                src = updates[t, a, m]
                dst = out[t, a, i]
                for b in range(B):
                    dst[b] += src[b]


@_jit
def one_hot_kernel(indices, on_value, out):
    """out[a, indices[a, b], b] = on_value where 0 <= index < depth; out is pre-filled with off.

    indices: (A, B) int; out: (A, depth, B).
    """
    A, depth, B = out.shape
    for a in range(A):
        for b in range(B):
            i = indices[a, b]
            if 0 <= i < depth:
                out[a, i, b] = on_value


# ---- public API ------------------------------------------------------------------------------
def gather(params, indices, axis, batch_dims=0):
    """tf.gather: slices of ``params`` along ``axis`` picked by ``indices``.

    params: ndarray of any dtype, rank >= 1.  indices: int32/int64 ndarray, every value in
    [0, params.shape[axis]).  axis and batch_dims normalised by the caller with
    0 <= batch_dims <= axis < params.ndim, batch_dims <= indices.ndim and
    params.shape[:batch_dims] == indices.shape[:batch_dims].
    Returns params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:].
    """
    params = np.asarray(params, order="C")
    indices = np.asarray(indices, order="C")
    ps, ishape = params.shape, indices.shape
    T = prod(ps[:batch_dims])
    A = prod(ps[batch_dims:axis])
    N = ps[axis]
    B = prod(ps[axis + 1:])
    M = prod(ishape[batch_dims:])
    out_shape = ps[:axis] + ishape[batch_dims:] + ps[axis + 1:]
    out = np.empty((T, A, M, B), params.dtype)
    if out.size and params.dtype == object:   # strings: Numba has no object arrays
        blocks, rows = params.reshape(T, A, N, B), indices.reshape(T, M)
        for t in range(T):
            out[t] = blocks[t][:, rows[t]]
    elif out.size:
        gather_kernel(params.reshape(T, A, N, B), indices.reshape(T, M), out)
    return out.reshape(out_shape)


def scatter_add(updates, indices, axis, dim_size, batch_dims=0):
    """The adjoint of gather: sums ``updates`` into slots ``indices`` along ``axis``.

    updates: numeric ndarray shaped like gather's output,
    P[:axis] + indices.shape[batch_dims:] + P[axis + 1:]; indices: int32/int64 in [0, dim_size)
    (others are dropped); the same axis/batch_dims contract as gather.  Returns an array of
    updates' dtype shaped P[:axis] + (dim_size,) + P[axis + 1:] where repeated indices accumulate.
    """
    updates = np.asarray(updates, order="C")
    indices = np.asarray(indices, order="C")
    ishape = indices.shape
    n_idx = len(ishape) - batch_dims
    lead = updates.shape[:axis]
    tail = updates.shape[axis + n_idx:]
    T = prod(lead[:batch_dims])
    A = prod(lead[batch_dims:])
    M = prod(ishape[batch_dims:])
    B = prod(tail)
    out = np.zeros((T, A, dim_size, B), updates.dtype)
    if out.size and updates.size:
        scatter_add_kernel(updates.reshape(T, A, M, B), indices.reshape(T, M), out)
    return out.reshape(lead + (dim_size,) + tail)


def one_hot(indices, depth, on_value=1, off_value=0, axis=-1, dtype=np.float32):
    """tf.one_hot: a ``depth``-long axis inserted at ``axis``, on_value at each index.

    indices: int32/int64 ndarray; depth: int >= 0; axis: -1 or in [0, indices.ndim]; dtype: any
    NumPy dtype that on_value/off_value convert to.  Indices outside [0, depth) give an all-off row.
    Returns indices.shape with depth inserted at axis.
    """
    indices = np.asarray(indices, order="C")
    if axis == -1:
        axis = indices.ndim
    ishape = indices.shape
    A = prod(ishape[:axis])
    B = prod(ishape[axis:])
    dtype = np.dtype(dtype)
    out = np.full((A, depth, B), off_value, dtype)
    if out.size and dtype == object:   # strings: Numba has no object arrays
        rows = indices.reshape(A, B)
        a, b = np.nonzero((rows >= 0) & (rows < depth))
        out[a, rows[a, b], b] = on_value
    elif out.size and dtype == np.float16:   # Numba has no float16: its bits are stored
        one_hot_kernel(indices.reshape(A, B), np.float16(on_value).view(np.uint16),
                       out.view(np.uint16))
    elif out.size:
        one_hot_kernel(indices.reshape(A, B), dtype.type(on_value), out)
    return out.reshape(ishape[:axis] + (depth,) + ishape[axis:])
