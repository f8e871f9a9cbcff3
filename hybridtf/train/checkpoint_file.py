"""hybridtf's checkpoint file: the object graph and the variable values of one checkpoint.

A checkpoint with prefix ``ckpt-3`` is the one file ``ckpt-3.index``, a NumPy ``.npz`` archive
(``saved_model.array_file``) whose manifest holds the object graph -- per node its named
children and, for a variable, its checkpoint key -- and whose arrays are the values.  This is
hybridtf's own format: TensorFlow cannot read it, and hybridtf does not read TensorFlow's
checkpoints (a ``.index`` table beside ``.data-?????-of-?????`` shards); given one, it says so.

The file is written atomically (``framework.atomic_files.write_file``): a process killed while
writing leaves the previous file with that name, or none.  Reading refuses a truncated,
corrupted or foreign file with ``tf.errors.DataLossError`` naming the file, and a missing one
with ``tf.errors.NotFoundError``.
"""
import glob
import os

import numpy as np

from hybridtf.framework.errors import DataLossError, NotFoundError
from hybridtf.saved_model import array_file

FORMAT = "hybridtf.checkpoint"
VERSION = 1
INDEX_SUFFIX = ".index"
# A TensorFlow checkpoint's .index is a table file ending with this magic number.
_TF_TABLE_MAGIC = (0xdb4775248b80fb57).to_bytes(8, "little")


def index_path(prefix):
    return os.fspath(prefix) + INDEX_SUFFIX


def exists(prefix):
    """Whether a checkpoint (hybridtf's, or TensorFlow's V1 or V2) has this prefix."""
    return os.path.isfile(index_path(prefix)) or os.path.isfile(os.fspath(prefix))


def _value_name(node):
    return f"value_{node}"


def write(prefix, nodes, values):
    """Writes the checkpoint ``prefix``: ``nodes`` (the object graph's description) and
    ``values`` (node index -> ndarray); returns the file's path."""
    arrays = {}
    for node, value in values.items():
        value = np.asarray(value)
        if value.dtype.hasobject:
            raise TypeError(f"Cannot checkpoint the variable saved under "
                            f"{nodes[node]['key']!r}: its dtype {value.dtype} holds Python "
                            "objects; only numeric and boolean variables can be saved.")
        arrays[_value_name(node)] = value
    path = index_path(prefix)
    array_file.write_arrays(path, {"format": FORMAT, "version": VERSION, "objects": nodes},
                            arrays)
    return path


class CheckpointContents:
    """What one checkpoint file holds: ``nodes`` (the object graph: per node ``children``, a
    list of ``[name, node]``, and ``key`` for a variable), ``values`` (node -> ndarray) and
    ``keys`` (checkpoint key -> node)."""

    def __init__(self, path, nodes, values):
        self.path = path
        self.nodes = nodes
        self.values = values
        self.keys = {node["key"]: i for i, node in enumerate(nodes) if "key" in node}


def read(prefix):
    """Reads the checkpoint ``prefix`` (as ``save``/``write`` returned it)."""
    prefix = os.fspath(prefix)
    path = index_path(prefix)
    if not os.path.isfile(path):
        _refuse_missing(prefix, path)
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(0, os.SEEK_END)
        if f.tell() >= 8:
            f.seek(-8, os.SEEK_END)
        tail = f.read(8)
    if not head.startswith(b"PK") and (tail == _TF_TABLE_MAGIC or _data_shards(prefix)):
        raise DataLossError(_tensorflow_message(path))
    try:
        manifest, arrays = array_file.read_arrays(path, "checkpoint file", FORMAT, VERSION)
    except array_file.UnreadableFileError as err:
        raise DataLossError(str(err)) from None
    nodes = manifest.get("objects")
    if not _valid_nodes(nodes, arrays):
        raise DataLossError(f"The checkpoint file {path!r} is corrupted: its object graph "
                            "does not match the values it holds. Save the checkpoint again, "
                            "or restore the file from a copy.")
    values = {i: arrays[_value_name(i)] for i, node in enumerate(nodes) if "key" in node}
    return CheckpointContents(path, nodes, values)


def _valid_nodes(nodes, arrays):
    if not isinstance(nodes, list) or not nodes:
        return False
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("children"), list):
            return False
        for child in node["children"]:
            if not (isinstance(child, list) and len(child) == 2 and isinstance(child[0], str)
                    and isinstance(child[1], int) and 0 <= child[1] < len(nodes)):
                return False
        if "key" in node and (not isinstance(node["key"], str)
                              or _value_name(i) not in arrays):
            return False
    return True


def _data_shards(prefix):
    return glob.glob(glob.escape(prefix) + ".data-?????-of-?????")


def _tensorflow_message(where):
    return (f"{where!r} is a TensorFlow checkpoint. hybridtf reads only checkpoints in its "
            "own format, written by hybridtf's tf.train.Checkpoint; TensorFlow's checkpoint "
            "format is not supported. To move a Keras model's weights from TensorFlow, save "
            "them there as a '.weights.h5' file, which hybridtf's model.load_weights reads.")


def _refuse_missing(prefix, path):
    if os.path.isdir(prefix):
        raise NotFoundError(f"Cannot restore from {prefix!r}: it is a directory, "
                            "not a checkpoint prefix. Pass the prefix that save() returned, "
                            f"e.g. tf.train.latest_checkpoint({prefix!r}).")
    if prefix.endswith(INDEX_SUFFIX) and os.path.isfile(prefix):
        raise NotFoundError(f"Cannot restore from {prefix!r}: pass the checkpoint "
                            f"prefix {prefix[:-len(INDEX_SUFFIX)]!r}, without "
                            f"{INDEX_SUFFIX!r}.")
    if _data_shards(prefix):
        raise DataLossError(_tensorflow_message(prefix))
    if os.path.isfile(prefix):
        raise DataLossError(f"{prefix!r} is a file, not the prefix of a hybridtf "
                            f"checkpoint (which is the file {path!r}). If it is a TensorFlow 1 "
                            "checkpoint: hybridtf reads only checkpoints in its own format.")
    raise NotFoundError(f"Failed to find any matching files for {prefix!r} (no "
                        f"file {path!r}). Please double-check that the path is correct. You "
                        "may be missing the checkpoint suffix (e.g. the '-1' in "
                        "'path/to/ckpt-1').")
