"""Flatten and Reshape: change the shape of each example, keeping the batch dimension."""
import numpy as np

from hybridtf.api import array_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.input_spec import InputSpec


def _product(dims):
    return None if any(d is None for d in dims) else int(np.prod(dims, dtype=np.int64))


class Flatten(Layer):
    """Flattens each example: [batch, d1, ..., dn] -> [batch, d1 * ... * dn] ([batch] ->
    [batch, 1]).  With ``data_format="channels_first"`` the channels are moved last first, so
    the order matches channels_last models."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first" and x.ndim > 2:
            x = array_ops.transpose(x, [0] + list(range(2, x.ndim)) + [1])
        if x.ndim == 1:
            return array_ops.expand_dims(x, 1)
        dims = x.shape.as_list()
        features = _product(dims[1:])
        if dims[0] is not None:
            return array_ops.reshape(x, [dims[0], -1])
        if features is not None:
            return array_ops.reshape(x, [-1, features])
        return array_ops.reshape(x, array_ops.stack([array_ops.shape(x)[0], -1]))

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if not dims:
            raise ValueError(f"Flatten {self.name}: expected an input shape of rank >= 1, got "
                             "a scalar.")
        if len(dims) == 1:
            return TensorShape([dims[0], 1])
        return TensorShape([dims[0], _product(dims[1:])])

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class Reshape(Layer):
    """Reshapes each example to ``target_shape`` (the batch dimension is kept); one entry may
    be -1, inferred from the others."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        try:
            target = tuple(int(d) for d in target_shape)
        except (TypeError, ValueError):
            raise ValueError(f"Reshape {self.name}: target_shape must be a tuple of ints, got "
                             f"{target_shape!r}.") from None
        if sum(d == -1 for d in target) > 1 or any(d < -1 for d in target):
            raise ValueError(f"Reshape {self.name}: there must be at most one unknown (-1) "
                             f"dimension in target_shape and no other negative ones. Received: "
                             f"target_shape={target}")
        self.target_shape = target

    def _resolved_target(self, input_shape):
        """target_shape with its -1 filled in from the (per-example) input size, checked."""
        dims = TensorShape(input_shape).as_list()
        size = _product(dims[1:])
        known = _product([d for d in self.target_shape if d != -1])
        if size is None:
            return list(self.target_shape)
        if -1 in self.target_shape:
            if known == 0 or size % known:
                self._size_error(dims)
            return [size // known if d == -1 else d for d in self.target_shape]
        if known != size:
            self._size_error(dims)
        return list(self.target_shape)

    def _size_error(self, dims):
        raise ValueError(f"Reshape {self.name}: the total size of each example must be "
                         f"unchanged, but input_shape = {tuple(dims)} ({_product(dims[1:])} "
                         f"values per example) cannot be reshaped to target_shape = "
                         f"{self.target_shape}.")

    def call(self, inputs):
        dims = inputs.shape.as_list()
        target = self._resolved_target(dims)
        if dims[0] is not None:
            return array_ops.reshape(inputs, [dims[0]] + target)
        if -1 not in target:
            return array_ops.reshape(inputs, [-1] + target)
        return array_ops.reshape(inputs, array_ops.concat(
            [array_ops.shape(inputs)[:1], target], 0))

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        target = self._resolved_target(dims)
        return TensorShape([dims[0]] + [None if d == -1 else d for d in target])

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = self.target_shape
        return config
