"""Convolution through a patch matrix (im2col).

``ops.nn.conv`` uses it for every call that neither a Winograd form nor the shift form takes:
strides > 1, and stride-1 convolutions with few input channels (see ``ops.nn.conv``).

* im2col: the patch matrix of a block of output rows (kept cache-sized) times the filter
  reshaped to (KH*KW*Cin, Cout), and the transposes of that for the gradients.
* transposed im2col, for few input channels (a network's first layer): the patch matrix of a
  block of output rows built transposed, one row per patch element and contiguous over the
  outputs, so that it is filled by long strided copies rather than runs of Cin values; then one
  GEMM per block.  Used for the forward pass and the filter gradient.
"""
import numpy as np

from ops.kernel_cache import njit
from ops.linalg import product_gemm
from ops.nn.parts import split_summed
from ops.nn.rows import add_run, copy_run, zero_run

# nogil: the kernels split their work over threads (ops.nn.parts)
_jit = njit(error_model="numpy", nogil=True)

# Patch-matrix chunk: about this many elements (1M floats = 4 MiB for float32): GEMMs big enough
# that BLAS's threads pay off, a block small enough to stay in the last-level cache.
_CHUNK_ELEMS = 1 << 20
# Up to this many input channels the forward pass and the filter gradient build the patch matrix
# transposed (one row per patch element, contiguous over outputs): in the usual layout each
# (output, tap) copies a run of only Cin values, too short to copy fast.
_PATCH_T_MAX_CIN = 16
# Its chunks: about this many elements (64 KiB for float32): the block stays in L1/L2 (bigger
# ones, whose GEMMs BLAS would spread over threads, measured slower).
_CHUNK_T_ELEMS = 1 << 14


# ---- im2col ------------------------------------------------------------------------------------
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
                            copy_run(cf, seg, xf, ((n * H + ih) * W + iw) * C, C)
                    elif C == 1:
                        cf[seg] = 0
                    else:
                        zero_run(cf, seg, C)


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
                            add_run(xf, ((n * H + ih) * W + iw) * C, cf, base + (i * kw + j) * C,
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
        product_gemm(False, False, m, Co, K, 1.0, colf, K, wf, Co, 0.0, of[r0 * Wo * Co:], Co)


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
        product_gemm(False, True, m, K, Co, 1.0, dyf[r0 * Wo * Co:], Co, wf, Co, 0.0, dcf, K)
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
        product_gemm(True, False, K, Co, m, 1.0, colf, K, dyf[r0 * Wo * Co:], Co, 1.0, dwf, Co)


# ---- transposed im2col (few input channels) ----------------------------------------------------
@_jit
def _gather_run(dst, do, src, so, step, n):
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
                        zero_run(cf, d, Wo)
                        continue
                    zero_run(cf, d, lo)
                    _gather_run(cf, d + lo, xf, ((n * H + ih) * W + lo * sw - off) * C + c, sw * C,
                                hi - lo)
                    zero_run(cf, d + hi, Wo - hi)


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
        product_gemm(True, False, (r1 - r0) * Wo, Co, K, 1.0, ct, ld, wf, Co, 0.0,
                     of[r0 * Wo * Co:], Co)


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
        product_gemm(False, False, K, Co, (r1 - r0) * Wo, 1.0, ct, ld, dyf[r0 * Wo * Co:], Co,
                     0.0 if r0 == row_lo else 1.0, dwf, Co)


# ---- when the form applies, and its entry points -------------------------------------------------
def _use_patch_t(cin):
    return cin <= _PATCH_T_MAX_CIN


def forward(x, w, strides, dilations, pt, pl, out):
    """out (N, Ho, Wo, Co) = the correlation of x (N, H, W, C) with w (kh, kw, C, Co), with
    top and left padding pt, pl, through a (transposed, for few channels) patch matrix."""
    N, Ho, Wo, Co = out.shape
    kh, kw, C, _ = w.shape
    K = kh * kw * C
    sh, sw = strides
    dh, dw = dilations
    w2 = w.reshape(K, Co)
    if _use_patch_t(C):
        rows = _rows_per_chunk_t(K, Wo)
        split_summed(lambda lo, hi: conv2d_im2col_t_kernel(x, w2, kh, kw, sh, sw, dh, dw, pt, pl,
                                                           out, rows, lo, hi), N * Ho, Wo * Co * K)
        return
    rows = _rows_per_chunk(K, Wo)
    split_summed(lambda lo, hi: conv2d_im2col_kernel(x, w2, kh, kw, sh, sw, dh, dw, pt, pl, out,
                                                     rows, lo, hi), N * Ho, Wo * Co * K)


def backprop_input(w, dy, strides, dilations, pt, pl, dx):
    """dx (N, H, W, C) (overwritten) = forward's input gradient for dy (N, Ho, Wo, Co)."""
    kh, kw, C, Co = w.shape
    K = kh * kw * C
    conv2d_backprop_input_im2col_kernel(w.reshape(K, Co), dy, kh, kw, strides[0], strides[1],
                                        dilations[0], dilations[1], pt, pl, dx,
                                        _rows_per_chunk(K, dy.shape[2]))


def backprop_filter(x, dy, kh, kw, strides, dilations, pt, pl):
    """The filter gradient (kh, kw, C, Co) of forward for dy (N, Ho, Wo, Co)."""
    N, Ho, Wo, Co = dy.shape
    C = x.shape[3]
    K = kh * kw * C
    sh, sw = strides
    dh, dw = dilations
    kernel, rows = conv2d_backprop_filter_im2col_kernel, _rows_per_chunk(K, Wo)
    if _use_patch_t(C):
        kernel, rows = conv2d_backprop_filter_im2col_t_kernel, _rows_per_chunk_t(K, Wo)

    # each thread's part overwrites a gradient of its own; the parts are summed
    def rows_part(lo, hi):
        dw2 = np.empty((K, Co), x.dtype)
        kernel(x, dy, kh, kw, sh, sw, dh, dw, pt, pl, dw2, rows, lo, hi)
        return dw2

    return split_summed(rows_part, N * Ho, Wo * Co * K).reshape(kh, kw, C, Co)
