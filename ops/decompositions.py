"""Matrix decompositions and solvers over batches of matrices: LU (inverse, determinant, solve),
Cholesky, QR, symmetric eigendecomposition, SVD and triangular solves.

Inputs are C-contiguous float32/float64 arrays of shape (batch, rows, cols).  The factorizations
call LAPACK (SciPy's, the one Numba's ``np.linalg`` uses) through Numba's helper symbols, which
report failures as status codes instead of raising, so a kernel can say *which* matrix failed and
the caller can raise the framework's own error.  LAPACK is column-major: a row-major buffer seen
by LAPACK is the transposed matrix, which each kernel either exploits (inv(A^T) = inv(A)^T) or
undoes with a transposing copy.

Kernels that can fail return a status: ``OK`` (-1), the index of the first matrix that failed
(>= 0), or ``LAPACK_ERROR`` when LAPACK itself reported an error (out of memory).
"""
import numpy as np
from numba import types
from numba.np.linalg import F_INT_nptype, ensure_lapack

from ops.kernel_cache import njit
from ops.linalg import blas_kind, gemm, transpose_into

ensure_lapack()  # a clear ImportError now, rather than a failure inside the first kernel

_jit = njit(error_model="numpy", nogil=True)

OK = -1
LAPACK_ERROR = -2

_getrf = types.ExternalFunction("numba_xxgetrf", types.intc(
    types.char, types.intp, types.intp, types.voidptr, types.intp,  # kind, m, n, a, lda
    types.voidptr))  # ipiv
_getri = types.ExternalFunction("numba_ez_xxgetri", types.intc(
    types.char, types.intp, types.voidptr, types.intp, types.voidptr))  # kind, n, a, lda, ipiv
_gesv = types.ExternalFunction("numba_xgesv", types.intc(
    types.char, types.intp, types.intp, types.voidptr, types.intp,  # kind, n, nrhs, a, lda
    types.voidptr, types.voidptr, types.intp))  # ipiv, b, ldb
_potrf = types.ExternalFunction("numba_xxpotrf", types.intc(
    types.char, types.char, types.intp, types.voidptr, types.intp))  # kind, uplo, n, a, lda
_syevd = types.ExternalFunction("numba_ez_xxxevd", types.intc(
    types.char, types.char, types.char, types.intp, types.voidptr, types.intp,  # .., a, lda
    types.voidptr))  # w
_gesdd = types.ExternalFunction("numba_ez_gesdd", types.intc(
    types.char, types.char, types.intp, types.intp, types.voidptr, types.intp,  # .., a, lda
    types.voidptr, types.voidptr, types.intp, types.voidptr, types.intp))  # s, u, ldu, vt, ldvt
_geqrf = types.ExternalFunction("numba_ez_geqrf", types.intc(
    types.char, types.intp, types.intp, types.voidptr, types.intp, types.voidptr))  # .., tau
_orgqr = types.ExternalFunction("numba_ez_xxgqr", types.intc(
    types.char, types.intp, types.intp, types.intp, types.voidptr, types.intp,  # m, n, k, a, lda
    types.voidptr))  # tau

_UPPER = ord("U")
_VECTORS = ord("V")
_NO_VECTORS = ord("N")
_ALL = ord("A")
_REDUCED = ord("S")


@_jit
def _pivots_nonzero(lu):
    """Whether every pivot of an LU factorization is a nonzero number (NaN counts as zero: the
    matrix is then not invertible)."""
    for i in range(lu.shape[0]):
        if not abs(lu[i, i]) > 0:
            return False
    return True


@_jit
def _all_finite(m):
    for v in m.ravel():
        if not np.isfinite(v):
            return False
    return True


@_jit
def _lower_finite(m):
    for i in range(m.shape[0]):
        for j in range(i + 1):
            if not np.isfinite(m[i, j]):
                return False
    return True


# ---- LU: inverse, determinants, solve -----------------------------------------------------------
@_jit
def inverse(a, out):
    """out[i] = inv(a[i]) for a, out of shape (B, n, n).  Returns OK, or the index of the first
    matrix with a zero (or NaN) pivot: not invertible."""
    n = a.shape[1]
    ipiv = np.empty(max(n, 1), F_INT_nptype)
    kind = blas_kind(out)
    for b in range(a.shape[0]):
        m = out[b]
        m[:] = a[b]
        if n == 0:
            continue
        # LAPACK sees A^T; inv(A^T) = inv(A)^T, which it hands back as our row-major inv(A).
        if _getrf(kind, n, n, m.ctypes, n, ipiv.ctypes) < 0:
            return LAPACK_ERROR
        if not _pivots_nonzero(m):
            return b
        if _getri(kind, n, m.ctypes, n, ipiv.ctypes) < 0:
            return LAPACK_ERROR
    return OK


@_jit
def determinants(a, sign, log_abs, det):
    """For each a[i] (B, n, n): the sign (-1, 0, 1; NaN for NaN input), log|det| and det, from an
    LU factorization.  The determinant is a product accumulated in float64, so float32 input
    neither overflows nor underflows midway."""
    n = a.shape[1]
    ipiv = np.empty(max(n, 1), F_INT_nptype)
    lu = np.empty((n, n), a.dtype)
    kind = blas_kind(lu)
    for b in range(a.shape[0]):
        lu[:] = a[b]
        if n > 0 and _getrf(kind, n, n, lu.ctypes, n, ipiv.ctypes) < 0:
            return LAPACK_ERROR
        s = 1.0
        unknown = False   # a NaN pivot: the sign is NaN
        total = 0.0
        product = 1.0
        for i in range(n):
            u = np.float64(lu[i, i])
            if ipiv[i] != i + 1:   # a row swap (LAPACK's pivots count from 1)
                s = -s
                product = -product
            if u < 0:
                s = -s
            elif u == 0:
                s = 0.0
            elif u != u:
                unknown = True
            total += np.log(abs(u))
            product *= u
        sign[b] = np.nan if unknown else s
        log_abs[b] = total
        det[b] = product
    return OK


@_jit
def solve(a, rhs, adjoint, out):
    """out[i] = inv(op(a[i])) @ rhs[i], op transposing when ``adjoint``; a: (B, n, n), rhs and
    out: (B, n, k).  Returns OK or the index of the first matrix that is not invertible."""
    n = a.shape[1]
    k = rhs.shape[2]
    lu = np.empty((n, n), a.dtype)
    x = np.empty((k, n), a.dtype)   # column-major rhs, overwritten by the solution
    ipiv = np.empty(max(n, 1), F_INT_nptype)
    kind = blas_kind(lu)
    for b in range(a.shape[0]):
        if n == 0:
            continue
        # LAPACK sees a row-major copy as A^T, which is what adjoint asks for.
        if adjoint:
            lu[:] = a[b]
        else:
            transpose_into(a[b], lu)
        transpose_into(rhs[b], x)
        if _gesv(kind, n, k, lu.ctypes, n, ipiv.ctypes, x.ctypes, n) < 0:
            return LAPACK_ERROR
        if not _pivots_nonzero(lu):
            return b
        transpose_into(x, out[b])
    return OK


# ---- Cholesky ---------------------------------------------------------------------------------
@_jit
def cholesky(a, out):
    """out[i] = the lower Cholesky factor of a[i] (B, n, n), reading only a's lower triangle.
    A matrix that is not positive definite gets NaN in its lower triangle.  Returns OK, or the
    index of the first such matrix (LAPACK_ERROR if LAPACK failed)."""
    n = a.shape[1]
    kind = blas_kind(out)
    first = OK
    for b in range(a.shape[0]):
        m = out[b]
        for i in range(n):
            for j in range(n):
                m[i, j] = a[b, i, j] if j <= i else 0
        if n == 0:
            continue
        # Our lower triangle is the upper one of the column-major A^T that LAPACK sees.
        info = _potrf(kind, _UPPER, n, m.ctypes, n)
        if info < 0:
            return LAPACK_ERROR
        if info > 0:
            for i in range(n):
                for j in range(i + 1):
                    m[i, j] = np.nan
            if first == OK:
                first = b
    return first


# ---- symmetric eigendecomposition ------------------------------------------------------------
@_jit
def eigh(a, w, v, compute_v):
    """Eigenvalues w[i] (ascending) and, if ``compute_v``, eigenvectors v[i] (as columns) of the
    symmetric matrices a[i] (B, n, n), reading only the lower triangle.  ``v`` is scratch space
    of a's shape either way.  Returns OK, or the index of the first matrix the solver failed on
    (one holding a NaN or an infinity, or that did not converge)."""
    n = a.shape[1]
    kind = blas_kind(v)
    job = _VECTORS if compute_v else _NO_VECTORS
    for b in range(a.shape[0]):
        if n == 0:
            continue
        m = v[b]
        m[:] = a[b]
        if not _lower_finite(m):
            return b
        info = _syevd(kind, job, _UPPER, n, m.ctypes, n, w[b].ctypes)
        if info < 0:
            return LAPACK_ERROR
        if info > 0:
            return b
        if compute_v:
            # LAPACK's column-major eigenvector columns are our rows: transpose in place.
            for i in range(n):
                for j in range(i):
                    m[i, j], m[j, i] = m[j, i], m[i, j]
    return OK


# ---- SVD --------------------------------------------------------------------------------------
@_jit
def svd(a, s, u, v, compute_uv, full_matrices):
    """Singular values s[i] (descending) of a[i] (B, m, n) and, if ``compute_uv``, u[i] (m, p)
    and v[i] (n, q) with a[i] = u[i] @ diag(s[i]) @ v[i]^T, where p = q = min(m, n), or m and n
    if ``full_matrices``.  Input holding a NaN or an infinity gives NaN outputs.  Returns OK, or
    the index of the first matrix the solver did not converge on."""
    m, n = a.shape[1], a.shape[2]
    k = min(m, n)
    p = u.shape[2]
    q = v.shape[2]
    work = np.empty((m, n), a.dtype)
    vt = np.empty((q, n), a.dtype)
    kind = blas_kind(work)
    job = (_ALL if full_matrices else _REDUCED) if compute_uv else _NO_VECTORS
    for b in range(a.shape[0]):
        if compute_uv:
            if k == 0:   # no singular values; the full bases are identities, as any would do
                u[b] = 0
                v[b] = 0
                for i in range(p):
                    u[b, i, i] = 1
                for i in range(q):
                    v[b, i, i] = 1
                continue
        elif k == 0:
            continue
        work[:] = a[b]
        if not _all_finite(work):
            s[b] = np.nan
            u[b] = np.nan
            v[b] = np.nan
            continue
        # LAPACK sees A^T (n x m) = V S U^T: its left vectors are our V and its right ones our
        # U^T.  A column-major n x q block is our row-major V^T; a column-major p x m one is
        # our row-major U, so u[b] receives U directly.
        if compute_uv:
            info = _gesdd(kind, job, n, m, work.ctypes, n, s[b].ctypes, vt.ctypes, n,
                          u[b].ctypes, p)
        else:
            info = _gesdd(kind, job, n, m, work.ctypes, n, s[b].ctypes, vt.ctypes, 1,
                          u.ctypes, 1)
        if info < 0:
            return LAPACK_ERROR
        if info > 0:
            return b
        if compute_uv:
            transpose_into(vt, v[b])
    return OK


# ---- QR -----------------------------------------------------------------------------------------
@_jit
def qr(a, q, r):
    """a[i] = q[i] @ r[i] for a (B, m, n): q (B, m, p) with orthonormal columns, r (B, p, n) upper
    triangular, where p = min(m, n) (reduced) or m (full: the caller sizes q and r)."""
    m, n = a.shape[1], a.shape[2]
    k = min(m, n)
    p = q.shape[2]
    # Column-major working copy of A, wide enough for the p columns of Q formed in place.
    work = np.zeros((max(n, p), m), a.dtype)
    tau = np.empty(max(k, 1), a.dtype)
    kind = blas_kind(work)
    for b in range(a.shape[0]):
        r[b] = 0
        if k == 0:
            q[b] = 0
            for i in range(p):
                q[b, i, i] = 1
            continue
        transpose_into(a[b], work[:n])
        if _geqrf(kind, m, n, work.ctypes, m, tau.ctypes) < 0:
            return LAPACK_ERROR
        for j in range(n):
            for i in range(min(j + 1, p)):
                r[b, i, j] = work[j, i]
        if _orgqr(kind, m, p, k, work.ctypes, m, tau.ctypes) < 0:
            return LAPACK_ERROR
        transpose_into(work[:p], q[b])
    return OK


# ---- triangular solve ----------------------------------------------------------------------------
_BLOCK = 64   # rows solved by substitution before the rest is updated by one gemm


@_jit
def _substitute(a, x, lo, hi, forward, adjoint):
    """Solves rows lo..hi of op(a) x = x by substitution, given the rows already solved (those
    before lo going forward, after hi going backward) have been subtracted out."""
    k = x.shape[1]
    n_rows = hi - lo
    for step in range(n_rows):
        i = lo + step if forward else hi - 1 - step
        row = x[i]
        j_lo = lo if forward else i + 1
        j_hi = i if forward else hi
        for j in range(j_lo, j_hi):
            t = a[j, i] if adjoint else a[i, j]
            xj = x[j]
            for c in range(k):
                row[c] -= t * xj[c]
        d = a[i, i]
        for c in range(k):
            row[c] /= d


@_jit
def triangular_solve(a, rhs, ia, ib, lower, adjoint, out):
    """out[i] = inv(op(a[ia[i]])) @ rhs[ib[i]] for triangular a (B_a, n, n), reading only its
    lower (``lower``) or upper triangle; op transposes when ``adjoint``.  rhs: (B_b, n, k),
    out: (B, n, k); ia, ib: batch indices.  A zero on the diagonal gives infinities or NaNs.

    Blocks of rows are solved by substitution and the remaining rows updated by one gemm."""
    n = a.shape[1]
    k = rhs.shape[2]
    # op(a) is lower triangular (solved forward) iff exactly one of lower/adjoint holds.
    forward = lower != adjoint
    for i in range(out.shape[0]):
        m = a[ia[i]]
        x = out[i]
        x[:] = rhs[ib[i]]
        mf = m.reshape(n * n)
        xf = x.reshape(n * k)
        if forward:
            for lo in range(0, n, _BLOCK):
                hi = min(lo + _BLOCK, n)
                _substitute(m, x, lo, hi, True, adjoint)
                if hi < n:   # x[hi:] -= op(a)[hi:, lo:hi] @ x[lo:hi]
                    if adjoint:   # op(a)[hi:, lo:hi] = a[lo:hi, hi:]^T
                        gemm(True, False, n - hi, k, hi - lo, -1.0, mf[lo * n + hi:], n,
                             xf[lo * k:], k, 1.0, xf[hi * k:], k)
                    else:
                        gemm(False, False, n - hi, k, hi - lo, -1.0, mf[hi * n + lo:], n,
                             xf[lo * k:], k, 1.0, xf[hi * k:], k)
        else:
            for hi in range(n, 0, -_BLOCK):
                lo = max(hi - _BLOCK, 0)
                _substitute(m, x, lo, hi, False, adjoint)
                if lo > 0:   # x[:lo] -= op(a)[:lo, lo:hi] @ x[lo:hi]
                    if adjoint:   # op(a)[:lo, lo:hi] = a[lo:hi, :lo]^T
                        gemm(True, False, lo, k, hi - lo, -1.0, mf[lo * n:], n,
                             xf[lo * k:], k, 1.0, xf, k)
                    else:
                        gemm(False, False, lo, k, hi - lo, -1.0, mf[lo:], n,
                             xf[lo * k:], k, 1.0, xf, k)
