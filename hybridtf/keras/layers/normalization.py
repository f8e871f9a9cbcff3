"""BatchNormalization: normalise with batch statistics while training, moving ones otherwise."""
import numpy as np

from hybridtf.api import array_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.variables import VariableAggregation, VariableSynchronization
from hybridtf.keras import initializers
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.core import _training_value, smart_cond
from hybridtf.keras.layers.layer_utils import (axis_argument, get_constraint, get_regularizer,
                                               serialize_constraint, serialize_initializer,
                                               serialize_regularizer)
from hybridtf.keras.layers.input_spec import InputSpec


class BatchNormalization(Layer):
    """Normalises inputs along ``axis`` (the features axis, default -1):
    ``gamma * (x - mean) / sqrt(var + epsilon) + beta``.

    With ``training=True`` mean and var are the batch's (over every axis but ``axis``) and the
    moving statistics are updated: ``moving = moving * momentum + batch * (1 - momentum)``.
    With ``training`` False or None (inference, as in Keras), or when the layer is frozen
    (``trainable=False``), the moving mean and variance are used.

    For 4-D inputs normalised along the channel axis (1 or 3) Keras uses the fused kernel,
    whose moving-variance update uses the unbiased batch variance (n / (n - 1) times the one
    used to normalise); this layer does the same unless built with ``fused=False``.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, fused=None, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis_argument(axis, f"BatchNormalization {self.name}")
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = get_regularizer(beta_regularizer, "BatchNormalization")
        self.gamma_regularizer = get_regularizer(gamma_regularizer, "BatchNormalization")
        self.beta_constraint = get_constraint(beta_constraint, "BatchNormalization")
        self.gamma_constraint = get_constraint(gamma_constraint, "BatchNormalization")
        self.fused = fused
        self.supports_masking = True
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        rank = input_shape.rank
        if not rank:
            raise ValueError(f"BatchNormalization {self.name}: input has undefined rank or is "
                             f"a scalar; received input shape {input_shape}.")
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        normalized = []
        for a in axes:
            if not -rank <= a < rank:
                raise ValueError(f"BatchNormalization {self.name}: invalid axis {a} for inputs "
                                 f"of rank {rank} (shape {input_shape}).")
            normalized.append(a % rank)
        if len(set(normalized)) != len(normalized):
            raise ValueError(f"BatchNormalization {self.name}: duplicate axis: {self.axis}")
        axis_to_dim = {a: input_shape[a] for a in normalized}
        for a, dim in axis_to_dim.items():
            if dim is None:
                raise ValueError(f"BatchNormalization {self.name}: input has undefined `axis` "
                                 f"dimension {a}. Received input with shape {input_shape}.")
        self.axis = normalized if isinstance(self.axis, list) else normalized[0]
        self._axes = normalized
        self._rank = rank
        self.input_spec = InputSpec(ndim=rank, axes=axis_to_dim)
        if len(normalized) == 1:
            param_shape = (axis_to_dim[normalized[0]],)
        else:
            param_shape = tuple(axis_to_dim.get(i, 1) for i in range(rank))
        # Parameters broadcast against the inputs as they are unless the single normalised
        # axis is not the last one.
        self._broadcast_shape = None
        if len(normalized) == 1 and normalized[0] != rank - 1:
            self._broadcast_shape = [axis_to_dim.get(i, 1) for i in range(rank)]
        self._reduction_axes = [i for i in range(rank) if i not in normalized]
        self._use_unbiased_update = (self.fused is not False and rank == 4
                                     and normalized in ([1], [3]))
        if self.scale:
            self.gamma = self.add_weight("gamma", shape=param_shape,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint, trainable=True)
        if self.center:
            self.beta = self.add_weight("beta", shape=param_shape,
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint, trainable=True)
        self.moving_mean = self.add_weight(
            "moving_mean", shape=param_shape, initializer=self.moving_mean_initializer,
            synchronization=VariableSynchronization.ON_READ, trainable=False,
            aggregation=VariableAggregation.MEAN)
        self.moving_variance = self.add_weight(
            "moving_variance", shape=param_shape, initializer=self.moving_variance_initializer,
            synchronization=VariableSynchronization.ON_READ, trainable=False,
            aggregation=VariableAggregation.MEAN)
        self.built = True

    def _broadcast(self, param):
        if self._broadcast_shape is None:
            return param
        return array_ops.reshape(param, self._broadcast_shape)

    def _normalize(self, x, mean, variance):
        """x * inv + (beta - mean * inv), inv = gamma / sqrt(variance + epsilon): two
        elementwise passes over x."""
        inv = math_ops.rsqrt(math_ops.add(variance, self.epsilon))
        if self.scale:
            inv = math_ops.multiply(inv, self._broadcast(self.gamma))
        offset = math_ops.negative(math_ops.multiply(mean, inv))
        if self.center:
            offset = math_ops.add(offset, self._broadcast(self.beta))
        return math_ops.add(math_ops.multiply(x, inv), offset)

    def _training_output(self, x):
        mean = math_ops.reduce_mean(x, self._reduction_axes, keepdims=True)
        variance = math_ops.reduce_mean(
            math_ops.squared_difference(x, array_ops.stop_gradient(mean)),
            self._reduction_axes, keepdims=True)
        outputs = self._normalize(x, mean, variance)
        param_shape = self.moving_mean.shape.as_list()
        batch_mean = array_ops.reshape(mean, param_shape)
        batch_variance = array_ops.reshape(variance, param_shape)
        if self._use_unbiased_update:
            dims = x.shape.as_list()
            reduced = [dims[i] for i in self._reduction_axes]
            if None not in reduced:
                count = int(np.prod(reduced))
                batch_variance = math_ops.multiply(batch_variance, count / max(count - 1, 1))
            else:  # the batch size is only known when the traced function runs
                count = math_ops.divide(math_ops.cast(array_ops.size(x), x.dtype),
                                        float(int(np.prod(param_shape))))
                batch_variance = math_ops.multiply(batch_variance, math_ops.divide(
                    count, math_ops.maximum(math_ops.subtract(count, 1.0), 1.0)))
        decay = 1.0 - self.momentum
        self.moving_mean.assign_sub(math_ops.multiply(
            math_ops.subtract(self.moving_mean, array_ops.stop_gradient(batch_mean)), decay))
        self.moving_variance.assign_sub(math_ops.multiply(
            math_ops.subtract(self.moving_variance, array_ops.stop_gradient(batch_variance)),
            decay))
        return outputs

    def _inference_output(self, x):
        return self._normalize(x, self._broadcast(self.moving_mean),
                               self._broadcast(self.moving_variance))

    def call(self, inputs, training=None):
        # A frozen BatchNormalization runs in inference mode (Keras 2 behaviour).
        training = _training_value(training) if self.trainable else False
        if training is False:
            return self._inference_output(inputs)
        return smart_cond(training, lambda: self._training_output(inputs),
                          lambda: self._inference_output(inputs))

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon,
            "center": self.center, "scale": self.scale,
            "beta_initializer": serialize_initializer(self.beta_initializer),
            "gamma_initializer": serialize_initializer(self.gamma_initializer),
            "moving_mean_initializer": serialize_initializer(self.moving_mean_initializer),
            "moving_variance_initializer": serialize_initializer(
                self.moving_variance_initializer),
            "beta_regularizer": serialize_regularizer(self.beta_regularizer),
            "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
            "beta_constraint": serialize_constraint(self.beta_constraint),
            "gamma_constraint": serialize_constraint(self.gamma_constraint)})
        return config
