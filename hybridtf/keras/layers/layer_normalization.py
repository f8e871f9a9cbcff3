"""LayerNormalization: normalise each example over its feature axes."""
import warnings

from hybridtf.api import array_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import initializers
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.layer_utils import (axis_argument, get_constraint, get_regularizer,
                                               serialize_constraint, serialize_initializer,
                                               serialize_regularizer)


class LayerNormalization(Layer):
    """Normalises each example over ``axis`` (default -1, the features):
    ``gamma * (x - mean) / sqrt(var + epsilon) + beta``, with mean and var taken over
    ``axis`` for each example, in training and inference alike.

    ``center``/``scale``: whether to learn ``beta``/``gamma`` (shape: the sizes of ``axis``).
    ``rms_scaling=True`` (deprecated in Keras 3, kept for its saved models) ignores ``center``
    and ``scale`` and computes ``gamma * x / sqrt(var + epsilon)``: the inputs are divided by
    their standard deviation, not by their root mean square, and are not centred.
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.axis = axis_argument(axis, f"LayerNormalization {self.name}")
        if rms_scaling:
            warnings.warn("LayerNormalization: rms_scaling=True is deprecated; it scales the "
                          "inputs by their variance, not their root mean square.",
                          UserWarning, stacklevel=2)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.rms_scaling = bool(rms_scaling)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = get_regularizer(beta_regularizer, "LayerNormalization")
        self.gamma_regularizer = get_regularizer(gamma_regularizer, "LayerNormalization")
        self.beta_constraint = get_constraint(beta_constraint, "LayerNormalization")
        self.gamma_constraint = get_constraint(gamma_constraint, "LayerNormalization")
        self.supports_masking = True
        self.gamma = self.beta = None

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        rank = len(dims)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        if not axes:
            raise ValueError(f"LayerNormalization {self.name}: axis must name at least one "
                             "axis.")
        normalized = []
        for a in axes:
            if not -rank <= a < rank:
                raise ValueError(f"LayerNormalization {self.name}: invalid axis {a} for "
                                 f"inputs of rank {rank} (shape {tuple(dims)}).")
            normalized.append(a % rank)
        if len(set(normalized)) != len(normalized):
            raise ValueError(f"LayerNormalization {self.name}: duplicate axis in {self.axis}.")
        normalized.sort()
        param_shape = [dims[a] for a in normalized]
        if None in param_shape:
            raise ValueError(f"LayerNormalization {self.name}: the normalised axes {axes} "
                             f"must have known sizes; input shape {tuple(dims)}.")
        self._axes = normalized
        # Parameters broadcast as they are only when the single normalised axis is the last.
        self._broadcast_shape = None
        if normalized != [rank - 1]:
            self._broadcast_shape = [dims[i] if i in normalized else 1 for i in range(rank)]
        if self.scale or self.rms_scaling:
            self.gamma = self.add_weight("gamma", shape=param_shape,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint, trainable=True)
        if self.center and not self.rms_scaling:
            self.beta = self.add_weight("beta", shape=param_shape,
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint, trainable=True)
        self.built = True

    def _broadcast(self, param):
        if self._broadcast_shape is None:
            return param
        return array_ops.reshape(param, self._broadcast_shape)

    def call(self, inputs):
        x = inputs
        if x.dtype is not self._dtype_object:
            x = math_ops.cast(x, self._dtype_object)
        mean = math_ops.reduce_mean(x, self._axes, keepdims=True)
        variance = math_ops.reduce_mean(math_ops.squared_difference(x, mean), self._axes,
                                        keepdims=True)
        inv = math_ops.rsqrt(math_ops.add(variance, self.epsilon))
        if self.gamma is not None:
            inv = math_ops.multiply(inv, self._broadcast(self.gamma))
        if self.rms_scaling:
            return math_ops.multiply(x, inv)
        # x * inv + (beta - mean * inv): two elementwise passes over x.
        offset = math_ops.negative(math_ops.multiply(mean, inv))
        if self.beta is not None:
            offset = math_ops.add(offset, self._broadcast(self.beta))
        return math_ops.add(math_ops.multiply(x, inv), offset)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": self.axis, "epsilon": self.epsilon, "center": self.center,
            "scale": self.scale, "rms_scaling": self.rms_scaling,
            "beta_initializer": serialize_initializer(self.beta_initializer),
            "gamma_initializer": serialize_initializer(self.gamma_initializer),
            "beta_regularizer": serialize_regularizer(self.beta_regularizer),
            "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
            "beta_constraint": serialize_constraint(self.beta_constraint),
            "gamma_constraint": serialize_constraint(self.gamma_constraint)})
        return config
