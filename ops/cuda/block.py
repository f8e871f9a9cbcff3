"""Device functions for kernels launched as a single block.

A kernel whose steps each read what the previous step wrote everywhere (a loop running on the
GPU without going back to the host) runs as one block: ``cuda.syncthreads()`` is then a
barrier between its steps.  Each step spreads over the block's threads; every thread of the
block calls it, and its writes are visible to the block after the next ``cuda.syncthreads()``.
The block's reductions are ``ops.cuda.reduce.block_reduce_float`` and ``block_reduce_int``.
"""
from numba import cuda

from ops.cuda.launch import jit


@jit(device=True, cache=True)
def block_copy(src, dst):
    """Copies flat ``src`` into flat ``dst`` (of the same size), converting to dst's dtype."""
    for i in range(cuda.threadIdx.x, dst.size, cuda.blockDim.x):
        dst[i] = src[i]
