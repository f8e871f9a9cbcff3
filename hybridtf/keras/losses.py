"""``tf.keras.losses``: loss functions and the ``Loss`` classes that weight and reduce them.

Each loss function maps ``(y_true, y_pred)`` to one loss per sample (reduced over the last
axis, as TF does); a ``Loss`` object applies ``sample_weight`` and a ``reduction`` to that.
Cross-entropies use the fused ``tf.nn`` ops, so they stay numerically stable; probabilities are
clipped to ``[epsilon, 1 - epsilon]`` (epsilon 1e-7) as TF's Keras does.
"""
import inspect
import math

import numpy as np

from hybridtf.api import array_ops, math_ops, nn_ops
from hybridtf.framework import dtypes
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.graph.func_graph import GraphTensor
from hybridtf.keras import backend, function_wrappers, serialization
from hybridtf.module import camel_to_snake


def _epsilon():
    """The fuzz factor, ``tf.keras.backend.epsilon()`` (1e-7 unless set)."""
    return backend.epsilon()


# ---- shapes and dtypes --------------------------------------------------------------------------
def _tensor(value, dtype=None):
    """``value`` as a tensor; cast to ``dtype`` when one is given and differs."""
    tensor = convert_to_tensor(value.value() if getattr(value, "_is_variable", False) else value)
    if dtype is not None and tensor.dtype != dtypes.as_dtype(dtype):
        tensor = math_ops.cast(tensor, dtype)
    return tensor


def _shape(tensor):
    return tuple(tensor.shape.as_list()) if tensor.shape.rank is not None else None


def _fmt(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Makes ranks equal when they differ by one trailing dimension of size 1 (Keras' rule):
    ``[batch]`` against ``[batch, 1]`` becomes ``[batch, 1]`` twice (or ``[batch]`` for higher
    ranks, where the size-1 dimension is squeezed)."""
    r1, r2 = x1.shape.rank, x2.shape.rank
    if r1 is None or r2 is None or r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = array_ops.expand_dims(x2, -1)
        else:
            x1 = array_ops.squeeze(x1, -1)
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = array_ops.expand_dims(x1, -1)
        else:
            x2 = array_ops.squeeze(x2, -1)
    return x1, x2


def _regression_pair(fn_name, y_true, y_pred):
    """(y_true, y_pred) as tensors of y_pred's dtype with matching ranks; rejects shapes that do
    not broadcast together, naming the loss and both shapes."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    _check_broadcastable(fn_name, y_true, y_pred)
    return y_true, y_pred


def _check_broadcastable(fn_name, y_true, y_pred):
    st, sp = _shape(y_true), _shape(y_pred)
    if st is None or sp is None:
        return
    for a, b in zip(reversed(st), reversed(sp)):
        if a is not None and b is not None and a != b and a != 1 and b != 1:
            raise InvalidArgumentError(
                None, fn_name,
                f"{fn_name}: y_true and y_pred have incompatible shapes {_fmt(st)} and "
                f"{_fmt(sp)}; they must be equal (or broadcast together). Check that the "
                "labels match the model's output.")


def _check_same_shape(fn_name, y_true, y_pred, hint=""):
    st, sp = _shape(y_true), _shape(y_pred)
    if st is None or sp is None:
        return
    if len(st) != len(sp) or any(a is not None and b is not None and a != b
                                 for a, b in zip(st, sp)):
        raise ValueError(f"{fn_name}: y_true and y_pred must have the same shape, got "
                         f"y_true.shape={_fmt(st)} and y_pred.shape={_fmt(sp)}.{hint}")


# ---- regression losses --------------------------------------------------------------------------
def mean_squared_error(y_true, y_pred):
    """``mean(square(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _regression_pair("mean_squared_error", y_true, y_pred)
    return math_ops.reduce_mean(math_ops.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _regression_pair("mean_absolute_error", y_true, y_pred)
    return math_ops.reduce_mean(math_ops.abs(y_true - y_pred), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(abs((y_true - y_pred) / max(abs(y_true), epsilon)), axis=-1)``."""
    y_true, y_pred = _regression_pair("mean_absolute_percentage_error", y_true, y_pred)
    diff = math_ops.abs((y_true - y_pred) / math_ops.maximum(math_ops.abs(y_true), _epsilon()))
    return 100.0 * math_ops.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean(square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)), axis=-1)``."""
    y_true, y_pred = _regression_pair("mean_squared_logarithmic_error", y_true, y_pred)
    eps = _epsilon()
    first_log = math_ops.log(math_ops.maximum(y_pred, eps) + 1.0)
    second_log = math_ops.log(math_ops.maximum(y_true, eps) + 1.0)
    return math_ops.reduce_mean(math_ops.square(first_log - second_log), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """Quadratic for errors up to ``delta``, linear beyond: ``0.5 * e^2`` or
    ``delta * |e| - 0.5 * delta^2``, averaged over the last axis."""
    y_true, y_pred = _regression_pair("huber", y_true, y_pred)
    delta = float(delta)
    error = y_pred - y_true
    abs_error = math_ops.abs(error)
    quadratic = 0.5 * math_ops.square(error)
    linear = delta * abs_error - 0.5 * delta * delta
    return math_ops.reduce_mean(math_ops.where(abs_error <= delta, quadratic, linear), axis=-1)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, computed without overflow."""
    y_true, y_pred = _regression_pair("log_cosh", y_true, y_pred)
    x = y_pred - y_true
    return math_ops.reduce_mean(x + math_ops.softplus(-2.0 * x) - math.log(2.0), axis=-1)


def _hinge_labels(y_true):
    """Labels in {0, 1} become {-1, 1}; other labels are used as given (Keras' rule)."""
    binary = math_ops.reduce_all(math_ops.logical_or(math_ops.equal(y_true, 0.0),
                                                     math_ops.equal(y_true, 1.0)))
    return math_ops.where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    """``mean(maximum(1 - y_true * y_pred, 0), axis=-1)``; labels in {0, 1} are mapped to
    {-1, 1}."""
    y_pred = _tensor(y_pred)
    y_true = _hinge_labels(_tensor(y_true, y_pred.dtype))
    _check_broadcastable("hinge", y_true, y_pred)
    return math_ops.reduce_mean(math_ops.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)``."""
    y_pred = _tensor(y_pred)
    y_true = _hinge_labels(_tensor(y_true, y_pred.dtype))
    _check_broadcastable("squared_hinge", y_true, y_pred)
    return math_ops.reduce_mean(math_ops.square(math_ops.maximum(1.0 - y_true * y_pred, 0.0)),
                                axis=-1)


def categorical_hinge(y_true, y_pred):
    """``maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` over the last
    axis."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    _check_broadcastable("categorical_hinge", y_true, y_pred)
    pos = math_ops.reduce_sum(y_true * y_pred, axis=-1)
    neg = math_ops.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return math_ops.maximum(neg - pos + 1.0, 0.0)


def kl_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to ``[epsilon, 1]``."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    _check_broadcastable("kl_divergence", y_true, y_pred)
    eps = _epsilon()
    y_true = math_ops.clip_by_value(y_true, eps, 1.0)
    y_pred = math_ops.clip_by_value(y_pred, eps, 1.0)
    return math_ops.reduce_sum(y_true * math_ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + epsilon), axis=-1)``."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    _check_broadcastable("poisson", y_true, y_pred)
    return math_ops.reduce_mean(y_pred - y_true * math_ops.log(y_pred + _epsilon()), axis=-1)


# ---- cross-entropies ----------------------------------------------------------------------------
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Cross-entropy between one-hot (or soft) labels and predicted class probabilities.

    ``y_pred`` holds probabilities (rescaled to sum to 1 and clipped to
    ``[epsilon, 1 - epsilon]``), or logits with ``from_logits=True``.  Returns one loss per
    sample: the shape of ``y_pred`` without ``axis``.
    """
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"categorical_crossentropy: `axis` must be an int, got {axis!r}.")
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    if y_pred.shape.rank == 0 or y_true.shape.rank == 0:
        raise ValueError("categorical_crossentropy: y_true and y_pred must have rank >= 1, got "
                         f"shapes {_fmt(_shape(y_true))} and {_fmt(_shape(y_pred))}.")
    _check_same_shape("categorical_crossentropy", y_true, y_pred,
                      " For integer class labels use sparse_categorical_crossentropy.")
    if label_smoothing:
        classes = y_pred.shape[axis]
        if classes is None:  # unknown while tracing: read it at run time
            classes = math_ops.cast(array_ops.shape(y_pred)[axis], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    eps = _epsilon()
    probs = y_pred / math_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    probs = math_ops.clip_by_value(probs, eps, 1.0 - eps)
    return -math_ops.reduce_sum(y_true * math_ops.log(probs), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Cross-entropy between integer class labels and predicted class probabilities.

    ``y_true``: class indices in ``[0, classes)``, shaped like ``y_pred`` without its last
    axis (a trailing dimension of size 1 is squeezed).  ``y_pred``: probabilities (clipped to
    ``[epsilon, 1 - epsilon]``), or logits with ``from_logits=True``.  Labels equal to
    ``ignore_class`` get a loss of 0.
    """
    name = "sparse_categorical_crossentropy"
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    rank = y_pred.shape.rank
    if rank == 0:
        raise ValueError(f"{name}: y_pred must have rank >= 1 (a class dimension), got a "
                         "scalar.")
    if axis != -1 and axis != rank - 1:
        raise ValueError(f"{name}: only axis=-1 (the last axis of y_pred) is supported, got "
                         f"axis={axis}.")
    if y_true.shape.rank == rank and y_true.shape[-1] == 1:
        y_true = array_ops.squeeze(y_true, -1)
    st, sp = _shape(y_true), _shape(y_pred)
    if len(st) != len(sp) - 1 or any(a is not None and b is not None and a != b
                                     for a, b in zip(st, sp[:-1])):
        raise ValueError(
            f"{name}: y_true must have the shape of y_pred without its last (class) dimension, "
            f"got y_true.shape={_fmt(st)} and y_pred.shape={_fmt(sp)}. If y_true is one-hot, "
            "use categorical_crossentropy.")
    if y_true.dtype.is_floating:
        y_true = math_ops.cast(y_true, dtypes.int64)
    valid = None
    if ignore_class is not None:
        valid = math_ops.not_equal(y_true, math_ops.cast(ignore_class, y_true.dtype))
        y_true = math_ops.where(valid, y_true, array_ops.zeros_like(y_true))
    _check_label_range(name, y_true, sp[-1])
    if not from_logits:
        eps = _epsilon()
        y_pred = math_ops.log(math_ops.clip_by_value(y_pred, eps, 1.0 - eps))
    loss = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    if valid is not None:
        loss = math_ops.where(valid, loss, array_ops.zeros_like(loss))
    return loss


def _check_label_range(fn_name, labels, classes):
    """Eagerly, names the first label outside ``[0, classes)`` (inside a traced function the
    cross-entropy op checks the labels when it runs)."""
    if classes is None or isinstance(labels, GraphTensor):
        return
    values = labels.numpy()
    bad = (values < 0) | (values >= classes)
    if values.size and bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidArgumentError(
            None, fn_name,
            f"{fn_name}: y_true{list(index)} = {values[index]} is not a valid class index: "
            f"y_pred has {classes} classes (its last dimension), so labels must be in "
            f"[0, {classes}).")


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Cross-entropy between binary labels and predicted probabilities (or logits with
    ``from_logits=True``), averaged over ``axis``."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    _check_same_shape("binary_crossentropy", y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        elementwise = nn_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        eps = _epsilon()
        probs = math_ops.clip_by_value(y_pred, eps, 1.0 - eps)
        bce = y_true * math_ops.log(probs)
        bce = bce + (1.0 - y_true) * math_ops.log(1.0 - probs)
        elementwise = -bce
    return math_ops.reduce_mean(elementwise, axis=axis)


# TF's short names.
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh


# ---- reduction ----------------------------------------------------------------------------------
class Reduction:
    """The names of the ways a ``Loss`` reduces per-sample losses (``tf.keras.losses.Reduction``).

    ``AUTO`` and ``SUM_OVER_BATCH_SIZE``: the sum divided by the number of elements; ``SUM``:
    the sum; ``NONE``: no reduction.
    """

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in _REDUCTIONS:
            raise ValueError(f"Invalid Reduction Key: {key}. Expected keys are "
                             f"{sorted(k for k in _REDUCTIONS if k is not None)}.")


_REDUCTIONS = {"auto", "sum_over_batch_size", "sum", "none", None, "mean",
               "mean_with_sample_weight"}


def standardize_reduction(reduction):
    """The reduction name, with ``"auto"`` read as ``"sum_over_batch_size"``."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid value for argument `reduction`: {reduction!r}. Expected one of "
                         "'sum_over_batch_size' (also 'auto'), 'sum', 'none' (or None), 'mean', "
                         "'mean_with_sample_weight'.")
    return "sum_over_batch_size" if reduction == "auto" else reduction


def reduce_weighted_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    """Weights ``values`` by ``sample_weight`` (broadcast against them) and reduces them."""
    reduction = standardize_reduction(reduction)
    values = _tensor(values)
    if sample_weight is not None:
        sample_weight = _tensor(sample_weight, values.dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        _check_sample_weight(values, sample_weight)
        values = values * sample_weight
    if reduction in (None, "none"):
        return values
    shape = _shape(values)
    if shape == () or shape == (0,):
        return values
    total = math_ops.reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = math_ops.reduce_sum(sample_weight)
    else:
        divisor = math_ops.cast(array_ops.size(values), total.dtype)
    return math_ops.div_no_nan(total, divisor)


def _check_sample_weight(values, sample_weight):
    sv, sw = _shape(values), _shape(sample_weight)
    if sv is None or sw is None:
        return
    if any(a is not None and b is not None and a != b and a != 1 and b != 1
           for a, b in zip(reversed(sv), reversed(sw))):
        raise ValueError(f"sample_weight of shape {_fmt(sw)} does not broadcast to the losses' "
                         f"shape {_fmt(sv)}; give one weight per sample (shape "
                         f"{_fmt(sv[:1])}) or a scalar.")


# ---- loss objects -------------------------------------------------------------------------------
class Loss:
    """Base class of loss objects (``tf.keras.losses.Loss``).

    Subclasses implement ``call(y_true, y_pred)``, returning per-sample losses; calling the
    object converts both to the loss's ``dtype`` (float32 by default), applies
    ``sample_weight`` and reduces with ``reduction``: ``"sum_over_batch_size"`` (the default;
    TF's ``"auto"`` means the same), ``"sum"``, ``"mean"``, ``"mean_with_sample_weight"`` or
    ``"none"``.
    """

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        self.name = name or camel_to_snake(type(self).__name__)
        self.reduction = standardize_reduction(reduction)
        self._dtype = dtypes.as_dtype(dtype or "float32")

    @property
    def dtype(self):
        """The dtype the inputs are converted to, as a string (``"float32"``)."""
        return self._dtype.name

    def __call__(self, y_true, y_pred, sample_weight=None):
        y_pred = _tensor(y_pred, self._dtype)
        y_true = _tensor(y_true, self._dtype)
        losses = self.call(y_true, y_pred)
        mask = self._mask(y_true, y_pred)
        if mask is not None:
            sample_weight = _mask_weights(mask, sample_weight, losses, self.reduction)
        return reduce_weighted_values(losses, sample_weight, self.reduction)

    def call(self, y_true, y_pred):
        """The per-sample losses; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred).")

    def _mask(self, y_true, y_pred):
        """A boolean tensor shaped like the losses marking those that count, or None."""
        return None

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _mask_weights(mask, sample_weight, losses, reduction):
    """Folds a mask into the sample weights; for averaging reductions the kept losses are scaled
    so that the mean is over the kept ones only (as Keras does)."""
    dtype = losses.dtype
    float_mask = math_ops.cast(mask, dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = math_ops.cast(array_ops.size(float_mask), dtype)
        float_mask = float_mask * math_ops.div_no_nan(total, math_ops.reduce_sum(float_mask))
    if sample_weight is None:
        return float_mask
    sample_weight = _tensor(sample_weight, dtype)
    float_mask, sample_weight = squeeze_or_expand_to_same_rank(float_mask, sample_weight)
    return sample_weight * float_mask


class LossFunctionWrapper(Loss):
    """A ``Loss`` built from a loss function ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", None),
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        return config

    def __repr__(self):
        return f"<LossFunctionWrapper({getattr(self.fn, '__name__', self.fn)}, " \
               f"kwargs={self._fn_kwargs})>"


def _wrapper_class(class_name, fn, default_name, doc, **defaults):
    """A ``LossFunctionWrapper`` subclass whose constructor takes ``defaults`` as keyword
    arguments (in order) before ``reduction``, ``name`` and ``dtype``."""
    return function_wrappers.wrapper_class(
        class_name, LossFunctionWrapper, fn, doc,
        [("reduction", "sum_over_batch_size"), ("name", default_name), ("dtype", None)],
        defaults, fn_arguments_first=True, module=__name__)


MeanSquaredError = _wrapper_class(
    "MeanSquaredError", mean_squared_error, "mean_squared_error",
    "Mean of the squared errors (``tf.keras.losses.MeanSquaredError``).")
MeanAbsoluteError = _wrapper_class(
    "MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
    "Mean of the absolute errors (``tf.keras.losses.MeanAbsoluteError``).")
MeanAbsolutePercentageError = _wrapper_class(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error",
    "Mean absolute percentage error (``tf.keras.losses.MeanAbsolutePercentageError``).")
MeanSquaredLogarithmicError = _wrapper_class(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error",
    "Mean squared error of log(1 + x) (``tf.keras.losses.MeanSquaredLogarithmicError``).")
Huber = _wrapper_class(
    "Huber", huber, "huber_loss",
    "Huber loss, quadratic up to ``delta`` and linear beyond (``tf.keras.losses.Huber``).",
    delta=1.0)
LogCosh = _wrapper_class(
    "LogCosh", log_cosh, "log_cosh",
    "Logarithm of the hyperbolic cosine of the error (``tf.keras.losses.LogCosh``).")
Hinge = _wrapper_class(
    "Hinge", hinge, "hinge", "Hinge loss (``tf.keras.losses.Hinge``).")
SquaredHinge = _wrapper_class(
    "SquaredHinge", squared_hinge, "squared_hinge",
    "Squared hinge loss (``tf.keras.losses.SquaredHinge``).")
CategoricalHinge = _wrapper_class(
    "CategoricalHinge", categorical_hinge, "categorical_hinge",
    "Categorical hinge loss (``tf.keras.losses.CategoricalHinge``).")
KLDivergence = _wrapper_class(
    "KLDivergence", kl_divergence, "kl_divergence",
    "Kullback-Leibler divergence (``tf.keras.losses.KLDivergence``).")
Poisson = _wrapper_class(
    "Poisson", poisson, "poisson", "Poisson loss (``tf.keras.losses.Poisson``).")
CategoricalCrossentropy = _wrapper_class(
    "CategoricalCrossentropy", categorical_crossentropy, "categorical_crossentropy",
    "Cross-entropy for one-hot labels (``tf.keras.losses.CategoricalCrossentropy``).",
    from_logits=False, label_smoothing=0.0, axis=-1)
BinaryCrossentropy = _wrapper_class(
    "BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
    "Cross-entropy for binary labels (``tf.keras.losses.BinaryCrossentropy``).",
    from_logits=False, label_smoothing=0.0, axis=-1)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy for integer class labels (``tf.keras.losses.SparseCategoricalCrossentropy``).

    With ``ignore_class``, samples with that label are left out: their loss is 0 and the mean
    is taken over the others.
    """

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 axis=-1, name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits, ignore_class=ignore_class,
                         axis=axis)
        self.from_logits = from_logits
        self.ignore_class = ignore_class
        self.axis = axis

    def _mask(self, y_true, y_pred):
        if self.ignore_class is None:
            return None
        if y_true.shape.rank == y_pred.shape.rank and y_true.shape[-1] == 1:
            y_true = array_ops.squeeze(y_true, -1)
        return math_ops.not_equal(y_true, math_ops.cast(self.ignore_class, y_true.dtype))


# ---- lookup -------------------------------------------------------------------------------------
_CLASSES = (Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, Huber, LogCosh, Hinge,
            SquaredHinge, CategoricalHinge, KLDivergence, Poisson, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, BinaryCrossentropy)
_FUNCTIONS = (mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
              mean_squared_logarithmic_error, huber, log_cosh, hinge, squared_hinge,
              categorical_hinge, kl_divergence, poisson, categorical_crossentropy,
              sparse_categorical_crossentropy, binary_crossentropy)
_BY_NAME = {obj.__name__: obj for obj in _CLASSES + _FUNCTIONS}
_BY_NAME.update({"mse": mse, "MSE": mse, "mae": mae, "MAE": mae, "mape": mape, "MAPE": mape,
                 "msle": msle, "MSLE": msle, "kld": kld, "KLD": kld,
                 "kullback_leibler_divergence": kld, "logcosh": log_cosh, "huber_loss": huber,
                 "bce": binary_crossentropy, "BCE": binary_crossentropy})


def serialize(loss):
    """``{"class_name": ..., "config": ...}`` for a ``Loss``; the name for a loss function."""
    if not isinstance(loss, Loss) and getattr(loss, "__name__", None) not in _BY_NAME:
        raise ValueError(f"Cannot serialize {loss!r}: not a Keras loss or loss function.")
    return serialization.serialize(loss, Loss, "loss")


def deserialize(name, custom_objects=None):
    """The loss (class instance or function) that ``serialize`` described."""
    return serialization.deserialize(name, dict(_BY_NAME, **(custom_objects or {})), "loss")


def get(identifier):
    """The loss named by ``identifier`` (``tf.keras.losses.get``).

    A function name (``"mse"``, ``"sparse_categorical_crossentropy"``) gives the function; a
    class name (``"MeanSquaredError"``) or a ``{"class_name", "config"}`` dict gives an
    instance; a callable is returned as is; ``None`` gives ``None``.
    """
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        obj = deserialize(identifier)
    else:
        obj = identifier
    if inspect.isclass(obj):
        obj = obj()
    if not callable(obj):
        raise ValueError(f"Could not interpret loss identifier: {identifier!r}; pass a loss "
                         "name, a Loss instance or a function (y_true, y_pred) -> losses.")
    return obj
