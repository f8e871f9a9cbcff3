"""Reductions, arg-reductions and cumulative sums over CUDA device arrays.

As in ``ops.reduce``, every request is brought to the form ``(A, R, B)``: ``R`` is a run of
adjacent reduced axes, ``A`` the axes before it and ``B`` the axes after it.  Reduced axes that are
not adjacent are reduced one run at a time (the last first), the partial results kept in the
accumulator's dtype, so no transposed copy is needed.

A block (of up to ``THREADS`` threads, fewer for small arrays) is viewed as ``(groups, TY,
TX)``: ``TX`` threads over ``B`` (neighbouring threads read neighbouring memory), ``TY`` threads
striding over ``R``, and ``groups`` outputs of ``A`` side by side when ``R`` is short.  Each
thread folds its share into an accumulator, and the block combines them in shared memory (a tree
over ``TY``).  When there are few outputs and ``R`` is long, ``R`` is split into parts reduced by
different blocks, and a second pass combines the parts.

Accumulators are float64 for floating inputs and int64 for integer (and bool) ones, like the CPU
kernels; integer results wrap to the output dtype as TF's do.  Entry points take C-contiguous
device arrays and assume the framework validated their arguments (``axes`` normalised, sorted,
unique; dtypes the op supports).
"""
import math

import numpy as np
from numba import cuda, float64, int64

from ops.cuda.launch import MAX_BLOCKS, THREADS, empty, jit

SUM, PROD, MAX, MIN = 0, 1, 2, 3
# How a float reduction's last pass writes its result: as it is, or divided by a count (mean).
STORE, MEAN = 0, 1

# Split a long reduced run over more blocks while there are fewer than this many blocks (enough to
# fill every multiprocessor of a large GPU several times) ...
_TARGET_BLOCKS = 1024
# ... but give each thread at least this many elements of a part.
_MIN_RUN = 16
# The smallest block launched: one warp.
_WARP = 32


# ---- device functions shared with the other kernels ---------------------------------------------
@jit(device=True, cache=True)
def combine(op, a, b):
    """a (an accumulator) combined with b by SUM, PROD, MAX or MIN; NaN propagates through MAX
    and MIN."""
    if op == SUM:
        return a + b
    if op == PROD:
        return a * b
    if op == MAX:
        return b if (b > a) or (b != b) else a
    return b if (b < a) or (b != b) else a


@jit(device=True, cache=True)
def tree_reduce(sh, t, ty, tx_n, ty_n, op):
    """Combines ``sh`` over the ``ty_n`` threads of a column of the block's (groups, TY, TX) view
    into the first of them (``ty == 0``).  ``t`` is the thread's index, ``sh[t]`` its value.  Every
    thread of the block must call it (it synchronises the block); ``ty_n`` is a power of two."""
    cuda.syncthreads()
    s = ty_n // 2
    while s > 0:
        if ty < s:
            sh[t] = combine(op, sh[t], sh[t + s * tx_n])
        cuda.syncthreads()
        s //= 2


@jit(device=True, cache=True)
def wrap_int(v, span, half):
    """``v`` as an integer dtype holding the ``span`` values from ``-half`` (span 2**bits; half
    span // 2 when signed, else 0): what a cast to that dtype gives, written out because the
    simulator's stores do not wrap.  ``span`` 0 leaves ``v`` as it is (64-bit and float
    outputs); the arithmetic also types for floats, so one kernel body serves both."""
    if span == 0:
        return v
    return (v + half) % span - half


def wrap_args(dtype):
    """(span, half) for ``wrap_int`` to wrap int64 values to ``dtype``."""
    if dtype.kind not in "iu" or dtype.itemsize == 8:
        return 0, 0
    span = 1 << (8 * dtype.itemsize)
    return span, span // 2 if dtype.kind == "i" else 0


def pow2_at_least(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


def block_shape(tile, tiles):
    """(blocks, threads per block) for ``tiles`` tiles of ``tile`` threads each (a power of two
    <= THREADS), side by side in blocks of up to THREADS threads: a block no larger than the
    work needs (but at least a warp), so that small arrays leave no idle threads."""
    threads = min(THREADS, max(_WARP, tile * pow2_at_least(tiles)))
    return min(MAX_BLOCKS, max(1, -(-tiles // (threads // tile)))), threads


# ---- reductions ---------------------------------------------------------------------------------
@jit(device=True, cache=True)
def _tile(task, rows, run, cols, parts, tx_n, ty_n):
    """This thread's share of tile ``task`` of a pass over (rows, run, cols) into (rows, parts,
    cols): (ty, the output index or -1 for a thread outside the arrays, the flat index of its
    first element, its range of run indices start:stop:ty_n)."""
    t = cuda.threadIdx.x
    tx = t % tx_n
    ty = (t // tx_n) % ty_n
    groups = cuda.blockDim.x // (tx_n * ty_n)
    col_tiles = (cols + tx_n - 1) // tx_n
    rest = task // col_tiles
    p = rest % parts
    a = (rest // parts) * groups + t // (tx_n * ty_n)
    b = (task % col_tiles) * tx_n + tx
    chunk = (run + parts - 1) // parts
    stop = (p + 1) * chunk
    if stop > run:   # (Numba's CUDA target mistypes min() of two integers)
        stop = run
    where = (a * parts + p) * cols + b if a < rows and b < cols else -1
    return ty, where, a * run * cols + b, p * chunk + ty, stop if where >= 0 else 0


@jit(device=True, cache=True)
def _tile_count(rows, cols, parts, tx_n, ty_n):
    """How many tiles a pass over (rows, run, cols) has."""
    groups = cuda.blockDim.x // (tx_n * ty_n)
    return ((rows + groups - 1) // groups) * parts * ((cols + tx_n - 1) // tx_n)


@jit(device=True, cache=True)
def _tile_reduce(x, sh, task, rows, run, cols, parts, tx_n, ty_n, op, init):
    """Reduces tile ``task`` of ``x`` viewed as (rows, run, cols): returns the result and where
    it goes in the (rows, parts, cols) output, or -1 for the threads that write nothing.  Every
    thread of the block must call it."""
    t = cuda.threadIdx.x
    ty, where, base, start, stop = _tile(task, rows, run, cols, parts, tx_n, ty_n)
    acc = init
    for r in range(start, stop, ty_n):
        acc = combine(op, acc, x[base + r * cols])
    sh[t] = acc
    tree_reduce(sh, t, ty, tx_n, ty_n, op)
    value = sh[t]
    cuda.syncthreads()   # sh is free for the next tile
    return value, where if ty == 0 else -1


@jit(device=True, cache=True)
def _store_float(out, where, value, finish, count):
    """A float reduction's result stored: as it is, or for MEAN divided by ``count`` (NaN when
    it is 0)."""
    if finish == MEAN:
        out[where] = value / count if count > 0 else math.nan
    else:
        out[where] = value


@jit(device=True, cache=True)
def _store_int(out, where, value, finish, count, span, half):
    """An integer reduction's result wrapped to out's dtype (``span``, ``half``: ``wrap_args``)
    and stored: as it is, or for MEAN the wrapped sum divided by ``count``, truncated toward
    zero as TF does (0 when ``count`` is 0)."""
    s = wrap_int(value, span, half)
    if finish == MEAN:
        if count > 0:
            q = s // count
            if s % count != 0 and s < 0:
                q += 1   # floor division rounded a negative quotient down
            s = q
        else:
            s = 0
    out[where] = s


@jit(device=True, cache=True)
def _float_tasks(x, out, sh, first, stride, rows, run, cols, parts, tx_n, ty_n, op, init,
                 finish, count):
    """Tiles ``first``, ``first + stride``, ... of a float reduction pass (float64
    accumulator, shared memory ``sh``)."""
    for task in range(first, _tile_count(rows, cols, parts, tx_n, ty_n), stride):
        value, where = _tile_reduce(x, sh, task, rows, run, cols, parts, tx_n, ty_n, op, init)
        if where >= 0:
            _store_float(out, where, value, finish, count)


@jit(device=True, cache=True)
def _int_tasks(x, out, sh, first, stride, rows, run, cols, parts, tx_n, ty_n, op, init,
               finish, count, span, half):
    """Tiles ``first``, ``first + stride``, ... of an integer reduction pass (int64
    accumulator, shared memory ``sh``)."""
    for task in range(first, _tile_count(rows, cols, parts, tx_n, ty_n), stride):
        value, where = _tile_reduce(x, sh, task, rows, run, cols, parts, tx_n, ty_n, op, init)
        if where >= 0:
            _store_int(out, where, value, finish, count, span, half)


@jit(cache=True)
def _reduce_float(x, out, rows, run, cols, parts, tx_n, ty_n, op, init, finish, count):
    """Float reduction pass (float64 accumulator): ``finish`` STORE or MEAN (divide by
    ``count``; NaN when it is 0)."""
    sh = cuda.shared.array(THREADS, float64)
    _float_tasks(x, out, sh, cuda.blockIdx.x, cuda.gridDim.x, rows, run, cols, parts, tx_n,
                 ty_n, op, init, finish, count)


@jit(cache=True)
def _reduce_int(x, out, rows, run, cols, parts, tx_n, ty_n, op, init, finish, count, span,
                half):
    """Integer reduction pass (int64 accumulator), the result wrapped to out's dtype (``span``,
    ``half``: ``wrap_args``); ``finish`` STORE or MEAN (see ``_store_int``)."""
    sh = cuda.shared.array(THREADS, int64)
    _int_tasks(x, out, sh, cuda.blockIdx.x, cuda.gridDim.x, rows, run, cols, parts, tx_n,
               ty_n, op, init, finish, count, span, half)


# ---- reductions inside a kernel run by one block ----------------------------------------------
# A kernel launched as a single block (a loop whose every step must see the previous one's
# results: ``cuda.syncthreads`` is its only barrier) reduces with the whole block, one pass of
# ``reduction_passes`` at a time, tiled by ``thread_tiling`` for its block size.  ``sh``: a
# shared array of THREADS float64 (int64) values.  Every thread of the block must call them;
# the results are visible to the block after its next ``cuda.syncthreads()``.
@jit(device=True, cache=True)
def block_reduce_float(x, out, sh, rows, run, cols, tx_n, ty_n, op, init, finish, count):
    """A float pass over flat ``x`` viewed as (rows, run, cols) into flat ``out`` (rows, cols),
    as ``_reduce_float`` does it with one part."""
    _float_tasks(x, out, sh, 0, 1, rows, run, cols, 1, tx_n, ty_n, op, init, finish, count)


@jit(device=True, cache=True)
def block_reduce_int(x, out, sh, rows, run, cols, tx_n, ty_n, op, init, finish, count, span,
                     half):
    """An integer (or bool) pass, as ``_reduce_int`` does it with one part."""
    _int_tasks(x, out, sh, 0, 1, rows, run, cols, 1, tx_n, ty_n, op, init, finish, count, span,
               half)


def thread_tiling(run, cols, threads=THREADS):
    """(tx_n, ty_n) of a pass over (rows, run, cols) by blocks of ``threads`` threads (a power
    of two, at least a warp): TX threads over the columns, TY over the run."""
    tx_n = 1 if cols == 1 else min(_WARP, pow2_at_least(cols))
    return tx_n, min(threads // tx_n, pow2_at_least(run))


def _tiling(rows, run, cols, split=True):
    """(tx_n, ty_n, parts, blocks, threads) of a pass over (rows, run, cols); one part unless
    ``split``."""
    tx_n, ty_n = thread_tiling(run, cols)
    _, threads = block_shape(tx_n * ty_n, rows)
    tiles = -(-rows // (threads // (tx_n * ty_n))) * -(-cols // tx_n)
    parts = 1
    if split and tiles < _TARGET_BLOCKS and run > ty_n * _MIN_RUN:
        parts = min(-(-_TARGET_BLOCKS // tiles), -(-run // (ty_n * _MIN_RUN)))
    return tx_n, ty_n, parts, min(tiles * parts, MAX_BLOCKS), threads


class _Reduction:
    """What a reduction's passes need: the combining op, its identity in the accumulator's
    dtype, the kernel, and how the last pass finishes."""

    def __init__(self, dtype, op, identity, finish=STORE, count=0):
        self.floating = dtype.kind == "f"
        self.acc_dtype = np.dtype(np.float64 if self.floating else np.int64)
        self.op = op
        self.init = self.acc_dtype.type(identity)
        self.finish = finish
        self.count = count

    def run_pass(self, x, out, rows, run, cols, last):
        """Reduces flat ``x`` viewed as (rows, run, cols) into flat ``out`` (rows, cols): in two
        passes through a scratch array when ``run`` is split into parts."""
        tx_n, ty_n, parts, blocks, threads = _tiling(rows, run, cols)
        if parts > 1:
            partial = empty(rows * parts * cols, self.acc_dtype)
            self._launch((blocks, threads), x, partial, rows, run, cols, parts, tx_n, ty_n, False)
            self.run_pass(partial, out, rows, parts, cols, last)
        else:
            self._launch((blocks, threads), x, out, rows, run, cols, 1, tx_n, ty_n, last)

    def _launch(self, grid, x, out, rows, run, cols, parts, tx_n, ty_n, last):
        finish = self.finish if last else STORE
        args = (x, out, rows, run, cols, parts, tx_n, ty_n, self.op, self.init, finish,
                self.count)
        if self.floating:
            _reduce_float[grid](*args)
        else:
            _reduce_int[grid](*args, *wrap_args(out.dtype))


def _merged_dims(shape, axes):
    """shape as [size, reduced] runs: size-1 axes dropped (they do not change the layout) and
    neighbouring axes of one kind merged."""
    dims = []
    for i, d in enumerate(shape):
        if d == 1:
            continue
        reduced = i in axes
        if dims and dims[-1][1] == reduced:
            dims[-1][0] *= d
        else:
            dims.append([d, reduced])
    return dims


def _prod(sizes):
    n = 1
    for d in sizes:
        n *= d
    return n


def _out_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def device_copy(x):
    """A new device array holding x's values."""
    out = empty(x.shape, x.dtype)
    if x.size:
        out.copy_to_device(x)
    return out


def reduction_passes(shape, axes):
    """(rows, run, cols) of each pass of a reduction of an array of ``shape`` over ``axes``
    (normalised, sorted, unique), in order: a pass reduces its input viewed as (rows, run, cols)
    into (rows, cols), written in the accumulator's dtype for the next pass to read, and by
    the last in the output's.  An empty reduction, or one over axes of size 1 only, is one
    pass with a run of 0 or 1."""
    size = _prod(shape)
    dims = _merged_dims(shape, axes)
    if size == 0 or not any(reduced for _, reduced in dims):
        kept = _prod(d for i, d in enumerate(shape) if i not in axes)
        return [(kept, 0 if size == 0 else 1, 1)]
    passes = []
    while True:
        j = max(i for i, (_, reduced) in enumerate(dims) if reduced)
        passes.append((_prod(d for d, _ in dims[:j]), dims[j][0],
                       _prod(d for d, _ in dims[j + 1:])))
        if sum(reduced for _, reduced in dims) == 1:
            return passes
        dims = _merged_dims([d for d, _ in dims[:j] + dims[j + 1:]],
                            {i for i, (_, reduced) in enumerate(dims[:j]) if reduced})


def _reduce(x, axes, keepdims, reduction, out_dtype=None):
    out = empty(_out_shape(x.shape, axes, keepdims), out_dtype or x.dtype)
    if out.size == 0:
        return out
    flat_out = out.reshape(out.size)
    if out.dtype == np.bool_:
        flat_out = flat_out.view(np.uint8)
    current = x.reshape(x.size)
    if x.dtype == np.bool_:
        current = current.view(np.uint8)
    passes = reduction_passes(x.shape, axes)
    for n, (rows, run, cols) in enumerate(passes):
        last = n == len(passes) - 1
        dest = flat_out if last else empty(rows * cols, reduction.acc_dtype)
        reduction.run_pass(current, dest, rows, run, cols, last)
        current = dest
    return out


def _max_identity(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _min_identity(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


# The reductions ``reduction_for`` knows, by the name of their ``reduce_<name>`` kernel.
REDUCTIONS = ("sum", "prod", "mean", "max", "min", "any", "all")


def reduction_for(name, dtype, count=1):
    """The ``_Reduction`` of ``reduce_<name>`` (sum, prod, mean, max, min, any, all) of an array
    of ``dtype``; ``count``: how many values each result reduces (a mean divides by it)."""
    if name == "any":
        return _Reduction(np.dtype(np.uint8), MAX, 0)
    if name == "all":
        return _Reduction(np.dtype(np.uint8), MIN, 1)
    if name == "mean":
        return _Reduction(dtype, SUM, 0, MEAN, count)
    op, identity = {"sum": (SUM, 0), "prod": (PROD, 1), "max": (MAX, _max_identity(dtype)),
                    "min": (MIN, _min_identity(dtype))}[name]
    return _Reduction(dtype, op, identity)


def _reduced(name, x, axes, keepdims, out_dtype=None):
    if not axes:
        return device_copy(x)
    count = _prod(x.shape[i] for i in axes)
    return _reduce(x, axes, keepdims, reduction_for(name, x.dtype, count), out_dtype)


def reduce_sum(x, axes, keepdims=False):
    """Sum of device array ``x`` over ``axes`` (tf.reduce_sum), as ``ops.reduce.reduce_sum``:
    float sums accumulate in float64, integer sums in int64 and wrap to x's dtype; empty -> 0;
    no axes -> a copy."""
    return _reduced("sum", x, axes, keepdims)


def reduce_prod(x, axes, keepdims=False):
    """Product of ``x`` over ``axes`` (tf.reduce_prod); as reduce_sum, empty -> 1."""
    return _reduced("prod", x, axes, keepdims)


def reduce_mean(x, axes, keepdims=False):
    """Mean of ``x`` over ``axes`` (tf.reduce_mean): the float64 sum divided by the count for
    floats (NaN when empty); for integers the wrapped sum divided by the count, truncated toward
    zero (0 when empty), as TF."""
    return _reduced("mean", x, axes, keepdims)


def reduce_max(x, axes, keepdims=False):
    """Maximum of ``x`` over ``axes`` (tf.reduce_max); NaN propagates; empty -> -inf (floats)
    or the dtype's minimum."""
    return _reduced("max", x, axes, keepdims)


def reduce_min(x, axes, keepdims=False):
    """Minimum of ``x`` over ``axes`` (tf.reduce_min); NaN propagates; empty -> +inf (floats)
    or the dtype's maximum."""
    return _reduced("min", x, axes, keepdims)


def reduce_any(x, axes, keepdims=False):
    """Logical or of bool ``x`` over ``axes`` (tf.reduce_any); empty -> False."""
    return _reduced("any", x, axes, keepdims, np.bool_)


def reduce_all(x, axes, keepdims=False):
    """Logical and of bool ``x`` over ``axes`` (tf.reduce_all); empty -> True."""
    return _reduced("all", x, axes, keepdims, np.bool_)


# ---- argmax / argmin ----------------------------------------------------------------------------
@jit(device=True, cache=True)
def _arg_better(find_min, v, i, m, j):
    """Whether value v at index i beats m at index j: a NaN beats any number, the larger (or with
    ``find_min`` the smaller) value wins, ties go to the lower index; index -1 is no value."""
    if i < 0:
        return False
    if j < 0:
        return True
    v_nan = v != v
    m_nan = m != m
    if v_nan or m_nan:
        return i < j if v_nan and m_nan else v_nan
    if v == m:
        return i < j
    return v < m if find_min else v > m


@jit(cache=True)
def _arg_kernel(x, index, indexed, values, indices, keep_values, rows, run, cols, parts, tx_n,
                ty_n, find_min, init):
    """Arg-reduction pass over ``x`` viewed as (rows, run, cols) into (rows, parts, cols):
    ``indices`` gets the winner's index along ``run`` (read from ``index``, of x's shape, when
    ``indexed``: a second pass over the parts), ``values`` its value (in ``values``' dtype, the
    accumulator's) when ``keep_values``."""
    sv = cuda.shared.array(THREADS, values.dtype)
    si = cuda.shared.array(THREADS, int64)
    t = cuda.threadIdx.x
    for task in range(cuda.blockIdx.x, _tile_count(rows, cols, parts, tx_n, ty_n),
                      cuda.gridDim.x):
        ty, where, base, start, stop = _tile(task, rows, run, cols, parts, tx_n, ty_n)
        m = init
        j = -1
        for r in range(start, stop, ty_n):
            v = x[base + r * cols]
            k = index[base + r * cols] if indexed else r
            if _arg_better(find_min, v, k, m, j):
                m = v
                j = k
        sv[t] = m
        si[t] = j
        cuda.syncthreads()
        s = ty_n // 2
        while s > 0:
            if ty < s:
                o = t + s * tx_n
                if _arg_better(find_min, sv[o], si[o], sv[t], si[t]):
                    sv[t] = sv[o]
                    si[t] = si[o]
            cuda.syncthreads()
            s //= 2
        if ty == 0 and where >= 0:
            indices[where] = si[t]
            if keep_values:
                values[where] = sv[t]
        cuda.syncthreads()


def _single_axis(shape, axis):
    return _prod(shape[:axis]), shape[axis], _prod(shape[axis + 1:])


def _arg(x, axis, out_dtype, find_min):
    rows, run, cols = _single_axis(x.shape, axis)
    if run == 0:
        raise ValueError("arg reduction over an empty axis %d of shape %s" % (axis, x.shape))
    out = empty(x.shape[:axis] + x.shape[axis + 1:], out_dtype)
    if out.size == 0:
        return out
    acc_dtype = np.dtype(np.float64 if x.dtype.kind == "f" else np.int64)
    init = acc_dtype.type(0)
    no_index = empty(1, np.int64)
    no_values = empty(1, acc_dtype)
    flat_x = x.reshape(x.size)
    tx_n, ty_n, parts, blocks, threads = _tiling(rows, run, cols)
    if parts > 1:
        values = empty(rows * parts * cols, acc_dtype)
        index = empty(rows * parts * cols, np.int64)
        _arg_kernel[blocks, threads](flat_x, no_index, False, values, index, True, rows, run,
                                     cols, parts, tx_n, ty_n, find_min, init)
        flat_x, run, indexed = values, parts, True
        tx_n, ty_n, _, blocks, threads = _tiling(rows, run, cols, split=False)
    else:
        index, indexed = no_index, False
    _arg_kernel[blocks, threads](flat_x, index, indexed, no_values, out.reshape(out.size), False,
                                 rows, run, cols, 1, tx_n, ty_n, find_min, init)
    return out


def argmax(x, axis, out_dtype=np.int64):
    """Index of the largest value of device array ``x`` along ``axis`` (tf.math.argmax); first on
    ties; a NaN is the largest value.  As ``ops.reduce.argmax``: rank >= 1, axis normalised,
    ``x.shape[axis] > 0``, out_dtype int32 or int64."""
    return _arg(x, axis, np.dtype(out_dtype), False)


def argmin(x, axis, out_dtype=np.int64):
    """Index of the smallest value of ``x`` along ``axis`` (tf.math.argmin); as argmax (a NaN
    counts as the smallest)."""
    return _arg(x, axis, np.dtype(out_dtype), True)


# ---- cumsum -------------------------------------------------------------------------------------
@jit(device=True, cache=True)
def _scan_rows(x, out, sh, rows, run, lane_n, exclusive, reverse, zero, span, half):
    """Cumulative sums of the rows of x viewed as (rows, run): ``lane_n`` threads per row (a power
    of two), a chunk of ``lane_n`` elements at a time scanned in shared memory (Hillis-Steele)
    and added to the running total of the chunks before it."""
    t = cuda.threadIdx.x
    lane = t % lane_n
    first = t - lane
    groups = cuda.blockDim.x // lane_n
    for task in range(cuda.blockIdx.x, (rows + groups - 1) // groups, cuda.gridDim.x):
        row = task * groups + t // lane_n
        carry = zero
        for start in range(0, run, lane_n):
            r = start + lane
            here = row < rows and r < run
            pos = row * run + (run - 1 - r if reverse else r)
            sh[t] = x[pos] if here else zero
            cuda.syncthreads()
            offset = 1
            while offset < lane_n:
                add = sh[t - offset] if lane >= offset else zero
                cuda.syncthreads()
                sh[t] += add
                cuda.syncthreads()
                offset *= 2
            if here:
                if exclusive:
                    total = carry + (sh[t - 1] if lane > 0 else zero)
                else:
                    total = carry + sh[t]
                out[pos] = wrap_int(total, span, half)
            carry += sh[first + lane_n - 1]
            cuda.syncthreads()


@jit(cache=True)
def _scan_rows_float(x, out, rows, run, lane_n, exclusive, reverse):
    sh = cuda.shared.array(THREADS, float64)
    _scan_rows(x, out, sh, rows, run, lane_n, exclusive, reverse, 0.0, 0, 0)


@jit(cache=True)
def _scan_rows_int(x, out, rows, run, lane_n, exclusive, reverse, span, half):
    sh = cuda.shared.array(THREADS, int64)
    _scan_rows(x, out, sh, rows, run, lane_n, exclusive, reverse, 0, span, half)


@jit(cache=True)
def _scan_columns(x, out, rows, run, cols, exclusive, reverse, zero, span, half):
    """Cumulative sums along the middle axis of x viewed as (rows, run, cols): a thread per
    (row, col), neighbouring threads on neighbouring columns (coalesced)."""
    for i in range(cuda.grid(1), rows * cols, cuda.gridsize(1)):
        base = (i // cols) * run * cols + i % cols
        acc = zero
        for step in range(run):
            pos = base + (run - 1 - step if reverse else step) * cols
            v = x[pos]
            if exclusive:
                out[pos] = wrap_int(acc, span, half)
            acc += v
            if not exclusive:
                out[pos] = wrap_int(acc, span, half)


def cumsum(x, axis, exclusive=False, reverse=False):
    """Cumulative sum of device array ``x`` along ``axis`` (tf.math.cumsum), as
    ``ops.reduce.cumsum``: rank >= 1, axis normalised; ``exclusive`` starts from 0; ``reverse``
    scans from the end.  Floats accumulate in float64 and integers in int64, wrapped to x's
    dtype."""
    out = empty(x.shape, x.dtype)
    if x.size == 0:
        return out
    rows, run, cols = _single_axis(x.shape, axis)
    flat_x, flat_out = x.reshape(x.size), out.reshape(out.size)
    floating = x.dtype.kind == "f"
    span, half = wrap_args(x.dtype)
    if cols == 1:
        lane_n = min(THREADS, pow2_at_least(run))
        grid = block_shape(lane_n, rows)
        if floating:
            _scan_rows_float[grid](flat_x, flat_out, rows, run, lane_n, exclusive, reverse)
        else:
            _scan_rows_int[grid](flat_x, flat_out, rows, run, lane_n, exclusive, reverse, span,
                                 half)
    else:
        zero = np.float64(0) if floating else np.int64(0)
        _scan_columns[block_shape(1, rows * cols)](flat_x, flat_out, rows, run, cols, exclusive,
                                                   reverse, zero, span, half)
    return out
