"""A Sequential or functional model described as Keras 3's ``model.to_json()`` describes it, as
far as TensorBoard's Graphs dashboard reads it: each layer's class, config and inbound calls.

``TensorBoard(write_graph=True)`` writes this JSON under the tag ``"keras"``; TensorBoard draws
it as the model's conceptual graph.  As in Keras 3, only ``Sequential`` models and functional
``Model(inputs, outputs)`` ones are described (a subclassed model has no layer graph).
"""
import json

from hybridtf.keras import layers as layers_module

_TENSOR = "__keras_tensor__"


def _is_functional(model):
    return type(model).__name__ == "Model" and bool(model.__dict__.get("_is_graph_network"))


def _is_sequential(model):
    return type(model).__name__ == "Sequential"


def describes(model):
    """Whether ``model_json`` can describe ``model`` (a Sequential or functional model)."""
    return _is_sequential(model) or _is_functional(model)


def _node_index(layer, node):
    if node is None:
        return 0
    return next((i for i, n in enumerate(getattr(layer, "_inbound_nodes", ())) if n is node), 0)


def _history(tensor):
    """``[layer name, node index, tensor index]`` of the call that produced ``tensor``."""
    layer, node, index = tensor._keras_history
    return [layer.name, _node_index(layer, node), index]


def _tensor_ref(tensor):
    return {"class_name": _TENSOR,
            "config": {"shape": tensor.shape.as_list() if tensor.shape.rank is not None else None,
                       "dtype": tensor.dtype.name, "keras_history": _history(tensor)}}


def _layer_entry(layer):
    if _is_functional(layer):
        return {"class_name": "Functional", "config": _functional_config(layer)}
    if _is_sequential(layer):
        return {"class_name": "Sequential",
                "config": {"name": layer.name,
                           "layers": [_layer_entry(sub) for sub in layer._self_tracked_layers]}}
    return layers_module.serialize(layer)


def _functional_config(model):
    calls = {}
    for node in model._functional_nodes:
        calls.setdefault(id(node.layer), []).append(node)
    entries = []
    for layer in model.layers:
        entry = _layer_entry(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            {"args": [[_tensor_ref(t) for t in node.input_tensors]], "kwargs": {}}
            for node in calls.get(id(layer), [])]
        entries.append(entry)
    return {"name": model.name, "layers": entries,
            "input_layers": [_history(t) for t in model.inputs],
            "output_layers": [_history(t) for t in model.outputs]}


def model_json(model):
    """The JSON string describing a Sequential or functional ``model``."""
    if not describes(model):
        raise ValueError(f"model_json: {type(model).__name__} {model.name!r} is neither a "
                         "Sequential nor a functional model; it has no layer graph to describe.")
    entry = _layer_entry(model)
    return json.dumps({"module": "keras", **entry})
