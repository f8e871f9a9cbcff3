"""``tf.train.CheckpointManager``: numbered checkpoints in a directory, the oldest deleted.

Each ``save`` writes ``<directory>/<checkpoint_name>-<n>``, then records it in the directory's
``checkpoint`` state file -- the atomic switch that makes it the latest -- then deletes the
checkpoints beyond ``max_to_keep`` and records the list again.  A process killed at any moment
leaves the last recorded checkpoint complete and loadable; checkpoints dropped from the list
but not yet deleted are still listed, so the next manager in the directory deletes them.
"""
import collections
import contextlib
import os
import time
import warnings

from hybridtf.distribute import distribute_lib
from hybridtf.framework import atomic_files
from hybridtf.framework.tensor import is_tensor
from hybridtf.graph import func_graph
from hybridtf.train import checkpoint_file, state
from hybridtf.train.checkpoint import Checkpoint, checked_options


def _as_int(value, what):
    if is_tensor(value) or getattr(value, "_is_variable", False):
        value = value.numpy()
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"CheckpointManager: {what} must be an integer, an integer tf.Variable "
                        f"or an integer tensor, got {value!r}.") from None
    if number != value:
        raise TypeError(f"CheckpointManager: {what} must be an integer, got {value!r}.")
    return number


class CheckpointManager:
    """Manages multiple checkpoints by keeping some and deleting unneeded ones
    (``tf.train.CheckpointManager``).

    Args:
      checkpoint: the ``tf.train.Checkpoint`` to save and restore.
      directory: where checkpoints and the ``checkpoint`` state file go (made on first save).
        A manager previously used there is picked up: its list of checkpoints and timestamps.
      max_to_keep: how many checkpoints to keep (oldest deleted first), or None for all.
      keep_checkpoint_every_n_hours: when set, a checkpoint leaving the kept set is kept on
        disk (and no longer managed) if at least this many hours passed since the last one
        kept this way.
      checkpoint_name: the checkpoints' file name prefix (default ``"ckpt"``).
      step_counter: an integer variable; required with ``checkpoint_interval``.
      checkpoint_interval: save only when ``step_counter`` advanced at least this much since
        the last save.
      init_fn: called by ``restore_or_initialize`` when there is no checkpoint yet.
      last_checkpoint_step: the step of the last checkpoint, for ``checkpoint_interval``.

    Raises:
      ValueError: ``max_to_keep`` is not positive, or ``checkpoint_interval`` is given
        without ``step_counter``.
      tf.errors.DataLossError: the directory's ``checkpoint`` state file is corrupted.
    """

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None, last_checkpoint_step=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: checkpoint must be a tf.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}.")
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep <= 0):
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got "
                             f"{max_to_keep!r}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not "
                             "None.")
        self._checkpoint = checkpoint
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._directory = os.fspath(directory)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._last_checkpoint_step = last_checkpoint_step
        self._init_fn = init_fn
        self._maybe_delete = collections.OrderedDict()     # path -> timestamp, oldest first
        recovered = state.get_checkpoint_state(self._directory)
        now = time.time()
        if recovered is None:
            self._latest_checkpoint = None
            # A second earlier, so that a manager made again at once keeps its first save.
            self._last_preserved_timestamp = now - 1.0
            return
        self._latest_checkpoint = recovered.model_checkpoint_path
        preserved = recovered.last_preserved_timestamp
        if preserved is None:
            preserved = now - 1.0
        elif now < preserved:
            warnings.warn(f"time.time() returned a value {preserved - now:f} seconds behind the "
                          "last preserved checkpoint timestamp.", UserWarning, stacklevel=2)
            preserved = now
        self._last_preserved_timestamp = preserved
        timestamps = recovered.all_model_checkpoint_timestamps or \
            [preserved] * len(recovered.all_model_checkpoint_paths)
        for path, timestamp in zip(recovered.all_model_checkpoint_paths, timestamps):
            timestamp = min(timestamp, now)
            if timestamp > self._last_preserved_timestamp:
                self._maybe_delete[path] = timestamp

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        """The managed ``tf.train.Checkpoint``."""
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        """The prefix of the most recent checkpoint in ``directory``, or None."""
        return self._latest_checkpoint

    @property
    def checkpoints(self):
        """The managed checkpoints, oldest first (those kept by
        ``keep_checkpoint_every_n_hours`` are no longer listed)."""
        return list(self._maybe_delete)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Saves a checkpoint and deletes those beyond ``max_to_keep``.

        Args:
          checkpoint_number: numbers the checkpoint (an integer, or an integer variable or
            tensor); by default ``checkpoint.save_counter``, which is incremented either way.
          check_interval: with ``checkpoint_interval``, save only if the step advanced enough
            since the last save; False saves unless this step was already saved.
          options: a ``tf.train.CheckpointOptions``.

        Returns:
          The new checkpoint's prefix, or None when ``checkpoint_interval`` skipped it.

        Raises:
          NotImplementedError: inside a ``tf.function`` (use ``Checkpoint.write`` there).
        """
        if func_graph.current() is not None:
            raise NotImplementedError(
                "Calling tf.train.CheckpointManager.save() from a function is not supported: "
                "it numbers and records checkpoints in Python. Call it between calls of the "
                "function, or use tf.train.Checkpoint.write() inside it.")
        options = checked_options(options, "CheckpointManager.save")
        if self._checkpoint_interval is not None:
            step = _as_int(self._step_counter, "step_counter")
            if self._last_checkpoint_step is not None:
                if step == self._last_checkpoint_step:
                    return None
                if check_interval and step < self._last_checkpoint_step + \
                        self._checkpoint_interval:
                    return None
            self._last_checkpoint_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        number = counter if checkpoint_number is None else checkpoint_number
        prefix = f"{self._prefix}-{_as_int(number, 'checkpoint_number')}"

        def write():
            with state.state_lock(self._directory):
                self._checkpoint._write_files(prefix, options)
                self._note_saved(prefix)
                # Recorded before deleting anything, so that a kill while deleting leaves the
                # new checkpoint the latest and the old ones listed (the next manager deletes
                # them).
                self._record_state()
                if self._sweep():
                    self._record_state()
        # Under MultiWorkerMirroredStrategy every process saves and rank 0 writes the files;
        # the others keep the same list of checkpoints.
        distribute_lib.write_once(write, f"CheckpointManager.save({prefix!r})")
        if not distribute_lib.writes_files():
            self._note_saved(prefix)
            self._sweep(delete=False)
        return prefix

    def _note_saved(self, prefix):
        # Re-inserted so that an overwritten checkpoint moves to the end of the queue.
        self._maybe_delete.pop(prefix, None)
        self._maybe_delete[prefix] = time.time()
        self._latest_checkpoint = prefix

    def _record_state(self):
        paths = list(self._maybe_delete)
        state.write_state(self._directory, self._latest_checkpoint, paths,
                          list(self._maybe_delete.values()), self._last_preserved_timestamp)

    def _sweep(self, delete=True):
        """Drops the oldest checkpoints beyond ``max_to_keep`` (deleting them, when
        ``delete``, unless ``keep_checkpoint_every_n_hours`` keeps them); returns whether any
        was dropped."""
        if not self._max_to_keep:
            return False
        dropped = False
        while len(self._maybe_delete) > self._max_to_keep:
            path, timestamp = self._maybe_delete.popitem(last=False)
            dropped = True
            hours = self._keep_checkpoint_every_n_hours
            if hours and timestamp - hours * 3600.0 >= self._last_preserved_timestamp:
                self._last_preserved_timestamp = timestamp
                continue
            if delete:
                _delete_checkpoint(path)
        return dropped

    def restore_or_initialize(self):
        """Restores the latest checkpoint if there is one and returns its prefix; otherwise
        calls ``init_fn`` (if given) and returns None."""
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = _as_int(self._step_counter, "step_counter")
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def sync(self):
        """Waits for pending saves: there are none, as hybridtf saves synchronously."""
        self._checkpoint.sync()


def _delete_checkpoint(prefix):
    """Deletes a checkpoint's file and what killed saves of it left."""
    path = checkpoint_file.index_path(prefix)
    atomic_files.remove_stale_temporaries(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
