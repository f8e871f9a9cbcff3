"""``model.save("model.keras")`` and ``keras.models.load_model``: a model's architecture,
weights, compile settings and optimizer state in one archive.

The archive is a zip holding ``config.json`` (the model's class name, its config, the input
shape it was built for and its compile settings), ``model.weights.h5`` (the weights, in
hybridtf's weight-file format) and, once the optimizer has state, ``optimizer.weights.h5``.
A Sequential model or a subclassed one is described by its ``get_config()``; a functional
model by its layer graph (each layer's config and which outputs feed which call), so any
functional model of built-in (or ``custom_objects``) layers can be saved.  Loading finds the
class (``custom_objects``, the Keras classes, or the one loaded ``Layer`` subclass of that
name), rebuilds the model, builds it, loads the weights and compiles it as it was.  Written to
a temporary file and renamed, like every hybridtf save.
"""
import inspect
import json
import os
import tempfile
import warnings
import zipfile

import numpy as np

from hybridtf.framework import nest
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import saving
from hybridtf.saved_model import array_file

_FORMAT = "hybridtf.keras.model"
_VERSION = 1
_OPTIMIZER_FORMAT = "hybridtf.keras.optimizer"
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
def save_model(model, filepath, overwrite=True):
    """Saves ``model``'s config, weights, compile settings and optimizer state to
    ``filepath`` (``.keras``)."""
    filepath = _check_path(filepath, "save")
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
                "config": config, "build_input_shape": _shape_structure(model),
                "compile_config": _compile_config(model)}
    try:
        text = json.dumps(manifest)
    except TypeError as err:
        raise TypeError(f"save: the config of {type(model).__name__} is not JSON-serializable "
                        f"({err}); make get_config() return plain values.") from None
    directory = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        weights_path = os.path.join(scratch, "model.weights.h5")
        saving.save_weights(model, weights_path)
        optimizer_path = _save_optimizer(model, scratch)
        archive = os.path.join(scratch, "model.keras")
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("config.json", text)
            zf.write(weights_path, "model.weights.h5")
            if optimizer_path is not None:
                zf.write(optimizer_path, "optimizer.weights.h5")
        os.replace(archive, filepath)


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


def _shape_structure(model):
    """The input shape(s) the model was built for, as JSON lists (None when unknown)."""
    from hybridtf.keras.layers.layer_utils import as_shape_structure
    shape = getattr(model, "_build_input_shape", None)
    if shape is None:
        try:
            shape = model.input_shape
        except AttributeError:
            return None

    def to_json(value):
        if isinstance(value, TensorShape):
            return value.as_list() if value.rank is not None else None
        if isinstance(value, dict):
            return {k: to_json(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [to_json(v) for v in value]
        return None
    return to_json(as_shape_structure(shape))


def _serialize_spec(spec, serialize):
    """A compile argument (a name, an object, a function, or a list/dict of them) as JSON."""
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, (list, tuple)):
        return [_serialize_spec(s, serialize) for s in spec]
    if isinstance(spec, dict):
        return {k: _serialize_spec(v, serialize) for k, v in spec.items()}
    try:
        return serialize(spec)
    except ValueError:
        name = getattr(spec, "__name__", None)
        if name is None:
            raise
        return name            # a custom function: found again through custom_objects


def _compile_config(model):
    """The optimizer (settings), loss(es), metrics and loss weights ``compile`` was given;
    None when the model was not compiled or one of them cannot be written down."""
    from hybridtf.keras import losses, metrics, optimizers
    if not model.__dict__.get("_is_compiled"):
        return None
    try:
        container = model.compiled_metrics
        return {"optimizer": optimizers.serialize(model.optimizer),
                "loss": _serialize_spec(model._loss_spec, losses.serialize),
                "metrics": _serialize_spec(container._user_metrics, metrics.serialize),
                "weighted_metrics": _serialize_spec(container._user_weighted_metrics,
                                                    metrics.serialize),
                "loss_weights": model.compiled_loss._user_loss_weights}
    except (ValueError, AttributeError) as err:
        warnings.warn(f"save: the compile settings of {model.name!r} cannot be saved ({err}); "
                      "compile the loaded model again.", stacklevel=3)
        return None


def _save_optimizer(model, scratch):
    optimizer = model.__dict__.get("optimizer")
    if optimizer is None or not model.__dict__.get("_is_compiled") or not optimizer.built:
        return None
    values = optimizer.get_weights()
    path = os.path.join(scratch, "optimizer.weights.h5")
    array_file.write_arrays(
        path, {"format": _OPTIMIZER_FORMAT, "version": 1, "count": len(values),
               "shapes": [list(np.shape(v)) for v in values]},
        {f"variable_{i}": v for i, v in enumerate(values)})
    return path


# ---- the functional graph ---------------------------------------------------------------------
def _serialize_layer(layer):
    from hybridtf.keras import layers
    if _is_functional(layer):
        return {"class_name": _FUNCTIONAL, "config": functional_config(layer)}
    return layers.serialize(layer)


def _deserialize_layer(config, custom_objects):
    from hybridtf.keras import layers
    if config.get("class_name") == _FUNCTIONAL:
        return functional_from_config(config["config"], custom_objects)
    return layers.deserialize(config, custom_objects=custom_objects)


def functional_config(model):
    """A JSON description of a functional model: its input layers, its other layers (each
    once, however often it is called), and each call with the outputs it takes."""
    from hybridtf.keras.layers.keras_tensor import KerasTensor
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
def _all_subclasses(cls):
    found, stack = {}, [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.setdefault(sub.__name__, [])
            if sub not in found[sub.__name__]:
                found[sub.__name__].append(sub)
            stack.append(sub)
    return found


def _find_class(name, custom_objects):
    from hybridtf.keras import layers, models
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    for namespace in (models, layers):
        candidate = getattr(namespace, name, None)
        if isinstance(candidate, type):
            return candidate
    candidates = _all_subclasses(layers.Layer).get(name, [])
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ValueError(f"load_model: unknown class {name!r}; pass it in custom_objects="
                         f"{{'{name}': {name}}}.")
    where = sorted(f"{c.__module__}.{c.__qualname__}" for c in candidates)
    raise ValueError(f"load_model: {len(candidates)} loaded classes are named {name!r} "
                     f"({', '.join(where)}); say which with custom_objects={{'{name}': ...}}.")


def _from_config(cls, class_name, config, custom_objects):
    if class_name == _FUNCTIONAL:
        return functional_from_config(config, custom_objects)
    try:
        accepts_objects = "custom_objects" in inspect.signature(cls.from_config).parameters
    except (TypeError, ValueError):
        accepts_objects = False
    try:
        if accepts_objects:
            return cls.from_config(config, custom_objects=custom_objects)
        return cls.from_config(config)
    except TypeError as err:
        raise TypeError(f"load_model: could not rebuild {class_name} from its config {config} "
                        f"({err}). Make get_config() return every argument __init__ needs, or "
                        "define the classmethod from_config(cls, config).") from None


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """The model saved with ``model.save(filepath)``: rebuilt from its config, with its
    weights, and (``compile=True``) compiled as it was, with the optimizer's state."""
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise ValueError(f"load_model: {filepath} is a directory; for a SavedModel use "
                         "tf.saved_model.load(directory).")
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"load_model: no such file: {filepath}")
    try:
        with zipfile.ZipFile(filepath) as zf:
            manifest = json.loads(zf.read("config.json"))
            weights = zf.read("model.weights.h5")
            optimizer_state = zf.read("optimizer.weights.h5") \
                if "optimizer.weights.h5" in zf.namelist() else None
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as err:
        raise ValueError(f"load_model: {filepath} is not a model saved by hybridtf's "
                         f"model.save ({type(err).__name__}: {err}).") from None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT or \
            manifest.get("version", 0) > _VERSION:
        found = manifest if not isinstance(manifest, dict) else manifest.get("format")
        raise ValueError(f"load_model: {filepath} is not a model file this version of hybridtf "
                         f"can read (format {found!r}).")
    class_name = manifest["class_name"]
    cls = None if class_name == _FUNCTIONAL else _find_class(class_name, custom_objects)
    model = _from_config(cls, class_name, manifest["config"], custom_objects)
    shape = manifest.get("build_input_shape")
    if not model.built:
        if shape is None:
            raise ValueError(f"load_model: {filepath} does not record the input shape the "
                             "model was built for.")
        model.build(tuple(shape) if _is_flat_shape(shape) else shape)
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "model.weights.h5")
        with open(path, "wb") as f:
            f.write(weights)
        saving.load_weights(model, path)
        compile_config = manifest.get("compile_config")
        if compile and compile_config:
            if _compile_from_config(model, compile_config, custom_objects or {}) and \
                    optimizer_state is not None:
                path = os.path.join(scratch, "optimizer.weights.h5")
                with open(path, "wb") as f:
                    f.write(optimizer_state)
                _load_optimizer(model, path)
    return model


def _is_flat_shape(shape):
    return isinstance(shape, list) and all(d is None or isinstance(d, int) for d in shape)


def _compile_from_config(model, config, custom):
    """Compiles ``model`` as ``config`` says; False (with a warning) when a loss or metric
    cannot be found."""
    from hybridtf.keras import losses, metrics, optimizers

    def rebuild(spec, deserialize, keep_names):
        if spec is None:
            return None
        if isinstance(spec, list):
            return [rebuild(s, deserialize, keep_names) for s in spec]
        if isinstance(spec, dict) and "class_name" not in spec:       # one entry per output
            return {k: rebuild(v, deserialize, keep_names) for k, v in spec.items()}
        if isinstance(spec, str):
            if spec in custom:
                return custom[spec]
            if keep_names:
                # Metric names stay names, so that "accuracy" is resolved against the data
                # again; an unknown one is an error now rather than at the first batch.
                if spec.lower() not in ("accuracy", "acc"):
                    deserialize(spec, custom)
                return spec
        return deserialize(spec, custom)
    try:
        model.compile(optimizer=optimizers.deserialize(config["optimizer"], custom),
                      loss=rebuild(config.get("loss"), losses.deserialize, False),
                      metrics=rebuild(config.get("metrics"), metrics.deserialize, True),
                      weighted_metrics=rebuild(config.get("weighted_metrics"),
                                               metrics.deserialize, True),
                      loss_weights=config.get("loss_weights"))
    except ValueError as err:
        warnings.warn(f"load_model: the model was loaded but not compiled ({err}); pass the "
                      "custom losses/metrics in custom_objects, or compile it again.",
                      stacklevel=3)
        return False
    return True


def _load_optimizer(model, path):
    optimizer = model.optimizer
    manifest, arrays = array_file.read_arrays(path, "optimizer state", _OPTIMIZER_FORMAT, 1)
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
