"""2-D max and average pooling (tf.nn.max_pool2d, tf.nn.avg_pool2d, NHWC) and their gradients
on the GPU.

As on the CPU (``ops.nn.pooling``), padding cells never take part: a max-pooling window's
maximum is over its in-image cells (the first maximum in row-major window order wins; the first
NaN beats any number), and an average divides by their count.

One thread per output element, consecutive threads on consecutive channels (coalesced in
NHWC).  The gradients are gathers rather than scatters: one thread per input element walks the
windows that contain it in the order the CPU kernels visit them and adds what each sends it,
so no two threads write one element (no atomics) and the sums equal the CPU's.
"""
from numba import cuda, float64

from ops.cuda import launch
from ops.nn.windows import window_geometry


@launch.jit(device=True, cache=True)
def window_first_max(x, n, h0, w0, c, kh, kw):
    """(row, column) in x (N, H, W, C) of the first maximum of channel c over the in-image
    cells of the window whose top-left corner is (h0, w0) in image n."""
    _, height, width, _ = x.shape
    h_lo = h0 if h0 > 0 else 0
    w_lo = w0 if w0 > 0 else 0
    h_hi = h0 + kh if h0 + kh < height else height
    w_hi = w0 + kw if w0 + kw < width else width
    best = x[n, h_lo, w_lo, c]
    best_h = h_lo
    best_w = w_lo
    for ih in range(h_lo, h_hi):
        for iw in range(w_lo, w_hi):
            v = x[n, ih, iw, c]
            if v > best or (v != v and best == best):
                best = v
                best_h = ih
                best_w = iw
    return best_h, best_w


@launch.jit(device=True, cache=True)
def unravel_nhwc(i, shape):
    """(n, h, w, c) of flat index i into a C-ordered array of NHWC ``shape``."""
    c = i % shape[3]
    rest = i // shape[3]
    w = rest % shape[2]
    rest //= shape[2]
    return rest // shape[1], rest % shape[1], w, c


@launch.jit(device=True, cache=True)
def covering_windows(h, k, stride, pad, out_size):
    """The range (first, stop) of the windows along one axis (size ``k``, every ``stride``,
    starting ``pad`` before the input) that contain input position h."""
    # window o covers o*stride - pad .. o*stride - pad + k - 1
    first = (h + pad - k + stride) // stride if h + pad - k + 1 > 0 else 0
    stop = (h + pad) // stride + 1
    return first, (stop if stop < out_size else out_size)


@launch.jit(cache=True)
def max_pool2d_kernel(x, out, kh, kw, sh, sw, pt, pl):
    """out (N, Ho, Wo, C) = the maximum of each window's in-image cells of x (N, H, W, C)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        n, oh, ow, c = unravel_nhwc(i, out.shape)
        ih, iw = window_first_max(x, n, oh * sh - pt, ow * sw - pl, c, kh, kw)
        out[n, oh, ow, c] = x[n, ih, iw, c]


@launch.jit(cache=True)
def max_pool2d_grad_kernel(x, dy, dx, kh, kw, sh, sw, pt, pl):
    """dx (shaped like x) = the sum of the dy (N, Ho, Wo, C) of the windows whose first maximum
    is at each element."""
    _, out_height, out_width, _ = dy.shape
    total = cuda.local.array(1, dx.dtype)   # a sum in dx's dtype, as the CPU's
    for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        n, h, w, c = unravel_nhwc(i, dx.shape)
        oh_lo, oh_hi = covering_windows(h, kh, sh, pt, out_height)
        ow_lo, ow_hi = covering_windows(w, kw, sw, pl, out_width)
        total[0] = 0
        for oh in range(oh_lo, oh_hi):
            for ow in range(ow_lo, ow_hi):
                mh, mw = window_first_max(x, n, oh * sh - pt, ow * sw - pl, c, kh, kw)
                if mh == h and mw == w:
                    total[0] += dy[n, oh, ow, c]
        dx[n, h, w, c] = total[0]


@launch.jit(cache=True)
def max_pool2d_grad_grad_kernel(x, ddx, out, kh, kw, sh, sw, pt, pl):
    """out (N, Ho, Wo, C) = ddx (shaped like x) read at each window's first maximum in x."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        n, oh, ow, c = unravel_nhwc(i, out.shape)
        ih, iw = window_first_max(x, n, oh * sh - pt, ow * sw - pl, c, kh, kw)
        out[n, oh, ow, c] = ddx[n, ih, iw, c]


@launch.jit(device=True, cache=True)
def in_image_extent(o, k, stride, pad, size):
    """How many cells of window o along one axis lie inside the input."""
    lo = o * stride - pad
    hi = lo + k
    return (hi if hi < size else size) - (lo if lo > 0 else 0)


@launch.jit(device=True, cache=True)
def in_image_count(oh, ow, kh, kw, sh, sw, pt, pl, height, width):
    """How many cells of window (oh, ow) lie inside the (height, width) input, at least 1."""
    count = (in_image_extent(oh, kh, sh, pt, height)
             * in_image_extent(ow, kw, sw, pl, width))
    return count if count > 1 else 1


@launch.jit(cache=True)
def avg_pool2d_kernel(x, out, kh, kw, sh, sw, pt, pl):
    """out (N, Ho, Wo, C) = the mean of each window's in-image cells of x (N, H, W, C)."""
    _, height, width, _ = x.shape
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        n, oh, ow, c = unravel_nhwc(i, out.shape)
        h0 = oh * sh - pt
        w0 = ow * sw - pl
        h_lo = h0 if h0 > 0 else 0
        w_lo = w0 if w0 > 0 else 0
        h_hi = h0 + kh if h0 + kh < height else height
        w_hi = w0 + kw if w0 + kw < width else width
        # float64 as on the CPU (and typed so, because the simulator would keep float32)
        total = float64(0)
        for ih in range(h_lo, h_hi):
            for iw in range(w_lo, w_hi):
                total += x[n, ih, iw, c]
        out[n, oh, ow, c] = total / in_image_count(oh, ow, kh, kw, sh, sw, pt, pl, height,
                                                   width)


@launch.jit(cache=True)
def avg_pool2d_grad_kernel(dy, dx, kh, kw, sh, sw, pt, pl):
    """dx (N, H, W, C) = the sum over the windows containing each element of their dy
    (N, Ho, Wo, C) divided by their in-image cell count."""
    _, height, width, _ = dx.shape
    _, out_height, out_width, _ = dy.shape
    total = cuda.local.array(1, dx.dtype)   # a sum in dx's dtype, as the CPU's
    for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        n, h, w, c = unravel_nhwc(i, dx.shape)
        oh_lo, oh_hi = covering_windows(h, kh, sh, pt, out_height)
        ow_lo, ow_hi = covering_windows(w, kw, sw, pl, out_width)
        total[0] = 0
        for oh in range(oh_lo, oh_hi):
            for ow in range(ow_lo, ow_hi):
                # divided in float64, as on the CPU
                total[0] += dy[n, oh, ow, c] / float64(in_image_count(
                    oh, ow, kh, kw, sh, sw, pt, pl, height, width))
        dx[n, h, w, c] = total[0]


def _launch(kernel, size, *args):
    if size:
        kernel[launch.blocks_for(size), launch.THREADS](*args)


def _pooled(x_shape, ksize, strides, padding):
    out_height, out_width, pt, pl = window_geometry(x_shape, *ksize, strides, (1, 1), padding)
    return (x_shape[0], out_height, out_width, x_shape[3]), (*ksize, *strides, pt, pl)


def max_pool2d(x, ksize, strides, padding):
    """tf.nn.max_pool2d (NHWC) of a device array x (N, H, W, C); ksize, strides: (h, w) ints
    >= 1; padding 'SAME' or 'VALID'.  Returns (N, Ho, Wo, C) of x's dtype."""
    shape, window = _pooled(tuple(x.shape), ksize, strides, padding)
    out = launch.empty(shape, x.dtype)
    _launch(max_pool2d_kernel, out.size, x, out, *window)
    return out


def max_pool2d_grad(x, y, dy, ksize, strides, padding):
    """The gradient of max_pool2d: each dy (N, Ho, Wo, C) goes to the first maximum of its
    window in x (N, H, W, C).  y, max_pool2d's output, is TF's argument, not needed (the
    maxima are found again in x).  Returns dx shaped like x."""
    _, window = _pooled(tuple(x.shape), ksize, strides, padding)
    dx = launch.empty(tuple(x.shape), dy.dtype)
    _launch(max_pool2d_grad_kernel, dx.size, x, dy, dx, *window)
    return dx


def max_pool2d_grad_grad(x, y, ddx, ksize, strides, padding):
    """The gradient of max_pool2d_grad with respect to its dy: ddx (shaped like x) read at each
    window's first maximum in x.  y is unused (TF's signature).  Returns (N, Ho, Wo, C)."""
    shape, window = _pooled(tuple(x.shape), ksize, strides, padding)
    out = launch.empty(shape, ddx.dtype)
    _launch(max_pool2d_grad_grad_kernel, out.size, x, ddx, out, *window)
    return out


def avg_pool2d(x, ksize, strides, padding):
    """tf.nn.avg_pool2d (NHWC) of a device array x: each window's mean over its in-image
    cells.  Returns (N, Ho, Wo, C) of x's (float) dtype."""
    shape, window = _pooled(tuple(x.shape), ksize, strides, padding)
    out = launch.empty(shape, x.dtype)
    _launch(avg_pool2d_kernel, out.size, x, out, *window)
    return out


def avg_pool2d_grad(input_shape, dy, ksize, strides, padding):
    """The gradient of avg_pool2d: dy (N, Ho, Wo, C) -> dx of ``input_shape`` (N, H, W, C)."""
    input_shape = tuple(int(s) for s in input_shape)
    _, window = _pooled(input_shape, ksize, strides, padding)
    dx = launch.empty(input_shape, dy.dtype)
    _launch(avg_pool2d_grad_kernel, dx.size, dy, dx, *window)
    return dx
