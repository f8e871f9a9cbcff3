"""2-D pooling: MaxPooling2D, AveragePooling2D and their global versions."""
from hybridtf.api import array_ops, math_ops, nn_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.convolutional import _TO_CHANNELS_FIRST, _TO_CHANNELS_LAST
from hybridtf.keras.layers.input_spec import InputSpec


class _Pooling2D(Layer):
    """Pools ``pool_size`` windows moved by ``strides`` (default: ``pool_size``)."""

    _pool = None  # the tf.nn function

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.pool_size = conv_utils.normalize_tuple(pool_size, 2, "pool_size")
        self.strides = self.pool_size if strides is None else conv_utils.normalize_tuple(
            strides, 2, "strides")
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, _TO_CHANNELS_LAST)
        outputs = type(self)._pool(x, ksize=self.pool_size, strides=self.strides,
                                   padding=self.padding.upper())
        if self.data_format == "channels_first":
            outputs = array_ops.transpose(outputs, _TO_CHANNELS_FIRST)
        return outputs

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) != 4:
            raise ValueError(f"{type(self).__name__} {self.name}: expected an input shape of "
                             f"rank 4, got {tuple(dims)}.")
        if self.data_format == "channels_last":
            batch, rows, cols, channels = dims
        else:
            batch, channels, rows, cols = dims
        rows = conv_utils.output_length(rows, self.pool_size[0], self.padding, self.strides[0])
        cols = conv_utils.output_length(cols, self.pool_size[1], self.padding, self.strides[1])
        if self.data_format == "channels_last":
            return TensorShape([batch, rows, cols, channels])
        return TensorShape([batch, channels, rows, cols])

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "padding": self.padding,
                       "strides": self.strides, "data_format": self.data_format})
        return config


class MaxPooling2D(_Pooling2D):
    """The maximum over each window of NHWC (or NCHW) images."""
    _pool = staticmethod(nn_ops.max_pool2d)


class AveragePooling2D(_Pooling2D):
    """The mean over each window ("same" padding averages the cells inside the image)."""
    _pool = staticmethod(nn_ops.avg_pool2d)


class _GlobalPooling2D(Layer):
    """Reduces the spatial dimensions; ``keepdims=True`` keeps them with size 1."""

    _reduce = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        axes = [1, 2] if self.data_format == "channels_last" else [2, 3]
        return type(self)._reduce(inputs, axis=axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) != 4:
            raise ValueError(f"{type(self).__name__} {self.name}: expected an input shape of "
                             f"rank 4, got {tuple(dims)}.")
        if self.data_format == "channels_last":
            return TensorShape([dims[0], 1, 1, dims[3]] if self.keepdims else [dims[0], dims[3]])
        return TensorShape([dims[0], dims[1], 1, 1] if self.keepdims else [dims[0], dims[1]])

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "keepdims": self.keepdims})
        return config


class GlobalAveragePooling2D(_GlobalPooling2D):
    """The mean over height and width: [batch, h, w, c] -> [batch, c]."""
    _reduce = staticmethod(math_ops.reduce_mean)


class GlobalMaxPooling2D(_GlobalPooling2D):
    """The maximum over height and width: [batch, h, w, c] -> [batch, c]."""
    _reduce = staticmethod(math_ops.reduce_max)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
