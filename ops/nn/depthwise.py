"""Depthwise 2-D convolution (tf.nn.depthwise_conv2d) and its two gradients.

Layout is NHWC; filters are [KH, KW, C, M] (M: the depth multiplier).  Input channel c convolved
with filter slice [:, :, c, m] gives output channel c * M + m.  Each channel is its own small
convolution, so there is no matrix product to hand to BLAS: the kernels are direct loops, split
over the kernel threads by image (the filter gradient sums the images' parts).

Float kernels only (float32/float64).  Callers validate shapes, dtypes, strides >= 1,
dilations >= 1 and that the output is non-negative in size.
"""
import numpy as np

from ops.kernel_cache import njit
from ops.nn.parts import check_operands, split_summed
from ops.nn.windows import window_geometry

# nogil: the kernels split their work over threads (ops.nn.parts)
_jit = njit(error_model="numpy", nogil=True)


@_jit
def depthwise_forward_kernel(x, w, sh, sw, dh, dw, pt, pl, out, n_lo, n_hi):
    """out[n, oh, ow, c*M + m] = sum over taps of x[n, ih, iw, c] * w[i, j, c, m], for the
    images n_lo..n_hi (taps falling in the padding add nothing)."""
    _, H, W, C = x.shape
    kh, kw, _, M = w.shape
    _, Ho, Wo, _ = out.shape
    for n in range(n_lo, n_hi):
        for oh in range(Ho):
            for ow in range(Wo):
                dst = out[n, oh, ow]
                dst[:] = 0
                for i in range(kh):
                    ih = oh * sh - pt + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    for j in range(kw):
                        iw = ow * sw - pl + j * dw
                        if iw < 0 or iw >= W:
                            continue
                        src = x[n, ih, iw]
                        tap = w[i, j]
                        for c in range(C):
                            v = src[c]
                            for m in range(M):
                                dst[c * M + m] += v * tap[c, m]


@_jit
def depthwise_backprop_input_kernel(w, dy, sh, sw, dh, dw, pt, pl, dx, n_lo, n_hi):
    """dx (N, H, W, C) of the images n_lo..n_hi: every output's gradient spread back over the
    input cells its window read."""
    _, H, W, C = dx.shape
    kh, kw, _, M = w.shape
    _, Ho, Wo, _ = dy.shape
    for n in range(n_lo, n_hi):
        dx[n] = 0
        for oh in range(Ho):
            for ow in range(Wo):
                g = dy[n, oh, ow]
                for i in range(kh):
                    ih = oh * sh - pt + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    for j in range(kw):
                        iw = ow * sw - pl + j * dw
                        if iw < 0 or iw >= W:
                            continue
                        dst = dx[n, ih, iw]
                        tap = w[i, j]
                        for c in range(C):
                            acc = dst[c]
                            for m in range(M):
                                acc += g[c * M + m] * tap[c, m]
                            dst[c] = acc


@_jit
def depthwise_backprop_filter_kernel(x, dy, kh, kw, sh, sw, dh, dw, pt, pl, n_lo, n_hi):
    """The images n_lo..n_hi's part of dw (KH, KW, C, M): sum of x * dy over the windows."""
    _, H, W, C = x.shape
    _, Ho, Wo, CM = dy.shape
    M = CM // C
    dw_part = np.zeros((kh, kw, C, M), x.dtype)
    for n in range(n_lo, n_hi):
        for oh in range(Ho):
            for ow in range(Wo):
                g = dy[n, oh, ow]
                for i in range(kh):
                    ih = oh * sh - pt + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    for j in range(kw):
                        iw = ow * sw - pl + j * dw
                        if iw < 0 or iw >= W:
                            continue
                        src = x[n, ih, iw]
                        dst = dw_part[i, j]
                        for c in range(C):
                            v = src[c]
                            for m in range(M):
                                dst[c, m] += v * g[c * M + m]
    return dw_part


def _work_per_image(out_shape, kh, kw):
    return max(1, out_shape[1] * out_shape[2] * out_shape[3] * kh * kw)


def depthwise_conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """tf.nn.depthwise_conv2d (NHWC): x (N, H, W, C), w (KH, KW, C, M) -> (N, Ho, Wo, C * M)."""
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w)
    N, H, W, C = x.shape
    kh, kw, _, M = w.shape
    check_operands(w.shape[2] == C and w.dtype == x.dtype, "depthwise_conv2d", x, w)
    Ho, Wo, pt, pl = window_geometry(x.shape, kh, kw, strides, dilations, padding)
    out = np.empty((N, Ho, Wo, C * M), x.dtype)  # the kernel writes all of it
    if out.size:
        split_summed(lambda lo, hi: depthwise_forward_kernel(
            x, w, *strides, *dilations, pt, pl, out, lo, hi), N, _work_per_image(out.shape, kh, kw))
    return out


def depthwise_conv2d_backprop_input(input_shape, w, dy, strides=(1, 1), padding="VALID",
                                    dilations=(1, 1)):
    """Gradient of depthwise_conv2d with respect to its input: dx of input_shape (N, H, W, C)."""
    w = np.ascontiguousarray(w)
    dy = np.ascontiguousarray(dy)
    N, H, W, C = (int(s) for s in input_shape)
    kh, kw, _, M = w.shape
    Ho, Wo, pt, pl = window_geometry((N, H, W, C), kh, kw, strides, dilations, padding)
    check_operands(w.shape[2] == C and dy.shape == (N, Ho, Wo, C * M) and w.dtype == dy.dtype,
                   "depthwise_conv2d_backprop_input", w, dy)
    dx = np.zeros((N, H, W, C), dy.dtype)
    if dx.size and dy.size:
        split_summed(lambda lo, hi: depthwise_backprop_input_kernel(
            w, dy, *strides, *dilations, pt, pl, dx, lo, hi), N,
            _work_per_image(dy.shape, kh, kw))
    return dx


def depthwise_conv2d_backprop_filter(x, filter_shape, dy, strides=(1, 1), padding="VALID",
                                     dilations=(1, 1)):
    """Gradient of depthwise_conv2d with respect to its filter: dw of filter_shape
    (KH, KW, C, M)."""
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    N, H, W, C = x.shape
    kh, kw, _, M = (int(s) for s in filter_shape)
    Ho, Wo, pt, pl = window_geometry(x.shape, kh, kw, strides, dilations, padding)
    check_operands(filter_shape[2] == C and dy.shape == (N, Ho, Wo, C * M)
                   and x.dtype == dy.dtype, "depthwise_conv2d_backprop_filter", x, dy)
    if x.size == 0 or dy.size == 0 or kh * kw * C * M == 0:
        return np.zeros((kh, kw, C, M), x.dtype)
    return split_summed(lambda lo, hi: depthwise_backprop_filter_kernel(
        x, dy, kh, kw, *strides, *dilations, pt, pl, lo, hi), N,
        _work_per_image(dy.shape, kh, kw))
