"""``model.save("model.keras")`` and ``keras.models.load_model``: a model's architecture,
weights, compile settings and optimizer state in one archive.  (Names ending in ``.h5`` or
``.hdf5`` are saved in, and files in it loaded from, Keras's legacy HDF5 format: see
``legacy_h5_format``.)

The archive is a zip holding ``config.json`` (the model's class name, its config, the input
shape it was built for and its compile settings) and ``model.weights.h5``: the weights and,
for a compiled model, the optimizer's state, in Keras 3's HDF5 weights layout (see
``h5_format``; Keras's own ``.keras`` files hold the same member in the same layout, but
their ``config.json`` is Keras's and hybridtf cannot rebuild models from it).
A Sequential model or a subclassed one is described by its ``get_config()``; a functional
model by its layer graph (each layer's config and which outputs feed which call), so any
functional model of built-in (or ``custom_objects``) layers can be saved.  Loading finds the
class (``custom_objects``, the Keras classes, classes registered with
``keras.saving.register_keras_serializable``; with ``safe_mode=False`` also the one loaded
``Layer`` subclass of that name), rebuilds the model, builds it, compiles it as it was and
loads the weights and optimizer state.  The archive is written atomically like every hybridtf
save: a process killed while saving leaves the previous file intact.
"""
import io
import json
import os
import warnings
import zipfile
import zlib

import numpy as np

from hybridtf.distribute import distribute_lib
from hybridtf.framework import atomic_files, nest
from hybridtf.keras import (h5_format, legacy_h5_format, model_configs, object_registration,
                            saving)
from hybridtf.keras import layers as layers_module
from hybridtf.keras.layers.keras_tensor import KerasTensor
from hybridtf.saved_model import array_file

_FORMAT = "hybridtf.keras.model"
_VERSION = 1
_OPTIMIZER_FORMAT = "hybridtf.keras.optimizer"
_CONFIG_MEMBER = "config.json"
_LEGACY_OPTIMIZER_MEMBER = "optimizer.weights.h5"   # archives of earlier hybridtf versions
_SUFFIXES = (".keras", ".h5", ".hdf5")
_FUNCTIONAL = "Functional"
_TENSOR = "__keras_tensor__"


def _check_path(filepath, who):
    filepath = os.fspath(filepath)
    if not filepath.endswith(_SUFFIXES):
        raise ValueError(f"{who}: invalid filepath extension {filepath!r}; use a path ending "
                         "in `.keras` (or `.h5`) to save the whole model, `.weights.h5` with "
                         "`save_weights` for the weights only, or `tf.saved_model.save(model, "
                         "directory)` to export its traced functions.")
    return filepath


# ---- saving -----------------------------------------------------------------------------------
def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Saves ``model``'s config, weights, compile settings and optimizer state to
    ``filepath``: a ``.keras`` archive, or for ``.h5`` / ``.hdf5`` names Keras's legacy HDF5
    file (see ``legacy_h5_format``; ``include_optimizer=False`` leaves the optimizer out)."""
    filepath = _check_path(filepath, "save")
    if filepath.endswith(legacy_h5_format.SUFFIXES) and not os.path.isdir(filepath):
        # Keras 3 writes `.h5` names in its legacy HDF5 format, not as a `.keras` archive.
        if os.path.exists(filepath) and not overwrite:
            raise FileExistsError(f"save: {filepath} exists and overwrite=False; pass "
                                  "overwrite=True to replace it or choose another name.")
        if not model.built:
            raise ValueError(f"save: the model {model.name!r} has no weights yet; call it on "
                             "data or build it before saving.")
        distribute_lib.write_once(
            lambda: legacy_h5_format.save_model(model, filepath,
                                                include_optimizer=include_optimizer),
            f"model.save({filepath!r})")
        return
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"save: {filepath!r} is a directory; give a file name ending in "
                                "`.keras`.")
    if os.path.exists(filepath) and not overwrite:
        raise FileExistsError(f"save: {filepath} exists and overwrite=False; pass "
                              "overwrite=True to replace it or choose another name.")
    if not model.built:
        raise ValueError(f"save: the model {model.name!r} has no weights yet; call it on data "
                         "or build it before saving.")
    class_name, config = _model_config(model)
    manifest = {"format": _FORMAT, "version": _VERSION, "class_name": class_name,
                "config": config, "build_input_shape": model_configs.input_shape_structure(model),
                "compile_config": model_configs.compile_config(model)}
    registered = object_registration.get_registered_name(type(model))
    if class_name != _FUNCTIONAL and registered != class_name:
        manifest["registered_name"] = registered
    try:
        text = json.dumps(manifest)
    except TypeError as err:
        raise TypeError(f"save: the config of {type(model).__name__} is not JSON-serializable "
                        f"({err}); make get_config() return plain values.") from None

    def write(f):
        weights = io.BytesIO()
        h5_format.write(model, model.weights, weights)
        with zipfile.ZipFile(f, "w") as zf:
            zf.writestr(_CONFIG_MEMBER, text)
            zf.writestr(saving.KERAS_WEIGHTS_MEMBER, weights.getvalue())
    # Under MultiWorkerMirroredStrategy every process saves and rank 0 writes the file.
    distribute_lib.write_once(lambda: atomic_files.write_file(filepath, write),
                              f"model.save({filepath!r})")


def _model_config(model):
    """(class name, config) of a model: its graph for a functional model, else get_config."""
    if _is_functional(model):
        return _FUNCTIONAL, functional_config(model)
    try:
        return type(model).__name__, model.get_config()
    except NotImplementedError as err:
        raise NotImplementedError(
            f"save: {type(model).__name__} cannot be saved as a whole: {err} Override "
            "get_config() (and from_config if needed), or save only its weights with "
            "save_weights.") from None


def _is_functional(model):
    from hybridtf.keras.models import Model
    return bool(model.__dict__.get("_is_graph_network")) and \
        type(model).get_config is Model.get_config


# ---- the functional graph ---------------------------------------------------------------------
def _serialize_layer(layer):
    if _is_functional(layer):
        return {"class_name": _FUNCTIONAL, "config": functional_config(layer)}
    return layers_module.serialize(layer)


def _deserialize_layer(config, custom_objects):
    if config.get("class_name") == _FUNCTIONAL:
        return functional_from_config(config["config"], custom_objects)
    return layers_module.deserialize(config, custom_objects=custom_objects)


def functional_config(model):
    """A JSON description of a functional model: its input layers, its other layers (each
    once, however often it is called), and each call with the outputs it takes."""
    refs = {id(t): ["input", i] for i, t in enumerate(model.inputs)}
    layer_configs, layer_index, calls = [], {}, []

    def encode(value, layer_name):
        if isinstance(value, KerasTensor):
            return {_TENSOR: refs[id(value)]}
        if isinstance(value, (list, tuple)):
            return [encode(v, layer_name) for v in value]
        if isinstance(value, dict):
            return {k: encode(v, layer_name) for k, v in value.items()}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return value.item()
        raise TypeError(f"save: layer {layer_name!r} of the functional model {model.name!r} "
                        f"was called with an argument of type {type(value).__name__}, which "
                        "cannot be saved; pass it to the layer's constructor instead.")

    for j, node in enumerate(model._functional_nodes):
        layer = node.layer
        if id(layer) not in layer_index:
            layer_index[id(layer)] = len(layer_configs)
            layer_configs.append(_serialize_layer(layer))
        calls.append({"layer": layer_index[id(layer)],
                      "inputs": encode(node.inputs, layer.name),
                      "args": encode(list(node.args), layer.name),
                      "kwargs": encode(dict(node.kwargs), layer.name)})
        for k, tensor in enumerate(node.outputs):
            refs[id(tensor)] = ["node", j, k]
    return {"name": model.name, "trainable": model.trainable,
            "input_layers": [_serialize_layer(t._keras_history[0]) for t in model.inputs],
            "layers": layer_configs, "nodes": calls,
            "inputs": encode(model._nested_inputs, "(inputs)"),
            "outputs": encode(model._nested_outputs, "(outputs)")}


def functional_from_config(config, custom_objects=None):
    """The functional model ``functional_config`` described (new weights)."""
    from hybridtf.keras import models
    inputs = [_deserialize_layer(c, custom_objects).output for c in config["input_layers"]]
    layers = [_deserialize_layer(c, custom_objects) for c in config["layers"]]
    outputs_of_call = []

    def decode(value):
        if isinstance(value, dict) and set(value) == {_TENSOR}:
            kind, *where = value[_TENSOR]
            return inputs[where[0]] if kind == "input" else outputs_of_call[where[0]][where[1]]
        if isinstance(value, list):
            return [decode(v) for v in value]
        if isinstance(value, dict):
            return {k: decode(v) for k, v in value.items()}
        return value

    for call in config["nodes"]:
        result = layers[call["layer"]](decode(call["inputs"]), *decode(call["args"]),
                                       **decode(call["kwargs"]))
        outputs_of_call.append(nest.flatten(result))
    model = models.Model(decode(config["inputs"]), decode(config["outputs"]),
                         name=config.get("name"))
    model.trainable = config.get("trainable", True)
    return model


# ---- loading ----------------------------------------------------------------------------------
def _from_config(cls, class_name, config, custom_objects):
    if class_name == _FUNCTIONAL:
        return functional_from_config(config, custom_objects)
    return model_configs.model_from_class_config(cls, class_name, config, custom_objects)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """The model saved with ``model.save(filepath)``: rebuilt from its config, with its
    weights, and (``compile=True``) compiled as it was, with the optimizer's state.

    ``custom_objects``: classes and functions the model uses that are neither Keras's nor
    registered with ``keras.saving.register_keras_serializable``, by name.  ``safe_mode``
    (default True): refuse to run code stored in the file (a ``Lambda`` layer's lambda,
    saved as Python bytecode) and to use classes or functions that the file names but that
    are not Keras's, registered, or in ``custom_objects``.  Pass ``safe_mode=False`` only for
    files you trust.

    Raises:
      FileNotFoundError: there is no file at ``filepath``.
      ValueError: the file is not a model archive, is truncated or damaged (the error says
        which), or needs what safe mode refuses.
    """
    if not isinstance(safe_mode, bool):
        raise TypeError(f"load_model: safe_mode must be True or False, got {safe_mode!r}.")
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise ValueError(f"load_model: {filepath} is a directory; for a SavedModel use "
                         "tf.saved_model.load(directory).")
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"load_model: no such file: {filepath}")
    if legacy_h5_format.is_legacy_h5(filepath):
        return legacy_h5_format.load_model(filepath, custom_objects=custom_objects,
                                           compile=compile, safe_mode=safe_mode)
    with open(filepath, "rb") as f:
        if f.read(len(h5_format.HDF5_MAGIC)) == h5_format.HDF5_MAGIC:
            raise ValueError(f"load_model: {filepath} is an HDF5 weights file, not a whole "
                             "model (it has no model_config). Build the model in code and "
                             f"call model.load_weights({filepath!r}).")
    manifest, weights, optimizer_state = _read_archive(filepath)
    with object_registration.CustomObjectScope(custom_objects), \
            object_registration.SafeModeScope(safe_mode):
        class_name = manifest["class_name"]
        cls = None if class_name == _FUNCTIONAL else model_configs.find_model_class(
            class_name, manifest.get("registered_name"), custom_objects, safe_mode)
        model = _from_config(cls, class_name, manifest["config"], custom_objects)
    shape = manifest.get("build_input_shape")
    if not model.built:
        if shape is None:
            raise ValueError(f"load_model: {filepath} does not record the input shape the "
                             "model was built for.")
        model.build(model_configs.shape_argument(shape))
    compiled = False
    compile_config = manifest.get("compile_config")
    if compile and compile_config:
        compiled = model_configs.compile_from_config(model, compile_config, custom_objects or {})
    display = f"{filepath} ({saving.KERAS_WEIGHTS_MEMBER})"
    if compiled and h5_format.stored_optimizer_size(weights) > len(model.optimizer.variables):
        model.optimizer.build(model.trainable_variables)    # slots to load the state into
    saving.load_weights_from_bytes(model, weights, display, who="load_model")
    if compiled and optimizer_state is not None:
        _load_legacy_optimizer(model, optimizer_state,
                               f"{filepath} ({_LEGACY_OPTIMIZER_MEMBER})")
    return model


def _read_archive(filepath):
    """``(config, weights file bytes, legacy optimizer file bytes or None)`` of a ``.keras``
    archive, with errors that name ``filepath`` and say what is wrong with it."""
    with open(filepath, "rb") as f:
        head = f.read(4)
    if head != b"PK\x03\x04":
        raise ValueError(f"load_model: {filepath} is not a .keras model archive (a zip file): "
                         f"{'it is empty' if not head else f'it starts with {head!r}'}. Give "
                         "the path of a file written by model.save('....keras').")
    try:
        with zipfile.ZipFile(filepath) as zf:
            names = set(zf.namelist())
            missing = [m for m in (_CONFIG_MEMBER, saving.KERAS_WEIGHTS_MEMBER)
                       if m not in names]
            if missing:
                raise ValueError(f"load_model: {filepath} is a zip archive but not a model "
                                 f"saved by model.save: it has no {' or '.join(missing)}.")
            config_text = zf.read(_CONFIG_MEMBER)
            metadata = zf.read("metadata.json") if "metadata.json" in names else None
            weights = zf.read(saving.KERAS_WEIGHTS_MEMBER)
            optimizer_state = zf.read(_LEGACY_OPTIMIZER_MEMBER) \
                if _LEGACY_OPTIMIZER_MEMBER in names else None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as err:
        raise ValueError(f"load_model: {filepath} is truncated or corrupted ({type(err).__name__}"
                         f": {err}). Save the model again, or restore the file from a "
                         "copy.") from None
    try:
        manifest = json.loads(config_text)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"load_model: the config.json of {filepath} is damaged ({err}). Save "
                         "the model again, or restore the file from a copy.") from None
    if isinstance(manifest, dict) and manifest.get("format") == _FORMAT and \
            isinstance(manifest.get("version"), int) and manifest["version"] <= _VERSION:
        return manifest, weights, optimizer_state
    if metadata is not None and b"keras_version" in metadata:
        raise ValueError(f"load_model: {filepath} was written by Keras, whose model configs "
                         "hybridtf cannot rebuild. Build the same model with hybridtf and "
                         f"load the weights: model.load_weights({filepath!r}).")
    found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
    version = manifest.get("version") if isinstance(manifest, dict) else None
    raise ValueError(f"load_model: {filepath} is not a model file this version of hybridtf can "
                     f"read (format {found!r}, version {version!r}); upgrade hybridtf if it "
                     "was written by a newer one.")


def _load_legacy_optimizer(model, data, display_path):
    """The optimizer state of archives written by earlier hybridtf versions (a separate
    ``optimizer.weights.h5`` member in hybridtf's ``.npz`` format)."""
    optimizer = model.optimizer
    manifest, arrays = array_file.read_arrays(display_path, "optimizer state",
                                              _OPTIMIZER_FORMAT, 1, data=data)
    values = [arrays[f"variable_{i}"] for i in range(int(manifest.get("count", 0)))]
    optimizer.build(model.trainable_variables)
    current = optimizer.get_weights()
    if len(current) != len(values) or any(np.shape(a) != np.shape(b)
                                          for a, b in zip(current, values)):
        warnings.warn(f"load_model: the saved optimizer state ({len(values)} variables) does "
                      f"not match the optimizer built for the model ({len(current)}); the "
                      "optimizer starts afresh.", stacklevel=3)
        return
    optimizer.set_weights(values)
