"""ops.nn.conv_winograd5, the Winograd F(2x2, 5x5) convolution (5x5 filters, stride 1,
dilation 1), against naive NumPy references: the transform tables, the forward pass and both
gradients."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops.nn import conv, conv_winograd5, windows
from kernel_helpers import conv2d_ref

BIG = 1 << 30


def conv2d_grads_ref(x, w, dy, padding):
    """(dx, dw) of a stride-1, dilation-1 conv2d, by direct loops over the taps in float64."""
    N, H, W, C = x.shape
    kh, kw, _, Co = w.shape
    _, Ho, Wo, _ = dy.shape
    pt = windows.same_padding(H, kh, 1, 1)[0] if padding == "SAME" else 0
    pl = windows.same_padding(W, kw, 1, 1)[0] if padding == "SAME" else 0
    x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
    dx = np.zeros(x.shape)
    dw = np.zeros(w.shape)
    for oh in range(Ho):
        for ow in range(Wo):
            for i in range(kh):
                ih = oh - pt + i
                if not 0 <= ih < H:
                    continue
                for j in range(kw):
                    iw = ow - pl + j
                    if 0 <= iw < W:
                        dx[:, ih, iw] += dy64[:, oh, ow] @ w64[i, j].T
                        dw[i, j] += x64[:, ih, iw].T @ dy64[:, oh, ow]
    return dx, dw


def _assert_close(got, want, dtype):
    """float64: to rounding; float32: a few 1e-6 of the result's largest magnitude (Winograd's
    transforms cost a small factor over a direct sum's rounding, never a loss of digits)."""
    assert got.dtype == dtype and got.shape == want.shape
    scale = max(float(np.abs(want).max()), 1e-30) if want.size else 1.0
    if dtype == np.float64:
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * scale)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * scale)


def _check_all(x, w, padding):
    y = conv.conv2d(x, w, (1, 1), padding)
    want = conv2d_ref(x, w, (1, 1), padding, (1, 1))
    _assert_close(y, want, x.dtype)
    dy = np.random.default_rng(11).standard_normal(y.shape).astype(x.dtype)
    dx_want, dw_want = conv2d_grads_ref(x, w, dy, padding)
    _assert_close(conv.conv2d_backprop_input(x.shape, w, dy, (1, 1), padding), dx_want, x.dtype)
    _assert_close(conv.conv2d_backprop_filter(x, w.shape, dy, (1, 1), padding), dw_want, x.dtype)


# ---- the transform tables ----------------------------------------------------------------------
def test_tables_compute_the_1d_correlation_exactly():
    # A^T [(G g) * (B^T d)] = y with y[k] = sum_i d[k + i] g[i], in exact rational arithmetic:
    # the float tables are rounded from the exact ones only where G has thirds and fifths
    G = [[Fraction(v).limit_denominator(64) for v in row] for row in conv_winograd5._W5_G]
    BT = [[Fraction(int(v)) for v in row] for row in conv_winograd5._W5_BT]
    AT = [[Fraction(v) for v in row] for row in conv_winograd5._W5_AT]
    # B^T: small integers, exact in float32
    assert np.array_equal(np.array(BT, float), conv_winograd5._W5_BT)
    assert np.array_equal(np.array(AT, float), conv_winograd5._W5_AT)
    np.testing.assert_allclose(np.array(G, float), conv_winograd5._W5_G, rtol=1e-15)
    rng = np.random.default_rng(0)
    for _ in range(5):
        d = [Fraction(int(v)) for v in rng.integers(-20, 20, 6)]
        g = [Fraction(int(v)) for v in rng.integers(-20, 20, 5)]
        gg = [sum(G[a][i] * g[i] for i in range(5)) for a in range(6)]
        bd = [sum(BT[a][i] * d[i] for i in range(6)) for a in range(6)]
        y = [sum(AT[k][a] * gg[a] * bd[a] for a in range(6)) for k in range(2)]
        assert y == [sum(d[k + i] * g[i] for i in range(5)) for k in range(2)]


def test_filter_transform_adjoint_is_the_adjoint():
    # <G g G^T, dU> = <g, G^T dU G> for the pair the filter gradient relies on
    rng = np.random.default_rng(1)
    g = rng.standard_normal((5, 5, 3, 4))
    du = rng.standard_normal((36, 3, 4))
    u = conv_winograd5.winograd5_filter_transform(g, conv_winograd5._W5_G)
    back = conv_winograd5.winograd5_filter_transform_adjoint(du, conv_winograd5._W5_G)
    assert u.shape == (36, 3, 4) and back.shape == g.shape
    np.testing.assert_allclose(np.sum(u * du), np.sum(g * back), rtol=1e-12)


# ---- shapes that take the Winograd path by default ---------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,cout,padding", [
    ((1, 14, 14, 16), 16, "SAME"),   # the CNN's second layer, in miniature
    ((3, 9, 7, 17), 20, "SAME"),     # odd sizes: partial tiles at the bottom and right
    ((3, 13, 11, 16), 18, "VALID"),
    ((1, 6, 5, 16), 16, "VALID"),    # a 2x1 output
    ((3, 1, 1, 16), 16, "SAME"),     # one pixel: every tap but the centre reads padding
    ((1, 2, 3, 20), 16, "SAME"),
    ((2, 7, 9, 8), 8, "SAME"),       # the fewest channels that take it
])
def test_winograd5_default_path(shape, cout, padding, dtype):
    assert conv_winograd5.applies(5, 5, (1, 1), (1, 1), shape[3], cout)
    rng = np.random.default_rng(shape[1] * 100 + shape[2])
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((5, 5, shape[3], cout)) / 10).astype(dtype)
    _check_all(x, w, padding)


def test_winograd5_relu_like_float32_inputs_stay_accurate():
    # non-negative activations times small weights: the case where cancellation in the input
    # transform could cost digits
    rng = np.random.default_rng(2)
    x = np.abs(rng.standard_normal((2, 14, 14, 32))).astype(np.float32)
    w = (rng.standard_normal((5, 5, 32, 64)) * 0.03).astype(np.float32)
    y = conv.conv2d(x, w, (1, 1), "SAME")
    want = conv2d_ref(x, w, (1, 1), "SAME", (1, 1))
    assert np.abs(y - want).max() <= 5e-6 * np.abs(want).max()


def test_winograd5_not_for_other_geometries():
    assert not conv_winograd5.applies(5, 5, (2, 1), (1, 1), 32, 32)
    assert not conv_winograd5.applies(5, 5, (1, 1), (1, 2), 32, 32)
    assert not conv_winograd5.applies(5, 3, (1, 1), (1, 1), 32, 32)
    assert not conv_winograd5.applies(5, 5, (1, 1), (1, 1), conv_winograd5._W5_MIN_CH - 1, 32)
    assert not conv_winograd5.applies(5, 5, (1, 1), (1, 1), 32, conv_winograd5._W5_MIN_CH - 1)


# ---- forced onto small shapes (any channel count) ----------------------------------------------
@pytest.fixture
def winograd5_everywhere(monkeypatch):
    monkeypatch.setattr(conv_winograd5, "_W5_MIN_CH", 1)


@settings(max_examples=40, deadline=None)
@given(N=st.integers(1, 3), H=st.integers(1, 9), W=st.integers(1, 9), C=st.integers(1, 3),
       Co=st.integers(1, 3), padding=st.sampled_from(["SAME", "VALID"]),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 32 - 1))
def test_winograd5_forced_matches_reference(N, H, W, C, Co, padding, dtype, seed):
    if padding == "VALID" and (H < 5 or W < 5):
        H, W = H + 4, W + 4  # keep the output non-empty
    old = conv_winograd5._W5_MIN_CH
    conv_winograd5._W5_MIN_CH = 1  # (hypothesis runs many examples per fixture call)
    try:
        assert conv_winograd5.applies(5, 5, (1, 1), (1, 1), C, Co)
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((N, H, W, C)).astype(dtype)
        w = rng.standard_normal((5, 5, C, Co)).astype(dtype)
        _check_all(x, w, padding)
    finally:
        conv_winograd5._W5_MIN_CH = old


@pytest.mark.parametrize("tiles", [1, 7, 64])
def test_winograd5_chunking(winograd5_everywhere, monkeypatch, tiles):
    # tiles=1: one band (row of tiles) per chunk; otherwise chunks of several bands, the last
    # one partial
    monkeypatch.setattr(conv_winograd5, "_W5_TILES", tiles)
    rng = np.random.default_rng(tiles)
    x = rng.standard_normal((3, 11, 12, 2))
    w = rng.standard_normal((5, 5, 2, 3))
    _check_all(x, w, "SAME")
