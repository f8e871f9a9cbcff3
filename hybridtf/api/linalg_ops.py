"""``tf.linalg``: inverses, determinants, solves, decompositions, diagonals and bands, traces and
norms.  Every function takes batches of matrices (the last two dimensions) as TF's do."""
import collections
import numbers
import operator

import numpy as np

from hybridtf.api import array_ops as A
from hybridtf.api import math_ops as M
from hybridtf.eager.execute import as_tensor, binary_operands, execute, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import checks
from hybridtf.registry import decompositions as D
from hybridtf.registry import diagonals as G

LogMatrixDeterminant = collections.namedtuple("LogMatrixDeterminant",
                                              ["sign", "log_abs_determinant"])
Qr = collections.namedtuple("Qr", ["q", "r"])


def _flag(op_name, value, what):
    """A boolean attribute: a Python (or NumPy) bool, as TF requires."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op_name}: {what} must be a Python bool, got {value!r}.")
    return bool(value)


# ---- inverse, determinants, solves -------------------------------------------------------------
def inv(input, adjoint=False, name=None):  # noqa: A002 - TF's name
    """The inverse of each square matrix in ``input`` (of its transpose if ``adjoint``).

    Raises InvalidArgumentError when a matrix is not invertible.
    """
    return execute1(D.INVERSE, [as_tensor(input)],
                    {"adjoint": _flag("matrix_inverse", adjoint, "adjoint")})


def det(input, name=None):  # noqa: A002 - TF's name
    """The determinant of each square matrix in ``input``: shape ``input.shape[:-2]``."""
    return execute1(D.DETERMINANT, [as_tensor(input)], None)


def slogdet(input, name=None):  # noqa: A002 - TF's name
    """The sign and the log of the absolute value of each determinant, as
    ``(sign, log_abs_determinant)``: the stable way to the log of a large determinant."""
    sign, log_abs = execute(D.LOG_DETERMINANT, [as_tensor(input)], None)
    return LogMatrixDeterminant(sign, log_abs)


def logdet(matrix, name=None):
    """The log of the determinant of each Hermitian positive definite matrix, from its Cholesky
    factor."""
    chol = cholesky(matrix)
    return 2.0 * M.reduce_sum(M.log(diag_part(chol)), axis=-1)


def solve(matrix, rhs, adjoint=False, name=None):
    """X with ``matrix @ X = rhs`` (``matrix^T @ X = rhs`` if ``adjoint``), for square matrices
    [..., M, M] and right-hand sides [..., M, K] with the same batch dimensions."""
    a, b = binary_operands("matrix_solve", matrix, rhs)
    return execute1(D.SOLVE, [a, b], {"adjoint": _flag("matrix_solve", adjoint, "adjoint")})


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """X with ``matrix @ X = rhs`` for triangular matrices, reading only the lower (``lower``) or
    upper triangle of ``matrix``; ``adjoint`` solves with its transpose.  Batch dimensions
    broadcast.  A zero on the diagonal gives infinities or NaNs, as in TF."""
    a, b = binary_operands("matrix_triangular_solve", matrix, rhs)
    name = "matrix_triangular_solve"
    return execute1(D.TRIANGULAR_SOLVE, [a, b], {"lower": _flag(name, lower, "lower"),
                                                 "adjoint": _flag(name, adjoint, "adjoint")})


def cholesky(input, name=None):  # noqa: A002 - TF's name
    """The lower triangular Cholesky factor L (``input = L @ L^T``) of each symmetric positive
    definite matrix, reading only the lower triangle.  A matrix that is not positive definite
    gets NaNs in its factor (TF's CPU behaviour)."""
    return execute1(D.CHOLESKY, [as_tensor(input)], None)


def cholesky_solve(chol, rhs, name=None):
    """X with ``A @ X = rhs``, given ``chol``, the Cholesky factor of A (``tf.linalg.cholesky``)."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


# ---- decompositions -----------------------------------------------------------------------------
def qr(input, full_matrices=False, name=None):  # noqa: A002 - TF's name
    """``(q, r)`` with ``input = q @ r``, q with orthonormal columns, r upper triangular.

    For a [..., M, N] input, q is [..., M, P] and r [..., P, N], with P = min(M, N), or M when
    ``full_matrices``.
    """
    q, r = execute(D.QR, [as_tensor(input)],
                   {"full_matrices": _flag("qr", full_matrices, "full_matrices")})
    return Qr(q, r)


def eigh(tensor, name=None):
    """``(e, v)``: the eigenvalues (ascending) and eigenvectors (the columns of v) of each
    self-adjoint matrix, reading only its lower triangle."""
    e, v = execute(D.EIGH, [as_tensor(tensor)], None)
    return e, v


def eigvalsh(tensor, name=None):
    """The eigenvalues (ascending) of each self-adjoint matrix, reading its lower triangle."""
    return execute1(D.EIGVALSH, [as_tensor(tensor)], None)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """The singular value decomposition ``tensor = u @ diag(s) @ transpose(v)``.

    Returns ``(s, u, v)`` (only ``s``, descending, when ``compute_uv`` is False).  For a
    [..., M, N] input with P = min(M, N): s is [..., P]; u is [..., M, P] and v [..., N, P], or
    [..., M, M] and [..., N, N] when ``full_matrices``.
    """
    x = as_tensor(tensor)
    full_matrices = _flag("svd", full_matrices, "full_matrices")
    if not _flag("svd", compute_uv, "compute_uv"):
        return execute1(D.SINGULAR_VALUES, [x], None)
    s, u, v = execute(D.SVD, [x], {"full_matrices": full_matrices})
    return s, u, v


# ---- shapes, products, traces ----------------------------------------------------------------
def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Transposes the last two dimensions of ``a`` (``conjugate`` goes to ``tf.transpose``)."""
    x = as_tensor(a)
    rank = len(x._shape_tuple)
    if rank < 2:
        raise ValueError(f"matrix_transpose: a should be a (batch) matrix with rank >= 2, got "
                         f"shape {x.shape.as_list()}.")
    return A.transpose(x, list(range(rank - 2)) + [rank - 1, rank - 2], conjugate=conjugate)


def adjoint(matrix, name=None):
    """The conjugate transpose of the last two dimensions (the transpose, for real values)."""
    return matrix_transpose(matrix, conjugate=True)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """``a @ b`` for matrices a [..., M, N] and vectors b [..., N] (batch dimensions broadcast);
    ``transpose_a``/``adjoint_a`` use a's transpose."""
    at, bt = binary_operands("matvec", a, b)
    if len(at._shape_tuple) < 2 or len(bt._shape_tuple) < 1:
        checks.fail("matvec", f"a must have rank >= 2 and b rank >= 1, got shapes "
                    f"{checks.fmt_shape(at._shape_tuple)} and {checks.fmt_shape(bt._shape_tuple)}.")
    product = M.matmul(at, A.expand_dims(bt, -1), transpose_a=transpose_a or adjoint_a)
    return product[..., 0]


def trace(x, name=None):
    """The sum of the main diagonal of each matrix: shape ``x.shape[:-2]``."""
    return M.reduce_sum(diag_part(x), axis=-1)


# ---- bands and diagonals ---------------------------------------------------------------------
def _static_int(op_name, value, what):
    """An integer argument that sets an output's shape, so must be known when the op is built:
    a Python or NumPy int (tensors are refused, eagerly as in a function)."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, Tensor) or \
            getattr(value, "_is_variable", False):
        raise TypeError(f"{op_name}: {what} must be a Python int (it sets the output's shape), "
                        f"got {value!r}.")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op_name}: {what} must be an int, got {value!r}.") from None


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002 - TF's name
    """Keeps a band of each matrix and zeros the rest: ``num_lower`` diagonals below the main one
    and ``num_upper`` above it, a negative count keeping that whole triangle
    (``band_part(x, -1, 0)``: lower triangle; ``band_part(x, 0, 0)``: diagonal).  The counts
    are integer scalars (tensors too, known only at run time inside a function)."""
    def count(value):   # a Python int becomes int64, as TF's; anything else keeps its dtype
        is_int = isinstance(value, int) and not isinstance(value, bool)
        return as_tensor(value, dtypes.int64) if is_int else as_tensor(value)

    return execute1(G.BAND_PART, [as_tensor(input), count(num_lower), count(num_upper)], None)


def _diagonal_range(op_name, k):
    """``k`` (an int, or a pair of ints) as (k_lo, k_hi)."""
    values = list(k) if isinstance(k, (list, tuple, np.ndarray)) and np.ndim(k) == 1 else [k]
    if len(values) not in (1, 2):
        checks.fail(op_name, f"k must be an int or a pair (k_lo, k_hi), got {k!r}.")
    lo = _static_int(op_name, values[0], "k")
    return lo, _static_int(op_name, values[-1], "k")


def _alignment(op_name, align):
    if not isinstance(align, str) or align not in G.ALIGNMENTS:
        raise ValueError(f"{op_name}: align must be one of {', '.join(G.ALIGNMENTS)}, got "
                         f"{align!r}.")
    return align


def _padding(op_name, value, like):
    """padding_value as a tensor (Python and NumPy values take the input's dtype)."""
    return binary_operands(op_name, like, value)[1]


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT"):
    """Matrices with the given diagonals, ``padding_value`` elsewhere.

    ``k = 0`` puts ``diagonal`` [..., L] on the main diagonal of [..., L, L] matrices; an int k
    on diagonal k (above the main one when positive); a pair ``(k_lo, k_hi)`` takes diagonals
    [..., k_hi - k_lo + 1, L] (the first row is diagonal k_hi), shorter diagonals aligned as
    ``align`` says (superdiagonals, subdiagonals).  ``num_rows``/``num_cols`` (-1: inferred, the
    smallest square matrix otherwise) size the result.
    """
    x = as_tensor(diagonal)
    k_range = _diagonal_range("matrix_diag", k)
    rows = _static_int("matrix_diag", num_rows, "num_rows")
    cols = _static_int("matrix_diag", num_cols, "num_cols")
    for what, value in (("num_rows", rows), ("num_cols", cols)):
        if value < -1:
            checks.fail("matrix_diag", f"{what} must be -1 (inferred) or >= 0, got {value}.")
    return execute1(G.DIAG, [x, _padding("matrix_diag", padding_value, x)], {
        "k": k_range, "num_rows": rows, "num_cols": cols,
        "align": _alignment("matrix_diag", align)})


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    """The diagonals of each matrix: the main one (``k = 0``), diagonal k, or those from k_lo to
    k_hi for a pair (stacked from k_hi down, shorter ones aligned and padded with
    ``padding_value`` as ``align`` says)."""
    x = as_tensor(input)
    k_range = _diagonal_range("matrix_diag_part", k)
    return execute1(G.DIAG_PART, [x, _padding("matrix_diag_part", padding_value, x)], {
        "k": k_range, "align": _alignment("matrix_diag_part", align), "length": None})


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    """``input`` with its diagonal(s) k replaced by ``diagonal`` (shaped as ``diag_part``
    returns them)."""
    x, d = binary_operands("matrix_set_diag", input, diagonal)
    k_range = _diagonal_range("matrix_set_diag", k)
    return execute1(G.SET_DIAG, [x, d], {"k": k_range,
                                         "align": _alignment("matrix_set_diag", align)})


# ---- norms ------------------------------------------------------------------------------------
def _norm_axes(axis, rank):
    """``axis`` of tf.norm as None (all), a 1-tuple (vector norm) or a 2-tuple (matrix norm)."""
    if isinstance(axis, (list, tuple)) and len(axis) == 1:
        axis = axis[0]
    if axis is None:
        return None
    if isinstance(axis, (numbers.Integral, np.integer)) and not isinstance(axis, bool):
        return (checks.axis("norm", axis, rank),)
    if isinstance(axis, (list, tuple)) and len(axis) == 2 and \
            all(isinstance(a, (numbers.Integral, np.integer)) for a in axis):
        pair = tuple(checks.axis("norm", a, rank) for a in axis)
        if pair[0] != pair[1]:
            return pair
    raise ValueError(f"norm: axis must be None, an integer, or a tuple of 2 unique integers, got "
                     f"{axis!r}.")


def _number(value):
    """``value`` if it is a real number (not a bool), else None."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    return value


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """The vector or matrix norm of ``tensor``.

    ``axis=None`` takes the whole tensor as one vector; an int (or a 1-tuple) takes vectors
    along that axis; a pair of axes takes matrices.  Vector norms: ``ord`` 'euclidean' (= 2),
    any p > 0 (``np.inf``: the largest absolute value).  Matrix norms: 'euclidean' or 'fro'
    (Frobenius), 1 (largest column sum), ``np.inf`` (largest row sum) and 2 (largest singular
    value).  ``keepdims`` keeps the reduced axes with size 1.
    """
    x = as_tensor(tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"norm: tensor has dtype {x.dtype.name} (shape {x.shape.as_list()}), but "
                        "norms need float32 or float64; cast it with tf.cast.")
    axes = _norm_axes(axis, len(x._shape_tuple))
    keep = bool(keepdims)
    p = _number(ord)
    if axes is not None and len(axes) == 2:
        if ord not in ("euclidean", "fro") if isinstance(ord, str) else p not in (1, 2, np.inf):
            raise ValueError(f"norm: ord must be a supported matrix norm in ['euclidean', 'fro', "
                             f"1, 2, inf], got {ord!r}.")
        return _matrix_norm(x, "fro" if isinstance(ord, str) else p, axes, keep)
    if ord != "euclidean" if isinstance(ord, str) else not (p is not None and p > 0):
        raise ValueError(f"norm: ord must be a supported vector norm ('euclidean' or a number "
                         f"> 0, np.inf included), got {ord!r}.")
    reduce_axes = None if axes is None else list(axes)
    if isinstance(ord, str) or p == 2:
        return M.sqrt(M.reduce_sum(x * x, axis=reduce_axes, keepdims=keep))
    magnitude = M.abs(x)
    if p == np.inf:
        return M.reduce_max(magnitude, axis=reduce_axes, keepdims=keep)
    if p == 1:
        return M.reduce_sum(magnitude, axis=reduce_axes, keepdims=keep)
    return M.pow(M.reduce_sum(M.pow(magnitude, float(p)), axis=reduce_axes, keepdims=keep),
                 1.0 / float(p))


def _matrix_norm(x, order, axes, keep):
    """The matrix norm ``order`` ('fro', 1, 2 or inf) over the axes (rows, columns)."""
    rows, cols = axes
    if order == "fro":
        return M.sqrt(M.reduce_sum(x * x, axis=list(axes), keepdims=keep))
    if order == 2:
        rank = len(x._shape_tuple)
        others = [i for i in range(rank) if i not in axes]
        values = svd(A.transpose(x, others + [rows, cols]), compute_uv=False)
        largest = M.reduce_max(values, axis=-1)
        if keep:
            for position in sorted(axes):
                largest = A.expand_dims(largest, position)
        return largest
    # 1: the largest column sum (sum over rows); inf: the largest row sum (sum over columns).
    summed_axis = rows if order == 1 else cols
    sums = M.reduce_sum(M.abs(x), axis=summed_axis, keepdims=True)
    # The summed axis now has size 1, so reducing it again only drops it when not keeping dims.
    return M.reduce_max(sums, axis=list(axes), keepdims=keep)
