"""Conv2D: 2-D convolution over images, kernel in HWIO layout [height, width, in, filters]."""
from hybridtf.api import array_ops, math_ops, nn_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import activations
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.layer_utils import (kernel_and_bias_config,
                                               set_kernel_and_bias_options)
from hybridtf.keras.layers.input_spec import InputSpec

_TO_CHANNELS_LAST = [0, 2, 3, 1]
_TO_CHANNELS_FIRST = [0, 3, 1, 2]


class Conv2D(Layer):
    """2-D convolution: ``activation(conv2d(inputs, kernel) + bias)``.

    ``filters`` output channels; ``kernel_size``, ``strides`` and ``dilation_rate`` are ints
    or pairs; ``padding`` "valid" or "same"; ``data_format`` "channels_last" (NHWC, default)
    or "channels_first" (NCHW); ``groups`` splits the input channels into groups convolved
    separately.  Inputs of rank > 4 are treated as extra batch dimensions.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"Conv2D {self.name}: invalid value for argument `filters`. "
                             f"Expected a strictly positive integer. Received filters={filters!r}.")
        if not isinstance(groups, int) or groups < 1 or filters % groups:
            raise ValueError(f"Conv2D {self.name}: the number of filters must be evenly "
                             f"divisible by the number of groups. Received: groups={groups}, "
                             f"filters={filters}.")
        self.filters = filters
        self.groups = groups
        self.kernel_size = conv_utils.normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = conv_utils.normalize_tuple(strides, 2, "strides")
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.dilation_rate = conv_utils.normalize_tuple(dilation_rate, 2, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"Conv2D {self.name}: `strides > 1` not supported in conjunction "
                             f"with `dilation_rate > 1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        set_kernel_and_bias_options(self, "Conv2D", activation, use_bias, kernel_initializer,
                                    bias_initializer, kernel_regularizer, bias_regularizer,
                                    kernel_constraint, bias_constraint)
        self.input_spec = InputSpec(min_ndim=4)

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else -3

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        channels = input_shape[self._channel_axis]
        if channels is None:
            raise ValueError(f"Conv2D {self.name}: the channel dimension of the inputs should be "
                             f"defined. The input_shape received is {input_shape}, where axis "
                             f"{self._channel_axis} is the channel dimension, which found to be "
                             "`None`.")
        if channels % self.groups:
            raise ValueError(f"Conv2D {self.name}: the number of input channels must be evenly "
                             f"divisible by the number of groups. Received groups={self.groups}, "
                             f"but the input has {channels} channels (full input shape is "
                             f"{input_shape}).")
        kernel_shape = self.kernel_size + (channels // self.groups, self.filters)
        self.input_spec = InputSpec(min_ndim=4, axes={self._channel_axis: channels})
        self.kernel = self.add_weight("kernel", shape=kernel_shape,
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=(self.filters,),
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype)
        self.built = True

    def _convolve(self, x):
        padding = self.padding.upper()
        if self.groups == 1:
            return nn_ops.conv2d(x, self.kernel, strides=self.strides, padding=padding,
                                 dilations=self.dilation_rate)
        xs = array_ops.split(x, self.groups, axis=3)
        ks = array_ops.split(self.kernel, self.groups, axis=3)
        return array_ops.concat(
            [nn_ops.conv2d(xi, ki, strides=self.strides, padding=padding,
                           dilations=self.dilation_rate) for xi, ki in zip(xs, ks)], axis=3)

    def call(self, inputs):
        if inputs.dtype is not self._dtype_object:
            inputs = math_ops.cast(inputs, self._dtype_object)
        batch_dims = inputs.shape.as_list()[:-3]
        x = inputs
        if len(batch_dims) > 1:
            x = array_ops.reshape(x, [-1] + inputs.shape.as_list()[-3:])
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, _TO_CHANNELS_LAST)
        outputs = self._convolve(x)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not activations.linear:
            outputs = self.activation(outputs)
        if self.data_format == "channels_first":
            outputs = array_ops.transpose(outputs, _TO_CHANNELS_FIRST)
        if len(batch_dims) > 1:
            outputs = array_ops.reshape(outputs, [-1 if d is None else d for d in batch_dims]
                                        + outputs.shape.as_list()[1:])
        return outputs

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) < 4:
            raise ValueError(f"Conv2D {self.name}: expected an input shape of rank >= 4, got "
                             f"{tuple(dims)}.")
        spatial = dims[-3:-1] if self.data_format == "channels_last" else dims[-2:]
        out = [conv_utils.output_length(n, k, self.padding, s, d) for n, k, s, d in
               zip(spatial, self.kernel_size, self.strides, self.dilation_rate)]
        if self.data_format == "channels_last":
            return TensorShape(dims[:-3] + out + [self.filters])
        return TensorShape(dims[:-3] + [self.filters] + out)

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
            "padding": self.padding, "data_format": self.data_format,
            "dilation_rate": self.dilation_rate, "groups": self.groups})
        config.update(kernel_and_bias_config(self))
        return config


Convolution2D = Conv2D
