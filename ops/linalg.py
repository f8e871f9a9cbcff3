"""Matrix products.

Floats go to BLAS (SciPy's, the one Numba's ``np.dot`` uses) through ``gemm``, a row-major
``C = alpha * op(A) @ op(B) + beta * C`` callable from other ``@njit`` kernels: unlike ``np.dot`` it
takes leading dimensions (so strided row blocks and transposed operands need no copy) and a beta
(so products accumulate in place).  ``product_gemm``, the same call, runs the products where
that pays on ``ops.tile_gemm``'s register tiles instead: the matmul op, the convolutions and
the recurrences use it.  Integer products use a plain loop kernel.
"""
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.linalg import ensure_blas

from ops import native_parts, threads, tile_gemm
from ops.kernel_cache import njit

ensure_blas()  # a clear ImportError now, rather than a failure inside the first kernel

_jit = njit(error_model="numpy", nogil=True)

# Numba's own helper (in its _helperlib) that forwards to scipy.linalg.cython_blas ?gemm; being an
# external symbol rather than a ctypes pointer, kernels that call it can be cached.
_xxgemm = types.ExternalFunction(
    "numba_xxgemm",
    types.intc(types.char, types.char, types.char,  # kind, transa, transb
               types.intp, types.intp, types.intp,  # m, n, k
               types.voidptr, types.voidptr, types.intp,  # alpha, a, lda
               types.voidptr, types.intp, types.voidptr,  # b, ldb, beta
               types.voidptr, types.intp))  # c, ldc

_T = ord("t")
_N = ord("n")


def blas_kind(arr):
    """BLAS/LAPACK type letter of a float array (compile-time constant), for ``@njit`` code."""


@overload(blas_kind)
def _blas_kind_impl(arr):
    if arr.dtype == types.float32:
        return lambda arr: ord("s")
    if arr.dtype == types.float64:
        return lambda arr: ord("d")
    raise TypeError("gemm needs float32 or float64 arrays, got %s" % arr.dtype)


# ``product_gemm`` runs a product on register tiles (``ops.tile_gemm``), on the calling thread,
# where they beat BLAS, which packs both operands at every call: at these sizes that costs as
# much as the arithmetic, while the tiles run near the FMA units' peak.  Measured, float32 on one
# core, against OpenBLAS choosing its own (AVX-512) kernels, and against its AVX2 ones:
# - B untransposed, at least one whole tile and _TERMS_FROM terms in each sum (shorter sums:
#   storing the tile costs more than its terms): 16x128 by 128x512 at 0.42x its time, 800x32
#   by 32x64 0.84x, 50x3136 by 3136x512 0.74x, 512x512 by 512x512 0.98x, 1024x1024 by
#   1024x1024 1.16x (past TILED_UNTIL); against AVX2 kernels 0.4-0.68x throughout.
# - B transposed (A not), tiles of sums along the rows of both: 16x128 by (128x512)^T 0.49x,
#   64x256 by (256x784)^T 0.9x, 50x3136 by (3136x1024)^T 0.79x; against AVX2 kernels 0.19-0.64x.
#   Below _DOT_ROWS_FROM rows BLAS's small-matrix kernels pay (8x128 by (128x512)^T: 1.11x),
#   past _DOT_ROWS_UNTIL its blocking (256x256 by 256x256: 1.46x), and so it does for sums
#   shorter than _DOT_TERMS_FROM (64x64 by 64x64: 1.57x).
TILED_UNTIL = 1 << 28
_TERMS_FROM = 32
_DOT_ROWS_FROM, _DOT_ROWS_UNTIL = 8, 64
_DOT_TERMS_FROM = 128


@_jit
def tiled(transpose_a, transpose_b, m, n, k, itemsize):
    """Whether ``product_gemm`` runs this product on ``ops.tile_gemm``'s tiles (see above)."""
    if m * n * k > TILED_UNTIL:
        return False
    if transpose_b:
        return not transpose_a and _DOT_ROWS_FROM <= m <= _DOT_ROWS_UNTIL and \
            n >= tile_gemm.DOT_COLS and k >= _DOT_TERMS_FROM
    return n >= tile_gemm.width(itemsize) and m >= tile_gemm.ROWS and k >= _TERMS_FROM


@_jit
def gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """Row-major C[m, n] = alpha * op(A) @ op(B) + beta * C through BLAS.

    a, b, c: 1-D C-contiguous float32/float64 arrays (the same dtype) whose first element is the
    matrix's first element (pass ``flat[offset:]`` for a sub-block).  op(A) is (m, k): A is stored
    as rows of length >= k (>= m if transpose_a) spaced lda apart; likewise B with ldb and C
    (rows of n, spaced ldc).  The caller guarantees the extents lie inside the arrays.
    """
    if m <= 0 or n <= 0:
        return
    if k <= 0:
        # no terms: C = beta * C (BLAS would reject the zero leading dimension)
        for i in range(m):
            row = c[i * ldc:i * ldc + n]
            if beta == 0:
                row[:] = 0
            else:
                row *= beta
        return
    al = np.empty(1, c.dtype)
    al[0] = alpha
    be = np.empty(1, c.dtype)
    be[0] = beta
    ta = _T if transpose_a else _N
    tb = _T if transpose_b else _N
    # BLAS is column-major: a row-major C is C^T there, and C^T = op(B)^T op(A)^T, so the
    # operands swap and the flags stay.
    _xxgemm(blas_kind(c), tb, ta, n, m, k, al.ctypes, b.ctypes, ldb, a.ctypes, lda,
            be.ctypes, c.ctypes, ldc)
    # keep the scalar slots alive past the call
    al[0] = be[0]


@_jit
def product_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """``gemm``, on ``ops.tile_gemm``'s register tiles where they pay (``tiled``)."""
    if tiled(transpose_a, transpose_b, m, n, k, c.itemsize):
        tile_gemm.call(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    else:
        gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)


@_jit
def transpose_into(src, dst):
    """dst[j, i] = src[i, j] for 2-D arrays (dst: src's transposed shape), copied in 16 x 16
    tiles: NumPy's copy of a 128 x 512 float32 transpose takes 150 us here, this one 46 us."""
    rows, cols = src.shape
    for i0 in range(0, rows, 16):
        i1 = min(i0 + 16, rows)
        for j0 in range(0, cols, 16):
            for j in range(j0, min(j0 + 16, cols)):
                for i in range(i0, i1):
                    dst[j, i] = src[i, j]


@_jit
def matmul_blas_kernel(a, b, ia, ib, transpose_a, transpose_b, out, i_lo, i_hi, r_lo, r_hi,
                       c_lo, c_hi):
    """out[i, r_lo:r_hi, c_lo:c_hi] = (op(a[ia[i]]) @ op(b[ib[i]]))[r_lo:r_hi, c_lo:c_hi] for i in
    i_lo..i_hi, for float 3-D C-contiguous a, b, out.

    a: (Ba, M, K) or (Ba, K, M) if transpose_a; b: (Bb, K, N) or (Bb, N, K); out: (Bo, M, N);
    ia, ib: (Bo,) int64 batch indices within range; the ranges lie within (Bo, M, N).
    """
    bo, m, n = out.shape
    k = a.shape[1] if transpose_a else a.shape[2]
    af = a.reshape(a.size)
    bf = b.reshape(b.size)
    of = out.reshape(out.size)
    sa = a.shape[1] * a.shape[2]
    sb = b.shape[1] * b.shape[2]
    # rows r_lo.. of op(a) and columns c_lo.. of op(b) start this far into their matrices
    oa = r_lo if transpose_a else r_lo * k
    ob = c_lo * k if transpose_b else c_lo
    for i in range(i_lo, i_hi):
        product_gemm(transpose_a, transpose_b, r_hi - r_lo, c_hi - c_lo, k, 1.0,
                     af[ia[i] * sa + oa:], a.shape[2], bf[ib[i] * sb + ob:], b.shape[2], 0.0,
                     of[i * m * n + r_lo * n + c_lo:], n)


@_jit
def describe_part(part, entry, a, b, transpose_a, transpose_b, out, lo, hi, by_rows, unit):
    """Writes into ``part`` (``ops.native_parts``) ``entry``'s product of lines lo*unit..
    hi*unit of out[0] = op(a[0]) @ op(b[0]) (its rows if ``by_rows``, else its columns; the last
    line is out's), for float 3-D C-contiguous a, b, out of one dtype (see
    ``matmul_blas_kernel``), not both transposed (``entry``: ``ops.tile_gemm``'s)."""
    _, m, n = out.shape
    k = a.shape[1] if transpose_a else a.shape[2]
    r_lo, r_hi, c_lo, c_hi = 0, m, 0, n
    if by_rows:
        r_lo, r_hi = lo * unit, min(hi * unit, m)
    else:
        c_lo, c_hi = lo * unit, min(hi * unit, n)
    oa = r_lo if transpose_a else r_lo * k
    ob = c_lo * k if transpose_b else c_lo
    native_parts.describe(part, entry, transpose_a, transpose_b, r_hi - r_lo, c_hi - c_lo, k,
                          a.reshape(a.size)[oa:], a.shape[2], b.reshape(b.size)[ob:],
                          b.shape[2], out.reshape(out.size)[r_lo * n + c_lo:], n)


@_jit
def matmul_rows_kernel(a, b, transpose_a, transpose_b, r_lo, r_hi, out):
    """out[:r_hi - r_lo] = rows r_lo..r_hi of op(a) @ op(b), for float 2-D C-contiguous a, b, out
    of one dtype (out: at least r_hi - r_lo rows of N columns)."""
    k = a.shape[0] if transpose_a else a.shape[1]
    oa = r_lo if transpose_a else r_lo * k
    product_gemm(transpose_a, transpose_b, r_hi - r_lo, out.shape[1], k, 1.0,
                 a.reshape(a.size)[oa:], a.shape[1], b.reshape(b.size), b.shape[1], 0.0,
                 out.reshape(out.size), out.shape[1])


@_jit
def matmul_loop_kernel(a, b, ia, ib, out):
    """out[i] = a[ia[i]] @ b[ib[i]] with a plain loop (integer dtypes; wraps like TF).

    a: (Ba, M, K), b: (Bb, K, N), out: (Bo, M, N), all C-contiguous, one dtype.
    """
    bo, m, n = out.shape
    k = a.shape[2]
    for i in range(bo):
        x = a[ia[i]]
        y = b[ib[i]]
        z = out[i]
        z[:] = 0
        for r in range(m):
            zr = z[r]
            for t in range(k):
                s = x[r, t]
                yt = y[t]
                for j in range(n):  # contiguous, vectorises
                    zr[j] += s * yt[j]


_ZERO_INDEX = np.zeros(1, np.int64)


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _batch_indices(a_batch, b_batch):
    shape = np.broadcast_shapes(a_batch, b_batch)
    if a_batch == shape and b_batch == shape:
        idx = np.arange(_prod(shape), dtype=np.int64)
        return shape, idx, idx
    ia = np.broadcast_to(np.arange(_prod(a_batch), dtype=np.int64).reshape(a_batch), shape)
    ib = np.broadcast_to(np.arange(_prod(b_batch), dtype=np.int64).reshape(b_batch), shape)
    return shape, ia.ravel(), ib.ravel()


def matmul(a, b, transpose_a=False, transpose_b=False):
    """tf.linalg.matmul: op(a) @ op(b) over the last two axes, batch axes broadcast.

    a, b: ndarrays of rank >= 2 and one dtype (float32/float64 through BLAS; int32/int64 by a
    loop).  op transposes the last two axes when its flag is set.  The caller has checked that
    the inner dimensions agree and the batch shapes broadcast.  Returns
    broadcast(batch) + (M, N) of the inputs' dtype.
    """
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    M = a.shape[-1] if transpose_a else a.shape[-2]
    N = b.shape[-2] if transpose_b else b.shape[-1]
    K = a.shape[-2] if transpose_a else a.shape[-1]
    if K != (b.shape[-1] if transpose_b else b.shape[-2]) or a.dtype != b.dtype:
        # the framework reports this properly; here it only guards BLAS against bad reads
        raise ValueError("matmul: incompatible operands %s%s x %s%s" % (
            a.shape, a.dtype, b.shape, b.dtype))
    a_batch, b_batch = a.shape[:-2], b.shape[:-2]
    if a_batch and not transpose_a and _prod(b_batch) == 1 and len(b_batch) <= len(a_batch):
        # one matrix b for every matrix of a (a sequence through a Dense kernel): a's rows
        # are one matrix, and one product is faster than a product per batch element
        out = matmul(a.reshape(_prod(a.shape[:-1]), K), b.reshape(b.shape[-2:]), False,
                     transpose_b)
        return out.reshape(np.broadcast_shapes(a_batch, b_batch) + (M, N))
    if not a_batch and not b_batch:
        batch, ia, ib = (), _ZERO_INDEX, _ZERO_INDEX
    else:
        batch, ia, ib = _batch_indices(a_batch, b_batch)
    out = np.empty(batch + (M, N), a.dtype)
    if out.size == 0:
        return out
    a3 = a.reshape((_prod(a_batch),) + a.shape[-2:])
    b3 = b.reshape((_prod(b_batch),) + b.shape[-2:])
    out3 = out.reshape((_prod(batch), M, N))
    if a.dtype.kind == "f":
        _matmul_split(a3, b3, ia, ib, transpose_a, transpose_b, out3, K)
    else:
        if transpose_a:
            a3 = np.ascontiguousarray(a3.transpose(0, 2, 1))
        if transpose_b:
            b3 = np.ascontiguousarray(b3.transpose(0, 2, 1))
        matmul_loop_kernel(a3, b3, ia, ib, out3)
    return out


# How a product uses the cores (measured): below _THREADED_FROM multiply-adds one thread
# (waking threads costs more than they save, and under load they stall).  Many products
# (attention's batched ones: 128 of 64x32 by 32x64) are split by batch over the kernel threads
# in parts of at least _PART_MULTIPLY_ADDS, with BLAS on one thread inside each part (BLAS's
# threads on products that small only wait for each other).  One product: up to _SPLIT_FROM
# with a transposed B that BLAS runs (``tiled``), BLAS whole on the free cores
# (``threads.threaded_blas``: better than a split of ours at these sizes, where each part would
# pack B again); otherwise split over the kernel threads by rows or columns (register tiles
# need no packing).
_THREADED_FROM = 1 << 23
_SPLIT_FROM = 1 << 25
_PART_MULTIPLY_ADDS = 1 << 22
# One product that the register tiles run (``tiled``) is split over the kernel threads in parts
# of at least _TILED_PART_MULTIPLY_ADDS that they run without the GIL
# (``threads.split_product``): 64x256 by 256x256 float32 takes 36 us in two parts, 59 us whole
# (measured); a split of Python parts costs about 19 us by itself.
_TILED_PART_MULTIPLY_ADDS = 1 << 20


def _matmul_split(a3, b3, ia, ib, transpose_a, transpose_b, out3, K):
    """matmul_blas_kernel over all of out3: whole, or split over the kernel threads by batch when
    there are enough products, otherwise by the longer of the rows and the columns."""
    B, M, N = out3.shape
    per_product = M * N * max(K, 1)
    total = B * per_product
    if B > 1 and total >= 2 * _PART_MULTIPLY_ADDS:
        def batch_part(lo, hi):
            matmul_blas_kernel(a3, b3, ia, ib, transpose_a, transpose_b, out3, lo, hi, 0, M,
                               0, N)
        threads.split(batch_part, B, -(-_PART_MULTIPLY_ADDS // per_product))
        return
    if B == 1 and total >= 2 * _TILED_PART_MULTIPLY_ADDS and \
            tiled(transpose_a, transpose_b, M, N, K, out3.itemsize):
        tiled_product(a3, b3, transpose_a, transpose_b, out3, K)
        return
    if total < _THREADED_FROM:
        threads.blas_libraries()   # BLAS on one thread from the first product on
        matmul_blas_kernel(a3, b3, ia, ib, transpose_a, transpose_b, out3, 0, B, 0, M, 0, N)
        return
    if total < _SPLIT_FROM and transpose_b and \
            not tiled(transpose_a, transpose_b, M, N, K, out3.itemsize):
        with threads.threaded_blas():
            matmul_blas_kernel(a3, b3, ia, ib, transpose_a, transpose_b, out3, 0, B, 0, M, 0, N)
        return
    with threads.single_threaded_blas():
        per_line = (N if M >= N else M) * max(K, 1)   # one row (or column) of the product

        def part(lo, hi):
            if M >= N:
                matmul_blas_kernel(a3, b3, ia, ib, transpose_a, transpose_b, out3, 0, B, lo, hi,
                                   0, N)
            else:
                matmul_blas_kernel(a3, b3, ia, ib, transpose_a, transpose_b, out3, 0, B, 0, M,
                                   lo, hi)

        threads.split(part, max(M, N), -(-_PART_MULTIPLY_ADDS // (B * per_line)))


def tiled_product(a3, b3, transpose_a, transpose_b, out3, K):
    """The one product out3[0] = op(a3[0]) @ op(b3[0]) on the register tiles, split over the
    kernel threads by the longer of its rows and columns, in whole tiles."""
    _, M, N = out3.shape
    by_rows = M >= N
    unit = tile_gemm.ROWS if by_rows else tile_gemm.width(out3.itemsize)
    per_unit = unit * (N if by_rows else M) * max(K, 1)
    entry = tile_gemm.address(out3.dtype)

    def describe(part, lo, hi):
        describe_part(part, entry, a3, b3, transpose_a, transpose_b, out3, lo, hi, by_rows, unit)

    threads.split_product(describe, -(-(M if by_rows else N) // unit),
                          -(-_TILED_PART_MULTIPLY_ADDS // per_unit))
