"""Stride-1 convolution in "shift" form: one GEMM per filter tap, no patch matrix.

``ops.nn.conv`` uses it for stride-1 convolutions with many input channels that no Winograd form
takes (forward pass and input gradient), and for the filter gradient of few input channels and
many taps.

With the input zero-padded to (Hp, Wp), output (h, w) of image n is anchored at flat padded
position p = (n*Hp + h)*Wp + w, and tap (i, j) reads the padded input at p + (i*dh*Wp + j*dw).
So, over a run of consecutive anchors, every tap is one GEMM of a contiguous block of the padded
input with the filter slice w[i, j] -- no patch matrix at all.  Anchors with w >= Wo or h >= Ho
are junk rows that are computed and dropped (forward), or given a zero gradient (backward).  The
filter gradient uses this form for few input channels and many taps (near-GEMV products that
skip a patch matrix many times the input's size).
"""
import numpy as np

from ops.kernel_cache import njit
from ops.linalg import product_gemm
from ops.nn.parts import split_summed
from ops.nn.rows import copy_run

# nogil: the kernels split their work over threads (ops.nn.parts)
_jit = njit(error_model="numpy", nogil=True)

# Shift-form GEMMs are this many anchor rows long.
_SHIFT_ROWS = 1024
# Below this many input channels a tap's GEMM is too thin: use a patch matrix.
_SHIFT_MIN_CIN = 48
# The filter gradient is the exception: with few input channels and many taps the shift form's
# per-tap products are cheap (near GEMV) and skipping the (taps times larger) patch matrix wins;
# below 4 channels the transposed patch matrix wins (measured).
_SHIFT_FILTER_MIN_CIN = 4
_SHIFT_FILTER_MAX_CIN = 16
_SHIFT_FILTER_MIN_TAPS = 9


@_jit
def _pad_input(x, pt, pb, pl, pr):
    N, H, W, C = x.shape
    xp = np.zeros((N, H + pt + pb, W + pl + pr, C), x.dtype)
    for n in range(N):
        for h in range(H):
            xp[n, h + pt, pl:pl + W] = x[n, h]
    return xp


@_jit
def _anchor_count(N, Hp, Wp, Ho, Wo):
    # last valid anchor + 1; every tap offset from an anchor below it stays inside the image
    return (N - 1) * Hp * Wp + (Ho - 1) * Wp + Wo


@_jit
def conv2d_shift_kernel(xp, w, dh, dw, out, block_lo, block_hi):
    """Stride-1 conv of padded xp (N, Hp, Wp, C) with w (kh, kw, C, Co) into out (N, Ho, Wo, Co),
    for the anchors of blocks block_lo..block_hi (_SHIFT_ROWS anchors each)."""
    N, Hp, Wp, C = xp.shape
    kh, kw, _, Co = w.shape
    _, Ho, Wo, _ = out.shape
    P = min(_anchor_count(N, Hp, Wp, Ho, Wo), block_hi * _SHIFT_ROWS)
    xf = xp.reshape(xp.size)
    wf = w.reshape(w.size)
    ext = np.empty((_SHIFT_ROWS, Co), xp.dtype)
    ef = ext.reshape(ext.size)
    of = out.reshape(out.size)
    for p0 in range(block_lo * _SHIFT_ROWS, P, _SHIFT_ROWS):
        m = min(_SHIFT_ROWS, P - p0)
        for i in range(kh):
            for j in range(kw):
                off = p0 + i * dh * Wp + j * dw
                first = i == 0 and j == 0
                product_gemm(False, False, m, Co, C, 1.0, xf[off * C:], C,
                             wf[(i * kw + j) * C * Co:], Co, 0.0 if first else 1.0, ef, Co)
        # keep the anchors that are real outputs
        for t in range(m):
            p = p0 + t
            n = p // (Hp * Wp)
            rem = p - n * Hp * Wp
            h = rem // Wp
            ww = rem - h * Wp
            if h < Ho and ww < Wo:
                copy_run(of, ((n * Ho + h) * Wo + ww) * Co, ef, t * Co, Co)


@_jit
def _dy_on_anchors(dy, Hp, Wp):
    """dy (N, Ho, Wo, Co) laid out on the padded anchor grid (N*Hp*Wp, Co), zero elsewhere."""
    N, Ho, Wo, Co = dy.shape
    ext = np.zeros((N * Hp * Wp, Co), dy.dtype)
    for n in range(N):
        for h in range(Ho):
            base = (n * Hp + h) * Wp
            ext[base:base + Wo] = dy[n, h]
    return ext


@_jit
def conv2d_backprop_input_shift_kernel(w, dy, dh, dw, dxp):
    """Stride-1 input gradient into the padded dxp (N, Hp, Wp, C) (overwritten)."""
    N, Hp, Wp, C = dxp.shape
    kh, kw, _, Co = w.shape
    _, Ho, Wo, _ = dy.shape
    P = _anchor_count(N, Hp, Wp, Ho, Wo)
    dye = _dy_on_anchors(dy, Hp, Wp)
    df = dye.reshape(dye.size)
    wf = w.reshape(w.size)
    xf = dxp.reshape(dxp.size)
    xf[:] = 0
    for p0 in range(0, P, _SHIFT_ROWS):
        m = min(_SHIFT_ROWS, P - p0)
        for i in range(kh):
            for j in range(kw):
                off = p0 + i * dh * Wp + j * dw
                # dxp[anchors + off] += dy_anchors @ w[i, j]^T
                product_gemm(False, True, m, C, Co, 1.0, df[p0 * Co:], Co,
                             wf[(i * kw + j) * C * Co:], Co, 1.0, xf[off * C:], C)


@_jit
def conv2d_backprop_filter_shift_kernel(xp, dye, dh, dw, dwt, Ho, Wo, block_lo, block_hi):
    """Stride-1 filter gradient dwt (kh, kw, C, Co) (overwritten) from padded xp and dye =
    _dy_on_anchors(dy), summed over the anchors of blocks block_lo..block_hi."""
    N, Hp, Wp, C = xp.shape
    kh, kw, _, Co = dwt.shape
    P = min(_anchor_count(N, Hp, Wp, Ho, Wo), block_hi * _SHIFT_ROWS)
    df = dye.reshape(dye.size)
    xf = xp.reshape(xp.size)
    wf = dwt.reshape(dwt.size)
    wf[:] = 0
    for p0 in range(block_lo * _SHIFT_ROWS, P, _SHIFT_ROWS):
        m = min(_SHIFT_ROWS, P - p0)
        for i in range(kh):
            for j in range(kw):
                off = p0 + i * dh * Wp + j * dw
                # dw[i, j] += x_block^T @ dy_anchors (junk anchors carry zero dy)
                product_gemm(True, False, C, Co, m, 1.0, xf[off * C:], C, df[p0 * Co:], Co, 1.0,
                             wf[(i * kw + j) * C * Co:], Co)


# ---- when the form applies, and its entry points -------------------------------------------------
def applies(strides, cin):
    """Whether conv2d and its input gradient take the shift form."""
    return strides[0] == 1 and strides[1] == 1 and cin >= _SHIFT_MIN_CIN


def applies_to_filter_grad(kh, kw, strides, cin):
    """Whether the filter gradient takes the shift form."""
    return (strides[0] == 1 and strides[1] == 1 and kh * kw >= _SHIFT_FILTER_MIN_TAPS
            and _SHIFT_FILTER_MIN_CIN <= cin <= _SHIFT_FILTER_MAX_CIN)


def _far_pads(H, W, Ho, Wo, kh, kw, dilations, pt, pl):
    """(bottom, right) padding that puts every tap of every output inside the padded image."""
    dh, dw = dilations
    return (max((Ho - 1) + (kh - 1) * dh + 1 - H - pt, 0),
            max((Wo - 1) + (kw - 1) * dw + 1 - W - pl, 0))


def forward(x, w, dilations, pt, pl, out):
    """out (N, Ho, Wo, Co) = the stride-1 correlation of x (N, H, W, C) with w (kh, kw, C, Co),
    with top and left padding pt, pl."""
    N, H, W, C = x.shape
    kh, kw, _, Co = w.shape
    _, Ho, Wo, _ = out.shape
    pb, pr = _far_pads(H, W, Ho, Wo, kh, kw, dilations, pt, pl)
    xp = _pad_input(x, pt, pb, pl, pr)
    blocks = -(-_anchor_count(N, *xp.shape[1:3], Ho, Wo) // _SHIFT_ROWS)
    split_summed(lambda lo, hi: conv2d_shift_kernel(xp, w, *dilations, out, lo, hi), blocks,
                 _SHIFT_ROWS * Co * kh * kw * C)


def backprop_input(w, dy, dilations, pt, pl, dx):
    """dx (N, H, W, C) (overwritten) = forward's input gradient for dy (N, Ho, Wo, Co)."""
    N, H, W, C = dx.shape
    kh, kw = w.shape[:2]
    _, Ho, Wo, _ = dy.shape
    pb, pr = _far_pads(H, W, Ho, Wo, kh, kw, dilations, pt, pl)
    if pt == pb == pl == pr == 0:  # (VALID) no padding to cut off
        conv2d_backprop_input_shift_kernel(w, dy, *dilations, dx)
        return
    dxp = np.empty((N, H + pt + pb, W + pl + pr, C), dy.dtype)
    conv2d_backprop_input_shift_kernel(w, dy, *dilations, dxp)
    dx[:] = dxp[:, pt:pt + H, pl:pl + W]


def backprop_filter(x, dy, kh, kw, dilations, pt, pl):
    """The filter gradient (kh, kw, C, Co) of forward for dy (N, Ho, Wo, Co)."""
    N, H, W, C = x.shape
    _, Ho, Wo, Co = dy.shape
    pb, pr = _far_pads(H, W, Ho, Wo, kh, kw, dilations, pt, pl)
    xp = _pad_input(x, pt, pb, pl, pr)
    dye = _dy_on_anchors(dy, xp.shape[1], xp.shape[2])

    # each thread's part overwrites a gradient of its own; the parts are summed
    def shift_part(lo, hi):
        dwt = np.empty((kh, kw, C, Co), x.dtype)
        conv2d_backprop_filter_shift_kernel(xp, dye, *dilations, dwt, Ho, Wo, lo, hi)
        return dwt

    blocks = -(-_anchor_count(N, xp.shape[1], xp.shape[2], Ho, Wo) // _SHIFT_ROWS)
    return split_summed(shift_part, blocks, _SHIFT_ROWS * Co * kh * kw * C)
