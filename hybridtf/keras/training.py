"""``Model.compile`` / ``fit`` / ``evaluate`` / ``predict``: Keras's training loop.

A train step -- forward pass, loss, gradients, optimizer update and metric updates -- is one
``hybridtf.function`` (so one compiled graph); a model overrides ``train_step(data)`` /
``test_step(data)`` / ``predict_step(data)`` to change what a step does, as in Keras.  The loop
around it slices NumPy batches, calls the step and drives callbacks and the progress bar.
"""
import numpy as np

from hybridtf.eager.backprop import GradientTape
from hybridtf.framework import nest
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.tensor import Tensor
from hybridtf.graph.function import function
from hybridtf.keras import callbacks as callbacks_lib
from hybridtf.keras import losses as losses_lib
from hybridtf.keras import metrics as metrics_lib
from hybridtf.keras import optimizers as optimizers_lib


# ---- data -------------------------------------------------------------------------------------
def _as_array(value, what):
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        return np.asarray(value)
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except Exception as err:  # noqa: BLE001 - re-raised with the argument named
        raise TypeError(f"fit: {what} must be NumPy arrays, tensors, or lists/dicts of them; "
                        f"got {type(value).__name__} ({err}).") from None


def _arrays(structure, what):
    return None if structure is None else nest.map_structure(
        lambda v: _as_array(v, what), structure)


def _num_samples(structures):
    sizes = set()
    for structure in structures:
        for leaf in nest.flatten(structure):
            if leaf is None:
                continue
            if leaf.ndim == 0:
                raise ValueError(f"fit: inputs must have a batch dimension, got a scalar "
                                 f"{leaf!r}.")
            sizes.add(leaf.shape[0])
    if len(sizes) > 1:
        raise ValueError(f"Data cardinality is ambiguous: x, y and sample_weight have "
                         f"{sorted(sizes)} samples; make sure all arrays contain the same "
                         "number of samples.")
    return sizes.pop() if sizes else 0


def unpack_x_y_sample_weight(data):
    """``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)`` -> the three (missing ones None)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be (x,), (x, y) or (x, y, sample_weight); got a "
                     f"tuple of {len(data)} elements.")


class _ArrayData:
    """Batches of in-memory arrays: ``batches(shuffle)`` yields (x, y, sample_weight) slices."""

    def __init__(self, x, y, sample_weight, batch_size):
        self.x = _arrays(x, "x")
        self.y = _arrays(y, "y")
        self.sample_weight = _arrays(sample_weight, "sample_weight")
        self.size = _num_samples([self.x, self.y, self.sample_weight])
        if batch_size is None:
            batch_size = 32
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
        self.batch_size = int(batch_size)
        self.steps = -(-self.size // self.batch_size)

    def split(self, fraction):
        """(training part, validation part): the last ``fraction`` of the samples, before any
        shuffling, is held out -- Keras's ``validation_split``."""
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"validation_split must be in (0, 1), got {fraction}.")
        cut = int(self.size * (1.0 - fraction))
        if cut == 0 or cut == self.size:
            raise ValueError(f"validation_split={fraction} leaves no samples for training or "
                             f"for validation out of {self.size}.")

        def part(structure, index):
            return None if structure is None else nest.map_structure(lambda a: a[index],
                                                                     structure)
        train = _ArrayData(part(self.x, slice(0, cut)), part(self.y, slice(0, cut)),
                           part(self.sample_weight, slice(0, cut)), self.batch_size)
        valid = _ArrayData(part(self.x, slice(cut, None)), part(self.y, slice(cut, None)),
                           part(self.sample_weight, slice(cut, None)), self.batch_size)
        return train, valid

    def batches(self, shuffle=False):
        order = np.random.permutation(self.size) if shuffle else None
        for start in range(0, self.size, self.batch_size):
            stop = min(start + self.batch_size, self.size)
            index = order[start:stop] if order is not None else slice(start, stop)

            def take(structure):
                if structure is None:
                    return None
                return nest.map_structure(
                    lambda a: convert_to_tensor(np.ascontiguousarray(a[index])), structure)
            yield take(self.x), take(self.y), take(self.sample_weight)


class _IterableData:
    """Batches from an iterable of ``(x, y[, sample_weight])`` tuples (a generator, or an object
    with ``__len__`` and ``__getitem__`` such as a ``keras.utils.Sequence``)."""

    def __init__(self, source, steps):
        self.source = source
        self.steps = steps if steps is not None else (
            len(source) if hasattr(source, "__len__") else None)
        self.size = None

    def batches(self, shuffle=False):
        iterator = iter(self.source)
        count = 0
        while self.steps is None or count < self.steps:
            try:
                data = next(iterator)
            except StopIteration:
                return
            x, y, sample_weight = unpack_x_y_sample_weight(data)
            convert = (lambda s: None if s is None else nest.map_structure(
                lambda a: convert_to_tensor(np.asarray(a)), s))
            yield convert(x), convert(y), convert(sample_weight)
            count += 1


def _data(x, y, sample_weight, batch_size, steps, who):
    if x is None:
        raise ValueError(f"{who}: x is required.")
    if hasattr(x, "__next__") or (not isinstance(x, (np.ndarray, Tensor, list, tuple, dict))
                                  and hasattr(x, "__getitem__") and hasattr(x, "__len__")
                                  and not hasattr(x, "shape")):
        if y is not None:
            raise ValueError(f"{who}: y must not be given when x is a generator or Sequence "
                             "(it yields (x, y) batches).")
        return _IterableData(x, steps)
    return _ArrayData(x, y, sample_weight, batch_size)


def _logs_to_floats(logs):
    return {key: float(np.asarray(value)) for key, value in logs.items()}


# ---- the mixin --------------------------------------------------------------------------------
class Trainer:
    """The training API of ``keras.Model``."""

    def _init_training(self):
        self.optimizer = None
        self.compiled_loss = None
        self._loss_spec = self.loss = None
        self.compiled_metrics = []
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
        """Configures the model for training: an optimizer (instance or name), a loss
        (function, instance or name) and metrics (instances, functions or names such as
        ``"accuracy"``)."""
        if kwargs:
            raise TypeError(f"compile: unexpected arguments {sorted(kwargs)}.")
        if "_training_initialized" not in self.__dict__:
            self._init_training()
            self._training_initialized = True
        self.optimizer = optimizers_lib.get(optimizer)
        self._loss_spec = self.loss = loss
        self.compiled_loss = None if loss is None else losses_lib.get(loss)
        if self.compiled_loss is not None and not isinstance(self.compiled_loss,
                                                             losses_lib.Loss):
            # A loss function gives per-sample losses: reduced (and weighted) like a Loss.
            self.compiled_loss = losses_lib.LossFunctionWrapper(self.compiled_loss)
        if loss_weights is not None and not isinstance(loss_weights, (int, float)):
            raise ValueError("compile: loss_weights is supported as one number for a "
                             "single-output model.")
        self._loss_weight = 1.0 if loss_weights is None else float(loss_weights)
        specs = [] if metrics is None else list(metrics) if isinstance(
            metrics, (list, tuple)) else [metrics]
        specs += list(weighted_metrics or [])
        self._metric_specs = specs
        self.compiled_metrics = []       # made on the first step, when y's shapes are known
        self._loss_tracker = metrics_lib.Mean(name="loss")
        self._run_eagerly = bool(run_eagerly)
        self.train_function = self.test_function = self.predict_function = None
        self._is_compiled = True

    def _require_compiled(self, who):
        if not self.__dict__.get("_is_compiled"):
            raise RuntimeError(f"You must compile your model before {who}: call "
                               "`model.compile(optimizer, loss)`.")

    @property
    def run_eagerly(self):
        return self.__dict__.get("_run_eagerly", False)

    @run_eagerly.setter
    def run_eagerly(self, value):
        self._run_eagerly = bool(value)
        self.train_function = self.test_function = self.predict_function = None

    @property
    def metrics(self):
        """The loss tracker and the compiled metrics (once a step has built them)."""
        if self.__dict__.get("_loss_tracker") is None:
            return []
        return [self._loss_tracker] + list(self.compiled_metrics)

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        for metric in self.metrics:
            metric.reset_state()

    # ---- steps ------------------------------------------------------------------------------
    def _build_metrics(self, y, y_pred):
        if self.compiled_metrics or not self._metric_specs:
            return
        self.compiled_metrics = [metrics_lib.resolve(spec, y, y_pred)
                                 for spec in self._metric_specs]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """The compiled loss (times ``loss_weights``) plus the losses the layers added."""
        total = None
        if self.compiled_loss is not None:
            if y is None:
                raise ValueError("The model was compiled with a loss but fit/evaluate got no "
                                 "targets y.")
            total = self.compiled_loss(y, y_pred, sample_weight=sample_weight)
            if self._loss_weight != 1.0:
                total = total * self._loss_weight
        for extra in self.losses:
            total = extra if total is None else total + extra
        if total is None:
            raise ValueError("No loss to compute: compile the model with a loss, or add "
                             "losses in the layers with add_loss.")
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight):
        """Updates the metrics with a batch; returns ``{name: running value}``."""
        self._build_metrics(y, y_pred)
        for metric in self.compiled_metrics:
            metric.update_state(y, y_pred, sample_weight=sample_weight)
        return {m.name: m.result() for m in self.metrics}

    def _track_loss(self, loss, x):
        batch = nest.flatten(x)[0]
        self._loss_tracker.update_state(loss, sample_weight=batch.shape[0])

    def train_step(self, data):
        """One optimization step on a batch ``(x, y[, sample_weight])``: forward pass, loss,
        gradients, optimizer update, metric updates.  Returns the running metrics."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        """Loss and metrics on a batch, without training."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        self._track_loss(loss, x)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _step_function(self, attribute, step):
        existing = getattr(self, attribute)
        if existing is not None:
            return existing

        def run(data):
            return step(data)
        fn = run if self.run_eagerly else function(run, name=f"{attribute}")
        setattr(self, attribute, fn)
        return fn

    def make_train_function(self):
        return self._step_function("train_function", self.train_step)

    def make_test_function(self):
        return self._step_function("test_function", self.test_step)

    def make_predict_function(self):
        return self._step_function("predict_function", self.predict_step)

    # ---- fit / evaluate / predict -----------------------------------------------------------
    def _callbacks(self, callbacks, verbose, params, with_history):
        callbacks = list(callbacks or [])
        history = None
        if with_history:
            history = callbacks_lib.History()
            callbacks.append(history)
        if verbose:
            callbacks.append(callbacks_lib.ProgbarLogger(verbose=verbose))
        return callbacks_lib.CallbackList(callbacks, model=self, **params), history

    @staticmethod
    def _verbose(verbose):
        if verbose == "auto":
            return 1
        if verbose not in (0, 1, 2):
            raise ValueError(f"verbose must be 'auto', 0, 1 or 2, got {verbose!r}.")
        return verbose

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Trains for ``epochs`` passes over the data; returns a ``History``."""
        self._require_compiled("training")
        if class_weight is not None:
            raise ValueError("fit: class_weight is not supported; pass per-sample weights as "
                             "sample_weight instead.")
        verbose = self._verbose(verbose)
        data = _data(x, y, sample_weight, batch_size, steps_per_epoch, "fit")
        valid = None
        if validation_data is not None:
            vx, vy, vw = unpack_x_y_sample_weight(validation_data)
            valid = _data(vx, vy, vw, validation_batch_size or data.__dict__.get(
                "batch_size"), validation_steps, "fit (validation_data)")
        elif validation_split:
            if not isinstance(data, _ArrayData):
                raise ValueError("fit: validation_split needs array inputs; give "
                                 "validation_data for generators.")
            data, valid = data.split(validation_split)
        train_function = self.make_train_function()
        callback_list, history = self._callbacks(
            callbacks, verbose, {"epochs": epochs, "steps": data.steps, "verbose": verbose},
            with_history=True)
        self.stop_training = False
        callback_list.on_train_begin()
        logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            logs = {}
            for step, batch in enumerate(data.batches(shuffle=bool(shuffle))):
                callback_list.on_train_batch_begin(step)
                logs = _logs_to_floats(train_function(batch))
                callback_list.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            if valid is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate_data(valid, callback_list, verbose=0)
                logs.update({"val_" + key: value for key, value in val_logs.items()})
            callback_list.on_epoch_end(epoch, logs)
            if self.stop_training:
                break
        callback_list.on_train_end(logs)
        return history

    def _evaluate_data(self, data, callback_list, verbose):
        test_function = self.make_test_function()
        self.reset_metrics()
        callback_list.on_test_begin()
        logs = {}
        for step, batch in enumerate(data.batches()):
            callback_list.on_test_batch_begin(step)
            logs = _logs_to_floats(test_function(batch))
            callback_list.on_test_batch_end(step, logs)
        callback_list.on_test_end(logs)
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """The loss and metrics over the data: a number (loss only), a list
        ``[loss, metric, ...]`` or, with ``return_dict``, a dict."""
        self._require_compiled("evaluating")
        data = _data(x, y, sample_weight, batch_size, steps, "evaluate")
        callback_list, _ = self._callbacks(callbacks, 0, {"steps": data.steps, "verbose": 0},
                                           with_history=False)
        logs = self._evaluate_data(data, callback_list, verbose)
        if self._verbose(verbose) and logs:
            print(" - ".join(f"{key}: {value:.4f}" for key, value in logs.items()))
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs for ``x``, batch by batch, as NumPy arrays."""
        data = _data(x, None, None, batch_size, steps, "predict")
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
        callback_list.on_predict_end()
        if not outputs:
            raise ValueError("predict: no batches (is the input empty?).")
        return nest.map_structure(lambda *parts: np.concatenate(parts, axis=0), *outputs)

    def train_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """One train step on one batch; returns the loss (and metrics) after it."""
        self._require_compiled("training")
        self.reset_metrics()
        data = _ArrayData(x, y, sample_weight, None)
        batch = next(_ArrayData(x, y, sample_weight, max(data.size, 1)).batches())
        logs = _logs_to_floats(self.make_train_function()(batch))
        return self._logs_result(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._require_compiled("evaluating")
        self.reset_metrics()
        data = _ArrayData(x, y, sample_weight, None)
        batch = next(_ArrayData(x, y, sample_weight, max(data.size, 1)).batches())
        logs = _logs_to_floats(self.make_test_function()(batch))
        return self._logs_result(logs, return_dict)

    def predict_on_batch(self, x):
        data = _ArrayData(x, None, None, None)
        batch = next(_ArrayData(x, None, None, max(data.size, 1)).batches())
        return nest.map_structure(np.asarray, self.make_predict_function()(batch))

    def _logs_result(self, logs, return_dict):
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values
