"""Kills saving processes at random moments and checks what is left on disk.

Run as ``python tests/save_kill_worker.py KIND DIRECTORY KILLS SEED``; prints one JSON object.
KIND is ``saved_model`` (``tf.saved_model.save``), ``keras`` (``model.save("m.keras")``),
``weights_h5`` (``save_weights("w.weights.h5")``), ``weights_npz`` (``save_weights`` to a
name without ``.h5``) or ``checkpoint`` (``tf.train.CheckpointManager.save`` of a model, its
optimizer and a step counter).

This process imports hybridtf once, builds a small object, times a forked child's first save
and saves version A.  Then, KILLS times, it forks a child that saves versions B, A, B, ... in
a loop, SIGKILLs the child after a random delay (spread over a few of a child's save
durations, so that every phase of a save is hit),
and loads what is on disk: it must be one complete version, A or B, with identical values --
or, for a kill during the first save into a new path, nothing at all.  Finally it saves once
more and lists what the directory holds, so the caller can check that the temporaries of the
killed saves were removed.  Forking (rather than starting a fresh interpreter per kill) keeps
a few hundred kills within seconds.
"""
import json
import os
import random
import signal
import sys
import time

import numpy as np

import hybridtf as tf
from hybridtf import keras


def _versions(shapes):
    """Two sets of values that differ everywhere (so a mix of the two is recognised)."""
    rng = np.random.RandomState(0)
    a = [np.asarray(rng.randn(*shape), dtype=np.float32) for shape in shapes]
    return {"A": a, "B": [x + 1.0 for x in a]}


class _SavedModelCase:
    shapes = [(256, 64), (64,), (3, 3)]

    def __init__(self):
        module = tf.Module()
        module.big = tf.Variable(np.zeros(self.shapes[0], np.float32))
        module.bias = tf.Variable(np.zeros(self.shapes[1], np.float32))
        module.small = tf.Variable(np.zeros(self.shapes[2], np.float32))
        module.apply = tf.function(lambda x: tf.matmul(x, module.big) + module.bias,
                                   input_signature=[tf.TensorSpec([None, 256], tf.float32)])
        module.apply.get_concrete_function()
        self.module = module
        self.variables = [module.big, module.bias, module.small]

    def target(self, directory, name):
        return os.path.join(directory, name)

    def save(self, path):
        tf.saved_model.save(self.module, path)

    def load(self, path):
        loaded = tf.saved_model.load(path)
        return [loaded.big.numpy(), loaded.bias.numpy(), loaded.small.numpy()]


class _KerasCase:
    shapes = None

    def __init__(self, suffix):
        self.suffix = suffix
        self.model = self._model()
        if suffix == ".keras":
            self.model.compile(keras.optimizers.Adam(0.01), "mse")
            self.model.optimizer.build(self.model.trainable_variables)
            self.variables = self.model.weights + list(self.model.optimizer.variables)
        else:
            self.variables = self.model.weights
        self.shapes = [tuple(v.shape) for v in self.variables]

    @staticmethod
    def _model():
        return keras.Sequential([keras.Input((96,)), keras.layers.Dense(128),
                                 keras.layers.BatchNormalization(), keras.layers.Dense(4)])

    def target(self, directory, name):
        if self.suffix == "":
            return os.path.join(directory, name, "weights")
        return os.path.join(directory, name + self.suffix)

    def save(self, path):
        if self.suffix == ".keras":
            self.model.save(path)
        else:
            self.model.save_weights(path)

    def load(self, path):
        if self.suffix == ".keras":
            model = keras.models.load_model(path)
            return [v.numpy() for v in model.weights + list(model.optimizer.variables)]
        model = self._model()
        model.load_weights(path)
        return [v.numpy() for v in model.weights]


class _CheckpointCase:
    """A training checkpoint: a Keras model, its Adam optimizer (slots, iterations) and a step
    counter, saved by a CheckpointManager that keeps the last two checkpoints."""

    def __init__(self):
        self.checkpoint, self.variables = self._objects()
        self.shapes = [tuple(v.shape) for v in self.variables]
        self.manager = None

    @staticmethod
    def _objects():
        model = _KerasCase._model()
        optimizer = keras.optimizers.Adam(0.01)
        optimizer.build(model.trainable_variables)
        step = tf.Variable(np.int64(0), trainable=False)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)
        return checkpoint, model.weights + list(optimizer.variables) + [step]

    def target(self, directory, name):
        return os.path.join(directory, name)

    def reopen(self, path):
        """What a training process started after a kill does: a new manager over the
        directory, and the latest checkpoint restored (so numbering goes on from it)."""
        self.manager = tf.train.CheckpointManager(self.checkpoint, path, max_to_keep=2)
        if self.manager.latest_checkpoint is not None:
            self.checkpoint.restore(self.manager.latest_checkpoint).assert_consumed()

    def save(self, path):
        if self.manager is None or self.manager.directory != path:
            self.reopen(path)
        self.manager.save()

    def load(self, path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(f"No checkpoint in {path!r}.")
        checkpoint, variables = self._objects()
        checkpoint.restore(latest).assert_consumed()
        return [v.numpy() for v in variables]


def _case(kind):
    if kind == "saved_model":
        return _SavedModelCase()
    if kind == "checkpoint":
        return _CheckpointCase()
    return _KerasCase({"keras": ".keras", "weights_h5": ".weights.h5", "weights_npz": ""}[kind])


def _set(case, values):
    for variable, value in zip(case.variables, values):
        variable.assign(value.astype(variable.dtype.as_numpy_dtype))


def _identify(case, path, versions):
    """"A", "B", "nothing" (no save there at all), or a description of what went wrong."""
    try:
        loaded = case.load(path)
    except FileNotFoundError:
        return "nothing"
    except Exception as err:  # noqa: BLE001 -- any failure to load is the finding reported
        return f"unloadable: {type(err).__name__}: {err}"
    for name, values in versions.items():
        if all(np.array_equal(got, want.astype(got.dtype)) for got, want in zip(loaded, values)):
            return name
    return "a mix of versions, or other values"


def _tree(directory):
    return sorted(os.path.relpath(os.path.join(root, name), directory)
                  for root, dirs, files in os.walk(directory) for name in dirs + files)


def _reopen(case, path):
    """For a case whose saves keep state across saves (a checkpoint manager): start over
    from what is on disk, as a process started after a kill would."""
    if hasattr(case, "reopen") and os.path.exists(path):
        case.reopen(path)


def _kill_during_saves(case, path, versions, delay):
    pid = os.fork()
    if pid == 0:                       # the child: save B, A, B, ... until killed
        try:
            _reopen(case, path)
            while True:
                for name in ("B", "A"):
                    _set(case, versions[name])
                    case.save(path)
        finally:
            os._exit(1)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _child_save_seconds(case, path, versions, rounds=3):
    """How long a forked child takes from the fork to the end of its first save (the median of
    a few).  A child is slower than its parent's own saves (the fork, copied pages, a
    checkpoint manager reopened), by 1.5-4x and more on a busy machine, so the kill delays
    are spread over the child's time, not the parent's: then every phase of a save is hit."""
    _set(case, versions["A"])
    case.save(path)
    times = []
    for _ in range(rounds):
        done, signal_done = os.pipe()
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                _reopen(case, path)
                _set(case, versions["B"])
                case.save(path)
                os.write(signal_done, b"x")
            finally:
                os._exit(0)
        os.close(signal_done)
        saved = os.read(done, 1)
        times.append(time.perf_counter() - start)
        os.close(done)
        os.waitpid(pid, 0)
        if not saved:
            raise RuntimeError(f"a forked child's save into {path!r} failed")
    _reopen(case, path)
    return sorted(times)[len(times) // 2]


def main(kind, directory, kills, seed):
    rng = random.Random(seed)
    case = _case(kind)
    versions = _versions(case.shapes)
    path = case.target(directory, "model")
    save_seconds = _child_save_seconds(case, path, versions)
    _set(case, versions["A"])
    case.save(path)
    outcomes = []
    for i in range(kills):
        fresh = rng.random() < 0.25    # the first save into a new path
        target = case.target(directory, f"fresh{i}") if fresh else path
        _kill_during_saves(case, target, versions, rng.uniform(0.0, 4.0 * save_seconds))
        outcomes.append({"fresh": fresh, "found": _identify(case, target, versions),
                         "tree": _tree(directory)})
    _reopen(case, path)
    _set(case, versions["A"])
    case.save(path)                    # the next save cleans what killed saves left
    final = _identify(case, path, versions)
    print(json.dumps({"save_seconds": save_seconds, "outcomes": outcomes, "final": final,
                      "final_tree": _tree(directory), "path": os.path.relpath(path, directory)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
