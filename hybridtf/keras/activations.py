"""``tf.keras.activations``: activation functions, by name or as callables.

Each is a composition of hybridtf ops, so it runs eagerly, inside a traced ``tf.function``
(where the elementwise pieces fuse into one loop) and under ``GradientTape``.
"""
import math as _math

from hybridtf.api import math_ops, nn_ops
from hybridtf.eager.execute import as_tensor

# SELU's constants (Klambauer et al., 2017), as Keras uses them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def linear(x):
    """The identity: returns ``x`` unchanged."""
    return x


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """max(x, 0); with ``alpha``, ``alpha * (x - threshold)`` below ``threshold``; with
    ``max_value``, clipped from above."""
    x = as_tensor(x)
    if alpha == 0 and max_value is None and threshold == 0:
        return math_ops.relu(x)
    if threshold != 0:
        positive = math_ops.where(math_ops.greater(x, threshold), x, math_ops.multiply(x, 0.0))
    else:
        positive = math_ops.relu(x)
    if max_value is not None:
        positive = math_ops.minimum(positive, max_value)
    if alpha != 0:
        negative = math_ops.relu(math_ops.subtract(threshold, x))
        positive = math_ops.subtract(positive, math_ops.multiply(negative, alpha))
    return positive


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return math_ops.sigmoid(x)


def tanh(x):
    """Hyperbolic tangent."""
    return math_ops.tanh(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis`` (the last by default); x must have rank >= 2."""
    x = as_tensor(x)
    if x.ndim is not None and x.ndim < 2:
        raise ValueError(f"softmax: cannot apply softmax to a tensor of rank {x.ndim} (shape "
                         f"{x.shape}); the input must have rank >= 2, e.g. [batch, classes].")
    return nn_ops.softmax(x, axis=axis)


def elu(x, alpha=1.0):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere."""
    x = as_tensor(x)
    if alpha == 1.0:
        return nn_ops.elu(x)
    return math_ops.where(math_ops.greater(x, 0.0), x,
                          math_ops.multiply(math_ops.expm1(math_ops.minimum(x, 0.0)), alpha))


def selu(x):
    """Scaled ELU: scale * elu(x, alpha) with Klambauer et al.'s constants."""
    return math_ops.multiply(elu(x, _SELU_ALPHA), _SELU_SCALE)


def softplus(x):
    """log(exp(x) + 1), computed stably."""
    return math_ops.softplus(x)


def softsign(x):
    """x / (|x| + 1)."""
    x = as_tensor(x)
    return math_ops.divide(x, math_ops.add(math_ops.abs(x), 1.0))


def swish(x):
    """x * sigmoid(x) (also called SiLU)."""
    x = as_tensor(x)
    return math_ops.multiply(x, math_ops.sigmoid(x))


silu = swish


def _erf(x):
    """erf(x) to within 1.5e-7 (Abramowitz & Stegun 7.1.26), from existing ops."""
    t = math_ops.reciprocal(math_ops.add(math_ops.multiply(math_ops.abs(x), 0.3275911), 1.0))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
        -1.453152027 + t * 1.061405429))))
    magnitude = 1.0 - poly * math_ops.exp(math_ops.negative(math_ops.square(x)))
    return math_ops.sign(x) * magnitude


def gelu(x, approximate=False):
    """Gaussian error linear unit: x * P(X <= x) for X ~ N(0, 1); with ``approximate=True``
    the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    x = as_tensor(x)
    if approximate:
        inner = (x + 0.044715 * x * x * x) * _math.sqrt(2.0 / _math.pi)
        return 0.5 * x * (1.0 + math_ops.tanh(inner))
    return 0.5 * x * (1.0 + _erf(x * (1.0 / _math.sqrt(2.0))))


def exponential(x):
    """exp(x)."""
    return math_ops.exp(x)


def hard_sigmoid(x):
    """A piecewise linear sigmoid: clip(0.2 * x + 0.5, 0, 1)."""
    x = as_tensor(x)
    return math_ops.clip_by_value(math_ops.add(math_ops.multiply(x, 0.2), 0.5), 0.0, 1.0)


def leaky_relu(x, alpha=0.3):
    """x where x > 0, alpha * x elsewhere (Keras's LeakyReLU default alpha=0.3)."""
    return nn_ops.leaky_relu(x, alpha=alpha)


def relu6(x):
    """min(max(x, 0), 6)."""
    return nn_ops.relu6(x)


def mish(x):
    """x * tanh(softplus(x))."""
    x = as_tensor(x)
    return math_ops.multiply(x, math_ops.tanh(math_ops.softplus(x)))


_BY_NAME = {fn.__name__: fn for fn in (
    linear, relu, sigmoid, tanh, softmax, elu, selu, softplus, softsign, swish, gelu,
    exponential, hard_sigmoid, leaky_relu, relu6, mish)}
_BY_NAME["silu"] = swish


def serialize(activation):
    """The name of a built-in activation (the function's name for other callables)."""
    if activation is None:
        return "linear"
    name = getattr(activation, "__name__", None)
    if name is None:
        raise ValueError(f"serialize: {activation!r} is not an activation function.")
    return name


def deserialize(name, custom_objects=None):
    """The activation function called ``name`` (also looked up in ``custom_objects``)."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"Unknown activation function {name!r} cannot be deserialized; "
                         f"known names are {sorted(_BY_NAME)}, or pass a callable.") from None


def get(identifier):
    """An activation function from a name, a callable (returned as is) or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return deserialize(identifier)
    if isinstance(identifier, dict) and "class_name" in identifier:
        return deserialize(identifier["class_name"])
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}; "
                    "pass a name such as 'relu', a callable, or None.")
