"""Reductions by segment id, bin counts and confusion matrices: ``tf.math.segment_*``,
``tf.math.unsorted_segment_*``, ``tf.math.bincount``, ``tf.math.confusion_matrix``."""
import numpy as np

from hybridtf.api import array_ops as A
from hybridtf.api import math_ops as M
from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import sizes
from hybridtf.registry import segment as GR


# ---- sorted segments ----------------------------------------------------------------------------
def _sorted(op, data, segment_ids):
    return execute1(op, [as_tensor(data), as_tensor(segment_ids)], None)


def segment_sum(data, segment_ids, name=None):
    """Sums the rows of ``data`` that share a segment id.

    ``segment_ids`` (one per row, sorted, >= 0) number the output rows; the output has
    ``segment_ids[-1] + 1`` rows, and a segment no row belongs to gives 0.  Inside a
    ``tf.function`` that number is unknown (None).
    """
    return _sorted(GR.SEGMENT_SUM, data, segment_ids)


def segment_mean(data, segment_ids, name=None):
    """The mean of the rows of ``data`` that share a (sorted) segment id; 0 for an empty
    segment.  Integer data gives the mean rounded toward zero."""
    return _sorted(GR.SEGMENT_MEAN, data, segment_ids)


def segment_max(data, segment_ids, name=None):
    """The maximum of the rows of ``data`` that share a (sorted) segment id; 0 for an empty
    segment."""
    return _sorted(GR.SEGMENT_MAX, data, segment_ids)


def segment_min(data, segment_ids, name=None):
    """The minimum of the rows of ``data`` that share a (sorted) segment id; 0 for an empty
    segment."""
    return _sorted(GR.SEGMENT_MIN, data, segment_ids)


def segment_prod(data, segment_ids, name=None):
    """The product of the rows of ``data`` that share a (sorted) segment id; 1 for an empty
    segment."""
    return _sorted(GR.SEGMENT_PROD, data, segment_ids)


# ---- unsorted segments --------------------------------------------------------------------------
def _unsorted(op, data, segment_ids, num_segments):
    static, dynamic = sizes.split(num_segments, op.name, "num_segments")
    return execute1(op, [as_tensor(data), as_tensor(segment_ids)] + sizes.inputs(dynamic),
                    {"num_segments": static})


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums the slices of ``data`` into ``num_segments`` rows chosen by ``segment_ids``.

    ``segment_ids``' shape is a prefix of ``data``'s; slices with a negative id are dropped,
    an id >= num_segments is an error.  An empty segment gives 0.
    """
    return _unsorted(GR.UNSORTED_SEGMENT_SUM, data, segment_ids, num_segments)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of the slices of ``data`` in each of ``num_segments`` segments; 0 for an empty
    one.  Integer data gives a floating-point mean, as TF's division does."""
    return _unsorted(GR.UNSORTED_SEGMENT_MEAN, data, segment_ids, num_segments)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """The sum of the slices in each segment divided by the square root of their number (0 for
    an empty segment); floating-point data only."""
    return _unsorted(GR.UNSORTED_SEGMENT_SQRT_N, data, segment_ids, num_segments)


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """The maximum of the slices in each segment; an empty segment gives the lowest value of
    the dtype."""
    return _unsorted(GR.UNSORTED_SEGMENT_MAX, data, segment_ids, num_segments)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """The minimum of the slices in each segment; an empty segment gives the highest value of
    the dtype."""
    return _unsorted(GR.UNSORTED_SEGMENT_MIN, data, segment_ids, num_segments)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """The product of the slices in each segment; an empty segment gives 1."""
    return _unsorted(GR.UNSORTED_SEGMENT_PROD, data, segment_ids, num_segments)


# ---- bincount -----------------------------------------------------------------------------------
def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32, name=None,
             axis=None, binary_output=False):
    """Counts how often each value 0, 1, ... occurs in the non-negative integers ``arr``.

    The output has ``max(arr) + 1`` bins, at least ``minlength`` and at most ``maxlength``
    (values >= maxlength are not counted).  With ``weights`` (arr's shape) each occurrence adds
    its weight and the output takes their dtype; otherwise counts are of ``dtype``.
    ``binary_output`` gives 1 for every value that occurs.  ``axis=-1`` counts each row of a
    2-D ``arr`` separately; ``axis=None`` or 0 counts over all of it.
    """
    if axis not in (None, 0, -1):
        raise ValueError(f"bincount: axis must be None, 0 or -1, got {axis!r}.")
    if binary_output and weights is not None:
        raise ValueError("bincount: binary_output and weights are mutually exclusive; give one.")
    a = as_tensor(arr)
    if a.dtype not in (dtypes.int32, dtypes.int64):
        a = M.cast(a, dtypes.int32)   # as TF: bools and floats are counted as int32
    inputs = [a] if weights is None else [a, as_tensor(weights)]
    attrs = {"dtype": dtypes.as_dtype(dtype).as_numpy_dtype, "axis": -1 if axis == -1 else None,
             "binary_output": bool(binary_output), "weighted": weights is not None,
             "dynamic": ()}
    for what, value in (("minlength", minlength), ("maxlength", maxlength)):
        static, dynamic = (None, None) if value is None else sizes.split(value, "bincount", what)
        attrs[what] = static
        if dynamic is not None:   # known only when the function runs: an input
            attrs["dynamic"] += (what,)
            inputs.append(dynamic)
    return execute1(GR.BINCOUNT, inputs, attrs)


# ---- confusion_matrix ---------------------------------------------------------------------------
def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=dtypes.int32,
                     name=None):
    """The matrix whose entry [i, j] counts the examples of label i predicted as j.

    ``labels`` and ``predictions`` are vectors of class ids in [0, num_classes); without
    ``num_classes`` it is one more than the largest id.  ``weights`` (one per example) are
    summed instead of counting 1s; the result has ``dtype``, to which the weights are cast.
    """
    target = dtypes.as_dtype(dtype)
    lab = _class_ids(labels)
    pred = _class_ids(predictions)
    w = A.ones_like(lab, dtype=target) if weights is None else M.cast(as_tensor(weights), target)
    if num_classes is None:
        if type(lab) is Tensor and type(pred) is Tensor:
            # (the op checks that both are vectors)
            values = np.concatenate([lab.numpy().reshape(-1), pred.numpy().reshape(-1)])
            num_classes = int(values.max(initial=-1)) + 1
        else:
            largest = M.maximum(M.reduce_max(M.cast(lab, dtypes.int64)),
                                M.reduce_max(M.cast(pred, dtypes.int64)))
            num_classes = M.maximum(largest, -1) + 1   # no examples: no classes
    static, dynamic = sizes.split(num_classes, "confusion_matrix", "num_classes")
    return execute1(GR.CONFUSION_MATRIX, [lab, pred, w] + sizes.inputs(dynamic),
                    {"num_classes": static})


def _class_ids(value):
    t = as_tensor(value)
    if t.dtype not in (dtypes.int32, dtypes.int64):
        t = M.cast(t, dtypes.int64)   # as TF: float class ids are truncated
    return t
