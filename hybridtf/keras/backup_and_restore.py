"""``keras.callbacks.BackupAndRestore``: resume a ``fit`` that was interrupted, from the last
completed epoch (or batch).

Layout of ``backup_dir`` (Keras 3's): ``latest.weights.h5`` (the model's weights and the
optimizer's state, in Keras's weights layout) and ``training_metadata.json``
(``{"epoch": epochs completed, "batch": batch}``); with ``double_checkpoint`` the previous pair
is kept as ``*.bkp`` and used when the latest weights cannot be read.  Every file is written
atomically, so a process killed while backing up leaves the previous backup readable.
"""
import json
import os
import shutil

from hybridtf.framework import atomic_files
from hybridtf.keras.callback_base import Callback
from hybridtf.saved_model.array_file import UnreadableFileError


class BackupAndRestore(Callback):
    """Backs up the model (weights and optimizer state) and the training progress to
    ``backup_dir`` at the end of each epoch (``save_freq="epoch"``) or every ``save_freq``
    batches.  When ``fit`` starts and a backup exists, the model is restored from it and
    training resumes at the epoch after the last one backed up.  The backup is deleted when
    ``fit`` completes (unless ``delete_checkpoint=False``); an interrupted ``fit`` leaves it.

    Example: ``model.fit(x, y, epochs=10, callbacks=[BackupAndRestore("/tmp/backup")])``,
    killed during epoch 6, resumes at epoch 6 when run again with the same callback.
    """

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or
                                     not isinstance(save_freq, int) or save_freq < 1):
            raise ValueError(f"Invalid value for argument `save_freq`. Received: "
                             f"save_freq={save_freq!r}. Expected either 'epoch' or a positive "
                             "integer value.")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._weights_path = os.path.join(self.backup_dir, "latest.weights.h5")
        self._training_metadata_path = os.path.join(self.backup_dir, "training_metadata.json")
        self._prev_weights_path = self._weights_path + ".bkp"
        self._prev_training_metadata_path = self._training_metadata_path + ".bkp"
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = 0
        self._current_epoch = 0

    # ---- restoring ---------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        try:
            self._load_model()
        except UnreadableFileError:
            if not os.path.exists(self._prev_weights_path):
                raise
            # The latest backup is damaged: fall back to the one before it.
            shutil.copyfile(self._prev_weights_path, self._weights_path)
            if os.path.exists(self._prev_training_metadata_path):
                shutil.copyfile(self._prev_training_metadata_path,
                                self._training_metadata_path)
            elif os.path.exists(self._training_metadata_path):
                os.remove(self._training_metadata_path)
            self._load_model()

    def _load_model(self):
        model = self.model
        if not model.built:
            raise ValueError(f"To use the BackupAndRestore callback, your model must be built "
                             f"before you call `fit()`. Model {model.name!r} is unbuilt. You "
                             "can build it beforehand by calling it on a batch of data.")
        if os.path.exists(self._weights_path):
            optimizer = getattr(model, "optimizer", None)
            if optimizer is not None:
                # The optimizer's slots must exist for its state to be loaded into them.
                unbuilt = [v for v in model.trainable_variables
                           if not optimizer._is_built_for(v)]
                if unbuilt:
                    optimizer.build(unbuilt)
            model.load_weights(self._weights_path)
        if os.path.exists(self._training_metadata_path):
            with open(self._training_metadata_path) as f:
                try:
                    metadata = json.load(f)
                    epoch = int(metadata["epoch"])
                except (ValueError, KeyError, TypeError) as err:
                    raise UnreadableFileError(
                        self._training_metadata_path,
                        f"BackupAndRestore: {self._training_metadata_path!r} is damaged "
                        f"({err}); delete {self.backup_dir!r} to start training afresh."
                    ) from None
            model._initial_epoch = epoch       # read by fit once the callbacks have begun

    # ---- backing up --------------------------------------------------------------------------
    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq == "epoch":
            self._save_model()

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model()

    def _should_save_on_batch(self, batch):
        if self.save_freq == "epoch":
            return False
        if batch <= self._last_batch_seen:      # a new epoch
            added = batch + 1
        else:
            added = batch - self._last_batch_seen
        self._batches_seen_since_last_saving += added
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint:
            for latest, previous in ((self._weights_path, self._prev_weights_path),
                                     (self._training_metadata_path,
                                      self._prev_training_metadata_path)):
                if os.path.exists(latest):
                    shutil.copyfile(latest, previous)
        self.model.save_weights(self._weights_path, overwrite=True)
        text = json.dumps({"epoch": self._current_epoch, "batch": self._last_batch_seen})
        atomic_files.write_file(self._training_metadata_path,
                                lambda f: f.write(text.encode("utf-8")))

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.exists(self.backup_dir):
            shutil.rmtree(self.backup_dir)
