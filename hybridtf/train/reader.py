"""Reading checkpoints by key: ``tf.train.load_checkpoint``, ``list_variables``,
``load_variable``.

Keys are those TF shows, e.g. ``model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE`` (see
``train.dependencies``), plus ``_CHECKPOINTABLE_OBJECT_GRAPH``, which holds the object graph
(as JSON here, TF's own protocol buffer there).  Each function takes a checkpoint prefix or a
directory, whose latest checkpoint is then read.
"""
import json
import os

import numpy as np

from hybridtf.framework import dtypes
from hybridtf.framework.errors import NotFoundError
from hybridtf.train import checkpoint_file, state
from hybridtf.train.dependencies import OBJECT_GRAPH_KEY


def _prefix(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = state.latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return latest
    return path


# TF's names of the dtypes whose enum name differs from the dtype's name.
_TF_TYPE_NAMES = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "HALF"}


class CheckpointReader:
    """The values of one checkpoint, by key (what ``tf.train.load_checkpoint`` returns)."""

    def __init__(self, prefix):
        self._contents = checkpoint_file.read(prefix)
        self._graph = json.dumps(self._contents.nodes, separators=(",", ":")).encode("utf-8")

    def _value(self, key):
        node = self._contents.keys.get(key)
        if node is None:
            raise NotFoundError(f"Key {key} not found in checkpoint")
        return self._contents.values[node]

    def has_tensor(self, key):
        """Whether the checkpoint holds ``key``."""
        return key == OBJECT_GRAPH_KEY or key in self._contents.keys

    def get_tensor(self, key):
        """The value saved under ``key``: a NumPy array (a NumPy scalar for a scalar), or bytes
        for ``_CHECKPOINTABLE_OBJECT_GRAPH``.  ``tf.errors.NotFoundError`` for an unknown
        key."""
        if key == OBJECT_GRAPH_KEY:
            return self._graph
        value = np.array(self._value(key))
        return value[()] if value.ndim == 0 else value

    def get_variable_to_shape_map(self):
        """``{key: shape as a list}`` for every key."""
        shapes = {key: list(self._contents.values[node].shape)
                  for key, node in self._contents.keys.items()}
        shapes[OBJECT_GRAPH_KEY] = []
        return shapes

    def get_variable_to_dtype_map(self):
        """``{key: tf.DType}`` for every key."""
        found = {key: dtypes.as_dtype(self._contents.values[node].dtype)
                 for key, node in self._contents.keys.items()}
        found[OBJECT_GRAPH_KEY] = dtypes.string
        return found

    def debug_string(self):
        """One line per key: ``key (DT_FLOAT) [2, 3]``, as bytes."""
        dtype_map = self.get_variable_to_dtype_map()
        lines = []
        for key, shape in sorted(self.get_variable_to_shape_map().items()):
            name = dtype_map[key].name
            lines.append(f"{key} (DT_{_TF_TYPE_NAMES.get(name, name.upper())}) {shape}")
        return ("\n".join(lines) + "\n").encode("utf-8")


def load_checkpoint(ckpt_dir_or_file):
    """A ``CheckpointReader`` for a checkpoint prefix, or a directory's latest checkpoint.

    Raises:
      ValueError: a directory holds no checkpoint.
      tf.errors.NotFoundError / DataLossError: see ``tf.train.Checkpoint.read``.
    """
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """``[(key, shape)]`` of a checkpoint, sorted by key (``tf.train.list_variables``)."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


def load_variable(ckpt_dir_or_file, name):
    """The value saved under the key ``name`` (a trailing ``:0`` is ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
