"""Training-only regularisation layers: GaussianNoise, SpatialDropout1D, SpatialDropout2D."""
from hybridtf.api import array_ops, math_ops, random_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.core import Dropout, _training_value, smart_cond
from hybridtf.keras.layers.input_spec import InputSpec


class GaussianNoise(Layer):
    """Adds zero-mean Gaussian noise of standard deviation ``stddev`` to the inputs, only
    when called with ``training=True``; otherwise returns the inputs unchanged."""

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(stddev, bool) or not isinstance(stddev, (int, float)) \
                or not 0 <= stddev <= 1:
            raise ValueError(f"GaussianNoise: invalid value received for argument `stddev`. "
                             f"Expected a float value between 0 and 1. Received: "
                             f"stddev={stddev!r}")
        self.stddev = stddev
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs, training=None):
        training = _training_value(training)
        if self.stddev == 0 or training is False:
            return inputs

        def noisy():
            dims = inputs.shape.as_list()
            if None in dims:
                raise ValueError(
                    f"GaussianNoise layer {self.name}: in training mode the input shape must "
                    f"be fully known, got {inputs.shape} (random noise needs a static shape). "
                    "Trace the function with concrete shapes instead of an input_signature "
                    "with None.")
            noise = random_ops.normal(dims, stddev=self.stddev, dtype=inputs.dtype,
                                      seed=self.seed)
            return math_ops.add(inputs, noise)

        return smart_cond(training, noisy, lambda: array_ops.identity(inputs))

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"stddev": self.stddev, "seed": self.seed})
        return config


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one keep/drop decision per example and channel."""

    _rank = None

    def __init__(self, rate, seed=None, **kwargs):
        kwargs.pop("noise_shape", None)     # fixed by the layer, as in Keras
        super().__init__(rate, seed=seed, **kwargs)
        self.input_spec = InputSpec(ndim=self._rank)

    def _channels_first(self):
        return False

    def _noise_shape(self, inputs):
        dims = inputs.shape.as_list()
        if self._channels_first():
            return dims[:2] + [1] * (len(dims) - 2)
        return [dims[0]] + [1] * (len(dims) - 2) + [dims[-1]]

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape")
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of ``[batch, steps, channels]`` inputs with probability ``rate``
    (the kept ones are scaled by 1 / (1 - rate)), only when called with ``training=True``."""

    _rank = 3


class SpatialDropout2D(_SpatialDropout):
    """Drops whole channels of 4-D image inputs with probability ``rate`` (the kept ones are
    scaled by 1 / (1 - rate)), only when called with ``training=True``.  ``data_format``:
    ``"channels_last"`` (default from ``keras.backend.image_data_format()``) or
    ``"channels_first"``."""

    _rank = 4

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)

    def _channels_first(self):
        return self.data_format == "channels_first"

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config
