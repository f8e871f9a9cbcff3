"""2-D convolution and its two gradients (tf.nn.conv2d and its backprop ops): the entry points
that check the operands, work out the geometry and pick the algorithm.

Layout is NHWC; filters are [KH, KW, Cin, Cout].  Every form is a set of matrix products
(``ops.linalg.product_gemm``: register tiles or BLAS); the first that applies is used:

* ``ops.nn.conv_winograd3`` / ``conv_winograd5``: Winograd F(2x2, 3x3) and F(2x2, 5x5), for 3x3
  and 5x5 filters with stride 1, dilation 1 and enough channels in and out (16 and 8).  The input
  gradient is the same kernel on the flipped filter; the filter gradient is its exact adjoint.
* ``ops.nn.conv_shift``: other stride-1 convolutions with many input channels (one GEMM per tap,
  no patch matrix), and the filter gradient of few input channels and many taps.
* ``ops.nn.conv_im2col``: everything else, through a patch matrix (built transposed for few
  input channels).

Float kernels only (float32/float64).  Callers validate shapes, dtypes, strides >= 1,
dilations >= 1 and that the output is non-negative in size.
"""
import numpy as np

from ops.nn import conv_im2col, conv_shift, conv_winograd3, conv_winograd5
from ops.nn.parts import check_operands
from ops.nn.windows import window_geometry


def conv2d(x, w, strides=(1, 1), padding="VALID", dilations=(1, 1)):
    """tf.nn.conv2d (NHWC): x (N, H, W, Cin), w (KH, KW, Cin, Cout) -> (N, Ho, Wo, Cout).

    x and w: float32/float64 of one dtype; strides, dilations: (h, w) ints >= 1; padding 'SAME'
    or 'VALID'.  The caller checks that Cin matches and the dtypes agree.
    """
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w)
    N, H, W, C = x.shape
    kh, kw, _, Co = w.shape
    check_operands(w.shape[2] == C and w.dtype == x.dtype, "conv2d", x, w)
    Ho, Wo, pt, pl = window_geometry(x.shape, kh, kw, strides, dilations, padding)
    out = np.empty((N, Ho, Wo, Co), x.dtype)
    if out.size == 0:
        return out
    if C == 0 or kh * kw == 0:
        out[:] = 0
        return out
    if conv_winograd3.applies(kh, kw, strides, dilations, C, Co):
        conv_winograd3.forward(x, w, pt, pl, out)
    elif conv_winograd5.applies(kh, kw, strides, dilations, C, Co):
        conv_winograd5.forward(x, w, pt, pl, out)
    elif conv_shift.applies(strides, C):
        conv_shift.forward(x, w, dilations, pt, pl, out)
    else:
        conv_im2col.forward(x, w, strides, dilations, pt, pl, out)
    return out


def _flipped(w):
    """The filter whose stride-1 correlation with dy is the input gradient: w turned by 180
    degrees, input and output channels swapped."""
    return np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))


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
    Ho, Wo, pt, pl = window_geometry((N, H, W, C), kh, kw, strides, dilations, padding)
    check_operands(w.shape[2] == C and dy.shape == (N, Ho, Wo, Co) and w.dtype == dy.dtype,
                   "conv2d_backprop_input", w, dy)
    if N * H * W * C == 0 or dy.size == 0 or kh * kw == 0:
        return np.zeros((N, H, W, C), dy.dtype)
    dx = np.empty((N, H, W, C), dy.dtype)  # every path below writes all of it
    if conv_winograd3.applies(kh, kw, strides, dilations, C, Co):
        conv_winograd3.forward(dy, _flipped(w), kh - 1 - pt, kw - 1 - pl, dx)
    elif conv_winograd5.applies(kh, kw, strides, dilations, C, Co):
        conv_winograd5.forward(dy, _flipped(w), kh - 1 - pt, kw - 1 - pl, dx)
    elif conv_shift.applies(strides, C):
        conv_shift.backprop_input(w, dy, dilations, pt, pl, dx)
    else:
        conv_im2col.backprop_input(w, dy, strides, dilations, pt, pl, dx)
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
    Ho, Wo, pt, pl = window_geometry(x.shape, kh, kw, strides, dilations, padding)
    check_operands(filter_shape[2] == C and dy.shape == (N, Ho, Wo, Co) and x.dtype == dy.dtype,
                   "conv2d_backprop_filter", x, dy)
    if kh * kw * C * Co == 0 or dy.size == 0 or x.size == 0:
        return np.zeros((kh, kw, C, Co), x.dtype)
    if conv_winograd3.applies(kh, kw, strides, dilations, C, Co):
        return conv_winograd3.backprop_filter(x, dy, pt, pl)
    if conv_winograd5.applies(kh, kw, strides, dilations, C, Co):
        return conv_winograd5.backprop_filter(x, dy, pt, pl)
    if conv_shift.applies_to_filter_grad(kh, kw, strides, C):
        return conv_shift.backprop_filter(x, dy, kh, kw, dilations, pt, pl)
    return conv_im2col.backprop_filter(x, dy, kh, kw, strides, dilations, pt, pl)
