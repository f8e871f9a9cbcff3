"""Shared-memory tiling for the GPU's matrix products: the parts every tiled product kernel
(matmul, and the convolutions as implicit GEMMs) has in common.

A block of ``BLOCK x BLOCK`` threads computes a ``TILE x TILE`` tile of the output C = A @ B.
It walks the inner dimension ``TILE_K`` at a time: its threads stage a ``TILE x TILE_K`` slab of
A and a ``TILE_K x TILE`` slab of B in shared memory (each kernel reads its operands its own
way: transposed, broadcast, or as an image's patches), then each thread multiplies them into a
``PER_THREAD x PER_THREAD`` block of outputs held in registers.  A thread's outputs are strided
by ``BLOCK`` (rows ``ty, ty + BLOCK, ...``), so that a warp reads consecutive shared-memory words
of B and writes consecutive columns of C.  Accumulation is in the output's dtype (float32 in
float32, as cuBLAS does; integers wrap like the CPU kernels).

Staged slabs are stored k-major: ``a_tile[k, row]`` and ``b_tile[k, col]``; ``a_tile`` has a
padding column so that threads staging consecutive k of one row hit different banks.
"""
from numba import cuda

TILE = 64              # output rows and columns of one block's tile
TILE_K = 16            # depth of the slabs staged per step
BLOCK = 16             # threads per block along each axis
PER_THREAD = TILE // BLOCK
THREADS = BLOCK * BLOCK
A_TILE_COLUMNS = TILE + 1
# Each thread stages this many elements of each slab per step.
LOADS = TILE * TILE_K // THREADS
# The largest grid dimension y and z a launch may use (x may be much larger); the kernels
# loop over row tiles and batches with the grid's stride.
MAX_GRID_YZ = 65535


def grid(rows, columns, depth):
    """(blocks, threads) launch shape for tiling a (depth, rows, columns) output."""
    tiles_m = max(1, -(-rows // TILE))
    tiles_n = max(1, -(-columns // TILE))
    return ((tiles_n, min(tiles_m, MAX_GRID_YZ), max(1, min(depth, MAX_GRID_YZ))),
            (BLOCK, BLOCK))


@cuda.jit(device=True, cache=True)
def slab_coordinates(load, k_fastest):
    """(row or column, k) within a slab of the element that this thread stages at its
    ``load``-th load: consecutive threads take consecutive k when ``k_fastest`` (an operand
    contiguous along k), else consecutive rows or columns, so that a warp's reads coalesce.

    A thread's k is the same at every load when ``k_fastest`` (THREADS is a multiple of
    TILE_K), and its row or column is the same at every load otherwise (a multiple of TILE):
    kernels that compute addresses work out that part once."""
    idx = (cuda.threadIdx.y * BLOCK + cuda.threadIdx.x) + load * THREADS
    if k_fastest:
        return idx // TILE_K, idx % TILE_K
    return idx % TILE, idx // TILE


@cuda.jit(device=True, cache=True)
def zero_accumulators(acc):
    for i in range(PER_THREAD):
        for j in range(PER_THREAD):
            acc[i, j] = 0


@cuda.jit(device=True, cache=True)
def multiply_slabs(a_tile, b_tile, acc, a_regs, b_regs):
    """acc += this thread's part of a_tile^T @ b_tile, once every thread has staged its
    elements; returns when every thread is done reading the slabs (they may be restaged)."""
    cuda.syncthreads()
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    for kk in range(TILE_K):
        for i in range(PER_THREAD):
            a_regs[i] = a_tile[kk, ty + i * BLOCK]
        for j in range(PER_THREAD):
            b_regs[j] = b_tile[kk, tx + j * BLOCK]
        for i in range(PER_THREAD):
            for j in range(PER_THREAD):
                acc[i, j] += a_regs[i] * b_regs[j]
    cuda.syncthreads()


@cuda.jit(device=True, cache=True)
def store_tile(out, acc, row0, col0):
    """out[row0:, col0:] (a 2-D array) = this thread's accumulators, inside out's bounds."""
    m, n = out.shape
    for i in range(PER_THREAD):
        r = row0 + cuda.threadIdx.y + i * BLOCK
        if r < m:
            for j in range(PER_THREAD):
                c = col0 + cuda.threadIdx.x + j * BLOCK
                if c < n:
                    out[r, c] = acc[i, j]
