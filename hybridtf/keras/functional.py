"""The functional API's layer graph: ``keras.Model(inputs, outputs)`` over ``keras.Input``
tensors.

A functional model is the graph of layer calls (``Node``s) between its inputs and outputs.
This module finds that graph (``connect``), runs it on values (``run``, which also matches
inputs given as a dict to the model's inputs by name), and writes it down and rebuilds it
(``get_config`` / ``from_config``) in Keras 3's layout:

* ``"layers"``: one entry per layer (``class_name``, ``config``, ``name``) with its
  ``"inbound_nodes"``: one ``{"args": [...], "kwargs": {...}}`` per call in this model, tensors
  written as ``{"class_name": "__keras_tensor__", "config": {"shape", "dtype",
  "keras_history": [layer name, node index, tensor index]}}``;
* ``"input_layers"`` / ``"output_layers"``: the inputs' and outputs' histories, in the
  structure (single, list or dict) the model was given.

Node indices count a layer's calls in this model only.  In ``input_layers`` and
``output_layers`` a nested functional model's calls count from 1 (its own graph is call 0),
in the calls' arguments from 0 -- as Keras 3 writes them, so configs read the same in both.
"""
import inspect

import numpy as np

from hybridtf.framework import nest
from hybridtf.keras import layers as layers_module
from hybridtf.keras.layers.input_layer import InputLayer
from hybridtf.keras.layers.keras_tensor import KerasTensor

TENSOR_CLASS = "__keras_tensor__"
FUNCTIONAL_CLASS = "Functional"


class _NotYetCreated(Exception):
    """A call refers to a layer call that is not rebuilt yet (a shared layer deeper in the
    graph): it is retried on the next pass."""


# ---- the graph --------------------------------------------------------------------------------
def connect(model, inputs, outputs):
    """The layer calls between ``inputs`` and ``outputs`` in the order they run, and the layers
    (input layers first, then each layer at its first call).  Raises ValueError for inputs
    that are not ``keras.Input`` tensors and for outputs that need another input."""
    flat_inputs = nest.flatten(inputs)
    flat_outputs = nest.flatten(outputs)
    for t in flat_inputs:
        if not isinstance(t, KerasTensor) or not isinstance(t._keras_history[0], InputLayer):
            raise ValueError(f"Model {model.name}: inputs must be tensors returned by "
                             f"keras.Input, got {t!r}.")
    for t in flat_outputs:
        if not isinstance(t, KerasTensor):
            raise ValueError(f"Model {model.name}: outputs must be KerasTensors (the results "
                             f"of layers called on keras.Input tensors), got {t!r}.")
    input_ids = {id(t) for t in flat_inputs}
    ordered_nodes = []
    done = set()

    def visit(tensor, path):
        node = tensor._node
        if node is None:
            if id(tensor) not in input_ids:
                raise ValueError(
                    f"Graph disconnected: cannot obtain value for tensor {tensor!r} at "
                    f"layer {path}: it comes from a keras.Input that is not among the "
                    "model's inputs.")
            return
        if id(node) in done:
            return
        for t in node.input_tensors:
            visit(t, node.layer.name)
        done.add(id(node))
        ordered_nodes.append(node)

    for t in flat_outputs:
        visit(t, "(output)")
    layers = [t._keras_history[0] for t in flat_inputs]
    for node in ordered_nodes:
        if not any(node.layer is layer for layer in layers):
            layers.append(node.layer)
    return ordered_nodes, layers


def input_names(model):
    """The names of the model's inputs (their ``keras.Input`` names), in ``model.inputs``
    order."""
    return [t._keras_history[0].name for t in model.inputs]


def flatten_inputs(model, inputs):
    """``inputs`` as a flat list in ``model.inputs`` order.  A dict is matched by key: to the
    names of the inputs (``keras.Input(name=...)``) when the model was given a list, or to
    the keys of the model's own input dict; keys the model does not use are ignored."""
    struct = model._nested_inputs
    if isinstance(inputs, dict):
        if isinstance(struct, dict):
            expected = list(struct)
        else:
            expected = input_names(model)
        missing = [name for name in expected if name not in inputs]
        if missing:
            raise ValueError(f'Missing data for input "{missing[0]}" of model "{model.name}". '
                             f"You passed a data dictionary with keys {sorted(inputs)}. "
                             f"Expected the following keys: {expected}.")
        if isinstance(struct, dict):
            return nest.flatten({key: inputs[key] for key in struct})
        return [inputs[name] for name in expected]
    flat = nest.flatten(inputs)
    if len(flat) != len(model.inputs):
        raise ValueError(f"Model {model.name} expects {len(model.inputs)} input(s) "
                         f"{input_names(model)}, but it received {len(flat)} input tensors.")
    return flat


def run(model, inputs):
    """The model's outputs for ``inputs``: each layer call of the graph replayed on values."""
    flat = flatten_inputs(model, inputs)
    values = {}
    for tensor, value in zip(model.inputs, flat):
        rank = getattr(value, "shape", None)
        rank = len(rank) if rank is not None else None
        if tensor.shape.rank is not None and rank is not None and rank != tensor.shape.rank:
            raise ValueError(f'Input "{tensor.name}" of model "{model.name}" is incompatible: '
                             f"expected shape {tuple(tensor.shape.as_list())}, found shape "
                             f"{tuple(value.shape)}.")
        values[id(tensor)] = value

    def resolve(item):
        return values[id(item)] if isinstance(item, KerasTensor) else item

    for node in model._functional_nodes:
        node_inputs = nest.map_structure(resolve, node.inputs)
        args = [nest.map_structure(resolve, a) for a in node.args]
        kwargs = {k: nest.map_structure(resolve, v) for k, v in node.kwargs.items()}
        result = node.layer(node_inputs, *args, **kwargs)
        for tensor, value in zip(node.outputs, nest.flatten(result)):
            values[id(tensor)] = value
    return nest.pack_sequence_as(model._nested_outputs, [values[id(t)] for t in model.outputs])


# ---- config -----------------------------------------------------------------------------------
def is_functional(layer):
    """Whether ``layer`` is a model built with the functional API."""
    return bool(layer.__dict__.get("_is_graph_network"))


def _end_offset(layer):
    """Where a layer's calls start counting in ``input_layers`` / ``output_layers``: 1 for a
    functional model (its own graph is call 0, as in Keras 3), else 0."""
    return 1 if is_functional(layer) else 0


def _own_nodes(model):
    """``{id(node): index}``: each call of the model's graph, numbered among the calls of
    its layer that belong to this model."""
    own = {id(node) for node in model._functional_nodes}
    numbers = {}
    for layer in model.layers:
        index = 0
        for node in layer._inbound_nodes:
            if id(node) in own:
                numbers[id(node)] = index
                index += 1
    return numbers


def _history(tensor, node_numbers, at_end=False):
    """``[layer name, node index, tensor index]`` of ``tensor`` (``at_end``: for
    ``input_layers`` / ``output_layers``)."""
    layer, node, index = tensor._keras_history
    if node is None:
        return [layer.name, 0, index]
    return [layer.name, node_numbers[id(node)] + (_end_offset(layer) if at_end else 0), index]


def _serialize_layer(layer):
    entry = layers_module.serialize(layer)
    cls = type(layer)
    if (cls.__module__, cls.__name__) == ("hybridtf.keras.models", "Model") and \
            is_functional(layer):
        entry["class_name"] = FUNCTIONAL_CLASS      # Keras 3's name for a plain functional Model
    return entry


def get_config(model, serialize_layer=None):
    """The functional model's config in Keras 3's layout (see the module docstring).

    ``serialize_layer(layer)`` gives each layer's ``{"class_name", "config", ...}`` entry
    (default: ``keras.layers.serialize``, with ``"Functional"`` for a nested functional
    model); a file format with layer configs of its own passes its own."""
    serialize_layer = serialize_layer or _serialize_layer
    node_numbers = _own_nodes(model)

    def encode(value, layer_name):
        if isinstance(value, KerasTensor):
            return {"class_name": TENSOR_CLASS,
                    "config": {"shape": value.shape.as_list() if value.shape.rank is not None
                               else None,
                               "dtype": value.dtype.name,
                               "keras_history": _history(value, node_numbers)}}
        if isinstance(value, (list, tuple)):
            return [encode(v, layer_name) for v in value]
        if isinstance(value, dict):
            return {k: encode(v, layer_name) for k, v in value.items()}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return value.item()
        raise TypeError(f"get_config: layer {layer_name!r} of the functional model "
                        f"{model.name!r} was called with an argument of type "
                        f"{type(value).__name__}, which a config cannot hold; pass it to the "
                        "layer's constructor instead.")

    calls = {}
    for node in model._functional_nodes:
        calls.setdefault(id(node.layer), []).append(node)
    entries = []
    for layer in model.layers:
        entry = dict(serialize_layer(layer))
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            {"args": [encode(node.inputs, layer.name)]
             + [encode(a, layer.name) for a in node.args],
             "kwargs": encode(dict(node.kwargs), layer.name)}
            for node in calls.get(id(layer), [])]
        entries.append(entry)
    return {"name": model.name, "trainable": model.trainable, "layers": entries,
            "input_layers": nest.map_structure(lambda t: _history(t, node_numbers, True),
                                               model._nested_inputs),
            "output_layers": nest.map_structure(lambda t: _history(t, node_numbers, True),
                                                model._nested_outputs)}


def is_config(config):
    """Whether ``config`` describes a functional model (Keras 3's layout)."""
    return isinstance(config, dict) and all(
        key in config for key in ("layers", "input_layers", "output_layers"))


def accepts_inputs_and_outputs(cls):
    """Whether ``cls(inputs=..., outputs=..., name=...)`` makes a functional model of class
    ``cls``: ``Model`` itself, or a subclass whose ``__init__`` passes ``*args, **kwargs``
    (or exactly ``inputs, outputs, name``) on."""
    spec = inspect.getfullargspec(cls.__init__)
    return (spec.varargs is not None and spec.varkw is not None) or \
        spec.args[1:4] == ["inputs", "outputs", "name"]


def _is_history(value):
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and all(isinstance(v, int) for v in value[1:]))


def from_config(cls, config, custom_objects=None, deserialize_layer=None):
    """A new ``cls`` model (new weights) with the graph that ``config`` describes.

    Layers are made with ``deserialize_layer(entry, custom_objects)`` (default:
    ``keras.layers.deserialize``, ``custom_objects`` for custom classes); then each layer is
    called on the tensors its calls take, layer by layer, passes repeating until every call
    is made (a shared layer may be called deeper in the graph than where it is listed)."""
    deserialize_layer = deserialize_layer or _deserialize_layer
    config = dict(config)
    created = {}
    outputs_of_calls = {}
    entries = [(entry.get("name") or entry.get("config", {}).get("name"), entry)
               for entry in config["layers"]]
    for name, entry in entries:
        if name in created:
            raise ValueError(f"from_config: two layers are named {name!r}; layer names in a "
                             "functional model config must be unique.")
        created[name] = deserialize_layer(entry, custom_objects)
        outputs_of_calls[name] = []

    def tensor(history, at_end=False):
        name, node_index, tensor_index = history
        layer = created.get(name)
        if layer is None:
            raise ValueError(f"from_config: a layer call refers to the unknown layer {name!r}; "
                             f"the config's layers are {sorted(created)}.")
        if isinstance(layer, InputLayer):
            return layer.output
        made = outputs_of_calls[name]
        index = node_index - (_end_offset(layer) if at_end else 0)
        if index >= len(made):
            raise _NotYetCreated(name)
        return made[index][tensor_index]

    def decode(value):
        if isinstance(value, dict) and value.get("class_name") == TENSOR_CLASS:
            return tensor(value["config"]["keras_history"])
        if isinstance(value, list):
            return [decode(v) for v in value]
        if isinstance(value, dict):
            return {k: decode(v) for k, v in value.items()}
        return value

    pending = {name: list(entry.get("inbound_nodes", ())) for name, entry in entries}
    while any(pending.values()):
        progressed = False
        for name, _ in entries:
            calls = pending[name]
            while calls:
                try:
                    args = decode(calls[0].get("args", []))
                    kwargs = decode(calls[0].get("kwargs", {}))
                except _NotYetCreated:
                    break
                if not args:
                    raise ValueError(f"from_config: a call of layer {name!r} has no inputs.")
                result = created[name](*args, **kwargs)
                outputs_of_calls[name].append(nest.flatten(result))
                calls.pop(0)
                progressed = True
        if not progressed:
            stuck = sorted(name for name, calls in pending.items() if calls)
            raise ValueError(f"from_config: invalid functional model configuration: the calls "
                             f"of layers {stuck} take tensors that no call makes (the graph "
                             "has a loop or is disconnected).")

    def tensors(structure):
        if _is_history(structure):
            return tensor(structure, at_end=True)
        if isinstance(structure, dict):
            return {k: tensors(v) for k, v in structure.items()}
        return [tensors(v) for v in structure]

    inputs = tensors(config.pop("input_layers"))
    outputs = tensors(config.pop("output_layers"))
    del config["layers"]
    name = config.pop("name", None)
    trainable = config.pop("trainable", True)
    model = cls(inputs=inputs, outputs=outputs, name=name, **config)
    if not trainable:
        model.trainable = False   # (True would unfreeze the layers whose configs say frozen)
    return model


def _deserialize_layer(entry, custom_objects):
    return layers_module.deserialize(entry, custom_objects=custom_objects)
