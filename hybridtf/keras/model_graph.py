"""A Sequential or functional model described as Keras 3's ``model.to_json()`` describes it, as
far as TensorBoard's Graphs dashboard reads it: each layer's class, config and inbound calls.

``TensorBoard(write_graph=True)`` writes this JSON under the tag ``"keras"``; TensorBoard draws
it as the model's conceptual graph.  As in Keras 3, only ``Sequential`` models and functional
``Model(inputs, outputs)`` ones are described (a subclassed model has no layer graph).
"""
import json

from hybridtf.keras import functional
from hybridtf.keras import layers as layers_module


def _is_functional(model):
    return type(model).__name__ == "Model" and bool(model.__dict__.get("_is_graph_network"))


def _is_sequential(model):
    return type(model).__name__ == "Sequential"


def describes(model):
    """Whether ``model_json`` can describe ``model`` (a Sequential or functional model)."""
    return _is_sequential(model) or _is_functional(model)


def _layer_entry(layer):
    if _is_functional(layer):
        return {"class_name": "Functional", "config": _functional_config(layer)}
    if _is_sequential(layer):
        return {"class_name": "Sequential",
                "config": {"name": layer.name,
                           "layers": [_layer_entry(sub) for sub in layer._self_tracked_layers]}}
    return layers_module.serialize(layer)


def _functional_config(model):
    return functional.get_config(model, serialize_layer=_layer_entry)


def model_json(model):
    """The JSON string describing a Sequential or functional ``model``."""
    if not describes(model):
        raise ValueError(f"model_json: {type(model).__name__} {model.name!r} is neither a "
                         "Sequential nor a functional model; it has no layer graph to describe.")
    entry = _layer_entry(model)
    return json.dumps({"module": "keras", **entry})
