"""Sorting and searching ops: sort (values and the sorting permutation), top_k, in_top_k,
searchsorted and unique.  Sorts are stable: equal values keep their order, as in TF."""
import numpy as np

from ops import sorting as kernels

from hybridtf.registry.public_ops import scatter_ops as X
from hybridtf.registry import Spec, checks, sizes

REAL = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
        "uint32", "uint64")


# ---- sort ---------------------------------------------------------------------------------------
def _sort_infer(specs, attrs):
    x, = specs
    name = attrs["name"]   # sort or argsort, for errors
    checks.allowed_dtype(name, x.dtype, REAL, "values")
    if x.shape is None:   # rank unknown while tracing: checked when the op runs
        return [Spec(None, x.dtype), Spec(None, np.dtype(np.int32))]
    if len(x.shape) == 0:
        checks.fail(name, "values must have rank >= 1, got a scalar.")
    checks.axis(name, attrs["axis"], len(x.shape))
    return [Spec(x.shape, x.dtype), Spec(x.shape, np.dtype(np.int32))]


def _sort_eager(arrays, attrs):
    x, = arrays
    axis = checks.axis(attrs["name"], attrs["axis"], x.ndim)
    order = kernels.sort_order(x, axis, attrs["descending"])
    return np.take_along_axis(x, order, axis), order.astype(np.int32)


def _sort_grad(record, grads):
    # Each value goes back to where it came from: the sorting permutation, inverted.
    if grads[0] is None:
        return (None,)
    return (X.put_along_axis(grads[0], record.outputs[1], record.inputs[0], record.attrs["axis"]),)


SORT = sizes.register_opaque("sort", _sort_eager, _sort_infer, _sort_grad, num_outputs=2)


# ---- top_k --------------------------------------------------------------------------------------
def _check_k(k, n):
    if k < 0:
        checks.fail("top_k", f"k must be >= 0, got {k}.")
    if n is not None and k > n:
        checks.fail("top_k", f"input must have at least k columns: its last dimension has {n}, "
                    f"k is {k}.")


def _top_k_infer(specs, attrs):
    x = specs[0]
    checks.allowed_dtype("top_k", x.dtype, REAL, "input")
    if x.shape is not None and len(x.shape) == 0:
        checks.fail("top_k", "input must have rank >= 1, got a scalar.")
    k = attrs["k"]
    if k is None:
        sizes.check_scalar("top_k", specs[1], "k")
    else:
        _check_k(k, None if x.shape is None else x.shape[-1])
    shape = None if x.shape is None else tuple(x.shape[:-1]) + (k,)
    return [Spec(shape, x.dtype), Spec(shape, np.dtype(attrs["index_type"]))]


def _top_k_eager(arrays, attrs):
    values, indices = kernels.top_k(arrays[0], sizes.value(arrays, attrs, "k"))
    return values, indices.astype(attrs["index_type"])


def _top_k_grad(record, grads):
    if grads[0] is None:
        return (None, None)
    return X.put_along_axis(grads[0], record.outputs[1], record.inputs[0], -1), None


TOP_K = sizes.register_opaque(
    "top_k", _top_k_eager, _top_k_infer, _top_k_grad, num_outputs=2,
    check_values=lambda arrays, attrs: _check_k(sizes.value(arrays, attrs, "k"),
                                                arrays[0].shape[-1]))


# ---- in_top_k -----------------------------------------------------------------------------------
def _in_top_k_infer(specs, attrs):
    targets, predictions = specs[:2]
    if predictions.dtype != np.float32:
        raise TypeError(f"in_top_k: predictions must be float32, got "
                        f"{checks.dtype_name(predictions.dtype)}; cast them with tf.cast.")
    checks.integer_dtype("in_top_k", targets.dtype, "targets")
    if predictions.shape is None or targets.shape is None:
        return [Spec((None,), np.dtype(np.bool_))]
    if len(predictions.shape) != 2 or len(targets.shape) != 1:
        checks.fail("in_top_k", f"predictions must be a matrix [batch, classes] and targets a "
                    f"vector [batch], got shapes {checks.fmt_shape(predictions.shape)} and "
                    f"{checks.fmt_shape(targets.shape)}.")
    rows, n = predictions.shape[0], targets.shape[0]
    if rows is not None and n is not None and rows != n:
        checks.fail("in_top_k", f"the first dimension of predictions ({rows}) must match the "
                    f"length of targets ({n}).")
    if attrs["k"] is None:
        sizes.check_scalar("in_top_k", specs[2], "k")
    return [Spec((rows if rows is not None else n,), np.dtype(np.bool_))]


IN_TOP_K = sizes.register_opaque(
    "in_top_k",
    lambda arrays, attrs: kernels.in_top_k(arrays[1], arrays[0], sizes.value(arrays, attrs, "k")),
    _in_top_k_infer)


# ---- searchsorted -------------------------------------------------------------------------------
def _searchsorted_infer(specs, attrs):
    sequence, values = specs
    checks.allowed_dtype("searchsorted", sequence.dtype, REAL, "sorted_sequence")
    checks.same_dtype("searchsorted", specs, names=("sorted_sequence", "values"))
    if sequence.shape is None or values.shape is None:
        return [Spec(values.shape, np.dtype(attrs["out_type"]))]
    if len(sequence.shape) == 0 or len(values.shape) == 0:
        checks.fail("searchsorted", f"sorted_sequence and values must have rank >= 1, got shapes "
                    f"{checks.fmt_shape(sequence.shape)} and {checks.fmt_shape(values.shape)}.")
    lead_s = checks.num_elements(sequence.shape[:-1])
    lead_v = checks.num_elements(values.shape[:-1])
    if lead_s is not None and lead_v is not None and lead_s != lead_v:
        checks.fail("searchsorted", f"sorted_sequence {checks.fmt_shape(sequence.shape)} and "
                    f"values {checks.fmt_shape(values.shape)} must have the same leading "
                    "dimensions (all but the last): each row of values is searched in its row "
                    "of sorted_sequence.")
    return [Spec(values.shape, np.dtype(attrs["out_type"]))]


SEARCHSORTED = sizes.register_opaque(
    "searchsorted",
    lambda arrays, attrs: kernels.searchsorted(arrays[0], arrays[1], attrs["side"] == "right",
                                               attrs["out_type"]),
    _searchsorted_infer)


# ---- unique -------------------------------------------------------------------------------------
def _unique_infer(specs, attrs):
    x, = specs
    if x.shape is not None and len(x.shape) != 1:
        checks.fail("unique", f"x must be a 1-D tensor, got shape {checks.fmt_shape(x.shape)}.")
    if x.dtype.kind not in "biufO":
        raise TypeError(f"unique: x has dtype {checks.dtype_name(x.dtype)}, which this op does "
                        "not support.")
    index = np.dtype(attrs["out_idx"])
    idx_shape = (None,) if x.shape is None else x.shape
    return [Spec((None,), x.dtype), Spec(idx_shape, index), Spec((None,), index)]


UNIQUE = sizes.register_opaque(
    "unique", lambda arrays, attrs: kernels.unique(arrays[0], attrs["out_idx"]), _unique_infer,
    num_outputs=3)
