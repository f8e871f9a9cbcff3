"""Index-tuple kernels: gather_nd, scatter_nd and tensor_scatter_nd_*, boolean masks, and taking
and putting values along an axis.

An index tuple of length K into an array addresses a *row*: the slice over the array's
remaining dimensions.  The wrappers turn index tuples into row numbers (``flat_rows``) and view
arrays as C-contiguous (T, R, B) blocks -- T batch entries of R rows of B elements -- so that
one kernel serves every rank.  Indices must have been validated by the caller; the kernels
still skip (scatters) or refuse with IndexError (gathers) a row outside [0, R) rather than
touch memory out of bounds.
"""
from math import prod

import numpy as np

from ops.kernel_cache import njit

_jit = njit()

UPDATE, ADD, SUB, MAX, MIN = 0, 1, 2, 3, 4
MODES = {"update": UPDATE, "add": ADD, "sub": SUB, "max": MAX, "min": MIN}


def _movable(x):
    """``x`` viewed with an unsigned integer dtype of its item size: kernels that only copy
    elements then serve every dtype (bool and float16 included) with a few compilations."""
    if x.dtype == object or x.dtype.itemsize not in (1, 2, 4, 8):
        return x
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


# ---- kernels ---------------------------------------------------------------------------------
@_jit
def gather_rows_kernel(params, rows, out):
    """out[t, m, :] = params[t, rows[t, m], :]; params (T, R, B), rows (T, M) -- or (1, M):
    the same rows for every t --, out (T, M, B)."""
    T, R, B = params.shape
    M = rows.shape[1]
    for t in range(T):
        rows_t = rows[t % rows.shape[0]]
        for m in range(M):
            r = rows_t[m]
            if r < 0 or r >= R:
                raise IndexError("gather_nd: row out of range")
            src = params[t, r]
            dst = out[t, m]
            for b in range(B):
                dst[b] = src[b]


@_jit
def scatter_rows_kernel(updates, rows, mode, out):
    """out[t, rows[t, m], :] (mode)= updates[t, m, :] in order of m, for ``mode`` UPDATE (the
    last update of a row wins), ADD, SUB, MAX or MIN; rows outside [0, R) are skipped.

    updates (T, M, B); rows (T, M), or (1, M) for the same rows for every t; out (T, R, B),
    updated in place.
    """
    T, R, B = out.shape
    M = rows.shape[1]
    for t in range(T):
        rows_t = rows[t % rows.shape[0]]
        for m in range(M):
            r = rows_t[m]
            if r < 0 or r >= R:
                continue
            src = updates[t, m]
            dst = out[t, r]
            if mode == UPDATE:
                for b in range(B):
                    dst[b] = src[b]
            elif mode == ADD:
                for b in range(B):
                    dst[b] += src[b]
            elif mode == SUB:
                for b in range(B):
                    dst[b] -= src[b]
            elif mode == MAX:   # as TF: a NaN neither replaces nor is replaced
                for b in range(B):
                    if src[b] > dst[b]:
                        dst[b] = src[b]
            else:
                for b in range(B):
                    if src[b] < dst[b]:
                        dst[b] = src[b]


@_jit
def take_along_kernel(x, indices, out):
    """out[a, k, b] = x[a, indices[a, k, b], b]; x (A, N, B), indices and out (A, K, B)."""
    A, N, B = x.shape
    K = indices.shape[1]
    for a in range(A):
        for k in range(K):
            for b in range(B):
                i = indices[a, k, b]
                if i < 0 or i >= N:
                    raise IndexError("take_along_axis: index out of range")
                out[a, k, b] = x[a, i, b]


@_jit
def put_along_add_kernel(values, indices, out):
    """out[a, indices[a, k, b], b] += values[a, k, b]: the adjoint of take_along_kernel; indices
    outside [0, N) are skipped.  values and indices (A, K, B); out (A, N, B)."""
    A, N, B = out.shape
    K = indices.shape[1]
    for a in range(A):
        for k in range(K):
            for b in range(B):
                i = indices[a, k, b]
                if 0 <= i < N:
                    out[a, i, b] += values[a, k, b]


# ---- public API ------------------------------------------------------------------------------
def flat_rows(indices, dims):
    """Row numbers (int64, shape indices.shape[:-1]) of the index tuples ``indices`` (..., K)
    into the first K = len(dims) dimensions ``dims`` of an array, in C order."""
    indices = np.asarray(indices, np.int64)
    strides = np.ones(len(dims), np.int64)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]
    return indices @ strides if len(dims) else np.zeros(indices.shape[:-1], np.int64)


def gather_nd(params, indices, batch_dims=0):
    """tf.gather_nd: the slices of ``params`` at the index tuples in the last axis of
    ``indices``; the first ``batch_dims`` dimensions of both are batch dimensions (equal).

    Every index must be in range (checked by the caller).  Returns
    indices.shape[:-1] + params.shape[batch_dims + K:].
    """
    params = np.asarray(params)
    indices = np.asarray(indices)
    K = indices.shape[-1]
    batch = params.shape[:batch_dims]
    T = prod(batch)
    R = prod(params.shape[batch_dims:batch_dims + K])
    tail = params.shape[batch_dims + K:]
    B = prod(tail)
    M = prod(indices.shape[batch_dims:-1])
    rows = flat_rows(indices, params.shape[batch_dims:batch_dims + K]).reshape(T, M)
    source = _movable(np.asarray(params, order="C")).reshape(T, R, B)
    if source.dtype == object:   # strings: NumPy's indexing
        out = source[np.arange(T)[:, None], rows]
    else:
        out = np.empty((T, M, B), source.dtype)
        if out.size:
            gather_rows_kernel(source, rows, out)
    return out.view(params.dtype).reshape(indices.shape[:-1] + tail)


def scatter_nd(indices, updates, tensor, mode, batch_dims=0):
    """A copy of ``tensor`` with ``updates`` combined into the slices at ``indices`` (``mode``:
    UPDATE, ADD, SUB, MAX or MIN), in order.

    tensor: (batch..., P..., tail...); indices: (batch..., ..., K) in range (checked by the
    caller); updates: indices.shape[:-1] + tail, of tensor's dtype.
    """
    tensor = np.asarray(tensor)
    indices = np.asarray(indices)
    K = indices.shape[-1]
    T = prod(tensor.shape[:batch_dims])
    R = prod(tensor.shape[batch_dims:batch_dims + K])
    B = prod(tensor.shape[batch_dims + K:])
    M = prod(indices.shape[batch_dims:-1])
    copy_only = mode == UPDATE
    work = np.float32 if tensor.dtype == np.float16 and not copy_only else tensor.dtype
    out = np.array(tensor, dtype=work, order="C")
    source = np.asarray(updates, dtype=work, order="C")
    if copy_only:
        out, source = _movable(out), _movable(source)
    if out.size and M:
        rows = flat_rows(indices, tensor.shape[batch_dims:batch_dims + K]).reshape(T, M)
        scatter_rows_kernel(source.reshape(T, M, B), rows, mode, out.reshape(T, R, B))
    return out.view(work).astype(tensor.dtype, copy=False)


def _mask_blocks(shape, axis, mask):
    return prod(shape[:axis]), prod(mask.shape), prod(shape[axis + mask.ndim:])


def _true_rows(mask):
    """The row numbers where ``mask`` is true, as the (1, count) rows of every batch entry."""
    return np.flatnonzero(mask).astype(np.int64).reshape(1, -1)


def boolean_mask(x, mask, axis):
    """tf.boolean_mask: the slices of ``x`` where ``mask`` (shaped like x.shape[axis:axis + k])
    is true, with the masked dimensions flattened into one."""
    x = np.asarray(x)
    mask = np.asarray(mask, dtype=np.bool_)
    A, N, B = _mask_blocks(x.shape, axis, mask)
    rows = _true_rows(mask)
    count = rows.shape[1]
    source = _movable(np.asarray(x, order="C")).reshape(A, N, B)
    if source.dtype == object:   # strings: NumPy's indexing
        out = source[:, rows[0]]
    else:
        out = np.empty((A, count, B), source.dtype)
        if out.size:
            gather_rows_kernel(source, rows, out)
    return out.view(x.dtype).reshape(x.shape[:axis] + (count,) + x.shape[axis + mask.ndim:])


def boolean_mask_grad(values, mask, shape, axis):
    """The adjoint of boolean_mask: ``values`` placed where ``mask`` is true in zeros of
    ``shape``."""
    values = np.asarray(values)
    mask = np.asarray(mask, dtype=np.bool_)
    A, N, B = _mask_blocks(shape, axis, mask)
    rows = _true_rows(mask)
    source = _movable(np.asarray(values, order="C"))
    out = np.zeros((A, N, B), source.dtype)
    if out.size and rows.size:
        scatter_rows_kernel(source.reshape(A, -1, B), rows, UPDATE, out)
    return out.view(values.dtype).reshape(shape)


def take_along_axis(x, indices, axis):
    """np.take_along_axis with indices in [0, x.shape[axis]) (checked by the caller)."""
    x = np.asarray(x)
    A, N, B = prod(x.shape[:axis]), x.shape[axis], prod(x.shape[axis + 1:])
    K = indices.shape[axis]
    source = _movable(np.asarray(x, order="C"))
    out = np.empty((A, K, B), source.dtype)
    if out.size:
        take_along_kernel(source.reshape(A, N, B),
                          np.asarray(indices, order="C").reshape(A, K, B), out)
    return out.view(x.dtype).reshape(indices.shape)


def put_along_axis_add(values, indices, shape, axis):
    """The adjoint of take_along_axis: zeros of ``shape`` with ``values`` added at
    ``indices`` along ``axis`` (repeated indices accumulate)."""
    values = np.asarray(values)
    A, N, B = prod(shape[:axis]), shape[axis], prod(shape[axis + 1:])
    K = values.shape[axis]
    work = np.float32 if values.dtype == np.float16 else values.dtype
    out = np.zeros((A, N, B), work)
    if out.size and values.size:
        put_along_add_kernel(np.asarray(values, dtype=work, order="C").reshape(A, K, B),
                             np.asarray(indices, order="C").reshape(A, K, B), out)
    return out.astype(values.dtype, copy=False).reshape(shape)
