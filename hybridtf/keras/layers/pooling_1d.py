"""1-D pooling over sequences: MaxPooling1D, AveragePooling1D and their global versions."""
from hybridtf.api import array_ops, conv_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.input_spec import InputSpec


def _check_rank(layer, dims):
    if len(dims) != 3:
        raise ValueError(f"{type(layer).__name__} {layer.name}: expected an input shape of rank "
                         f"3, got {tuple(dims)}.")


class _Pooling1D(Layer):
    """Pools ``pool_size`` windows moved by ``strides`` (default: ``pool_size``) along the
    steps of [batch, steps, features] (channels_last) or [batch, features, steps] inputs."""

    _pool = None  # the tf.nn function

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = conv_utils.normalize_tuple(pool_size, 1, "pool_size")
        self.strides = self.pool_size if strides is None else conv_utils.normalize_tuple(
            strides, 1, "strides")
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        return type(self)._pool(inputs, self.pool_size[0], self.strides[0], self.padding.upper(),
                                data_format="NWC" if self.data_format == "channels_last"
                                else "NCW")

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        _check_rank(self, dims)
        axis = 1 if self.data_format == "channels_last" else 2
        dims[axis] = conv_utils.output_length(dims[axis], self.pool_size[0], self.padding,
                                              self.strides[0])
        return TensorShape(dims)

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "padding": self.padding,
                       "strides": self.strides, "data_format": self.data_format})
        return config


class MaxPooling1D(_Pooling1D):
    """The maximum over each window of steps."""
    _pool = staticmethod(conv_ops.max_pool1d)


class AveragePooling1D(_Pooling1D):
    """The mean over each window of steps ("same" padding averages the steps inside the
    input)."""
    _pool = staticmethod(conv_ops.avg_pool1d)


class _GlobalPooling1D(Layer):
    """Reduces the steps axis; ``keepdims=True`` keeps it with size 1."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=3)

    @property
    def _steps_axis(self):
        return 1 if self.data_format == "channels_last" else 2

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        _check_rank(self, dims)
        if self.keepdims:
            dims[self._steps_axis] = 1
        else:
            del dims[self._steps_axis]
        return TensorShape(dims)

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "keepdims": self.keepdims})
        return config


class GlobalAveragePooling1D(_GlobalPooling1D):
    """The mean over the steps: [batch, steps, features] -> [batch, features].  With a
    ``mask`` ([batch, steps], e.g. from an Embedding with ``mask_zero=True``) the mean is over
    the unmasked steps."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(data_format=data_format, keepdims=keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        axis = self._steps_axis
        if mask is None:
            return math_ops.reduce_mean(inputs, axis=axis, keepdims=self.keepdims)
        weights = array_ops.expand_dims(math_ops.cast(mask, inputs.dtype), 3 - axis)
        total = math_ops.reduce_sum(inputs * weights, axis=axis, keepdims=self.keepdims)
        return total / math_ops.reduce_sum(weights, axis=axis, keepdims=self.keepdims)


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum over the steps: [batch, steps, features] -> [batch, features]."""

    def call(self, inputs):
        return math_ops.reduce_max(inputs, axis=self._steps_axis, keepdims=self.keepdims)


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
