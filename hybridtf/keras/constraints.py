"""``tf.keras.constraints``: projections applied to a weight after each optimizer update.

Layers take them as ``kernel_constraint=`` / ``bias_constraint=`` (an object, a name such as
``"max_norm"``, or a config dict); the weight variable keeps it as ``variable.constraint``,
and the optimizer assigns ``constraint(variable)`` to the variable right after updating it.

Norms are taken along ``axis`` (an int or a list of ints): for a ``Dense`` kernel
``[inputs, units]`` the default ``axis=0`` constrains each unit's incoming weight vector; for a
``Conv2D`` kernel ``[h, w, in, filters]`` use ``axis=[0, 1, 2]`` to constrain each filter.
"""
from hybridtf.api import math_ops
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.keras import backend, serialization

_MODULE = "keras.constraints"


def _tensor(w):
    return convert_to_tensor(w.value() if getattr(w, "_is_variable", False) else w)


def _axis(axis):
    return list(axis) if isinstance(axis, (list, tuple)) else axis


def _norms(w, axis):
    return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(w), axis=_axis(axis),
                                             keepdims=True))


class Constraint:
    """Base class of weight constraints: ``constraint(w)`` returns the projected weight (the
    base class returns ``w`` unchanged)."""

    def __call__(self, w):
        return w

    def get_config(self):
        """The constructor arguments, as a dict."""
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class MaxNorm(Constraint):
    """Rescales the weight vectors along ``axis`` whose L2 norm exceeds ``max_value`` down to
    that norm: ``w * clip(norm, 0, max_value) / (epsilon + norm)``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        w = _tensor(w)
        norms = _norms(w, self.axis)
        desired = math_ops.clip_by_value(norms, 0.0, float(self.max_value))
        return w * (desired / (backend.epsilon() + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Sets negative weights to zero: ``maximum(w, 0)``."""

    def __call__(self, w):
        w = _tensor(w)
        return math_ops.maximum(w, math_ops.cast(0, w.dtype))


class UnitNorm(Constraint):
    """Rescales the weight vectors along ``axis`` to unit L2 norm:
    ``w / (epsilon + norm)``."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = _tensor(w)
        return w / (backend.epsilon() + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves the L2 norm of each weight vector along ``axis`` into
    ``[min_value, max_value]``, at ``rate`` (1.0: at once): the new norm is
    ``rate * clip(norm, min_value, max_value) + (1 - rate) * norm``."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        if min_value > max_value:
            raise ValueError(f"MinMaxNorm: min_value ({min_value}) must not exceed max_value "
                             f"({max_value}).")
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        w = _tensor(w)
        norms = _norms(w, self.axis)
        clipped = math_ops.clip_by_value(norms, float(self.min_value), float(self.max_value))
        desired = self.rate * clipped + (1.0 - self.rate) * norms
        return w * (desired / (backend.epsilon() + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


# Keras's lower-case aliases are the classes themselves.
max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm

_BY_NAME = {"Constraint": Constraint, "MaxNorm": MaxNorm, "NonNeg": NonNeg,
            "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm, "constraint": Constraint,
            "max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm}


def serialize(constraint):
    """Keras 3's description of a constraint: ``{"module": "keras.constraints", "class_name":
    ..., "config": ..., "registered_name": ...}`` (a function by name)."""
    return serialization.serialize_keras_object(constraint, _MODULE, "constraint")


def deserialize(config, custom_objects=None):
    """The constraint ``serialize`` described (Keras 2's ``{"class_name", "config"}`` too)."""
    return serialization.deserialize_keras_object(config, _BY_NAME, "constraint",
                                                  custom_objects)


def get(identifier):
    """A constraint from ``identifier``: None, a name (``"max_norm"``, ``"NonNeg"``, ...), a
    config dict, a class (instantiated with its defaults), or a callable ``f(w) -> w``."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"Could not interpret constraint identifier: {identifier!r}. Known "
                             f"names: {sorted(_BY_NAME)}.")
        return cls()
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}; pass a "
                     "Constraint, a name such as 'max_norm', a config dict or a callable "
                     "f(w) -> projected w.")
