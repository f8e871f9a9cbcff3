"""DepthwiseConv2D and SeparableConv2D: convolutions that filter each input channel on its
own (and, for the separable one, then mix the channels with a 1x1 convolution)."""
from hybridtf.api import conv_ops
from hybridtf.keras import initializers
from hybridtf.keras.layers.convolutional import BaseConv, check_filters
from hybridtf.keras.layers.layer_utils import (get_constraint, get_regularizer,
                                               serialize_constraint, serialize_initializer,
                                               serialize_regularizer)


def _depth_multiplier(layer, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{type(layer).__name__} {layer.name}: invalid value for argument "
                         f"`depth_multiplier`. Expected a strictly positive integer. Received "
                         f"depth_multiplier={value!r}.")
    return value


def _renamed(config, prefix):
    """Keras's names for the depthwise layers' kernel options: ``depthwise_initializer``,
    ... in place of ``kernel_initializer``, ..."""
    for option in ("initializer", "regularizer", "constraint"):
        config[f"{prefix}_{option}"] = config.pop(f"kernel_{option}")
    return config


class DepthwiseConv2D(BaseConv):
    """Depthwise 2-D convolution: each input channel convolved with its own
    ``depth_multiplier`` filters, giving ``channels * depth_multiplier`` output channels
    (output channel ``c * depth_multiplier + m``).  The kernel is [height, width, channels,
    depth_multiplier]; ``depthwise_initializer``, ``depthwise_regularizer`` and
    ``depthwise_constraint`` apply to it."""

    rank = 2

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=depthwise_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=depthwise_constraint, bias_constraint=bias_constraint,
                         **kwargs)
        self.depth_multiplier = _depth_multiplier(self, depth_multiplier)
        self._check_strides_and_dilation()

    def _output_channels(self, input_channels):
        return input_channels * self.depth_multiplier

    def _build_kernels(self, input_shape, channels):
        self.kernel = self._add_kernel(
            "kernel", self.kernel_size + (channels, self.depth_multiplier),
            self.kernel_initializer, self.kernel_regularizer, self.kernel_constraint)

    def _convolve(self, x):
        return conv_ops.depthwise_conv2d(x, self.kernel, self.strides, self.padding.upper(),
                                         dilations=self.dilation_rate)

    def get_config(self):
        config = _renamed(super().get_config(), "depthwise")
        config["depth_multiplier"] = self.depth_multiplier
        return config


class SeparableConv2D(BaseConv):
    """Depthwise separable 2-D convolution: a depthwise convolution (``depth_multiplier``
    filters per input channel, kernel ``depthwise_kernel`` [height, width, channels,
    depth_multiplier]) followed by a 1x1 convolution to ``filters`` channels
    (``pointwise_kernel`` [1, 1, channels * depth_multiplier, filters]), then bias and
    activation."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=depthwise_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=depthwise_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=depthwise_constraint, bias_constraint=bias_constraint,
                         **kwargs)
        check_filters(self, filters)
        self.filters = filters
        self.depth_multiplier = _depth_multiplier(self, depth_multiplier)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = get_regularizer(pointwise_regularizer, "SeparableConv2D")
        self.pointwise_constraint = get_constraint(pointwise_constraint, "SeparableConv2D")
        self.depthwise_kernel = None
        self.pointwise_kernel = None
        self._check_strides_and_dilation()

    def _build_kernels(self, input_shape, channels):
        self.depthwise_kernel = self._add_kernel(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            self.kernel_initializer, self.kernel_regularizer, self.kernel_constraint)
        self.pointwise_kernel = self._add_kernel(
            "pointwise_kernel", (1, 1, channels * self.depth_multiplier, self.filters),
            self.pointwise_initializer, self.pointwise_regularizer, self.pointwise_constraint)

    def _convolve(self, x):
        return conv_ops.separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel,
                                         self.strides, self.padding.upper(),
                                         dilations=self.dilation_rate)

    def get_config(self):
        config = _renamed(super().get_config(), "depthwise")
        config.update({
            "filters": self.filters, "depth_multiplier": self.depth_multiplier,
            "pointwise_initializer": serialize_initializer(self.pointwise_initializer),
            "pointwise_regularizer": serialize_regularizer(self.pointwise_regularizer),
            "pointwise_constraint": serialize_constraint(self.pointwise_constraint)})
        return config


SeparableConvolution2D = SeparableConv2D
