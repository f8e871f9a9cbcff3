"""Flat row helpers: the inner loops of the convolution kernels.

Hot loops address channel rows as (flat array, offset) rather than as views: a view costs an
atomic reference-count increment and decrement, which dominates when rows are short.  Each helper
works on a run of ``n`` consecutive elements and first rejects a negative offset; that lets LLVM
prove the indices non-negative, drop Numba's wraparound code and vectorise (without it the loads
become gathers).
"""
from ops.kernel_cache import njit

_jit = njit(error_model="numpy", nogil=True)


@_jit
def copy_run(dst, do, src, so, n):
    """dst[do:do + n] = src[so:so + n]."""
    if do < 0 or so < 0:
        return
    for c in range(n):
        dst[do + c] = src[so + c]


@_jit
def zero_run(dst, do, n):
    """dst[do:do + n] = 0."""
    if do < 0:
        return
    for c in range(n):
        dst[do + c] = 0


@_jit
def add_run(dst, do, src, so, n):
    """dst[do:do + n] += src[so:so + n]."""
    if do < 0 or so < 0:
        return
    for c in range(n):
        dst[do + c] += src[so + c]


@_jit
def combine2(dst, do, src, o0, o1, c0, c1, n):
    """dst[do + c] = c0 src[o0 + c] + c1 src[o1 + c] for c < n."""
    if do < 0 or o0 < 0 or o1 < 0:
        return
    for c in range(n):
        dst[do + c] = c0 * src[o0 + c] + c1 * src[o1 + c]


@_jit
def combine3(dst, do, src, o0, o1, o2, c1, c2, n):
    """dst[do + c] = src[o0 + c] + c1 src[o1 + c] + c2 src[o2 + c] for c < n."""
    if do < 0 or o0 < 0 or o1 < 0 or o2 < 0:
        return
    for c in range(n):
        dst[do + c] = src[o0 + c] + c1 * src[o1 + c] + c2 * src[o2 + c]


@_jit
def combine4(dst, do, src, o0, o1, o2, o3, c0, c1, c2, c3, n):
    """dst[do + c] = sum_k ck src[ok + c] for k < 4, c < n."""
    if do < 0 or o0 < 0 or o1 < 0 or o2 < 0 or o3 < 0:
        return
    for c in range(n):
        dst[do + c] = c0 * src[o0 + c] + c1 * src[o1 + c] + c2 * src[o2 + c] + c3 * src[o3 + c]
