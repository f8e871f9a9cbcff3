"""Kernels over logits along the last axis: softmax and log-softmax (tf.nn.softmax,
tf.nn.log_softmax), their gradients, and the softmax cross-entropies
(tf.nn.sparse_softmax_cross_entropy_with_logits, tf.nn.softmax_cross_entropy_with_logits).

Every kernel works on rows (the input reshaped to (-1, last axis)); all are numerically stable
(the row's max is subtracted before exponentiating).  Float32/float64.
"""
import math

import numpy as np

from ops import threads
from ops.fast_exp import exp_nonpositive
from ops.kernel_cache import njit
from ops.nn.parts import check_operands

_jit = njit(error_model="numpy", nogil=True)


@_jit
def _sum_float64(v):
    """sum(v) in float64 over 8 interleaved partial sums (independent additions: a single
    running sum waits for each addition to finish before the next)."""
    n = v.shape[0]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    i = 0
    while i + 8 <= n:
        s0 += v[i]
        s1 += v[i + 1]
        s2 += v[i + 2]
        s3 += v[i + 3]
        s4 += v[i + 4]
        s5 += v[i + 5]
        s6 += v[i + 6]
        s7 += v[i + 7]
        i += 8
    s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    while i < n:
        s += v[i]
        i += 1
    return s


@_jit
def _max_or_nan(m, v):
    return v if (v > m) | (v != v) else m


@_jit
def _row_max(row):
    """The largest of a non-empty row, NaN if it holds one; 8 interleaved partial maxima (see
    ``_sum_float64``)."""
    n = row.shape[0]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = row[0]
    i = 0
    while i + 8 <= n:
        m0 = _max_or_nan(m0, row[i])
        m1 = _max_or_nan(m1, row[i + 1])
        m2 = _max_or_nan(m2, row[i + 2])
        m3 = _max_or_nan(m3, row[i + 3])
        m4 = _max_or_nan(m4, row[i + 4])
        m5 = _max_or_nan(m5, row[i + 5])
        m6 = _max_or_nan(m6, row[i + 6])
        m7 = _max_or_nan(m7, row[i + 7])
        i += 8
    m = _max_or_nan(_max_or_nan(_max_or_nan(m0, m1), _max_or_nan(m2, m3)),
                    _max_or_nan(_max_or_nan(m4, m5), _max_or_nan(m6, m7)))
    while i < n:
        m = _max_or_nan(m, row[i])
        i += 1
    return m


@_jit
def softmax_rows_part(x, out, log, shift, log_sum, lo, hi):
    """``softmax_rows_kernel`` for rows lo..hi, into out, shift and log_sum."""
    C = x.shape[1]
    for r in range(lo, hi):
        row = x[r]
        o = out[r]
        if C == 0:
            shift[r] = -np.inf
            log_sum[r] = 0.0
            continue
        m = _row_max(row)
        for c in range(C):   # vectorizes (see ops.fast_exp)
            o[c] = exp_nonpositive(row[c] - m)
        total = _sum_float64(o)
        ls = math.log(total)
        if log:
            for c in range(C):
                o[c] = row[c] - m - ls
        else:
            inv = 1.0 / total
            for c in range(C):
                o[c] = o[c] * inv
        shift[r] = m
        log_sum[r] = ls


@_jit
def softmax_rows_kernel(x, out, log):
    """Row-wise softmax (or log-softmax if ``log``) of 2-D x into out; returns each row's max
    ``shift`` and the log of the sum of exp(x - shift) ``log_sum`` (float64), whose sum is the
    row's log-sum-exp.  Stable: the row max is subtracted before exponentiating.  They stay
    apart because their sum loses log_sum next to a huge shift (logits of 1e20)."""
    R = x.shape[0]
    shift = np.empty(R, np.float64)
    log_sum = np.empty(R, np.float64)
    softmax_rows_part(x, out, log, shift, log_sum, 0, R)
    return shift, log_sum


@_jit
def sparse_xent_kernel(x, labels, shift, log_sum):
    """loss[r] = log_sum[r] - (x[r, labels[r]] - shift[r]) (log-sum-exp minus the label's
    logit) in x's dtype; NaN for a label outside [0, C) (never read out of bounds; TF's GPU
    kernel gives NaN there too)."""
    R, C = x.shape
    loss = np.empty(R, x.dtype)
    for r in range(R):
        lab = labels[r]
        loss[r] = log_sum[r] - (x[r, lab] - shift[r]) if 0 <= lab < C else np.nan
    return loss


@_jit
def dense_xent_kernel(x, labels, shift, log_sum):
    """loss[r] = sum_c labels[r, c] * (log_sum[r] - (x[r, c] - shift[r])), i.e.
    -sum(labels * log_softmax)."""
    R, C = x.shape
    loss = np.empty(R, x.dtype)
    for r in range(R):
        s = 0.0
        for c in range(C):
            lab = labels[r, c]
            if lab != 0:  # 0 * (inf) would be NaN; TF's label-0 terms contribute nothing
                s += lab * (log_sum[r] - (x[r, c] - shift[r]))
        loss[r] = s
    return loss


@_jit
def softmax_grad_kernel(y, dy, log):
    """Gradient through softmax rows: y (softmax or, if ``log``, log-softmax output), dy 2-D."""
    R, C = y.shape
    dx = np.empty_like(dy)
    for r in range(R):
        s = 0.0
        if log:
            for c in range(C):
                s += dy[r, c]
            for c in range(C):
                dx[r, c] = dy[r, c] - np.exp(y[r, c]) * s
        else:
            for c in range(C):
                s += dy[r, c] * y[r, c]
            for c in range(C):
                dx[r, c] = y[r, c] * (dy[r, c] - s)
    return dx


def _rows(x):
    x = np.ascontiguousarray(x)
    return x.reshape(-1, x.shape[-1]) if x.size else x.reshape(0, x.shape[-1])


# A part of a split softmax has at least this many elements (measured: ~1 ns each)
_PART_ELEMENTS = 1 << 17


def _softmax(x, log):
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    if x.size:
        rows, out_rows = _rows(x), out.reshape(-1, x.shape[-1])
        shift = np.empty(rows.shape[0], np.float64)
        log_sum = np.empty(rows.shape[0], np.float64)
        threads.split(lambda lo, hi: softmax_rows_part(rows, out_rows, log, shift, log_sum, lo,
                                                       hi),
                      rows.shape[0], -(-_PART_ELEMENTS // max(rows.shape[1], 1)))
    return out


def softmax(x):
    """tf.nn.softmax over the last axis; x float32/float64 of rank >= 1."""
    return _softmax(x, False)


def log_softmax(x):
    """tf.nn.log_softmax over the last axis; x float32/float64 of rank >= 1."""
    return _softmax(x, True)


def softmax_grad(y, dy):
    """dx = y * (dy - sum(dy * y, -1)) for y = softmax(x); shapes equal, rank >= 1."""
    y = np.ascontiguousarray(y)
    dy = np.ascontiguousarray(dy)
    check_operands(dy.shape == y.shape, "softmax_grad", y, dy)
    if y.size == 0:
        return np.zeros_like(dy)
    return softmax_grad_kernel(_rows(y), _rows(dy), False).reshape(y.shape)


def log_softmax_grad(y, dy):
    """dx = dy - exp(y) * sum(dy, -1) for y = log_softmax(x); shapes equal, rank >= 1."""
    y = np.ascontiguousarray(y)
    dy = np.ascontiguousarray(dy)
    check_operands(dy.shape == y.shape, "log_softmax_grad", y, dy)
    if y.size == 0:
        return np.zeros_like(dy)
    return softmax_grad_kernel(_rows(y), _rows(dy), True).reshape(y.shape)


def sparse_softmax_cross_entropy(logits, labels):
    """tf.nn.sparse_softmax_cross_entropy_with_logits -> (loss, probs).

    logits: (N, C) float32/float64 with C >= 1; labels: (N,) int32/int64, each in [0, C)
    (validated by the caller).  loss (N,) = logsumexp(logits) - logits[label];
    probs = softmax(logits) (what the gradient, probs - onehot(labels), needs).
    """
    logits = np.ascontiguousarray(logits)
    labels = np.ascontiguousarray(labels)
    probs = np.empty_like(logits)
    if logits.shape[0] == 0:
        return np.empty(0, logits.dtype), probs
    check_operands(labels.shape == logits.shape[:1], "sparse_softmax_cross_entropy", logits, labels)
    shift, log_sum = softmax_rows_kernel(logits, probs, False)
    return sparse_xent_kernel(logits, labels, shift, log_sum), probs


def softmax_cross_entropy(logits, labels):
    """tf.nn.softmax_cross_entropy_with_logits (last axis) -> (loss, probs).

    logits: (N, C) float; labels: (N, C) of logits' dtype (a distribution per row, not checked).
    loss (N,) = -sum(labels * log_softmax(logits)); probs = softmax(logits).
    """
    logits = np.ascontiguousarray(logits)
    labels = np.ascontiguousarray(labels, dtype=logits.dtype)
    probs = np.empty_like(logits)
    if logits.shape[0] == 0:
        return np.empty(0, logits.dtype), probs
    check_operands(labels.shape == logits.shape, "softmax_cross_entropy", logits, labels)
    shift, log_sum = softmax_rows_kernel(logits, probs, False)
    return dense_xent_kernel(logits, labels, shift, log_sum), probs
