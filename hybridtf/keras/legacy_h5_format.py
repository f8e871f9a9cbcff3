"""Keras's legacy HDF5 whole-model format: ``model.save("model.h5")`` and
``keras.models.load_model("model.h5")``, in the layout Keras 3 writes and reads
(``legacy_h5_format``), so that files move between hybridtf and Keras both ways.

Layout of the file::

    attrs: keras_version, backend, model_config (JSON), training_config (JSON, compiled models)
    model_weights/                    attrs: layer_names, keras_version, backend
        <layer name>/                 attrs: weight_names (trainable weights, then the others)
            <weight name>             one dataset per weight, in weight_names order
        top_level_model_weights/      the model's own weights
    optimizer_weights/                attrs: weight_names (``optimizer.variables`` order)

``model_config`` is Keras 3's model config: ``Sequential`` (an ``InputLayer`` first) and
``Functional`` (each layer with its ``inbound_nodes``) configs of built-in or registered layers,
which Keras 3 rebuilds; a subclassed model is saved by its class name and ``get_config()``, as
Keras does (with the input shape it was built for, so that hybridtf can build it again).
Weights are matched layer by layer in order, as Keras does.  The file is written atomically.
"""
import json
import os
import warnings

import h5py
import numpy as np

from hybridtf.framework import atomic_files, nest
from hybridtf.keras import layers as layers_module
from hybridtf.keras import h5_format, model_configs, object_registration
from hybridtf.keras.layers.input_layer import InputLayer
from hybridtf.keras.layers.keras_tensor import KerasTensor
from hybridtf.keras.models import Model, Sequential
from hybridtf.saved_model.array_file import UnreadableFileError

SUFFIXES = (".h5", ".hdf5")
# The Keras format version whose layout this module writes (Keras 3 reads it).
KERAS_FORMAT_VERSION = "3.0.0"
BACKEND = "hybridtf"
_TENSOR = "__keras_tensor__"
# Keras 3 config entries that hybridtf's layers do not take, with the value that means "unused".
_KERAS_ONLY_ENTRIES = {"quantization_config": None, "lora_rank": None, "lora_alpha": None,
                       "optional": False, "synchronized": False, "input_axes": None,
                       "output_axes": None}


def is_legacy_h5(filepath):
    """True when ``filepath`` is an HDF5 file holding a whole model (a ``model_config``)."""
    with open(filepath, "rb") as f:
        if f.read(len(h5_format.HDF5_MAGIC)) != h5_format.HDF5_MAGIC:
            return False
    try:
        with h5py.File(filepath, "r") as f:
            return "model_config" in f.attrs
    except OSError:
        return False


# ---- saving ------------------------------------------------------------------------------------
def save_model(model, filepath, include_optimizer=True):
    """Writes ``model`` (config, weights, compile settings and optimizer state) to
    ``filepath`` in Keras's legacy HDF5 layout."""
    metadata = {"keras_version": KERAS_FORMAT_VERSION, "backend": BACKEND,
                "model_config": keras_model_config(model)}
    optimizer = model.__dict__.get("optimizer") if include_optimizer else None
    training = _training_config(model) if optimizer is not None else None
    if training is not None:
        metadata["training_config"] = training
    texts = {}
    for key, value in metadata.items():
        try:
            texts[key] = json.dumps(value) if isinstance(value, dict) else value
        except TypeError as err:
            raise TypeError(f"save: the {key} of model {model.name!r} is not JSON-serializable "
                            f"({err}); make get_config() return plain values.") from None

    def write(f):
        with h5py.File(f, "w") as h5:
            for key, text in texts.items():
                h5.attrs[key] = text
            _write_model_weights(h5.create_group("model_weights"), model)
            if training is not None and optimizer.variables:
                _write_named(h5.create_group("optimizer_weights"), list(optimizer.variables))
    atomic_files.write_file(os.fspath(filepath), write)


def _training_config(model):
    config = model_configs.compile_config(model)
    if config is None:
        return None
    return {"loss": config["loss"], "loss_weights": config["loss_weights"],
            "metrics": config["metrics"], "weighted_metrics": config["weighted_metrics"],
            "run_eagerly": model.run_eagerly, "steps_per_execution": 1, "jit_compile": False,
            "optimizer_config": config["optimizer"]}


def _write_model_weights(group, model):
    layers = _model_layers(model)
    group.attrs["layer_names"] = np.array([layer.name.encode("utf8") for layer in layers])
    group.attrs["backend"] = BACKEND
    group.attrs["keras_version"] = KERAS_FORMAT_VERSION
    for layer in sorted(layers, key=lambda layer: layer.name):
        _write_named(group.create_group(layer.name), _legacy_weights(layer))
    _write_named(group.create_group("top_level_model_weights"),
                 list(model._trainable_weights) + list(model._non_trainable_weights))


def _write_named(group, variables):
    """Datasets for ``variables`` named after them (made unique), listed in ``weight_names``."""
    names, used = [], set()
    for variable in variables:
        base = getattr(variable, "name", "weight").split(":")[0]
        name, n = base, 1
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        names.append(name)
        value = np.asarray(variable.numpy())
        if value.dtype.hasobject:
            raise TypeError(f"save: weight {base!r} has dtype {variable.dtype.name}, which "
                            "cannot be saved in an HDF5 file.")
        group.create_dataset(name, data=value)
    group.attrs["weight_names"] = np.array([n.encode("utf8") for n in names], dtype=object) \
        if names else np.zeros((0,))


def _legacy_weights(layer):
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def _model_layers(model):
    """The layers whose weights the file lists, as Keras lists them: ``model.layers``
    (a Sequential model's without its InputLayer, a functional model's with them)."""
    return list(model.layers)


# ---- hybridtf configs -> Keras 3 configs -------------------------------------------------------
def keras_model_config(model):
    """Keras 3's ``model_config`` of ``model``: ``{"class_name": ..., "config": ...}``."""
    if isinstance(model, Sequential) and type(model).get_config is Sequential.get_config:
        return {"class_name": "Sequential", "config": _sequential_config(model)}
    if model.__dict__.get("_is_graph_network") and type(model).get_config is Model.get_config:
        return {"class_name": "Functional", "config": _functional_config(model)}
    registered = object_registration.get_registered_name(type(model))
    config = {"class_name": registered, "config": model.get_config()}
    shape = model_configs.input_shape_structure(model)
    if shape is not None:
        config["build_input_shape"] = shape
    return config


def _keras_layer_config(layer):
    """``{"class_name", "config"}`` of a layer as Keras 3 writes it (nested models too)."""
    if isinstance(layer, Model):
        return keras_model_config(layer)
    if isinstance(layer, InputLayer):
        config = {"batch_shape": list(layer._batch_input_shape), "dtype": layer.dtype,
                  "sparse": False, "ragged": False, "name": layer.name}
    else:
        config = dict(layer.get_config())
        config.pop("batch_input_shape", None)     # an InputLayer carries the input shape
    entry = {"class_name": type(layer).__name__, "config": config}
    registered = object_registration.get_registered_name(type(layer))
    if registered != type(layer).__name__:
        entry["registered_name"] = registered
    return entry


def _sequential_config(model):
    layers = [_keras_layer_config(layer) for layer in model._self_tracked_layers]
    config = {"name": model.name, "trainable": model.trainable, "dtype": model.dtype,
              "layers": layers}
    shape = model_configs.input_shape_structure(model)
    if shape is not None:
        config["build_input_shape"] = shape
    return config


def _functional_config(model):
    nodes_of = {}        # id(layer) -> this model's calls of it, in order
    for node in model._functional_nodes:
        nodes_of.setdefault(id(node.layer), []).append(node)

    def history(tensor):
        layer, node, index = tensor._keras_history
        calls = nodes_of.get(id(layer), [])
        node_index = next((i for i, n in enumerate(calls) if n is node), 0)
        return [layer.name, node_index, index]

    def encode(value):
        if isinstance(value, KerasTensor):
            return {"class_name": _TENSOR, "config": {
                "shape": value.shape.as_list(), "dtype": value.dtype.name,
                "keras_history": history(value)}}
        if isinstance(value, (list, tuple)):
            return [encode(v) for v in value]
        if isinstance(value, dict):
            return {k: encode(v) for k, v in value.items()}
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return value.item()
        return value

    layers = []
    for layer in model.layers:
        entry = _keras_layer_config(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [{"args": encode([node.inputs, *node.args]),
                                   "kwargs": encode(dict(node.kwargs))}
                                  for node in nodes_of.get(id(layer), [])]
        layers.append(entry)
    outputs = [history(t) for t in model.outputs]
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": [history(t) for t in model.inputs],
            "output_layers": outputs[0] if len(outputs) == 1 else outputs}


# ---- loading -----------------------------------------------------------------------------------
def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """The model in the legacy HDF5 file ``filepath`` (written by hybridtf or by Keras)."""
    try:
        with h5py.File(filepath, "r") as f:
            model_config = _json_attribute(f, "model_config", filepath)
            training_config = _json_attribute(f, "training_config", filepath, required=False)
            if "model_weights" not in f:
                raise UnreadableFileError(filepath, f"load_model: {filepath} has no "
                                          "'model_weights' group; it is not a whole-model "
                                          "HDF5 file.")
            with object_registration.CustomObjectScope(custom_objects), \
                    object_registration.SafeModeScope(safe_mode):
                model = model_from_keras_config(model_config, custom_objects)
            _read_model_weights(f["model_weights"], model, filepath)
            optimizer_values = _read_named(f["optimizer_weights"]) \
                if "optimizer_weights" in f else None
    except OSError as err:
        raise UnreadableFileError(filepath, f"load_model: {filepath} is truncated or corrupted "
                                  f"({err}). Save the model again, or restore the file from a "
                                  "copy.") from None
    if compile and training_config:
        config = {"optimizer": training_config.get("optimizer_config"),
                  "loss": training_config.get("loss"),
                  "metrics": training_config.get("metrics"),
                  "weighted_metrics": training_config.get("weighted_metrics"),
                  "loss_weights": training_config.get("loss_weights")}
        compiled = model_configs.compile_from_config(model, config, custom_objects or {})
        if compiled and optimizer_values is not None:
            _load_optimizer(model, optimizer_values, filepath)
    return model


def _json_attribute(f, key, filepath, required=True):
    text = f.attrs.get(key)
    if text is None:
        if required:
            raise ValueError(f"No model config found in the file at {filepath}.")
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text)
    except ValueError as err:
        raise UnreadableFileError(filepath, f"load_model: the {key} of {filepath} is damaged "
                                  f"({err}).") from None


def _load_optimizer(model, values, filepath):
    optimizer = model.optimizer
    unbuilt = [v for v in model.trainable_variables if not optimizer._is_built_for(v)]
    if unbuilt:
        optimizer.build(unbuilt)
    own = optimizer.variables
    if len(own) != len(values) or any(tuple(v.shape.as_list()) != np.shape(value)
                                      for v, value in zip(own, values)):
        warnings.warn(f"load_model: the optimizer state in {filepath} ({len(values)} variables) "
                      f"does not match the optimizer built for the model ({len(own)}); the "
                      "optimizer starts afresh.", stacklevel=3)
        return
    optimizer.set_weights(values)


def _read_named(group):
    names = [n.decode("utf8") if isinstance(n, bytes) else str(n)
             for n in group.attrs.get("weight_names", [])]
    values = []
    for name in names:
        dataset = group.get(name)
        if not isinstance(dataset, h5py.Dataset):
            raise UnreadableFileError(group.file.filename, f"load_model: the weights group "
                                      f"{group.name!r} names {name!r}, which it does not hold.")
        values.append(np.asarray(dataset[()]))
    return values


def _read_model_weights(group, model, filepath):
    """Keras's topological loading: the i-th layer with weights takes the i-th saved layer
    with weights."""
    layers = [layer for layer in _model_layers(model) if _legacy_weights(layer)]
    names = [n.decode("utf8") if isinstance(n, bytes) else str(n)
             for n in group.attrs.get("layer_names", [])]
    saved = []
    for name in names:
        if name not in group:
            raise UnreadableFileError(filepath, f"load_model: {filepath} lists layer {name!r} "
                                      "but holds no weights group for it.")
        values = _read_named(group[name])
        if values:
            saved.append((name, values))
    if len(saved) != len(layers):
        raise ValueError(f"Layer count mismatch when loading weights from file. Model expected "
                         f"{len(layers)} layers, found {len(saved)} saved layers.")
    assignments = []
    for k, (layer, (name, values)) in enumerate(zip(layers, saved)):
        weights = _legacy_weights(layer)
        if len(values) != len(weights):
            raise ValueError(f"Weight count mismatch for layer #{k} (named {layer.name} in the "
                             f"current model, {name} in the save file). Layer expects "
                             f"{len(weights)} weight(s). Received {len(values)} saved "
                             "weight(s)")
        for weight, value in zip(weights, values):
            if tuple(weight.shape.as_list()) != value.shape:
                raise ValueError(f"Shape mismatch in layer #{k} (named {layer.name}) for weight "
                                 f"{weight.name}. Weight expects shape "
                                 f"{tuple(weight.shape.as_list())}. Received saved weight with "
                                 f"shape {value.shape}")
            assignments.append((weight, value))
    if "top_level_model_weights" in group:
        own = list(model._trainable_weights) + list(model._non_trainable_weights)
        values = _read_named(group["top_level_model_weights"])
        if len(values) != len(own):
            raise ValueError(f"Weight count mismatch for top-level weights when loading weights "
                             f"from file. Model expects {len(own)} top-level weight(s). "
                             f"Received {len(values)} saved top-level weight(s)")
        assignments += list(zip(own, values))
    for weight, value in assignments:
        weight.assign(value.astype(weight.dtype.as_numpy_dtype, copy=False))


# ---- Keras 3 configs -> hybridtf models --------------------------------------------------------
def model_from_keras_config(config, custom_objects=None):
    """The model a Keras 3 (or hybridtf) ``model_config`` describes, with new weights."""
    if not isinstance(config, dict) or "config" not in config:
        raise ValueError(f"The provided configuration is not a valid Keras configuration: "
                         f"expected a dict with a 'config' key. Received: config={config!r}")
    class_name = config.get("class_name")
    if class_name == "Sequential":
        return _sequential_from_config(config["config"], custom_objects)
    if class_name in ("Functional", "Model") and "layers" in config["config"]:
        return _functional_from_config(config["config"], custom_objects)
    cls = model_configs.find_model_class(class_name, config.get("registered_name"),
                                         custom_objects, object_registration.in_safe_mode())
    model = model_configs.model_from_class_config(cls, class_name, config["config"],
                                                  custom_objects)
    shape = config.get("build_input_shape")
    if not model.built:
        if shape is None:
            raise ValueError(f"load_model: the file does not record the input shape the "
                             f"{class_name} model was built for; build the model in code and "
                             "load its weights instead.")
        model.build(model_configs.shape_argument(shape))
    return model


def _layer_from_keras_config(entry, custom_objects):
    class_name = entry.get("class_name")
    if class_name in ("Sequential", "Functional", "Model"):
        return model_from_keras_config(entry, custom_objects)
    config = dict(entry.get("config") or {})
    dtype = config.get("dtype")
    if isinstance(dtype, dict):     # Keras 3's DTypePolicy
        config["dtype"] = (dtype.get("config") or {}).get("name")
    config = _without_unused_entries(config)
    if class_name == "InputLayer":
        shape = config.pop("batch_shape", None)
        if shape is not None:
            config["batch_input_shape"] = shape
    description = {"class_name": class_name, "config": config}
    if entry.get("registered_name"):
        description["registered_name"] = entry["registered_name"]
    try:
        return layers_module.deserialize(description, custom_objects=custom_objects)
    except TypeError as err:
        raise ValueError(f"load_model: layer {config.get('name', class_name)!r} "
                         f"({class_name}) cannot be rebuilt from its config ({err}). The file "
                         "uses an option hybridtf's layer does not have.") from None


def _without_unused_entries(config):
    """``config`` without the Keras 3 entries hybridtf's layers and initializers do not take
    when they hold their "unused" value (also inside nested object configs)."""
    cleaned = {}
    for key, value in config.items():
        if key in _KERAS_ONLY_ENTRIES and value == _KERAS_ONLY_ENTRIES[key]:
            continue
        if isinstance(value, dict) and isinstance(value.get("config"), dict) and \
                "class_name" in value:
            value = dict(value, config=_without_unused_entries(value["config"]))
        cleaned[key] = value
    return cleaned


def _sequential_from_config(config, custom_objects):
    model = Sequential(name=config.get("name"))
    for entry in config["layers"]:
        model.add(_layer_from_keras_config(entry, custom_objects))
    if not model.built:
        shape = config.get("build_input_shape")
        if shape is None:
            raise ValueError("load_model: the Sequential model has no InputLayer and no "
                             "build_input_shape; its weights cannot be created.")
        model.build(model_configs.shape_argument(shape))
    if config.get("trainable") is False:
        model.trainable = False
    return model


def _functional_from_config(config, custom_objects):
    created = {}          # layer name -> layer
    outputs = {}          # layer name -> [outputs of each call]
    pending = []
    for entry in config["layers"]:
        layer = _layer_from_keras_config(entry, custom_objects)
        name = entry.get("name") or layer.name
        created[name] = layer
        if isinstance(layer, InputLayer):
            outputs[name] = [[layer.output]]
        else:
            outputs[name] = []
            pending += [(name, node) for node in entry.get("inbound_nodes", [])]

    def tensor(reference):
        layer_name, node_index, index = reference[:3]
        calls = outputs.get(layer_name)
        if calls is None:
            raise ValueError(f"load_model: the model config refers to an unknown layer "
                             f"{layer_name!r}.")
        if node_index >= len(calls):
            raise LookupError(layer_name)     # not produced yet
        return calls[node_index][index]

    def decode(value):
        if isinstance(value, dict) and value.get("class_name") == _TENSOR:
            return tensor(value["config"]["keras_history"])
        if isinstance(value, list):
            return [decode(v) for v in value]
        if isinstance(value, dict):
            return {k: decode(v) for k, v in value.items()}
        return value

    # Calls run in the order their inputs become available (Keras's rule for shared layers).
    while pending:
        progressed = False
        for item in list(pending):
            name, node = item
            try:
                args = decode(node.get("args", []))
                kwargs = decode(node.get("kwargs", {}))
            except LookupError:
                continue
            result = created[name](args[0], *args[1:], **kwargs)
            outputs[name].append(nest.flatten(result))
            pending.remove(item)
            progressed = True
        if not progressed:
            raise ValueError("load_model: the functional model config cannot be rebuilt: layer "
                             f"calls {[n for n, _ in pending]} wait on tensors no layer "
                             "produces.")
    inputs = [tensor(ref) for ref in _references(config["input_layers"])]
    model_outputs = [tensor(ref) for ref in _references(config["output_layers"])]
    model = Model(inputs[0] if len(inputs) == 1 and _is_single(config["input_layers"])
                  else inputs,
                  model_outputs[0] if len(model_outputs) == 1 and
                  _is_single(config["output_layers"]) else model_outputs,
                  name=config.get("name"))
    if config.get("trainable") is False:
        model.trainable = False
    return model


def _is_single(references):
    """True for Keras's ``["name", 0, 0]`` (one tensor) rather than a list of them."""
    return bool(references) and isinstance(references[0], str)


def _references(references):
    return [references] if _is_single(references) else list(references)
