"""``tf.keras.metrics``: metric functions and stateful ``Metric`` objects.

A ``Metric`` keeps its state in non-trainable variables (``total`` and ``count`` for a mean):
``update_state`` assigns to them, so it works eagerly and inside a ``tf.function`` alike (the
traced assignments run on every call); ``result()`` reads them; ``reset_state()`` zeroes them.
"""
import inspect
import re

import numpy as np

from hybridtf.api import array_ops, math_ops
from hybridtf.framework import dtypes
from hybridtf.framework.name_scope import name_scope as _name_scope
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.variables import Variable, VariableAggregation, VariableSynchronization
from hybridtf.keras import losses as _losses
from hybridtf.keras import function_wrappers, initializers, serialization
from hybridtf.keras.losses import (  # noqa: F401  (metric functions TF exposes here too)
    KLD, MAE, MAPE, MSE, MSLE, binary_crossentropy, categorical_crossentropy,
    categorical_hinge, hinge, huber, kld, kl_divergence, kullback_leibler_divergence, log_cosh,
    logcosh, mae, mape, mean_absolute_error, mean_absolute_percentage_error, mean_squared_error,
    mean_squared_logarithmic_error, mse, msle, poisson, sparse_categorical_crossentropy,
    squared_hinge, squeeze_or_expand_to_same_rank)
from hybridtf.module import Module, camel_to_snake

_tensor = _losses._tensor


# ---- metric functions ---------------------------------------------------------------------------
def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred``, else 0.0 (elementwise, float32)."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return math_ops.cast(math_ops.equal(y_true, y_pred), dtypes.float32)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where ``y_pred > threshold`` agrees with the binary label ``y_true``, else 0.0."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = math_ops.cast(math_ops.greater(y_pred, math_ops.cast(threshold, y_pred.dtype)),
                              y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, predicted), dtypes.float32)


def categorical_accuracy(y_true, y_pred):
    """1.0 where the largest entry of ``y_pred`` is at the position of the largest of the
    one-hot ``y_true`` (along the last axis), else 0.0."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    _check_class_axis("categorical_accuracy", y_true, y_pred, same_rank=True)
    true_class = math_ops.argmax(y_true, axis=-1)
    predicted = math_ops.argmax(y_pred, axis=-1)
    return math_ops.cast(math_ops.equal(true_class, predicted), dtypes.float32)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the integer label ``y_true`` is the index of the largest entry of ``y_pred``
    (along the last axis), else 0.0.  A trailing dimension of size 1 in ``y_true`` is
    squeezed."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    if y_true.shape.rank == y_pred.shape.rank and y_true.shape[-1] == 1:
        y_true = array_ops.squeeze(y_true, -1)
    _check_class_axis("sparse_categorical_accuracy", y_true, y_pred, same_rank=False)
    predicted = math_ops.cast(math_ops.argmax(y_pred, axis=-1), y_true.dtype)
    return math_ops.cast(math_ops.equal(y_true, predicted), dtypes.float32)


def _check_class_axis(fn_name, y_true, y_pred, same_rank):
    st, sp = _losses._shape(y_true), _losses._shape(y_pred)
    if st is None or sp is None:
        return
    if not sp:
        raise ValueError(f"{fn_name}: y_pred must have a class dimension (rank >= 1), got a "
                         "scalar.")
    expected = sp if same_rank else sp[:-1]
    if len(st) != len(expected) or any(a is not None and b is not None and a != b
                                       for a, b in zip(st, expected)):
        want = "the same shape as y_pred" if same_rank else \
            "the shape of y_pred without its last (class) dimension"
        raise ValueError(f"{fn_name}: y_true must have {want}, got y_true.shape="
                         f"{_losses._fmt(st)} and y_pred.shape={_losses._fmt(sp)}.")


# ---- the Metric base class ----------------------------------------------------------------------
_IDENTIFIER_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def _module_name(name):
    """A valid module/scope name for a metric name that may hold other characters."""
    safe = _IDENTIFIER_UNSAFE.sub("_", name)
    return safe if safe and not safe[0].isdigit() else "_" + safe


class Metric(Module):
    """Base class of stateful metrics (``tf.keras.metrics.Metric``).

    Subclasses create their state with ``add_variable``/``add_weight`` in ``__init__`` and
    define ``update_state(...)`` and ``result()``.  Calling a metric updates it and returns the
    result.  Its variables are non-trainable, so they are found by ``tf.Module`` but never
    trained.
    """

    def __init__(self, name=None, dtype=None):
        name = name or camel_to_snake(type(self).__name__)
        super().__init__(name=_module_name(name))
        self._metric_name = name
        self._dtype = dtypes.as_dtype(dtype or "float32")
        self._state_variables = []

    # ---- naming and dtype ----------------------------------------------------------------------
    @property
    def name(self):
        """The metric's name (settable; ``compile`` names metrics after their identifiers)."""
        return self._metric_name

    @name.setter
    def name(self, value):
        self._metric_name = value

    @property
    def dtype(self):
        """The dtype of the state and result, as a string (``"float32"``)."""
        return self._dtype.name

    # ---- state ---------------------------------------------------------------------------------
    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        """Creates a non-trainable state variable of the metric."""
        dtype = dtypes.as_dtype(dtype or self._dtype)
        value = _initial_value(initializer, tuple(TensorShape(shape).as_list()), dtype)
        with _name_scope(self._scope_name):
            variable = Variable(value, trainable=False, name=name, dtype=dtype,
                                synchronization=VariableSynchronization.ON_READ,
                                aggregation=_AGGREGATIONS.get(aggregation,
                                                              VariableAggregation.SUM))
        self._state_variables.append(variable)
        return variable

    def add_weight(self, *args, **kwargs):
        """``add_weight(name=None, shape=(), initializer=None, dtype=None)``: a state variable.

        Accepts TF 2's Keras order (``name`` first) and Keras 3's (``shape`` first).
        """
        if args and isinstance(args[0], str):
            kwargs["name"] = args[0]
            args = args[1:]
        names = ("shape", "initializer", "dtype")
        for key, value in zip(names, args):
            if key in kwargs:
                raise TypeError(f"add_weight() got multiple values for argument {key!r}.")
            kwargs[key] = value
        unknown = set(kwargs) - {"name", "shape", "initializer", "dtype", "aggregation",
                                 "synchronization", "trainable"}
        if unknown:
            raise TypeError(f"add_weight() got unexpected keyword arguments {sorted(unknown)}.")
        if kwargs.get("trainable"):
            raise ValueError(f"Metric {self.name!r}: metric variables cannot be trainable.")
        if kwargs.get("initializer") is None:
            kwargs["initializer"] = "zeros"
        return self.add_variable(shape=kwargs.get("shape", ()),
                                 initializer=kwargs["initializer"], dtype=kwargs.get("dtype"),
                                 aggregation=kwargs.get("aggregation", "sum"),
                                 name=kwargs.get("name"))

    @property
    def variables(self):
        """The state variables, in creation order, then those of sub-metrics."""
        found = list(self._state_variables)
        ids = {id(v) for v in found}
        found += [v for v in super().variables if id(v) not in ids]
        return found

    def reset_state(self):
        """Sets every state variable back to zero."""
        for variable in self.variables:
            variable.assign(np.zeros(tuple(variable.shape.as_list()),
                                     variable.dtype.as_numpy_dtype))

    def reset_states(self):
        """The TF 2 name of ``reset_state``."""
        self.reset_state()

    # ---- updating and reading ------------------------------------------------------------------
    def update_state(self, *args, **kwargs):
        """Accumulates statistics for the metric; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_state().")

    def result(self):
        """The metric's value from its current state; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must implement result().")

    def __call__(self, *args, **kwargs):
        """Updates the state with this batch and returns the result."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


_AGGREGATIONS = {"sum": VariableAggregation.SUM, "mean": VariableAggregation.MEAN,
                 "none": VariableAggregation.NONE, None: VariableAggregation.NONE,
                 "only_first_replica": VariableAggregation.ONLY_FIRST_REPLICA}


def _initial_value(initializer, shape, dtype):
    """The array an initializer gives: ``"zeros"``/``"ones"``, a number, or a callable
    ``(shape, dtype)`` such as a ``tf.keras.initializers`` object."""
    np_dtype = dtype.as_numpy_dtype
    if isinstance(initializer, str):
        key = initializer.lower()
        if key == "zeros":
            return np.zeros(shape, np_dtype)
        if key == "ones":
            return np.ones(shape, np_dtype)
        getter = getattr(initializers, "get", None)
        if getter is None:
            raise ValueError(f"Unknown initializer {initializer!r} for a metric variable; use "
                             "'zeros', 'ones', a number or a callable (shape, dtype).")
        initializer = getter(initializer)
    if callable(initializer):
        return initializer(shape, dtype=dtype)
    return np.full(shape, initializer, np_dtype)


# ---- reductions ---------------------------------------------------------------------------------
def _static_or_dynamic_dim(tensor, axis):
    size = tensor.shape[axis]
    return size if size is not None else array_ops.shape(tensor)[axis]


def _samplewise(values, sample_weight, reduce_fn, dtype):
    """Reduces ``values`` to one value per sample (weighted when ``sample_weight`` is given),
    and ``sample_weight`` to one weight per sample, as Keras' reduction metrics do."""
    values = math_ops.cast(_tensor(values), dtype)
    if sample_weight is not None:
        sample_weight = _tensor(sample_weight, dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        _losses._check_sample_weight(values, sample_weight)
        weight_rank, value_rank = sample_weight.shape.rank, values.shape.rank
        if value_rank > weight_rank:
            values = reduce_fn(values, axis=list(range(weight_rank, value_rank)))
        shape = values.shape.as_list() if values.shape.is_fully_defined() else \
            array_ops.shape(values)
        sample_weight = array_ops.broadcast_to(sample_weight, shape)
        values = values * sample_weight
        if weight_rank > 1:
            sample_weight = reduce_fn(sample_weight, axis=list(range(1, weight_rank)))
    if values.shape.rank > 1:
        values = reduce_fn(values, axis=list(range(1, values.shape.rank)))
    return values, sample_weight


class Sum(Metric):
    """The (weighted) sum of the values seen (``tf.keras.metrics.Sum``)."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = _samplewise(values, sample_weight, math_ops.reduce_sum, self._dtype)
        self.total.assign_add(math_ops.reduce_sum(values))

    def result(self):
        return self.total.value()


class Mean(Metric):
    """The (weighted) mean of the values seen: ``total / count`` (``tf.keras.metrics.Mean``)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, values, sample_weight=None):
        values, sample_weight = _samplewise(values, sample_weight, math_ops.reduce_mean,
                                            self._dtype)
        self.total.assign_add(math_ops.reduce_sum(values))
        if sample_weight is not None:
            num_samples = math_ops.reduce_sum(sample_weight)
        elif values.shape.rank >= 1:
            num_samples = math_ops.cast(_static_or_dynamic_dim(values, 0), self._dtype)
        else:
            num_samples = 1.0
        self.count.assign_add(math_ops.cast(num_samples, self._dtype))

    def result(self):
        return math_ops.div_no_nan(self.total.value(), self.count.value())


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` over the samples seen."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        # User functions get tensors, as they do from a model.
        values = self._fn(_tensor(y_true), _tensor(y_pred), **self._fn_kwargs)
        return super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        return config


def _wrapper_metric(class_name, fn, default_name, doc, **defaults):
    """A ``MeanMetricWrapper`` subclass over ``fn`` taking ``name``, ``dtype`` and ``defaults``
    (``fn``'s keyword arguments) in that order."""
    return function_wrappers.wrapper_class(
        class_name, MeanMetricWrapper, fn, doc, [("name", default_name), ("dtype", None)],
        defaults, fn_arguments_first=False, module=__name__)


Accuracy = _wrapper_metric(
    "Accuracy", accuracy, "accuracy",
    "How often predictions equal labels (``tf.keras.metrics.Accuracy``).")
BinaryAccuracy = _wrapper_metric(
    "BinaryAccuracy", binary_accuracy, "binary_accuracy",
    "How often ``y_pred > threshold`` matches binary labels "
    "(``tf.keras.metrics.BinaryAccuracy``).", threshold=0.5)
CategoricalAccuracy = _wrapper_metric(
    "CategoricalAccuracy", categorical_accuracy, "categorical_accuracy",
    "How often the argmax of predictions matches that of one-hot labels "
    "(``tf.keras.metrics.CategoricalAccuracy``).")
SparseCategoricalAccuracy = _wrapper_metric(
    "SparseCategoricalAccuracy", sparse_categorical_accuracy, "sparse_categorical_accuracy",
    "How often the argmax of predictions matches integer labels "
    "(``tf.keras.metrics.SparseCategoricalAccuracy``).")
MeanSquaredError = _wrapper_metric(
    "MeanSquaredError", mean_squared_error, "mean_squared_error",
    "Mean squared error over the samples seen (``tf.keras.metrics.MeanSquaredError``).")
MeanAbsoluteError = _wrapper_metric(
    "MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
    "Mean absolute error over the samples seen (``tf.keras.metrics.MeanAbsoluteError``).")
MeanAbsolutePercentageError = _wrapper_metric(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error",
    "Mean absolute percentage error (``tf.keras.metrics.MeanAbsolutePercentageError``).")
MeanSquaredLogarithmicError = _wrapper_metric(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error",
    "Mean squared logarithmic error (``tf.keras.metrics.MeanSquaredLogarithmicError``).")
Hinge = _wrapper_metric("Hinge", hinge, "hinge", "Mean hinge loss (``tf.keras.metrics.Hinge``).")
SquaredHinge = _wrapper_metric(
    "SquaredHinge", squared_hinge, "squared_hinge",
    "Mean squared hinge loss (``tf.keras.metrics.SquaredHinge``).")
CategoricalHinge = _wrapper_metric(
    "CategoricalHinge", categorical_hinge, "categorical_hinge",
    "Mean categorical hinge loss (``tf.keras.metrics.CategoricalHinge``).")
KLDivergence = _wrapper_metric(
    "KLDivergence", kl_divergence, "kl_divergence",
    "Mean Kullback-Leibler divergence (``tf.keras.metrics.KLDivergence``).")
Poisson = _wrapper_metric(
    "Poisson", poisson, "poisson", "Mean Poisson loss (``tf.keras.metrics.Poisson``).")
LogCoshError = _wrapper_metric(
    "LogCoshError", log_cosh, "logcosh",
    "Mean log-cosh error (``tf.keras.metrics.LogCoshError``).")
BinaryCrossentropy = _wrapper_metric(
    "BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
    "Mean binary cross-entropy (``tf.keras.metrics.BinaryCrossentropy``).",
    from_logits=False, label_smoothing=0.0)
CategoricalCrossentropy = _wrapper_metric(
    "CategoricalCrossentropy", categorical_crossentropy, "categorical_crossentropy",
    "Mean categorical cross-entropy (``tf.keras.metrics.CategoricalCrossentropy``).",
    from_logits=False, label_smoothing=0.0, axis=-1)
SparseCategoricalCrossentropy = _wrapper_metric(
    "SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy",
    "Mean sparse categorical cross-entropy "
    "(``tf.keras.metrics.SparseCategoricalCrossentropy``).", from_logits=False, axis=-1)


class RootMeanSquaredError(Mean):
    """``sqrt(mean(square(y_true - y_pred)))`` over the samples seen
    (``tf.keras.metrics.RootMeanSquaredError``)."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _losses._regression_pair("root_mean_squared_error", y_true, y_pred)
        return super().update_state(math_ops.square(y_pred - y_true), sample_weight)

    def result(self):
        return math_ops.sqrt(super().result())


# ---- lookup -------------------------------------------------------------------------------------
_CLASSES = (Metric, Mean, Sum, MeanMetricWrapper, Accuracy, BinaryAccuracy, CategoricalAccuracy,
            SparseCategoricalAccuracy, MeanSquaredError, MeanAbsoluteError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, RootMeanSquaredError,
            Hinge, SquaredHinge, CategoricalHinge, KLDivergence, Poisson, LogCoshError,
            BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy)
_BY_NAME = {cls.__name__: cls for cls in _CLASSES}
_BY_NAME.update({camel_to_snake(cls.__name__): cls for cls in _CLASSES})
_BY_NAME.update({"acc": Accuracy, "mse": MeanSquaredError, "MSE": MeanSquaredError,
                 "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
                 "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
                 "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
                 "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy, "kld": KLDivergence,
                 "KLD": KLDivergence, "kullback_leibler_divergence": KLDivergence,
                 "logcosh": LogCoshError, "rmse": RootMeanSquaredError})


def serialize(metric):
    """``{"class_name": ..., "config": ...}`` for a ``Metric``; the name for a function."""
    return serialization.serialize(metric, Metric, "metric")


def deserialize(config, custom_objects=None):
    """The metric that ``serialize`` described."""
    functions = {f.__name__: f for f in (accuracy, binary_accuracy, categorical_accuracy,
                                         sparse_categorical_accuracy)}
    lookup = dict(functions, **_BY_NAME, **(custom_objects or {}))
    return serialization.deserialize(config, lookup, "metric")


def get(identifier):
    """The metric named by ``identifier`` (``tf.keras.metrics.get``).

    Names (``"accuracy"``/``"acc"``, ``"sparse_categorical_accuracy"``, ``"mse"``,
    ``"MeanSquaredError"``, ...) and ``{"class_name", "config"}`` dicts give a new ``Metric``;
    a ``Metric`` or a function is returned as is; ``None`` gives ``None``.
    """
    if identifier is None:
        return None
    obj = deserialize(identifier) if isinstance(identifier, (str, dict)) else identifier
    if inspect.isclass(obj):
        obj = obj()
    if not callable(obj):
        raise ValueError(f"Could not interpret metric identifier: {identifier!r}; pass a "
                         "metric name, a Metric instance or a function (y_true, y_pred).")
    return obj


def _shape_of(value):
    """The shape of a tensor or array, or ``value`` itself when it is a shape (a TensorShape
    or a tuple of ints)."""
    if value is None or isinstance(value, TensorShape):
        return value
    if isinstance(value, tuple) and all(d is None or isinstance(d, (int, np.integer))
                                        for d in value):
        return TensorShape(value)
    return TensorShape(value.shape if hasattr(value, "shape") else np.shape(value))


def resolve(identifier, y_true=None, y_pred=None):
    """The ``Metric`` that ``compile(metrics=[identifier])`` tracks for outputs like
    ``y_pred`` with labels like ``y_true`` (tensors, arrays, or shapes given as tuples).

    ``"accuracy"``/``"acc"`` become ``BinaryAccuracy`` when ``y_pred`` has one unit in its last
    dimension, ``SparseCategoricalAccuracy`` when ``y_true`` has one dimension fewer (or a last
    dimension of 1), else ``CategoricalAccuracy``; a plain function is wrapped in a
    ``MeanMetricWrapper``.  A metric given by a string is named after it.
    """
    if identifier is None:
        raise ValueError("Expected a metric, received None.")
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc") and \
            y_pred is not None:
        true_shape, pred_shape = _shape_of(y_true), _shape_of(y_pred)
        if pred_shape.rank and pred_shape[-1] == 1:
            metric = BinaryAccuracy(name=identifier)
        elif true_shape is not None and true_shape.rank is not None and pred_shape.rank and (
                true_shape.rank < pred_shape.rank or (true_shape.rank and true_shape[-1] == 1)):
            metric = SparseCategoricalAccuracy(name=identifier)
        else:
            metric = CategoricalAccuracy(name=identifier)
        return metric
    metric = get(identifier)
    if not isinstance(metric, Metric):
        metric = MeanMetricWrapper(metric, name=getattr(metric, "__name__", None))
    if isinstance(identifier, str):
        metric.name = identifier
    return metric
