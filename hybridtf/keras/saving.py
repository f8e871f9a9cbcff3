"""Weight files: ``save_weights`` / ``load_weights`` for layers, models and modules.

Any file name Keras accepts works (``model.weights.h5``, ``ckpt/weights``, ...), but the format
is hybridtf's own whatever the suffix: a NumPy ``.npz`` archive whose manifest names the format
and version and lists every weight's name, shape and dtype, followed by the values in the order
of ``layer.weights``.  Files are written atomically (a temporary file in the same directory,
then ``os.replace``), and parent directories are created as TF does for checkpoints.
"""
import os

import numpy as np

from hybridtf.saved_model import array_file

WEIGHTS_FORMAT = "hybridtf.weights"
WEIGHTS_VERSION = 1


def _weights_of(layer):
    """The ordered variables of ``layer``: ``layer.weights``, or a tf.Module's ``variables``."""
    weights = getattr(layer, "weights", None)
    if weights is None:
        weights = getattr(layer, "variables", None)
    if weights is None:
        raise TypeError(f"Cannot save or load the weights of {type(layer).__name__}: it has "
                        "neither `weights` nor `variables`.")
    weights = list(weights() if callable(weights) else weights)
    for w in weights:
        if not getattr(w, "_is_variable", False):
            raise TypeError(f"{_layer_name(layer)}.weights contains {w!r}, which is not a "
                            "tf.Variable.")
    return weights


def _layer_name(layer):
    name = getattr(layer, "name", None)
    return name if isinstance(name, str) else type(layer).__name__


def _weight_name(weight):
    return getattr(weight, "name", "<unnamed>")


def save_weights(layer, filepath, overwrite=True):
    """Saves every weight of ``layer`` (in ``layer.weights`` order) to ``filepath``.

    With ``overwrite=False`` an existing file is an error (``FileExistsError``) instead of
    being replaced (TF asks interactively; hybridtf never prompts).
    """
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"save_weights: {filepath!r} is a directory; give a file name "
                                f"inside it, e.g. {os.path.join(filepath, 'weights')!r}.")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"save_weights: {filepath!r} already exists and overwrite=False; "
                              "pass overwrite=True to replace it or choose another name.")
    weights = _weights_of(layer)
    arrays = {}
    entries = []
    for i, weight in enumerate(weights):
        value = np.asarray(weight.numpy())
        if value.dtype.hasobject:
            raise TypeError(f"save_weights: weight {_weight_name(weight)!r} of "
                            f"{_layer_name(layer)} has dtype {weight.dtype.name}, which cannot "
                            "be saved; only numeric and boolean weights can.")
        arrays[f"weight_{i}"] = value
        entries.append({"name": _weight_name(weight), "shape": list(value.shape),
                        "dtype": value.dtype.name})
    manifest = {"format": WEIGHTS_FORMAT, "version": WEIGHTS_VERSION,
                "layer": _layer_name(layer), "weights": entries}
    array_file.write_arrays(filepath, manifest, arrays)


def load_weights(layer, filepath):
    """Loads weights saved by ``save_weights`` into ``layer``, in order.

    The file must hold as many weights as ``layer.weights`` with the same shapes and dtypes;
    otherwise a ValueError names the first weight that differs and nothing is assigned.
    A missing file raises FileNotFoundError; a truncated, corrupted or foreign file raises
    ``UnreadableFileError`` (a ValueError).
    """
    filepath = os.fspath(filepath)
    manifest, arrays = array_file.read_arrays(filepath, "weights file", WEIGHTS_FORMAT,
                                              WEIGHTS_VERSION)
    entries = manifest.get("weights")
    if not isinstance(entries, list) or any(f"weight_{i}" not in arrays
                                            for i in range(len(entries))):
        raise array_file.UnreadableFileError(
            filepath, f"The weights file {filepath!r} is corrupted: its manifest does not match "
            "the arrays it holds.")
    weights = _weights_of(layer)
    name = _layer_name(layer)
    if len(entries) != len(weights):
        hint = (" The layer has no weights yet: build it (call it on data, or call build()) "
                "before loading." if not weights else "")
        raise ValueError(f"load_weights: {name} has {len(weights)} weights but the file "
                         f"{filepath!r} holds {len(entries)} "
                         f"(saved from {manifest.get('layer', '?')!r}).{hint}")
    values = []
    for i, (weight, entry) in enumerate(zip(weights, entries)):
        value = arrays[f"weight_{i}"]
        saved_name = entry.get("name", "?") if isinstance(entry, dict) else "?"
        if not weight.shape.is_compatible_with(value.shape):
            raise ValueError(f"load_weights: weight #{i} {_weight_name(weight)!r} of {name} has "
                             f"shape {weight.shape} but the file {filepath!r} holds shape "
                             f"{tuple(value.shape)} for it "
                             f"(saved as {saved_name!r}).")
        if value.dtype != np.dtype(weight.dtype.as_numpy_dtype):
            raise ValueError(f"load_weights: weight #{i} {_weight_name(weight)!r} of {name} has "
                             f"dtype {weight.dtype.name} but the file {filepath!r} holds "
                             f"{value.dtype.name} for it (saved as {saved_name!r}).")
        values.append(value)
    for weight, value in zip(weights, values):
        weight.assign(value)
