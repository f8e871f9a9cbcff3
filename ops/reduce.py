"""Reductions, arg-reductions and scans over NumPy arrays.

Every kernel works on a C-contiguous array viewed as ``(A, R, B)``: ``R`` is the (flattened) run of
axes being reduced or scanned, ``A`` the axes before it and ``B`` the axes after it.  The Python
wrappers bring any request to that form (merging adjacent axes, and transposing with one copy when
the reduced axes are not adjacent), so one kernel per kind serves every rank and axis set.

The kernels are generic over dtype (float32, float64, int32, int64; the other integer types and
bool work too where noted).  The wrappers assume the framework validated their arguments: ``axes``
are normalised (non-negative, sorted, unique, < ndim) and dtypes are ones the op supports.
"""
import numpy as np

from ops.kernel_cache import njit

_jit = njit(error_model="numpy")
# Reassociation lets LLVM vectorise sums; NaN/inf semantics are untouched (no nnan/ninf flags).
_jit_reassoc = njit(error_model="numpy", fastmath={"reassoc", "nsz", "contract"})

SUM, PROD, MAX, MIN = 0, 1, 2, 3

# float32 partial sums run over blocks this long (vectorised, so each lane adds only a few dozen
# values and stays accurate); the block results are added in float64.
_SUM_BLOCK = 2048


# ---- kernels ---------------------------------------------------------------------------------
# Kernels index slices with loop counters that start at 0, so Numba's negative-index wraparound
# folds away and LLVM sees unit-stride loads (with an offset index it emits gathers).
@_jit_reassoc
def _sum_run(x, total):
    """Sum of 1-D contiguous x, blocked: partials in x's dtype, added into total's dtype."""
    n = x.size
    for start in range(0, n, _SUM_BLOCK):
        blk = x[start:min(start + _SUM_BLOCK, n)]
        s = blk[0]  # seeding with an element keeps the partial in x's dtype
        for i in range(1, blk.size):
            s += blk[i]
        total += s
    return total


# Max/min over a contiguous run: LLVM does not vectorise a NaN-propagating scalar max, but it does
# vectorise the same select over a row of independent lanes, so long runs are folded into
# _LANES accumulators (viewing the run as (n // _LANES, _LANES)) and the lanes reduced at the end.
_LANES = 64


@_jit
def _max_run(x, m, lanes):
    """Max of 1-D contiguous x and m; NaN if either holds one (like np.max).

    lanes: scratch array of _LANES elements of x's dtype.
    """
    n = x.size
    start = 0
    if n >= 4 * _LANES:
        lanes[:] = m
        start = n - n % _LANES
        for i in range(0, start, _LANES):
            blk = x[i:i + _LANES]
            for j in range(_LANES):
                v = blk[j]
                if (v > lanes[j]) | (v != v):
                    lanes[j] = v
        for j in range(_LANES):
            v = lanes[j]
            if (v > m) | (v != v):
                m = v
    for i in range(start, n):
        v = x[i]
        # v != v picks up a NaN; once m is NaN nothing replaces it
        if (v > m) | (v != v):
            m = v
    return m


@_jit
def _min_run(x, m, lanes):
    """Min of 1-D contiguous x and m; NaN if either holds one; lanes as for _max_run."""
    n = x.size
    start = 0
    if n >= 4 * _LANES:
        lanes[:] = m
        start = n - n % _LANES
        for i in range(0, start, _LANES):
            blk = x[i:i + _LANES]
            for j in range(_LANES):
                v = blk[j]
                if (v < lanes[j]) | (v != v):
                    lanes[j] = v
        for j in range(_LANES):
            v = lanes[j]
            if (v < m) | (v != v):
                m = v
    for i in range(start, n):
        v = x[i]
        if (v < m) | (v != v):
            m = v
    return m


@_jit
def _prod_run(x, p):
    for i in range(x.size):
        p *= x[i]
    return p


def _reduce_arb_kernel(op, name):
    """The ``reduce_arb`` kernel of one op: each op its own kernel, so that Numba compiles (and a
    cold start waits for) only the loops of the ops a program uses -- with ``op`` an argument,
    every kernel compiled the four ops' loops and helpers."""
    def kernel(x, init):
        A, R, B = x.shape
        flat = x.reshape(x.size)
        acc = np.full(B, init)
        out = np.empty((A, B), acc.dtype)
        lanes = np.empty(_LANES, x.dtype)
        for a in range(A):
            base = a * R * B
            if B == 1:
                run = flat[base:base + R]
                if op == SUM:
                    out[a, 0] = _sum_run(run, init)
                elif op == PROD:
                    out[a, 0] = _prod_run(run, init)
                elif op == MAX:
                    out[a, 0] = _max_run(run, init, lanes)
                else:
                    out[a, 0] = _min_run(run, init, lanes)
                continue
            acc[:] = init
            # r outer, b inner: both streams are contiguous and the b loop vectorises
            for r in range(R):
                row = flat[base + r * B:base + (r + 1) * B]
                if op == SUM:
                    for b in range(B):
                        acc[b] += row[b]
                elif op == PROD:
                    for b in range(B):
                        acc[b] *= row[b]
                elif op == MAX:
                    for b in range(B):
                        v = row[b]
                        if (v > acc[b]) | (v != v):
                            acc[b] = v
                else:
                    for b in range(B):
                        v = row[b]
                        if (v < acc[b]) | (v != v):
                            acc[b] = v
            for b in range(B):
                out[a, b] = acc[b]
        return out
    kernel.__name__ = kernel.__qualname__ = f"reduce_arb_{name}"
    return _jit_reassoc(kernel)


_REDUCE_ARB = {op: _reduce_arb_kernel(op, name)
               for op, name in ((SUM, "sum"), (PROD, "prod"), (MAX, "max"), (MIN, "min"))}


def reduce_arb(x, op, init):
    """Reduce the middle axis of a C-contiguous 3-D array ``x`` of shape (A, R, B).

    ``op`` is SUM, PROD, MAX or MIN; ``init`` is the identity and its dtype is the accumulator's
    (float64 for float sums/products, int64 for integer ones, x's dtype for MAX/MIN).  Returns a
    C-contiguous (A, B) array of init's dtype.  Empty R gives ``init``.
    """
    return _REDUCE_ARB[op](x, init)


@_jit
def arg_reduce_arb(x, find_min):
    """Index along the middle axis of (A, R, B) ``x`` of the max (or min) value; first on ties.

    A NaN counts as the extreme (the first NaN wins, like NumPy).  Requires R >= 1.  Returns an
    (A, B) int64 array.
    """
    A, R, B = x.shape
    out = np.zeros((A, B), np.int64)
    if B == 1:
        # rows: find the extreme with the vectorised runs, then its first position
        flat = x.reshape(x.size)
        lanes = np.empty(_LANES, x.dtype)
        for a in range(A):
            row = flat[a * R:(a + 1) * R]
            m = _min_run(row, row[0], lanes) if find_min else _max_run(row, row[0], lanes)
            if m != m:
                for i in range(R):
                    if row[i] != row[i]:
                        out[a, 0] = i
                        break
            else:
                for i in range(R):
                    if row[i] == m:
                        out[a, 0] = i
                        break
        return out
    best = np.empty(B, x.dtype)
    for a in range(A):
        for b in range(B):
            best[b] = x[a, 0, b]
        for r in range(1, R):
            for b in range(B):
                v = x[a, r, b]
                m = best[b]
                if find_min:
                    better = (v < m) | ((v != v) & (m == m))
                else:
                    better = (v > m) | ((v != v) & (m == m))
                if better:
                    best[b] = v
                    out[a, b] = r
    return out


@_jit
def scan_arb(x, op, init, exclusive, reverse):
    """Cumulative SUM or PROD along the middle axis of (A, R, B) ``x``, in x's dtype.

    ``init`` (x's dtype) is the identity that starts an exclusive scan.  Returns an (A, R, B)
    array.
    """
    A, R, B = x.shape
    out = np.empty_like(x)
    acc = np.empty(B, x.dtype)
    for a in range(A):
        acc[:] = init
        for step in range(R):
            r = R - 1 - step if reverse else step
            if exclusive:
                for b in range(B):
                    out[a, r, b] = acc[b]
            if op == SUM:
                for b in range(B):
                    acc[b] += x[a, r, b]
            else:
                for b in range(B):
                    acc[b] *= x[a, r, b]
            if not exclusive:
                for b in range(B):
                    out[a, r, b] = acc[b]
    return out


@_jit
def _log_add_exp(a, b):
    """log(exp(a) + exp(b)) without overflow; -inf + -inf gives -inf, not NaN."""
    if a != a or b != b:
        return np.nan
    hi, lo = (a, b) if a >= b else (b, a)
    if hi == -np.inf or hi == np.inf:
        return hi
    return hi + np.log1p(np.exp(lo - hi))


@_jit
def logsumexp_scan_arb(x, exclusive, reverse):
    """Cumulative log-sum-exp along the middle axis of (A, R, B) floating ``x``, accumulated in
    float64; an exclusive scan starts from -inf (the log of an empty sum)."""
    A, R, B = x.shape
    out = np.empty_like(x)
    acc = np.empty(B, np.float64)
    for a in range(A):
        acc[:] = -np.inf
        for step in range(R):
            r = R - 1 - step if reverse else step
            for b in range(B):
                total = _log_add_exp(acc[b], np.float64(x[a, r, b]))
                out[a, r, b] = acc[b] if exclusive else total
                acc[b] = total
    return out


# ---- layout helpers --------------------------------------------------------------------------
def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _as_arb(x, axes):
    """View/copy ``x`` as a C-contiguous (A, R, B) array with the ``axes`` flattened into R."""
    shape = x.shape
    if len(axes) == len(shape):   # every axis (the commonest, a loss): one run
        return np.ascontiguousarray(x).reshape(1, x.size, 1)
    # Axes of size 1 do not affect the memory layout, so ignore them when asking whether the
    # reduced axes form one adjacent block: from the first reduced axis of size > 1 to the last.
    R = 1
    first = last = -1
    for i in axes:
        R *= shape[i]
        if shape[i] != 1:
            if first < 0:
                first = i
            last = i
    if first < 0:  # every reduced axis has size 1
        return np.ascontiguousarray(x).reshape(x.size, 1, 1)
    reduced = set(axes)
    A = B = 1
    adjacent = True
    for i, d in enumerate(shape):
        if i > last:
            B *= d
        elif i < first:
            if i not in reduced:
                A *= d
        elif d != 1 and i not in reduced:
            adjacent = False
    if adjacent:
        return np.ascontiguousarray(x).reshape(A, R, B)
    kept = [i for i in range(len(shape)) if i not in reduced]
    A = _prod(shape[i] for i in kept)
    return np.ascontiguousarray(np.transpose(x, kept + list(axes))).reshape(A, R, 1)


def _out_shape(shape, axes, keepdims):
    if len(axes) == len(shape):
        return (1,) * len(shape) if keepdims else ()
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _acc_dtype(dtype):
    if dtype.kind == "f":
        return np.float64
    if dtype.kind == "u":
        return np.uint64
    return np.int64


def _reduce(x, axes, keepdims, op, init):
    x3 = _as_arb(x, axes)
    out = reduce_arb(x3, op, init)
    return out.reshape(_out_shape(x.shape, axes, keepdims))


# ---- public API ------------------------------------------------------------------------------
def reduce_sum(x, axes, keepdims=False):
    """Sum of ``x`` over ``axes`` (tf.reduce_sum).

    x: ndarray of float32/float64/int32/int64 (other ints work too); axes: tuple of normalised,
    sorted, unique axes (empty: no reduction, a copy is returned).  Output dtype is x's dtype;
    integer sums wrap like TF's.  float32 is accumulated in float64 across blocks, so it is
    accurate to about float32 rounding of the exact sum.  Empty reductions give 0.
    """
    x = np.asarray(x)
    if not axes:
        return x.copy()
    acc = _acc_dtype(x.dtype)
    return _reduce(x, axes, keepdims, SUM, acc(0)).astype(x.dtype, copy=False)


def reduce_prod(x, axes, keepdims=False):
    """Product of ``x`` over ``axes`` (tf.reduce_prod); same contract as reduce_sum; empty -> 1."""
    x = np.asarray(x)
    if not axes:
        return x.copy()
    acc = _acc_dtype(x.dtype)
    return _reduce(x, axes, keepdims, PROD, acc(1)).astype(x.dtype, copy=False)


def reduce_mean(x, axes, keepdims=False):
    """Mean of ``x`` over ``axes`` (tf.reduce_mean); same contract as reduce_sum.

    Integer means are the (wrapped) integer sum divided by the count, truncated toward zero, as
    TF does.  An empty reduction gives NaN for floats and 0 for integers.
    """
    x = np.asarray(x)
    if not axes:
        return x.copy()
    count = _prod(x.shape[i] for i in axes)
    acc = _acc_dtype(x.dtype)
    s = _reduce(x, axes, keepdims, SUM, acc(0))
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore", divide="ignore"):
            return (s / count if count else np.full(s.shape, np.nan)).astype(x.dtype, copy=False)
    s = s.astype(x.dtype)  # wrap first, like TF's integer sum
    if count == 0:
        return np.zeros_like(s)
    q = s // count
    # floor division rounds negatives down; TF truncates toward zero
    q += ((s % count) != 0) & (s < 0)
    return q.astype(x.dtype, copy=False)


def _max_identity(dtype):
    return dtype.type(-np.inf) if dtype.kind == "f" else np.iinfo(dtype).min


def _min_identity(dtype):
    return dtype.type(np.inf) if dtype.kind == "f" else np.iinfo(dtype).max


def reduce_max(x, axes, keepdims=False):
    """Maximum of ``x`` over ``axes`` (tf.reduce_max); NaN propagates.

    Same contract as reduce_sum.  Empty reductions give -inf (floats) or the dtype's minimum.
    """
    x = np.asarray(x)
    if not axes:
        return x.copy()
    return _reduce(x, axes, keepdims, MAX, x.dtype.type(_max_identity(x.dtype)))


def reduce_min(x, axes, keepdims=False):
    """Minimum of ``x`` over ``axes`` (tf.reduce_min); NaN propagates.

    Same contract as reduce_sum.  Empty reductions give +inf (floats) or the dtype's maximum.
    """
    x = np.asarray(x)
    if not axes:
        return x.copy()
    return _reduce(x, axes, keepdims, MIN, x.dtype.type(_min_identity(x.dtype)))


def reduce_any(x, axes, keepdims=False):
    """Logical or of bool ``x`` over ``axes`` (tf.reduce_any); empty -> False. Returns bool."""
    x = np.asarray(x)
    if not axes:
        return x.copy()
    u = np.ascontiguousarray(x).view(np.uint8)  # bool is one byte holding 0 or 1
    return _reduce(u, axes, keepdims, MAX, np.uint8(0)).astype(np.bool_)


def reduce_all(x, axes, keepdims=False):
    """Logical and of bool ``x`` over ``axes`` (tf.reduce_all); empty -> True. Returns bool."""
    x = np.asarray(x)
    if not axes:
        return x.copy()
    u = np.ascontiguousarray(x).view(np.uint8)
    return _reduce(u, axes, keepdims, MIN, np.uint8(1)).astype(np.bool_)


def _single_axis_arb(x, axis):
    x = np.ascontiguousarray(x)
    shape = x.shape
    return x.reshape(_prod(shape[:axis]), shape[axis], _prod(shape[axis + 1:]))


def _arg(x, axis, out_dtype, find_min):
    x = np.asarray(x)
    if x.shape[axis] == 0:
        raise ValueError("arg reduction over an empty axis %d of shape %s" % (axis, x.shape))
    out = arg_reduce_arb(_single_axis_arb(x, axis), find_min)
    shape = x.shape[:axis] + x.shape[axis + 1:]
    return out.reshape(shape).astype(out_dtype, copy=False)


def argmax(x, axis, out_dtype=np.int64):
    """Index of the largest value of ``x`` along ``axis`` (tf.math.argmax); first on ties.

    x: float/int ndarray of rank >= 1; axis: normalised (0 <= axis < ndim) with
    x.shape[axis] > 0 (the wrapper raises ValueError otherwise); out_dtype: int32 or int64.
    A NaN is the largest value (the first NaN's index is returned).
    """
    return _arg(x, axis, out_dtype, False)


def argmin(x, axis, out_dtype=np.int64):
    """Index of the smallest value of ``x`` along ``axis`` (tf.math.argmin); as argmax."""
    return _arg(x, axis, out_dtype, True)


def _scan(x, axis, exclusive, reverse, op, init):
    x = np.asarray(x)
    if x.size == 0:
        return x.copy()
    out = scan_arb(_single_axis_arb(x, axis), op, x.dtype.type(init), exclusive, reverse)
    return out.reshape(x.shape)


def cumsum(x, axis, exclusive=False, reverse=False):
    """Cumulative sum along ``axis`` (tf.math.cumsum), accumulated in x's dtype.

    x: float/int ndarray of rank >= 1; axis normalised. ``exclusive`` starts from 0 (the output at
    position i excludes x[i]); ``reverse`` scans from the end.  Output has x's shape and dtype.
    """
    return _scan(x, axis, exclusive, reverse, SUM, 0)


def cumprod(x, axis, exclusive=False, reverse=False):
    """Cumulative product along ``axis`` (tf.math.cumprod); as cumsum, exclusive starts from 1."""
    return _scan(x, axis, exclusive, reverse, PROD, 1)


def cumulative_logsumexp(x, axis, exclusive=False, reverse=False):
    """log(cumsum(exp(x))) along ``axis`` (tf.math.cumulative_logsumexp), without overflow.

    x: float32/float64 ndarray of rank >= 1; axis normalised; ``exclusive`` and ``reverse`` as
    for cumsum (an exclusive scan's first value is -inf).  Output has x's shape and dtype.
    """
    x = np.asarray(x)
    if x.size == 0:
        return x.copy()
    return logsumexp_scan_arb(_single_axis_arb(x, axis), exclusive, reverse).reshape(x.shape)
