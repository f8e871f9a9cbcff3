"""Band parts and diagonals of (batches of) matrices: matrix_band_part, matrix_diag,
matrix_diag_part and matrix_set_diag, with TF's ranges of diagonals ``k = (k_lo, k_hi)`` and its
alignments of short diagonals.

Attributes: ``k`` is a pair (k_lo, k_hi), and ``align`` one of ALIGNMENTS.  A single diagonal
(k_lo == k_hi) is a tensor without the axis of diagonals, as in TF.
"""
import numpy as np

from ops import diagonals as kernels

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import execute as EX
from hybridtf.registry.public_ops import linalg_ops as LA
from hybridtf.registry import OpDef, Spec, checks, register

ALIGNMENTS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def _flags(align):
    """(superdiagonals right-aligned, subdiagonals right-aligned)."""
    return align.startswith("RIGHT"), align.endswith("RIGHT")


def _batched(array, inner):
    """``array`` as a C-contiguous (batch, *inner) array."""
    batch = int(np.prod(array.shape[:array.ndim - len(inner)]))
    return checks.contiguous(array).reshape((batch,) + tuple(inner))


def _matrix_rank_at_least(op_name, spec, rank, what):
    if spec.shape is not None and len(spec.shape) < rank:
        checks.fail(op_name, f"{what} must have rank >= {rank}, got shape "
                    f"{checks.fmt_shape(spec.shape)} ({checks.dtype_name(spec.dtype)}).")


def _range_k(op_name, k):
    lo, hi = k
    if lo > hi:
        checks.fail(op_name, f"k = ({lo}, {hi}): the lower diagonal index must not exceed the "
                    "upper one.")
    return lo, hi


def _check_k_in_matrix(op_name, k, rows, cols):
    """Every diagonal of the range must exist in a rows x cols matrix: -rows < d < cols.  An
    empty matrix has only empty diagonals, any of which may be named (so that the gradient of
    ``diag`` of empty diagonals is defined)."""
    if rows is None or cols is None or rows == 0 or cols == 0:
        return
    for d in k:
        if not -rows < d < cols:
            checks.fail(op_name, f"k = {d} is out of range for a {rows} x {cols} matrix; its "
                        f"diagonals are numbered {-rows + 1} to {cols - 1}.")


def longest_diagonal(rows, cols, k):
    """The length of the longest diagonal in the range k of a rows x cols matrix (None if a
    dimension is unknown)."""
    if rows is None or cols is None:
        return None
    lo, hi = k
    return max(min(rows + min(hi, 0), cols - max(lo, 0)), 0)


def _diagonals_shape(batch, k, length):
    single = k[0] == k[1]
    return tuple(batch) + ((length,) if single else (k[1] - k[0] + 1, length))


def _as_diagonals(array, k):
    """A diagonals array (batch.., [D,] length) as (batch, D, length)."""
    if k[0] == k[1]:
        array = array[..., None, :]
    return _batched(array, array.shape[-2:])


# ---- band part ---------------------------------------------------------------------------------
# Inputs: the matrices, num_lower and num_upper (integer scalars, known only at run time when
# traced).
def _band_infer(specs, attrs):
    x, num_lower, num_upper = specs
    name = "matrix_band_part"
    _matrix_rank_at_least(name, x, 2, "input")
    for what, spec in (("num_lower", num_lower), ("num_upper", num_upper)):
        checks.allowed_dtype(name, spec.dtype, ("int32", "int64"), what)
        if spec.shape is not None and len(spec.shape) != 0:
            checks.fail(name, f"{what} must be a scalar, got shape {checks.fmt_shape(spec.shape)}.")
    return [Spec(x.shape, x.dtype)]


def _band_check(arrays, attrs):
    x, num_lower, num_upper = arrays
    rows, cols = x.shape[-2:]
    for what, value, limit, dim in (("num_lower", num_lower, rows, "rows"),
                                    ("num_upper", num_upper, cols, "columns")):
        if int(value) > limit:
            checks.fail("matrix_band_part", f"{what} = {int(value)} must be negative (the whole "
                        f"triangle) or at most the number of {dim}, {limit} (input shape "
                        f"{checks.fmt_shape(x.shape)}).")


def _band_eager(arrays, attrs):
    x, num_lower, num_upper = arrays
    x3 = _batched(x, x.shape[-2:])
    out = np.empty_like(x3)
    kernels.band_part(x3, int(num_lower), int(num_upper), out)
    return out.reshape(x.shape)


def _band_grad(record, grads):
    _, num_lower, num_upper = record.inputs
    return LA.band_part(grads[0], num_lower, num_upper), None, None


BAND_PART = register(OpDef("matrix_band_part", "opaque", {"cpu": _band_eager}, _band_infer,
                           _band_grad, check_values=_band_check))


# ---- diag: a matrix from diagonals ---------------------------------------------------------------
def diag_output_size(op_name, length, k, num_rows, num_cols):
    """(rows, cols) of the matrix that diagonals of ``length`` in the range k fill, given the
    requested sizes (-1: the smallest that holds them, square when neither is given)."""
    lo, hi = k
    if length is None:
        return (None if num_rows == -1 else num_rows), (None if num_cols == -1 else num_cols)
    min_rows = length - min(hi, 0)
    min_cols = length + max(lo, 0)
    if num_rows == -1 and num_cols == -1:
        return (max(min_rows, min_cols),) * 2
    rows = min_rows if num_rows == -1 else num_rows
    cols = min_cols if num_cols == -1 else num_cols
    if rows < min_rows or cols < min_cols:
        checks.fail(op_name, f"a {rows} x {cols} matrix is too small for diagonals of length "
                    f"{length} at k = ({lo}, {hi}): it needs at least {min_rows} rows and "
                    f"{min_cols} columns.")
    if rows != min_rows and cols != min_cols:
        checks.fail(op_name, f"num_rows = {rows} and num_cols = {cols} do not fit diagonals of "
                    f"length {length} at k = ({lo}, {hi}): the rows must be {min_rows} or the "
                    f"columns {min_cols}, so that the longest diagonal has that length.")
    return rows, cols


def _diag_infer(specs, attrs):
    diagonal, padding = specs
    name = "matrix_diag"
    k = _range_k(name, attrs["k"])
    single = k[0] == k[1]
    _matrix_rank_at_least(name, diagonal, 1 if single else 2, "diagonal")
    _scalar_padding(name, diagonal, padding)
    if diagonal.shape is None:
        return [Spec(None, diagonal.dtype)]
    count = None if single else diagonal.shape[-2]
    if count is not None and count != k[1] - k[0] + 1:
        checks.fail(name, f"diagonal of shape {checks.fmt_shape(diagonal.shape)} holds {count} "
                    f"diagonals, but k = ({k[0]}, {k[1]}) names {k[1] - k[0] + 1}.")
    rows, cols = diag_output_size(name, diagonal.shape[-1], k, attrs["num_rows"],
                                  attrs["num_cols"])
    batch = diagonal.shape[:-1] if single else diagonal.shape[:-2]
    return [Spec(tuple(batch) + (rows, cols), diagonal.dtype)]


def _scalar_padding(op_name, x, padding):
    if padding.shape is not None and len(padding.shape) != 0:
        checks.fail(op_name, f"padding_value must be a scalar, got shape "
                    f"{checks.fmt_shape(padding.shape)}.")
    if padding.dtype != x.dtype:
        checks.fail(op_name, f"padding_value has dtype {checks.dtype_name(padding.dtype)} but the "
                    f"input has dtype {checks.dtype_name(x.dtype)}.")


def _diag_eager(arrays, attrs):
    diagonal, padding = arrays
    k = attrs["k"]
    single = k[0] == k[1]
    rows, cols = diag_output_size("matrix_diag", diagonal.shape[-1], k, attrs["num_rows"],
                                  attrs["num_cols"])
    batch = diagonal.shape[:-1] if single else diagonal.shape[:-2]
    d3 = _as_diagonals(diagonal, k)
    out = np.empty((d3.shape[0], rows, cols), diagonal.dtype)
    kernels.matrix_diag(d3, k[0], k[1], padding.reshape(1), *_flags(attrs["align"]), out)
    return out.reshape(tuple(batch) + (rows, cols))


def _diag_grad(record, grads):
    # The diagonals the result took them to, read back with the same length (which also holds
    # where part of the range fell outside the result, or the diagonals are empty).
    a = record.attrs
    g = grads[0]
    length = record.inputs[0]._shape_tuple[-1]
    zero = A.zeros([], g.dtype)
    return EX.execute1(DIAG_PART, [g, zero], {"k": a["k"], "align": a["align"],
                                              "length": length}), None


DIAG = register(OpDef("matrix_diag", "opaque", {"cpu": _diag_eager}, _diag_infer, _diag_grad))


# ---- diag_part: diagonals read from a matrix -------------------------------------------------
# Attribute ``length`` (None from tf.linalg.diag_part): the rows of diagonals are that long, and
# diagonals outside the matrix are padding -- how diag's gradient reads diagonals back.
def _diag_part_length(op_name, rows, cols, attrs):
    if attrs["length"] is not None:
        return attrs["length"]
    _check_k_in_matrix(op_name, attrs["k"], rows, cols)
    return longest_diagonal(rows, cols, attrs["k"])


def _diag_part_infer(specs, attrs):
    x, padding = specs
    name = "matrix_diag_part"
    k = _range_k(name, attrs["k"])
    _matrix_rank_at_least(name, x, 2, "input")
    _scalar_padding(name, x, padding)
    if x.shape is None:
        return [Spec(None, x.dtype)]
    length = _diag_part_length(name, *x.shape[-2:], attrs)
    return [Spec(_diagonals_shape(x.shape[:-2], k, length), x.dtype)]


def _diag_part_eager(arrays, attrs):
    x, padding = arrays
    k = attrs["k"]
    rows, cols = x.shape[-2:]
    length = _diag_part_length("matrix_diag_part", rows, cols, attrs)
    x3 = _batched(x, (rows, cols))
    out = np.empty((x3.shape[0], k[1] - k[0] + 1, length), x.dtype)
    kernels.matrix_diag_part(x3, k[0], k[1], padding.reshape(1), *_flags(attrs["align"]), out)
    return out.reshape(_diagonals_shape(x.shape[:-2], k, length))


def _diag_part_grad(record, grads):
    # Each diagonal's gradient goes back where it was read (zeros elsewhere, padding dropped).
    a = record.attrs
    x = record.inputs[0]
    g = grads[0]
    if a["length"] is not None:   # diagonals outside the matrix: only their part inside
        rows, cols = x._shape_tuple[-2:]
        return LA.diag(g, k=a["k"], num_rows=rows, num_cols=cols, align=a["align"]), None
    return EX.execute1(SET_DIAG, [A.zeros_like(x), g], {"k": a["k"], "align": a["align"]}), None


DIAG_PART = register(OpDef("matrix_diag_part", "opaque", {"cpu": _diag_part_eager},
                           _diag_part_infer, _diag_part_grad))


# ---- set_diag: diagonals written into a matrix -----------------------------------------------
def _set_diag_infer(specs, attrs):
    x, diagonal = specs
    name = "matrix_set_diag"
    k = _range_k(name, attrs["k"])
    _matrix_rank_at_least(name, x, 2, "input")
    checks.same_dtype(name, specs, names=("input", "diagonal"))
    if x.shape is None or diagonal.shape is None:
        return [Spec(x.shape, x.dtype)]
    rows, cols = x.shape[-2:]
    _check_k_in_matrix(name, k, rows, cols)
    expected = _diagonals_shape(x.shape[:-2], k, longest_diagonal(rows, cols, k))
    if len(diagonal.shape) != len(expected) or any(
            d is not None and e is not None and d != e for d, e in zip(diagonal.shape, expected)):
        checks.fail(name, f"diagonal must have shape {checks.fmt_shape(expected)} to set k = "
                    f"({k[0]}, {k[1]}) of an input of shape {checks.fmt_shape(x.shape)}, got "
                    f"{checks.fmt_shape(diagonal.shape)}.")
    return [Spec(x.shape, x.dtype)]


def _set_diag_eager(arrays, attrs):
    x, diagonal = arrays
    k = attrs["k"]
    x3 = _batched(x, x.shape[-2:])
    out = np.empty_like(x3)
    kernels.matrix_set_diag(x3, _as_diagonals(diagonal, k), k[0], k[1],
                            *_flags(attrs["align"]), out)
    return out.reshape(x.shape)


def _set_diag_grad(record, grads):
    g, = grads
    a = record.attrs
    diagonal = record.inputs[1]
    return (LA.set_diag(g, A.zeros_like(diagonal), k=a["k"], align=a["align"]),
            LA.diag_part(g, k=a["k"], align=a["align"]))


SET_DIAG = register(OpDef("matrix_set_diag", "opaque", {"cpu": _set_diag_eager}, _set_diag_infer,
                          _set_diag_grad))
