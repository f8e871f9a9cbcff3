"""Neural-network kernels: 2-D convolution and its gradients, pooling, softmax, cross-entropy.

Layout is NHWC; filters are [KH, KW, Cin, Cout].  Padding is TF's: 'VALID', or 'SAME' with
out = ceil(in / stride) and the odd padding cell after (``same_padding``).

Convolutions are matrix products through BLAS (``ops.linalg.gemm``), in one of these forms:

* 3x3 and 5x5 filters, stride 1, dilation 1, enough channels in and out (16 and 8): Winograd
  F(2x2, 3x3) and F(2x2, 5x5) (see their sections), with 2.25x and 2.8x fewer multiplications
  than a direct product; the input gradient is the same kernel on the flipped filter and the
  filter gradient is its exact adjoint.
* other stride-1 convolutions with many input channels ("shift" form): with the input
  zero-padded to (Hp, Wp), output (h, w) of image n is anchored at flat padded position
  p = (n*Hp + h)*Wp + w, and tap (i, j) reads the padded input at p + (i*dh*Wp + j*dw).  So, over
  a run of consecutive anchors, every tap is one GEMM of a contiguous block of the padded input
  with the filter slice w[i, j] -- no patch matrix at all.  Anchors with w >= Wo or h >= Ho are
  junk rows that are computed and dropped (forward), or given a zero gradient (backward).  The
  filter gradient uses this form for few input channels and many taps instead (near-GEMV
  products that skip a patch matrix many times the input's size).
* few input channels (a network's first layer): the patch matrix of a block of output rows
  built transposed, one row per patch element and contiguous over the outputs, so that it is
  filled by long strided copies rather than runs of Cin values; then one GEMM per block.
* everything else (strides with many channels): a chunked im2col, i.e. the patch matrix of a
  block of output rows (kept cache-sized) times the filter reshaped to (KH*KW*Cin, Cout), and
  the transposes of that for the gradients.

Float kernels only (float32/float64).  Callers validate shapes, dtypes, strides >= 1,
dilations >= 1 and that the output is non-negative in size.
"""
import math

import numpy as np

from ops import threads
from ops.kernel_cache import njit
from ops.linalg import gemm

# nogil: the big kernels split their work over threads (ops.threads)
_jit = njit(error_model="numpy", nogil=True)


# ---- padding arithmetic (pure Python) --------------------------------------------------------
def conv_output_size(in_size, k, stride, dilation, padding):
    """Output length of a conv/pool window sweep along one axis ('SAME' or 'VALID')."""
    if padding == "SAME":
        return -(-in_size // stride)
    if padding == "VALID":
        eff = (k - 1) * dilation + 1
        return (in_size - eff) // stride + 1 if in_size >= eff else 0
    raise ValueError("padding must be 'SAME' or 'VALID', got %r" % (padding,))


def same_padding(in_size, k, stride, dilation):
    """(pad_before, pad_after) of TF's 'SAME' padding along one axis (odd cell goes after)."""
    out = -(-in_size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - in_size, 0)
    return total // 2, total - total // 2


def _pads(in_size, k, stride, dilation, padding):
    if padding == "SAME":
        return same_padding(in_size, k, stride, dilation)
    return 0, 0


def _geometry(x_shape, kh, kw, strides, dilations, padding):
    _, H, W, _ = x_shape
    sh, sw = strides
    dh, dw = dilations
    Ho = conv_output_size(H, kh, sh, dh, padding)
    Wo = conv_output_size(W, kw, sw, dw, padding)
    pt, _ = _pads(H, kh, sh, dh, padding)
    pl, _ = _pads(W, kw, sw, dw, padding)
    return Ho, Wo, pt, pl


# Patch-matrix chunk: about this many elements (1M floats = 4 MiB for float32): GEMMs big enough
# that BLAS's threads pay off, a block small enough to stay in the last-level cache.
_CHUNK_ELEMS = 1 << 20
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
# Up to this many input channels the forward pass and the filter gradient build the patch matrix
# transposed (one row per patch element, contiguous over outputs): in the usual layout each
# (output, tap) copies a run of only Cin values, too short to copy fast.
_PATCH_T_MAX_CIN = 16
# Its chunks: about this many elements (64 KiB for float32): the block stays in L1/L2 (bigger
# ones, whose GEMMs BLAS would spread over threads, measured slower).
_CHUNK_T_ELEMS = 1 << 14


# ---- flat row helpers ------------------------------------------------------------------------
# Hot loops address channel rows as (flat array, offset) rather than as views: a view costs an
# atomic reference-count increment and decrement, which dominates when rows are short.  Each helper
# first rejects a negative offset; that lets LLVM prove the indices non-negative, drop Numba's
# wraparound code and vectorise (without it the loads become gathers).
@_jit
def _copyf(dst, do, src, so, n):
    if do < 0 or so < 0:
        return
    for c in range(n):
        dst[do + c] = src[so + c]


@_jit
def _zerof(dst, do, n):
    if do < 0:
        return
    for c in range(n):
        dst[do + c] = 0


@_jit
def _addf(dst, do, src, so, n):
    if do < 0 or so < 0:
        return
    for c in range(n):
        dst[do + c] += src[so + c]


@_jit
def _comb2f(dst, do, src, o0, o1, c0, c1, n):
    if do < 0 or o0 < 0 or o1 < 0:
        return
    for c in range(n):
        dst[do + c] = c0 * src[o0 + c] + c1 * src[o1 + c]


@_jit
def _comb3f(dst, do, src, o0, o1, o2, c1, c2, n):
    if do < 0 or o0 < 0 or o1 < 0 or o2 < 0:
        return
    for c in range(n):
        dst[do + c] = src[o0 + c] + c1 * src[o1 + c] + c2 * src[o2 + c]


@_jit
def _comb4f(dst, do, src, o0, o1, o2, o3, c0, c1, c2, c3, n):
    if do < 0 or o0 < 0 or o1 < 0 or o2 < 0 or o3 < 0:
        return
    for c in range(n):
        dst[do + c] = c0 * src[o0 + c] + c1 * src[o1 + c] + c2 * src[o2 + c] + c3 * src[o3 + c]


# ---- im2col form -----------------------------------------------------------------------------
@_jit
def _im2col_rows(x, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, cols):
    """Patch rows of output rows r0..r1 (flat over (n, oh)) into cols[:(r1-r0)*Wo]."""
    _, H, W, C = x.shape
    K = cols.shape[1]
    xf = x.reshape(x.size)
    cf = cols.reshape(cols.size)
    row = 0
    for r in range(r0, r1):
        n = r // Ho
        oh = r - n * Ho
        for ow in range(Wo):
            base = row * K
            row += 1
            for i in range(kh):
                ih = oh * sh - pt + i * dh
                for j in range(kw):
                    iw = ow * sw - pl + j * dw
                    seg = base + (i * kw + j) * C
                    if 0 <= ih < H and 0 <= iw < W:
                        if C == 1:  # single channel: a plain element copy
                            cf[seg] = xf[(n * H + ih) * W + iw]
                        else:
                            _copyf(cf, seg, xf, ((n * H + ih) * W + iw) * C, C)
                    elif C == 1:
                        cf[seg] = 0
                    else:
                        _zerof(cf, seg, C)


@_jit
def _col2im_rows(dcols, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, dx):
    """Adjoint of _im2col_rows: adds patch rows back into dx (N, H, W, C)."""
    _, H, W, C = dx.shape
    K = dcols.shape[1]
    xf = dx.reshape(dx.size)
    cf = dcols.reshape(dcols.size)
    row = 0
    for r in range(r0, r1):
        n = r // Ho
        oh = r - n * Ho
        for ow in range(Wo):
            base = row * K
            row += 1
            for i in range(kh):
                ih = oh * sh - pt + i * dh
                if ih < 0 or ih >= H:
                    continue
                for j in range(kw):
                    iw = ow * sw - pl + j * dw
                    if 0 <= iw < W:
                        if C == 1:
                            xf[(n * H + ih) * W + iw] += cf[base + i * kw + j]
                        else:
                            _addf(xf, ((n * H + ih) * W + iw) * C, cf, base + (i * kw + j) * C,
                                  C)


def _rows_per_chunk(K, Wo):
    return max(1, _CHUNK_ELEMS // max(1, K * Wo))


@_jit
def conv2d_im2col_kernel(x, w2, kh, kw, sh, sw, dh, dw, pt, pl, out, rows_per_chunk, row_lo,
                         row_hi):
    """out (N, Ho, Wo, Co) = conv of x (N, H, W, C) with w2 = filter.reshape(kh*kw*C, Co), for
    the output rows row_lo..row_hi (flat over (n, oh))."""
    N, Ho, Wo, Co = out.shape
    K = w2.shape[0]
    cols = np.empty((rows_per_chunk * Wo, K), x.dtype)
    colf = cols.reshape(cols.size)
    of = out.reshape(out.size)
    wf = w2.reshape(w2.size)
    for r0 in range(row_lo, row_hi, rows_per_chunk):
        r1 = min(r0 + rows_per_chunk, row_hi)
        _im2col_rows(x, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, cols)
        m = (r1 - r0) * Wo
        gemm(False, False, m, Co, K, 1.0, colf, K, wf, Co, 0.0, of[r0 * Wo * Co:], Co)


@_jit
def conv2d_backprop_input_im2col_kernel(w2, dy, kh, kw, sh, sw, dh, dw, pt, pl, dx,
                                        rows_per_chunk):
    """dx (N, H, W, C) = input gradient of conv2d_im2col_kernel for dy (N, Ho, Wo, Co)."""
    N, Ho, Wo, Co = dy.shape
    K = w2.shape[0]
    dcols = np.empty((rows_per_chunk * Wo, K), dy.dtype)
    dcf = dcols.reshape(dcols.size)
    dyf = dy.reshape(dy.size)
    wf = w2.reshape(w2.size)
    dx[:] = 0
    for r0 in range(0, N * Ho, rows_per_chunk):
        r1 = min(r0 + rows_per_chunk, N * Ho)
        m = (r1 - r0) * Wo
        # dcols = dy_rows @ w2^T
        gemm(False, True, m, K, Co, 1.0, dyf[r0 * Wo * Co:], Co, wf, Co, 0.0, dcf, K)
        _col2im_rows(dcols, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, dx)


@_jit
def conv2d_backprop_filter_im2col_kernel(x, dy, kh, kw, sh, sw, dh, dw, pt, pl, dw2,
                                         rows_per_chunk, row_lo, row_hi):
    """dw2 (kh*kw*C, Co) = filter gradient of conv2d_im2col_kernel for dy (N, Ho, Wo, Co),
    summed over the output rows row_lo..row_hi."""
    N, Ho, Wo, Co = dy.shape
    K = dw2.shape[0]
    cols = np.empty((rows_per_chunk * Wo, K), x.dtype)
    colf = cols.reshape(cols.size)
    dyf = dy.reshape(dy.size)
    dwf = dw2.reshape(dw2.size)
    dw2[:] = 0
    for r0 in range(row_lo, row_hi, rows_per_chunk):
        r1 = min(r0 + rows_per_chunk, row_hi)
        _im2col_rows(x, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, cols)
        m = (r1 - r0) * Wo
        # dw2 += cols^T @ dy_rows
        gemm(True, False, K, Co, m, 1.0, colf, K, dyf[r0 * Wo * Co:], Co, 1.0, dwf, Co)


# ---- transposed im2col (few input channels) ----------------------------------------------------
@_jit
def _gatherf(dst, do, src, so, step, n):
    if do < 0 or so < 0 or step < 0:
        return
    for c in range(n):
        dst[do + c] = src[so + c * step]


@_jit
def _im2col_t_rows(x, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, ct, ld):
    """Transposed patch matrix of output rows r0..r1 (flat over (n, oh)): ct[k * ld + p] is patch
    element k (= (i * kw + j) * C + c) of the p-th output (p = (r - r0) * Wo + ow)."""
    _, H, W, C = x.shape
    xf = x.reshape(x.size)
    cf = ct.reshape(ct.size)
    for r in range(r0, r1):
        n = r // Ho
        oh = r - n * Ho
        p0 = (r - r0) * Wo
        for i in range(kh):
            ih = oh * sh - pt + i * dh
            inside = 0 <= ih < H
            for j in range(kw):
                # iw = ow * sw - off lies in [0, W) for ow in [lo, hi)
                off = pl - j * dw
                lo = min(max(-(-off // sw), 0), Wo)
                hi = min(max(-(-(W + off) // sw), lo), Wo)
                for c in range(C):
                    d = ((i * kw + j) * C + c) * ld + p0
                    if not inside:
                        _zerof(cf, d, Wo)
                        continue
                    _zerof(cf, d, lo)
                    _gatherf(cf, d + lo, xf, ((n * H + ih) * W + lo * sw - off) * C + c, sw * C,
                             hi - lo)
                    _zerof(cf, d + hi, Wo - hi)


def _rows_per_chunk_t(K, Wo):
    return max(1, _CHUNK_T_ELEMS // max(1, K * Wo))


@_jit
def conv2d_im2col_t_kernel(x, w2, kh, kw, sh, sw, dh, dw, pt, pl, out, rows_per_chunk, row_lo,
                           row_hi):
    """conv2d_im2col_kernel through the transposed patch matrix (for few input channels)."""
    N, Ho, Wo, Co = out.shape
    K = w2.shape[0]
    ld = rows_per_chunk * Wo
    ct = np.empty(K * ld, x.dtype)
    of = out.reshape(out.size)
    wf = w2.reshape(w2.size)
    for r0 in range(row_lo, row_hi, rows_per_chunk):
        r1 = min(r0 + rows_per_chunk, row_hi)
        _im2col_t_rows(x, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, ct, ld)
        # out_rows = ct^T @ w2
        gemm(True, False, (r1 - r0) * Wo, Co, K, 1.0, ct, ld, wf, Co, 0.0, of[r0 * Wo * Co:],
             Co)


@_jit
def conv2d_backprop_filter_im2col_t_kernel(x, dy, kh, kw, sh, sw, dh, dw, pt, pl, dw2,
                                           rows_per_chunk, row_lo, row_hi):
    """conv2d_backprop_filter_im2col_kernel through the transposed patch matrix: dw2 (K, Co)
    overwritten (row_lo < row_hi)."""
    N, Ho, Wo, Co = dy.shape
    K = dw2.shape[0]
    ld = rows_per_chunk * Wo
    ct = np.empty(K * ld, x.dtype)
    dyf = dy.reshape(dy.size)
    dwf = dw2.reshape(dw2.size)
    for r0 in range(row_lo, row_hi, rows_per_chunk):
        r1 = min(r0 + rows_per_chunk, row_hi)
        _im2col_t_rows(x, r0, r1, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, ct, ld)
        # dw2 (+)= ct @ dy_rows
        gemm(False, False, K, Co, (r1 - r0) * Wo, 1.0, ct, ld, dyf[r0 * Wo * Co:], Co,
             0.0 if r0 == row_lo else 1.0, dwf, Co)


# ---- shift form (stride 1) -------------------------------------------------------------------
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
                gemm(False, False, m, Co, C, 1.0, xf[off * C:], C, wf[(i * kw + j) * C * Co:],
                     Co, 0.0 if first else 1.0, ef, Co)
        # keep the anchors that are real outputs
        for t in range(m):
            p = p0 + t
            n = p // (Hp * Wp)
            rem = p - n * Hp * Wp
            h = rem // Wp
            ww = rem - h * Wp
            if h < Ho and ww < Wo:
                _copyf(of, ((n * Ho + h) * Wo + ww) * Co, ef, t * Co, Co)


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
                gemm(False, True, m, C, Co, 1.0, df[p0 * Co:], Co, wf[(i * kw + j) * C * Co:],
                     Co, 1.0, xf[off * C:], C)


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
                gemm(True, False, C, Co, m, 1.0, xf[off * C:], C, df[p0 * Co:], Co, 1.0,
                     wf[(i * kw + j) * C * Co:], Co)


# ---- Winograd F(2x2, 3x3) (3x3 filters, stride 1, dilation 1) ---------------------------------
# Each 2x2 output tile is A^T [(G g G^T) * (B^T d B)] A for its 4x4 input tile d: 16 products per
# tile and channel pair instead of 36, so the 16 GEMMs (one per tile position) do 2.25x fewer
# flops than direct/im2col.  The transforms only add and halve, so float32 error stays at the
# level of a direct sum (a few ulps of the result's magnitude).
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
                        _copyf(patch, (a * 4 + b) * C, xf, ((n * H + ih) * W + iw) * C, C)
                    else:
                        _zerof(patch, (a * 4 + b) * C, C)
            src = patch
            base = 0
            rs = 4 * C
        for i in range(4):
            ra = base + _BT_A0[i] * rs
            rb = base + _BT_A1[i] * rs
            for j in range(4):
                ca = _BT_A0[j] * C
                cb = _BT_A1[j] * C
                _comb4f(vf, ((4 * i + j) * tc + lt) * C, src, ra + ca, ra + cb, rb + ca, rb + cb,
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
        for l in range(4):
            o0 = (l * tc + lt) * Co
            o1 = ((4 + l) * tc + lt) * Co
            o2 = ((8 + l) * tc + lt) * Co
            o3 = ((12 + l) * tc + lt) * Co
            _comb3f(rbuf, l * Co, mf, o0, o1, o2, one, one, Co)
            _comb3f(rbuf, (4 + l) * Co, mf, o1, o2, o3, -one, -one, Co)
        # y = r A: y0 = r0 + r1 + r2, y1 = r1 - r2 - r3 (over the second index)
        for i in range(2):
            oh = 2 * th + i
            if oh >= Ho:
                continue
            ri = 4 * i * Co
            dst = ((n * Ho + oh) * Wo + 2 * tw) * Co
            _comb3f(of, dst, rbuf, ri, ri + Co, ri + 2 * Co, one, one, Co)
            if 2 * tw + 1 < Wo:
                _comb3f(of, dst + Co, rbuf, ri + Co, ri + 2 * Co, ri + 3 * Co, -one, -one, Co)


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
            gemm(False, False, t1 - t0, Co, C, 1.0, vf[k * tc * C:], C, uf[k * C * Co:], Co,
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
                    _copyf(ybuf, (2 * r + c) * Co, yf, ((n * Ho + oh) * Wo + ow) * Co, Co)
                else:
                    _zerof(ybuf, (2 * r + c) * Co, Co)
        for i in range(4):  # e = A dY (rows): e[i, c] = a0 y[0, c] + a1 y[1, c]
            for c in range(2):
                _comb2f(ebuf, (2 * i + c) * Co, ybuf, c * Co, (2 + c) * Co, cf[i, 0], cf[i, 1],
                        Co)
        for i in range(4):  # dm = e A^T (columns)
            for j in range(4):
                _comb2f(mf, ((4 * i + j) * tc + lt) * Co, ebuf, 2 * i * Co, (2 * i + 1) * Co,
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
            gemm(True, False, C, Co, t1 - t0, 1.0, vf[k * tc * C:], C, mf[k * tc * Co:], Co,
                 1.0, uf[k * C * Co:], Co)
    return du


# ---- Winograd F(2x2, 5x5) (5x5 filters, stride 1, dilation 1) ---------------------------------
# The same scheme with 6x6 input tiles: 36 products per 2x2 output tile and channel pair instead
# of 100 (2.8x fewer flops).  Interpolation points 0, 1, -1, 1/2, -2 and infinity: of the pairs
# of extra points tried beside 0, +-1 and infinity (from +-1/4 .. +-4), this one gave the
# smallest float32 error, an RMS error 1.6x a direct sum's on non-negative inputs (the
# symmetric 0, +-1, +-2 and 0, +-1, +-1/2 gave 2.1x).  With B^T's rows scaled to small integers
# (the inverse scalings folded into G, which only the filter sees, in float64):
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
def _comb5f(dst, do, src, o0, o1, o2, o3, o4, c0, c1, c2, c3, c4, n):
    if do < 0 or o0 < 0 or o1 < 0 or o2 < 0 or o3 < 0 or o4 < 0:
        return
    for c in range(n):
        dst[do + c] = (c0 * src[o0 + c] + c1 * src[o1 + c] + c2 * src[o2 + c]
                       + c3 * src[o3 + c] + c4 * src[o4 + c])


@_jit
def _scalef(dst, do, src, so, c0, n):
    if do < 0 or so < 0:
        return
    for c in range(n):
        dst[do + c] = c0 * src[so + c]


@_jit
def _comb4x2f(dst, d0, d1, src, o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, n):
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
def _comb2x2f(dst, d0, d1, src, o0, o1, a0, a1, b0, b1, n):
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
    _comb5f(dst, do, src, o[0], o[1], o[2], o[3], o[4],
            bt[0, 0], bt[0, 1], bt[0, 2], bt[0, 3], bt[0, 4], n)
    for r in (1, 3):
        _comb4x2f(dst, do + r * ds, do + (r + 1) * ds, src, o[1], o[2], o[3], o[4],
                  bt[r, 1], bt[r, 2], bt[r, 3], bt[r, 4],
                  bt[r + 1, 1], bt[r + 1, 2], bt[r + 1, 3], bt[r + 1, 4], n)
    _comb5f(dst, do + 5 * ds, src, o[1], o[2], o[3], o[4], o[5],
            bt[5, 1], bt[5, 2], bt[5, 3], bt[5, 4], bt[5, 5], n)


@_jit
def _w5_at_row(dst, do, src, o, r, at, n):
    """dst[do + c] = sum_a A^T[r, a] src[o[a] + c] for c < n (row 0: terms 0..4, row 1: 1..5)."""
    s = r  # first nonzero term
    _comb5f(dst, do, src, o[s], o[s + 1], o[s + 2], o[s + 3], o[s + 4],
            at[r, s], at[r, s + 1], at[r, s + 2], at[r, s + 3], at[r, s + 4], n)


@_jit
def _w5_a_rows(dst, do, ds, src, o0, o1, at, n):
    """dst[do + r * ds + c] = A[r, 0] src[o0 + c] + A[r, 1] src[o1 + c] for r < 6, c < n
    (A = (A^T)^T: row 0 is (1, 0), row 5 (0, 1), rows 1..4 have both terms)."""
    _scalef(dst, do, src, o0, at[0, 0], n)
    for r in (1, 3):
        _comb2x2f(dst, do + r * ds, do + (r + 1) * ds, src, o0, o1,
                  at[0, r], at[1, r], at[0, r + 1], at[1, r + 1], n)
    _scalef(dst, do + 5 * ds, src, o1, at[1, 5], n)


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
                        _copyf(sf, dst, xf, ((n * H + ih) * W + iw) * C, C)
                    else:
                        _zerof(sf, dst, C)
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
            gemm(False, False, (b1 - b0) * ntw, Co, C, 1.0, vf[q * tc * C:], C,
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
            gemm(True, False, C, Co, (b1 - b0) * ntw, 1.0, vf[q * tc * C:], C,
                 mf[q * tc * Co:], Co, 1.0, uf[q * C * Co:], Co)
    return du


def _conv_winograd5(x, w, pt, pl, out):
    """out = stride-1 correlation of x with the 5x5 filter w (pads pt, pl), F(2x2, 5x5)."""
    N, Ho, Wo, Co = out.shape
    nth, ntw = (Ho + 1) // 2, (Wo + 1) // 2
    xs = _w5_split(x, pt, pl, 2 * nth + 4, ntw + 2)
    u = winograd5_filter_transform(w, _W5_G)
    bt, at = _W5_BT.astype(x.dtype), _W5_AT.astype(x.dtype)
    _split(lambda lo, hi: conv2d_winograd5_kernel(xs, u, out, _W5_TILES, bt, at, lo, hi),
           N * nth, 2 * Wo * Co * 25 * x.shape[3])


def _filter_grad_winograd5(x, dy, pt, pl):
    """The filter gradient (5, 5, C, Co) of _conv_winograd5(x, ., pt, pl, out) for dy = dout."""
    N, Ho, Wo, Co = dy.shape
    nth, ntw = (Ho + 1) // 2, (Wo + 1) // 2
    xs = _w5_split(x, pt, pl, 2 * nth + 4, ntw + 2)
    dys = _w5_split(dy, 0, 0, 2 * nth, ntw)
    bt, at = _W5_BT.astype(x.dtype), _W5_AT.astype(x.dtype)
    du = _split(
        lambda lo, hi: conv2d_backprop_filter_winograd5_kernel(xs, dys, _W5_TILES, bt, at, lo, hi),
        N * nth, 2 * Wo * Co * 25 * x.shape[3])
    return winograd5_filter_transform_adjoint(du, _W5_G)


def _use_winograd(kh, kw, strides, dilations, cin, cout):
    return (kh == 3 and kw == 3 and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and cin >= _WINO_MIN_CH and cout >= _WINO_MIN_CH)


def _use_winograd5(kh, kw, strides, dilations, cin, cout):
    return (kh == 5 and kw == 5 and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1)
            and cin >= _W5_MIN_CH and cout >= _W5_MIN_CH)


# ---- conv public API -------------------------------------------------------------------------
# A thread's part of a kernel does at least this much work, in multiply-adds of a direct
# convolution (a pooling window's cell counts as _POOL_CELL_WORK): handing a part to another
# thread costs 20-40 us on a virtual machine (GIL hand-offs), so smaller parts are not worth it.
_PART_WORK = 1 << 22
_POOL_CELL_WORK = 32


def _split(part, n, work_per_item):
    """part(lo, hi) over parts of range(n) (items of ``work_per_item`` work each) run on the
    kernel threads; the parts' results summed (each part returns an array of its own, or None)."""
    results = threads.split(part, n, -(-_PART_WORK // max(1, work_per_item)))
    total = results[0]
    if total is not None:
        for r in results[1:]:
            total += r
    return total


def _check(ok, op, a, b):
    # The framework validates and reports properly; this only keeps BLAS and the loops from
    # reading out of bounds when a caller gets it wrong.
    if not ok:
        raise ValueError("%s: incompatible operands %s%s and %s%s" % (
            op, a.shape, a.dtype, b.shape, b.dtype))


def _use_shift(strides, cin):
    return strides[0] == 1 and strides[1] == 1 and cin >= _SHIFT_MIN_CIN


def _use_shift_filter(kh, kw, strides, cin):
    return (strides[0] == 1 and strides[1] == 1 and kh * kw >= _SHIFT_FILTER_MIN_TAPS
            and _SHIFT_FILTER_MIN_CIN <= cin <= _SHIFT_FILTER_MAX_CIN)


def _use_patch_t(cin):
    return cin <= _PATCH_T_MAX_CIN


def conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """tf.nn.conv2d (NHWC): x (N, H, W, Cin), w (KH, KW, Cin, Cout) -> (N, Ho, Wo, Cout).

    x and w: float32/float64 of one dtype; strides, dilations: (h, w) ints >= 1; padding 'SAME'
    or 'VALID'.  The caller checks that Cin matches and the dtypes agree.
    """
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w)
    N, H, W, C = x.shape
    kh, kw, _, Co = w.shape
    _check(w.shape[2] == C and w.dtype == x.dtype, "conv2d", x, w)
    Ho, Wo, pt, pl = _geometry(x.shape, kh, kw, strides, dilations, padding)
    out = np.empty((N, Ho, Wo, Co), x.dtype)
    if out.size == 0:
        return out
    if C == 0 or kh * kw == 0:
        out[:] = 0
        return out
    dh, dw = dilations
    if _use_winograd(kh, kw, strides, dilations, C, Co):
        _conv_winograd(x, winograd_filter_transform(w), pt, pl, out)
        return out
    if _use_winograd5(kh, kw, strides, dilations, C, Co):
        _conv_winograd5(x, w, pt, pl, out)
        return out
    if _use_shift(strides, C):
        # pad so that every tap of every output is inside the padded image
        pb = (Ho - 1) + (kh - 1) * dh + 1 - H - pt
        pr = (Wo - 1) + (kw - 1) * dw + 1 - W - pl
        xp = _pad_input(x, pt, max(pb, 0), pl, max(pr, 0))
        blocks = -(-_anchor_count(N, *xp.shape[1:3], Ho, Wo) // _SHIFT_ROWS)
        _split(lambda lo, hi: conv2d_shift_kernel(xp, w, dh, dw, out, lo, hi), blocks,
               _SHIFT_ROWS * Co * kh * kw * C)
        return out
    K = kh * kw * C
    sh, sw = strides
    w2 = w.reshape(K, Co)
    if _use_patch_t(C):
        rows = _rows_per_chunk_t(K, Wo)
        _split(lambda lo, hi: conv2d_im2col_t_kernel(x, w2, kh, kw, sh, sw, dh, dw, pt, pl, out,
                                                     rows, lo, hi), N * Ho, Wo * Co * K)
        return out
    rows = _rows_per_chunk(K, Wo)
    _split(lambda lo, hi: conv2d_im2col_kernel(x, w2, kh, kw, sh, sw, dh, dw, pt, pl, out, rows,
                                               lo, hi), N * Ho, Wo * Co * K)
    return out


def _conv_winograd(x, u, pt, pl, out):
    """out = stride-1 correlation of x with the 3x3 filter whose transform is u (pads pt, pl)."""
    N, Ho, Wo, Co = out.shape
    tiles = N * ((Ho + 1) // 2) * ((Wo + 1) // 2)
    _split(lambda lo, hi: conv2d_winograd_kernel(x, u, pt, pl, out, _WINO_TILES, lo, hi), tiles,
           4 * Co * 9 * x.shape[3])


def conv2d_backprop_input(input_shape, w, dy, strides=(1, 1), padding="VALID",
                          dilations=(1, 1)):
    """Gradient of conv2d with respect to its input (tf.nn.conv2d_backprop_input).

    input_shape: (N, H, W, Cin) of x; w: (KH, KW, Cin, Cout); dy: (N, Ho, Wo, Cout) where Ho, Wo
    are conv2d's output size for input_shape.  Float32/float64.  Returns dx of input_shape.
    """
    w = np.ascontiguousarray(w)
    dy = np.ascontiguousarray(dy)
    N, H, W, C = (int(s) for s in input_shape)
    kh, kw, _, Co = w.shape
    Ho, Wo, pt, pl = _geometry((N, H, W, C), kh, kw, strides, dilations, padding)
    _check(w.shape[2] == C and dy.shape == (N, Ho, Wo, Co) and w.dtype == dy.dtype,
           "conv2d_backprop_input", w, dy)
    dh, dw = dilations
    if N * H * W * C == 0 or dy.size == 0 or kh * kw == 0:
        return np.zeros((N, H, W, C), dy.dtype)
    dx = np.empty((N, H, W, C), dy.dtype)  # every path below writes all of it
    if _use_winograd(kh, kw, strides, dilations, C, Co):
        # stride-1 input gradient = correlation of dy with the flipped, transposed filter
        wt = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
        _conv_winograd(dy, winograd_filter_transform(wt), kh - 1 - pt, kw - 1 - pl, dx)
        return dx
    if _use_winograd5(kh, kw, strides, dilations, C, Co):
        wt = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
        _conv_winograd5(dy, wt, kh - 1 - pt, kw - 1 - pl, dx)
        return dx
    if _use_shift(strides, C):
        pb = max((Ho - 1) + (kh - 1) * dh + 1 - H - pt, 0)
        pr = max((Wo - 1) + (kw - 1) * dw + 1 - W - pl, 0)
        if pt == pb == pl == pr == 0:  # (VALID) no padding to cut off
            conv2d_backprop_input_shift_kernel(w, dy, dh, dw, dx)
            return dx
        dxp = np.empty((N, H + pt + pb, W + pl + pr, C), dy.dtype)
        conv2d_backprop_input_shift_kernel(w, dy, dh, dw, dxp)
        dx[:] = dxp[:, pt:pt + H, pl:pl + W]
        return dx
    K = kh * kw * C
    conv2d_backprop_input_im2col_kernel(w.reshape(K, Co), dy, kh, kw, strides[0], strides[1],
                                        dh, dw, pt, pl, dx, _rows_per_chunk(K, Wo))
    return dx


def conv2d_backprop_filter(x, filter_shape, dy, strides=(1, 1), padding="VALID",
                           dilations=(1, 1)):
    """Gradient of conv2d with respect to its filter (tf.nn.conv2d_backprop_filter).

    x: (N, H, W, Cin); filter_shape: (KH, KW, Cin, Cout); dy: (N, Ho, Wo, Cout) of conv2d's
    output size.  Float32/float64.  Returns dw of filter_shape.
    """
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    N, H, W, C = x.shape
    kh, kw, _, Co = (int(s) for s in filter_shape)
    Ho, Wo, pt, pl = _geometry(x.shape, kh, kw, strides, dilations, padding)
    _check(filter_shape[2] == C and dy.shape == (N, Ho, Wo, Co) and x.dtype == dy.dtype,
           "conv2d_backprop_filter", x, dy)
    dh, dw = dilations
    if kh * kw * C * Co == 0 or dy.size == 0 or x.size == 0:
        return np.zeros((kh, kw, C, Co), x.dtype)
    if _use_winograd(kh, kw, strides, dilations, C, Co):
        tiles = N * ((Ho + 1) // 2) * ((Wo + 1) // 2)
        du = _split(lambda lo, hi: conv2d_backprop_filter_winograd_kernel(
            x, dy, pt, pl, _WINO_TILES, lo, hi), tiles, 4 * Co * 9 * C)
        return winograd_filter_transform_adjoint(du)
    if _use_winograd5(kh, kw, strides, dilations, C, Co):
        return _filter_grad_winograd5(x, dy, pt, pl)
    # Each thread's part overwrites a gradient of its own; the parts are summed.
    if _use_shift_filter(kh, kw, strides, C):
        pb = max((Ho - 1) + (kh - 1) * dh + 1 - H - pt, 0)
        pr = max((Wo - 1) + (kw - 1) * dw + 1 - W - pl, 0)
        xp = _pad_input(x, pt, pb, pl, pr)
        dye = _dy_on_anchors(dy, xp.shape[1], xp.shape[2])

        def shift_part(lo, hi):
            dwt = np.empty((kh, kw, C, Co), x.dtype)
            conv2d_backprop_filter_shift_kernel(xp, dye, dh, dw, dwt, Ho, Wo, lo, hi)
            return dwt

        blocks = -(-_anchor_count(N, xp.shape[1], xp.shape[2], Ho, Wo) // _SHIFT_ROWS)
        return _split(shift_part, blocks, _SHIFT_ROWS * Co * kh * kw * C)
    K = kh * kw * C
    sh, sw = strides
    kernel, rows = conv2d_backprop_filter_im2col_kernel, _rows_per_chunk(K, Wo)
    if _use_patch_t(C):
        kernel, rows = conv2d_backprop_filter_im2col_t_kernel, _rows_per_chunk_t(K, Wo)

    def rows_part(lo, hi):
        dw2 = np.empty((K, Co), x.dtype)
        kernel(x, dy, kh, kw, sh, sw, dh, dw, pt, pl, dw2, rows, lo, hi)
        return dw2

    return _split(rows_part, N * Ho, Wo * Co * K).reshape(kh, kw, C, Co)


# ---- pooling ---------------------------------------------------------------------------------
def _pool_geometry(x_shape, ksize, strides, padding):
    _, H, W, _ = x_shape
    kh, kw = ksize
    sh, sw = strides
    Ho = conv_output_size(H, kh, sh, 1, padding)
    Wo = conv_output_size(W, kw, sw, 1, padding)
    pt, _ = _pads(H, kh, sh, 1, padding)
    pl, _ = _pads(W, kw, sw, 1, padding)
    return Ho, Wo, pt, pl


@_jit
def max_pool2d_kernel(x, kh, kw, sh, sw, pt, pl, out, n_lo, n_hi):
    """out (N, Ho, Wo, C) = max of x (N, H, W, C) over each window's in-image cells, for the
    images n_lo..n_hi; NaN wins.

    Every window must hold at least one in-image cell (true for 'SAME' and 'VALID').
    """
    _, H, W, C = x.shape
    _, Ho, Wo, _ = out.shape
    for n in range(n_lo, n_hi):
        for oh in range(Ho):
            h0 = oh * sh - pt
            for ow in range(Wo):
                w0 = ow * sw - pl
                dst = out[n, oh, ow]
                first = True
                for ih in range(max(h0, 0), min(h0 + kh, H)):
                    for iw in range(max(w0, 0), min(w0 + kw, W)):
                        src = x[n, ih, iw]
                        if first:
                            dst[:] = src
                            first = False
                        else:
                            for c in range(C):
                                v = src[c]
                                m = dst[c]
                                if (v > m) | ((v != v) & (m == m)):
                                    dst[c] = v


@_jit
def _window_first_max(x, n, h0, w0, kh, kw, best, pos):
    """pos[c] = flat index into x of the first maximum of channel c (the first NaN, if any) in the
    window at (h0, w0) of image n, i.e. ((n * H + ih) * W + iw) * C + c; best: (C,) scratch.

    The same choice as max_pool2d_kernel: the first cell in row-major window order whose value
    is strictly greater than every earlier one.
    """
    _, H, W, C = x.shape
    first = True
    for ih in range(max(h0, 0), min(h0 + kh, H)):
        for iw in range(max(w0, 0), min(w0 + kw, W)):
            src = x[n, ih, iw]
            at = ((n * H + ih) * W + iw) * C
            if first:
                for c in range(C):
                    best[c] = src[c]
                    pos[c] = at + c
                first = False
            else:
                for c in range(C):
                    v = src[c]
                    m = best[c]
                    if (v > m) | ((v != v) & (m == m)):
                        best[c] = v
                        pos[c] = at + c


@_jit
def max_pool2d_grad_kernel(x, dy, kh, kw, sh, sw, pt, pl, dx, n_lo, n_hi):
    """dx = the gradient of max_pool2d for dy (N, Ho, Wo, C), for the images n_lo..n_hi: each dy
    added at its window's first maximum in x, zero elsewhere."""
    _, Ho, Wo, C = dy.shape
    xf = dx.reshape(dx.size)
    best = np.empty(C, x.dtype)
    pos = np.empty(C, np.int64)
    for n in range(n_lo, n_hi):
        dx[n] = 0
        for oh in range(Ho):
            for ow in range(Wo):
                _window_first_max(x, n, oh * sh - pt, ow * sw - pl, kh, kw, best, pos)
                g = dy[n, oh, ow]
                for c in range(C):
                    xf[pos[c]] += g[c]


@_jit
def max_pool2d_grad_grad_kernel(x, ddx, kh, kw, sh, sw, pt, pl, out, n_lo, n_hi):
    """out (N, Ho, Wo, C) = ddx read at each window's first maximum in x, images n_lo..n_hi."""
    _, Ho, Wo, C = out.shape
    df = ddx.reshape(ddx.size)
    best = np.empty(C, x.dtype)
    pos = np.empty(C, np.int64)
    for n in range(n_lo, n_hi):
        for oh in range(Ho):
            for ow in range(Wo):
                _window_first_max(x, n, oh * sh - pt, ow * sw - pl, kh, kw, best, pos)
                dst = out[n, oh, ow]
                for c in range(C):
                    dst[c] = df[pos[c]]


@_jit
def avg_pool2d_kernel(x, kh, kw, sh, sw, pt, pl, out, n_lo, n_hi):
    """out = mean of x over each window's in-image cells (padding cells are not counted), for
    the images n_lo..n_hi."""
    _, H, W, C = x.shape
    _, Ho, Wo, _ = out.shape
    acc = np.empty(C, np.float64)
    for n in range(n_lo, n_hi):
        for oh in range(Ho):
            h0 = oh * sh - pt
            hs, he = max(h0, 0), min(h0 + kh, H)
            for ow in range(Wo):
                w0 = ow * sw - pl
                ws, we = max(w0, 0), min(w0 + kw, W)
                acc[:] = 0
                for ih in range(hs, he):
                    for iw in range(ws, we):
                        src = x[n, ih, iw]
                        for c in range(C):
                            acc[c] += src[c]
                count = max((he - hs) * (we - ws), 1)
                dst = out[n, oh, ow]
                for c in range(C):
                    dst[c] = acc[c] / count


@_jit
def avg_pool2d_grad_kernel(dy, kh, kw, sh, sw, pt, pl, dx, n_lo, n_hi):
    """dx = dy / count spread over each window's in-image cells, for the images n_lo..n_hi."""
    _, Ho, Wo, C = dy.shape
    _, H, W, _ = dx.shape
    for n in range(n_lo, n_hi):
        dx[n] = 0
        for oh in range(Ho):
            h0 = oh * sh - pt
            hs, he = max(h0, 0), min(h0 + kh, H)
            for ow in range(Wo):
                w0 = ow * sw - pl
                ws, we = max(w0, 0), min(w0 + kw, W)
                count = max((he - hs) * (we - ws), 1)
                g = dy[n, oh, ow]
                for ih in range(hs, he):
                    for iw in range(ws, we):
                        dst = dx[n, ih, iw]
                        for c in range(C):
                            dst[c] += g[c] / count


def _per_image(kernel, args, out, ksize):
    """kernel(*args, out, n_lo, n_hi) over the images of out (N, ...), split over the threads."""
    if out.size:
        _split(lambda lo, hi: kernel(*args, out, lo, hi), out.shape[0],
               out.size // out.shape[0] * ksize[0] * ksize[1] * _POOL_CELL_WORK)
    return out


def max_pool2d(x, ksize, strides, padding):
    """tf.nn.max_pool2d (NHWC): x (N, H, W, C) float/int; ksize, strides (h, w) ints >= 1.

    Padding cells never win.  Returns (N, Ho, Wo, C) of x's dtype.
    """
    x = np.ascontiguousarray(x)
    Ho, Wo, pt, pl = _pool_geometry(x.shape, ksize, strides, padding)
    out = np.empty((x.shape[0], Ho, Wo, x.shape[3]), x.dtype)
    return _per_image(max_pool2d_kernel, (x, *ksize, *strides, pt, pl), out, ksize)


def max_pool2d_grad(x, y, dy, ksize, strides, padding):
    """Gradient of max_pool2d: each dy goes to the first maximum of its window in x.

    x: the pooled input (N, H, W, C); y: max_pool2d's output (accepted for TF's signature, not
    needed: the maxima are found again in x); dy: (N, Ho, Wo, C).  Returns dx shaped like x.
    """
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    Ho, Wo, pt, pl = _pool_geometry(x.shape, ksize, strides, padding)
    _check(dy.shape == (x.shape[0], Ho, Wo, x.shape[3]), "max_pool2d_grad", x, dy)
    dx = np.empty(x.shape, dy.dtype)
    if dy.size == 0:
        dx[:] = 0
        return dx
    return _per_image(max_pool2d_grad_kernel, (x, dy, *ksize, *strides, pt, pl), dx, ksize)


def max_pool2d_grad_grad(x, y, ddx, ksize, strides, padding):
    """Gradient of max_pool2d_grad with respect to dy: ddx read at each window's first maximum.

    x: (N, H, W, C); y: unused (TF's signature); ddx: shaped like x.  Returns (N, Ho, Wo, C).
    """
    x = np.ascontiguousarray(x)
    ddx = np.ascontiguousarray(ddx)
    _check(ddx.shape == x.shape, "max_pool2d_grad_grad", x, ddx)
    Ho, Wo, pt, pl = _pool_geometry(x.shape, ksize, strides, padding)
    out = np.empty((x.shape[0], Ho, Wo, x.shape[3]), ddx.dtype)
    return _per_image(max_pool2d_grad_grad_kernel, (x, ddx, *ksize, *strides, pt, pl), out, ksize)


def avg_pool2d(x, ksize, strides, padding):
    """tf.nn.avg_pool2d (NHWC), float: each window's mean over its in-image cells only."""
    x = np.ascontiguousarray(x)
    Ho, Wo, pt, pl = _pool_geometry(x.shape, ksize, strides, padding)
    out = np.empty((x.shape[0], Ho, Wo, x.shape[3]), x.dtype)
    return _per_image(avg_pool2d_kernel, (x, *ksize, *strides, pt, pl), out, ksize)


def avg_pool2d_grad(input_shape, dy, ksize, strides, padding):
    """Gradient of avg_pool2d: dy (N, Ho, Wo, C) -> dx of input_shape (N, H, W, C)."""
    dy = np.ascontiguousarray(dy)
    shape = tuple(int(s) for s in input_shape)
    Ho, Wo, pt, pl = _pool_geometry(shape, ksize, strides, padding)
    _check(dy.shape == (shape[0], Ho, Wo, shape[3]), "avg_pool2d_grad", dy, dy)
    dx = np.empty(shape, dy.dtype)
    if dy.size == 0:
        dx[:] = 0
        return dx
    return _per_image(avg_pool2d_grad_kernel, (dy, *ksize, *strides, pt, pl), dx, ksize)


# ---- softmax and cross-entropy (over the last axis) -----------------------------------------
@_jit
def softmax_rows_kernel(x, out, log):
    """Row-wise softmax (or log-softmax if ``log``) of 2-D x into out; returns each row's max
    ``shift`` and the log of the sum of exp(x - shift) ``log_sum`` (float64), whose sum is the
    row's log-sum-exp.  Stable: the row max is subtracted before exponentiating.  They stay
    apart because their sum loses log_sum next to a huge shift (logits of 1e20)."""
    R, C = x.shape
    shift = np.empty(R, np.float64)
    log_sum = np.empty(R, np.float64)
    for r in range(R):
        row = x[r]
        o = out[r]
        if C == 0:
            shift[r] = -np.inf
            log_sum[r] = 0.0
            continue
        m = row[0]
        for c in range(1, C):
            v = row[c]
            if (v > m) | (v != v):
                m = v
        s = 0.0
        for c in range(C):
            e = np.exp(row[c] - m)
            o[c] = e
            s += e
        ls = math.log(s)
        if log:
            for c in range(C):
                o[c] = row[c] - m - ls
        else:
            inv = 1.0 / s
            for c in range(C):
                o[c] = o[c] * inv
        shift[r] = m
        log_sum[r] = ls
    return shift, log_sum


@_jit
def sparse_xent_kernel(x, labels, shift, log_sum):
    """loss[r] = log_sum[r] - (x[r, labels[r]] - shift[r]) (log-sum-exp minus the label's
    logit) in x's dtype; NaN for a label outside [0, C) (never read out of bounds; TF's GPU
    kernel gives NaN there too)."""
    R, C = x.shape
    loss = np.empty(R, x.dtype)
    for r in range(R):
        lab = labels[r]
        loss[r] = log_sum[r] - (x[r, lab] - shift[r]) if 0 <= lab < C else np.nan
    return loss


@_jit
def dense_xent_kernel(x, labels, shift, log_sum):
    """loss[r] = sum_c labels[r, c] * (log_sum[r] - (x[r, c] - shift[r])), i.e.
    -sum(labels * log_softmax)."""
    R, C = x.shape
    loss = np.empty(R, x.dtype)
    for r in range(R):
        s = 0.0
        for c in range(C):
            lab = labels[r, c]
            if lab != 0:  # 0 * (inf) would be NaN; TF's label-0 terms contribute nothing
                s += lab * (log_sum[r] - (x[r, c] - shift[r]))
        loss[r] = s
    return loss


@_jit
def softmax_grad_kernel(y, dy, log):
    """Gradient through softmax rows: y (softmax or, if ``log``, log-softmax output), dy 2-D."""
    R, C = y.shape
    dx = np.empty_like(dy)
    for r in range(R):
        s = 0.0
        if log:
            for c in range(C):
                s += dy[r, c]
            for c in range(C):
                dx[r, c] = dy[r, c] - np.exp(y[r, c]) * s
        else:
            for c in range(C):
                s += dy[r, c] * y[r, c]
            for c in range(C):
                dx[r, c] = y[r, c] * (dy[r, c] - s)
    return dx


def _rows(x):
    x = np.ascontiguousarray(x)
    return x.reshape(-1, x.shape[-1]) if x.size else x.reshape(0, x.shape[-1])


def _softmax(x, log):
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    if x.size:
        softmax_rows_kernel(_rows(x), out.reshape(-1, x.shape[-1]), log)
    return out


def softmax(x):
    """tf.nn.softmax over the last axis; x float32/float64 of rank >= 1."""
    return _softmax(x, False)


def log_softmax(x):
    """tf.nn.log_softmax over the last axis; x float32/float64 of rank >= 1."""
    return _softmax(x, True)


def softmax_grad(y, dy):
    """dx = y * (dy - sum(dy * y, -1)) for y = softmax(x); shapes equal, rank >= 1."""
    y = np.ascontiguousarray(y)
    dy = np.ascontiguousarray(dy)
    _check(dy.shape == y.shape, "softmax_grad", y, dy)
    if y.size == 0:
        return np.zeros_like(dy)
    return softmax_grad_kernel(_rows(y), _rows(dy), False).reshape(y.shape)


def log_softmax_grad(y, dy):
    """dx = dy - exp(y) * sum(dy, -1) for y = log_softmax(x); shapes equal, rank >= 1."""
    y = np.ascontiguousarray(y)
    dy = np.ascontiguousarray(dy)
    _check(dy.shape == y.shape, "log_softmax_grad", y, dy)
    if y.size == 0:
        return np.zeros_like(dy)
    return softmax_grad_kernel(_rows(y), _rows(dy), True).reshape(y.shape)


def sparse_softmax_cross_entropy(logits, labels):
    """tf.nn.sparse_softmax_cross_entropy_with_logits -> (loss, probs).

    logits: (N, C) float32/float64 with C >= 1; labels: (N,) int32/int64, each in [0, C)
    (validated by the caller).  loss (N,) = logsumexp(logits) - logits[label];
    probs = softmax(logits) (what the gradient, probs - onehot(labels), needs).
    """
    logits = np.ascontiguousarray(logits)
    labels = np.ascontiguousarray(labels)
    probs = np.empty_like(logits)
    if logits.shape[0] == 0:
        return np.empty(0, logits.dtype), probs
    _check(labels.shape == logits.shape[:1], "sparse_softmax_cross_entropy", logits, labels)
    shift, log_sum = softmax_rows_kernel(logits, probs, False)
    return sparse_xent_kernel(logits, labels, shift, log_sum), probs


def softmax_cross_entropy(logits, labels):
    """tf.nn.softmax_cross_entropy_with_logits (last axis) -> (loss, probs).

    logits: (N, C) float; labels: (N, C) of logits' dtype (a distribution per row, not checked).
    loss (N,) = -sum(labels * log_softmax(logits)); probs = softmax(logits).
    """
    logits = np.ascontiguousarray(logits)
    labels = np.ascontiguousarray(labels, dtype=logits.dtype)
    probs = np.empty_like(logits)
    if logits.shape[0] == 0:
        return np.empty(0, logits.dtype), probs
    _check(labels.shape == logits.shape, "softmax_cross_entropy", logits, labels)
    shift, log_sum = softmax_rows_kernel(logits, probs, False)
    return dense_xent_kernel(logits, labels, shift, log_sum), probs
