"""Winograd F(2x2, 5x5) convolution: 5x5 filters, stride 1, dilation 1.

``ops.nn.conv`` uses it for those filters when there are enough channels in and out (8 each):
the forward pass, the input gradient (the same kernel on the flipped filter) and the filter
gradient (its exact adjoint).

The scheme of ``ops.nn.conv_winograd3`` with 6x6 input tiles: 36 products per 2x2 output tile
and channel pair instead of 100 (2.8x fewer flops).  Interpolation points 0, 1, -1, 1/2, -2 and
infinity: of the pairs of extra points tried beside 0, +-1 and infinity (from +-1/4 .. +-4),
this one gave the smallest float32 error, an RMS error 1.6x a direct sum's on non-negative
inputs (the symmetric 0, +-1, +-2 and 0, +-1, +-1/2 gave 2.1x).
"""
import numpy as np

from ops.kernel_cache import njit
from ops.linalg import product_gemm
from ops.nn.parts import split_summed
from ops.nn.rows import copy_run, zero_run

# nogil: the kernels split their work over threads (ops.nn.parts)
_jit = njit(error_model="numpy", nogil=True)

# With B^T's rows scaled to small integers (the inverse scalings folded into G, which only the
# filter sees, in float64):
_W5_BT = np.array([[2, -3, -4, 3, 2, 0],
                   [0, -2, 1, 5, 2, 0],
                   [0, -2, 5, -1, -2, 0],
                   [0, 2, 1, -2, -1, 0],
                   [0, 1, -2, -1, 2, 0],
                   [0, 2, -3, -4, 3, 2]], np.float64)
_W5_AT = np.array([[1, 1, 1, 1, 1, 0],
                   [0, 1, -1, 0.5, -2, 1]], np.float64)
_W5_G = np.array([[1 / 2, 0, 0, 0, 0],
                  [1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6],
                  [1 / 6, -1 / 6, 1 / 6, -1 / 6, 1 / 6],
                  [16 / 15, 8 / 15, 4 / 15, 2 / 15, 1 / 15],
                  [1 / 30, -1 / 15, 2 / 15, -4 / 15, 8 / 15],
                  [0, 0, 0, 0, 1 / 2]])
# B^T's rows 1..4 have no first or last term, rows 0 and 5 one of them: 4 or 5 terms each.
#
# Tiles are handled a band (one row of tiles) at a time, on a copy of the input zero-padded to
# whole tiles with each row's columns split by parity (even columns, then odd ones).  Then tile
# tw's column 2 tw + b is the split row's element tw + b // 2 of half b % 2, so each transform
# stage is a few long contiguous loops over a band (all its tiles and channels) rather than
# dozens of channel-long ones per tile.
_W5_TILES = 64  # tiles per chunk, rounded to whole bands: transformed blocks that stay in L2
_W5_MIN_CH = 8  # measured: from 8 channels in and out it beats the other forms (or ties)


@_jit
def _combine5(dst, do, src, o0, o1, o2, o3, o4, c0, c1, c2, c3, c4, n):
    if do < 0 or o0 < 0 or o1 < 0 or o2 < 0 or o3 < 0 or o4 < 0:
        return
    for c in range(n):
        dst[do + c] = (c0 * src[o0 + c] + c1 * src[o1 + c] + c2 * src[o2 + c]
                       + c3 * src[o3 + c] + c4 * src[o4 + c])


@_jit
def _scale_run(dst, do, src, so, c0, n):
    if do < 0 or so < 0:
        return
    for c in range(n):
        dst[do + c] = c0 * src[so + c]


@_jit
def _combine4x2(dst, d0, d1, src, o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, n):
    """Two combinations of the same four rows, each loaded once (two outputs and four inputs
    are as many streams as LLVM still checks for overlap and vectorises)."""
    if d0 < 0 or d1 < 0 or o0 < 0 or o1 < 0 or o2 < 0 or o3 < 0:
        return
    for c in range(n):
        s0 = src[o0 + c]
        s1 = src[o1 + c]
        s2 = src[o2 + c]
        s3 = src[o3 + c]
        dst[d0 + c] = a0 * s0 + a1 * s1 + a2 * s2 + a3 * s3
        dst[d1 + c] = b0 * s0 + b1 * s1 + b2 * s2 + b3 * s3


@_jit
def _combine2x2(dst, d0, d1, src, o0, o1, a0, a1, b0, b1, n):
    if d0 < 0 or d1 < 0 or o0 < 0 or o1 < 0:
        return
    for c in range(n):
        s0 = src[o0 + c]
        s1 = src[o1 + c]
        dst[d0 + c] = a0 * s0 + a1 * s1
        dst[d1 + c] = b0 * s0 + b1 * s1


@_jit
def _w5_bt_rows(dst, do, ds, src, o, bt, n):
    """dst[do + r * ds + c] = sum_a B^T[r, a] src[o[a] + c] for r < 6, c < n; o: 6 offsets, bt:
    B^T in the data's dtype (rows 1..4 use inputs 1..4 only, row 0 inputs 0..4, row 5 1..5)."""
    _combine5(dst, do, src, o[0], o[1], o[2], o[3], o[4],
              bt[0, 0], bt[0, 1], bt[0, 2], bt[0, 3], bt[0, 4], n)
    for r in (1, 3):
        _combine4x2(dst, do + r * ds, do + (r + 1) * ds, src, o[1], o[2], o[3], o[4],
                    bt[r, 1], bt[r, 2], bt[r, 3], bt[r, 4],
                    bt[r + 1, 1], bt[r + 1, 2], bt[r + 1, 3], bt[r + 1, 4], n)
    _combine5(dst, do + 5 * ds, src, o[1], o[2], o[3], o[4], o[5],
              bt[5, 1], bt[5, 2], bt[5, 3], bt[5, 4], bt[5, 5], n)


@_jit
def _w5_at_row(dst, do, src, o, r, at, n):
    """dst[do + c] = sum_a A^T[r, a] src[o[a] + c] for c < n (row 0: terms 0..4, row 1: 1..5)."""
    s = r  # first nonzero term
    _combine5(dst, do, src, o[s], o[s + 1], o[s + 2], o[s + 3], o[s + 4],
              at[r, s], at[r, s + 1], at[r, s + 2], at[r, s + 3], at[r, s + 4], n)


@_jit
def _w5_a_rows(dst, do, ds, src, o0, o1, at, n):
    """dst[do + r * ds + c] = A[r, 0] src[o0 + c] + A[r, 1] src[o1 + c] for r < 6, c < n
    (A = (A^T)^T: row 0 is (1, 0), row 5 (0, 1), rows 1..4 have both terms)."""
    _scale_run(dst, do, src, o0, at[0, 0], n)
    for r in (1, 3):
        _combine2x2(dst, do + r * ds, do + (r + 1) * ds, src, o0, o1,
                    at[0, r], at[1, r], at[0, r + 1], at[1, r + 1], n)
    _scale_run(dst, do + 5 * ds, src, o1, at[1, 5], n)


@_jit
def _w5_split(x, pt, pl, hs, wh):
    """xs (N, hs, 2, wh, C): x shifted by (pt, pl), zero-padded, each row's columns split by
    parity: xs[n, r, p, j] = x[n, r - pt, 2 j + p - pl] (zero outside x)."""
    N, H, W, C = x.shape
    xs = np.empty((N, hs, 2, wh, C), x.dtype)
    xf = x.reshape(x.size)
    sf = xs.reshape(xs.size)
    for n in range(N):
        for r in range(hs):
            ih = r - pt
            for p in range(2):
                for j in range(wh):
                    iw = 2 * j + p - pl
                    dst = (((n * hs + r) * 2 + p) * wh + j) * C
                    if 0 <= ih < H and 0 <= iw < W:
                        copy_run(sf, dst, xf, ((n * H + ih) * W + iw) * C, C)
                    else:
                        zero_run(sf, dst, C)
    return xs


@_jit
def winograd5_filter_transform(w, gm):
    """U (36, C, Co) = G g G^T for each (C, Co) pair of a (5, 5, C, Co) filter; gm: _W5_G.

    Computed in float64 and rounded once."""
    _, _, C, Co = w.shape
    u = np.empty((36, C, Co), w.dtype)
    t = np.empty(30 * Co, np.float64)  # t[(5 a + j) Co + o] = (G g)[a, j]
    acc = np.empty(Co, np.float64)
    wf = w.reshape(w.size)
    uf = u.reshape(u.size)
    for c in range(C):
        for a in range(6):
            for j in range(5):
                to = (5 * a + j) * Co
                for o in range(Co):
                    t[to + o] = 0
                for i in range(5):
                    g = gm[a, i]
                    if g != 0:
                        wo = ((i * 5 + j) * C + c) * Co
                        for o in range(Co):
                            t[to + o] += g * wf[wo + o]
        for a in range(6):
            for b in range(6):
                acc[:] = 0
                for j in range(5):
                    g = gm[b, j]
                    if g != 0:
                        to = (5 * a + j) * Co
                        for o in range(Co):
                            acc[o] += g * t[to + o]
                uo = ((6 * a + b) * C + c) * Co
                for o in range(Co):
                    uf[uo + o] = acc[o]
    return u


@_jit
def winograd5_filter_transform_adjoint(du, gm):
    """dg (5, 5, C, Co) = G^T dU G: the adjoint of winograd5_filter_transform."""
    _, C, Co = du.shape
    g = np.empty((5, 5, C, Co), du.dtype)
    t = np.empty(30 * Co, np.float64)  # t[(6 i + b) Co + o] = (G^T dU)[i, b]
    acc = np.empty(Co, np.float64)
    df = du.reshape(du.size)
    gf = g.reshape(g.size)
    for c in range(C):
        for i in range(5):
            for b in range(6):
                to = (6 * i + b) * Co
                for o in range(Co):
                    t[to + o] = 0
                for a in range(6):
                    coef = gm[a, i]
                    if coef != 0:
                        so = ((6 * a + b) * C + c) * Co
                        for o in range(Co):
                            t[to + o] += coef * df[so + o]
        for i in range(5):
            for j in range(5):
                acc[:] = 0
                for b in range(6):
                    coef = gm[b, j]
                    if coef != 0:
                        to = (6 * i + b) * Co
                        for o in range(Co):
                            acc[o] += coef * t[to + o]
                go = ((i * 5 + j) * C + c) * Co
                for o in range(Co):
                    gf[go + o] = acc[o]
    return g


@_jit
def _w5_input_bands(xs, b0, b1, nth, v, tmp, bt):
    """v[q, tiles of bands b0..b1] = (B^T d B)[q] for each tile's 6x6 input d.

    xs: _w5_split input (N, 2 nth + 4, 2, ntw + 2, C); band = n * nth + th; v: (36, tc, C)
    with a band's tiles at (band - b0) * ntw + tw; tmp: (6 * 2 * (ntw + 2) * C,) scratch."""
    N, hs, _, wh, C = xs.shape
    ntw = wh - 2
    tc = v.shape[1]
    L = 2 * wh * C  # one split row
    xf = xs.reshape(xs.size)
    vf = v.reshape(v.size)
    for band in range(b0, b1):
        n = band // nth
        th = band - n * nth
        r0 = (n * hs + 2 * th) * L
        # down the columns: tmp[i] = sum_a B^T[i, a] xs[n, 2 th + a], whole split rows at once
        rows = (r0, r0 + L, r0 + 2 * L, r0 + 3 * L, r0 + 4 * L, r0 + 5 * L)
        _w5_bt_rows(tmp, 0, L, xf, rows, bt, L)
        # along the rows: v[6 i + l, tile tw] = sum_b B^T[l, b] tmp[i, column 2 tw + b], for all
        # of the band's tiles at once (column 2 tw + b = half b % 2, element tw + b // 2)
        lt0 = (band - b0) * ntw
        for i in range(6):
            e = i * L
            o = wh * C
            cols = (e, e + o, e + C, e + o + C, e + 2 * C, e + o + 2 * C)
            _w5_bt_rows(vf, (6 * i * tc + lt0) * C, tc * C, tmp, cols, bt, ntw * C)


@_jit
def _w5_output_bands(m, b0, b1, nth, ntw, out, r, at):
    """out tiles of bands b0..b1 = A^T m A, clipped to out's (Ho, Wo); r: (12 * ntw * Co,)."""
    _, Ho, Wo, Co = out.shape
    tc = m.shape[1]
    S = ntw * Co
    mf = m.reshape(m.size)
    of = out.reshape(out.size)
    for band in range(b0, b1):
        n = band // nth
        th = band - n * nth
        lt0 = (band - b0) * ntw
        # down the columns: r[i, b] = sum_a A^T[i, a] m[6 a + b], all of the band's tiles at once
        for b in range(6):
            s = (b * tc + lt0) * Co
            step = 6 * tc * Co
            rows = (s, s + step, s + 2 * step, s + 3 * step, s + 4 * step, s + 5 * step)
            for i in range(2):
                _w5_at_row(r, (6 * i + b) * S, mf, rows, i, at, S)
        # along the rows: out[2 th + i, 2 tw + j] = sum_b A^T[j, b] r[i, b, tile tw]
        for i in range(2):
            oh = 2 * th + i
            if oh >= Ho:
                continue
            for tw in range(ntw):
                s = 6 * i * S + tw * Co
                cols = (s, s + S, s + 2 * S, s + 3 * S, s + 4 * S, s + 5 * S)
                dst = ((n * Ho + oh) * Wo + 2 * tw) * Co
                _w5_at_row(of, dst, r, cols, 0, at, Co)
                if 2 * tw + 1 < Wo:
                    _w5_at_row(of, dst + Co, r, cols, 1, at, Co)


@_jit
def conv2d_winograd5_kernel(xs, u, out, tiles, bt, at, band_lo, band_hi):
    """out[n, oh, ow] = sum_{i,j<5} x[n, oh - pt + i, ow - pl + j] @ g[i, j], zero outside x,
    for the output rows of bands band_lo..band_hi (band n * nth + th: rows 2 th, 2 th + 1).

    xs: _w5_split(x, pt, pl, 2 nth + 4, ntw + 2) with nth, ntw = ceil(Ho / 2), ceil(Wo / 2);
    u: winograd5_filter_transform(g) (36, C, Co); out: (N, Ho, Wo, Co), Ho, Wo >= 1; tiles:
    2x2 output tiles per chunk (>= 1); bt, at: _W5_BT and _W5_AT in x's dtype.
    """
    _, _, _, wh, C = xs.shape
    _, Ho, Wo, Co = out.shape
    nth = (Ho + 1) // 2
    ntw = wh - 2
    bpc = max(1, min(tiles // ntw, band_hi - band_lo))  # bands per chunk
    tc = bpc * ntw
    v = np.empty((36, tc, C), xs.dtype)
    m = np.empty((36, tc, Co), xs.dtype)
    tmp = np.empty(12 * (ntw + 2) * C, xs.dtype)
    r = np.empty(12 * ntw * Co, xs.dtype)
    vf = v.reshape(v.size)
    mf = m.reshape(m.size)
    uf = u.reshape(u.size)
    for b0 in range(band_lo, band_hi, bpc):
        b1 = min(b0 + bpc, band_hi)
        _w5_input_bands(xs, b0, b1, nth, v, tmp, bt)
        for q in range(36):
            product_gemm(False, False, (b1 - b0) * ntw, Co, C, 1.0, vf[q * tc * C:], C,
                         uf[q * C * Co:], Co, 0.0, mf[q * tc * Co:], Co)
        _w5_output_bands(m, b0, b1, nth, ntw, out, r, at)


@_jit
def _w5_output_grad_bands(dys, b0, b1, nth, dm, e, at):
    """dm[q, tiles of bands b0..b1] = (A dY A^T)[q]: the adjoint of _w5_output_bands.

    dys: dy split like _w5_split to (N, 2 nth, 2, ntw, Co); e: (12 * ntw * Co,) scratch."""
    N, hs, _, ntw, Co = dys.shape
    tc = dm.shape[1]
    S = ntw * Co
    L = 2 * S
    yf = dys.reshape(dys.size)
    mf = dm.reshape(dm.size)
    for band in range(b0, b1):
        n = band // nth
        th = band - n * nth
        r0 = (n * hs + 2 * th) * L
        # down the columns: e[a] = A[a, 0] dY[row 0] + A[a, 1] dY[row 1], whole split rows
        _w5_a_rows(e, 0, L, yf, r0, r0 + L, at, L)
        # along the rows: dm[6 a + b, tile tw] = A[b, 0] e[a, even] + A[b, 1] e[a, odd]
        lt0 = (band - b0) * ntw
        for a in range(6):
            _w5_a_rows(mf, (6 * a * tc + lt0) * Co, tc * Co, e, a * L, a * L + S, at, S)


@_jit
def conv2d_backprop_filter_winograd5_kernel(xs, dys, tiles, bt, at, band_lo, band_hi):
    """dU = sum over the tiles of bands band_lo..band_hi of V[q]^T dM[q] (36, C, Co) for the
    filter gradient of conv2d_winograd5_kernel with dy = dout: the adjoint of the output stage
    gives dM, and winograd5_filter_transform_adjoint(sum of dU over all bands) the gradient.

    xs: as for conv2d_winograd5_kernel; dys: _w5_split(dy, 0, 0, 2 nth, ntw)."""
    _, _, _, wh, C = xs.shape
    _, hs, _, ntw, Co = dys.shape
    nth = hs // 2
    bpc = max(1, min(tiles // ntw, band_hi - band_lo))
    tc = bpc * ntw
    v = np.empty((36, tc, C), xs.dtype)
    dm = np.empty((36, tc, Co), xs.dtype)
    du = np.zeros((36, C, Co), xs.dtype)
    tmp = np.empty(12 * (ntw + 2) * C, xs.dtype)
    e = np.empty(12 * ntw * Co, xs.dtype)
    vf = v.reshape(v.size)
    mf = dm.reshape(dm.size)
    uf = du.reshape(du.size)
    for b0 in range(band_lo, band_hi, bpc):
        b1 = min(b0 + bpc, band_hi)
        _w5_input_bands(xs, b0, b1, nth, v, tmp, bt)
        _w5_output_grad_bands(dys, b0, b1, nth, dm, e, at)
        for q in range(36):
            product_gemm(True, False, C, Co, (b1 - b0) * ntw, 1.0, vf[q * tc * C:], C,
                         mf[q * tc * Co:], Co, 1.0, uf[q * C * Co:], Co)
    return du


# ---- when the form applies, and its entry points -------------------------------------------------
def applies(kh, kw, strides, dilations, cin, cout):
    """Whether conv2d and its gradients take this form."""
    return (kh == 5 and kw == 5 and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and cin >= _W5_MIN_CH and cout >= _W5_MIN_CH)


def forward(x, w, pt, pl, out):
    """out = stride-1 correlation of x with the 5x5 filter w (pads pt, pl), F(2x2, 5x5)."""
    N, Ho, Wo, Co = out.shape
    nth, ntw = (Ho + 1) // 2, (Wo + 1) // 2
    xs = _w5_split(x, pt, pl, 2 * nth + 4, ntw + 2)
    u = winograd5_filter_transform(w, _W5_G)
    bt, at = _W5_BT.astype(x.dtype), _W5_AT.astype(x.dtype)
    split_summed(lambda lo, hi: conv2d_winograd5_kernel(xs, u, out, _W5_TILES, bt, at, lo, hi),
                 N * nth, 2 * Wo * Co * 25 * x.shape[3])


def backprop_filter(x, dy, pt, pl):
    """The filter gradient (5, 5, C, Co) of forward(x, ., pt, pl, out) for dy = dout."""
    N, Ho, Wo, Co = dy.shape
    nth, ntw = (Ho + 1) // 2, (Wo + 1) // 2
    xs = _w5_split(x, pt, pl, 2 * nth + 4, ntw + 2)
    dys = _w5_split(dy, 0, 0, 2 * nth, ntw)
    bt, at = _W5_BT.astype(x.dtype), _W5_AT.astype(x.dtype)
    du = split_summed(
        lambda lo, hi: conv2d_backprop_filter_winograd5_kernel(xs, dys, _W5_TILES, bt, at, lo, hi),
        N * nth, 2 * Wo * Co * 25 * x.shape[3])
    return winograd5_filter_transform_adjoint(du, _W5_G)
