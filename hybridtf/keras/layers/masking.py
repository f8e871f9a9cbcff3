"""``Masking``: masks the time steps whose features all equal ``mask_value``."""
from hybridtf.api import math_ops
from hybridtf.keras.layers.base_layer import Layer


class Masking(Layer):
    """Masks every time step of inputs [batch, time, features] whose features all equal
    ``mask_value``: those steps are zeroed, and the layers after it that support masks (the
    recurrent layers) skip them."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return math_ops.reduce_any(math_ops.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = math_ops.reduce_any(math_ops.not_equal(inputs, self.mask_value), axis=-1,
                                   keepdims=True)
        return inputs * math_ops.cast(keep, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config
