"""Reductions by index: segment sums, means, products, maxima and minima, bin counts and
confusion matrices.

Data is viewed as C-contiguous (M, B) rows, one per segment id; each row is combined into row
``ids[m]`` of an (S, B) output.  Ids outside [0, S) are skipped (the caller decides which are
errors).  A value replaces a segment's running maximum unless it is smaller (so a NaN replaces
it, and the next number replaces the NaN), which gives TF's results for NaNs; minima likewise.
float16 data is reduced in float32.
"""
from math import prod

import numpy as np

from ops.kernel_cache import njit

_jit = njit()

SUM, PROD, MAX, MIN = 0, 1, 2, 3
REDUCTIONS = {"sum": SUM, "prod": PROD, "max": MAX, "min": MIN}


# ---- kernels ---------------------------------------------------------------------------------
@_jit
def segment_reduce_kernel(data, ids, reduction, out, counts):
    """Combines data[m] into out[ids[m]] (``reduction``: SUM, PROD, MAX or MIN) and counts the
    rows each segment receives.

    data: (M, B); ids: (M,) int; out: (S, B), pre-filled with the reduction's identity;
    counts: (S,) int64 zeros.
    """
    S = out.shape[0]
    M, B = data.shape
    for m in range(M):
        s = ids[m]
        if s < 0 or s >= S:
            continue
        counts[s] += 1
        src = data[m]
        dst = out[s]
        if reduction == SUM:
            for b in range(B):
                dst[b] += src[b]
        elif reduction == PROD:
            for b in range(B):
                dst[b] *= src[b]
        elif reduction == MAX:
            for b in range(B):
                if not (src[b] < dst[b]):
                    dst[b] = src[b]
        else:
            for b in range(B):
                if not (src[b] > dst[b]):
                    dst[b] = src[b]


@_jit
def bincount_kernel(arr, weights, weighted, binary, out):
    """out[r, arr[r, n]] += weights[r, n] (1 if not ``weighted``; set to 1 if ``binary``).

    arr: (R, N) non-negative ints; values >= out.shape[1] are skipped; weights: (R, N) (any
    shape when not weighted); out: (R, size) zeros.
    """
    R, N = arr.shape
    size = out.shape[1]
    for r in range(R):
        for n in range(N):
            v = arr[r, n]
            if v < 0 or v >= size:
                continue
            if binary:
                out[r, v] = 1
            elif weighted:
                out[r, v] += weights[r, n]
            else:
                out[r, v] += 1


# ---- public API ------------------------------------------------------------------------------
def identity(reduction, dtype):
    """The value a segment starts from: 0, 1, the dtype's lowest or its highest value."""
    dtype = np.dtype(dtype)
    if reduction == SUM:
        return dtype.type(0)
    if reduction == PROD:
        return dtype.type(1)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if reduction == MAX else info.max


def segment_reduce(data, segment_ids, num_segments, reduction):
    """Reduces the slices of ``data`` that share a segment id; returns (out, counts).

    data: numeric ndarray; segment_ids: int ndarray whose shape is a prefix of data's; ids
    outside [0, num_segments) are skipped.  ``reduction``: SUM, PROD, MAX or MIN.  out has
    shape (num_segments,) + data.shape[segment_ids.ndim:] and data's dtype; a segment that gets
    no slice holds the reduction's ``identity``.  counts (int64, (num_segments,)) says how many
    slices each segment got.
    """
    data = np.asarray(data)
    segment_ids = np.asarray(segment_ids, order="C")
    tail = data.shape[segment_ids.ndim:]
    M, B = segment_ids.size, prod(tail)
    work = np.float32 if data.dtype == np.float16 else data.dtype
    out = np.full((num_segments, B), identity(reduction, data.dtype), work)
    counts = np.zeros(num_segments, np.int64)
    if num_segments and M:   # (also when rows are empty: the counts are still wanted)
        rows = np.asarray(data, dtype=work, order="C").reshape(M, B)
        segment_reduce_kernel(rows, segment_ids.reshape(M), reduction, out, counts)
    return out.astype(data.dtype, copy=False).reshape((num_segments,) + tail), counts


def bincount(arr, size, weights=None, binary=False, dtype=np.int32):
    """Counts of each value of ``arr`` in [0, size), per row of a 2-D ``arr`` or over all of a
    1-D one; values >= size are skipped, negative values must have been refused.

    weights: None or an array of arr's shape (the output takes its dtype); binary: 1 where a
    value occurs.  Returns (size,) or (rows, size).
    """
    arr = np.asarray(arr)
    rows = arr.reshape(1, -1) if arr.ndim < 2 else arr
    rows = np.asarray(rows, order="C")
    weighted = weights is not None and not binary
    out_dtype = np.asarray(weights).dtype if weighted else np.dtype(dtype)
    work = np.float32 if out_dtype == np.float16 else out_dtype
    w = np.asarray(weights, dtype=work, order="C").reshape(rows.shape) if weighted \
        else np.zeros((1, 1), work)
    out = np.zeros((rows.shape[0], size), work)
    if out.size and rows.size:
        bincount_kernel(rows, w, weighted, bool(binary), out)
    out = out.astype(out_dtype, copy=False)
    return out if arr.ndim >= 2 else out.reshape(size)


def confusion_matrix(labels, predictions, num_classes, weights, dtype):
    """tf.math.confusion_matrix: out[labels[i], predictions[i]] += weights[i] (or 1).

    labels, predictions: 1-D ints in [0, num_classes) (checked by the caller); weights: None or
    1-D of the same length; the result is (num_classes, num_classes) of ``dtype``.
    """
    labels = np.asarray(labels, np.int64)
    pairs = labels * num_classes + np.asarray(predictions, np.int64)
    if weights is not None:
        weights = np.asarray(weights).astype(dtype)
    out = bincount(pairs, num_classes * num_classes, weights, dtype=dtype)
    return out.astype(dtype, copy=False).reshape(num_classes, num_classes)
