"""CUDA kernels of the array ops: copies along index maps, gathers, one-hot, and the segment sum
that is a gather's gradient.

Transpose, strided slices and their gradient, reverse, tile, pad, concat and split only move
elements: each is a copy (``_copy``) of a box of coordinates between two strided places of two
flat arrays -- a coordinate c of the box is element ``base + c . strides`` on either side --,
with adjacent dimensions merged where both sides allow, so that most copies are one or two
dimensional.  A copy whose contiguous axis differs between the two sides (a transpose) goes
through shared-memory tiles, so that both its reads and its writes are coalesced.  Kernels that
only move elements see arrays as unsigned integers of their item size (``_bits``): one
compilation per item size serves every dtype.

Entry points take C-contiguous device arrays and return new ones (``reshape`` and ``squeeze``
return views, as NumPy does).  Indices must have been checked by the caller; the kernels still
write a zero for an index out of range rather than read out of bounds.
"""
from math import prod

import numpy as np
from numba import cuda

from ops.cuda.launch import THREADS, blocks_for, empty, jit

_TILE = 32          # a transpose tile is _TILE x _TILE elements ...
_TILE_ROWS = 8      # ... copied by _TILE x _TILE_ROWS threads
_TILE_PITCH = _TILE + 1   # a tile's row in shared memory: one more, so no bank conflicts
_MIN_TILED = 16     # both axes of a tiled copy at least this long, or most of a tile idles


# ---- kernels ---------------------------------------------------------------------------------
@jit(device=True, cache=True)
def _offsets(index, shape, a_strides, b_strides):
    # the two places of coordinate number ``index`` < prod(shape) (C order) of ``shape``; what
    # is left of the index after the inner dimensions is the outermost coordinate
    a = 0
    b = 0
    for k in range(len(shape) - 1, 0, -1):
        c = index % shape[k]
        index //= shape[k]
        a += c * a_strides[k]
        b += c * b_strides[k]
    return a + index * a_strides[0], b + index * b_strides[0]


@jit(cache=True)
def _copy_kernel(src, dst, n, shape, src_base, src_strides, dst_base, dst_strides):
    """dst[dst_base + c . dst_strides] = src[src_base + c . src_strides] for the n coordinates
    c of ``shape``; src and dst flat."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        s, d = _offsets(i, shape, src_strides, dst_strides)
        dst[dst_base + d] = src[src_base + s]


@jit(cache=True)
def _transpose_kernel(src, dst, rows, cols, src_base, src_row_stride, dst_base,
                      dst_col_stride, n_batch, batch_shape, src_batch_strides, dst_batch_strides):
    """dst[dst_base + d + c * dst_col_stride + r] = src[src_base + s + r * src_row_stride + c]
    for r < rows, c < cols and each of the n_batch coordinates of ``batch_shape`` (at places s
    and d): each block moves _TILE x _TILE tiles through shared memory, reading along c and
    writing along r."""
    tile = cuda.shared.array((_TILE, _TILE_PITCH), src.dtype)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col_tiles = (cols + _TILE - 1) // _TILE
    per_batch = (rows + _TILE - 1) // _TILE * col_tiles
    # (the loop bounds are the same for every thread of a block: all reach the barriers)
    for t in range(cuda.blockIdx.x, n_batch * per_batch, cuda.gridDim.x):
        s, d = _offsets(t // per_batch, batch_shape, src_batch_strides, dst_batch_strides)
        s += src_base
        d += dst_base
        r0 = (t % per_batch) // col_tiles * _TILE
        c0 = (t % col_tiles) * _TILE
        c = c0 + tx
        for j in range(ty, _TILE, _TILE_ROWS):
            r = r0 + j
            if r < rows and c < cols:
                tile[j, tx] = src[s + r * src_row_stride + c]
        cuda.syncthreads()
        r = r0 + tx
        for j in range(ty, _TILE, _TILE_ROWS):
            c = c0 + j
            if r < rows and c < cols:
                dst[d + c * dst_col_stride + r] = tile[tx, j]
        cuda.syncthreads()


@jit(cache=True)
def _fill_kernel(out, value):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = value


@jit(cache=True)
def _gather_kernel(params, indices, out, A, N, M, B):
    """out[t, a, m, b] = params[t, a, indices[t, m], b]; params (T, A, N, B), indices (T, M)
    and out (T, A, M, B), all flat."""
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        b = i % B
        r = i // B
        m = r % M
        r //= M
        a = r % A
        t = r // A
        j = indices[t * M + m]
        if 0 <= j < N:
            out[i] = params[((t * A + a) * N + j) * B + b]
        else:
            out[i] = 0


@jit(cache=True)
def _gather_nd_kernel(params, indices, out, dims, M, B):
    """out[t, m, b] = params[t, row, b], row: the index tuple indices[t, m, :] into ``dims``
    (C order); params (T, prod(dims), B), indices (T, M, len(dims)), out (T, M, B), all flat."""
    K = len(dims)
    R = 1
    for k in range(K):
        R *= dims[k]
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        b = i % B
        r = i // B
        m = r % M
        t = r // M
        base = (t * M + m) * K
        row = 0
        inside = True
        for k in range(K):
            j = indices[base + k]
            if j < 0 or j >= dims[k]:
                inside = False
            row = row * dims[k] + j
        if inside:
            out[i] = params[(t * R + row) * B + b]
        else:
            out[i] = 0


@jit(cache=True)
def _one_hot_kernel(indices, out, depth, B, on, off):
    """out[a, d, b] = on where indices[a, b] == d, else off; out (A, depth, B) flat."""
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        b = i % B
        r = i // B
        if indices[r // depth * B + b] == r % depth:
            out[i] = on
        else:
            out[i] = off


@jit(cache=True)
def _segment_sum_kernel(data, ids, out, B):
    """out[ids[m], b] += data[m, b] for ids in [0, S) (others dropped); data (M, B) and
    out (S, B) flat, out zero-filled."""
    S = out.shape[0] // B
    for i in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        m = i // B
        s = ids[m]
        if 0 <= s < S:
            cuda.atomic.add(out, s * B + i - m * B, data[i])


@jit(cache=True)
def _cast_kernel(src, dst):
    for i in range(cuda.grid(1), dst.shape[0], cuda.gridsize(1)):
        dst[i] = src[i]


@jit(cache=True)
def _low_bits_kernel(src, dst, mask):
    # narrowing of unsigned integers: the low bits, as two's complement wraps a sum
    for i in range(cuda.grid(1), dst.shape[0], cuda.gridsize(1)):
        dst[i] = src[i] & mask


# ---- helpers ---------------------------------------------------------------------------------
def _strides(shape):
    """C-order strides of ``shape``, in elements."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    return strides


def _unsigned(dtype):
    """The unsigned integer dtype of ``dtype``'s item size, or None where there is none."""
    size = np.dtype(dtype).itemsize
    return np.dtype(f"u{size}") if size in (1, 2, 4, 8) else None


def _flat(array):
    """A non-empty C-contiguous device array as a 1-D view."""
    return array.reshape(array.size)


def _bits(array):
    """A non-empty device array flat, as unsigned integers of its item size where there are."""
    unsigned = _unsigned(array.dtype)
    flat = _flat(array)
    return flat if unsigned is None else flat.view(unsigned)


def _bits_of(value, dtype):
    """The scalar ``value`` in ``dtype``, as ``_bits`` sees an element of that dtype."""
    value = np.asarray(value, dtype)
    unsigned = _unsigned(dtype)
    return value[()] if unsigned is None else value.view(unsigned)[()]


def _merged(shape, *strides):
    """``shape`` and its ``strides`` (one list per array) without dimensions of size 1 and with
    neighbours merged where every array allows it; at least one dimension."""
    dims = []
    for k, size in enumerate(shape):
        if size == 1:
            continue
        here = [s[k] for s in strides]
        if dims and all(outer == inner * size for outer, inner in zip(dims[-1][1], here)):
            dims[-1] = (dims[-1][0] * size, here)
        else:
            dims.append((size, here))
    if not dims:
        dims = [(1, [0] * len(strides))]
    return (tuple(size for size, _ in dims),) + tuple(
        tuple(here[j] for _, here in dims) for j in range(len(strides)))


def _tiled_axes(shape, src_strides, dst_strides):
    """(row axis, column axis) of a copy better done by ``_transpose_kernel``: the row axis is
    contiguous in dst, the column axis in src, both long; else None."""
    rows = len(shape) - 1
    if dst_strides[rows] != 1 or src_strides[rows] == 1 or 1 not in src_strides:
        return None
    cols = src_strides.index(1)
    if shape[rows] < _MIN_TILED or shape[cols] < _MIN_TILED:
        return None
    return rows, cols


def _copy(src, dst, shape, src_base, src_strides, dst_base, dst_strides):
    """For every coordinate c of ``shape``: element ``dst_base + c . dst_strides`` of ``dst`` =
    element ``src_base + c . src_strides`` of ``src`` (C-order element numbers, each array
    taken flat; src and dst of one dtype)."""
    n = prod(shape)
    if n == 0:
        return
    shape, src_strides, dst_strides = _merged(shape, src_strides, dst_strides)
    src, dst = _bits(src), _bits(dst)
    axes = _tiled_axes(shape, src_strides, dst_strides)
    if axes is None:
        _copy_kernel[blocks_for(n), THREADS](src, dst, n, shape, src_base, src_strides,
                                             dst_base, dst_strides)
        return
    rows, cols = axes
    batch = [k for k in range(len(shape)) if k not in axes] or None
    batch_shape = (1,) if batch is None else tuple(shape[k] for k in batch)
    src_batch = (0,) if batch is None else tuple(src_strides[k] for k in batch)
    dst_batch = (0,) if batch is None else tuple(dst_strides[k] for k in batch)
    n_batch = prod(batch_shape)
    tiles = n_batch * -(-shape[rows] // _TILE) * -(-shape[cols] // _TILE)
    _transpose_kernel[blocks_for(tiles, 1), (_TILE, _TILE_ROWS)](
        src, dst, shape[rows], shape[cols], src_base, src_strides[rows], dst_base,
        dst_strides[cols], n_batch, batch_shape, src_batch, dst_batch)


def _filled(shape, dtype, value):
    """A new device array of ``shape`` and ``dtype`` holding ``value`` everywhere."""
    out = empty(tuple(shape), dtype)
    if out.size:
        _fill_kernel[blocks_for(out.size), THREADS](_bits(out), _bits_of(value, dtype))
    return out


def _copied(x, shape, base, strides):
    """A new array of ``shape``: element c is element ``base + c . strides`` of ``x``."""
    out = empty(tuple(shape), x.dtype)
    _copy(x, out, shape, base, strides, 0, _strides(shape))
    return out


def _index_map(shape, spec):
    """(shape, base, strides) of ``x[spec]`` for x C-contiguous of ``shape``: ``spec`` is a
    tuple of ints (negative ones count from the end), slices and None (a new axis), followed
    by whole dimensions as far as it does not reach."""
    strides = _strides(shape)
    out_shape, out_strides = [], []
    base = 0
    dim = 0
    for item in spec:
        if item is None:
            out_shape.append(1)
            out_strides.append(0)
            continue
        if isinstance(item, slice):
            start, stop, step = item.indices(shape[dim])
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(step * strides[dim])
            base += start * strides[dim]
        else:
            base += (item % shape[dim]) * strides[dim]
        dim += 1
    return (tuple(out_shape) + tuple(shape[dim:]), base,
            tuple(out_strides) + tuple(strides[dim:]))


# ---- shapes ----------------------------------------------------------------------------------
def reshape(x, shape):
    """``x`` (C-contiguous) in ``shape`` (same size): a view, as NumPy's reshape."""
    shape = tuple(int(d) for d in shape)
    if x.size == 0:   # device arrays cannot reshape an empty one; it has nothing to keep
        return empty(shape, x.dtype)
    return x.reshape(shape)


def squeeze(x, axes):
    """``x`` without the dimensions ``axes`` (each of size 1; None: every dimension of size 1),
    a view."""
    shape = x.shape
    if axes is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    return reshape(x, [d for k, d in enumerate(shape) if k not in axes])


# ---- copies ----------------------------------------------------------------------------------
def transpose(x, perm):
    """tf.transpose: output dimension k is input dimension perm[k] (normalised)."""
    strides = _strides(x.shape)
    return _copied(x, tuple(x.shape[p] for p in perm), 0, tuple(strides[p] for p in perm))


def strided_slice(x, spec):
    """``x[spec]`` as a new contiguous array (``spec``: see ``_index_map``)."""
    return _copied(x, *_index_map(x.shape, spec))


def strided_slice_grad(g, shape, spec):
    """Zeros of ``shape`` with ``g`` (shaped like ``zeros[spec]``) written at ``spec``."""
    out = _filled(shape, g.dtype, 0)
    sliced, base, strides = _index_map(tuple(shape), spec)
    _copy(g, out, sliced, 0, _strides(sliced), base, strides)
    return out


def reverse(x, axes):
    """tf.reverse: ``x`` with the dimensions ``axes`` (normalised, distinct) reversed; ``x``
    itself when there are none (as NumPy's flip over no axis)."""
    if not axes:
        return x
    strides = _strides(x.shape)
    base = 0
    for a in axes:
        base += (x.shape[a] - 1) * strides[a]
        strides[a] = -strides[a]
    return _copied(x, x.shape, base, strides)


def tile(x, multiples):
    """tf.tile: ``x`` repeated multiples[k] times along dimension k."""
    # Output dimension k is (repeat, element) in C order: the repeats read x with stride 0.
    box, strides = [], []
    for m, d, s in zip(multiples, x.shape, _strides(x.shape)):
        box += [int(m), d]
        strides += [0, s]
    out = empty(tuple(int(m) * d for m, d in zip(multiples, x.shape)), x.dtype)
    _copy(x, out, box, 0, strides, 0, _strides(box))
    return out


def pad(x, paddings, constant_value):
    """tf.pad in "CONSTANT" mode: paddings[k] = (before, after) elements of ``constant_value``
    around dimension k."""
    out = _filled([d + int(a) + int(b) for d, (a, b) in zip(x.shape, paddings)], x.dtype,
                  constant_value)
    out_strides = _strides(out.shape)
    base = sum(int(a) * s for (a, _), s in zip(paddings, out_strides))
    _copy(x, out, x.shape, 0, _strides(x.shape), base, out_strides)
    return out


def concat(arrays, axis):
    """tf.concat of ``arrays`` (one dtype, equal shapes but along ``axis``, normalised)."""
    first = arrays[0].shape
    shape = first[:axis] + (sum(a.shape[axis] for a in arrays),) + first[axis + 1:]
    out = empty(shape, arrays[0].dtype)
    outer, row = prod(first[:axis]), prod(shape[axis:])
    start = 0
    for a in arrays:
        width = prod(a.shape[axis:])
        _copy(a, out, (outer, width), 0, (width, 1), start, (row, 1))
        start += width
    return out


def split(x, sizes, axis):
    """tf.split: the parts of ``x`` along ``axis`` (normalised) of the given ``sizes``."""
    outer, row = prod(x.shape[:axis]), prod(x.shape[axis:])
    inner = prod(x.shape[axis + 1:])
    parts = []
    start = 0
    for size in sizes:
        part = empty(x.shape[:axis] + (int(size),) + x.shape[axis + 1:], x.dtype)
        width = int(size) * inner
        _copy(x, part, (outer, width), start, (row, 1), 0, (width, 1))
        parts.append(part)
        start += width
    return tuple(parts)


# ---- indexing --------------------------------------------------------------------------------
def gather(params, indices, axis, batch_dims=0):
    """tf.gather: slices of ``params`` along ``axis`` at ``indices``; the contract of
    ``ops.array.gather`` (indices checked, axis and batch_dims normalised)."""
    ps, ishape = params.shape, indices.shape
    A = prod(ps[batch_dims:axis])
    N, B = ps[axis], prod(ps[axis + 1:])
    M = prod(ishape[batch_dims:])
    out = empty(ps[:axis] + ishape[batch_dims:] + ps[axis + 1:], params.dtype)
    if out.size:
        _gather_kernel[blocks_for(out.size), THREADS](
            _bits(params), _flat(indices), _bits(out), A, N, M, B)
    return out


def gather_nd(params, indices, batch_dims=0):
    """tf.gather_nd: the slices of ``params`` at the index tuples in the last axis of
    ``indices``; the contract of ``ops.scatter.gather_nd``."""
    ishape = tuple(indices.shape)
    K = ishape[-1]
    dims = params.shape[batch_dims:batch_dims + K]
    tail = params.shape[batch_dims + K:]
    shape = ishape[:-1] + tail
    if K == 0:   # every tuple names the whole of its batch entry: a broadcast copy
        T, M, B = prod(params.shape[:batch_dims]), prod(ishape[batch_dims:-1]), prod(tail)
        out = empty(shape, params.dtype)
        _copy(params, out, (T, M, B), 0, (B, 0, 1), 0, (M * B, B, 1))
        return out
    out = empty(shape, params.dtype)
    if out.size:
        _gather_nd_kernel[blocks_for(out.size), THREADS](
            _bits(params), _flat(indices), _bits(out), tuple(int(d) for d in dims),
            prod(ishape[batch_dims:-1]), prod(tail))
    return out


def one_hot(indices, depth, on_value, off_value, axis, dtype):
    """tf.one_hot: a ``depth``-long axis at ``axis`` (-1: last) holding ``on_value`` at each
    index and ``off_value`` elsewhere (also for indices outside [0, depth))."""
    if axis == -1:
        axis = indices.ndim
    ishape = indices.shape
    dtype = np.dtype(dtype)
    out = empty(ishape[:axis] + (depth,) + ishape[axis:], dtype)
    if out.size:
        _one_hot_kernel[blocks_for(out.size), THREADS](
            _flat(indices), _bits(out), depth, prod(ishape[axis:]), _bits_of(on_value, dtype),
            _bits_of(off_value, dtype))
    return out


# The accumulator of a segment sum where CUDA has no atomic addition of the dtype: float16 sums
# in float32 (as the CPU kernel does), small integers in 32 bits and wrap as they would.
_ATOMIC = {np.dtype(np.float16): np.dtype(np.float32), np.dtype(np.int8): np.dtype(np.int32),
           np.dtype(np.int16): np.dtype(np.int32), np.dtype(np.uint8): np.dtype(np.uint32),
           np.dtype(np.uint16): np.dtype(np.uint32)}


def unsorted_segment_sum(data, segment_ids, num_segments):
    """tf.math.unsorted_segment_sum: out[s] = the sum of the slices data[m] with
    segment_ids[m] == s (ids outside [0, num_segments) dropped); segment_ids' shape is a prefix
    of data's.  Summed with atomic additions: float sums may round in another order than the
    CPU's."""
    tail = data.shape[segment_ids.ndim:]
    shape = (num_segments,) + tail
    work = _ATOMIC.get(data.dtype, data.dtype)
    out = _filled(shape, work, 0)
    if out.size and data.size:
        _segment_sum_kernel[blocks_for(data.size), THREADS](
            _flat(data), _flat(segment_ids), _flat(out), prod(tail))
    if work == data.dtype:
        return out
    result = empty(shape, data.dtype)
    if not out.size:
        return result
    if work.kind == "f":
        _cast_kernel[blocks_for(out.size), THREADS](_flat(out), _flat(result))
    else:
        mask = (1 << (8 * data.dtype.itemsize)) - 1
        _low_bits_kernel[blocks_for(out.size), THREADS](
            _bits(out), _bits(result), _unsigned(work).type(mask))
    return result
