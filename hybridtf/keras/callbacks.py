"""``tf.keras.callbacks``: hooks called by ``fit``, ``evaluate`` and ``predict``.

``fit`` always adds a ``History`` (returned, and kept as ``model.history``) and, unless
``verbose=0``, a ``ProgbarLogger`` (a tqdm bar per epoch showing the running loss and metrics).
"""
import inspect
import math
import os
import sys
import time
import warnings

import numpy as np
from tqdm.auto import tqdm

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "LambdaCallback", "LearningRateScheduler", "TerminateOnNaN"]

_WHOLE_RUN_HOOKS = ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
                    "on_predict_begin", "on_predict_end")
_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end")


class Callback:
    """Base class: override the ``on_*`` hooks you need; ``self.model`` and ``self.params``
    (epochs, steps, verbose) are set before training starts."""

    def __init__(self):
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_batch_begin(self, batch, logs=None):
        """Alias of ``on_train_batch_begin`` (older Keras name)."""

    def on_batch_end(self, batch, logs=None):
        """Alias of ``on_train_batch_end`` (older Keras name)."""

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)


for _hook in _HOOKS:
    if not hasattr(Callback, _hook):
        setattr(Callback, _hook, lambda self, *args, **kwargs: None)


class CallbackList:
    """Calls every callback's hook in order."""

    def __init__(self, callbacks=None, model=None, **params):
        self.callbacks = list(callbacks or [])
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(f"callbacks: {callback!r} is not a keras.callbacks.Callback; "
                                "subclass Callback (or use LambdaCallback).")
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_model(self, model):
        for callback in self.callbacks:
            callback.set_model(model)

    def set_params(self, params):
        for callback in self.callbacks:
            callback.set_params(params)

    def __iter__(self):
        return iter(self.callbacks)

    def __getattr__(self, hook):
        if hook not in _HOOKS:
            raise AttributeError(hook)
        takes_index = hook not in _WHOLE_RUN_HOOKS

        def call_all(*args, logs=None):
            # As Keras: every hook gets its logs positionally, an empty dict when there are
            # none, so that `LambdaCallback(on_epoch_begin=lambda epoch, logs: ...)` works.
            if takes_index:
                if len(args) not in (1, 2):
                    raise TypeError(f"{hook}() takes (index, logs=None).")
                index, logs = args[0], (args[1] if len(args) == 2 else logs)
                for callback in self.callbacks:
                    getattr(callback, hook)(index, {} if logs is None else logs)
            else:
                if len(args) > 1:
                    raise TypeError(f"{hook}() takes (logs=None).")
                logs = args[0] if args else logs
                for callback in self.callbacks:
                    getattr(callback, hook)({} if logs is None else logs)
        return call_all


class History(Callback):
    """Records the logs of every epoch: ``history.history["loss"]`` is the list of epoch losses
    (and so on for metrics and ``val_`` entries); ``history.epoch`` the epoch indices."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        self.model.history = self


def _format_value(value):
    if isinstance(value, (float, int, np.floating, np.integer)):
        return f"{float(value):.4f}"
    return np.array2string(np.asarray(value), precision=4)


def format_logs(logs):
    """``"loss: 0.1234 - accuracy: 0.5000"``: the logs as Keras prints them."""
    return " - ".join(f"{key}: {_format_value(value)}" for key, value in (logs or {}).items())


class ProgbarLogger(Callback):
    """A tqdm progress bar per epoch (``verbose=1``), or one line per epoch (``verbose=2``),
    showing the running loss and metrics, then the validation results."""

    def __init__(self, verbose=1, file=None):
        super().__init__()
        self.verbose = verbose
        self.file = file
        self._bar = None
        self._started = 0.0

    def _out(self):
        return self.file or sys.stdout

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()
        epochs = self.params.get("epochs", 1)
        if self.verbose == 1:
            self._bar = tqdm(total=self.params.get("steps"), desc=f"Epoch {epoch + 1}/{epochs}",
                             unit="step", file=self._out(), leave=True, dynamic_ncols=True)
        elif self.verbose == 2:
            print(f"Epoch {epoch + 1}/{epochs}", file=self._out())

    def on_train_batch_end(self, batch, logs=None):
        if self._bar is not None:
            self._bar.set_postfix({k: _format_value(v) for k, v in (logs or {}).items()},
                                  refresh=False)
            self._bar.update(1)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._bar is not None:
            self._bar.set_postfix({k: _format_value(v) for k, v in logs.items()}, refresh=False)
            self._bar.refresh()
            self._bar.close()
            self._bar = None
        elif self.verbose == 2:
            seconds = time.perf_counter() - self._started
            steps = self.params.get("steps")
            done = f"{steps}/{steps} - " if steps else ""
            print(f"{done}{seconds:.0f}s - {format_logs(logs)}", file=self._out())

    def on_train_end(self, logs=None):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _monitor_mode(monitor, mode, who):
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max', got {mode!r}.")
    if mode == "auto":
        mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure")
                         or "auc" in monitor) else "min"
    return mode


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved by ``min_delta`` for ``patience``
    epochs; ``restore_best_weights`` puts back the weights of the best epoch."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.patience = int(patience)
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(float(min_delta))
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = int(start_from_epoch)
        self.mode = _monitor_mode(monitor, mode, "EarlyStopping")
        if self.mode == "min":
            self.min_delta = -self.min_delta
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_epoch = 0
        self.best_weights = None

    def _better(self, value, reference):
        if reference is None:
            return True
        if self.mode == "min":
            return value - self.min_delta < reference
        return value - self.min_delta > reference

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            warnings.warn(f"EarlyStopping: the monitored value {self.monitor!r} is not in the "
                          f"logs (available: {sorted(logs or {})}); it cannot stop training.",
                          stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(value, self.best):
            self.best = value
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(value, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


class ModelCheckpoint(Callback):
    """Saves the model (or only its weights) after each epoch, or only when ``monitor``
    improved (``save_best_only``).  ``filepath`` may contain ``{epoch}`` and log entries, e.g.
    ``"ckpt/weights.{epoch:02d}-{val_loss:.2f}.weights.h5"``."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__()
        self.filepath = os.fspath(filepath)
        if not save_weights_only and not self.filepath.endswith((".keras", ".h5", ".hdf5")):
            raise ValueError(f"ModelCheckpoint: filepath {self.filepath!r} must end in `.keras` "
                             "(or `.h5`) to save the whole model; pass save_weights_only=True "
                             "to save only the weights (e.g. to a `.weights.h5` file).")
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.mode = _monitor_mode(monitor, mode, "ModelCheckpoint")
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a positive number "
                             f"of batches, got {save_freq!r}.")
        self.save_freq = save_freq
        self.best = initial_value_threshold
        self._batches = 0
        self._epoch = 0

    def _path(self, epoch, logs):
        try:
            return self.filepath.format(epoch=epoch + 1, batch=self._batches, **(logs or {}))
        except KeyError as err:
            raise KeyError(f"ModelCheckpoint: filepath {self.filepath!r} names {err}, which is "
                           f"not in the logs (available: {sorted(logs or {})}).") from None

    def _save(self, epoch, logs):
        logs = logs or {}
        if self.save_best_only:
            value = logs.get(self.monitor)
            if value is None:
                warnings.warn(f"ModelCheckpoint: can save the best model only with "
                              f"{self.monitor!r} available in the logs (available: "
                              f"{sorted(logs)}); skipping.", stacklevel=2)
                return
            better = self.best is None or (value < self.best if self.mode == "min"
                                           else value > self.best)
            if not better:
                if self.verbose > 0:
                    print(f"Epoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose > 0:
                previous = f"{self.best:.5f}" if self.best is not None else \
                    "inf" if self.mode == "min" else "-inf"
                print(f"Epoch {epoch + 1}: {self.monitor} improved from {previous} to "
                      f"{value:.5f}, saving model to {self._path(epoch, logs)}")
            self.best = value
        elif self.verbose > 0:
            print(f"Epoch {epoch + 1}: saving model to {self._path(epoch, logs)}")
        path = self._path(epoch, logs)
        if self.save_weights_only:
            self.model.save_weights(path, overwrite=True)
        else:
            self.model.save(path, overwrite=True)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq != "epoch":
            self._batches += 1
            if self._batches % self.save_freq == 0:
                self._save(self._epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, logs)


class LambdaCallback(Callback):
    """A callback from plain functions: ``LambdaCallback(on_epoch_end=lambda epoch, logs: ...)``."""

    def __init__(self, **hooks):
        super().__init__()
        for name, fn in hooks.items():
            if name not in _HOOKS and name not in ("on_batch_begin", "on_batch_end"):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}; the hooks are "
                                 f"{list(_HOOKS)}.")
            setattr(self, name, fn)


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at the start of each epoch to
    ``schedule(epoch, current_learning_rate)`` (or ``schedule(epoch)`` for a one-argument
    schedule, as TF 2 accepts), and records it in the epoch's logs as ``"lr"``."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError(f"LearningRateScheduler: schedule must be a function (epoch, lr) -> "
                            f"new learning rate, got {schedule!r}.")
        self.schedule = schedule
        self.verbose = verbose
        self._takes_rate = _positional_arity(schedule) != 1

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "learning_rate"):
            raise ValueError('LearningRateScheduler: the optimizer must have a "learning_rate" '
                             "attribute (compile the model first).")
        current = float(np.asarray(optimizer.learning_rate))
        value = self.schedule(epoch, current) if self._takes_rate else self.schedule(epoch)
        try:
            value = float(np.asarray(value))
        except (TypeError, ValueError):
            raise ValueError(f"LearningRateScheduler: the schedule returned {value!r} for epoch "
                             f"{epoch}; it must return a float.") from None
        if not math.isfinite(value):
            raise ValueError(f"LearningRateScheduler: the schedule returned {value} for epoch "
                             f"{epoch}; it must return a finite float.")
        optimizer.learning_rate = value
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {value}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(np.asarray(self.model.optimizer.learning_rate))


def _positional_arity(fn):
    """How many positional arguments ``fn`` takes (2 when it takes ``*args`` or cannot be
    inspected)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


class TerminateOnNaN(Callback):
    """Stops training as soon as the loss is NaN or infinite."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True
