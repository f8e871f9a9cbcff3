"""``tf.keras.regularizers``: penalties on weights (and layer outputs) added to the loss.

A regularizer is called on a tensor and returns a scalar loss.  Layers take them as
``kernel_regularizer=`` / ``bias_regularizer=`` / ``activity_regularizer=`` (an object, a
name such as ``"l2"``, a config dict, or any callable ``f(weight) -> scalar``); the penalties
of the weights appear in ``layer.losses`` and ``model.losses``, and ``fit`` (through
``compute_loss``) adds them to the training loss.  An activity regularizer's penalty is divided
by the batch size, as Keras does.

Names: ``"l1"`` and ``"l2"`` give ``L1()`` / ``L2()`` (factor 0.01); ``"l1_l2"`` gives
``L1L2(l1=0.01, l2=0.01)`` (the string Keras documents); the class names and their snake-case
forms (``"L1L2"``, ``"l1l2"``, ``"orthogonal_regularizer"``) give the class with its defaults
(``L1L2()`` penalises nothing: both factors default to 0).
"""
import math

from hybridtf.api import array_ops, math_ops
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.keras import serialization

_MODULE = "keras.regularizers"


def _factor(value, name):
    """A penalty factor: a finite, non-negative Python number (as Keras checks it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value < 0:
        raise ValueError(f"Invalid value for argument {name}: expected a non-negative float. "
                         f"Received: {name}={value!r}")
    return float(value)


def _as_float_tensor(x):
    x = convert_to_tensor(x.value() if getattr(x, "_is_variable", False) else x)
    if not x.dtype.is_floating:
        x = math_ops.cast(x, "float32")
    return x


class Regularizer:
    """Base class of regularizers: ``regularizer(x)`` returns a scalar penalty (0 for the
    base class).  Subclasses define ``__call__`` and ``get_config``."""

    def __call__(self, x):
        return 0.0

    def get_config(self):
        """The constructor arguments, as a dict."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_config(); "
                                  "define it to save models that use this regularizer.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        try:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        except NotImplementedError:
            args = ""
        return f"{type(self).__name__}({args})"


class L1L2(Regularizer):
    """``l1 * reduce_sum(abs(x)) + l2 * reduce_sum(square(x))``."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _factor(0.0 if l1 is None else l1, "l1")
        self.l2 = _factor(0.0 if l2 is None else l2, "l2")

    def __call__(self, x):
        x = _as_float_tensor(x)
        loss = array_ops.zeros([], x.dtype)
        if self.l1:
            loss = loss + math_ops.cast(self.l1, x.dtype) * math_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            loss = loss + math_ops.cast(self.l2, x.dtype) * math_ops.reduce_sum(
                math_ops.square(x))
        return loss

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """``l1 * reduce_sum(abs(x))``."""

    def __init__(self, l1=0.01):
        self.l1 = _factor(0.01 if l1 is None else l1, "l1")

    def __call__(self, x):
        x = _as_float_tensor(x)
        return math_ops.cast(self.l1, x.dtype) * math_ops.reduce_sum(math_ops.abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * reduce_sum(square(x))``."""

    def __init__(self, l2=0.01):
        self.l2 = _factor(0.01 if l2 is None else l2, "l2")

    def __call__(self, x):
        x = _as_float_tensor(x)
        return math_ops.cast(self.l2, x.dtype) * math_ops.reduce_sum(math_ops.square(x))

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (``mode="rows"``) or columns (``mode="columns"``) of a rank-2 weight
    towards being orthogonal: ``factor`` times the mean absolute dot product of the
    L2-normalized rows (columns) over all distinct pairs."""

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _factor(factor, "factor")
        if mode not in ("rows", "columns"):
            raise ValueError(f'Invalid value for argument `mode`. Expected one of {{"rows", '
                             f'"columns"}}. Received: mode={mode!r}')
        self.mode = mode

    def __call__(self, x):
        x = _as_float_tensor(x)
        if x.shape.rank != 2:
            raise ValueError(f"Inputs to OrthogonalRegularizer must have rank 2. Received: "
                             f"inputs.shape={x.shape}")
        if self.mode == "columns":
            x = array_ops.transpose(x)
        size = x.shape[0]
        if size is None:
            raise ValueError(f"OrthogonalRegularizer: the number of {self.mode} must be known, "
                             f"got inputs.shape={x.shape}.")
        if size < 2:
            return array_ops.zeros([], x.dtype)     # no pair of vectors to compare
        squares = math_ops.reduce_sum(math_ops.square(x), axis=1, keepdims=True)
        unit = x / math_ops.sqrt(math_ops.maximum(squares, math_ops.cast(1e-12, x.dtype)))
        product = math_ops.matmul(unit, array_ops.transpose(unit))
        off_diagonal = product * (1.0 - array_ops.eye(size, dtype=x.dtype))
        pairs = size * (size - 1) / 2.0
        return math_ops.cast(self.factor * 0.5 / pairs, x.dtype) * math_ops.reduce_sum(
            math_ops.abs(off_diagonal))

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


# Keras 3's lower-case aliases are the classes themselves (``l1_l2(l1=0.1)`` has l2=0).
l1 = L1
l2 = L2
l1_l2 = L1L2
orthogonal_regularizer = OrthogonalRegularizer

_BY_NAME = {"Regularizer": Regularizer, "L1": L1, "L2": L2, "L1L2": L1L2,
            "OrthogonalRegularizer": OrthogonalRegularizer, "regularizer": Regularizer,
            "l1": L1, "l2": L2, "l1l2": L1L2, "orthogonal_regularizer": OrthogonalRegularizer}


def serialize(regularizer):
    """Keras 3's description of a regularizer: ``{"module": "keras.regularizers",
    "class_name": ..., "config": ..., "registered_name": ...}`` (a function by name)."""
    return serialization.serialize_keras_object(regularizer, _MODULE, "regularizer")


def deserialize(config, custom_objects=None):
    """The regularizer ``serialize`` described (Keras 2's ``{"class_name", "config"}`` too)."""
    return serialization.deserialize_keras_object(config, _BY_NAME, "regularizer",
                                                  custom_objects)


def get(identifier):
    """A regularizer from ``identifier``: None, a name (``"l1"``, ``"l2"``, ``"l1_l2"``,
    ``"L1L2"``, ``"orthogonal_regularizer"``, ...), a config dict, a class (instantiated with
    its defaults), or a callable (returned as is)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier == "l1_l2":
            return L1L2(l1=0.01, l2=0.01)
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}. "
                             f"Known names: {sorted(_BY_NAME) + ['l1_l2']}.")
        return cls()
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}; pass a "
                     "Regularizer, a name such as 'l2', a config dict or a callable "
                     "f(weight) -> scalar loss.")
