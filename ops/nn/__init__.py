"""Neural-network kernels, one module per algorithm family.

Layout is NHWC; filters are [KH, KW, Cin, Cout]; padding is TF's ('SAME' or 'VALID').

* ``conv``: conv2d and its input and filter gradients; picks one of the forms below.
* ``conv_winograd3``, ``conv_winograd5``: Winograd F(2x2, 3x3) and F(2x2, 5x5) convolution
  (3x3 and 5x5 filters, stride 1, dilation 1, enough channels).
* ``conv_shift``: stride-1 convolution as one GEMM per filter tap (many input channels).
* ``conv_im2col``: convolution through a patch matrix (strides, few channels, the rest).
* ``depthwise``: depthwise convolution (one filter set per input channel) and its gradients.
* ``pooling``: max and average pooling and their gradients.
* ``logits``: softmax, log-softmax, their gradients and the softmax cross-entropies.
* ``windows``: TF's padding arithmetic, shared by convolution and pooling.
* ``rows``: the flat row loops the convolution kernels are built from.
* ``parts``: the operand guard and the split of a kernel over the kernel threads.

The entry points (``conv2d``, ``max_pool2d``, ``softmax``, ...) are exported here; each form's
internals stay in its module.
"""
from ops.nn.conv import conv2d, conv2d_backprop_filter, conv2d_backprop_input
from ops.nn.depthwise import (depthwise_conv2d, depthwise_conv2d_backprop_filter,
                              depthwise_conv2d_backprop_input)
from ops.nn.logits import (log_softmax, log_softmax_grad, softmax, softmax_cross_entropy,
                           softmax_grad, sparse_softmax_cross_entropy)
from ops.nn.pooling import (avg_pool2d, avg_pool2d_grad, max_pool2d, max_pool2d_grad,
                            max_pool2d_grad_grad)
from ops.nn.windows import conv_output_size, same_padding

__all__ = [
    "conv2d", "conv2d_backprop_filter", "conv2d_backprop_input",
    "depthwise_conv2d", "depthwise_conv2d_backprop_filter", "depthwise_conv2d_backprop_input",
    "log_softmax", "log_softmax_grad", "softmax", "softmax_cross_entropy", "softmax_grad",
    "sparse_softmax_cross_entropy",
    "avg_pool2d", "avg_pool2d_grad", "max_pool2d", "max_pool2d_grad", "max_pool2d_grad_grad",
    "conv_output_size", "same_padding",
]
