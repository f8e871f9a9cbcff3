"""Activation layers with their own arguments or weights: ReLU, LeakyReLU, PReLU, ELU, Softmax."""
import warnings

from hybridtf.api import array_ops, math_ops
from hybridtf.eager.execute import as_tensor
from hybridtf.framework import dtypes
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import activations, initializers
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.input_spec import InputSpec
from hybridtf.keras.layers.layer_utils import (axis_argument, get_constraint, get_regularizer,
                                               serialize_constraint, serialize_initializer,
                                               serialize_regularizer)


def _non_negative(value, what, layer_class, allow_none=False):
    if value is None and allow_none:
        return None
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
            or value < 0:
        raise ValueError(f"{what} of a {layer_class} layer cannot be None or a negative "
                         f"value; expected a float >= 0. Received: {what}={value!r}")
    return value


class _ElementwiseActivation(Layer):
    """Shape-preserving activation layers: masks pass through, the output shape is the
    input shape."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


class ReLU(_ElementwiseActivation):
    """Rectified linear unit: ``x`` for ``threshold < x < max_value``, clipped at
    ``max_value``, and ``negative_slope * (x - threshold)`` for ``x <= threshold``."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = _non_negative(max_value, "max_value", "ReLU", allow_none=True)
        self.negative_slope = _non_negative(negative_slope, "negative_slope", "ReLU")
        self.threshold = _non_negative(threshold, "threshold", "ReLU")

    def call(self, inputs):
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def get_config(self):
        config = super().get_config()
        config.update({"max_value": self.max_value, "negative_slope": self.negative_slope,
                       "threshold": self.threshold})
        return config


class LeakyReLU(_ElementwiseActivation):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise (default slope 0.3).  The
    Keras 2 name ``alpha`` is still accepted, with a deprecation warning."""

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
            warnings.warn("LeakyReLU: argument `alpha` is deprecated. Use `negative_slope` "
                          "instead.", DeprecationWarning, stacklevel=2)
        super().__init__(**kwargs)
        self.negative_slope = _non_negative(negative_slope, "negative_slope", "LeakyReLU")

    def call(self, inputs):
        return activations.leaky_relu(inputs, alpha=self.negative_slope)

    def get_config(self):
        config = super().get_config()
        config["negative_slope"] = self.negative_slope
        return config


class ELU(_ElementwiseActivation):
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def get_config(self):
        config = super().get_config()
        config["alpha"] = self.alpha
        return config


class PReLU(_ElementwiseActivation):
    """Leaky ReLU with a learned slope: ``x`` for ``x >= 0``, ``alpha * x`` otherwise.

    ``alpha`` has the shape of one example (the input shape without the batch axis), with
    size 1 along each of ``shared_axes`` (1-based axes of the inputs, e.g. ``[1, 2]`` to share
    one slope per channel across the height and width of images).
    """

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = get_regularizer(alpha_regularizer, "PReLU")
        self.alpha_constraint = get_constraint(alpha_constraint, "PReLU")
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]
        self.alpha = None

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        param_shape = list(dims[1:])
        for axis in self.shared_axes or ():
            if not 1 <= axis < len(dims):
                raise ValueError(f"PReLU {self.name}: shared_axes entries must be axes 1 to "
                                 f"{len(dims) - 1} of the inputs (shape {tuple(dims)}). "
                                 f"Received: shared_axes={self.shared_axes}")
            param_shape[axis - 1] = 1
        if None in param_shape:
            raise ValueError(f"PReLU {self.name}: every non-batch dimension that is not in "
                             f"shared_axes must be known; input shape {tuple(dims)}, "
                             f"shared_axes={self.shared_axes}.")
        self.alpha = self.add_weight("alpha", shape=param_shape,
                                     initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint, trainable=True)
        shared = set(self.shared_axes or ())
        self.input_spec = InputSpec(ndim=len(dims), axes={
            i: dims[i] for i in range(1, len(dims)) if i not in shared})
        self.built = True

    def call(self, inputs):
        negative = math_ops.multiply(self.alpha, math_ops.relu(math_ops.negative(inputs)))
        return math_ops.subtract(math_ops.relu(inputs), negative)

    def get_config(self):
        config = super().get_config()
        config.update({
            "alpha_initializer": serialize_initializer(self.alpha_initializer),
            "alpha_regularizer": serialize_regularizer(self.alpha_regularizer),
            "alpha_constraint": serialize_constraint(self.alpha_constraint),
            "shared_axes": self.shared_axes})
        return config


def large_negative_number(dtype):
    """The value masked logits are set to: small enough that exp() of it vanishes next to
    the others, yet finite in ``dtype``."""
    return -3e4 if dtypes.as_dtype(dtype) is dtypes.float16 else -1e9


class Softmax(_ElementwiseActivation):
    """Softmax along ``axis`` (an int, or a list of axes normalised together).

    ``mask`` (call argument, broadcastable to the inputs; True or > 0.5 keeps a position):
    masked positions get probability 0, and the others share the whole mass.
    """

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis_argument(axis, "Softmax")

    def call(self, inputs, mask=None):
        if mask is not None:
            mask = self._checked_mask(inputs, mask)
            inputs = math_ops.where(mask, inputs, large_negative_number(inputs.dtype))
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        if len(axes) > 1:
            outputs = math_ops.exp(math_ops.subtract(
                inputs, math_ops.reduce_logsumexp(inputs, axis=axes, keepdims=True)))
        else:
            outputs = activations.softmax(inputs, axis=axes[0])
        if mask is not None:
            # A fully masked axis would otherwise come out uniform.
            outputs = math_ops.where(mask, outputs, array_ops.zeros_like(outputs))
        return outputs

    def _checked_mask(self, inputs, mask):
        mask = as_tensor(mask)
        mask_dims, input_dims = mask.shape.as_list(), inputs.shape.as_list()
        compatible = len(mask_dims) <= len(input_dims) and all(
            m is None or i is None or m in (1, i)
            for m, i in zip(mask_dims[::-1], input_dims[::-1]))
        if not compatible:
            raise ValueError(f"Softmax {self.name}: the mask must be broadcastable to the "
                             f"inputs (each mask dimension 1 or equal to the input's, and no "
                             f"more dimensions). Received: inputs.shape={tuple(input_dims)}, "
                             f"mask.shape={tuple(mask_dims)}")
        if mask.dtype is not dtypes.bool:
            mask = math_ops.greater(mask, math_ops.cast(0.5, mask.dtype))
        return mask     # broadcast against the inputs by where()

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config
