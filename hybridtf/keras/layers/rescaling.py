"""Rescaling: ``inputs * scale + offset``, e.g. pixel values from [0, 255] to [0, 1]."""
import numpy as np

from hybridtf.api import math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import backend
from hybridtf.keras.layers.base_layer import Layer


def serialize_array_value(value):
    """A Python number as is; an array as Keras 3 writes NumPy arrays in configs."""
    if isinstance(value, (np.ndarray, np.generic)):
        return {"class_name": "__numpy__",
                "config": {"value": value.tolist(), "dtype": value.dtype.name}}
    return value


def deserialize_array_value(value):
    if isinstance(value, dict) and value.get("class_name") == "__numpy__":
        return np.asarray(value["config"]["value"], dtype=value["config"]["dtype"])
    if isinstance(value, list):
        return np.asarray(value)
    return value


class Rescaling(Layer):
    """Rescales inputs: ``inputs * scale + offset``, computed in the layer's dtype (inputs of
    another dtype, such as uint8 images, are cast first).  ``scale`` and ``offset`` are
    numbers or arrays that broadcast against the inputs; with
    ``image_data_format() == "channels_first"`` an array ``scale`` is aligned with the
    channel axis of 4-D images."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = deserialize_array_value(scale)
        self.offset = deserialize_array_value(offset)
        for what, value in (("scale", self.scale), ("offset", self.offset)):
            try:
                np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"Rescaling: {what} must be a number or an array of numbers, "
                                 f"got {value!r}.") from None
        self.supports_masking = True

    def call(self, inputs):
        dtype = self._dtype_object
        x = inputs if inputs.dtype is dtype else math_ops.cast(inputs, dtype)
        scale = np.asarray(self.scale, dtype=dtype.as_numpy_dtype)
        if scale.ndim and backend.image_data_format() == "channels_first":
            scale = scale.reshape(scale.shape + (1,) * (3 - scale.ndim))
        offset = np.asarray(self.offset, dtype=dtype.as_numpy_dtype)
        return math_ops.add(math_ops.multiply(x, scale), offset)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"scale": serialize_array_value(self.scale),
                       "offset": serialize_array_value(self.offset)})
        return config
