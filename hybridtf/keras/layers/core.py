"""Core layers: Dense, Activation, Dropout, Lambda."""
import inspect

from hybridtf.api import array_ops, control_flow_ops, math_ops, nn_ops
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.graph.func_graph import GraphTensor
from hybridtf.keras import activations
from hybridtf.keras.callable_serialization import deserialize_function, serialize_function
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.layer_utils import (kernel_and_bias_config,
                                               set_kernel_and_bias_options)
from hybridtf.keras.layers.input_spec import InputSpec


class Dense(Layer):
    """A densely connected layer: ``activation(inputs @ kernel + bias)``.

    ``kernel`` has shape [input features, units].  Inputs of rank > 2 are multiplied along
    their last axis (``[batch, ..., features]`` -> ``[batch, ..., units]``).
    """

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        try:
            units = int(units)
        except (TypeError, ValueError):
            raise ValueError(f"Dense: received an invalid value for `units`, expected a "
                             f"positive integer. Received: units={units!r}") from None
        if units < 0:
            raise ValueError(f"Dense: received an invalid value for `units`, expected a "
                             f"positive integer. Received: units={units}")
        self.units = units
        set_kernel_and_bias_options(self, "Dense", activation, use_bias, kernel_initializer,
                                    bias_initializer, kernel_regularizer, bias_regularizer,
                                    kernel_constraint, bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        if not self._dtype_object.is_floating:
            raise TypeError(f"A Dense layer can only be built with a floating-point dtype. "
                            f"Received: dtype={self.dtype} (layer {self.name}).")
        input_shape = TensorShape(input_shape)
        last_dim = input_shape[-1] if input_shape.rank else None
        if last_dim is None:
            raise ValueError(f"The last dimension of the inputs to Dense layer {self.name!r} "
                             f"should be defined. Found None. Full input shape received: "
                             f"{input_shape}")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype,
                                      trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype,
                                        trainable=True)
        self.built = True

    def call(self, inputs):
        if inputs.dtype is not self._dtype_object:
            inputs = math_ops.cast(inputs, self._dtype_object)
        if inputs.ndim == 2:
            outputs = math_ops.matmul(inputs, self.kernel)
        else:
            # One matrix product over all leading dimensions.
            leading = inputs.shape.as_list()[:-1]
            flat = array_ops.reshape(inputs, [-1, inputs.shape[-1]])
            outputs = math_ops.matmul(flat, self.kernel)
            if sum(d is None for d in leading) <= 1:
                outputs = array_ops.reshape(outputs, [-1 if d is None else d for d in leading]
                                            + [self.units])
            else:
                outputs = array_ops.reshape(outputs, array_ops.concat(
                    [array_ops.shape(inputs)[:-1], [self.units]], 0))
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not activations.linear:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        input_shape = TensorShape(input_shape)
        if input_shape.rank is None or input_shape[-1] is None:
            raise ValueError(f"The last dimension of the input shape of Dense layer "
                             f"{self.name!r} should be defined. Found None: {input_shape}")
        return TensorShape(input_shape.as_list()[:-1] + [self.units])

    def get_config(self):
        config = super().get_config()
        config["units"] = self.units
        config.update(kernel_and_bias_config(self))
        return config


class Activation(Layer):
    """Applies an activation function (a name such as ``"relu"``, or a callable)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


def _training_value(training):
    """``training`` as a Python bool where it can be (None means inference, as in Keras);
    a symbolic bool tensor is returned as is."""
    if training is None:
        return False
    if isinstance(training, Tensor):
        if isinstance(training, GraphTensor):
            return training
        return bool(training)
    return bool(training)


def smart_cond(pred, true_fn, false_fn):
    """``true_fn()`` / ``false_fn()`` chosen now for Python bools, by ``tf.cond`` for
    symbolic ones."""
    if isinstance(pred, bool):
        return true_fn() if pred else false_fn()
    return control_flow_ops.cond(pred, true_fn, false_fn)


class Dropout(Layer):
    """Sets inputs to 0 with probability ``rate`` and scales the rest by 1 / (1 - rate) --
    only when called with ``training=True``; otherwise returns the inputs unchanged.

    ``noise_shape``: the shape of the keep/drop mask (broadcast over the inputs; None entries
    take the input's size), e.g. ``(batch, 1, features)`` to drop the same features at every
    time step.
    """

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value {rate} received for `rate`, expected a value "
                             f"between 0 and 1 (layer {self.name}).")
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed
        self.supports_masking = True

    def _noise_shape(self, inputs):
        if self.noise_shape is None:
            return None
        concrete = inputs.shape.as_list()
        shape = list(self.noise_shape)
        if len(shape) != len(concrete):
            raise ValueError(f"Dropout layer {self.name}: noise_shape {tuple(shape)} must have "
                             f"the rank of the inputs, shape {tuple(concrete)}.")
        return [concrete[i] if d is None else d for i, d in enumerate(shape)]

    def call(self, inputs, training=None):
        training = _training_value(training)
        if self.rate == 0 or training is False:
            return inputs

        def dropped():
            if self.rate >= 1:
                return math_ops.multiply(inputs, 0.0)
            if None in inputs.shape.as_list() and self.noise_shape is None:
                raise ValueError(
                    f"Dropout layer {self.name}: in training mode the input shape must be fully "
                    f"known, got {inputs.shape} (random masks need a static shape). Trace the "
                    "function with concrete shapes instead of an input_signature with None.")
            return nn_ops.dropout(inputs, rate=self.rate, noise_shape=self._noise_shape(inputs),
                                  seed=self.seed)

        return smart_cond(training, dropped, lambda: array_ops.identity(inputs))

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed})
        return config


class Lambda(Layer):
    """Wraps a function of the inputs as a layer: ``Lambda(lambda x: x ** 2)``.

    ``arguments``: extra keyword arguments for the function; ``output_shape``: a shape (without
    the batch dimension) or a function of the input shape, used by ``compute_output_shape``.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {function!r}.")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape_spec = output_shape
        self.mask = mask
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._fn_takes_training = "training" in params

    def call(self, inputs, training=None):
        kwargs = dict(self.arguments)
        if self._fn_takes_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_output_shape(self, input_shape):
        spec = self._output_shape_spec
        if spec is None:
            return super().compute_output_shape(input_shape)
        if callable(spec):
            return TensorShape(spec(input_shape))
        return TensorShape([TensorShape(input_shape)[0]] + list(spec))

    def compute_mask(self, inputs, mask=None):
        return self.mask(inputs, mask) if callable(self.mask) else self.mask

    def get_config(self):
        """Keras 3's config: a lambda is saved as Python bytecode, which ``load_model`` runs
        only with ``safe_mode=False``; a named function by name (see
        ``keras.callable_serialization``)."""
        config = super().get_config()
        config["function"] = serialize_function(self.function, self.name)
        if self._output_shape_spec is not None:
            config["output_shape"] = serialize_function(self._output_shape_spec, self.name) \
                if callable(self._output_shape_spec) else list(self._output_shape_spec)
        if callable(self.mask):
            config["mask"] = serialize_function(self.mask, self.name)
        elif self.mask is not None:
            config["mask"] = self.mask
        config["arguments"] = self.arguments
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=None):
        """Rebuilds the layer.  A lambda's bytecode is refused in safe mode: ``safe_mode``
        when given, else the setting of the load under way (safe unless
        ``load_model(..., safe_mode=False)``)."""
        config = dict(config)
        name = config.get("name", "lambda")
        config["function"] = deserialize_function(config["function"], custom_objects,
                                                  safe_mode, name)
        for key in ("output_shape", "mask"):
            if isinstance(config.get(key), (dict, str)):
                config[key] = deserialize_function(config[key], custom_objects, safe_mode, name)
        if isinstance(config.get("output_shape"), list):
            config["output_shape"] = tuple(config["output_shape"])
        return cls(**config)
