"""Sliding-window geometry shared by convolution and pooling: TF's padding arithmetic.

Padding is TF's: 'VALID', or 'SAME' with out = ceil(in / stride) and the odd padding cell after
(``same_padding``).  Pure Python: it runs before a kernel, to size its output.
"""


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


def window_geometry(x_shape, kh, kw, strides, dilations, padding):
    """(Ho, Wo, pad_top, pad_left) of a (kh, kw) window swept over the (H, W) of NHWC x_shape."""
    _, H, W, _ = x_shape
    sh, sw = strides
    dh, dw = dilations
    Ho = conv_output_size(H, kh, sh, dh, padding)
    Wo = conv_output_size(W, kw, sw, dw, padding)
    pt, _ = _pads(H, kh, sh, dh, padding)
    pl, _ = _pads(W, kw, sw, dw, padding)
    return Ho, Wo, pt, pl
