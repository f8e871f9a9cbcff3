"""Winograd F(2x2, 3x3) convolution: 3x3 filters, stride 1, dilation 1.

``ops.nn.conv`` uses it for those filters when there are enough channels in and out (16 each):
the forward pass, the input gradient (the same kernel on the flipped filter) and the filter
gradient (its exact adjoint).

Each 2x2 output tile is A^T [(G g G^T) * (B^T d B)] A for its 4x4 input tile d: 16 products per
tile and channel pair instead of 36, so the 16 GEMMs (one per tile position) do 2.25x fewer
flops than direct/im2col.  The transforms only add and halve, so float32 error stays at the
level of a direct sum (a few ulps of the result's magnitude).
"""
import numpy as np

from ops.kernel_cache import njit
from ops.linalg import product_gemm
from ops.nn.parts import split_summed
from ops.nn.rows import combine2, combine3, combine4, copy_run, zero_run

# nogil: the kernels split their work over threads (ops.nn.parts)
_jit = njit(error_model="numpy", nogil=True)

_WINO_TILES = 512  # tiles per chunk: GEMMs of 512 rows, transformed blocks that fit in L2/L3
_WINO_MIN_CH = 16  # below this many channels the transforms cost more than they save


@_jit
def winograd_filter_transform(w):
    """U (16, C, Co) = G g G^T for each (C, Co) pair of a (3, 3, C, Co) filter.

    G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
    """
    _, _, C, Co = w.shape
    u = np.empty((16, C, Co), w.dtype)
    t = np.empty((4, 3), np.float64)
    for c in range(C):
        for o in range(Co):
            for j in range(3):  # t = G g (rows)
                g0, g1, g2 = w[0, j, c, o], w[1, j, c, o], w[2, j, c, o]
                t[0, j] = g0
                t[1, j] = (g0 + g1 + g2) * 0.5
                t[2, j] = (g0 - g1 + g2) * 0.5
                t[3, j] = g2
            for i in range(4):  # u = t G^T (columns)
                g0, g1, g2 = t[i, 0], t[i, 1], t[i, 2]
                u[4 * i, c, o] = g0
                u[4 * i + 1, c, o] = (g0 + g1 + g2) * 0.5
                u[4 * i + 2, c, o] = (g0 - g1 + g2) * 0.5
                u[4 * i + 3, c, o] = g2
    return u


# B^T's rows as (first index, sign, second index, sign): row i of B^T d is s0*d[a0] + s1*d[a1]
_BT_A0 = (0, 1, 2, 1)
_BT_S0 = (1.0, 1.0, 1.0, 1.0)
_BT_A1 = (2, 2, 1, 3)
_BT_S1 = (-1.0, 1.0, -1.0, -1.0)


@_jit
def _winograd_input_tiles(x, t0, t1, nth, ntw, pt, pl, v, patch):
    """v[k, t - t0, :] = (B^T d B)[k] for tiles t0..t1 (flat over (n, th, tw)).

    patch: (16 * C,) scratch for tiles that reach outside x (zero-filled there).
    """
    _, H, W, C = x.shape
    tc = v.shape[1]
    xf = x.reshape(x.size)
    vf = v.reshape(v.size)
    # the +-1 coefficients in x's dtype, so float32 stays float32 (float64 literals would
    # promote the whole loop)
    cf = np.empty((4, 4, 4), x.dtype)
    for i in range(4):
        for j in range(4):
            cf[i, j, 0] = _BT_S0[i] * _BT_S0[j]
            cf[i, j, 1] = _BT_S0[i] * _BT_S1[j]
            cf[i, j, 2] = _BT_S1[i] * _BT_S0[j]
            cf[i, j, 3] = _BT_S1[i] * _BT_S1[j]
    for t in range(t0, t1):
        n = t // (nth * ntw)
        rem = t - n * nth * ntw
        th = rem // ntw
        tw = rem - th * ntw
        h0 = 2 * th - pt
        w0 = 2 * tw - pl
        lt = t - t0
        if h0 >= 0 and h0 + 4 <= H and w0 >= 0 and w0 + 4 <= W:
            src = xf
            base = ((n * H + h0) * W + w0) * C
            rs = W * C
        else:
            # border tile: gather its 4x4 cells, zeros outside the image
            for a in range(4):
                for b in range(4):
                    ih = h0 + a
                    iw = w0 + b
                    if 0 <= ih < H and 0 <= iw < W:
                        copy_run(patch, (a * 4 + b) * C, xf, ((n * H + ih) * W + iw) * C, C)
                    else:
                        zero_run(patch, (a * 4 + b) * C, C)
            src = patch
            base = 0
            rs = 4 * C
        for i in range(4):
            ra = base + _BT_A0[i] * rs
            rb = base + _BT_A1[i] * rs
            for j in range(4):
                ca = _BT_A0[j] * C
                cb = _BT_A1[j] * C
                combine4(vf, ((4 * i + j) * tc + lt) * C, src, ra + ca, ra + cb, rb + ca, rb + cb,
                         cf[i, j, 0], cf[i, j, 1], cf[i, j, 2], cf[i, j, 3], C)


@_jit
def _winograd_output_tiles(m, t0, t1, nth, ntw, out, rbuf):
    """out tiles t0..t1 = A^T m A, clipped to out's (Ho, Wo); rbuf: (8 * Co,) scratch."""
    _, Ho, Wo, Co = out.shape
    tc = m.shape[1]
    mf = m.reshape(m.size)
    of = out.reshape(out.size)
    one = np.ones(1, out.dtype)[0]  # typed +-1: float32 stays float32
    for t in range(t0, t1):
        n = t // (nth * ntw)
        rem = t - n * nth * ntw
        th = rem // ntw
        tw = rem - th * ntw
        lt = t - t0
        # r = A^T m: r0 = m0 + m1 + m2, r1 = m1 - m2 - m3 (over the first tile index)
        for j in range(4):
            o0 = (j * tc + lt) * Co
            o1 = ((4 + j) * tc + lt) * Co
            o2 = ((8 + j) * tc + lt) * Co
            o3 = ((12 + j) * tc + lt) * Co
            combine3(rbuf, j * Co, mf, o0, o1, o2, one, one, Co)
            combine3(rbuf, (4 + j) * Co, mf, o1, o2, o3, -one, -one, Co)
        # y = r A: y0 = r0 + r1 + r2, y1 = r1 - r2 - r3 (over the second index)
        for i in range(2):
            oh = 2 * th + i
            if oh >= Ho:
                continue
            ri = 4 * i * Co
            dst = ((n * Ho + oh) * Wo + 2 * tw) * Co
            combine3(of, dst, rbuf, ri, ri + Co, ri + 2 * Co, one, one, Co)
            if 2 * tw + 1 < Wo:
                combine3(of, dst + Co, rbuf, ri + Co, ri + 2 * Co, ri + 3 * Co, -one, -one, Co)


@_jit
def conv2d_winograd_kernel(x, u, pt, pl, out, tiles, tile_lo, tile_hi):
    """out[n, oh, ow] = sum_{i,j<3} x[n, oh - pt + i, ow - pl + j] @ g[i, j], zero outside x,
    for the 2x2 output tiles tile_lo..tile_hi (tile (n * nth + th) * ntw + tw).

    x: (N, H, W, C); u: winograd_filter_transform(g) (16, C, Co); out: (N, Ho, Wo, Co), any
    Ho, Wo >= 1 (the caller picks them and pt, pl); tiles: 2x2 output tiles per chunk (>= 1).
    """
    N, H, W, C = x.shape
    _, Ho, Wo, Co = out.shape
    nth = (Ho + 1) // 2
    ntw = (Wo + 1) // 2
    T = tile_hi
    tc = max(1, min(tiles, T - tile_lo))
    v = np.empty((16, tc, C), x.dtype)
    m = np.empty((16, tc, Co), x.dtype)
    patch = np.empty(16 * C, x.dtype)
    rbuf = np.empty(8 * Co, x.dtype)
    vf = v.reshape(v.size)
    mf = m.reshape(m.size)
    uf = u.reshape(u.size)
    for t0 in range(tile_lo, T, tc):
        t1 = min(t0 + tc, T)
        _winograd_input_tiles(x, t0, t1, nth, ntw, pt, pl, v, patch)
        for k in range(16):
            product_gemm(False, False, t1 - t0, Co, C, 1.0, vf[k * tc * C:], C, uf[k * C * Co:], Co,
                         0.0, mf[k * tc * Co:], Co)
        _winograd_output_tiles(m, t0, t1, nth, ntw, out, rbuf)


# A's rows (4x2): row i of A y is a0*y[0] + a1*y[1]
_A_C0 = (1.0, 1.0, 1.0, 0.0)
_A_C1 = (0.0, 1.0, -1.0, -1.0)


@_jit
def _winograd_output_grad_tiles(dy, t0, t1, nth, ntw, dm, ybuf, ebuf):
    """dm[k, t - t0, :] = (A dY A^T)[k]: the adjoint of _winograd_output_tiles for dy tiles.

    ybuf: (4 * Co,) and ebuf: (8 * Co,) scratch.
    """
    _, Ho, Wo, Co = dy.shape
    tc = dm.shape[1]
    yf = dy.reshape(dy.size)
    mf = dm.reshape(dm.size)
    cf = np.empty((4, 2), dy.dtype)  # A's coefficients in dy's dtype
    for i in range(4):
        cf[i, 0] = _A_C0[i]
        cf[i, 1] = _A_C1[i]
    for t in range(t0, t1):
        n = t // (nth * ntw)
        rem = t - n * nth * ntw
        th = rem // ntw
        tw = rem - th * ntw
        lt = t - t0
        # the 2x2 dy tile, zero past the output's edge
        for r in range(2):
            for c in range(2):
                oh = 2 * th + r
                ow = 2 * tw + c
                if oh < Ho and ow < Wo:
                    copy_run(ybuf, (2 * r + c) * Co, yf, ((n * Ho + oh) * Wo + ow) * Co, Co)
                else:
                    zero_run(ybuf, (2 * r + c) * Co, Co)
        for i in range(4):  # e = A dY (rows): e[i, c] = a0 y[0, c] + a1 y[1, c]
            for c in range(2):
                combine2(ebuf, (2 * i + c) * Co, ybuf, c * Co, (2 + c) * Co, cf[i, 0], cf[i, 1],
                         Co)
        for i in range(4):  # dm = e A^T (columns)
            for j in range(4):
                combine2(mf, ((4 * i + j) * tc + lt) * Co, ebuf, 2 * i * Co, (2 * i + 1) * Co,
                         cf[j, 0], cf[j, 1], Co)


@_jit
def winograd_filter_transform_adjoint(du):
    """dg (3, 3, C, Co) = G^T dU G: the adjoint of winograd_filter_transform."""
    _, C, Co = du.shape
    g = np.empty((3, 3, C, Co), du.dtype)
    t = np.empty((3, 4), np.float64)
    for c in range(C):
        for o in range(Co):
            for j in range(4):  # t = G^T dU (rows)
                d0, d1, d2, d3 = du[j, c, o], du[4 + j, c, o], du[8 + j, c, o], du[12 + j, c, o]
                t[0, j] = d0 + (d1 + d2) * 0.5
                t[1, j] = (d1 - d2) * 0.5
                t[2, j] = (d1 + d2) * 0.5 + d3
            for a in range(3):  # dg = t G (columns)
                d0, d1, d2, d3 = t[a, 0], t[a, 1], t[a, 2], t[a, 3]
                g[a, 0, c, o] = d0 + (d1 + d2) * 0.5
                g[a, 1, c, o] = (d1 - d2) * 0.5
                g[a, 2, c, o] = (d1 + d2) * 0.5 + d3
    return g


@_jit
def conv2d_backprop_filter_winograd_kernel(x, dy, pt, pl, tiles, tile_lo, tile_hi):
    """dU[k] = sum over the tiles tile_lo..tile_hi of V[k]^T dM[k] (16, C, Co), for the filter
    gradient of conv2d_winograd_kernel(x, ., pt, pl, out) with dy = dout: the adjoint of each
    Winograd stage; winograd_filter_transform_adjoint(sum of dU over all tiles) is the gradient."""
    N, H, W, C = x.shape
    _, Ho, Wo, Co = dy.shape
    nth = (Ho + 1) // 2
    ntw = (Wo + 1) // 2
    T = tile_hi
    tc = max(1, min(tiles, T - tile_lo))
    v = np.empty((16, tc, C), x.dtype)
    dm = np.empty((16, tc, Co), x.dtype)
    du = np.zeros((16, C, Co), x.dtype)
    patch = np.empty(16 * C, x.dtype)
    ybuf = np.empty(4 * Co, x.dtype)
    ebuf = np.empty(8 * Co, x.dtype)
    vf = v.reshape(v.size)
    mf = dm.reshape(dm.size)
    uf = du.reshape(du.size)
    for t0 in range(tile_lo, T, tc):
        t1 = min(t0 + tc, T)
        _winograd_input_tiles(x, t0, t1, nth, ntw, pt, pl, v, patch)
        _winograd_output_grad_tiles(dy, t0, t1, nth, ntw, dm, ybuf, ebuf)
        for k in range(16):
            product_gemm(True, False, C, Co, t1 - t0, 1.0, vf[k * tc * C:], C, mf[k * tc * Co:], Co,
                         1.0, uf[k * C * Co:], Co)
    return du


# ---- when the form applies, and its entry points -------------------------------------------------
def applies(kh, kw, strides, dilations, cin, cout):
    """Whether conv2d and its gradients take this form."""
    return (kh == 3 and kw == 3 and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and cin >= _WINO_MIN_CH and cout >= _WINO_MIN_CH)


def forward(x, w, pt, pl, out):
    """out = the stride-1 correlation of x with the 3x3 filter w (top and left padding pt, pl)."""
    N, Ho, Wo, Co = out.shape
    u = winograd_filter_transform(w)
    tiles = N * ((Ho + 1) // 2) * ((Wo + 1) // 2)
    split_summed(lambda lo, hi: conv2d_winograd_kernel(x, u, pt, pl, out, _WINO_TILES, lo, hi),
                 tiles, 4 * Co * 9 * x.shape[3])


def backprop_filter(x, dy, pt, pl):
    """The filter gradient (3, 3, C, Co) of forward(x, ., pt, pl, out) for dy = dout."""
    N, Ho, Wo, Co = dy.shape
    tiles = N * ((Ho + 1) // 2) * ((Wo + 1) // 2)
    du = split_summed(lambda lo, hi: conv2d_backprop_filter_winograd_kernel(
        x, dy, pt, pl, _WINO_TILES, lo, hi), tiles, 4 * Co * 9 * x.shape[3])
    return winograd_filter_transform_adjoint(du)
