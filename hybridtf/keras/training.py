"""``Model.compile`` / ``fit`` / ``evaluate`` / ``predict``: Keras's training loop.

A train step -- forward pass, loss, gradients, optimizer update and metric updates -- is one
``hybridtf.function`` (so one compiled graph), traced once per batch shape (a last partial
batch adds one trace).  Before the first trace the step's variables (the model's weights, the
metrics' state, the optimizer's slots) are created, so that creating them does not cost a
second trace.

A model overrides ``train_step(data)`` / ``test_step(data)`` / ``predict_step(data)`` (or
``compute_loss``) to change what a step does, as in Keras; inside them ``self.compute_loss(...)``,
``self.compute_metrics(...)`` and ``self.metrics`` behave as in Keras 3 (see compile_utils.py),
and Keras 2's ``self.compiled_loss(...)`` / ``self.compiled_metrics.update_state(...)`` still
work.  What a step returns (nested dicts flattened) is what callbacks, ``History`` and
``evaluate`` report.  The loop around the step slices NumPy batches (data_adapter.py), calls the
step and drives callbacks and the progress bar.
"""
import inspect
import numbers
import warnings

import numpy as np

from hybridtf.api import math_ops
from hybridtf.autograph import operators as autograph_operators
from hybridtf.distribute import distribute_lib
from hybridtf.eager import tape as tape_lib
from hybridtf.eager.backprop import GradientTape
from hybridtf.framework import dtypes, nest
from hybridtf.graph import func_graph
from hybridtf.polymorphic_function import function
from hybridtf.keras import callbacks as callbacks_lib
from hybridtf.keras import compile_utils
from hybridtf.keras import distributed_training as distributed
from hybridtf.keras import metrics as metrics_lib
from hybridtf.keras import optimizers as optimizers_lib
from hybridtf.keras.data_adapter import (ArrayData, check_class_weight, data_for,
                                         unpack_x_y_sample_weight)

__all__ = ["Trainer", "LossesContainer", "MetricsContainer", "unpack_x_y_sample_weight"]

LossesContainer = compile_utils.LossesContainer
MetricsContainer = compile_utils.MetricsContainer


def _logs_to_floats(logs):
    """The logs a step returned as Python floats (arrays when not scalars), nested dicts
    (a ``compile_metrics`` result) flattened into the top level, keys sorted -- as Keras 3
    reports them to callbacks and ``History``."""
    out = {}
    for key, value in sorted(logs.items()):
        if isinstance(value, dict):
            out.update(_logs_to_floats(value))
            continue
        array = np.asarray(value)
        out[key] = float(array) if array.ndim == 0 else array
    return out


def _accepts_training(method):
    parameters = inspect.signature(method).parameters.values()
    return any(p.name == "training" or p.kind is p.VAR_KEYWORD for p in parameters)


def _step_is_overridden(model, name):
    return getattr(type(model), name) is not getattr(Trainer, name)


# ---- the mixin --------------------------------------------------------------------------------
class Trainer:
    """The training API of ``keras.Model``."""

    def _init_training(self):
        self.optimizer = None
        self.compiled_loss = None
        self.compiled_metrics = None
        self._loss_spec = self.loss = None
        self._metric_specs = []
        self._loss_tracker = None
        self._run_eagerly = False
        self.stop_training = False
        self.history = None
        self.train_function = None
        self.test_function = None
        self.predict_function = None
        self._is_compiled = False

    # ---- compile ---------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                jit_compile=None, **kwargs):
        """Configures the model for training.

        Args:
          optimizer: an optimizer instance or name (``"adam"``, ``"sgd"``, ...).
          loss: a loss function, ``Loss`` instance or name; for a model with several outputs
            one for all, a list (one per output) or a dict keyed by output name.
          metrics: metric instances, functions or names such as ``"accuracy"`` (a list, or
            per output a list of lists or a dict); they ignore sample weights.
          loss_weights: a number, or per output a list or dict, scaling each output's loss.
          weighted_metrics: metrics that receive ``sample_weight``.
          run_eagerly: run the steps as plain Python (for debugging) instead of traced.
          steps_per_execution, jit_compile: accepted for compatibility; hybridtf always
            compiles a step and runs one step per call.
        """
        if kwargs:
            raise TypeError(f"compile: unexpected keyword arguments {sorted(kwargs)}.")
        if "_training_initialized" not in self.__dict__:
            self._init_training()
            self._training_initialized = True
        if isinstance(metrics, (str, metrics_lib.Metric)) or (
                metrics is not None and not isinstance(metrics, (list, tuple, dict))):
            raise TypeError(f"compile: metrics must be a list (or a dict per output), got "
                            f"{metrics!r}; write metrics=[{metrics!r}].")
        self.optimizer = optimizers_lib.get(optimizer)
        self._loss_spec = self.loss = loss
        self._metric_specs = [] if metrics is None else list(metrics) if isinstance(
            metrics, (list, tuple)) else metrics
        compile_utils.check_loss_specs(loss)

        def name_outputs(y_pred):
            return compile_utils.output_names(self, y_pred)
        self._loss_tracker = metrics_lib.Mean(name="loss")
        self.compiled_loss = LossesContainer(loss, loss_weights, self._loss_tracker,
                                             name_outputs)
        self.compiled_metrics = MetricsContainer(metrics, weighted_metrics, name_outputs)
        # Keras 3 lists `compile_metrics` among the model's metrics only when given some.
        self._compile_metrics_listed = metrics is not None or weighted_metrics is not None
        self._steps_per_execution = steps_per_execution
        self._jit_compile = jit_compile
        self._run_eagerly = bool(run_eagerly)
        self._distribute_strategy = distributed.strategy_for(self)
        self.train_function = self.test_function = self.predict_function = None
        self._is_compiled = True

    def _require_compiled(self, who):
        if not self.__dict__.get("_is_compiled"):
            raise RuntimeError(f"You must compile your model before {who} the model: call "
                               "`model.compile(optimizer, loss)`.")

    @property
    def run_eagerly(self):
        """True when the steps run as plain Python (``compile(run_eagerly=True)``)."""
        return self.__dict__.get("_run_eagerly", False)

    @run_eagerly.setter
    def run_eagerly(self, value):
        self._run_eagerly = bool(value)
        self.train_function = self.test_function = self.predict_function = None

    @property
    def distribute_strategy(self):
        """The ``tf.distribute.Strategy`` the model trains under: the one in force when it was
        compiled (or its weights' strategy), else the one in force now."""
        return self.__dict__.get("_distribute_strategy") or distribute_lib.get_strategy()

    @property
    def metrics(self):
        """The metrics ``fit`` and ``evaluate`` report and reset, in Keras 3's order: once
        compiled, the ``loss`` tracker, the compiled metrics (one metric, ``compile_metrics``,
        whose result is a dict) and the per-output loss trackers; then the ``Metric`` objects
        held as attributes of the model (created in ``__init__`` for a custom ``train_step``)
        and of its layers (not of nested models: their metrics are theirs)."""
        found = []
        if self.__dict__.get("_is_compiled"):
            found.append(self._loss_tracker)
            if self._compile_metrics_listed:
                found.append(self.compiled_metrics)
            found += self.compiled_loss.metrics
        found += [m for m in self._attribute_modules() if isinstance(m, metrics_lib.Metric)]
        for layer in self._flatten_layers(include_self=False):
            if not isinstance(layer, Trainer):
                found += [m for m in layer._attribute_modules()
                          if isinstance(m, metrics_lib.Metric)]
        return list({id(m): m for m in found}.values())

    @property
    def metrics_names(self):
        """The names of ``metrics`` (``["loss", "compile_metrics"]`` for a model compiled
        with metrics, as in Keras 3; the logs name each compiled metric)."""
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        """Resets the state of every metric in ``metrics``."""
        for metric in self.metrics:
            metric.reset_state()

    # ---- steps ------------------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The total loss of a batch: the compiled loss (each output's loss times its
        ``loss_weights`` entry) plus the losses the layers added (``self.losses``).

        Override it to compute the loss another way; ``train_step`` and ``test_step`` call
        it and add what it returns to the ``loss`` tracker (it updates only the per-output
        loss trackers itself, as in Keras 3).
        """
        del x, training
        found = []
        if self.__dict__.get("compiled_loss") is not None:
            compiled = self.compiled_loss.compute(y, y_pred, sample_weight)
            if compiled is not None:
                found.append(compiled)
        for loss in self.losses:
            if not loss.dtype.is_floating:
                loss = math_ops.cast(loss, dtypes.float32)
            found.append(math_ops.reduce_sum(loss))
        if not found:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        total = found[0]
        for loss in found[1:]:
            total = total + math_ops.cast(loss, total.dtype)
        # Divided by the number of replicas inside strategy.run: the replicas' gradients are
        # summed.
        return distribute_lib.scale_loss_for_distribution(total)

    def _compute_loss(self, x, y, y_pred, sample_weight, training):
        """``compute_loss``, also when an override does not take ``training`` (added in
        Keras 3.3)."""
        if _accepts_training(type(self).compute_loss):
            return self.compute_loss(x, y, y_pred, sample_weight, training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)

    def _track_loss(self, loss, x):
        """Adds a step's loss to the ``loss`` tracker, weighted by the batch size."""
        if self.__dict__.get("_loss_tracker") is not None:
            self._loss_tracker.update_state(
                distribute_lib.unscale_loss_for_distribution(loss),
                sample_weight=compile_utils.batch_size_of(x, loss.dtype))

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates the compiled metrics with a batch; returns ``{name: running value}`` for
        every metric in ``metrics`` (override it to update metrics of your own too)."""
        del x
        if self.__dict__.get("compiled_metrics") is not None:
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        """``{name: result}`` for every metric in ``metrics`` (a dict result, such as
        ``compile_metrics``'s, is merged in; of two metrics with one name, the later one)."""
        logs = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                logs.update(result)
            else:
                logs[metric.name] = result
        return logs

    def train_step(self, data):
        """One optimization step on a batch ``(x, y[, sample_weight])``: forward pass, loss,
        gradients, optimizer update, metric updates.  Returns the running metrics."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x, y, y_pred, sample_weight, training=True)
        self._track_loss(loss, x)
        variables = self.trainable_variables
        if variables:
            grads = tape.gradient(loss, variables)
            self.optimizer.apply_gradients(zip(grads, variables))
        else:
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        """Loss and metrics on a batch, without training."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self._compute_loss(x, y, y_pred, sample_weight, training=False)
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """The model's outputs for a batch (``training=False``)."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _step_function(self, attribute, step):
        existing = getattr(self, attribute)
        if existing is not None:
            return existing

        strategy = self.distribute_strategy
        if distributed.is_distributed(strategy):
            def run(data):
                return strategy.run(step, args=(data,))
        else:
            def run(data):
                return step(data)
        fn = run if self.run_eagerly else function(run, name=attribute)
        setattr(self, attribute, fn)
        return fn

    def make_train_function(self, force=False):
        """The function that runs one ``train_step`` (a ``hybridtf.function`` unless
        ``run_eagerly``); made once per ``compile``."""
        if force:
            self.train_function = None
        return self._step_function("train_function", self.train_step)

    def make_test_function(self, force=False):
        if force:
            self.test_function = None
        return self._step_function("test_function", self.test_step)

    def make_predict_function(self, force=False):
        if force:
            self.predict_function = None
        return self._step_function("predict_function", self.predict_step)

    def _prepare_step(self, batch, training):
        """Creates, before the first trace, the variables a step would create: the model's
        weights (a symbolic call), the compiled metrics and losses (resolved against the batch's
        shapes) and the optimizer's slots.  A step that created variables would be traced twice
        (as TF does); this way it is traced once per input signature."""
        if self.run_eagerly:
            return          # nothing is traced; a plain Python call may do what tracing can't
        with distributed.scope(self.distribute_strategy):
            self._create_step_variables(batch, training)

    def _create_step_variables(self, batch, training):
        x, y, _ = unpack_x_y_sample_weight(batch)
        # A custom step may not feed `x` to the model as it is: leave it to its first trace.
        custom = _step_is_overridden(self, "train_step" if training else "test_step")
        containers_ready = self.compiled_metrics.built and self.compiled_loss.built
        if not custom and not (self.built and containers_ready):
            outputs = self._symbolic_outputs(x)
            names = compile_utils.output_names(self, outputs)
            if not self.compiled_loss.built:
                self.compiled_loss.build(outputs, names)
            if not self.compiled_metrics.built:
                self.compiled_metrics.build(y, outputs, names)
        if training and self.built and self.optimizer is not None:
            variables = [v for v in self.trainable_variables
                         if not self.optimizer._is_built_for(v)]
            if variables:
                self.optimizer.build(variables)

    def _symbolic_outputs(self, x):
        """The model's outputs for placeholders shaped like ``x`` in a scratch graph (nothing
        is computed; weights are created if the model is not built)."""
        graph = func_graph.FuncGraph(f"{self.name}_symbolic_build")
        with tape_lib.stop_recording(), func_graph.building(graph), \
                autograph_operators.status(True):
            inputs = nest.map_structure(
                lambda t: graph.placeholder(t.shape.as_list(), t.dtype.as_numpy_dtype, "input"),
                x)
            outputs = self(inputs, training=False)
        return nest.map_structure(lambda t: _ShapeOnly(t.shape, t.dtype), outputs)

    # ---- fit / evaluate / predict -----------------------------------------------------------
    def _callbacks(self, callbacks, verbose, params, with_history):
        if isinstance(callbacks, callbacks_lib.CallbackList):
            callbacks = list(callbacks.callbacks)
        callbacks = list(callbacks or [])
        history = next((c for c in callbacks if isinstance(c, callbacks_lib.History)), None)
        if with_history and history is None:
            history = callbacks_lib.History()
            callbacks.append(history)
        if verbose and not any(isinstance(c, callbacks_lib.ProgbarLogger) for c in callbacks):
            callbacks.append(callbacks_lib.ProgbarLogger(verbose=verbose))
        return callbacks_lib.CallbackList(callbacks, model=self, **params), history

    @staticmethod
    def _verbose(verbose, who):
        if verbose == "auto":
            return 1
        if isinstance(verbose, bool) or verbose not in (0, 1, 2):
            raise ValueError(f"{who}: verbose must be 'auto', 0, 1 or 2, got {verbose!r}.")
        return int(verbose)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Trains the model for ``epochs`` passes over the data; returns a ``History`` whose
        ``history`` maps each metric (and ``val_`` metric) to its value per epoch.

        ``x``/``y`` are NumPy arrays or tensors (or lists/dicts of them), or ``x`` is a
        generator or ``Sequence`` of ``(x, y[, sample_weight])`` batches.  ``validation_split``
        holds out the last fraction of the samples (before shuffling).
        """
        self._require_compiled("training")
        verbose = self._verbose(verbose, "fit")
        if not isinstance(epochs, (int, np.integer)) or epochs < 0:
            raise ValueError(f"fit: epochs must be a non-negative integer, got {epochs!r}.")
        if isinstance(validation_split, bool) or not isinstance(
                validation_split, numbers.Real) or not 0.0 <= validation_split < 1.0:
            raise ValueError(f"fit: validation_split must be a float in [0, 1), got "
                             f"{validation_split!r}.")
        freq = self._validation_epochs(validation_freq)
        data = data_for(x, y, sample_weight, batch_size, steps_per_epoch, "fit",
                        class_weight=check_class_weight(class_weight, self))
        valid = None
        if validation_data is not None:
            if isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3):
                vx, vy, vw = unpack_x_y_sample_weight(tuple(validation_data))
            elif isinstance(validation_data, (tuple, list)):
                kind = type(validation_data).__name__
                raise ValueError(f"fit: validation_data must be (x_val, y_val) or (x_val, "
                                 f"y_val, val_sample_weight), got a {kind} of "
                                 f"{len(validation_data)} elements.")
            else:
                vx, vy, vw = validation_data, None, None
            valid = data_for(vx, vy, vw, validation_batch_size, validation_steps,
                             "fit (validation_data)",
                             default_batch_size=getattr(data, "batch_size", None))
        elif validation_split:
            if not isinstance(data, ArrayData):
                raise ValueError("fit: validation_split is only supported for array inputs "
                                 "(NumPy arrays or tensors); give validation_data for a "
                                 "generator or Sequence.")
            data, valid = data.split(validation_split)
        data = distributed.replica_data(data, self.distribute_strategy, x)
        if valid is not None:
            valid = distributed.replica_data(valid, self.distribute_strategy, validation_data)
        callback_list, history = self._callbacks(
            callbacks, verbose, {"epochs": epochs, "steps": data.steps, "verbose": verbose},
            with_history=True)
        self.stop_training = False
        train_function = self.make_train_function()
        callback_list.on_train_begin()
        # A callback that restored an interrupted run (BackupAndRestore) says where to resume.
        initial_epoch = self.__dict__.pop("_initial_epoch", None) or initial_epoch
        logs = {}
        prepared = False
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            logs = {}
            steps_run = 0
            for step, batch in enumerate(data.batches(shuffle=shuffle)):
                if not prepared:
                    self._prepare_step(batch, training=True)
                    prepared = True
                callback_list.on_train_batch_begin(step)
                logs = _logs_to_floats(train_function(batch))
                callback_list.on_train_batch_end(step, logs)
                steps_run += 1
                if self.stop_training:
                    break
            if data.exhausted:
                warnings.warn("Your input ran out of data; interrupting training. Make sure "
                              "that your dataset or generator can generate at least "
                              f"`steps_per_epoch * epochs` batches ({data.steps} * {epochs}). "
                              "You may need to use the `.repeat()` function when building "
                              "your dataset.", stacklevel=2)
                self.stop_training = True
                if not steps_run:
                    break       # an epoch without a batch is not an epoch
            logs = self._global_logs(logs)
            distributed.average_non_trainable_weights(self, self.distribute_strategy)
            if valid is not None and freq(epoch):
                val_logs = self._evaluate_data(valid, callback_list)
                logs.update({"val_" + key: value for key, value in val_logs.items()})
            callback_list.on_epoch_end(epoch, logs)
            data.on_epoch_end()
            if self.stop_training:
                break
        callback_list.on_train_end(logs)
        return history

    @staticmethod
    def _validation_epochs(validation_freq):
        if isinstance(validation_freq, (int, np.integer)) and not isinstance(
                validation_freq, bool) and validation_freq >= 1:
            return lambda epoch: (epoch + 1) % int(validation_freq) == 0
        if isinstance(validation_freq, (list, tuple, set)):
            epochs = set(validation_freq)
            return lambda epoch: epoch + 1 in epochs
        raise ValueError(f"fit: validation_freq must be a positive integer or a collection of "
                         f"epoch numbers (1-based), got {validation_freq!r}.")

    def _evaluate_data(self, data, callback_list):
        test_function = self.make_test_function()
        self.reset_metrics()
        callback_list.on_test_begin()
        logs = {}
        prepared = False
        for step, batch in enumerate(data.batches()):
            if not prepared:
                self._prepare_step(batch, training=False)
                prepared = True
            callback_list.on_test_batch_begin(step)
            logs = _logs_to_floats(test_function(batch))
            callback_list.on_test_batch_end(step, logs)
        data.on_epoch_end()
        if not prepared:
            raise ValueError("evaluate: the data has no batches (is it empty?).")
        logs = self._global_logs(logs)
        callback_list.on_test_end(logs)
        return logs

    def _global_logs(self, logs):
        """The logs of the metrics over every replica's samples (a copy of ``logs`` when
        there is one replica)."""
        if not distributed.is_distributed(self.distribute_strategy):
            return dict(logs)
        with distributed.global_metric_states(self.metrics, self.distribute_strategy):
            return {**logs, **_logs_to_floats(self.get_metrics_result())}

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """The loss and metrics over the data: a number (loss only), a list
        ``[loss, metric, ...]`` in ``metrics_names`` order or, with ``return_dict``, a dict."""
        self._require_compiled("evaluating")
        verbose = self._verbose(verbose, "evaluate")
        data = distributed.replica_data(
            data_for(x, y, sample_weight, batch_size, steps, "evaluate"),
            self.distribute_strategy, x)
        callback_list, _ = self._callbacks(callbacks, 0, {"steps": data.steps, "verbose": 0},
                                           with_history=False)
        logs = self._evaluate_data(data, callback_list)
        if verbose:
            steps = "" if data.steps is None else f"{data.steps}/{data.steps} - "
            print(f"{steps}{callbacks_lib.format_logs(logs)}")
        return self._logs_result(logs, return_dict)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs for ``x``, computed batch by batch (``training=False``), as
        NumPy arrays concatenated along the batch dimension."""
        self._verbose(verbose, "predict")
        data = distributed.replica_data(data_for(x, None, None, batch_size, steps, "predict"),
                                        self.distribute_strategy, x)
        predict_function = self.make_predict_function()
        callback_list, _ = self._callbacks(callbacks, 0, {"steps": data.steps, "verbose": 0},
                                           with_history=False)
        callback_list.on_predict_begin()
        outputs = []
        for step, batch in enumerate(data.batches()):
            callback_list.on_predict_batch_begin(step)
            result = predict_function(batch)
            outputs.append(distributed.gather_outputs(nest.map_structure(np.asarray, result),
                                                      self.distribute_strategy))
            callback_list.on_predict_batch_end(step, {"outputs": result})
        data.on_epoch_end()
        callback_list.on_predict_end()
        if not outputs:
            raise ValueError("predict: the input has no batches (is it empty?).")
        return nest.map_structure(lambda *parts: np.concatenate(parts, axis=0), *outputs)

    # ---- single batches ---------------------------------------------------------------------
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        """One train step on one batch; returns the loss (and metrics) after it."""
        self._require_compiled("training")
        batch = distributed.replica_batch(
            ArrayData.single_batch(x, y, sample_weight, "train_on_batch",
                                   check_class_weight(class_weight, self)),
            self.distribute_strategy)
        if reset_metrics:
            self.reset_metrics()
        self._prepare_step(batch, training=True)
        logs = self._global_logs(_logs_to_floats(self.make_train_function()(batch)))
        return self._logs_result(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True,
                      return_dict=False):
        """Loss and metrics on one batch, without training."""
        self._require_compiled("evaluating")
        batch = distributed.replica_batch(
            ArrayData.single_batch(x, y, sample_weight, "test_on_batch"),
            self.distribute_strategy)
        if reset_metrics:
            self.reset_metrics()
        self._prepare_step(batch, training=False)
        logs = self._global_logs(_logs_to_floats(self.make_test_function()(batch)))
        return self._logs_result(logs, return_dict)

    def predict_on_batch(self, x):
        """The model's outputs for one batch, as NumPy arrays."""
        strategy = self.distribute_strategy
        batch = distributed.replica_batch(
            ArrayData.single_batch(x, None, None, "predict_on_batch"), strategy)
        return distributed.gather_outputs(
            nest.map_structure(np.asarray, self.make_predict_function()(batch)), strategy)

    def _logs_result(self, logs, return_dict):
        """The logs as ``evaluate`` returns them: the dict, or the values in Keras 3's order
        (the metrics in ``metrics`` order, ``compile_metrics`` by its metrics' own names,
        then the other log entries by name); one value alone."""
        if return_dict:
            return logs
        names = []
        for metric in self.metrics:
            if isinstance(metric, MetricsContainer):
                names += [m.name for m in metric.metrics]
            else:
                names.append(metric.name)
        values = [logs[name] for name in names if name in logs]
        values += [logs[key] for key in sorted(logs) if key not in names]
        return values[0] if len(values) == 1 else values


class _ShapeOnly:
    """A stand-in for a symbolic output: its ``shape`` and ``dtype`` only (what the compiled
    losses and metrics need to be set up)."""

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
