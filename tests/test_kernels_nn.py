"""ops.nn against naive NumPy references, finite differences and adjoint identities."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ops import nn
from kernel_helpers import (avg_pool_ref, conv2d_ref, max_pool_grad_ref, max_pool_ref,
                            pool_out_shape)

SET = settings(max_examples=30, deadline=None)
# the path fixture only patches module constants, the same for every example
SET_PATH = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
BIG = 1 << 30


# ---- padding arithmetic ------------------------------------------------------------------------
@pytest.mark.parametrize("n,k,s,d,want", [(5, 3, 2, 1, (1, 1)), (4, 3, 2, 1, (0, 1)),
                                          (28, 5, 1, 1, (2, 2)), (7, 1, 3, 1, (0, 0)),
                                          (10, 3, 1, 2, (2, 2)), (2, 4, 1, 1, (1, 2)),
                                          (6, 2, 2, 1, (0, 0))])
def test_same_padding(n, k, s, d, want):
    assert nn.same_padding(n, k, s, d) == want


@pytest.mark.parametrize("n,k,s,d,pad,want", [(5, 3, 2, 1, "VALID", 2), (5, 3, 2, 1, "SAME", 3),
                                              (4, 3, 1, 2, "VALID", 0), (28, 2, 2, 1, "SAME", 14),
                                              (0, 3, 1, 1, "SAME", 0), (7, 7, 1, 1, "VALID", 1)])
def test_conv_output_size(n, k, s, d, pad, want):
    assert nn.conv_output_size(n, k, s, d, pad) == want


def test_bad_padding_string():
    with pytest.raises(ValueError):
        nn.conv_output_size(4, 2, 1, 1, "same")


# ---- conv2d ------------------------------------------------------------------------------------
@pytest.fixture(params=["auto", "im2col", "patch_t", "shift", "winograd"])
def conv_path(request, monkeypatch):
    """Force one implementation (winograd only applies to 3x3 and 5x5 filters with stride 1 and
    dilation 1, the shift forms to stride 1)."""
    if request.param in ("im2col", "patch_t", "shift"):
        monkeypatch.setattr(nn, "_WINO_MIN_CH", BIG)
        monkeypatch.setattr(nn, "_W5_MIN_CH", BIG)
    if request.param in ("im2col", "patch_t"):
        monkeypatch.setattr(nn, "_SHIFT_MIN_CIN", BIG)
        monkeypatch.setattr(nn, "_SHIFT_FILTER_MAX_CIN", 0)
    if request.param == "im2col":
        monkeypatch.setattr(nn, "_PATCH_T_MAX_CIN", 0)
        monkeypatch.setattr(nn, "_CHUNK_ELEMS", 64)  # many small chunks
    elif request.param == "patch_t":
        monkeypatch.setattr(nn, "_PATCH_T_MAX_CIN", BIG)
        monkeypatch.setattr(nn, "_CHUNK_T_ELEMS", 64)
    elif request.param == "shift":
        monkeypatch.setattr(nn, "_SHIFT_MIN_CIN", 1)
        monkeypatch.setattr(nn, "_SHIFT_FILTER_MIN_CIN", 1)
        monkeypatch.setattr(nn, "_SHIFT_FILTER_MAX_CIN", BIG)
        monkeypatch.setattr(nn, "_SHIFT_FILTER_MIN_TAPS", 1)
    elif request.param == "winograd":
        monkeypatch.setattr(nn, "_WINO_MIN_CH", 1)
        monkeypatch.setattr(nn, "_W5_MIN_CH", 1)
    return request.param


@st.composite
def conv_case(draw, three_by_three=False):
    N = draw(st.integers(0, 2))
    H, W = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    C, Co = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if three_by_three:
        kh = kw = 3
        strides = dil = (1, 1)
    else:
        kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    x = rng.standard_normal((N, H, W, C))
    w = rng.standard_normal((kh, kw, C, Co))
    return x, w, strides, padding, dil


def _check_conv(x, w, strides, padding, dil):
    y = nn.conv2d(x, w, strides, padding, dil)
    want = conv2d_ref(x, w, strides, padding, dil)
    assert y.shape == want.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)
    # the gradients are the adjoints: <conv(x, w), dy> = <x, dx> = <w, dw>
    dy = np.random.default_rng(7).standard_normal(y.shape)
    dx = nn.conv2d_backprop_input(x.shape, w, dy, strides, padding, dil)
    dw = nn.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dil)
    assert dx.shape == x.shape and dw.shape == w.shape
    ref = np.sum(want * dy)
    np.testing.assert_allclose(np.sum(x * dx), ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.sum(w * dw), ref, rtol=1e-9, atol=1e-9)


@SET_PATH
@given(conv_case())
def test_conv2d_general(conv_path, case):
    _check_conv(*case)


@SET_PATH
@given(conv_case(three_by_three=True))
def test_conv2d_3x3(conv_path, case):
    _check_conv(*case)


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("shape,padding", [((3, 20, 20, 2), "SAME"), ((2, 34, 35, 3), "VALID"),
                                           ((1, 5, 40, 2), "SAME")])
def test_conv2d_many_chunks(conv_path, shape, padding, k):
    # large enough for several shift-form anchor blocks and Winograd tile chunks
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((k, k, shape[3], 4))
    _check_conv(x, w, (1, 1), padding, (1, 1))


def test_conv2d_gradients_match_finite_differences(conv_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 5, 4, 2))
    w = rng.standard_normal((3, 3, 2, 2))
    for strides, padding, dil in [((1, 1), "SAME", (1, 1)), ((2, 1), "VALID", (1, 1)),
                                  ((1, 1), "SAME", (1, 2))]:
        y = nn.conv2d(x, w, strides, padding, dil)
        dy = rng.standard_normal(y.shape)
        f = lambda xx, ww: np.sum(nn.conv2d(xx, ww, strides, padding, dil) * dy)
        dx = nn.conv2d_backprop_input(x.shape, w, dy, strides, padding, dil)
        dw = nn.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dil)
        eps = 1e-6
        for arr, grad, which in ((x, dx, 0), (w, dw, 1)):
            num = np.zeros_like(arr)
            for idx in np.ndindex(arr.shape):
                p, m = arr.copy(), arr.copy()
                p[idx] += eps
                m[idx] -= eps
                num[idx] = (f(p, w) - f(m, w) if which == 0 else f(x, p) - f(x, m)) / (2 * eps)
            np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cin,cout,k,strides", [(16, 16, 3, (1, 1)), (1, 8, 5, (1, 1)),
                                                (48, 8, 3, (2, 2)), (50, 6, 2, (1, 1))])
def test_conv2d_float32(cin, cout, k, strides):
    rng = np.random.default_rng(cin)
    x = rng.standard_normal((2, 9, 10, cin)).astype(np.float32)
    w = rng.standard_normal((k, k, cin, cout)).astype(np.float32)
    y = nn.conv2d(x, w, strides, "SAME")
    assert y.dtype == np.float32
    scale = np.sqrt(k * k * cin)
    np.testing.assert_allclose(y, conv2d_ref(x, w, strides, "SAME", (1, 1)), rtol=1e-4,
                               atol=1e-5 * scale)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = nn.conv2d_backprop_input(x.shape, w, dy, strides, "SAME")
    dw = nn.conv2d_backprop_filter(x, w.shape, dy, strides, "SAME")
    assert dx.dtype == np.float32 and dw.dtype == np.float32
    ref = np.sum(conv2d_ref(x, w, strides, "SAME", (1, 1)) * dy)
    np.testing.assert_allclose(np.sum(x.astype(np.float64) * dx), ref, rtol=1e-4)
    np.testing.assert_allclose(np.sum(w.astype(np.float64) * dw), ref, rtol=1e-4)


# ---- few input channels: the transposed patch matrix ---------------------------------------------
def conv2d_filter_grad_ref(x, w_shape, dy, strides, padding, dilations):
    """dw of conv2d by direct loops over outputs and taps, in float64."""
    N, H, W, C = x.shape
    kh, kw = w_shape[:2]
    _, Ho, Wo, _ = dy.shape
    (sh, sw), (dh, dw_) = strides, dilations
    pt = nn.same_padding(H, kh, sh, dh)[0] if padding == "SAME" else 0
    pl = nn.same_padding(W, kw, sw, dw_)[0] if padding == "SAME" else 0
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    out = np.zeros(w_shape)
    for oh in range(Ho):
        for ow in range(Wo):
            for i in range(kh):
                ih = oh * sh - pt + i * dh
                for j in range(kw):
                    iw = ow * sw - pl + j * dw_
                    if 0 <= ih < H and 0 <= iw < W:
                        out[i, j] += x64[:, ih, iw].T @ dy64[:, oh, ow]
    return out


def _assert_close_scaled(got, want, dtype):
    assert got.dtype == dtype and got.shape == want.shape
    scale = max(float(np.abs(want).max()), 1e-30)
    if dtype == np.float64:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * scale)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cin", [1, 2, 3, 4])
@pytest.mark.parametrize("k,strides,dil,padding", [(5, (1, 1), (1, 1), "SAME"),
                                                   (3, (2, 1), (1, 1), "VALID"),
                                                   (3, (1, 3), (2, 1), "SAME"),
                                                   (2, (2, 2), (1, 1), "SAME"),
                                                   (1, (1, 1), (1, 1), "VALID")])
def test_conv2d_few_channels_patch_t(monkeypatch, cin, k, strides, dil, padding, dtype):
    # forward and filter gradient through the transposed patch matrix, in several chunks (the
    # last one partial) that the filter gradient accumulates
    monkeypatch.setattr(nn, "_CHUNK_T_ELEMS", 150)
    monkeypatch.setattr(nn, "_SHIFT_FILTER_MAX_CIN", 0)  # (which would take cin=4 with 5x5)
    assert nn._use_patch_t(cin) and not nn._use_shift(strides, cin)
    rng = np.random.default_rng(cin * 10 + k)
    N = 3 if cin % 2 else 1
    x = rng.standard_normal((N, 9, 8, cin)).astype(dtype)
    w = rng.standard_normal((k, k, cin, 6)).astype(dtype)
    y = nn.conv2d(x, w, strides, padding, dil)
    _assert_close_scaled(y, conv2d_ref(x, w, strides, padding, dil), dtype)
    dy = rng.standard_normal(y.shape).astype(dtype)
    dw = nn.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dil)
    _assert_close_scaled(dw, conv2d_filter_grad_ref(x, w.shape, dy, strides, padding, dil),
                         dtype)


def test_conv2d_first_layer_defaults():
    # a CNN's first layer (one input channel, 5x5, SAME) takes the transposed patch matrix for
    # both the forward pass and the filter gradient
    assert nn._use_patch_t(1) and not nn._use_shift_filter(5, 5, (1, 1), 1)
    assert not nn._use_winograd5(5, 5, (1, 1), (1, 1), 1, 32)
    rng = np.random.default_rng(0)
    x = rng.random((2, 28, 28, 1), dtype=np.float32)
    w = (rng.standard_normal((5, 5, 1, 8)) * 0.2).astype(np.float32)
    y = nn.conv2d(x, w, (1, 1), "SAME")
    _assert_close_scaled(y, conv2d_ref(x, w, (1, 1), "SAME", (1, 1)), np.float32)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    _assert_close_scaled(nn.conv2d_backprop_filter(x, w.shape, dy, (1, 1), "SAME"),
                         conv2d_filter_grad_ref(x, w.shape, dy, (1, 1), "SAME", (1, 1)),
                         np.float32)


def test_conv2d_empty_channels():
    x = np.zeros((2, 4, 4, 0))
    w = np.zeros((3, 3, 0, 5))
    np.testing.assert_array_equal(nn.conv2d(x, w, (1, 1), "SAME"), np.zeros((2, 4, 4, 5)))
    assert nn.conv2d_backprop_filter(x, w.shape, np.ones((2, 4, 4, 5)), (1, 1),
                                     "SAME").shape == w.shape


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
    y = nn.max_pool2d(x, ksize, strides, padding)
    np.testing.assert_array_equal(y, max_pool_ref(x, ksize, strides, padding))
    assert y.dtype == x.dtype
    dy = np.random.default_rng(1).standard_normal(y.shape)
    dx = nn.max_pool2d_grad(x, y, dy, ksize, strides, padding)
    np.testing.assert_allclose(dx, max_pool_grad_ref(x, dy, ksize, strides, padding),
                               rtol=1e-12, atol=1e-12)
    # grad_grad is the adjoint of grad: <grad(dy), ddx> = <dy, grad_grad(ddx)>
    ddx = np.random.default_rng(2).standard_normal(x.shape)
    gg = nn.max_pool2d_grad_grad(x, y, ddx, ksize, strides, padding)
    assert gg.shape == y.shape
    np.testing.assert_allclose(np.sum(dx * ddx), np.sum(dy * gg), rtol=1e-10, atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(pool_case(distinct=True))
def test_max_pool_grad_finite_differences(case):
    x, ksize, strides, padding = case
    y = nn.max_pool2d(x, ksize, strides, padding)
    dy = np.random.default_rng(3).standard_normal(y.shape)
    dx = nn.max_pool2d_grad(x, y, dy, ksize, strides, padding)
    eps = 1e-3  # values are distinct integers: no window changes its winner
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += eps
        m[idx] -= eps
        num[idx] = np.sum((nn.max_pool2d(p, ksize, strides, padding)
                           - nn.max_pool2d(m, ksize, strides, padding)) * dy) / (2 * eps)
    np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-6)


def test_max_pool_padding_never_wins_and_nan():
    x = -np.ones((1, 3, 3, 1)) * 5
    y = nn.max_pool2d(x, (3, 3), (1, 1), "SAME")
    np.testing.assert_array_equal(y, -5)  # a zero pad cell would have won
    x = np.arange(9.0).reshape(1, 3, 3, 1)
    x[0, 0, 1, 0] = np.nan
    y = nn.max_pool2d(x, (2, 2), (1, 1), "VALID")
    assert np.isnan(y[0, 0, 0, 0]) and np.isnan(y[0, 0, 1, 0]) and y[0, 1, 1, 0] == 8


@SET
@given(pool_case(), st.sampled_from([np.float32, np.float64]))
def test_avg_pool_forward_and_grad(case, dtype):
    x, ksize, strides, padding = case
    x = (x + np.random.default_rng(4).random(x.shape)).astype(dtype)
    y = nn.avg_pool2d(x, ksize, strides, padding)
    assert y.dtype == x.dtype
    np.testing.assert_allclose(y, avg_pool_ref(x, ksize, strides, padding), rtol=1e-6,
                               atol=1e-6)
    dy = np.random.default_rng(5).standard_normal(y.shape).astype(dtype)
    dx = nn.avg_pool2d_grad(x.shape, dy, ksize, strides, padding)
    assert dx.shape == x.shape and dx.dtype == x.dtype
    np.testing.assert_allclose(np.sum(x.astype(np.float64) * dx),
                               np.sum(avg_pool_ref(x, ksize, strides, padding) * dy),
                               rtol=1e-5, atol=1e-5)


def test_avg_pool_same_divides_by_valid_count():
    x = np.ones((1, 2, 2, 1))
    np.testing.assert_array_equal(nn.avg_pool2d(x, (3, 3), (1, 1), "SAME"), 1.0)
    assert pool_out_shape(x.shape, (3, 3), (1, 1), "SAME") == (1, 2, 2, 1)


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
    s = nn.softmax(x)
    ls = nn.log_softmax(x)
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
    loss, probs = nn.sparse_softmax_cross_entropy(x, labels)
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
    loss2, probs2 = nn.softmax_cross_entropy(x, dense)
    want = -(dense * (x64 - lse[:, None])).sum(-1)
    np.testing.assert_allclose(loss2, want, rtol=rt, atol=rt * max(1, np.abs(x).max()))
    np.testing.assert_array_equal(probs2, probs)


def test_cross_entropy_large_logits_stable():
    x = np.array([[1000.0, 0.0, -1000.0], [1000.0, 1000.0, 1000.0]], np.float32)
    loss, probs = nn.sparse_softmax_cross_entropy(x, np.array([0, 2]))
    np.testing.assert_allclose(loss, [0.0, np.log(3.0)], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(probs[1], [1 / 3] * 3, rtol=1e-6)
    loss, _ = nn.softmax_cross_entropy(x, np.array([[0, 1, 0], [1, 0, 0]], np.float32))
    np.testing.assert_allclose(loss, [1000.0, np.log(3.0)], rtol=1e-6)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_grads_finite_differences(log):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 5))
    dy = rng.standard_normal((3, 5))
    f = nn.log_softmax if log else nn.softmax
    g = nn.log_softmax_grad if log else nn.softmax_grad
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
    x = np.zeros((1, 4, 4, 2))
    with pytest.raises(ValueError):
        nn.conv2d(x, np.zeros((3, 3, 3, 1)), (1, 1), "SAME")
    with pytest.raises(ValueError):
        nn.conv2d_backprop_input(x.shape, np.zeros((3, 3, 2, 1)), np.zeros((1, 3, 4, 1)),
                                 (1, 1), "SAME")
    with pytest.raises(ValueError):
        nn.conv2d_backprop_filter(x, (3, 3, 2, 1), np.zeros((1, 4, 4, 2)), (1, 1), "SAME")
    with pytest.raises(ValueError):
        nn.max_pool2d_grad(x, None, np.zeros((1, 1, 1, 2)), (2, 2), (2, 2), "SAME")
    with pytest.raises(ValueError):
        nn.sparse_softmax_cross_entropy(np.zeros((2, 3)), np.zeros(3, np.int64))


def test_sparse_cross_entropy_out_of_range_label_is_nan():
    loss, _ = nn.sparse_softmax_cross_entropy(np.zeros((3, 2)), np.array([0, 2, -1]))
    assert np.isfinite(loss[0]) and np.isnan(loss[1]) and np.isnan(loss[2])
