"""Matrix inverse, determinants, solves and decompositions (Cholesky, QR, symmetric eigen, SVD),
batched over leading dimensions, float32 and float64.

The gradient rules follow the standard matrix-calculus results for each factorization and are
written with public ops (matmul, triangular_solve, band_part, ...), so they run eagerly, traced
and under a second tape.  Where a decomposition reads only one triangle (cholesky and eigh read
the lower one), its gradient says so as TF's does: cholesky's is symmetrized, eigh's lower
triangular.
"""
import numpy as np

from ops import decompositions as kernels

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import linalg_ops as LA
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.framework.errors import InvalidArgumentError, ResourceExhaustedError
from hybridtf.registry import OpDef, Spec, checks, register
from hybridtf.registry.elementwise import unbroadcast

FLOATS = ("float32", "float64")


# ---- shared pieces ------------------------------------------------------------------------------
def _matrix_spec(op_name, spec, what="input", square=True):
    """Checks a (batch of) matrix input: float dtype, rank >= 2, square if asked."""
    checks.allowed_dtype(op_name, spec.dtype, FLOATS, what)
    if spec.shape is None:
        return
    if len(spec.shape) < 2:
        checks.fail(op_name, f"{what} must be a matrix or a batch of matrices (rank >= 2), got "
                    f"shape {checks.fmt_shape(spec.shape)}.")
    rows, cols = spec.shape[-2:]
    if square and rows is not None and cols is not None and rows != cols:
        checks.fail(op_name, f"{what} must be a square matrix (or a batch of them), got shape "
                    f"{checks.fmt_shape(spec.shape)}.")


def _system_specs(op_name, specs):
    """Checks the (matrix, rhs) inputs of a solver: a square matrix and a right-hand side of
    one float dtype."""
    matrix, rhs = specs
    _matrix_spec(op_name, matrix, "matrix")
    _matrix_spec(op_name, rhs, "rhs", square=False)
    checks.same_dtype(op_name, specs, names=("matrix", "rhs"))


def _batched(array):
    """A (batch.., m, n) array as a C-contiguous (batch, m, n) one."""
    batch = int(np.prod(array.shape[:-2]))
    return checks.contiguous(array).reshape((batch,) + array.shape[-2:])


def _raise_failure(status, op_name, batch_shape, message):
    """Turns a kernel's status into the op's error (InvalidArgumentError naming the matrix)."""
    if status == kernels.OK:
        return
    if status == kernels.LAPACK_ERROR:   # its only failure on valid arguments
        raise ResourceExhaustedError(None, op_name, f"{op_name}: LAPACK could not allocate its "
                                     "workspace (out of memory).")
    where = f" (matrix {tuple(int(i) for i in np.unravel_index(status, batch_shape))} of the " \
            f"batch)" if batch_shape else ""
    raise InvalidArgumentError(None, op_name, f"{op_name}: {message}{where}")


def _transpose(x):
    return LA.matrix_transpose(x)


def _safe_reciprocal(x):
    """1 / x, and 0 where x is 0 (with gradients that stay finite there)."""
    zero = M.equal(x, 0)
    return M.where(zero, A.zeros_like(x), 1 / M.where(zero, A.ones_like(x), x))


def _pairwise_reciprocal(values):
    """f[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, and 0 where equal."""
    return _safe_reciprocal(A.expand_dims(values, -2) - A.expand_dims(values, -1))


def _static_matrix_size(op_name, x):
    rows, cols = x._shape_tuple[-2:]
    if rows is None or cols is None:
        checks.fail(op_name, f"the gradient needs the matrix size, which is unknown while "
                    f"tracing (shape {checks.fmt_shape(x._shape_tuple)}); give the function an "
                    "input_signature with known matrix dimensions.")
    return rows, cols


def _lower_of_symmetric(grad):
    """The gradient with respect to a matrix of which only the lower triangle is read, given the
    gradient ``grad`` with respect to the symmetric matrix built from it: off-diagonal entries
    count twice (g_ij + g_ji), diagonal ones once."""
    full = grad + _transpose(grad)
    return LA.set_diag(LA.band_part(full, -1, 0), LA.diag_part(grad))


def _same_spec(op_name):
    def infer(specs, attrs):
        x, = specs
        _matrix_spec(op_name, x)
        return [Spec(x.shape, x.dtype)]
    return infer


# ---- inverse ----------------------------------------------------------------------------------
def _inverse_eager(arrays, attrs):
    x, = arrays
    x3 = _batched(x)
    out = np.empty_like(x3)
    _raise_failure(kernels.inverse(x3, out), "matrix_inverse", x.shape[:-2],
                   "Input is not invertible: a pivot of its LU factorization is zero (or NaN).")
    if attrs["adjoint"]:
        out = checks.contiguous(out.transpose(0, 2, 1))
    return out.reshape(x.shape)


def _inverse_grad(record, grads):
    g, = grads
    y = record.outputs[0]
    if record.attrs["adjoint"]:   # y = inv(a^T): d a = -y g^T y
        return (-M.matmul(y, M.matmul(g, y, transpose_a=True)),)
    return (-M.matmul(y, M.matmul(g, y, transpose_b=True), transpose_a=True),)


INVERSE = register(OpDef("matrix_inverse", "opaque", {"cpu": _inverse_eager},
                         _same_spec("matrix_inverse"), _inverse_grad))


# ---- determinants -----------------------------------------------------------------------------
def _determinants(x):
    x3 = _batched(x)
    sign, log_abs, det = (np.empty(x3.shape[0], x.dtype) for _ in range(3))
    _raise_failure(kernels.determinants(x3, sign, log_abs, det), "matrix_determinant",
                   x.shape[:-2], "")
    batch = x.shape[:-2]
    return sign.reshape(batch), log_abs.reshape(batch), det.reshape(batch)


def _det_infer(op_name, outputs):
    def infer(specs, attrs):
        x, = specs
        _matrix_spec(op_name, x)
        shape = None if x.shape is None else x.shape[:-2]
        return [Spec(shape, x.dtype)] * outputs
    return infer


def _det_grad(record, grads):
    # d det(a) = det(a) tr(inv(a) da): the gradient is g det(a) inv(a)^T.
    g, = grads
    scale = A.expand_dims(A.expand_dims(g * record.outputs[0], -1), -1)
    return (scale * LA.inv(record.inputs[0], adjoint=True),)


def _slogdet_grad(record, grads):
    _, g = grads   # the sign is piecewise constant
    if g is None:
        return (None,)
    scale = A.expand_dims(A.expand_dims(g, -1), -1)
    return (scale * LA.inv(record.inputs[0], adjoint=True),)


DETERMINANT = register(OpDef(
    "matrix_determinant", "opaque", {"cpu": lambda arrays, attrs: _determinants(arrays[0])[2]},
    _det_infer("matrix_determinant", 1), _det_grad))
LOG_DETERMINANT = register(OpDef(
    "log_matrix_determinant", "opaque", {"cpu": lambda arrays, attrs: _determinants(arrays[0])[:2]},
    _det_infer("log_matrix_determinant", 2), _slogdet_grad, num_outputs=2))


# ---- solve ------------------------------------------------------------------------------------
def _solve_infer(specs, attrs):
    a, b = specs
    name = "matrix_solve"
    _system_specs(name, specs)
    if a.shape is None or b.shape is None:
        return [Spec(b.shape, b.dtype)]
    same = len(a.shape) == len(b.shape) and all(
        x is None or y is None or x == y for x, y in zip(a.shape[:-2] + a.shape[-1:],
                                                         b.shape[:-2] + b.shape[-2:-1]))
    if not same:
        checks.fail(name, f"matrix of shape {checks.fmt_shape(a.shape)} and rhs of shape "
                    f"{checks.fmt_shape(b.shape)} are incompatible: rhs must have the matrix's "
                    "batch dimensions (no broadcasting) and as many rows as the matrix.")
    return [Spec(b.shape, b.dtype)]


def _solve_eager(arrays, attrs):
    a, b = arrays
    a3, b3 = _batched(a), _batched(b)
    out = np.empty_like(b3)
    _raise_failure(kernels.solve(a3, b3, attrs["adjoint"], out), "matrix_solve", a.shape[:-2],
                   "Input matrix is not invertible: a pivot of its LU factorization is zero "
                   "(or NaN).")
    return out.reshape(b.shape)


def _solve_grad(record, grads):
    g, = grads
    a = record.inputs[0]
    x = record.outputs[0]
    adjoint = record.attrs["adjoint"]
    gb = LA.solve(a, g, adjoint=not adjoint)
    ga = M.matmul(x, gb, transpose_b=True) if adjoint else M.matmul(gb, x, transpose_b=True)
    return -ga, gb


SOLVE = register(OpDef("matrix_solve", "opaque", {"cpu": _solve_eager}, _solve_infer, _solve_grad))


# ---- triangular solve -------------------------------------------------------------------------
def _triangular_infer(specs, attrs):
    a, b = specs
    name = "matrix_triangular_solve"
    _system_specs(name, specs)
    if a.shape is None or b.shape is None:
        return [Spec(None, b.dtype)]
    n, rows = a.shape[-1], b.shape[-2]
    if n is not None and rows is not None and n != rows:
        checks.fail(name, f"matrix of shape {checks.fmt_shape(a.shape)} and rhs of shape "
                    f"{checks.fmt_shape(b.shape)} are incompatible: rhs must have {n} rows.")
    batch = checks.broadcast(name, [a.shape[:-2], b.shape[:-2]])
    return [Spec(batch + b.shape[-2:], b.dtype)]


def _triangular_eager(arrays, attrs):
    a, b = arrays
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a3, b3 = _batched(a), _batched(b)
    ia = np.broadcast_to(np.arange(a3.shape[0]).reshape(a.shape[:-2]), batch).ravel()
    ib = np.broadcast_to(np.arange(b3.shape[0]).reshape(b.shape[:-2]), batch).ravel()
    out = np.empty((ia.size,) + b.shape[-2:], b.dtype)
    kernels.triangular_solve(a3, b3, ia, ib, attrs["lower"], attrs["adjoint"], out)
    return out.reshape(batch + b.shape[-2:])


def _triangular_grad(record, grads):
    g, = grads
    a, b = record.inputs
    x = record.outputs[0]
    lower, adjoint = record.attrs["lower"], record.attrs["adjoint"]
    gb = LA.triangular_solve(a, g, lower=lower, adjoint=not adjoint)
    ga = M.matmul(x, gb, transpose_b=True) if adjoint else M.matmul(gb, x, transpose_b=True)
    ga = LA.band_part(-ga, -1, 0) if lower else LA.band_part(-ga, 0, -1)
    return unbroadcast(ga, a), unbroadcast(gb, b)


TRIANGULAR_SOLVE = register(OpDef("matrix_triangular_solve", "opaque", {"cpu": _triangular_eager},
                                  _triangular_infer, _triangular_grad))


# ---- Cholesky ---------------------------------------------------------------------------------
def _cholesky_eager(arrays, attrs):
    x, = arrays
    x3 = _batched(x)
    out = np.empty_like(x3)
    # A matrix that is not positive definite gets NaNs, as TF's CPU kernel gives.
    if kernels.cholesky(x3, out) == kernels.LAPACK_ERROR:
        _raise_failure(kernels.LAPACK_ERROR, "cholesky", (), "")
    return out.reshape(x.shape)


def _cholesky_grad(record, grads):
    # With P = the lower triangle of L^T g, diagonal halved: grad = L^-T P L^-1, symmetrized.
    g, = grads
    chol = record.outputs[0]
    product = M.matmul(chol, g, transpose_a=True)
    p = LA.set_diag(LA.band_part(product, -1, 0), 0.5 * LA.diag_part(product))
    left = LA.triangular_solve(chol, p, lower=True, adjoint=True)   # L^-T P
    grad = _transpose(LA.triangular_solve(chol, _transpose(left), lower=True, adjoint=True))
    return (0.5 * (grad + _transpose(grad)),)


CHOLESKY = register(OpDef("cholesky", "opaque", {"cpu": _cholesky_eager}, _same_spec("cholesky"),
                          _cholesky_grad))


# ---- symmetric eigendecomposition ------------------------------------------------------------
def _eig_infer(op_name, with_vectors):
    def infer(specs, attrs):
        x, = specs
        _matrix_spec(op_name, x)
        if x.shape is None:
            return [Spec(None, x.dtype)] * (2 if with_vectors else 1)
        values = Spec(x.shape[:-1], x.dtype)
        return [values, Spec(x.shape, x.dtype)] if with_vectors else [values]
    return infer


def _eig(x, compute_v, op_name):
    x3 = _batched(x)
    w = np.empty(x3.shape[:2], x.dtype)
    v = np.empty_like(x3)
    _raise_failure(kernels.eigh(x3, w, v, compute_v), op_name, x.shape[:-2],
                   "Self-adjoint eigen decomposition was not successful: the input holds a NaN "
                   "or an infinity, or the solver did not converge.")
    return w.reshape(x.shape[:-1]), v.reshape(x.shape)


def _eigh_grad(record, grads):
    ge, gv = grads
    e, v = record.outputs
    # grad = v (diag(ge) + f * (v^T gv)) v^T, f = 1 / (e_j - e_i) off the diagonal
    inner = LA.diag(ge) if ge is not None else A.zeros_like(v)
    if gv is not None:
        inner = inner + _pairwise_reciprocal(e) * M.matmul(v, gv, transpose_a=True)
    grad = M.matmul(v, M.matmul(inner, v, transpose_b=True))
    return (_lower_of_symmetric(grad),)


def _eigvalsh_grad(record, grads):
    g, = grads
    _, v = LA.eigh(record.inputs[0])
    grad = M.matmul(v * A.expand_dims(g, -2), v, transpose_b=True)
    return (_lower_of_symmetric(grad),)


EIGH = register(OpDef(
    "self_adjoint_eig", "opaque",
    {"cpu": lambda arrays, attrs: _eig(arrays[0], True, "self_adjoint_eig")},
    _eig_infer("self_adjoint_eig", True), _eigh_grad, num_outputs=2))
EIGVALSH = register(OpDef(
    "self_adjoint_eigvals", "opaque",
    {"cpu": lambda arrays, attrs: _eig(arrays[0], False, "self_adjoint_eigvals")[0]},
    _eig_infer("self_adjoint_eigvals", False), _eigvalsh_grad))


# ---- QR ---------------------------------------------------------------------------------------
def _qr_sizes(rows, cols, full):
    """Columns of q (= rows of r)."""
    if rows is None or cols is None:
        return rows if full else None
    return rows if full else min(rows, cols)


def _qr_infer(specs, attrs):
    x, = specs
    _matrix_spec("qr", x, square=False)
    if x.shape is None:
        return [Spec(None, x.dtype)] * 2
    rows, cols = x.shape[-2:]
    p = _qr_sizes(rows, cols, attrs["full_matrices"])
    batch = tuple(x.shape[:-2])
    return [Spec(batch + (rows, p), x.dtype), Spec(batch + (p, cols), x.dtype)]


def _qr_eager(arrays, attrs):
    x, = arrays
    rows, cols = x.shape[-2:]
    p = _qr_sizes(rows, cols, attrs["full_matrices"])
    x3 = _batched(x)
    q = np.empty((x3.shape[0], rows, p), x.dtype)
    r = np.empty((x3.shape[0], p, cols), x.dtype)
    _raise_failure(kernels.qr(x3, q, r), "qr", (), "")
    return q.reshape(x.shape[:-2] + (rows, p)), r.reshape(x.shape[:-2] + (p, cols))


def _qr_grad_tall(q, r, gq, gr):
    """Gradient of a = q r for rows >= columns (reduced): with M = r gr^T - gq^T q and
    copyltu(M) its lower triangle mirrored upwards, grad = (gq + q copyltu(M)) r^-T."""
    m = M.matmul(r, gr, transpose_b=True) - M.matmul(gq, q, transpose_a=True)
    low = LA.band_part(m, -1, 0)
    mirrored = LA.set_diag(low + _transpose(low), LA.diag_part(m))
    total = gq + M.matmul(q, mirrored)
    # total r^-T, as (r^-1 total^T)^T
    return _transpose(LA.triangular_solve(r, _transpose(total), lower=False))


def _qr_grad(record, grads):
    gq, gr = grads
    a = record.inputs[0]
    q, r = record.outputs
    rows, cols = _static_matrix_size("qr", a)
    if record.attrs["full_matrices"] and rows > cols:
        checks.fail("qr", f"the gradient of qr(full_matrices=True) of a matrix with more rows "
                    f"than columns (shape {checks.fmt_shape(a._shape_tuple)}) is not defined: "
                    "the extra columns of q are not unique. Use full_matrices=False.")
    gq = A.zeros_like(q) if gq is None else gq
    gr = A.zeros_like(r) if gr is None else gr
    if rows >= cols:
        return (_qr_grad_tall(q, r, gq, gr),)
    # Wide: a = [x | y] with x = q u square and y = q v, so v = q^T y.
    y = a[..., :, rows:]
    u = r[..., :, :rows]
    gu, gv = gr[..., :, :rows], gr[..., :, rows:]
    gx = _qr_grad_tall(q, u, gq + M.matmul(y, gv, transpose_b=True), gu)
    return (A.concat([gx, M.matmul(q, gv)], axis=-1),)


QR = register(OpDef("qr", "opaque", {"cpu": _qr_eager}, _qr_infer, _qr_grad, num_outputs=2))


# ---- SVD --------------------------------------------------------------------------------------
def _svd_infer(op_name, compute_uv):
    def infer(specs, attrs):
        x, = specs
        _matrix_spec(op_name, x, square=False)
        if x.shape is None:
            return [Spec(None, x.dtype)] * (3 if compute_uv else 1)
        rows, cols = x.shape[-2:]
        k = None if rows is None or cols is None else min(rows, cols)
        batch = tuple(x.shape[:-2])
        s = Spec(batch + (k,), x.dtype)
        if not compute_uv:
            return [s]
        full = attrs["full_matrices"]
        return [s, Spec(batch + (rows, rows if full else k), x.dtype),
                Spec(batch + (cols, cols if full else k), x.dtype)]
    return infer


def _svd(x, compute_uv, full_matrices, op_name):
    rows, cols = x.shape[-2:]
    k = min(rows, cols)
    x3 = _batched(x)
    batch = x3.shape[0]
    s = np.empty((batch, k), x.dtype)
    if compute_uv:
        p, q = (rows, cols) if full_matrices else (k, k)
        u = np.empty((batch, rows, p), x.dtype)
        v = np.empty((batch, cols, q), x.dtype)
    else:
        u = v = np.empty((batch, 0, 0), x.dtype)
    _raise_failure(kernels.svd(x3, s, u, v, compute_uv, full_matrices), op_name, x.shape[:-2],
                   "SVD did not converge.")
    lead = x.shape[:-2]
    if not compute_uv:
        return s.reshape(lead + (k,))
    return s.reshape(lead + (k,)), u.reshape(lead + u.shape[1:]), v.reshape(lead + v.shape[1:])


def _svd_grad_wide(s, u, v, gs, gu, gv, rows, cols):
    """Gradient of a = u diag(s) v1^T for rows <= cols, u: (rows, rows), v: (cols, rows) or
    (cols, cols) (full), v1 its first rows columns; gu, gv may be None."""
    v1 = v[..., :, :rows]
    f = _pairwise_reciprocal(M.square(s))   # 1 / (s_j^2 - s_i^2)
    s_row = A.expand_dims(s, -2)            # scales columns: x * s_row = x diag(s)
    s_col = A.expand_dims(s, -1)            # scales rows:    s_col * x = diag(s) x
    inner = LA.diag(gs) if gs is not None else A.zeros_like(f)
    if gu is not None:
        j = f * M.matmul(u, gu, transpose_a=True)
        inner = inner + (j + _transpose(j)) * s_row
    gv1 = None
    if gv is not None:
        gv1 = gv[..., :, :rows]
        j = f * M.matmul(v1, gv1, transpose_a=True)
        inner = inner + s_col * (j + _transpose(j))
    grad = M.matmul(u, M.matmul(inner, v1, transpose_b=True))
    if gv is not None and rows < cols:
        # The part of gv1 outside the span of v1: u diag(1/s) gv1^T (I - v1 v1^T).
        gv1t = _transpose(gv1)
        outside = gv1t - M.matmul(M.matmul(gv1t, v1), v1, transpose_b=True)
        if v._shape_tuple[-1] == cols:   # full: the one null vector v2 moves with a as well
            v2, gv2 = v[..., :, rows:], gv[..., :, rows:]
            outside = outside - M.matmul(M.matmul(v1, gv2, transpose_a=True), v2,
                                         transpose_b=True)
        grad = grad + M.matmul(u * A.expand_dims(_safe_reciprocal(s), -2), outside)
    return grad


def _svd_grad(record, grads):
    gs, gu, gv = grads
    a = record.inputs[0]
    s, u, v = record.outputs
    rows, cols = _static_matrix_size("svd", a)
    # The last |rows - cols| columns of the larger factor span the complement of the others:
    # one such column is fixed up to its sign, more are any basis of that space.
    free, g_free = ("u", gu) if rows > cols else ("v", gv)
    if record.attrs["full_matrices"] and abs(rows - cols) > 1 and g_free is not None:
        checks.fail("svd", f"the gradient through {free} of svd(full_matrices=True) of a "
                    f"{rows} x {cols} matrix is not defined: its last {abs(rows - cols)} "
                    "columns are any orthonormal basis of a subspace. Use "
                    "full_matrices=False.")
    if rows <= cols:
        return (_svd_grad_wide(s, u, v, gs, gu, gv, rows, cols),)
    # a^T = v diag(s) u^T is wide: swap the roles of u and v.
    return (_transpose(_svd_grad_wide(s, v, u, gs, gv, gu, cols, rows)),)


def _singular_values_grad(record, grads):
    g, = grads
    _, u, v = LA.svd(record.inputs[0], full_matrices=False, compute_uv=True)
    return (M.matmul(u * A.expand_dims(g, -2), v, transpose_b=True),)


SVD = register(OpDef(
    "svd", "opaque",
    {"cpu": lambda arrays, attrs: _svd(arrays[0], True, attrs["full_matrices"], "svd")},
    _svd_infer("svd", True), _svd_grad, num_outputs=3))
SINGULAR_VALUES = register(OpDef(
    "singular_values", "opaque",
    {"cpu": lambda arrays, attrs: _svd(arrays[0], False, False, "singular_values")},
    _svd_infer("singular_values", False), _singular_values_grad))
