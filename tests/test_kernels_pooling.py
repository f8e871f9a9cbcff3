"""ops.nn.pooling against naive NumPy references, finite differences and adjoint identities."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops.nn import pooling
from kernel_helpers import avg_pool_ref, max_pool_grad_ref, max_pool_ref, pool_out_shape

SET = settings(max_examples=30, deadline=None)


# ---- pooling -----------------------------------------------------------------------------------
@st.composite
def pool_case(draw, distinct=False, dtype=np.float64):
    N = draw(st.integers(0, 2))
    H, W, C = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(0, 3))
    ksize = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if distinct:
        x = rng.permutation(N * H * W * C).reshape(N, H, W, C).astype(dtype)
    else:
        x = rng.integers(-2, 3, (N, H, W, C)).astype(dtype)  # many ties
    return x, ksize, strides, padding


@SET
@given(pool_case(), st.sampled_from([np.float32, np.float64, np.int32]))
def test_max_pool_forward_and_grad(case, dtype):
    x, ksize, strides, padding = case
    x = x.astype(dtype)
    y = pooling.max_pool2d(x, ksize, strides, padding)
    np.testing.assert_array_equal(y, max_pool_ref(x, ksize, strides, padding))
    assert y.dtype == x.dtype
    dy = np.random.default_rng(1).standard_normal(y.shape)
    dx = pooling.max_pool2d_grad(x, y, dy, ksize, strides, padding)
    np.testing.assert_allclose(dx, max_pool_grad_ref(x, dy, ksize, strides, padding),
                               rtol=1e-12, atol=1e-12)
    # grad_grad is the adjoint of grad: <grad(dy), ddx> = <dy, grad_grad(ddx)>
    ddx = np.random.default_rng(2).standard_normal(x.shape)
    gg = pooling.max_pool2d_grad_grad(x, y, ddx, ksize, strides, padding)
    assert gg.shape == y.shape
    np.testing.assert_allclose(np.sum(dx * ddx), np.sum(dy * gg), rtol=1e-10, atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(pool_case(distinct=True))
def test_max_pool_grad_finite_differences(case):
    x, ksize, strides, padding = case
    y = pooling.max_pool2d(x, ksize, strides, padding)
    dy = np.random.default_rng(3).standard_normal(y.shape)
    dx = pooling.max_pool2d_grad(x, y, dy, ksize, strides, padding)
    eps = 1e-3  # values are distinct integers: no window changes its winner
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += eps
        m[idx] -= eps
        num[idx] = np.sum((pooling.max_pool2d(p, ksize, strides, padding)
                           - pooling.max_pool2d(m, ksize, strides, padding)) * dy) / (2 * eps)
    np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-6)


def test_max_pool_padding_never_wins_and_nan():
    x = -np.ones((1, 3, 3, 1)) * 5
    y = pooling.max_pool2d(x, (3, 3), (1, 1), "SAME")
    np.testing.assert_array_equal(y, -5)  # a zero pad cell would have won
    x = np.arange(9.0).reshape(1, 3, 3, 1)
    x[0, 0, 1, 0] = np.nan
    y = pooling.max_pool2d(x, (2, 2), (1, 1), "VALID")
    assert np.isnan(y[0, 0, 0, 0]) and np.isnan(y[0, 0, 1, 0]) and y[0, 1, 1, 0] == 8


@SET
@given(pool_case(), st.sampled_from([np.float32, np.float64]))
def test_avg_pool_forward_and_grad(case, dtype):
    x, ksize, strides, padding = case
    x = (x + np.random.default_rng(4).random(x.shape)).astype(dtype)
    y = pooling.avg_pool2d(x, ksize, strides, padding)
    assert y.dtype == x.dtype
    np.testing.assert_allclose(y, avg_pool_ref(x, ksize, strides, padding), rtol=1e-6,
                               atol=1e-6)
    dy = np.random.default_rng(5).standard_normal(y.shape).astype(dtype)
    dx = pooling.avg_pool2d_grad(x.shape, dy, ksize, strides, padding)
    assert dx.shape == x.shape and dx.dtype == x.dtype
    np.testing.assert_allclose(np.sum(x.astype(np.float64) * dx),
                               np.sum(avg_pool_ref(x, ksize, strides, padding) * dy),
                               rtol=1e-5, atol=1e-5)


def test_avg_pool_same_divides_by_valid_count():
    x = np.ones((1, 2, 2, 1))
    np.testing.assert_array_equal(pooling.avg_pool2d(x, (3, 3), (1, 1), "SAME"), 1.0)
    assert pool_out_shape(x.shape, (3, 3), (1, 1), "SAME") == (1, 2, 2, 1)


def test_shape_guards_refuse_instead_of_reading_out_of_bounds():
    x = np.zeros((1, 4, 4, 2))
    with pytest.raises(ValueError, match="max_pool2d_grad: incompatible operands"):
        pooling.max_pool2d_grad(x, None, np.zeros((1, 1, 1, 2)), (2, 2), (2, 2), "SAME")
    with pytest.raises(ValueError, match="avg_pool2d_grad: incompatible operands"):
        pooling.avg_pool2d_grad(x.shape, np.zeros((1, 2, 2, 1)), (2, 2), (2, 2), "SAME")
