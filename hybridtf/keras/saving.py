"""Weight files: ``save_weights`` / ``load_weights`` for layers, models and modules.

The format follows the file name:

* names ending in ``.h5`` (``model.weights.h5``, as Keras 3 requires) or ``.hdf5``: an HDF5
  file in Keras 3's weights layout (see ``h5_format``), which Keras 3 loads with
  ``model.load_weights`` -- and hybridtf loads the ones Keras 3 writes.  A compiled model's
  optimizer state is included, as Keras does.
* any other name (``ckpt/weights``, ``w.ckpt``): hybridtf's own format, a NumPy ``.npz``
  archive whose manifest names the format and version and lists every weight's name, shape
  and dtype, followed by the values in ``layer.weights`` order.  Keras cannot read it.

``load_weights`` tells the two apart by their content, and also reads the weights inside a
``.keras`` archive.  Files are written atomically (see ``framework.atomic_files``): a process
killed while saving leaves the previous file intact, and the next save removes the temporary
it left.  Parent directories are created as TF does for checkpoints.

As ``tf.keras.saving`` this module also offers ``load_model`` / ``save_model`` and the
registration of custom objects (``register_keras_serializable``, ``custom_object_scope``,
...).
"""
import io
import os
import zipfile

import numpy as np

from hybridtf.distribute import distribute_lib
from hybridtf.framework import atomic_files
from hybridtf.keras import h5_format
from hybridtf.keras.models import load_model, save_model  # noqa: F401
from hybridtf.keras.object_registration import (  # noqa: F401
    CustomObjectScope, custom_object_scope, get_custom_objects, get_registered_name,
    get_registered_object, register_keras_serializable)
from hybridtf.saved_model import array_file

WEIGHTS_FORMAT = "hybridtf.weights"
WEIGHTS_VERSION = 1
H5_SUFFIXES = (".h5", ".hdf5")
KERAS_WEIGHTS_MEMBER = "model.weights.h5"     # the weights inside a ``.keras`` archive


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
    # Under MultiWorkerMirroredStrategy every process saves and rank 0 writes the file.
    what = f"save_weights({filepath!r})"
    if filepath.endswith(H5_SUFFIXES):
        distribute_lib.write_once(lambda: atomic_files.write_file(
            filepath, lambda f: h5_format.write(layer, weights, f)), what)
        return
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
    distribute_lib.write_once(lambda: array_file.write_arrays(filepath, manifest, arrays), what)


def load_weights(layer, filepath):
    """Loads weights saved by ``save_weights`` (or by Keras 3) into ``layer``.

    Reads either format whatever the name: a Keras 3 layout HDF5 file (each layer's
    variables found at its path in the model), a hybridtf ``.npz`` weights file (the weights
    in ``layer.weights`` order), or the weights inside a ``.keras`` archive.  Every weight is
    checked against the file first -- count, shape, dtype -- and a ValueError names the first
    one that differs; then nothing is assigned.  A missing file raises FileNotFoundError; a
    truncated, corrupted or foreign file raises ``UnreadableFileError`` (a ValueError).
    """
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"Cannot read the weights file {filepath!r}: it is a "
                                "directory.")
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"The weights file {filepath!r} does not exist.")
    with open(filepath, "rb") as f:
        head = f.read(len(h5_format.HDF5_MAGIC))
    if head and h5_format.HDF5_MAGIC.startswith(head):     # (a truncated one, too)
        h5_format.read_into(layer, _weights_of(layer), filepath, filepath)
        return
    if head.startswith(b"PK") and _is_keras_archive(filepath):
        load_weights_from_bytes(layer, _archive_member(filepath, KERAS_WEIGHTS_MEMBER),
                                f"{filepath} ({KERAS_WEIGHTS_MEMBER})")
        return
    load_weights_from_bytes(layer, None, filepath)


def load_weights_from_bytes(layer, data, display_path, who="load_weights"):
    """``load_weights`` from ``data`` (a weights file's bytes, in either format), or from the
    file ``display_path`` when ``data`` is None; errors name ``display_path``."""
    if data and h5_format.HDF5_MAGIC.startswith(data[:len(h5_format.HDF5_MAGIC)]):
        h5_format.read_into(layer, _weights_of(layer), io.BytesIO(data), display_path, who)
        return
    manifest, arrays = array_file.read_arrays(display_path, "weights file", WEIGHTS_FORMAT,
                                              WEIGHTS_VERSION, data=data)
    entries = manifest.get("weights")
    if not isinstance(entries, list) or any(f"weight_{i}" not in arrays
                                            for i in range(len(entries))):
        raise array_file.UnreadableFileError(
            display_path, f"The weights file {display_path!r} is corrupted: its manifest does "
            "not match the arrays it holds. Save the weights again.")
    weights = _weights_of(layer)
    name = _layer_name(layer)
    if len(entries) != len(weights):
        hint = (" The layer has no weights yet: build it (call it on data, or call build()) "
                "before loading." if not weights else "")
        raise ValueError(f"{who}: {name} has {len(weights)} weights but the file "
                         f"{display_path!r} holds {len(entries)} "
                         f"(saved from {manifest.get('layer', '?')!r}).{hint}")
    values = []
    for i, (weight, entry) in enumerate(zip(weights, entries)):
        value = arrays[f"weight_{i}"]
        saved_name = entry.get("name", "?") if isinstance(entry, dict) else "?"
        if not weight.shape.is_compatible_with(value.shape):
            raise ValueError(f"{who}: weight #{i} {_weight_name(weight)!r} of {name} has "
                             f"shape {weight.shape} but the file {display_path!r} holds shape "
                             f"{tuple(value.shape)} for it (saved as {saved_name!r}).")
        if value.dtype != np.dtype(weight.dtype.as_numpy_dtype):
            raise ValueError(f"{who}: weight #{i} {_weight_name(weight)!r} of {name} has "
                             f"dtype {weight.dtype.name} but the file {display_path!r} holds "
                             f"{value.dtype.name} for it (saved as {saved_name!r}).")
        values.append(value)
    for weight, value in zip(weights, values):
        weight.assign(value)


def _is_keras_archive(filepath):
    try:
        with zipfile.ZipFile(filepath) as zf:
            names = set(zf.namelist())
    except (zipfile.BadZipFile, OSError, EOFError):
        return False
    return "config.json" in names and KERAS_WEIGHTS_MEMBER in names


def _archive_member(filepath, member):
    try:
        with zipfile.ZipFile(filepath) as zf:
            return zf.read(member)
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, ValueError) as err:
        raise array_file.UnreadableFileError(
            filepath, f"The model file {filepath!r} is truncated or corrupted: its "
            f"{member} cannot be read ({type(err).__name__}: {err}). Save the model again, "
            "or restore the file from a copy.") from None
