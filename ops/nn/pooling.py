"""2-D max and average pooling (tf.nn.max_pool2d, tf.nn.avg_pool2d) and their gradients.

Layout is NHWC.  Each kernel sweeps the windows of a range of images, so a call is split over
the kernel threads by image.  Padding cells never take part: a max-pooling window's maximum is
over its in-image cells, and an average divides by their count.
"""
import numpy as np

from ops.kernel_cache import njit
from ops.nn.parts import check_operands, split_summed
from ops.nn.windows import window_geometry

# nogil: the kernels split their work over threads (ops.nn.parts)
_jit = njit(error_model="numpy", nogil=True)

# A window's cell costs about this many of ops.nn.parts' units of work (multiply-adds of a
# direct convolution).
_POOL_CELL_WORK = 32


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
                            # (a loop: Numba's array slice assignment costs a second to compile)
                            for c in range(C):
                                dst[c] = src[c]
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
        split_summed(lambda lo, hi: kernel(*args, out, lo, hi), out.shape[0],
                     out.size // out.shape[0] * ksize[0] * ksize[1] * _POOL_CELL_WORK)
    return out


def max_pool2d(x, ksize, strides, padding):
    """tf.nn.max_pool2d (NHWC): x (N, H, W, C) float/int; ksize, strides (h, w) ints >= 1.

    Padding cells never win.  Returns (N, Ho, Wo, C) of x's dtype.
    """
    x = np.ascontiguousarray(x)
    Ho, Wo, pt, pl = window_geometry(x.shape, *ksize, strides, (1, 1), padding)
    out = np.empty((x.shape[0], Ho, Wo, x.shape[3]), x.dtype)
    return _per_image(max_pool2d_kernel, (x, *ksize, *strides, pt, pl), out, ksize)


def max_pool2d_grad(x, y, dy, ksize, strides, padding):
    """Gradient of max_pool2d: each dy goes to the first maximum of its window in x.

    x: the pooled input (N, H, W, C); y: max_pool2d's output (accepted for TF's signature, not
    needed: the maxima are found again in x); dy: (N, Ho, Wo, C).  Returns dx shaped like x.
    """
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    Ho, Wo, pt, pl = window_geometry(x.shape, *ksize, strides, (1, 1), padding)
    check_operands(dy.shape == (x.shape[0], Ho, Wo, x.shape[3]), "max_pool2d_grad", x, dy)
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
    check_operands(ddx.shape == x.shape, "max_pool2d_grad_grad", x, ddx)
    Ho, Wo, pt, pl = window_geometry(x.shape, *ksize, strides, (1, 1), padding)
    out = np.empty((x.shape[0], Ho, Wo, x.shape[3]), ddx.dtype)
    return _per_image(max_pool2d_grad_grad_kernel, (x, ddx, *ksize, *strides, pt, pl), out, ksize)


def avg_pool2d(x, ksize, strides, padding):
    """tf.nn.avg_pool2d (NHWC), float: each window's mean over its in-image cells only."""
    x = np.ascontiguousarray(x)
    Ho, Wo, pt, pl = window_geometry(x.shape, *ksize, strides, (1, 1), padding)
    out = np.empty((x.shape[0], Ho, Wo, x.shape[3]), x.dtype)
    return _per_image(avg_pool2d_kernel, (x, *ksize, *strides, pt, pl), out, ksize)


def avg_pool2d_grad(input_shape, dy, ksize, strides, padding):
    """Gradient of avg_pool2d: dy (N, Ho, Wo, C) -> dx of input_shape (N, H, W, C)."""
    dy = np.ascontiguousarray(dy)
    shape = tuple(int(s) for s in input_shape)
    Ho, Wo, pt, pl = window_geometry(shape, *ksize, strides, (1, 1), padding)
    check_operands(dy.shape == (shape[0], Ho, Wo, shape[3]), "avg_pool2d_grad", dy, dy)
    dx = np.empty(shape, dy.dtype)
    if dy.size == 0:
        dx[:] = 0
        return dx
    return _per_image(avg_pool2d_grad_kernel, (dy, *ksize, *strides, pt, pl), dx, ksize)
