"""Sorting and searching kernels: stable sorts along an axis, top-k, in-top-k, binary search,
unique values.

Arrays are viewed as C-contiguous (A, N, B) blocks where N is the axis sorted, so one kernel
serves every rank and axis.  Sorts are stable (equal values keep their order, which is the order
TF gives ties) and put NaNs after every number, or before every number when descending.
Floating-point keys of float16 are sorted as float32 (exactly: the conversion keeps the order),
bools as uint8.
"""
from math import prod

import numpy as np

from ops.kernel_cache import njit

_jit = njit()


def _sortable(x):
    """``x`` with a dtype the kernels can compare (bool as uint8, float16 as float32)."""
    if x.dtype == np.bool_:
        return x.view(np.uint8)
    if x.dtype == np.float16:
        return x.astype(np.float32)
    return x


# ---- kernels ---------------------------------------------------------------------------------
@_jit
def sort_kernel(x, descending, order):
    """order[a, :, b] = the stable sorting permutation of x[a, :, b].

    x: (A, N, B); order: (A, N, B) int64.  Descending order sorts the reversed fiber ascending
    and reverses the result, which keeps equal values in their original order.
    """
    A, N, B = x.shape
    fiber = np.empty(N, x.dtype)
    for a in range(A):
        for b in range(B):
            if descending:
                for i in range(N):
                    fiber[i] = x[a, N - 1 - i, b]
                perm = np.argsort(fiber, kind="mergesort")
                for i in range(N):
                    order[a, i, b] = N - 1 - perm[N - 1 - i]
            else:
                for i in range(N):
                    fiber[i] = x[a, i, b]
                perm = np.argsort(fiber, kind="mergesort")
                for i in range(N):
                    order[a, i, b] = perm[i]


@_jit
def _greater(a, b):
    """Whether a sorts before b in descending order (NaN first)."""
    return a > b or (a != a and b == b)


@_jit
def top_k_kernel(x, k, order):
    """order[r, :k] = the indices of the k largest entries of row r, largest first; equal values
    keep their order.

    x: (R, N); order: (R, k) int64.  Each entry is inserted into the row's k best so far (a
    later entry goes after equal ones): about N steps for a small k.
    """
    R, N = x.shape
    for r in range(R):
        kept = 0
        for i in range(N):
            v = x[r, i]
            if kept == k and (k == 0 or not _greater(v, x[r, order[r, k - 1]])):
                continue
            at = kept if kept < k else k - 1
            while at > 0 and _greater(v, x[r, order[r, at - 1]]):
                order[r, at] = order[r, at - 1]
                at -= 1
            order[r, at] = i
            if kept < k:
                kept += 1


@_jit
def in_top_k_kernel(predictions, targets, k, out):
    """out[r] = whether predictions[r, targets[r]] is among the k largest of row r.

    Ties at the boundary count as in the top k (fewer than k values are strictly larger).  A row
    whose target is out of range, or which holds a NaN or an infinity, gives False.
    """
    R, N = predictions.shape
    for r in range(R):
        t = targets[r]
        found = 0 <= t < N
        if found:
            for j in range(N):
                if not np.isfinite(predictions[r, j]):
                    found = False
                    break
        if found:
            target = predictions[r, t]
            larger = 0
            for j in range(N):
                if predictions[r, j] > target:
                    larger += 1
            found = larger < k
        out[r] = found


@_jit
def searchsorted_kernel(sequence, values, right, out):
    """out[r, m] = the first position i in sequence[r] where values[r, m] < sequence[r, i]
    (``right``) or values[r, m] <= sequence[r, i] (left); N when there is none.

    sequence: (R, N) sorted along N; values: (R, M).  The halving steps are those of C++'s
    lower_bound / upper_bound, so a NaN lands where TF puts it.
    """
    R, N = sequence.shape
    M = values.shape[1]
    for r in range(R):
        for m in range(M):
            v = values[r, m]
            first = 0
            count = N
            while count > 0:
                step = count // 2
                at = first + step
                if right:
                    go_right = not (v < sequence[r, at])
                else:
                    go_right = sequence[r, at] < v
                if go_right:
                    first = at + 1
                    count -= step + 1
                else:
                    count = step
            out[r, m] = first


@_jit
def unique_kernel(x, first, idx, counts):
    """The distinct values of the 1-D ``x`` in order of first occurrence; returns their number u.

    first[:u] receives where each distinct value first occurs, idx[i] the number of x[i]'s
    value among them, counts[:u] how often each occurs; first and counts have x's length.
    NaNs are all distinct (NaN != NaN); -0.0 equals 0.0.
    """
    n = x.shape[0]
    order = np.argsort(x, kind="mergesort")
    group = np.empty(n, np.int64)
    leaders = np.empty(n, np.int64)   # each group's first occurrence (stable sort: its minimum)
    groups = 0
    for i in range(n):
        j = order[i]
        if i == 0 or not (x[j] == x[order[i - 1]]):
            leaders[groups] = j
            groups += 1
        group[j] = groups - 1
    by_occurrence = np.argsort(leaders[:groups])
    rank = np.empty(groups, np.int64)
    for r in range(groups):
        rank[by_occurrence[r]] = r
    for g in range(groups):
        first[rank[g]] = leaders[g]
        counts[rank[g]] = 0
    for i in range(n):
        r = rank[group[i]]
        idx[i] = r
        counts[r] += 1
    return groups


# ---- public API ------------------------------------------------------------------------------
def sort_order(x, axis, descending):
    """The stable sorting permutation of ``x`` along ``axis`` (int64, x's shape).

    x: ndarray of a real or bool dtype, rank >= 1; axis normalised to [0, x.ndim).
    """
    x = np.asarray(_sortable(np.asarray(x)), order="C")
    A, N, B = prod(x.shape[:axis]), x.shape[axis], prod(x.shape[axis + 1:])
    order = np.empty((A, N, B), np.int64)
    if order.size:
        sort_kernel(x.reshape(A, N, B), bool(descending), order)
    return order.reshape(x.shape)


# Up to this k, top_k selects by insertion (about one comparison per entry); beyond, it sorts.
TOP_K_SELECT_MAX = 16


def top_k(x, k):
    """tf.math.top_k: the k largest entries of each last-axis row, largest first, and their
    indices (int64); equal values keep their order.  0 <= k <= x.shape[-1] (checked by the
    caller)."""
    x = np.asarray(x)
    if k > TOP_K_SELECT_MAX:
        order = np.asarray(sort_order(x, x.ndim - 1, True)[..., :k], order="C")
    else:
        n = x.shape[-1]
        rows = prod(x.shape[:-1])
        order = np.empty((rows, k), np.int64)
        if order.size:
            top_k_kernel(np.asarray(_sortable(x), order="C").reshape(rows, n), k, order)
        order = order.reshape(x.shape[:-1] + (k,))
    return np.take_along_axis(x, order, axis=-1), order


def in_top_k(predictions, targets, k):
    """tf.math.in_top_k: predictions (R, N) float, targets (R,) int -> (R,) bool."""
    predictions = np.asarray(predictions, order="C")
    targets = np.asarray(targets, order="C")
    out = np.empty(predictions.shape[0], np.bool_)
    if out.size:
        in_top_k_kernel(predictions, targets, int(k), out)
    return out


def searchsorted(sequence, values, right, out_dtype=np.int32):
    """tf.searchsorted: sequence (..., N) sorted on its last axis, values (..., M) of the same
    dtype with the same number of leading entries; returns positions (of values' shape and
    ``out_dtype``)."""
    sequence = np.asarray(sequence)
    values = np.asarray(values)
    N, M = sequence.shape[-1], values.shape[-1]
    R = prod(values.shape[:-1])
    seq2 = np.asarray(_sortable(sequence), order="C").reshape(R, N)
    val2 = np.asarray(_sortable(values), order="C").reshape(R, M)
    out = np.empty((R, M), out_dtype)
    if out.size:
        searchsorted_kernel(seq2, val2, bool(right), out)
    return out.reshape(values.shape)


def unique(x, out_dtype=np.int32):
    """tf.unique_with_counts on a 1-D array: (y, idx, count), y in order of first occurrence.

    Any dtype: numbers and bools in compiled code, strings (object arrays) by hashing.
    """
    x = np.asarray(x)
    n = x.shape[0]
    if x.dtype == object:
        return _unique_objects(x, out_dtype)
    first = np.empty(n, np.int64)
    idx = np.empty(n, out_dtype)
    counts = np.empty(n, out_dtype)
    u = unique_kernel(np.asarray(_sortable(x), order="C"), first, idx, counts) if n else 0
    return x[first[:u]], idx, counts[:u].copy()


def _unique_objects(x, out_dtype):
    first = {}
    idx = np.empty(x.shape[0], out_dtype)
    for i, value in enumerate(x.tolist()):
        idx[i] = first.setdefault(value, len(first))
    y = np.empty(len(first), object)
    y[:] = list(first)
    counts = np.bincount(idx, minlength=len(first)).astype(out_dtype)
    return y, idx, counts
