"""``Model.compile`` / ``fit`` / ``evaluate`` / ``predict``: Keras's training loop.

A train step -- forward pass, loss, gradients, optimizer update and metric updates -- is one
``hybridtf.function`` (so one compiled graph), traced once per batch shape (a last partial
batch adds one trace).  Before the first trace the step's variables (the model's weights, the
metrics' state, the optimizer's slots) are created, so that creating them does not cost a
second trace.

A model overrides ``train_step(data)`` / ``test_step(data)`` / ``predict_step(data)`` to change
what a step does, as in Keras; inside them ``self.compiled_loss(y, y_pred,
regularization_losses=self.losses)``, ``self.compiled_metrics.update_state(y, y_pred)``,
``self.compute_loss(...)`` and ``self.compute_metrics(...)`` work as in TF 2.  The loop around
the step slices NumPy batches (data_adapter.py), calls the step and drives callbacks and the
progress bar.
"""
import numbers
import warnings

import numpy as np

from hybridtf.api import array_ops, math_ops
from hybridtf.autograph import operators as autograph_operators
from hybridtf.eager import tape as tape_lib
from hybridtf.eager.backprop import GradientTape
from hybridtf.framework import dtypes, nest
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph
from hybridtf.graph.function import function
from hybridtf.keras import callbacks as callbacks_lib
from hybridtf.keras import losses as losses_lib
from hybridtf.keras import metrics as metrics_lib
from hybridtf.keras import optimizers as optimizers_lib
from hybridtf.keras.data_adapter import (ArrayData, check_class_weight, data_for,
                                         unpack_x_y_sample_weight)

__all__ = ["Trainer", "LossesContainer", "MetricsContainer", "unpack_x_y_sample_weight"]


# ---- output names and per-output arguments -----------------------------------------------------
def _output_names(model, count):
    """Keras's names of a model's outputs: the output layers' names for a functional model,
    ``output_1``, ``output_2``, ... otherwise."""
    outputs = model.__dict__.get("outputs")
    if model.__dict__.get("_is_graph_network") and outputs and len(outputs) == count:
        names = [t._keras_history[0].name for t in outputs]
        if len(set(names)) == count:
            return names
    return [f"output_{i + 1}" for i in range(count)]


def _per_output(spec, names, argument):
    """``spec`` (one value for every output, a list with one per output, or a dict keyed by
    output name) as a list with one entry per output (None where none is given)."""
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError(f"compile: {argument} has keys {unknown} that are not output names "
                             f"of the model; its outputs are {names}.")
        return [spec.get(name) for name in names]
    if isinstance(spec, (list, tuple)):
        if len(spec) != len(names):
            raise ValueError(f"compile: {argument} is a list of {len(spec)} entries but the "
                             f"model has {len(names)} output(s) {names}; give one entry per "
                             "output, or a dict keyed by output name.")
        return list(spec)
    return [spec] * len(names)


def _flat_targets(y_true, count, who):
    if y_true is None:
        return [None] * count
    if isinstance(y_true, dict) or (isinstance(y_true, (list, tuple)) and count > 1):
        flat = nest.flatten(y_true)
        if len(flat) != count:
            raise ValueError(f"{who}: the model has {count} outputs but y has {len(flat)} "
                             "targets; give one target array per output.")
        return flat
    if count > 1:
        raise ValueError(f"{who}: the model has {count} outputs; give y as a list (or dict) "
                         "of one target array per output.")
    return [y_true]


def _batch_size_of(x, dtype):
    """The number of samples in a batch: static when known, else a tensor (a step traced with
    an unknown batch dimension)."""
    first = nest.flatten(x)[0]
    size = first.shape[0] if first.shape.rank else None
    if size is not None:
        return float(size)
    return math_ops.cast(array_ops.shape(first)[0], dtype)


# ---- compiled loss and metrics -----------------------------------------------------------------
class LossesContainer:
    """``model.compiled_loss``: the loss(es) given to ``compile``.

    Calling it as ``compiled_loss(y_true, y_pred, sample_weight=None,
    regularization_losses=None)`` returns the total loss -- each output's loss times its
    ``loss_weights`` entry, plus the regularization losses -- and adds it to the ``loss``
    tracker (and, for a model with several outputs, each output's loss to ``<output>_loss``).
    """

    def __init__(self, losses, loss_weights=None, output_names=None):
        self._user_losses = losses
        self._user_loss_weights = loss_weights
        self._output_names = output_names
        self._loss_metric = metrics_lib.Mean(name="loss")
        self._per_output_metrics = []
        self._losses = None       # [(Loss or None, weight)] per output, once built

    @property
    def built(self):
        return self._losses is not None

    @property
    def metrics(self):
        """The ``loss`` tracker, then one tracker per output loss (several outputs)."""
        return [self._loss_metric] + [m for m in self._per_output_metrics if m is not None]

    def build(self, y_pred, names=None):
        flat = nest.flatten(y_pred)
        names = names or self._output_names or [f"output_{i + 1}" for i in range(len(flat))]
        specs = _per_output(self._user_losses, names, "loss")
        weights = _per_output(self._user_loss_weights, names, "loss_weights")
        self._losses = [(None if spec is None else _as_loss(spec),
                         1.0 if weight is None else float(weight))
                        for spec, weight in zip(specs, weights)]
        self._per_output_metrics = [
            metrics_lib.Mean(name=f"{name}_loss") if loss is not None and len(flat) > 1
            else None for name, (loss, _) in zip(names, self._losses)]

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        if not self.built:
            self.build(y_pred)
        flat_pred = nest.flatten(y_pred)
        if len(flat_pred) != len(self._losses):
            raise ValueError(f"compiled_loss: the model gave {len(flat_pred)} outputs but the "
                             f"loss was set up for {len(self._losses)}.")
        flat_true = _flat_targets(y_true, len(flat_pred), "compiled_loss")
        weights = (nest.flatten(sample_weight) if isinstance(sample_weight, (list, tuple, dict))
                   and len(flat_pred) > 1 else [sample_weight] * len(flat_pred))
        dtype = flat_pred[0].dtype if flat_pred[0].dtype.is_floating else dtypes.float32
        batch = _batch_size_of(flat_pred, dtype)
        total = None
        for (loss, weight), y_t, y_p, s_w, tracker in zip(
                self._losses, flat_true, flat_pred, weights, self._per_output_metrics):
            if loss is None:
                continue
            if y_t is None:
                raise ValueError("The model was compiled with a loss, but no target y was given "
                                 "to fit/evaluate/train_on_batch; pass y (or yield (x, y) "
                                 "batches).")
            value = loss(y_t, y_p, sample_weight=s_w)
            if tracker is not None:
                tracker.update_state(value, sample_weight=batch)
            if weight != 1.0:
                value = value * weight
            total = value if total is None else total + value
        for extra in regularization_losses or []:
            extra = math_ops.cast(extra, dtype) if isinstance(extra, Tensor) else extra
            total = extra if total is None else total + extra
        if total is None:
            total = array_ops.zeros([], dtype)
        self._loss_metric.update_state(total, sample_weight=batch)
        return total

    def reset_state(self):
        for metric in self.metrics:
            metric.reset_state()


def _as_loss(spec):
    loss = losses_lib.get(spec)
    if not isinstance(loss, losses_lib.Loss):
        # A function gives per-sample losses: reduced (and weighted) like a Loss.
        loss = losses_lib.LossFunctionWrapper(loss, name=getattr(loss, "__name__", None))
    return loss


class MetricsContainer:
    """``model.compiled_metrics``: the metrics given to ``compile``.

    ``update_state(y_true, y_pred, sample_weight=None)`` updates them; ``metrics`` lists them
    (``metrics`` first, then ``weighted_metrics``).  Only ``weighted_metrics`` receive the
    sample weights, as in Keras.  String identifiers are resolved against the first batch's
    shapes (``"accuracy"`` becomes binary, sparse or categorical accuracy).
    """

    def __init__(self, metrics=None, weighted_metrics=None, output_names=None):
        self._user_metrics = metrics
        self._user_weighted_metrics = weighted_metrics
        self._output_names = output_names
        self._metrics = None           # per output: [Metric]
        self._weighted = None

    @property
    def built(self):
        return self._metrics is not None

    @property
    def metrics(self):
        if not self.built:
            return []
        return [m for group in self._metrics + self._weighted for m in group]

    def __iter__(self):
        return iter(self.metrics)

    def __len__(self):
        return len(self.metrics)

    def build(self, y_true, y_pred, names=None):
        flat_pred = nest.flatten(y_pred)
        count = len(flat_pred)
        names = names or self._output_names or [f"output_{i + 1}" for i in range(count)]
        flat_true = _flat_targets(y_true, count, "compiled_metrics") if y_true is not None \
            else [None] * count

        def per_output(spec, argument):
            if spec is None:
                return [[] for _ in range(count)]
            if isinstance(spec, dict):
                groups = _per_output(spec, names, argument)
                return [[] if g is None else list(g) if isinstance(g, (list, tuple)) else [g]
                        for g in groups]
            spec = list(spec) if isinstance(spec, (list, tuple)) else [spec]
            if count > 1 and len(spec) == count and all(isinstance(s, (list, tuple))
                                                        for s in spec):
                return [list(s) for s in spec]
            if count > 1 and any(isinstance(s, (list, tuple)) for s in spec):
                raise ValueError(f"compile: {argument} as a list of lists needs one list per "
                                 f"output ({count} outputs {names}).")
            return [list(spec) for _ in range(count)]

        plain = per_output(self._user_metrics, "metrics")
        weighted = per_output(self._user_weighted_metrics, "weighted_metrics")
        used = set()

        def make(groups, is_weighted):
            out = []
            for i, group in enumerate(groups):
                made = []
                for spec in group:
                    if i > 0 and isinstance(spec, metrics_lib.Metric) and any(
                            spec is first for first in groups[0]):
                        # One Metric object listed for every output: each output gets its own.
                        spec = type(spec).from_config(spec.get_config())
                    metric = metrics_lib.resolve(spec, flat_true[i], flat_pred[i])
                    if count > 1:
                        metric.name = f"{names[i]}_{metric.name}"
                    if is_weighted and metric.name in used:
                        metric.name = f"weighted_{metric.name}"
                    used.add(metric.name)
                    made.append(metric)
                out.append(made)
            return out
        self._metrics = make(plain, False)
        self._weighted = make(weighted, True)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Updates every metric with a batch (``weighted_metrics`` with ``sample_weight``)."""
        if not self.built:
            self.build(y_true, y_pred)
        if y_true is None:
            return
        flat_pred = nest.flatten(y_pred)
        flat_true = _flat_targets(y_true, len(flat_pred), "compiled_metrics")
        weights = (nest.flatten(sample_weight) if isinstance(sample_weight, (list, tuple, dict))
                   and len(flat_pred) > 1 else [sample_weight] * len(flat_pred))
        for i, (y_t, y_p) in enumerate(zip(flat_true, flat_pred)):
            for metric in self._metrics[i]:
                metric.update_state(y_t, y_p)
            for metric in self._weighted[i]:
                metric.update_state(y_t, y_p, sample_weight=weights[i])

    def reset_state(self):
        for metric in self.metrics:
            metric.reset_state()


def _logs_to_floats(logs):
    out = {}
    for key, value in logs.items():
        array = np.asarray(value)
        out[key] = float(array) if array.ndim == 0 else array
    return out


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
        self._check_loss_specs(loss)
        self.compiled_loss = LossesContainer(loss, loss_weights)
        self.compiled_metrics = MetricsContainer(metrics, weighted_metrics)
        self._loss_tracker = self.compiled_loss._loss_metric
        self._steps_per_execution = steps_per_execution
        self._jit_compile = jit_compile
        self._run_eagerly = bool(run_eagerly)
        self.train_function = self.test_function = self.predict_function = None
        self._is_compiled = True

    @staticmethod
    def _check_loss_specs(loss):
        """Rejects unknown loss names at compile time (Keras does the same)."""
        specs = loss.values() if isinstance(loss, dict) else loss if isinstance(
            loss, (list, tuple)) else [loss]
        for spec in specs:
            if spec is not None:
                _as_loss(spec)

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
    def metrics(self):
        """The metrics ``fit`` reports: the loss tracker(s), the compiled metrics, then the
        ``Metric`` objects held as attributes of the model (custom train steps)."""
        found = []
        if self.__dict__.get("compiled_loss") is not None:
            found += self.compiled_loss.metrics
        if self.__dict__.get("compiled_metrics") is not None:
            found += self.compiled_metrics.metrics
        ids = {id(m) for m in found}
        for value in self.__dict__.values():
            if isinstance(value, metrics_lib.Metric) and id(value) not in ids:
                ids.add(id(value))
                found.append(value)
        return found

    @property
    def metrics_names(self):
        """The names of ``metrics`` (the keys of the logs and of ``history.history``)."""
        return list(dict.fromkeys(m.name for m in self.metrics))

    def reset_metrics(self):
        """Resets the state of every metric in ``metrics``."""
        for metric in self.metrics:
            metric.reset_state()

    # ---- steps ------------------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss (times ``loss_weights``) plus the losses the layers added
        (``self.losses``); updates the ``loss`` tracker."""
        del x, training
        losses = self.losses
        if self.compiled_loss is None or (self._loss_spec is None and not losses):
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`, or "
                             "add losses in the layers with `add_loss`.")
        return self.compiled_loss(y, y_pred, sample_weight, regularization_losses=losses)

    def compute_metrics(self, x, y, y_pred, sample_weight):
        """Updates the compiled metrics with a batch; returns ``{name: running value}`` for
        every metric in ``metrics``."""
        del x
        self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        """``{name: result}`` for every metric in ``metrics`` (dict results are merged; where
        two metrics share a name, the compiled one is reported)."""
        logs = {}
        for metric in self.metrics:
            result = metric.result()
            items = result.items() if isinstance(result, dict) else [(metric.name, result)]
            for name, value in items:
                logs.setdefault(name, value)
        return logs

    def train_step(self, data):
        """One optimization step on a batch ``(x, y[, sample_weight])``: forward pass, loss,
        gradients, optimizer update, metric updates.  Returns the running metrics."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        variables = self.trainable_variables
        if variables:
            grads = tape.gradient(loss, variables)
            self.optimizer.apply_gradients(zip(grads, variables))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        """Loss and metrics on a batch, without training."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """The model's outputs for a batch (``training=False``)."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _step_function(self, attribute, step):
        existing = getattr(self, attribute)
        if existing is not None:
            return existing

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
        x, y, _ = unpack_x_y_sample_weight(batch)
        # A custom step may not feed `x` to the model as it is: leave it to its first trace.
        custom = _step_is_overridden(self, "train_step" if training else "test_step")
        containers_ready = self.compiled_metrics.built and self.compiled_loss.built
        if not custom and not (self.built and containers_ready):
            outputs = self._symbolic_outputs(x)
            names = _output_names(self, len(nest.flatten(outputs)))
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
        callback_list, history = self._callbacks(
            callbacks, verbose, {"epochs": epochs, "steps": data.steps, "verbose": verbose},
            with_history=True)
        self.stop_training = False
        train_function = self.make_train_function()
        callback_list.on_train_begin()
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
            logs = dict(logs)
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
        callback_list.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """The loss and metrics over the data: a number (loss only), a list
        ``[loss, metric, ...]`` in ``metrics_names`` order or, with ``return_dict``, a dict."""
        self._require_compiled("evaluating")
        verbose = self._verbose(verbose, "evaluate")
        data = data_for(x, y, sample_weight, batch_size, steps, "evaluate")
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
        data = data_for(x, None, None, batch_size, steps, "predict")
        predict_function = self.make_predict_function()
        callback_list, _ = self._callbacks(callbacks, 0, {"steps": data.steps, "verbose": 0},
                                           with_history=False)
        callback_list.on_predict_begin()
        outputs = []
        for step, batch in enumerate(data.batches()):
            callback_list.on_predict_batch_begin(step)
            result = predict_function(batch)
            outputs.append(nest.map_structure(np.asarray, result))
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
        batch = ArrayData.single_batch(x, y, sample_weight, "train_on_batch",
                                       check_class_weight(class_weight, self))
        if reset_metrics:
            self.reset_metrics()
        self._prepare_step(batch, training=True)
        logs = _logs_to_floats(self.make_train_function()(batch))
        return self._logs_result(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True,
                      return_dict=False):
        """Loss and metrics on one batch, without training."""
        self._require_compiled("evaluating")
        batch = ArrayData.single_batch(x, y, sample_weight, "test_on_batch")
        if reset_metrics:
            self.reset_metrics()
        self._prepare_step(batch, training=False)
        logs = _logs_to_floats(self.make_test_function()(batch))
        return self._logs_result(logs, return_dict)

    def predict_on_batch(self, x):
        """The model's outputs for one batch, as NumPy arrays."""
        batch = ArrayData.single_batch(x, None, None, "predict_on_batch")
        return nest.map_structure(np.asarray, self.make_predict_function()(batch))

    def _logs_result(self, logs, return_dict):
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        values += [value for key, value in logs.items() if key not in self.metrics_names]
        return values[0] if len(values) == 1 else values


class _ShapeOnly:
    """A stand-in for a symbolic output: its ``shape`` and ``dtype`` only (what the compiled
    losses and metrics need to be set up)."""

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
