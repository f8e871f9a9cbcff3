"""ops.nn.logits (softmax, log-softmax, their gradients, the cross-entropies) against NumPy
references and finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops.nn import logits

SET = settings(max_examples=30, deadline=None)


# ---- softmax and cross-entropy -----------------------------------------------------------------
def _softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@st.composite
def logits_case(draw, rank=None):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = tuple(draw(st.lists(st.integers(0 if rank is None else 1, 4), min_size=rank or 1,
                                max_size=rank or 3)))
    shape = shape[:-1] + (max(shape[-1], 1),)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    scale = draw(st.sampled_from([1.0, 30.0, 1000.0]))
    return (rng.standard_normal(shape) * scale).astype(dtype)


@SET
@given(logits_case())
def test_softmax_log_softmax(x):
    s = logits.softmax(x)
    ls = logits.log_softmax(x)
    assert s.dtype == x.dtype and ls.dtype == x.dtype and s.shape == x.shape
    ref = _softmax_ref(x)
    rt = 1e-5 if x.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(s, ref, rtol=rt, atol=rt)
    x64 = x.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    ref_log = x64 - m - np.log(np.exp(x64 - m).sum(-1, keepdims=True))
    np.testing.assert_allclose(ls, ref_log, rtol=rt, atol=rt * max(1, np.abs(x).max(initial=0)))
    assert np.isfinite(s).all() and np.isfinite(ls).all()


@SET
@given(logits_case(rank=2), st.data())
def test_cross_entropies(x, data):
    n, c = x.shape
    labels = np.array([data.draw(st.integers(0, c - 1)) for _ in range(n)],
                      data.draw(st.sampled_from([np.int32, np.int64])))
    loss, probs = logits.sparse_softmax_cross_entropy(x, labels)
    x64 = x.astype(np.float64)
    m = x64.max(-1)
    lse = m + np.log(np.exp(x64 - m[:, None]).sum(-1))
    rt = 1e-5 if x.dtype == np.float32 else 1e-12
    assert loss.dtype == x.dtype and loss.shape == (n,)
    np.testing.assert_allclose(loss, lse - x64[np.arange(n), labels], rtol=rt,
                               atol=rt * max(1, np.abs(x).max()))
    np.testing.assert_allclose(probs, _softmax_ref(x), rtol=rt, atol=rt)
    dense = np.random.default_rng(0).random((n, c)).astype(x.dtype)
    dense /= dense.sum(-1, keepdims=True)
    loss2, probs2 = logits.softmax_cross_entropy(x, dense)
    want = -(dense * (x64 - lse[:, None])).sum(-1)
    np.testing.assert_allclose(loss2, want, rtol=rt, atol=rt * max(1, np.abs(x).max()))
    np.testing.assert_array_equal(probs2, probs)


def test_cross_entropy_large_logits_stable():
    x = np.array([[1000.0, 0.0, -1000.0], [1000.0, 1000.0, 1000.0]], np.float32)
    loss, probs = logits.sparse_softmax_cross_entropy(x, np.array([0, 2]))
    np.testing.assert_allclose(loss, [0.0, np.log(3.0)], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(probs[1], [1 / 3] * 3, rtol=1e-6)
    loss, _ = logits.softmax_cross_entropy(x, np.array([[0, 1, 0], [1, 0, 0]], np.float32))
    np.testing.assert_allclose(loss, [1000.0, np.log(3.0)], rtol=1e-6)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_grads_finite_differences(log):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 5))
    dy = rng.standard_normal((3, 5))
    f = logits.log_softmax if log else logits.softmax
    g = logits.log_softmax_grad if log else logits.softmax_grad
    dx = g(f(x), dy)
    eps = 1e-6
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += eps
        m[idx] -= eps
        num[idx] = np.sum((f(p) - f(m)) * dy) / (2 * eps)
    np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-7)


def test_shape_guards_refuse_instead_of_reading_out_of_bounds():
    with pytest.raises(ValueError, match="sparse_softmax_cross_entropy: incompatible operands"):
        logits.sparse_softmax_cross_entropy(np.zeros((2, 3)), np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="softmax_grad: incompatible operands"):
        logits.softmax_grad(np.zeros((2, 3)), np.zeros((3, 2)))


def test_sparse_cross_entropy_out_of_range_label_is_nan():
    loss, _ = logits.sparse_softmax_cross_entropy(np.zeros((3, 2)), np.array([0, 2, -1]))
    assert np.isfinite(loss[0]) and np.isnan(loss[1]) and np.isnan(loss[2])
