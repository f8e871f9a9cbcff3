"""The decomposition and diagonal kernels of ops/ on their own, against NumPy: results, and the
status codes that tell the framework which matrix of a batch failed."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ops import decompositions as D
from ops import diagonals as G

from kernel_helpers import FLOATS, tol


def _batch(dtype, b, m, n, seed=0):
    return np.random.default_rng(seed).normal(size=(b, m, n)).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_inverse_and_its_status(dtype):
    a = _batch(dtype, 3, 4, 4) + 4 * np.eye(4, dtype=dtype)
    out = np.empty_like(a)
    assert D.inverse(a, out) == D.OK
    np.testing.assert_allclose(out, np.linalg.inv(a), **tol(dtype))
    a[2] = 0
    assert D.inverse(a, out) == 2   # the first matrix that is not invertible
    a[1, 0, 0] = np.nan
    assert D.inverse(a, out) == 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_determinants(dtype):
    a = _batch(dtype, 4, 3, 3)
    a[3] = [[1, 2, 3], [2, 4, 6], [0, 1, 0]]   # singular
    sign, log_abs, det = (np.empty(4, dtype) for _ in range(3))
    assert D.determinants(a, sign, log_abs, det) == D.OK
    expected_sign, expected_log = np.linalg.slogdet(a.astype(np.float64))
    np.testing.assert_allclose(det, np.linalg.det(a.astype(np.float64)), **tol(dtype))
    np.testing.assert_array_equal(sign[:3], expected_sign[:3])
    np.testing.assert_allclose(log_abs[:3], expected_log[:3], **tol(dtype))
    assert sign[3] == 0 and log_abs[3] == -np.inf


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("adjoint", [False, True])
def test_solve(dtype, adjoint):
    a = _batch(dtype, 2, 3, 3) + 3 * np.eye(3, dtype=dtype)
    b = _batch(dtype, 2, 3, 2, seed=1)
    out = np.empty_like(b)
    assert D.solve(a, b, adjoint, out) == D.OK
    np.testing.assert_allclose(out, np.linalg.solve(np.swapaxes(a, 1, 2) if adjoint else a, b),
                               **tol(dtype))
    a[1] = 0
    assert D.solve(a, b, adjoint, out) == 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_cholesky_fills_a_failed_factor_with_nan(dtype):
    x = _batch(dtype, 3, 3, 3)
    a = x @ np.swapaxes(x, 1, 2) + 3 * np.eye(3, dtype=dtype)
    a[1] = -np.eye(3)
    out = np.empty_like(a)
    assert D.cholesky(a, out) == 1
    np.testing.assert_allclose(out[[0, 2]], np.linalg.cholesky(a[[0, 2]]), **tol(dtype))
    assert np.isnan(out[1][np.tril_indices(3)]).all()
    np.testing.assert_array_equal(out[1][np.triu_indices(3, 1)], 0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eigh_with_and_without_vectors(dtype):
    x = _batch(dtype, 2, 4, 4)
    a = x + np.swapaxes(x, 1, 2)
    w, v = np.empty((2, 4), dtype), np.empty_like(a)
    assert D.eigh(a, w, v, True) == D.OK
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), **tol(dtype))
    np.testing.assert_allclose(a @ v, v * w[:, None, :], rtol=1e-4, atol=1e-4)
    w2 = np.empty_like(w)
    assert D.eigh(a, w2, np.empty_like(a), False) == D.OK
    np.testing.assert_allclose(w2, w, **tol(dtype))
    a[1, 2, 0] = np.inf
    assert D.eigh(a, w, v, True) == 1


@pytest.mark.parametrize("dtype", FLOATS)
@given(m=st.integers(0, 5), n=st.integers(0, 5), full=st.booleans())
def test_svd_and_qr_shapes_including_empty(dtype, m, n, full):
    a = _batch(dtype, 2, m, n)
    k = min(m, n)
    p, q = (m, n) if full else (k, k)
    s, u, v = np.empty((2, k), dtype), np.empty((2, m, p), dtype), np.empty((2, n, q), dtype)
    assert D.svd(a, s, u, v, True, full) == D.OK
    np.testing.assert_allclose((u[..., :k] * s[:, None, :]) @ np.swapaxes(v[..., :k], 1, 2), a,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.swapaxes(u, 1, 2) @ u, np.broadcast_to(np.eye(p), (2, p, p)),
                               rtol=1e-4, atol=1e-4)
    s2 = np.empty_like(s)
    assert D.svd(a, s2, np.empty((2, 0, 0), dtype), np.empty((2, 0, 0), dtype), False,
                 False) == D.OK
    np.testing.assert_allclose(s2, s, **tol(dtype))
    qm, r = np.empty((2, m, p if full else k), dtype), np.empty((2, p if full else k, n), dtype)
    assert D.qr(a, qm, r) == D.OK
    np.testing.assert_allclose(qm @ r, a, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.tril(r, -1), 0)


@pytest.mark.parametrize("n", [1, 64, 65, 130])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("adjoint", [False, True])
def test_triangular_solve_across_block_boundaries_with_broadcast_batches(n, lower, adjoint):
    a = _batch(np.float64, 2, n, n) + n * np.eye(n)
    rhs = _batch(np.float64, 1, n, 3, seed=1)
    ia, ib = np.array([0, 1, 1]), np.array([0, 0, 0])
    out = np.empty((3, n, 3))
    D.triangular_solve(a, rhs, ia, ib, lower, adjoint, out)
    t = np.tril(a) if lower else np.triu(a)
    if adjoint:
        t = np.swapaxes(t, 1, 2)
    np.testing.assert_allclose(t[ia] @ out, rhs[ib], rtol=1e-10, atol=1e-10)


@given(x=hnp.arrays(np.int64, st.tuples(st.integers(1, 2), st.integers(0, 4),
                                        st.integers(0, 4)), elements=st.integers(-5, 5)),
       lower=st.integers(-1, 4), upper=st.integers(-1, 4))
def test_band_part(x, lower, upper):
    out = np.empty_like(x)
    G.band_part(x, lower, upper, out)
    i, j = np.indices(x.shape[1:])
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    np.testing.assert_array_equal(out, np.where(keep, x, 0))


@given(rows=st.integers(1, 4), cols=st.integers(1, 4), data=st.data())
def test_diag_part_set_diag_and_diag_agree(rows, cols, data):
    lo = data.draw(st.integers(-rows + 1, cols - 1))
    hi = data.draw(st.integers(lo, cols - 1))
    flags = data.draw(st.booleans()), data.draw(st.booleans())
    x = np.arange(2 * rows * cols, dtype=np.float64).reshape(2, rows, cols) + 1
    longest = max(G.diagonal_length(rows, cols, d) for d in range(lo, hi + 1))
    diagonals = np.empty((2, hi - lo + 1, longest))
    G.matrix_diag_part(x, lo, hi, np.zeros(1), *flags, diagonals)
    # writing the diagonals back into zeros gives x's band between lo and hi
    band = np.empty_like(x)
    G.matrix_set_diag(np.zeros_like(x), diagonals, lo, hi, *flags, band)
    i, j = np.indices((rows, cols))
    np.testing.assert_array_equal(band, np.where((j - i >= lo) & (j - i <= hi), x, 0))
    built = np.empty_like(x)
    G.matrix_diag(diagonals, lo, hi, np.full(1, -1.0), *flags, built)
    np.testing.assert_array_equal(built, np.where((j - i >= lo) & (j - i <= hi), x, -1.0))
