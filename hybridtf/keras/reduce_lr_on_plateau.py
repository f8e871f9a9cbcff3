"""``keras.callbacks.ReduceLROnPlateau``: lowers the learning rate when a metric stops
improving."""
import warnings

import numpy as np

from hybridtf.keras.callback_base import Callback, monitor_mode


class ReduceLROnPlateau(Callback):
    """Multiplies the optimizer's learning rate by ``factor`` once ``monitor`` has not improved
    (by more than ``min_delta``) for ``patience`` epochs, never going below ``min_lr``; after a
    reduction it waits ``cooldown`` epochs before counting again.  Each epoch's logs get the
    current ``"learning_rate"``.

    Args:
      monitor: the logged quantity to watch (``"val_loss"`` by default).
      factor: the factor (< 1) the learning rate is multiplied by.
      patience: epochs without improvement before a reduction.
      verbose: 1 prints a line at each reduction.
      mode: ``"min"``, ``"max"`` or ``"auto"`` (from the name: accuracies go up).
      min_delta: the smallest change that counts as an improvement.
      cooldown: epochs to wait after a reduction before resuming normal operation.
      min_lr: the lower bound of the learning rate.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        super().__init__()
        if "epsilon" in kwargs:         # Keras 1's name for min_delta
            min_delta = kwargs.pop("epsilon")
            warnings.warn("ReduceLROnPlateau: `epsilon` is deprecated, use `min_delta`.",
                          stacklevel=2)
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword arguments {sorted(kwargs)}.")
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received "
                             f"factor={factor}")
        self.monitor = monitor
        self.factor = factor
        self.patience = patience
        self.verbose = verbose
        self.mode = monitor_mode(monitor, mode, "ReduceLROnPlateau")
        self.min_delta = abs(min_delta)
        self.cooldown = cooldown
        self.min_lr = min_lr
        self.best = None
        self.wait = 0
        self.cooldown_counter = 0

    def _reset(self):
        self.best = None
        self.wait = 0
        self.cooldown_counter = 0

    def _is_improvement(self, value, best):
        if best is None:
            return True
        if self.mode == "min":
            return value + self.min_delta < best
        return value - self.min_delta > best

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_train_begin(self, logs=None):
        self._reset()

    def _learning_rate(self):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "learning_rate"):
            raise ValueError('ReduceLROnPlateau: the optimizer must have a "learning_rate" '
                             "attribute (compile the model first).")
        return optimizer, float(np.asarray(optimizer.learning_rate))

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        optimizer, rate = self._learning_rate()
        logs["learning_rate"] = rate
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` "
                          f"which is not available. Available metrics are: "
                          f"{','.join(logs)}.", stacklevel=2)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience and rate > np.float32(self.min_lr):
                new_rate = max(rate * self.factor, self.min_lr)
                optimizer.learning_rate = new_rate
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to "
                          f"{new_rate}.")
                self.cooldown_counter = self.cooldown
                self.wait = 0
