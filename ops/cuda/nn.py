"""Softmax, log-softmax and the softmax cross-entropies over CUDA device arrays, along the last
axis (``ops.nn.logits``' kernels, on the GPU).

Each row is handled by ``lanes`` threads of a block (a power of two up to ``THREADS``, so a
block holds several short rows side by side): the row's max and its sum of exp(x - max)
are block reductions in shared memory (the sum in float64), then each thread writes its share of
the row.  Stable as on the CPU: the max is subtracted before exponentiating, and the max and
the log of the sum stay apart (their sum loses the log next to a huge max).
"""
import math

from numba import cuda, float64

from ops.cuda.launch import THREADS, empty, jit
from ops.cuda.reduce import MAX, SUM, block_shape, pow2_at_least, tree_reduce


@jit(device=True, cache=True)
def _row_stats(x, base, cols, here, lane, lanes, sm, ss):
    """(max, sum of exp(x - max) in float64) of the row of ``cols`` >= 1 elements at ``base``
    (NaN max if the row holds a NaN); ``here``: whether this thread's row exists.  Every thread
    of the block must call it; ``sm`` (x's dtype) and ``ss`` (float64) are shared scratch."""
    t = cuda.threadIdx.x
    first = t - lane
    if here:
        m = x[base + lane] if lane < cols else x[base]
        for c in range(lane + lanes, cols, lanes):
            v = x[base + c]
            if v > m or v != v:
                m = v
    else:
        m = x[0]
    sm[t] = m
    tree_reduce(sm, t, lane, 1, lanes, MAX)
    m = sm[first]
    s = 0.0
    for c in range(lane, cols if here else 0, lanes):
        s += math.exp(x[base + c] - m)
    ss[t] = s
    tree_reduce(ss, t, lane, 1, lanes, SUM)
    total = ss[first]
    cuda.syncthreads()   # sm and ss are free for the next row
    return m, total


@jit(device=True, cache=True)
def _write_row(x, out, base, cols, lane, lanes, m, total, log, valid):
    """The row's softmax (log-softmax if ``log``) into ``out``; NaN unless ``valid``."""
    if not valid:
        for c in range(lane, cols, lanes):
            out[base + c] = math.nan
    elif log:
        log_sum = math.log(total)
        for c in range(lane, cols, lanes):
            out[base + c] = (x[base + c] - m) - log_sum
    else:
        inv = 1.0 / total
        for c in range(lane, cols, lanes):
            out[base + c] = math.exp(x[base + c] - m) * inv


@jit(cache=True)
def _softmax_kernel(x, out, rows, cols, lanes, log):
    """Softmax (or log-softmax) of the rows of x viewed as (rows, cols >= 1)."""
    sm = cuda.shared.array(THREADS, x.dtype)
    ss = cuda.shared.array(THREADS, float64)
    lane = cuda.threadIdx.x % lanes
    groups = cuda.blockDim.x // lanes
    for task in range(cuda.blockIdx.x, (rows + groups - 1) // groups, cuda.gridDim.x):
        row = task * groups + cuda.threadIdx.x // lanes
        here = row < rows
        base = row * cols
        m, total = _row_stats(x, base, cols, here, lane, lanes, sm, ss)
        if here:
            _write_row(x, out, base, cols, lane, lanes, m, total, log, True)


@jit(cache=True)
def _sparse_xent_kernel(x, labels, loss, probs, rows, cols, lanes):
    """loss[r] = log-sum-exp(x[r]) - x[r, labels[r]] and probs = softmax(x); a label outside
    [0, cols) gives a NaN loss and a NaN probs row (as TF's GPU kernel)."""
    sm = cuda.shared.array(THREADS, x.dtype)
    ss = cuda.shared.array(THREADS, float64)
    lane = cuda.threadIdx.x % lanes
    groups = cuda.blockDim.x // lanes
    for task in range(cuda.blockIdx.x, (rows + groups - 1) // groups, cuda.gridDim.x):
        row = task * groups + cuda.threadIdx.x // lanes
        here = row < rows
        base = row * cols
        if cols == 0:   # no class holds any label
            if here and lane == 0:
                loss[row] = math.nan
            continue
        m, total = _row_stats(x, base, cols, here, lane, lanes, sm, ss)
        if here:
            label = labels[row]
            valid = label >= 0 and label < cols
            _write_row(x, probs, base, cols, lane, lanes, m, total, False, valid)
            if lane == 0:
                if valid:
                    loss[row] = math.log(total) - (float64(x[base + label]) - float64(m))
                else:
                    loss[row] = math.nan


@jit(cache=True)
def _dense_xent_kernel(x, labels, label_row_stride, label_col_stride, loss, probs, rows, cols,
                       lanes):
    """loss[r] = -sum(labels[r] * log_softmax(x[r])) (terms of label 0 skipped, as TF: 0 * inf
    adds nothing) and probs = softmax(x); labels[r, c] at r * label_row_stride + c *
    label_col_stride (strides 0 on broadcast dimensions)."""
    sm = cuda.shared.array(THREADS, x.dtype)
    ss = cuda.shared.array(THREADS, float64)
    t = cuda.threadIdx.x
    lane = t % lanes
    groups = cuda.blockDim.x // lanes
    for task in range(cuda.blockIdx.x, (rows + groups - 1) // groups, cuda.gridDim.x):
        row = task * groups + t // lanes
        here = row < rows
        base = row * cols
        if cols == 0:
            if here and lane == 0:
                loss[row] = 0.0
            continue
        m, total = _row_stats(x, base, cols, here, lane, lanes, sm, ss)
        s = 0.0
        if here:
            _write_row(x, probs, base, cols, lane, lanes, m, total, False, True)
            log_sum = math.log(total)
            for c in range(lane, cols, lanes):
                label = labels[row * label_row_stride + c * label_col_stride]
                if label != 0:
                    s += label * (log_sum - (float64(x[base + c]) - float64(m)))
        ss[t] = s
        tree_reduce(ss, t, lane, 1, lanes, SUM)
        if here and lane == 0:
            loss[row] = ss[t]
        cuda.syncthreads()


def _launch_shape(rows, cols):
    """((blocks, threads), lanes) for a kernel over ``rows`` rows of ``cols`` elements."""
    lanes = min(THREADS, pow2_at_least(cols))
    return block_shape(lanes, rows), lanes


def _softmax(x, log):
    out = empty(x.shape, x.dtype)
    if x.size:
        cols = x.shape[x.ndim - 1]   # (the simulator's shapes take no negative index)
        rows = x.size // cols
        grid, lanes = _launch_shape(rows, cols)
        _softmax_kernel[grid](x.reshape(x.size), out.reshape(out.size), rows, cols, lanes, log)
    return out


def softmax(x):
    """tf.nn.softmax over the last axis of device array ``x`` (float32/float64, rank >= 1)."""
    return _softmax(x, False)


def log_softmax(x):
    """tf.nn.log_softmax over the last axis of device array ``x`` (float32/float64, rank >= 1)."""
    return _softmax(x, True)


def sparse_softmax_cross_entropy(logits, labels):
    """tf.nn.sparse_softmax_cross_entropy_with_logits on device arrays -> (loss, probs).

    logits: (N, C) float32/float64; labels: (N,) int32/int64.  loss (N,) = logsumexp(logits) -
    logits[label], probs = softmax(logits), as ``ops.nn.sparse_softmax_cross_entropy``.  A label
    outside [0, C) gives NaN in its loss and its probs row (so in its gradient), as TF on a GPU.
    """
    rows, cols = logits.shape
    loss = empty((rows,), logits.dtype)
    probs = empty(logits.shape, logits.dtype)
    if rows:
        grid, lanes = _launch_shape(rows, cols)
        _sparse_xent_kernel[grid](logits.reshape(logits.size), labels, loss,
                                  probs.reshape(probs.size), rows, cols, lanes)
    return loss, probs


def softmax_cross_entropy(logits, labels):
    """tf.nn.softmax_cross_entropy_with_logits on device arrays -> (loss, probs).

    logits: (N, C) float32/float64; labels: logits' dtype, of a shape that broadcasts to (N, C)
    (rank <= 2).  loss (N,) = -sum(labels * log_softmax(logits), -1), probs = softmax(logits),
    as ``ops.nn.softmax_cross_entropy``.
    """
    rows, cols = logits.shape
    loss = empty((rows,), logits.dtype)
    probs = empty(logits.shape, logits.dtype)
    if rows:
        label_shape = (1,) * (2 - labels.ndim) + tuple(labels.shape)
        row_stride = label_shape[1] if label_shape[0] != 1 else 0
        col_stride = 1 if label_shape[1] != 1 else 0
        grid, lanes = _launch_shape(rows, cols)
        _dense_xent_kernel[grid](logits.reshape(logits.size), labels.reshape(labels.size),
                                 row_stride, col_stride, loss, probs.reshape(probs.size), rows,
                                 cols, lanes)
    return loss, probs
