"""Inverses, determinants, solves and decompositions (tf.linalg) against NumPy, their gradients
against finite differences, eagerly and inside tf.function."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError
FLOATS = [np.float32, np.float64]


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)


# ---- strategies -------------------------------------------------------------------------------
batches = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)


def _entries(shape):
    return hnp.arrays(np.float64, shape, elements=st.floats(-1, 1))


@st.composite
def invertible(draw, max_n=4):
    """Diagonally dominant (so well-conditioned) square matrices, batched."""
    batch = draw(batches)
    n = draw(st.integers(1, max_n))
    x = draw(_entries(batch + (n, n)))
    signs = draw(hnp.arrays(np.float64, (n,), elements=st.sampled_from([-1.0, 1.0])))
    return x + np.diag(signs * (n + 1))


@st.composite
def positive_definite(draw, max_n=4):
    batch = draw(batches)
    n = draw(st.integers(1, max_n))
    x = draw(_entries(batch + (n, n)))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _dominant_diagonal(n):
    """(n + 1/2) * I: added to n x n entries in [-1, 1], a strictly diagonally dominant
    (nonsingular) matrix; 3 * I was not (the 3 x 3 seed [[2, -1, -1], [-1, 2, -1], [-1, -1, 2]]
    is singular)."""
    return (n + 0.5) * np.eye(n)


def _orthogonal(seed_matrix):
    """Q of a QR factorization with R's diagonal made positive; ``seed_matrix`` must be
    nonsingular (a zero on R's diagonal would zero a column of Q)."""
    q, r = np.linalg.qr(seed_matrix)
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


@st.composite
def separated_symmetric(draw, max_n=4):
    """Symmetric matrices whose eigenvalues are at least 0.5 apart (eigenvectors well defined)."""
    batch = draw(batches)
    n = draw(st.integers(1, max_n))
    q = _orthogonal(draw(_entries(batch + (n, n))) + _dominant_diagonal(n))
    gaps = draw(hnp.arrays(np.float64, batch + (n,), elements=st.floats(0.5, 2)))
    values = np.cumsum(gaps, axis=-1) - draw(st.floats(0, 4))
    return (q * values[..., None, :]) @ np.swapaxes(q, -1, -2)


@st.composite
def separated_singular(draw, max_side=4):
    """[..., m, n] matrices whose singular values are >= 0.5 and at least 0.5 apart."""
    batch = draw(batches)
    m, n = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    k = min(m, n)
    u = _orthogonal(draw(_entries(batch + (m, m))) + _dominant_diagonal(m))[..., :k]
    v = _orthogonal(draw(_entries(batch + (n, n))) + _dominant_diagonal(n))[..., :k]
    gaps = draw(hnp.arrays(np.float64, batch + (k,), elements=st.floats(0.5, 2)))
    s = np.cumsum(gaps, axis=-1)[..., ::-1]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


@st.composite
def full_rank(draw, max_side=4):
    """[..., m, n] matrices of full rank min(m, n): their leading block strictly diagonally
    dominant (each diagonal entry raised by more than its row's absolute sum)."""
    batch = draw(batches)
    m, n = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    x = draw(_entries(batch + (m, n)))
    return x + (1 + np.abs(x).sum(axis=-1).max(initial=0)) * np.eye(m, n)


def _sym(x):
    return (x + np.swapaxes(x, -1, -2)) / 2


def _tf_sym(x):
    return (x + tf.linalg.matrix_transpose(x)) / 2


# ---- inverse, determinants, solves ------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@given(x=invertible(), adjoint=st.booleans())
def test_inv_matches_numpy(dtype, x, adjoint):
    x = x.astype(dtype)
    out = tf.linalg.inv(x, adjoint=adjoint)
    expected = np.linalg.inv(np.swapaxes(x, -1, -2) if adjoint else x)
    assert out.dtype == tf.as_dtype(dtype) and out.shape == x.shape
    np.testing.assert_allclose(out.numpy(), expected, **_tol(dtype))


@given(x=invertible(), adjoint=st.booleans())
def test_inv_gradients(x, adjoint):
    check_gradients(lambda a: tf.linalg.inv(a, adjoint=adjoint),
                    lambda a: np.linalg.inv(np.swapaxes(a, -1, -2) if adjoint else a), [x])


@pytest.mark.parametrize("dtype", FLOATS)
@given(x=_entries(st.tuples(st.integers(1, 2), st.integers(0, 4)).map(
    lambda s: (s[0], s[1], s[1]))))
def test_det_and_slogdet_match_numpy(dtype, x):
    x = (3 * x).astype(dtype)
    det = tf.linalg.det(x)
    sign, log_abs = tf.linalg.slogdet(x)
    expected_sign, expected_log = np.linalg.slogdet(x.astype(np.float64))
    assert det.dtype == sign.dtype == log_abs.dtype == tf.as_dtype(dtype)
    assert det.shape == sign.shape == log_abs.shape == x.shape[:1]
    np.testing.assert_allclose(det.numpy(), np.linalg.det(x.astype(np.float64)), **_tol(dtype))
    clear = np.abs(np.linalg.det(x.astype(np.float64))) > 1e-2   # rounding cannot flip these
    np.testing.assert_array_equal(sign.numpy()[clear], expected_sign[clear])
    np.testing.assert_allclose(log_abs.numpy()[clear], expected_log[clear], **_tol(dtype))


def test_determinants_of_singular_empty_and_nan_matrices():
    sign, log_abs = tf.linalg.slogdet(np.array([[1.0, 2.0], [2.0, 4.0]]))
    assert sign.numpy() == 0 and log_abs.numpy() == -np.inf
    assert tf.linalg.det(np.zeros((3, 0, 0))).numpy().tolist() == [1.0, 1.0, 1.0]
    sign, log_abs = tf.linalg.slogdet(np.zeros((0, 0)))
    assert sign.numpy() == 1 and log_abs.numpy() == 0
    sign, log_abs = tf.linalg.slogdet(np.array([[np.nan, 1.0], [1.0, 1.0]]))
    assert np.isnan(sign.numpy()) and np.isnan(log_abs.numpy())
    # float32 products that would overflow midway are accumulated in float64
    x = np.diag([1e30, 1e30, 1e-30, 1e-30]).astype(np.float32)
    np.testing.assert_allclose(tf.linalg.det(x).numpy(), 1.0, rtol=1e-5)


@given(x=invertible())
def test_det_and_slogdet_gradients(x):
    check_gradients(tf.linalg.det, np.linalg.det, [x])
    check_gradients(lambda a: tf.linalg.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1], [x])


def test_logdet_of_positive_definite_matrices():
    x = np.array([[[4.0, 1.0], [1.0, 3.0]], [[2.0, 0.0], [0.0, 5.0]]])
    np.testing.assert_allclose(tf.linalg.logdet(x).numpy(), np.linalg.slogdet(x)[1], rtol=1e-12)
    check_gradients(lambda a: tf.linalg.logdet(_tf_sym(a)),
                    lambda a: np.linalg.slogdet(_sym(a))[1], [x])


@st.composite
def solve_case(draw):
    a = draw(invertible())
    k = draw(st.integers(0, 3))
    b = draw(_entries(a.shape[:-1] + (k,)))
    return a, b, draw(st.booleans())


@pytest.mark.parametrize("dtype", FLOATS)
@given(case=solve_case())
def test_solve_matches_numpy(dtype, case):
    a, b, adjoint = (v.astype(dtype) if isinstance(v, np.ndarray) else v for v in case)
    out = tf.linalg.solve(a, b, adjoint=adjoint)
    op = np.swapaxes(a, -1, -2) if adjoint else a
    assert out.dtype == tf.as_dtype(dtype) and out.shape == b.shape
    if b.size:
        np.testing.assert_allclose(out.numpy(), np.linalg.solve(op, b), **_tol(dtype))


@given(case=solve_case())
def test_solve_gradients(case):
    a, b, adjoint = case
    check_gradients(lambda x, y: tf.linalg.solve(x, y, adjoint=adjoint),
                    lambda x, y: np.linalg.solve(np.swapaxes(x, -1, -2) if adjoint else x, y),
                    [a, b])


def test_singular_matrices_are_refused_by_inv_and_solve():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(IAE, match="matrix_inverse: Input is not invertible"):
        tf.linalg.inv(singular)
    with pytest.raises(IAE, match=r"matrix_inverse: Input is not invertible.*\(matrix \(1,\) "):
        tf.linalg.inv(np.stack([np.eye(2), singular]))
    with pytest.raises(IAE, match="matrix_inverse: Input is not invertible"):
        tf.linalg.inv(np.array([[np.nan, 1.0], [1.0, 1.0]]))
    with pytest.raises(IAE, match="matrix_solve: Input matrix is not invertible"):
        tf.linalg.solve(singular, np.ones((2, 1)))


def test_shape_and_dtype_errors():
    with pytest.raises(IAE, match=r"matrix_inverse: input must be a square matrix .*\[2,3\]"):
        tf.linalg.inv(np.ones((2, 3)))
    with pytest.raises(IAE, match=r"matrix_determinant: input must be a matrix .*rank >= 2.*\[3\]"):
        tf.linalg.det(np.ones(3))
    with pytest.raises(TypeError, match="cholesky: input has dtype int32"):
        tf.linalg.cholesky(tf.constant([[1]]))
    with pytest.raises(IAE, match=r"matrix_solve: .*\[2,2\].*\[3,1\].*incompatible"):
        tf.linalg.solve(np.eye(2), np.ones((3, 1)))
    with pytest.raises(IAE, match="matrix_solve: .*no broadcasting"):
        tf.linalg.solve(np.stack([np.eye(2)] * 3), np.ones((1, 2, 1)))
    with pytest.raises(IAE, match="matrix_solve: matrix has dtype float64 but rhs has dtype "
                                  "float32"):
        tf.linalg.solve(tf.constant(np.eye(2)), tf.ones([2, 1]))
    with pytest.raises(IAE, match=r"matrix_triangular_solve: .*must have 2 rows"):
        tf.linalg.triangular_solve(np.eye(2), np.ones((3, 1)))
    with pytest.raises(IAE, match=r"matrix_triangular_solve: Incompatible shapes: \[3\] vs. \[2\]"):
        tf.linalg.triangular_solve(np.ones((3, 2, 2)), np.ones((2, 2, 1)))
    with pytest.raises(IAE, match=r"svd: input must be a matrix"):
        tf.linalg.svd(np.ones(3))
    with pytest.raises(TypeError, match="qr: full_matrices must be a Python bool"):
        tf.linalg.qr(np.eye(2), full_matrices=tf.constant(True))


# ---- triangular solves ------------------------------------------------------------------------
@st.composite
def triangular_case(draw, max_n=4):
    """A (batched, broadcast) triangular system: the matrix's other triangle is garbage that
    must not be read."""
    (batch_a, batch_b), _ = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=2, min_side=1, max_side=3))
    n, k = draw(st.integers(1, max_n)), draw(st.integers(0, 3))
    a = draw(_entries(batch_a + (n, n))) + 3 * np.eye(n)
    b = draw(_entries(batch_b + (n, k)))
    return a, b, draw(st.booleans()), draw(st.booleans())


def _np_triangular_solve(a, b, lower, adjoint):
    t = np.tril(a) if lower else np.triu(a)
    if adjoint:
        t = np.swapaxes(t, -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(t, batch + t.shape[-2:]),
                           np.broadcast_to(b, batch + b.shape[-2:]))


@pytest.mark.parametrize("dtype", FLOATS)
@given(case=triangular_case())
def test_triangular_solve_matches_numpy(dtype, case):
    a, b, lower, adjoint = case
    a, b = a.astype(dtype), b.astype(dtype)
    out = tf.linalg.triangular_solve(a, b, lower=lower, adjoint=adjoint)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    assert out.dtype == tf.as_dtype(dtype) and out.shape == batch + b.shape[-2:]
    if b.size:
        np.testing.assert_allclose(out.numpy(), _np_triangular_solve(a, b, lower, adjoint),
                                   **_tol(dtype))


@given(case=triangular_case())
def test_triangular_solve_gradients(case):
    a, b, lower, adjoint = case
    check_gradients(lambda x, y: tf.linalg.triangular_solve(x, y, lower=lower, adjoint=adjoint),
                    lambda x, y: _np_triangular_solve(x, y, lower, adjoint), [a, b])


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_triangular_solve_blocked_large_system(lower, adjoint):
    # Larger than one block of substitution: the blocks are joined by matrix products.
    rng = np.random.default_rng(0)
    a = rng.normal(size=(150, 150)) + 150 * np.eye(150)
    b = rng.normal(size=(150, 5))
    out = tf.linalg.triangular_solve(a, b, lower=lower, adjoint=adjoint)
    np.testing.assert_allclose(out.numpy(), _np_triangular_solve(a, b, lower, adjoint),
                               rtol=1e-10, atol=1e-12)


def test_triangular_solve_zero_pivot_gives_infinities_as_tf():
    out = tf.linalg.triangular_solve(np.array([[0.0, 5.0], [1.0, 4.0]]), np.ones((2, 1)))
    assert out.numpy()[0, 0] == np.inf and out.numpy()[1, 0] == -np.inf


# ---- Cholesky ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@given(x=positive_definite())
def test_cholesky_matches_numpy_and_reads_the_lower_triangle(dtype, x):
    x = x.astype(dtype)
    garbage = x + np.triu(np.full(x.shape[-2:], 100.0, dtype), 1)   # ignored upper triangle
    out = tf.linalg.cholesky(garbage)
    assert out.dtype == tf.as_dtype(dtype) and out.shape == x.shape
    np.testing.assert_allclose(out.numpy(), np.linalg.cholesky(x), **_tol(dtype))


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan_as_tf():
    out = tf.linalg.cholesky(np.stack([np.eye(2), -np.eye(2)])).numpy()
    np.testing.assert_array_equal(out[0], np.eye(2))
    assert np.isnan(np.tril(out[1])[np.tril_indices(2)]).all() and out[1, 0, 1] == 0


@given(x=positive_definite())
def test_cholesky_gradients(x):
    # Symmetric perturbations (the matrix is symmetric); TF's gradient is symmetric too.
    check_gradients(lambda a: tf.linalg.cholesky(_tf_sym(a)),
                    lambda a: np.linalg.cholesky(_sym(a)), [x])
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(tf.linalg.cholesky(xt) * np.arange(xt.shape[-1]))
    g = tape.gradient(y, xt).numpy()
    np.testing.assert_allclose(g, np.swapaxes(g, -1, -2), rtol=1e-12, atol=1e-12)


@given(x=positive_definite(), k=st.integers(0, 3))
def test_cholesky_solve(x, k):
    b = np.arange(x.shape[-1] * k, dtype=np.float64).reshape(x.shape[-1], k)
    chol = tf.linalg.cholesky(x)
    out = tf.linalg.cholesky_solve(chol, b)
    expected = np.linalg.solve(x, np.broadcast_to(b, x.shape[:-2] + b.shape))
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-9, atol=1e-9)
    check_gradients(lambda c, r: tf.linalg.cholesky_solve(c, r),
                    lambda c, r: np.linalg.solve(np.tril(c) @ np.swapaxes(np.tril(c), -1, -2),
                                                 np.broadcast_to(r, c.shape[:-2] + r.shape)),
                    [np.linalg.cholesky(x), b])


# ---- eigh -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@given(x=separated_symmetric())
def test_eigh_matches_numpy(dtype, x):
    x = x.astype(dtype)
    e, v = tf.linalg.eigh(x + np.triu(np.full(x.shape[-2:], 7.0, dtype), 1))   # lower read
    expected = np.linalg.eigvalsh(x)
    assert e.dtype == v.dtype == tf.as_dtype(dtype)
    assert e.shape == x.shape[:-1] and v.shape == x.shape
    np.testing.assert_allclose(e.numpy(), expected, **_tol(dtype))
    np.testing.assert_allclose(tf.linalg.eigvalsh(x).numpy(), expected, **_tol(dtype))
    v = v.numpy()
    np.testing.assert_allclose(x @ v, v * e.numpy()[..., None, :], **_tol(dtype))
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(
        np.eye(x.shape[-1]), x.shape), **_tol(dtype))


@given(x=separated_symmetric())
def test_eigh_gradients(x):
    # NumPy's eigh reads the lower triangle too, so finite differences give TF's lower
    # triangular gradient.  Eigenvectors are compared through v * v (free of their sign).
    def np_fn(a):
        e, v = np.linalg.eigh(a)
        return np.concatenate([e, (v * v).reshape(e.shape[:-1] + (-1,))], axis=-1)

    def tf_fn(a):
        e, v = tf.linalg.eigh(a)
        return tf.concat([e, tf.reshape(v * v, e.shape.as_list()[:-1] + [-1])], axis=-1)

    check_gradients(tf_fn, np_fn, [x])
    check_gradients(tf.linalg.eigvalsh, np.linalg.eigvalsh, [x])


def test_eigh_errors():
    with pytest.raises(IAE, match="self_adjoint_eig: Self-adjoint eigen decomposition was not "
                                  "successful"):
        tf.linalg.eigh(np.array([[np.nan, 0.0], [0.0, 1.0]]))
    e, _ = tf.linalg.eigh(np.array([[1.0, np.nan], [0.0, 2.0]]))   # the unread triangle
    np.testing.assert_allclose(e.numpy(), [1.0, 2.0])
    assert tf.linalg.eigh(np.zeros((0, 0)))[0].shape == [0]


# ---- QR ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@given(x=full_rank(), full=st.booleans())
def test_qr_matches_numpy(dtype, x, full):
    x = x.astype(dtype)
    q, r = tf.linalg.qr(x, full_matrices=full)
    m, n = x.shape[-2:]
    p = m if full else min(m, n)
    assert q.shape == x.shape[:-2] + (m, p) and r.shape == x.shape[:-2] + (p, n)
    q, r = q.numpy(), r.numpy()
    np.testing.assert_allclose(q @ r, x, **_tol(dtype))
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(p), x.shape[
        :-2] + (p, p)), **_tol(dtype))
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    _, r_np = np.linalg.qr(x.astype(np.float64), mode="complete" if full else "reduced")
    np.testing.assert_allclose(np.abs(r), np.abs(r_np), **_tol(dtype))


@given(x=full_rank())
def test_qr_gradients(x):
    # Householder QR flips the signs of a column of q and a row of r where a column's part
    # below the diagonal passes through zero; with those signs fixed (r's diagonal > 0) the
    # factors are smooth, so finite differences see the derivative that the gradient gives.
    def np_fn(a):
        q, r = np.linalg.qr(a)
        signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
        return np.concatenate([(q * signs[..., None, :]).reshape(x.shape[:-2] + (-1,)),
                               (r * signs[..., :, None]).reshape(x.shape[:-2] + (-1,))], -1)

    def tf_fn(a):
        q, r = tf.linalg.qr(a)
        signs = tf.sign(tf.linalg.diag_part(r))
        return tf.concat([tf.reshape(q * signs[..., None, :], x.shape[:-2] + (-1,)),
                          tf.reshape(r * signs[..., :, None], x.shape[:-2] + (-1,))], -1)

    check_gradients(tf_fn, np_fn, [x])


def test_qr_full_matrices_gradient():
    x = np.array([[2.0, 1.0, 0.5], [0.3, 3.0, 1.0]])   # wide: full q is the reduced one
    check_gradients(lambda a: tf.linalg.qr(a, full_matrices=True)[1],
                    lambda a: np.linalg.qr(a, mode="complete")[1], [x])
    with pytest.raises(IAE, match="qr: the gradient of qr\\(full_matrices=True\\) of a matrix "
                                  "with more rows than columns"):
        xt = tf.constant(x.T)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            q, _ = tf.linalg.qr(xt, full_matrices=True)
        tape.gradient(q, xt)


def test_qr_of_empty_matrices():
    q, r = tf.linalg.qr(np.zeros((2, 0)), full_matrices=True)
    np.testing.assert_array_equal(q.numpy(), np.eye(2))
    assert r.shape == [2, 0]
    q, r = tf.linalg.qr(np.zeros((2, 0)))
    assert q.shape == [2, 0] and r.shape == [0, 0]


# ---- SVD --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@given(x=separated_singular(), full=st.booleans())
def test_svd_matches_numpy(dtype, x, full):
    x = x.astype(dtype)
    s, u, v = tf.linalg.svd(x, full_matrices=full)
    m, n = x.shape[-2:]
    k = min(m, n)
    assert s.shape == x.shape[:-2] + (k,)
    assert u.shape == x.shape[:-2] + ((m, m) if full else (m, k))
    assert v.shape == x.shape[:-2] + ((n, n) if full else (n, k))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(x, compute_uv=False), **_tol(dtype))
    np.testing.assert_allclose(tf.linalg.svd(x, compute_uv=False).numpy(), s.numpy(),
                               **_tol(dtype))
    u, v = u.numpy(), v.numpy()
    np.testing.assert_allclose((u[..., :k] * s.numpy()[..., None, :]) @ np.swapaxes(
        v[..., :k], -1, -2), x, **_tol(dtype))
    for w in (u, v):
        size = w.shape[-1]
        np.testing.assert_allclose(np.swapaxes(w, -1, -2) @ w, np.broadcast_to(
            np.eye(size), w.shape[:-2] + (size, size)), **_tol(dtype))


@given(x=separated_singular(), full=st.booleans())
def test_svd_gradients(x, full):
    m, n = x.shape[-2:]
    if full and abs(m - n) > 1:
        full = False   # not defined there (see test_svd_full_matrices_gradient_limits)
    weights = np.linspace(1.0, 2.0, max(m, n))

    def np_fn(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        k = s.shape[-1]
        parts = [s, (u * u)[..., 0, :k], (vh * vh)[..., :k, 0],
                 ((u[..., :k] * weights[:k]) @ vh[..., :k, :])[..., 0, :]]
        return np.concatenate(parts, axis=-1)

    def tf_fn(a):
        s, u, v = tf.linalg.svd(a, full_matrices=full)
        k = s.shape[-1]
        joint = tf.matmul(u[..., :k] * weights[:k], v[..., :k], transpose_b=True)
        return tf.concat([s, (u * u)[..., 0, :k], (v * v)[..., 0, :k], joint[..., 0, :]], -1)

    check_gradients(tf_fn, np_fn, [x])
    check_gradients(lambda a: tf.linalg.svd(a, compute_uv=False),
                    lambda a: np.linalg.svd(a, compute_uv=False), [x])


def test_svd_full_matrices_gradient_limits():
    x = np.array([[3.0, 0.1], [0.2, 1.0], [0.5, 0.3], [0.1, 0.4]])   # 4 x 2
    xt = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        s, u, v = tf.linalg.svd(xt, full_matrices=True)
        through_s_and_v = tf.reduce_sum(s) + tf.reduce_sum(v * v)
        through_u = tf.reduce_sum(u)
    np.testing.assert_allclose(tape.gradient(through_s_and_v, xt).numpy(),
                               np.linalg.svd(x, full_matrices=False)[0] @
                               np.linalg.svd(x)[2], rtol=1e-9, atol=1e-12)
    with pytest.raises(IAE, match="svd: the gradient through u of svd\\(full_matrices="
                                  "True\\) of a 4 x 2 matrix is not defined"):
        tape.gradient(through_u, xt)


def test_svd_of_empty_and_nan_matrices():
    s, u, v = tf.linalg.svd(np.zeros((0, 3)), full_matrices=True)
    assert s.shape == [0] and u.shape == [0, 0]
    np.testing.assert_array_equal(v.numpy(), np.eye(3))
    s, u, v = tf.linalg.svd(np.array([[np.nan, 1.0], [1.0, 1.0]]))
    assert np.isnan(s.numpy()).all() and np.isnan(u.numpy()).all() and np.isnan(v.numpy()).all()


# ---- second-order gradients, tracing ------------------------------------------------------
def _first_gradient(a):
    """The gradient of det(a) + sum(inv(a)), taken under whatever tape records it."""
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = tf.linalg.det(a) + tf.reduce_sum(tf.linalg.inv(a))
    return tape.gradient(y, a)


def test_second_order_gradients_of_inv_and_det():
    # The gradient rules are ops themselves: an outer tape differentiates them.
    check_gradients(_first_gradient, lambda a: _first_gradient(tf.constant(a)).numpy(),
                    [np.array([[2.0, 0.5], [0.3, 1.5]])], rtol=1e-4, atol=1e-6)


SCALAR_FUNCTIONS = {
    "cholesky": lambda a: tf.reduce_sum(tf.linalg.cholesky(_tf_sym(a)) ** 2),
    "eigh": lambda a: tf.reduce_sum(tf.linalg.eigh(a)[0] ** 3) +
    tf.reduce_sum(tf.linalg.eigh(a)[1] ** 4),
    "svd": lambda a: tf.reduce_sum(tf.linalg.svd(a)[0] ** 3) +
    tf.reduce_sum(tf.linalg.svd(a)[1] ** 4),
    "qr": lambda a: tf.reduce_sum(tf.abs(tf.linalg.qr(a)[1]) ** 3),
    "solve": lambda a: tf.reduce_sum(tf.linalg.solve(a, a[:, :1] ** 2)),
    "triangular_solve": lambda a: tf.reduce_sum(tf.linalg.triangular_solve(a, a ** 2)),
    "slogdet": lambda a: tf.linalg.slogdet(a)[1],
}


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_second_order_gradients(name):
    fn = SCALAR_FUNCTIONS[name]

    def gradient(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = fn(a)
        return tape.gradient(y, a)

    x = np.array([[4.0, 0.7, 0.2], [0.4, 3.0, 0.5], [0.1, 0.6, 2.0]])   # distinct eig/sing
    check_gradients(gradient, lambda a: gradient(tf.constant(a)).numpy(), [x], rtol=1e-4,
                    atol=1e-6)


OPS_IN_FUNCTIONS = {
    "inv": (lambda a: tf.linalg.inv(a), [np.array([[2.0, 1.0], [0.5, 3.0]])]),
    "slogdet": (lambda a: tf.linalg.slogdet(a), [np.array([[2.0, 1.0], [0.5, -3.0]])]),
    "det": (lambda a: tf.linalg.det(a), [np.ones((3, 2, 2)) + np.eye(2)]),
    "solve": (lambda a, b: tf.linalg.solve(a, b, adjoint=True),
              [np.array([[2.0, 1.0], [0.5, 3.0]]), np.ones((2, 3))]),
    "triangular_solve": (lambda a, b: tf.linalg.triangular_solve(a, b, lower=False),
                         [np.array([[2.0, 1.0], [0.5, 3.0]]), np.ones((2, 3))]),
    "cholesky": (lambda a: tf.linalg.cholesky(a), [np.array([[4.0, 1.0], [1.0, 3.0]])]),
    "cholesky_solve": (lambda c, b: tf.linalg.cholesky_solve(c, b),
                       [np.array([[2.0, 0.0], [0.5, 1.5]]), np.ones((2, 3))]),
    "logdet": (lambda a: tf.linalg.logdet(a), [np.array([[4.0, 1.0], [1.0, 3.0]])]),
    "eigh": (lambda a: tf.linalg.eigh(a)[0], [np.array([[4.0, 1.0], [1.0, 3.0]])]),
    "eigvalsh": (lambda a: tf.linalg.eigvalsh(a), [np.array([[4.0, 1.0], [1.0, 3.0]])]),
    "qr": (lambda a: tf.linalg.qr(a, full_matrices=True), [np.arange(6.0).reshape(3, 2)]),
    "svd": (lambda a: tf.linalg.svd(a)[0], [np.arange(6.0).reshape(2, 3)]),
    "singular_values": (lambda a: tf.linalg.svd(a, compute_uv=False),
                        [np.arange(6.0).reshape(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(OPS_IN_FUNCTIONS))
def test_ops_in_functions_match_eager(name):
    fn, arrays = OPS_IN_FUNCTIONS[name]
    in_all_modes(fn, *arrays)


def test_gradients_inside_a_function_match_eager():
    x = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

    def grads(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            e, v = tf.linalg.eigh(a)
            s = tf.linalg.svd(a, compute_uv=False)
            q, r = tf.linalg.qr(a)
            y = (tf.reduce_sum(tf.linalg.cholesky(a)) + tf.reduce_sum(e * e) +
                 tf.reduce_sum(v[..., 0] ** 2) + tf.reduce_sum(s) + tf.reduce_sum(r * r) +
                 tf.linalg.slogdet(a)[1] + tf.reduce_sum(tf.linalg.inv(a)))
        return tape.gradient(y, a)

    eager = grads(tf.constant(x)).numpy()
    traced = tf.function(grads)(tf.constant(x)).numpy()
    np.testing.assert_allclose(traced, eager, rtol=1e-12, atol=1e-12)
