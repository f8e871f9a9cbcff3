"""Matrix products in registers: C = alpha * op(A) @ op(B) + beta * C, row-major, for the sizes
where BLAS's packing costs as much as the arithmetic (``ops.linalg.product_gemm`` chooses).

BLAS copies both operands into packed panels on every call.  For the thin products a
recurrence makes at every time step (a part of the batch, 8-64 rows, by the same recurrent
kernel, 50 calls in a row) that costs as much as the arithmetic: OpenBLAS takes 20 us for 16x128
by 128x512 float32 on one core here (its own AVX-512 kernels), where the FMA units need about
8.  These kernels read B in place (a row of a column panel is one or two vector loads) and keep
a tile of C -- 8 rows by 32 float32 or 16 float64 columns with AVX-512 -- in registers over a
block of the inner dimension: the same product takes 8.5 us.  A product by a transposed B
(the gradient of a product with respect to its left operand) sums along rows of both operands
instead (``_dot_tile``), again reading both in place.

The tile is written in LLVM vector IR (``_tile``), not left to Numba: Numba does not vectorize
across independent scalar accumulators, and 128 of them cost seconds of typing.  Vectors are 16
float32 or 8 float64 wide on every machine; LLVM splits them into the registers it has.
Kernels reach ``gemm`` through ``call``, its one compiled copy (see the end of this module).
"""
import threading

import numpy as np
from llvmlite import ir
from llvmlite import binding as llvm_binding
from numba import carray, types
from numba.core import cgutils, config
from numba.extending import intrinsic, overload

from ops import kernel_cache
from ops.kernel_cache import njit

# A tile is ROWS rows by _VECTORS vectors of C, all in registers: with AVX-512's 32 registers
# 8 x 2 (16 accumulators); with 16 registers 6 x 1 (a 16-float vector is two AVX2 registers).
_WIDE = "+avx512f" in (config.CPU_FEATURES or llvm_binding.get_host_cpu_features().flatten())
ROWS, _VECTORS = (8, 2) if _WIDE else (6, 1)
_LANES = {types.float32: 16, types.float64: 8}       # elements of one vector


def _splat(builder, value, vector_type):
    """A vector with every lane ``value``."""
    one = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value,
                                 ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), vector_type.count),
                                              [0] * vector_type.count))


def _load(builder, data, at, vector):
    """The vector of ``data[at:at + lanes]`` (no alignment assumed)."""
    return builder.load(builder.bitcast(builder.gep(data, [at]), vector.as_pointer()), align=1)


def _row_starts(builder, at, stride, count, limit):
    """The offsets of ``count`` rows ``stride`` apart from ``at``; rows from ``limit`` on
    repeat the last row below it."""
    last = builder.sub(limit, ir.Constant(limit.type, 1))
    starts = []
    for i in range(count):
        row = ir.Constant(limit.type, i)
        row = builder.select(builder.icmp_signed("<", row, limit), row, last)
        starts.append(builder.add(at, builder.mul(row, stride)))
    return starts


@intrinsic
def _tile(typingctx, a, a_at, a_row, a_col, b, b_at, ldb, c, c_at, ldc, rows, k, alpha, beta):
    """C[0:rows, 0:L] = alpha * A[0:rows, 0:k] @ B[0:k, 0:L] + beta * C (beta == 0: C is not
    used), rows <= ROWS, L the tile width; each matrix given as a 1-D array, the offset of its
    first element and its strides: A's element (i, p) is a[a_at + i * a_row + p * a_col], B's
    and C's rows are ldb and ldc apart.  Rows past ``rows`` are computed on a copy of the last
    row and not stored.  The caller guarantees every index lies inside the arrays."""
    dtype = getattr(a, "dtype", None)
    if dtype not in _LANES or getattr(b, "dtype", None) != dtype or \
            getattr(c, "dtype", None) != dtype:
        return None
    intp = types.intp
    sig = types.void(a, intp, intp, intp, b, intp, intp, c, intp, intp, intp, intp, dtype,
                     dtype)

    def codegen(context, builder, signature, args):
        (a_arr, a_at, a_row, a_col, b_arr, b_at, ldb, c_arr, c_at, ldc, rows, k, alpha,
         beta) = args
        element = context.get_value_type(dtype)
        vector = ir.VectorType(element, _LANES[dtype])
        a_data = context.make_array(signature.args[0])(context, builder, a_arr).data
        b_data = context.make_array(signature.args[4])(context, builder, b_arr).data
        c_data = context.make_array(signature.args[7])(context, builder, c_arr).data
        intp = context.get_value_type(types.intp)
        width = vector.count
        fmuladd = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector, [vector] * 3),
            f"llvm.fmuladd.v{vector.count}f{element.intrinsic_name[1:]}")
        zero = ir.Constant(vector, [ir.Constant(element, 0.0)] * vector.count)
        a_rows = _row_starts(builder, a_at, a_row, ROWS, rows)
        sums = [[cgutils.alloca_once_value(builder, zero) for _ in range(_VECTORS)]
                for _ in range(ROWS)]
        with cgutils.for_range(builder, k) as loop:
            p = loop.index
            a_p = builder.mul(p, a_col)
            b_at_p = builder.add(b_at, builder.mul(p, ldb))
            b_row = [_load(builder, b_data, builder.add(b_at_p, ir.Constant(intp, v * width)),
                           vector) for v in range(_VECTORS)]
            for i in range(ROWS):
                a_value = _splat(builder, builder.load(builder.gep(
                    a_data, [builder.add(a_rows[i], a_p)])), vector)
                for v in range(_VECTORS):
                    builder.store(builder.call(fmuladd, [a_value, b_row[v],
                                                         builder.load(sums[i][v])]),
                                  sums[i][v])
        alphas = _splat(builder, alpha, vector)
        betas = _splat(builder, beta, vector)
        read_c = builder.fcmp_unordered("!=", beta, ir.Constant(element, 0.0))
        for i in range(ROWS):
            with builder.if_then(builder.icmp_signed("<", ir.Constant(intp, i), rows)):
                at = builder.add(c_at, builder.mul(ir.Constant(intp, i), ldc))
                for v in range(_VECTORS):
                    c_ptr = builder.bitcast(builder.gep(
                        c_data, [builder.add(at, ir.Constant(intp, v * width))]),
                        vector.as_pointer())
                    value = builder.fmul(alphas, builder.load(sums[i][v]))
                    # C is read only where beta is not 0 (a large C read for nothing costs
                    # as much memory traffic as writing it)
                    with builder.if_else(read_c) as (add_c, replace_c):
                        with add_c:
                            old = builder.load(c_ptr, align=1)
                            builder.store(builder.call(fmuladd, [betas, old, value]), c_ptr,
                                          align=1)
                        with replace_c:
                            builder.store(value, c_ptr, align=1)
        return context.get_dummy_value()

    return sig, codegen


# A tile of C = A @ B^T (B transposed: its rows, like A's, run along the inner dimension) is
# DOT_ROWS x DOT_COLS sums of vector products along the inner dimension, each added up across
# its lanes at the end: A's and B's rows are read in place, nothing is packed.
DOT_ROWS, DOT_COLS = (4, 4) if _WIDE else (2, 2)


def _lane_sum(builder, value):
    """The sum of a vector's lanes, halving it (lanes i and i + half added) down to one."""
    lanes = value.type.count
    while lanes > 1:
        lanes //= 2
        low, high = (builder.shuffle_vector(value, ir.Constant(value.type, ir.Undefined),
                                            ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                        list(range(start, start + lanes))))
                     for start in (0, lanes))
        value = builder.fadd(low, high)
    return builder.extract_element(value, ir.Constant(ir.IntType(32), 0))


@intrinsic
def _dot_tile(typingctx, a, a_at, lda, b, b_at, ldb, c, c_at, ldc, rows, cols, k, alpha, beta):
    """C[0:rows, 0:cols] = alpha * A[0:rows, 0:k] @ B[0:cols, 0:k]^T + beta * C (beta == 0: C
    is not used), rows <= DOT_ROWS, cols <= DOT_COLS; A's rows are lda apart from a[a_at], B's
    ldb apart from b[b_at], C's ldc apart from c[c_at].  Rows of A or B past ``rows`` or
    ``cols`` are computed on a copy of the last one and not stored; the last terms, short of a
    whole vector, are read with masked loads.  The caller guarantees every index lies inside
    the arrays."""
    dtype = getattr(a, "dtype", None)
    if dtype not in _LANES or getattr(b, "dtype", None) != dtype or \
            getattr(c, "dtype", None) != dtype:
        return None
    intp = types.intp
    sig = types.void(a, intp, intp, b, intp, intp, c, intp, intp, intp, intp, intp, dtype, dtype)

    def codegen(context, builder, signature, args):
        a_arr, a_at, lda, b_arr, b_at, ldb, c_arr, c_at, ldc, rows, cols, k, alpha, beta = args
        element = context.get_value_type(dtype)
        vector = ir.VectorType(element, _LANES[dtype])
        width = vector.count
        a_data = context.make_array(signature.args[0])(context, builder, a_arr).data
        b_data = context.make_array(signature.args[3])(context, builder, b_arr).data
        c_data = context.make_array(signature.args[6])(context, builder, c_arr).data
        intp = context.get_value_type(types.intp)
        suffix = f"v{width}f{element.intrinsic_name[1:]}"
        fmuladd = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector, [vector] * 3), f"llvm.fmuladd.{suffix}")
        mask_type = ir.VectorType(ir.IntType(1), width)
        masked_load = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vector, [vector.as_pointer(), ir.IntType(32),
                                                     mask_type, vector]),
            f"llvm.masked.load.{suffix}.p0{suffix}")
        zero = ir.Constant(vector, [ir.Constant(element, 0.0)] * width)
        a_rows = _row_starts(builder, a_at, lda, DOT_ROWS, rows)
        b_rows = _row_starts(builder, b_at, ldb, DOT_COLS, cols)
        sums = [[cgutils.alloca_once_value(builder, zero) for _ in range(DOT_COLS)]
                for _ in range(DOT_ROWS)]

        def accumulate(load):
            a_values = [load(a_data, start) for start in a_rows]
            b_values = [load(b_data, start) for start in b_rows]
            for i in range(DOT_ROWS):
                for j in range(DOT_COLS):
                    builder.store(builder.call(fmuladd, [a_values[i], b_values[j],
                                                         builder.load(sums[i][j])]),
                                  sums[i][j])

        whole = builder.sdiv(k, ir.Constant(intp, width))
        with cgutils.for_range(builder, whole) as loop:
            p = builder.mul(loop.index, ir.Constant(intp, width))
            accumulate(lambda data, start: _load(builder, data, builder.add(start, p), vector))
        done = builder.mul(whole, ir.Constant(intp, width))
        left = builder.sub(k, done)
        with builder.if_then(builder.icmp_signed(">", left, ir.Constant(intp, 0))):
            lanes = ir.Constant(ir.VectorType(intp, width), list(range(width)))
            mask = builder.icmp_signed("<", lanes, _splat(builder, left,
                                                          ir.VectorType(intp, width)))
            accumulate(lambda data, start: builder.call(masked_load, [
                builder.bitcast(builder.gep(data, [builder.add(start, done)]),
                                vector.as_pointer()),
                ir.Constant(ir.IntType(32), 1), mask, zero]))
        read_c = builder.fcmp_unordered("!=", beta, ir.Constant(element, 0.0))
        for i in range(DOT_ROWS):
            for j in range(DOT_COLS):
                inside = builder.and_(builder.icmp_signed("<", ir.Constant(intp, i), rows),
                                      builder.icmp_signed("<", ir.Constant(intp, j), cols))
                with builder.if_then(inside):
                    c_ptr = builder.gep(c_data, [builder.add(
                        c_at, builder.add(builder.mul(ir.Constant(intp, i), ldc),
                                          ir.Constant(intp, j)))])
                    value = builder.fmul(alpha, _lane_sum(builder, builder.load(sums[i][j])))
                    with builder.if_then(read_c):
                        builder.store(builder.fadd(value, builder.fmul(
                            beta, builder.load(c_ptr))), c_ptr)
                    with builder.if_then(builder.not_(read_c)):
                        builder.store(value, c_ptr)
        return context.get_dummy_value()

    return sig, codegen


_jit = njit(error_model="numpy", nogil=True)

# Blocks that stay in cache: _DEPTH terms of the inner dimension at a time (a column panel of B,
# _DEPTH by one tile's width, stays in L1; 256 x 32 float32 is 32 KB), over _BAND rows of A at
# a time (_BAND x _DEPTH of A stays in L2).
_DEPTH = 256
_BAND = 192
# For A @ B^T: _DOT_DEPTH terms at a time (DOT_COLS rows of B, 8 KB of float32, stay in L1 while
# a band of _BAND rows of A, 384 KB, comes from L2).
_DOT_DEPTH = 512


@_jit
def _dot_products(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """``gemm`` for an untransposed A and a transposed B, k > 0."""
    for p0 in range(0, k, _DOT_DEPTH):
        depth = min(_DOT_DEPTH, k - p0)
        scale = beta if p0 == 0 else 1.0    # the later blocks add to the first's sums
        for i0 in range(0, m, _BAND):
            i1 = min(m, i0 + _BAND)
            for j in range(0, n, DOT_COLS):
                for i in range(i0, i1, DOT_ROWS):
                    _dot_tile(a, i * lda + p0, lda, b, j * ldb + p0, ldb, c, i * ldc + j, ldc,
                              min(DOT_ROWS, i1 - i), min(DOT_COLS, n - j), depth, alpha, scale)


@_jit
def width(itemsize):
    """Columns of one tile for C's dtype (of ``itemsize`` bytes)."""
    return (16 if itemsize == 4 else 8) * _VECTORS


@_jit
def gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """Row-major C[m, n] = alpha * op(A) @ op(B) + beta * C (beta == 0: C's old values are not
    used), with ``ops.linalg.gemm``'s arguments, but not both operands transposed: a, b, c 1-D
    C-contiguous arrays of one float dtype whose first element is the matrix's first, A stored
    as rows of k (m if transpose_a) spaced lda apart, B as rows of n (k if transpose_b) spaced
    ldb apart, C likewise (ldc).  The caller guarantees the extents lie inside the arrays.

    An untransposed B is read in place, but for the last panel when it is partial: that is
    copied into a zero-padded panel first.  A transposed B is read in place by ``_dot_tile``."""
    if m <= 0 or n <= 0:
        return
    if k <= 0:   # no terms: C = beta * C
        for i in range(m):
            for j in range(n):
                c[i * ldc + j] = 0.0 if beta == 0 else beta * c[i * ldc + j]
        return
    if transpose_b:
        _dot_products(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
        return
    tile = width(c.itemsize)
    a_row, a_col = (1, lda) if transpose_a else (lda, 1)
    panel = np.empty(min(k, _DEPTH) * tile, c.dtype)
    edge = np.empty(ROWS * tile, c.dtype)     # a partial panel's tile of C
    for i0 in range(0, m, _BAND):
        i1 = min(m, i0 + _BAND)
        for p0 in range(0, k, _DEPTH):
            depth = min(_DEPTH, k - p0)
            scale = beta if p0 == 0 else 1.0    # the later blocks add to the first's sums
            for j0 in range(0, n, tile):
                cols = min(tile, n - j0)
                if cols < tile:   # the last panel, zero-padded
                    for p in range(depth):
                        for j in range(tile):
                            panel[p * tile + j] = b[(p0 + p) * ldb + j0 + j] if j < cols else 0.0
                for i in range(i0, i1, ROWS):
                    rows = min(ROWS, i1 - i)
                    # one call of _tile (each call is a copy of its code): B in place into C,
                    # or the padded panel into ``edge``
                    if cols == tile:
                        src, src_at, src_ld, dst, dst_at, dst_ld, dst_beta = \
                            b, p0 * ldb + j0, ldb, c, i * ldc + j0, ldc, scale
                    else:
                        src, src_at, src_ld, dst, dst_at, dst_ld, dst_beta = \
                            panel, 0, tile, edge, 0, tile, 0.0
                    _tile(a, i * a_row + p0 * a_col, a_row, a_col, src, src_at, src_ld, dst,
                          dst_at, dst_ld, rows, depth, alpha, dst_beta)
                    if cols == tile:
                        continue
                    for r in range(rows):
                        at = (i + r) * ldc + j0
                        for j in range(cols):
                            value = edge[r * tile + j]
                            if scale != 0:
                                value += scale * c[at + j]
                            c[at + j] = value


# ---- one compiled copy for every kernel ------------------------------------------------------
# A kernel calling ``gemm`` would compile a copy of it into its own code (0.3 s more per kernel
# on a cold start).  Kernels call ``call`` instead: ``gemm`` compiled once per dtype as a C
# function, reached by a symbol name defined when a kernel that calls it is first compiled or
# loaded (``kernel_cache.defines_symbol``).
_SYMBOLS = {types.float32: "hybridtf_tile_gemm_float32",
            types.float64: "hybridtf_tile_gemm_float64"}
_defined = {}
_defining = threading.Lock()


@njit
def _extent(rows, cols, ld):
    """Elements from the first to the last of a rows x cols matrix whose rows are ld apart."""
    return 0 if rows <= 0 or cols <= 0 else (rows - 1) * ld + cols


def _entry(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    a_rows, a_cols = (k, m) if transpose_a else (m, k)
    b_rows, b_cols = (n, k) if transpose_b else (k, n)
    gemm(transpose_a, transpose_b, m, n, k, alpha, carray(a, (_extent(a_rows, a_cols, lda),)),
         lda, carray(b, (_extent(b_rows, b_cols, ldb),)), ldb, beta,
         carray(c, (_extent(m, n, ldc),)), ldc)


def _define(dtype):
    """Defines ``dtype``'s symbol: its C function compiled (or loaded from the cache)."""
    name = _SYMBOLS[dtype]
    with _defining:
        if name in _defined:
            return
        pointer = types.CPointer(dtype)
        signature = types.void(types.boolean, types.boolean, types.intp, types.intp,
                               types.intp, types.float64, pointer, types.intp, pointer, types.intp,
                               types.float64, pointer, types.intp)
        entry = kernel_cache.cfunc(signature, error_model="numpy", nogil=True)(_entry)
        llvm_binding.add_symbol(name, entry.address)
        _defined[name] = entry    # keeps the code alive


_ADDRESSES = {}   # NumPy dtype -> address (the code stays defined for the process)


def address(dtype):
    """The address of ``gemm``'s compiled C function for NumPy float dtype ``dtype`` (the
    arguments of ``call``, the arrays as pointers): ``ops.native_parts`` runs it."""
    found = _ADDRESSES.get(dtype)
    if found is None:
        numba_type = types.float32 if np.dtype(dtype) == np.float32 else types.float64
        _define(numba_type)
        found = _ADDRESSES[dtype] = _defined[_SYMBOLS[numba_type]].address
    return found


for _dtype, _name in _SYMBOLS.items():
    kernel_cache.defines_symbol(_name, lambda dtype=_dtype: _define(dtype))

_EXTERNAL = {dtype: types.ExternalFunction(name, types.void(
    types.boolean, types.boolean, types.intp, types.intp, types.intp, types.float64,
    types.voidptr, types.intp, types.voidptr, types.intp, types.float64, types.voidptr,
    types.intp))
    for dtype, name in _SYMBOLS.items()}


def call(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """``gemm`` (same arguments), from compiled code, through its one compiled copy."""


@overload(call)
def _call_impl(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    if c.dtype not in _SYMBOLS:
        raise TypeError(f"tile_gemm.call needs float32 or float64 arrays, got {c.dtype}")
    _define(c.dtype)   # before the calling kernel's code is linked
    external = _EXTERNAL[c.dtype]

    def impl(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        external(transpose_a, transpose_b, m, n, k, alpha, a.ctypes, lda, b.ctypes, ldb, beta,
                 c.ctypes, ldc)
    return impl
