"""Convolution layers: Conv1D, Conv2D and Conv2DTranspose, and the base they share with the
depthwise and separable convolutions.  Kernels are [spatial..., in, out] (Conv2DTranspose:
[spatial..., filters, in])."""
from hybridtf.api import array_ops, conv_ops, math_ops, nn_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import activations
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.layer_utils import (kernel_and_bias_config,
                                               set_kernel_and_bias_options)
from hybridtf.keras.layers.input_spec import InputSpec

_TO_CHANNELS_LAST = conv_utils.channels_last_perm(2)
_TO_CHANNELS_FIRST = conv_utils.channels_first_perm(2)


def check_filters(layer, filters):
    if not isinstance(filters, int) or isinstance(filters, bool) or filters <= 0:
        raise ValueError(f"{type(layer).__name__} {layer.name}: invalid value for argument "
                         f"`filters`. Expected a strictly positive integer. Received "
                         f"filters={filters!r}.")


class BaseConv(Layer):
    """What the convolution layers share: the window arguments, the weights' options, the
    layout (``data_format``; inputs of higher rank are treated as extra batch dimensions),
    bias and activation.  A subclass sets ``rank``, builds its kernels (``_build_kernels``)
    and convolves channels-last inputs (``_convolve``)."""

    rank = None
    _paddings = ("valid", "same")

    def __init__(self, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        rank = self.rank
        self.kernel_size = conv_utils.normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = conv_utils.normalize_tuple(strides, rank, "strides")
        self.padding = conv_utils.normalize_padding(padding, self._paddings)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.dilation_rate = conv_utils.normalize_tuple(dilation_rate, rank, "dilation_rate")
        set_kernel_and_bias_options(self, type(self).__name__, activation, use_bias,
                                    kernel_initializer, bias_initializer, kernel_regularizer,
                                    bias_regularizer, kernel_constraint, bias_constraint)
        self.input_spec = InputSpec(min_ndim=rank + 2)

    def _check_strides_and_dilation(self):
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{type(self).__name__} {self.name}: `strides > 1` not supported "
                             f"in conjunction with `dilation_rate > 1`. Received: strides="
                             f"{self.strides} and dilation_rate={self.dilation_rate}")

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else -1 - self.rank

    def _output_channels(self, input_channels):
        return self.filters

    def _output_spatial(self, spatial):
        return [conv_utils.output_length(n, k, self.padding, s, d) for n, k, s, d in
                zip(spatial, self.kernel_size, self.strides, self.dilation_rate)]

    def _add_kernel(self, name, shape, initializer, regularizer, constraint):
        return self.add_weight(name, shape=shape, initializer=initializer,
                               regularizer=regularizer, constraint=constraint, dtype=self.dtype)

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        channels = input_shape[self._channel_axis]
        if channels is None:
            raise ValueError(f"{type(self).__name__} {self.name}: the channel dimension of the "
                             f"inputs should be defined. The input_shape received is "
                             f"{input_shape}, where axis {self._channel_axis} is the channel "
                             "dimension, which found to be `None`.")
        self.input_spec = InputSpec(min_ndim=self.rank + 2, axes={self._channel_axis: channels})
        self._build_kernels(input_shape, channels)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=(self._output_channels(channels),),
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype)
        self.built = True

    def call(self, inputs):
        if inputs.dtype is not self._dtype_object:
            inputs = math_ops.cast(inputs, self._dtype_object)
        inner = self.rank + 1   # spatial axes and channels
        batch_dims = inputs.shape.as_list()[:-inner]
        x = inputs
        if len(batch_dims) > 1:
            x = array_ops.reshape(x, [-1] + inputs.shape.as_list()[-inner:])
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, conv_utils.channels_last_perm(self.rank))
        outputs = self._convolve(x)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not activations.linear:
            outputs = self.activation(outputs)
        if self.data_format == "channels_first":
            outputs = array_ops.transpose(outputs, conv_utils.channels_first_perm(self.rank))
        if len(batch_dims) > 1:
            outputs = array_ops.reshape(outputs, [-1 if d is None else d for d in batch_dims]
                                        + outputs.shape.as_list()[1:])
        return outputs

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        rank = self.rank
        if len(dims) < rank + 2:
            raise ValueError(f"{type(self).__name__} {self.name}: expected an input shape of "
                             f"rank >= {rank + 2}, got {tuple(dims)}.")
        last = self.data_format == "channels_last"
        spatial = dims[-rank - 1:-1] if last else dims[-rank:]
        channels = dims[-1] if last else dims[-rank - 1]
        out = self._output_spatial(spatial)
        out_channels = None if channels is None else self._output_channels(channels)
        inner = out + [out_channels] if last else [out_channels] + out
        return TensorShape(dims[:-rank - 1] + inner)

    def get_config(self):
        config = super().get_config()
        config.update({
            "kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding,
            "data_format": self.data_format, "dilation_rate": self.dilation_rate})
        config.update(kernel_and_bias_config(self))
        return config


class _Conv(BaseConv):
    """A convolution with ``filters`` output channels and ``groups`` channel groups."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, **kwargs):
        super().__init__(kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, **kwargs)
        check_filters(self, filters)
        if not isinstance(groups, int) or groups < 1 or filters % groups:
            raise ValueError(f"{type(self).__name__} {self.name}: the number of filters must be "
                             f"evenly divisible by the number of groups. Received: "
                             f"groups={groups}, filters={filters}.")
        self.filters = filters
        self.groups = groups
        self._check_strides_and_dilation()

    def _build_kernels(self, input_shape, channels):
        if channels % self.groups:
            raise ValueError(f"{type(self).__name__} {self.name}: the number of input channels "
                             f"must be evenly divisible by the number of groups. Received "
                             f"groups={self.groups}, but the input has {channels} channels "
                             f"(full input shape is {input_shape}).")
        self.kernel = self._add_kernel(
            "kernel", self.kernel_size + (channels // self.groups, self.filters),
            self.kernel_initializer, self.kernel_regularizer, self.kernel_constraint)

    def _convolve(self, x):
        if self.groups == 1:
            return self._convolve_group(x, self.kernel)
        xs = array_ops.split(x, self.groups, axis=-1)
        ks = array_ops.split(self.kernel, self.groups, axis=-1)
        return array_ops.concat([self._convolve_group(xi, ki) for xi, ki in zip(xs, ks)],
                                axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "groups": self.groups})
        return config


class Conv1D(_Conv):
    """1-D convolution over sequences: ``activation(conv1d(inputs, kernel) + bias)``.

    ``filters`` output channels; ``kernel_size``, ``strides`` and ``dilation_rate`` are ints
    (or 1-tuples); ``padding`` "valid", "same" or "causal" (zeros before the sequence only, so
    that output step t sees no input after t); ``data_format`` "channels_last" ([batch, steps,
    channels], default) or "channels_first"; ``groups`` splits the input channels into groups
    convolved separately.  The kernel is [kernel_size, in_channels // groups, filters].
    """

    rank = 1
    _paddings = ("valid", "same", "causal")

    def _convolve_group(self, x, kernel):
        padding = self.padding
        if padding == "causal":
            left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
            x = array_ops.pad(x, [[0, 0], [left, 0], [0, 0]])
            padding = "valid"
        return conv_ops.conv1d(x, kernel, self.strides[0], padding.upper(),
                               dilations=self.dilation_rate[0])


class Conv2D(_Conv):
    """2-D convolution: ``activation(conv2d(inputs, kernel) + bias)``.

    ``filters`` output channels; ``kernel_size``, ``strides`` and ``dilation_rate`` are ints
    or pairs; ``padding`` "valid" or "same"; ``data_format`` "channels_last" (NHWC, default)
    or "channels_first" (NCHW); ``groups`` splits the input channels into groups convolved
    separately.  Inputs of rank > 4 are treated as extra batch dimensions.  The kernel is HWIO:
    [height, width, in_channels // groups, filters].
    """

    rank = 2

    def _convolve_group(self, x, kernel):
        return nn_ops.conv2d(x, kernel, strides=self.strides, padding=self.padding.upper(),
                             dilations=self.dilation_rate)


class Conv2DTranspose(BaseConv):
    """Transposed 2-D convolution (sometimes called deconvolution): the gradient of a conv2d
    with respect to its input, so that strides enlarge the image.

    ``filters`` output channels; ``kernel_size``, ``strides`` and ``dilation_rate`` ints or
    pairs; ``padding`` "valid" or "same"; ``output_padding`` (ints or pairs, each smaller than
    its stride) picks among the output sizes that the strided convolution maps back to the
    input's size (None: the default size).  The kernel is [height, width, filters,
    in_channels].
    """

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), **kwargs):
        super().__init__(kernel_size, strides=strides, padding=padding, data_format=data_format,
                         dilation_rate=dilation_rate, **kwargs)
        check_filters(self, filters)
        self.filters = filters
        self.output_padding = None if output_padding is None else conv_utils.normalize_tuple(
            output_padding, self.rank, "output_padding", allow_zero=True)
        if self.output_padding is not None and any(
                p >= s for p, s in zip(self.output_padding, self.strides)):
            raise ValueError(f"{type(self).__name__} {self.name}: strides must be greater than "
                             f"output padding. Received strides={self.strides}, "
                             f"output_padding={self.output_padding}.")

    def _output_spatial(self, spatial):
        paddings = self.output_padding or (None,) * self.rank
        return [conv_utils.transposed_output_length(n, k, self.padding, p, s, d)
                for n, k, p, s, d in zip(spatial, self.kernel_size, paddings, self.strides,
                                         self.dilation_rate)]

    def _build_kernels(self, input_shape, channels):
        self.kernel = self._add_kernel(
            "kernel", self.kernel_size + (self.filters, channels), self.kernel_initializer,
            self.kernel_regularizer, self.kernel_constraint)

    def _convolve(self, x):
        dims = x.shape.as_list()
        output_shape = TensorShape([dims[0]] + self._output_spatial(dims[1:3]) + [self.filters])
        return conv_ops.conv2d_transpose(x, self.kernel, output_shape, self.strides,
                                         self.padding.upper(), dilations=self.dilation_rate)

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters, "output_padding": self.output_padding})
        return config


Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution2DTranspose = Conv2DTranspose
