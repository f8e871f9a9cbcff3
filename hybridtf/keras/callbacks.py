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

from hybridtf import summary
from hybridtf.keras import model_graph
from hybridtf.keras.backup_and_restore import BackupAndRestore  # noqa: F401
from hybridtf.keras.callback_base import HOOKS, WHOLE_RUN_HOOKS, Callback, monitor_mode
from hybridtf.keras.csv_logger import CSVLogger  # noqa: F401
from hybridtf.keras.reduce_lr_on_plateau import ReduceLROnPlateau  # noqa: F401

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "LambdaCallback", "LearningRateScheduler", "TerminateOnNaN",
           "TensorBoard", "ReduceLROnPlateau", "CSVLogger", "BackupAndRestore"]


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
        if hook not in HOOKS:
            raise AttributeError(hook)
        takes_index = hook not in WHOLE_RUN_HOOKS

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
        self.mode = monitor_mode(monitor, mode, "EarlyStopping")
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
        self.mode = monitor_mode(monitor, mode, "ModelCheckpoint")
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
            if name not in HOOKS and name not in ("on_batch_begin", "on_batch_end"):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}; the hooks are "
                                 f"{list(HOOKS)}.")
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


class TensorBoard(Callback):
    """Writes TensorBoard logs of training, as Keras 3 does (view them with
    ``tensorboard --logdir LOG_DIR``; needs ``pip install "hybridtf[tensorboard]"``).

    Each ``fit`` writes new event files in ``log_dir/train`` and ``log_dir/validation``:

    * ``epoch_<name>`` scalars at each epoch: the loss and metrics (``epoch_loss``,
      ``epoch_accuracy``, ...) and ``epoch_learning_rate`` in ``train/``; the validation
      results in ``validation/`` (without their ``val_`` prefix, so the curves overlay);
    * ``evaluation_<name>_vs_iterations`` in ``validation/`` after each evaluation, at the
      optimizer's iteration count;
    * ``update_freq``: ``"epoch"`` (default), or ``"batch"`` / N to also write
      ``batch_<name>`` every N batches (counted over the whole of training); the train writer
      is then the default writer during the batches, so ``tf.summary`` calls in the model
      write there too;
    * ``histogram_freq`` = N: a histogram of each weight (``<weight name>/histogram``) every
      N epochs, and with ``write_images`` the weights drawn as images (``.../image``);
    * ``write_steps_per_second``: ``epoch_steps_per_second`` (and ``batch_steps_per_second``
      with ``update_freq``);
    * ``write_graph`` (default True): the model's conceptual graph (its layers and how they
      connect; TensorBoard's Graphs dashboard, tag ``keras``) for Sequential and functional
      models, as Keras 3 writes it.  There is no TensorFlow op graph to write: a compiled
      hybridtf step is a Numba kernel.

    Epoch-level summaries are written whatever batch ``update_freq`` last recorded (Keras 3
    skips them when an epoch's last batch is not a multiple of ``update_freq``).
    ``profile_batch`` and ``embeddings_freq`` must be 0: hybridtf has no profiler, and the
    embedding projector reads TensorFlow checkpoints, which hybridtf does not write.
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        self.log_dir = os.fspath(log_dir)
        if isinstance(histogram_freq, bool) or not isinstance(
                histogram_freq, (int, np.integer)) or histogram_freq < 0:
            raise ValueError(f"TensorBoard: histogram_freq must be a number of epochs >= 0 (0: "
                             f"no histograms), got {histogram_freq!r}.")
        self.histogram_freq = int(histogram_freq)
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        update_freq = 1 if update_freq == "batch" else update_freq
        if update_freq != "epoch" and (isinstance(update_freq, bool) or not isinstance(
                update_freq, (int, np.integer)) or update_freq < 1):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             f"number of batches, got {update_freq!r}.")
        self.update_freq = update_freq
        if profile_batch not in (0, "0", (0, 0), [0, 0], "0,0"):
            raise ValueError(f"TensorBoard: profiling is not available in hybridtf (it has no "
                             f"profiler). Received: profile_batch={profile_batch!r} (must be 0).")
        if embeddings_freq or embeddings_metadata is not None:
            raise ValueError(f"TensorBoard: the embedding projector reads TensorFlow "
                             f"checkpoints, which hybridtf does not write. Received: "
                             f"embeddings_freq={embeddings_freq!r} (must be 0).")
        self.embeddings_freq = 0
        self.embeddings_metadata = None
        self._writers = {}
        self._pushed = []              # (as_default, record_if) contexts entered per batch
        self._global_train_batch = 0
        self._global_test_batch = 0
        self._batch_start_time = 0.0
        self._epoch_start_time = 0.0
        self._epoch_start_iterations = 0.0

    def _writer(self, which):
        """The writer of ``log_dir/<which>`` ("train" or "validation"), created on first use."""
        if which not in self._writers:
            self._writers[which] = summary.create_file_writer(os.path.join(self.log_dir, which))
        return self._writers[which]

    def set_model(self, model):
        """Sets the model (new writers for each run) and writes its graph (``write_graph``)."""
        super().set_model(model)
        self._writers = {}
        if self.write_graph and model_graph.describes(model):
            self._write_model_graph(model)

    def _write_model_graph(self, model):
        try:
            description = model_graph.model_json(model)
        except (NotImplementedError, TypeError, ValueError) as err:
            warnings.warn(f"TensorBoard: the graph of model {model.name!r} is not written: it "
                          f"failed to serialize as JSON ({err}).", stacklevel=3)
            return
        writer = self._writer("train")
        with writer.as_default():
            summary.write("keras", description, step=0,
                          metadata=writer.records.keras_model_metadata())

    # ---- the default writer during batches (update_freq) --------------------------------------
    def _push_writer(self, writer, step):
        if self.update_freq == "epoch":
            return
        every = self.update_freq
        contexts = (writer.as_default(step), summary.record_if(lambda: step % every == 0))
        for context in contexts:
            context.__enter__()
        self._pushed.append(contexts)

    def _pop_writer(self):
        if self.update_freq == "epoch" or not self._pushed:
            return
        as_default, recording = self._pushed.pop()
        recording.__exit__(None, None, None)
        as_default.__exit__(None, None, None)

    # ---- hooks ----------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        self._push_writer(self._writer("train"), self._global_train_batch)

    def on_train_end(self, logs=None):
        self._pop_writer()
        for writer in self._writers.values():
            writer.close()

    def on_test_begin(self, logs=None):
        self._push_writer(self._writer("validation"), self._global_test_batch)

    def on_test_end(self, logs=None):
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        if iterations is not None:
            with self._writer("validation").as_default(), summary.record_if(True):
                for name, value in (logs or {}).items():
                    summary.scalar(f"evaluation_{name}_vs_iterations", value, step=iterations)
        self._pop_writer()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.update_freq != "epoch":
            self._pop_writer()
            self._push_writer(self._writer("train"), self._global_train_batch)
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if self.write_steps_per_second:
            seconds = time.time() - self._batch_start_time
            summary.scalar("batch_steps_per_second", 1.0 / max(seconds, 1e-9),
                           step=self._global_train_batch)
        for name, value in (logs or {}).items():
            summary.scalar(f"batch_{name}", value, step=self._global_train_batch)

    def on_test_batch_begin(self, batch, logs=None):
        self._global_test_batch += 1
        if self.update_freq != "epoch":
            self._pop_writer()
            self._push_writer(self._writer("validation"), self._global_test_batch)

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._epoch_start_iterations = float(np.asarray(self.model.optimizer.iterations))
            self._epoch_start_time = time.time()

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(epoch, logs or {})
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    # ---- what is written ---------------------------------------------------------------------
    def _log_epoch_metrics(self, epoch, logs):
        if not logs:
            return
        train_logs = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val_logs = {k[len("val_"):]: v for k, v in logs.items() if k.startswith("val_")}
        optimizer = getattr(self.model, "optimizer", None)
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        if getattr(optimizer, "learning_rate", None) is not None:
            train_logs["learning_rate"] = float(np.asarray(optimizer.learning_rate))
        if self.write_steps_per_second:
            steps = float(np.asarray(self.model.optimizer.iterations)) - \
                self._epoch_start_iterations
            train_logs["steps_per_second"] = steps / max(time.time() - self._epoch_start_time,
                                                         1e-9)
        for which, values in (("train", train_logs), ("validation", val_logs)):
            if values:
                with self._writer(which).as_default(), summary.record_if(True):
                    for name, value in values.items():
                        summary.scalar(f"epoch_{name}", value, step=epoch)

    def _log_weights(self, epoch):
        with self._writer("train").as_default(), summary.record_if(True):
            for layer in self.model.layers:
                for weight in layer.weights:
                    name = _weight_path(weight)
                    summary.histogram(f"{name}/histogram", weight, step=epoch)
                    if self.write_images:
                        _log_weight_as_image(weight, f"{name}/image", epoch)


def _weight_path(weight):
    """A weight's name without the output index: ``"dense/kernel"`` for ``"dense/kernel:0"``."""
    name = weight.name
    head, colon, index = name.rpartition(":")
    return head if colon and index.isdigit() else name


def _log_weight_as_image(weight, tag, epoch):
    """A weight drawn as Keras draws it: a bias as a 1-pixel-wide column, a kernel as a matrix
    (wider than high), a 3-D conv kernel as one image per output channel; other shapes only
    when their last dimension can be channels (1, 3 or 4)."""
    pixels = np.squeeze(np.asarray(weight))
    if pixels.ndim == 1:
        pixels = pixels.reshape(1, -1, 1, 1)
    elif pixels.ndim == 2:
        if pixels.shape[0] > pixels.shape[1]:
            pixels = pixels.T
        pixels = pixels.reshape(1, pixels.shape[0], pixels.shape[1], 1)
    elif pixels.ndim == 3:
        pixels = np.transpose(pixels, (2, 0, 1))[..., np.newaxis]
    if pixels.ndim == 4 and pixels.shape[-1] in (1, 3, 4):
        summary.image(tag, pixels, step=epoch)
