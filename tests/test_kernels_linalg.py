"""ops.linalg against NumPy."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops import linalg as L
from kernel_helpers import NUMERIC, arrays, tol


@st.composite
def matmul_case(draw):
    dtype = draw(st.sampled_from(NUMERIC))
    m, k, n = (draw(st.integers(0, 5)) for _ in range(3))
    # batch shapes that broadcast: each axis 1 on one side or equal
    nb = draw(st.integers(0, 2))
    full = [draw(st.integers(0, 3)) for _ in range(nb)]
    a_batch = tuple(d if draw(st.booleans()) else 1 for d in full)
    b_batch = tuple(d if draw(st.booleans()) else 1 for d in full)
    a_batch = a_batch[draw(st.integers(0, len(a_batch))):]  # ranks may differ
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a = draw(arrays(dtype, a_batch + ((k, m) if ta else (m, k)), -5, 5))
    b = draw(arrays(dtype, b_batch + ((n, k) if tb else (k, n)), -5, 5))
    return a, b, ta, tb


@settings(max_examples=60, deadline=None)
@given(matmul_case())
def test_matmul(case):
    a, b, ta, tb = case
    want = np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
    got = L.matmul(a, b, ta, tb)
    assert got.dtype == a.dtype and got.shape == want.shape
    if a.dtype.kind == "f":
        np.testing.assert_allclose(got, want, **tol(a.dtype))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_large_and_noncontiguous(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 784)).astype(dtype)
    b = rng.standard_normal((256, 784)).astype(dtype).T  # a transposed view
    np.testing.assert_allclose(L.matmul(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_int_matmul_wraps():
    a = np.full((1, 2), 2 ** 30, np.int32)
    b = np.full((2, 1), 2, np.int32)
    assert L.matmul(a, b)[0, 0] == np.int32(0)  # 2 * 2**31 wraps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_strided_blocks_and_beta(dtype, ta, tb):
    # C[1:3, 2:5] = 2 * op(A block) @ op(B block) + 0.5 * C, with leading dimensions > width
    rng = np.random.default_rng(1)
    m, n, k = 2, 3, 4
    big_a = rng.standard_normal((6, 7)).astype(dtype)
    big_b = rng.standard_normal((6, 7)).astype(dtype)
    big_c = rng.standard_normal((5, 6)).astype(dtype)
    a_blk = big_a[1:1 + (k if ta else m), 2:2 + (m if ta else k)]
    b_blk = big_b[0:(n if tb else k), 1:1 + (k if tb else n)]
    want = big_c.copy()
    want[1:3, 2:5] = 2 * ((a_blk.T if ta else a_blk) @ (b_blk.T if tb else b_blk)) + \
        0.5 * big_c[1:3, 2:5]
    c = big_c.copy()
    L.gemm(ta, tb, m, n, k, 2.0, big_a.reshape(-1)[1 * 7 + 2:], 7, big_b.reshape(-1)[1:], 7, 0.5,
           c.reshape(-1)[1 * 6 + 2:], 6)
    np.testing.assert_allclose(c, want, **tol(dtype))


def test_gemm_zero_inner_dimension_scales_c():
    c = np.ones((2, 3))
    L.gemm(False, False, 2, 3, 0, 1.0, np.zeros(1), 1, np.zeros(1), 3, 0.5, c.reshape(-1), 3)
    np.testing.assert_array_equal(c, 0.5)


def test_matmul_refuses_mismatched_operands():
    with pytest.raises(ValueError):
        L.matmul(np.zeros((2, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError):
        L.matmul(np.zeros((2, 3)), np.zeros((3, 2), np.float32))
