"""Reductions by segment id (sorted ``segment_*`` and ``unsorted_segment_*``), bin counts and
confusion matrices.

Sorted segment ops read their number of segments from the last id, so their first output
dimension is known only when they run (None inside a ``tf.function``).  Unsorted ones take
``num_segments`` -- an attribute, or an input when it is computed inside a traced function --
drop the rows with a negative id and refuse ids >= num_segments, as TF does on the CPU.
"""
import numpy as np

from ops import segment as kernels
from ops.cuda import array as cuda_kernels

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry.public_ops import scatter_ops as X
from hybridtf.registry.public_ops import segment_ops as S
from hybridtf.registry import Spec, checks, sizes
from hybridtf.registry import array as AR
from hybridtf.registry import scatter as XR

REAL = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
        "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")


def mean_dtype(dtype):
    """The dtype of an unsorted segment mean: integers divide as TF's truediv (small ones in
    float32, others in float64)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return dtype
    return np.dtype(np.float32 if dtype.itemsize <= 2 else np.float64)


def _divide(total, counts, reduction, dtype):
    """A segment mean (or sum / sqrt(count)): an empty segment gives 0; integers truncate
    toward zero, as C++ division does."""
    counts = np.maximum(counts, 1).reshape((-1,) + (1,) * (total.ndim - 1))
    if reduction == "sqrt_n":
        return (total / np.sqrt(counts)).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return (np.sign(total) * (np.abs(total) // counts)).astype(dtype)
    return (total.astype(dtype) / counts).astype(dtype)


def _reduce(data, ids, num_segments, reduction, out_dtype):
    kernel_reduction = kernels.REDUCTIONS.get(reduction, kernels.SUM)   # means sum first
    out, counts = kernels.segment_reduce(data, ids, num_segments, kernel_reduction)
    if reduction in ("mean", "sqrt_n"):
        return _divide(out, counts, reduction, out_dtype), counts
    return out, counts


# ---- gradients (written with public ops; shared by sorted and unsorted) -------------------------
def _gather_rows(values, ids):
    """values[ids] with zeros for negative ids (the rows an unsorted op dropped): a zero row is
    put in front of ``values`` and negative ids pick it."""
    padded = A.pad(values, [[1, 0]] + [[0, 0]] * (values.ndim - 1))
    return A.gather(padded, M.add(M.maximum(ids, -1), 1))


def _unsorted(record):
    return record.op.name.startswith("unsorted_")


def _num_segments(record):
    static = record.attrs["num_segments"]
    return static if static is not None else record.inputs[2]


def _segment_sum_like(record, values):
    """The segment sum of ``values`` (shaped like the op's data) over the op's own segments."""
    ids = record.inputs[1]
    if _unsorted(record):
        return S.unsorted_segment_sum(values, ids, _num_segments(record))
    return S.segment_sum(values, ids)


def _segment_prod_like(record, values):
    ids = record.inputs[1]
    if _unsorted(record):
        return S.unsorted_segment_prod(values, ids, _num_segments(record))
    return S.segment_prod(values, ids)


def _counts(record, dtype, rank):
    """How many rows each segment received, shaped to broadcast against the op's output."""
    ids = record.inputs[1]
    counts = _segment_sum_like(record, A.ones_like(ids, dtype=dtype))
    return A.reshape(counts, [-1] + [1] * (rank - 1))


def _sum_grad(record, grads):
    return (_gather_rows(grads[0], record.inputs[1]), None)


def _mean_grad(record, grads):
    g = grads[0]
    counts = M.maximum(_counts(record, g.dtype, g.ndim), 1)
    if record.op.name.endswith("sqrt_n"):
        counts = M.sqrt(counts)
    return (_gather_rows(g / counts, record.inputs[1]), None)


def _extremum_grad(record, grads):
    # The elements equal to their segment's result share its gradient equally.
    data, ids = record.inputs[:2]
    g = grads[0]
    # (A dropped row, of a negative id, may count as a hit but gathers a zero share.)
    hit = M.cast(M.equal(data, _gather_rows(record.outputs[0], ids)), g.dtype)
    share = M.div_no_nan(g, _segment_sum_like(record, hit))
    return (hit * _gather_rows(share, ids), None)


def _prod_grad(record, grads):
    # d(prod)/d(x_i) is the product of the segment's other elements: prod / x_i without zeros;
    # with one zero, the product of the rest at the zero and 0 elsewhere; with more, 0.
    data, ids = record.inputs[:2]
    g = grads[0]
    is_zero = M.equal(data, 0)
    safe = M.where(is_zero, A.ones_like(data), data)
    zero_count = _gather_rows(_segment_sum_like(record, M.cast(is_zero, g.dtype)), ids)
    nonzero_product = _gather_rows(_segment_prod_like(record, safe), ids)
    none = A.zeros_like(data)
    partial = M.where(is_zero, M.where(M.equal(zero_count, 1), nonzero_product, none),
                      M.where(M.equal(zero_count, 0), nonzero_product / safe, none))
    return (_gather_rows(g, ids) * partial, None)


_GRADS = {"sum": _sum_grad, "mean": _mean_grad, "sqrt_n": _mean_grad, "max": _extremum_grad,
          "min": _extremum_grad, "prod": _prod_grad}


# ---- sorted segments ----------------------------------------------------------------------------
def _sorted_infer(name, reduction):
    def infer(specs, attrs):
        data, ids = specs
        checks.allowed_dtype(name, data.dtype, REAL, "data")
        checks.integer_dtype(name, ids.dtype, "segment_ids")
        if data.shape is None or ids.shape is None:   # checked when the op runs
            return [Spec(None, data.dtype)]
        if len(ids.shape) != 1 or len(data.shape) == 0:
            checks.fail(name, f"segment_ids must be a vector and data at least a vector, got "
                        f"shapes {checks.fmt_shape(ids.shape)} and "
                        f"{checks.fmt_shape(data.shape)}.")
        if None not in (ids.shape[0], data.shape[0]) and ids.shape[0] != data.shape[0]:
            checks.fail(name, f"segment_ids (shape {checks.fmt_shape(ids.shape)}) must have "
                        f"one id per row of data (shape {checks.fmt_shape(data.shape)}).")
        return [Spec((None,) + tuple(data.shape[1:]), data.dtype)]
    return infer


def _sorted_check(name):
    def check(arrays, attrs):
        ids = arrays[1]
        if ids.size and ids.min() < 0:
            at = int(np.argmax(ids < 0))
            checks.fail(name, f"segment_ids[{at}] = {ids[at]} is negative; segment ids must be "
                        ">= 0.")
        if ids.size > 1:
            down = np.flatnonzero(ids[1:] < ids[:-1])
            if down.size:
                i = int(down[0]) + 1
                checks.fail(name, f"segment_ids must be sorted in increasing order, but "
                            f"segment_ids[{i}] = {ids[i]} follows segment_ids[{i - 1}] = "
                            f"{ids[i - 1]}; use tf.math.unsorted_segment_{name[8:]} for "
                            "unsorted ids.")
    return check


def _sorted_eager(reduction):
    def eager(arrays, attrs):
        data, ids = arrays
        num_segments = int(ids[-1]) + 1 if ids.size else 0
        out, counts = _reduce(data, ids, num_segments, reduction, data.dtype)
        if reduction in ("max", "min"):
            out[counts == 0] = 0   # as TF: an empty sorted segment gives 0
        return out
    return eager


def _sorted_op(reduction):
    name = f"segment_{reduction}"
    return sizes.register_opaque(name, _sorted_eager(reduction), _sorted_infer(name, reduction),
                                 _GRADS[reduction], check_values=_sorted_check(name))


SEGMENT_SUM = _sorted_op("sum")
SEGMENT_MEAN = _sorted_op("mean")
SEGMENT_MAX = _sorted_op("max")
SEGMENT_MIN = _sorted_op("min")
SEGMENT_PROD = _sorted_op("prod")


# ---- unsorted segments --------------------------------------------------------------------------
def _unsorted_infer(name, reduction):
    def infer(specs, attrs):
        data, ids = specs[:2]
        checks.allowed_dtype(name, data.dtype, FLOATS if reduction == "sqrt_n" else REAL, "data")
        checks.integer_dtype(name, ids.dtype, "segment_ids")
        dtype = mean_dtype(data.dtype) if reduction == "mean" else data.dtype
        if data.shape is None or ids.shape is None:   # checked when the op runs
            return [Spec(None, dtype)]
        n = len(ids.shape)
        if not XR.compatible(tuple(ids.shape), tuple(data.shape[:n])):
            checks.fail(name, f"segment_ids shape {checks.fmt_shape(ids.shape)} must be a prefix "
                        f"of data shape {checks.fmt_shape(data.shape)}.")
        num_segments = attrs["num_segments"]
        if num_segments is None:
            sizes.check_scalar(name, specs[2], "num_segments")
        elif num_segments < 0:
            checks.fail(name, f"num_segments must be >= 0, got {num_segments}.")
        return [Spec((num_segments,) + tuple(data.shape[n:]), dtype)]
    return infer


def _unsorted_check(name):
    def check(arrays, attrs):
        num_segments = sizes.value(arrays, attrs, "num_segments", 2)
        if num_segments < 0:
            checks.fail(name, f"num_segments must be >= 0, got {num_segments}.")
        AR.check_indices(name, arrays[1], num_segments, "segment_ids", drop_negative=True)
    return check


def _unsorted_eager(reduction):
    def eager(arrays, attrs):
        data, ids = arrays[:2]
        num_segments = sizes.value(arrays, attrs, "num_segments", 2)
        dtype = mean_dtype(data.dtype) if reduction == "mean" else data.dtype
        return _reduce(data, ids, num_segments, reduction, dtype)[0]
    return eager


def _unsorted_sum_cuda(arrays, attrs):
    return cuda_kernels.unsorted_segment_sum(arrays[0], arrays[1],
                                             sizes.value(arrays, attrs, "num_segments", 2))


def _unsorted_op(reduction, cuda_kernel=None):
    name = f"unsorted_segment_{reduction}"
    return sizes.register_opaque(name, _unsorted_eager(reduction),
                                 _unsorted_infer(name, reduction), _GRADS[reduction],
                                 cuda_kernel, check_values=_unsorted_check(name))


UNSORTED_SEGMENT_SUM = _unsorted_op("sum", _unsorted_sum_cuda)
UNSORTED_SEGMENT_MEAN = _unsorted_op("mean")
UNSORTED_SEGMENT_SQRT_N = _unsorted_op("sqrt_n")
UNSORTED_SEGMENT_MAX = _unsorted_op("max")
UNSORTED_SEGMENT_MIN = _unsorted_op("min")
UNSORTED_SEGMENT_PROD = _unsorted_op("prod")


# ---- bincount -----------------------------------------------------------------------------------
def bincount_size(arr, minlength, maxlength):
    """The number of bins: max(max(arr) + 1, minlength), at most maxlength."""
    size = int(arr.max()) + 1 if arr.size else 0
    if minlength is not None:
        size = max(size, minlength)
    if maxlength is not None:
        size = min(size, maxlength)
    return size


def _bincount_lengths(arrays, attrs):
    """(minlength, maxlength) when the op runs: attributes, or the inputs after arr and the
    weights, in that order, of those known only then."""
    position = 2 if attrs["weighted"] else 1
    lengths = []
    for name in ("minlength", "maxlength"):
        if attrs[name] is None and name in attrs["dynamic"]:
            lengths.append(sizes.value(arrays, attrs, name, position))
            position += 1
        else:
            lengths.append(attrs[name])
    return lengths


def _bincount_infer(specs, attrs):
    arr = specs[0]
    checks.integer_dtype("bincount", arr.dtype, "arr")
    minlength, maxlength = attrs["minlength"], attrs["maxlength"]
    if maxlength is not None and maxlength < 0:
        checks.fail("bincount", f"maxlength must be >= 0, got {maxlength}.")
    first = 2 if attrs["weighted"] else 1
    for name, spec in zip(attrs["dynamic"], specs[first:]):
        sizes.check_scalar("bincount", spec, name)
    if attrs["weighted"]:
        weights = specs[1]
        checks.allowed_dtype("bincount", weights.dtype, REAL, "weights")
        if arr.shape is not None and weights.shape is not None and \
                not XR.compatible(tuple(weights.shape), tuple(arr.shape)):
            checks.fail("bincount", f"weights (shape {checks.fmt_shape(weights.shape)}) must "
                        f"have the shape of arr ({checks.fmt_shape(arr.shape)}).")
    dtype = specs[1].dtype if attrs["weighted"] else np.dtype(attrs["dtype"])
    if not attrs["weighted"]:
        checks.allowed_dtype("bincount", dtype, REAL, "dtype")
    size = maxlength if maxlength is not None and minlength is not None and \
        minlength >= maxlength else None
    if attrs["axis"] != -1:
        return [Spec((size,), dtype)]
    if arr.shape is None:   # one row or many: known when the op runs
        return [Spec(None, dtype)]
    if len(arr.shape) > 2:
        checks.fail("bincount", f"with axis=-1, arr must have rank 1 or 2, got shape "
                    f"{checks.fmt_shape(arr.shape)}.")
    return [Spec(tuple(arr.shape[:-1]) + (size,), dtype)]


def _bincount_check(arrays, attrs):
    arr = arrays[0]
    maxlength = _bincount_lengths(arrays, attrs)[1]
    if maxlength is not None and maxlength < 0:
        checks.fail("bincount", f"maxlength must be >= 0, got {maxlength}.")
    if arr.size and arr.min() < 0:
        where = np.argwhere(arr < 0)[0]
        checks.fail("bincount", f"arr[{','.join(str(i) for i in where)}] = {arr[tuple(where)]} "
                    "is negative; values to count must be >= 0.")


def _bincount_eager(arrays, attrs):
    arr = arrays[0]
    weights = arrays[1] if attrs["weighted"] else None
    size = bincount_size(arr, *_bincount_lengths(arrays, attrs))
    if attrs["axis"] != -1 or arr.ndim < 2:
        arr = arr.reshape(-1)
        weights = None if weights is None else weights.reshape(-1)
    return kernels.bincount(arr, size, weights, attrs["binary_output"], attrs["dtype"])


BINCOUNT = sizes.register_opaque("bincount", _bincount_eager, _bincount_infer,
                                 check_values=_bincount_check)


# ---- confusion_matrix ---------------------------------------------------------------------------
def _confusion_infer(specs, attrs):
    labels, predictions, weights = specs[:3]
    for what, spec in (("labels", labels), ("predictions", predictions)):
        checks.integer_dtype("confusion_matrix", spec.dtype, what)
    shapes = [(None,) if s.shape is None else s.shape for s in (labels, predictions, weights)]
    if any(len(s) != 1 for s in shapes) or len({s[0] for s in shapes} - {None}) > 1:
        checks.fail("confusion_matrix", "labels, predictions and weights must be vectors of one "
                    "length, got shapes " + ", ".join(checks.fmt_shape(s) for s in shapes) + ".")
    n = attrs["num_classes"]
    if n is not None and n < 0:
        checks.fail("confusion_matrix", f"num_classes must be >= 0, got {n}.")
    return [Spec((n, n), weights.dtype)]


def _confusion_check(arrays, attrs):
    n = sizes.value(arrays, attrs, "num_classes", 3)
    if n < 0:
        checks.fail("confusion_matrix", f"num_classes must be >= 0, got {n}.")
    AR.check_indices("confusion_matrix", arrays[0], n, "labels")
    AR.check_indices("confusion_matrix", arrays[1], n, "predictions")


def _confusion_grad(record, grads):
    labels, predictions = record.inputs[:2]
    pairs = A.stack([M.cast(labels, np.int64), M.cast(predictions, np.int64)], axis=1)
    return None, None, X.gather_nd(grads[0], pairs)


CONFUSION_MATRIX = sizes.register_opaque(
    "confusion_matrix",
    lambda arrays, attrs: kernels.confusion_matrix(
        arrays[0], arrays[1], sizes.value(arrays, attrs, "num_classes", 3), arrays[2],
        arrays[2].dtype),
    _confusion_infer, _confusion_grad, check_values=_confusion_check)
