"""ops.nn's convolutions (ops.nn.conv and the forms it picks) against naive NumPy references,
finite differences and adjoint identities."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ops.nn import conv, conv_im2col, conv_shift, conv_winograd3, conv_winograd5, windows
from kernel_helpers import conv2d_ref

# the path fixture only patches module constants, the same for every example
SET_PATH = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
BIG = 1 << 30


# ---- padding arithmetic (ops.nn.windows) ---------------------------------------------------------
@pytest.mark.parametrize("n,k,s,d,want", [(5, 3, 2, 1, (1, 1)), (4, 3, 2, 1, (0, 1)),
                                          (28, 5, 1, 1, (2, 2)), (7, 1, 3, 1, (0, 0)),
                                          (10, 3, 1, 2, (2, 2)), (2, 4, 1, 1, (1, 2)),
                                          (6, 2, 2, 1, (0, 0))])
def test_same_padding(n, k, s, d, want):
    assert windows.same_padding(n, k, s, d) == want


@pytest.mark.parametrize("n,k,s,d,pad,want", [(5, 3, 2, 1, "VALID", 2), (5, 3, 2, 1, "SAME", 3),
                                              (4, 3, 1, 2, "VALID", 0), (28, 2, 2, 1, "SAME", 14),
                                              (0, 3, 1, 1, "SAME", 0), (7, 7, 1, 1, "VALID", 1)])
def test_conv_output_size(n, k, s, d, pad, want):
    assert windows.conv_output_size(n, k, s, d, pad) == want


def test_bad_padding_string():
    with pytest.raises(ValueError):
        windows.conv_output_size(4, 2, 1, 1, "same")


# ---- conv2d ------------------------------------------------------------------------------------
@pytest.fixture(params=["auto", "im2col", "patch_t", "shift", "winograd"])
def conv_path(request, monkeypatch):
    """Force one implementation (winograd only applies to 3x3 and 5x5 filters with stride 1 and
    dilation 1, the shift forms to stride 1)."""
    if request.param in ("im2col", "patch_t", "shift"):
        monkeypatch.setattr(conv_winograd3, "_WINO_MIN_CH", BIG)
        monkeypatch.setattr(conv_winograd5, "_W5_MIN_CH", BIG)
    if request.param in ("im2col", "patch_t"):
        monkeypatch.setattr(conv_shift, "_SHIFT_MIN_CIN", BIG)
        monkeypatch.setattr(conv_shift, "_SHIFT_FILTER_MAX_CIN", 0)
    if request.param == "im2col":
        monkeypatch.setattr(conv_im2col, "_PATCH_T_MAX_CIN", 0)
        monkeypatch.setattr(conv_im2col, "_CHUNK_ELEMS", 64)  # many small chunks
    elif request.param == "patch_t":
        monkeypatch.setattr(conv_im2col, "_PATCH_T_MAX_CIN", BIG)
        monkeypatch.setattr(conv_im2col, "_CHUNK_T_ELEMS", 64)
    elif request.param == "shift":
        monkeypatch.setattr(conv_shift, "_SHIFT_MIN_CIN", 1)
        monkeypatch.setattr(conv_shift, "_SHIFT_FILTER_MIN_CIN", 1)
        monkeypatch.setattr(conv_shift, "_SHIFT_FILTER_MAX_CIN", BIG)
        monkeypatch.setattr(conv_shift, "_SHIFT_FILTER_MIN_TAPS", 1)
    elif request.param == "winograd":
        monkeypatch.setattr(conv_winograd3, "_WINO_MIN_CH", 1)
        monkeypatch.setattr(conv_winograd5, "_W5_MIN_CH", 1)
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
    y = conv.conv2d(x, w, strides, padding, dil)
    want = conv2d_ref(x, w, strides, padding, dil)
    assert y.shape == want.shape and y.dtype == x.dtype
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)
    # the gradients are the adjoints: <conv(x, w), dy> = <x, dx> = <w, dw>
    dy = np.random.default_rng(7).standard_normal(y.shape)
    dx = conv.conv2d_backprop_input(x.shape, w, dy, strides, padding, dil)
    dw = conv.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dil)
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
        y = conv.conv2d(x, w, strides, padding, dil)
        dy = rng.standard_normal(y.shape)

        def f(xx, ww):
            return np.sum(conv.conv2d(xx, ww, strides, padding, dil) * dy)
        dx = conv.conv2d_backprop_input(x.shape, w, dy, strides, padding, dil)
        dw = conv.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dil)
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
    y = conv.conv2d(x, w, strides, "SAME")
    assert y.dtype == np.float32
    scale = np.sqrt(k * k * cin)
    np.testing.assert_allclose(y, conv2d_ref(x, w, strides, "SAME", (1, 1)), rtol=1e-4,
                               atol=1e-5 * scale)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = conv.conv2d_backprop_input(x.shape, w, dy, strides, "SAME")
    dw = conv.conv2d_backprop_filter(x, w.shape, dy, strides, "SAME")
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
    pt = windows.same_padding(H, kh, sh, dh)[0] if padding == "SAME" else 0
    pl = windows.same_padding(W, kw, sw, dw_)[0] if padding == "SAME" else 0
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
    monkeypatch.setattr(conv_im2col, "_CHUNK_T_ELEMS", 150)
    monkeypatch.setattr(conv_shift, "_SHIFT_FILTER_MAX_CIN", 0)  # (which would take cin=4 with 5x5)
    assert conv_im2col._use_patch_t(cin) and not conv_shift.applies(strides, cin)
    rng = np.random.default_rng(cin * 10 + k)
    N = 3 if cin % 2 else 1
    x = rng.standard_normal((N, 9, 8, cin)).astype(dtype)
    w = rng.standard_normal((k, k, cin, 6)).astype(dtype)
    y = conv.conv2d(x, w, strides, padding, dil)
    _assert_close_scaled(y, conv2d_ref(x, w, strides, padding, dil), dtype)
    dy = rng.standard_normal(y.shape).astype(dtype)
    dw = conv.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dil)
    _assert_close_scaled(dw, conv2d_filter_grad_ref(x, w.shape, dy, strides, padding, dil),
                         dtype)


def test_conv2d_first_layer_defaults():
    # a CNN's first layer (one input channel, 5x5, SAME) takes the transposed patch matrix for
    # both the forward pass and the filter gradient
    assert conv_im2col._use_patch_t(1) and not conv_shift.applies_to_filter_grad(5, 5, (1, 1), 1)
    assert not conv_winograd5.applies(5, 5, (1, 1), (1, 1), 1, 32)
    rng = np.random.default_rng(0)
    x = rng.random((2, 28, 28, 1), dtype=np.float32)
    w = (rng.standard_normal((5, 5, 1, 8)) * 0.2).astype(np.float32)
    y = conv.conv2d(x, w, (1, 1), "SAME")
    _assert_close_scaled(y, conv2d_ref(x, w, (1, 1), "SAME", (1, 1)), np.float32)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    _assert_close_scaled(conv.conv2d_backprop_filter(x, w.shape, dy, (1, 1), "SAME"),
                         conv2d_filter_grad_ref(x, w.shape, dy, (1, 1), "SAME", (1, 1)),
                         np.float32)


def test_conv2d_empty_channels():
    x = np.zeros((2, 4, 4, 0))
    w = np.zeros((3, 3, 0, 5))
    np.testing.assert_array_equal(conv.conv2d(x, w, (1, 1), "SAME"), np.zeros((2, 4, 4, 5)))
    assert conv.conv2d_backprop_filter(x, w.shape, np.ones((2, 4, 4, 5)), (1, 1),
                                       "SAME").shape == w.shape


# ---- which form each call takes ---------------------------------------------------------------
FORMS = {"winograd3": conv_winograd3, "winograd5": conv_winograd5, "shift": conv_shift,
         "im2col": conv_im2col}


@pytest.fixture
def forms_used(monkeypatch):
    """The forms (FORMS' names) that conv2d and its gradients call, in call order."""
    used = []
    for name, module in FORMS.items():
        for entry in ("forward", "backprop_input", "backprop_filter"):
            if hasattr(module, entry):
                def spy(*args, _name=name, _run=getattr(module, entry)):
                    used.append(_name)
                    return _run(*args)
                monkeypatch.setattr(module, entry, spy)
    return used


# (k, strides, dilations, Cin, Cout) -> the forms of the forward pass, the input gradient and
# the filter gradient
@pytest.mark.parametrize("k,strides,dil,cin,cout,want", [
    (3, (1, 1), (1, 1), 16, 16, ["winograd3"] * 3),
    (3, (1, 1), (1, 1), 15, 16, ["im2col", "im2col", "shift"]),
    (3, (1, 1), (2, 1), 16, 16, ["im2col", "im2col", "shift"]),
    (5, (1, 1), (1, 1), 8, 8, ["winograd5"] * 3),
    (5, (1, 1), (1, 1), 8, 7, ["im2col", "im2col", "shift"]),
    (5, (1, 1), (1, 1), 1, 32, ["im2col"] * 3),  # a first layer: the transposed patch matrix
    (3, (1, 1), (1, 1), 48, 8, ["shift", "shift", "im2col"]),
    (3, (2, 1), (1, 1), 48, 48, ["im2col"] * 3),
    (2, (1, 1), (1, 1), 8, 8, ["im2col"] * 3),
])
def test_each_call_takes_the_form_that_applies(forms_used, k, strides, dil, cin, cout, want):
    rng = np.random.default_rng(k * cin + cout)
    x = rng.standard_normal((1, 6, 5, cin))
    w = rng.standard_normal((k, k, cin, cout))
    _check_conv(x, w, strides, "SAME", dil)
    assert forms_used == want


def test_shape_guards_refuse_instead_of_reading_out_of_bounds():
    x = np.zeros((1, 4, 4, 2))
    with pytest.raises(ValueError, match="conv2d: incompatible operands"):
        conv.conv2d(x, np.zeros((3, 3, 3, 1)), (1, 1), "SAME")
    with pytest.raises(ValueError, match="conv2d_backprop_input"):
        conv.conv2d_backprop_input(x.shape, np.zeros((3, 3, 2, 1)), np.zeros((1, 3, 4, 1)),
                                   (1, 1), "SAME")
    with pytest.raises(ValueError, match="conv2d_backprop_filter"):
        conv.conv2d_backprop_filter(x, (3, 3, 2, 1), np.zeros((1, 4, 4, 2)), (1, 1), "SAME")
