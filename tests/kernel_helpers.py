"""Shared helpers for the ops/ kernel tests: naive NumPy references and hypothesis strategies."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ops.nn import windows

FLOATS = (np.float32, np.float64)
INTS = (np.int32, np.int64)
NUMERIC = FLOATS + INTS


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtype, shape, lo=-10, hi=10, allow_nan=False):
    """Hypothesis arrays of ``dtype`` with values in [lo, hi]."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        elems = st.floats(lo, hi, allow_nan=False, allow_infinity=False,
                          width=8 * dtype.itemsize)
        if allow_nan:
            elems = elems | st.just(np.nan)
    elif dtype.kind == "b":
        elems = st.booleans()
    else:
        elems = st.integers(lo, hi)
    return hnp.arrays(dtype, shape, elements=elems)


def axes_of(ndim):
    """Sorted unique axis tuples of an ndim array (possibly empty)."""
    return st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim).map(
        lambda a: tuple(sorted(a)) if ndim else ())


def tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if np.dtype(dtype) == np.float32 else \
        dict(rtol=1e-11, atol=1e-11)


# ---- naive references for conv/pool (direct loops over the window, float64) -----------------
def conv2d_ref(x, w, strides, padding, dilations):
    N, H, W, C = x.shape
    kh, kw, _, Co = w.shape
    sh, sw = strides
    dh, dw = dilations
    Ho = windows.conv_output_size(H, kh, sh, dh, padding)
    Wo = windows.conv_output_size(W, kw, sw, dw, padding)
    pt = windows.same_padding(H, kh, sh, dh)[0] if padding == "SAME" else 0
    pl = windows.same_padding(W, kw, sw, dw)[0] if padding == "SAME" else 0
    out = np.zeros((N, Ho, Wo, Co))
    x64 = x.astype(np.float64)
    w64 = w.astype(np.float64)
    for oh in range(Ho):
        for ow in range(Wo):
            for i in range(kh):
                ih = oh * sh - pt + i * dh
                if not 0 <= ih < H:
                    continue
                for j in range(kw):
                    iw = ow * sw - pl + j * dw
                    if 0 <= iw < W:
                        out[:, oh, ow, :] += x64[:, ih, iw, :] @ w64[i, j]
    return out


def pool_windows(x_shape, ksize, strides, padding):
    """Yield (oh, ow, [(ih, iw), ...]) with each window's in-image cells in row-major order."""
    _, H, W, _ = x_shape
    kh, kw = ksize
    sh, sw = strides
    Ho = windows.conv_output_size(H, kh, sh, 1, padding)
    Wo = windows.conv_output_size(W, kw, sw, 1, padding)
    pt = windows.same_padding(H, kh, sh, 1)[0] if padding == "SAME" else 0
    pl = windows.same_padding(W, kw, sw, 1)[0] if padding == "SAME" else 0
    for oh in range(Ho):
        for ow in range(Wo):
            cells = [(ih, iw)
                     for ih in range(oh * sh - pt, oh * sh - pt + kh) if 0 <= ih < H
                     for iw in range(ow * sw - pl, ow * sw - pl + kw) if 0 <= iw < W]
            yield oh, ow, cells


def pool_out_shape(x_shape, ksize, strides, padding):
    N, H, W, C = x_shape
    return (N, windows.conv_output_size(H, ksize[0], strides[0], 1, padding),
            windows.conv_output_size(W, ksize[1], strides[1], 1, padding), C)


def max_pool_ref(x, ksize, strides, padding):
    out = np.empty(pool_out_shape(x.shape, ksize, strides, padding), x.dtype)
    for oh, ow, cells in pool_windows(x.shape, ksize, strides, padding):
        vals = np.stack([x[:, ih, iw, :] for ih, iw in cells])
        out[:, oh, ow, :] = vals.max(axis=0)
    return out


def max_pool_grad_ref(x, dy, ksize, strides, padding):
    dx = np.zeros(x.shape, dy.dtype)
    N, _, _, C = x.shape
    for oh, ow, cells in pool_windows(x.shape, ksize, strides, padding):
        vals = np.stack([x[:, ih, iw, :] for ih, iw in cells])  # (cells, N, C)
        first = vals.argmax(axis=0)  # first maximum
        for n in range(N):
            for c in range(C):
                ih, iw = cells[first[n, c]]
                dx[n, ih, iw, c] += dy[n, oh, ow, c]
    return dx


def avg_pool_ref(x, ksize, strides, padding):
    out = np.empty(pool_out_shape(x.shape, ksize, strides, padding), np.float64)
    for oh, ow, cells in pool_windows(x.shape, ksize, strides, padding):
        out[:, oh, ow, :] = np.mean([x[:, ih, iw, :].astype(np.float64) for ih, iw in cells],
                                    axis=0)
    return out
