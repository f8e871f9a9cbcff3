"""Matrix products on the GPU: tf.linalg.matmul over device arrays.

Float32 and float64 products go to cuBLAS when CuPy (the optional ``cuda`` extra) is installed:
CuPy wraps the device arrays without a copy (``__cuda_array_interface__``) and its result comes
back the same way.  Otherwise, and for integer products, a tiled shared-memory kernel
(``ops.cuda.tiles``) computes them.  Which one runs is logged once, on the "hybridtf.cuda"
logger, at the first product.
"""
import logging

import numpy as np
from numba import cuda

from ops.cuda import launch
from ops.cuda.tiles import (A_TILE_COLUMNS, LOADS, PER_THREAD, TILE, TILE_K, grid,
                            multiply_slabs, slab_coordinates, store_tile, zero_accumulators)

try:
    import cupy
except ImportError:   # without the 'cuda' extra the tiled kernel computes every product
    cupy = None

LOGGER = logging.getLogger("hybridtf.cuda")
# Under Numba's CUDA simulator there is no GPU for cuBLAS to run on.


@launch.jit(device=True, cache=True)
def batch_offset(i, shape, strides):
    """The index along an operand's flat batch axis of output batch element ``i``, for the
    broadcast batch ``shape`` and the operand's ``strides`` in it (0 where it broadcasts)."""
    index = 0
    for d in range(len(shape) - 1, -1, -1):
        index += (i % shape[d]) * strides[d]
        i //= shape[d]
    return index


@launch.jit(cache=True)
def matmul_kernel(a, b, out, transpose_a, transpose_b, batch_shape, a_strides, b_strides):
    """out[i] = op(a[ia]) @ op(b[ib]) for every batch element i of out (Bo, M, N), where a is
    (Ba, M, K) ((Ba, K, M) if transpose_a), b (Bb, K, N) ((Bb, N, K) if transpose_b), and ia,
    ib are ``batch_offset`` of i.  Launch shape: ``tiles.grid(M, N, Bo)``."""
    a_tile = cuda.shared.array((TILE_K, A_TILE_COLUMNS), a.dtype)
    b_tile = cuda.shared.array((TILE_K, TILE), b.dtype)
    acc = cuda.local.array((PER_THREAD, PER_THREAD), out.dtype)
    a_regs = cuda.local.array(PER_THREAD, out.dtype)
    b_regs = cuda.local.array(PER_THREAD, out.dtype)
    n_batch, m, n = out.shape
    depth = a.shape[1] if transpose_a else a.shape[2]
    col0 = cuda.blockIdx.x * TILE
    tiles_m = (m + TILE - 1) // TILE
    for i in range(cuda.blockIdx.z, n_batch, cuda.gridDim.z):
        x = a[batch_offset(i, batch_shape, a_strides)]
        y = b[batch_offset(i, batch_shape, b_strides)]
        for tile_row in range(cuda.blockIdx.y, tiles_m, cuda.gridDim.y):
            row0 = tile_row * TILE
            zero_accumulators(acc)
            for k0 in range(0, depth, TILE_K):
                for load in range(LOADS):
                    r, kk = slab_coordinates(load, not transpose_a)
                    if row0 + r < m and k0 + kk < depth:
                        a_tile[kk, r] = (x[k0 + kk, row0 + r] if transpose_a
                                         else x[row0 + r, k0 + kk])
                    else:
                        a_tile[kk, r] = 0
                    c, kk = slab_coordinates(load, transpose_b)
                    if col0 + c < n and k0 + kk < depth:
                        b_tile[kk, c] = (y[col0 + c, k0 + kk] if transpose_b
                                         else y[k0 + kk, col0 + c])
                    else:
                        b_tile[kk, c] = 0
                multiply_slabs(a_tile, b_tile, acc, a_regs, b_regs)
            store_tile(out[i], acc, row0, col0)


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _row_major_strides(shape):
    strides = [0] * len(shape)
    step = 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step if shape[d] != 1 else 0
        step *= shape[d]
    return strides


def batch_layout(a_batch, b_batch):
    """(batch shape, a's strides, b's strides): the broadcast batch of two operands with batch
    shapes ``a_batch`` and ``b_batch``, as tuples for ``batch_offset`` -- dimensions of size 1
    dropped and neighbours that step alike in both operands merged, at least one dimension."""
    shape = np.broadcast_shapes(a_batch, b_batch)
    rank = len(shape)
    a_strides = _row_major_strides((1,) * (rank - len(a_batch)) + tuple(a_batch))
    b_strides = _row_major_strides((1,) * (rank - len(b_batch)) + tuple(b_batch))
    dims = []
    for size, sa, sb in zip(shape, a_strides, b_strides):
        if size == 1:
            continue
        if dims and dims[-1][1] == sa * size and dims[-1][2] == sb * size:
            # the previous dimension steps over exactly this one in both operands: merge
            dims[-1] = (dims[-1][0] * size, sa, sb)
        else:
            dims.append((size, sa, sb))
    if not dims:
        dims = [(1, 0, 0)]
    return tuple(zip(*dims))


def tiled_matmul(a, b, transpose_a=False, transpose_b=False):
    """op(a) @ op(b) over the last two axes with broadcast batch axes, by the tiled kernel.

    a, b: C-contiguous device arrays of rank >= 2 and one dtype (int32, int64, float32,
    float64) whose inner dimensions agree (the caller checks).  Returns a new device array
    broadcast(batch) + (M, N).
    """
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)
    M = a_shape[-1] if transpose_a else a_shape[-2]
    K = a_shape[-2] if transpose_a else a_shape[-1]
    N = b_shape[-2] if transpose_b else b_shape[-1]
    a_batch, b_batch = a_shape[:-2], b_shape[:-2]
    batch = np.broadcast_shapes(a_batch, b_batch)
    out = launch.empty(batch + (M, N), a.dtype)
    if out.size == 0:
        return out
    if a_batch and not transpose_a and _prod(b_batch) == 1:
        # one matrix b for every matrix of a (a sequence through a Dense kernel): a's rows are
        # one matrix, and one tall product fills the GPU better than a product per matrix
        a = a.reshape(1, _prod(a_shape[:-1]), K)
        batch_shape, a_strides, b_strides = (1,), (0,), (0,)
        out3 = out.reshape(1, a.shape[1], N)
    else:
        a = a.reshape((_prod(a_batch),) + a_shape[-2:])
        batch_shape, a_strides, b_strides = batch_layout(a_batch, b_batch)
        out3 = out.reshape((_prod(batch), M, N))
    b = b.reshape((_prod(b_batch),) + b_shape[-2:])
    blocks, threads = grid(out3.shape[1], N, out3.shape[0])
    matmul_kernel[blocks, threads](a, b, out3, bool(transpose_a), bool(transpose_b),
                                   batch_shape, a_strides, b_strides)
    return out


def cublas_matmul(cupy_module, a, b, transpose_a=False, transpose_b=False):
    """tiled_matmul's product by cuBLAS, through ``cupy_module`` (CuPy): the operands wrapped
    without a copy, the result (a new C-contiguous CuPy array) handed back as a device array
    that keeps it alive."""
    x = cupy_module.asarray(a)
    y = cupy_module.asarray(b)
    if transpose_a:
        x = x.swapaxes(-1, -2)
    if transpose_b:
        y = y.swapaxes(-1, -2)
    return cuda.as_cuda_array(cupy_module.matmul(x, y))


class GemmLibrary:
    """Where matmul's products run: float32/float64 on cuBLAS through ``cupy_module`` (CuPy's
    module, or None: every product on the tiled kernel), integers on the tiled kernel.  The
    choice is logged once, at the first product."""

    def __init__(self, cupy_module):
        self.cupy = cupy_module
        self._announced = False

    def description(self):
        if self.cupy is None:
            return ("matmul runs on hybridtf's tiled CUDA kernel (install CuPy, the 'cuda' "
                    "extra, for cuBLAS)")
        return (f"matmul runs float32/float64 products on cuBLAS through CuPy "
                f"{getattr(self.cupy, '__version__', '(version unknown)')}, integer products "
                "on hybridtf's tiled CUDA kernel")

    def matmul(self, a, b, transpose_a=False, transpose_b=False):
        """tf.linalg.matmul of device arrays a and b (see ``tiled_matmul``)."""
        if not self._announced:
            self._announced = True
            LOGGER.info(self.description())
        if self.cupy is not None and a.dtype in (np.float32, np.float64):
            return cublas_matmul(self.cupy, a, b, transpose_a, transpose_b)
        return tiled_matmul(a, b, transpose_a, transpose_b)


GEMMS = GemmLibrary(None if launch.SIMULATED else cupy)


def matmul(a, b, transpose_a=False, transpose_b=False):
    """tf.linalg.matmul on the GPU: op(a) @ op(b) of C-contiguous device arrays (rank >= 2, one
    dtype, inner dimensions agreeing, batch dimensions broadcasting; the caller checks).
    Returns a new device array of the broadcast batch + (M, N)."""
    return GEMMS.matmul(a, b, transpose_a, transpose_b)
