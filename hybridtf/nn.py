"""``tf.nn``."""
from hybridtf.api.nn_ops import (  # noqa: F401
    avg_pool, avg_pool2d, bias_add, conv2d, conv2d_backprop_filter, conv2d_backprop_input,
    dropout, elu, l2_loss, leaky_relu, log_softmax, max_pool, max_pool2d, relu, relu6, sigmoid,
    sigmoid_cross_entropy_with_logits, softmax, softmax_cross_entropy_with_logits, softplus,
    sparse_softmax_cross_entropy_with_logits, tanh)
from hybridtf.api.conv_ops import (  # noqa: F401
    avg_pool1d, conv1d, conv1d_transpose, conv2d_transpose, depthwise_conv2d,
    depthwise_conv2d_backprop_filter, depthwise_conv2d_backprop_input, max_pool1d,
    separable_conv2d)
from hybridtf.api.sort_ops import in_top_k, top_k  # noqa: F401
from hybridtf.distribute.losses import (  # noqa: F401
    compute_average_loss, scale_regularization_loss)
