"""Helpers shared by layers and models: default names, nested structures, shapes,
regularizers, the options of layers with a kernel and a bias."""
import re

import numpy as np

from hybridtf.api import math_ops
from hybridtf.framework import dtypes
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import activations, backend, initializers


def to_snake_case(name):
    """Keras's default layer names: ``"Conv2D"`` -> ``"conv2d"``, ``"BatchNormalization"``
    -> ``"batch_normalization"``."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return snake if snake[0] != "_" else "private" + snake


def dtype_name(dtype):
    """A layer's dtype as Keras keeps it: a string such as ``"float32"``."""
    if dtype is None:
        return backend.floatx()
    return dtypes.as_dtype(dtype).name


def leaves(value):
    """The leaves of lists/tuples/dicts (dict values in insertion order), depth first."""
    if not isinstance(value, (list, tuple, dict)):
        return (value,)
    out = []
    stack = [iter(value.values() if isinstance(value, dict) else value)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, (list, tuple, dict)):
                stack.append(iter(item.values() if isinstance(item, dict) else item))
                break
            out.append(item)
        else:
            stack.pop()
    return out


def dedup(variables):
    seen = set()
    out = []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def get_regularizer(identifier, who):
    """A weight regularizer from a callable, None, or the names "l1" / "l2" / "l1_l2"
    (Keras's default factor 0.01)."""
    if identifier is None or callable(identifier):
        return identifier
    if identifier in ("l1", "l2", "l1_l2"):
        l1 = 0.01 if identifier in ("l1", "l1_l2") else 0.0
        l2 = 0.01 if identifier in ("l2", "l1_l2") else 0.0

        def regularize(weight):
            loss = 0.0
            if l1:
                loss = loss + l1 * math_ops.reduce_sum(math_ops.abs(weight))
            if l2:
                loss = loss + l2 * math_ops.reduce_sum(math_ops.square(weight))
            return loss
        regularize.__name__ = identifier
        return regularize
    raise ValueError(f"{who}: could not interpret regularizer {identifier!r}; pass a callable "
                     "f(weight) -> scalar loss, 'l1', 'l2', 'l1_l2' or None.")



def is_shape_like(value):
    if isinstance(value, TensorShape):
        return True
    return isinstance(value, (list, tuple)) and all(
        d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))
        for d in value)


def as_shape_structure(shapes):
    """A shape, or a nest of shapes, with every shape a TensorShape (tuples of ints and None
    count as one shape, not as a list of inputs)."""
    if is_shape_like(shapes):
        return TensorShape(shapes)
    if isinstance(shapes, dict):
        return {k: as_shape_structure(v) for k, v in shapes.items()}
    if isinstance(shapes, (list, tuple)):
        return type(shapes)(as_shape_structure(s) for s in shapes) \
            if not hasattr(shapes, "_fields") else shapes
    return shapes


def shape_for_display(shape):
    """A shape as Keras shows it: a tuple, or a list of tuples for several inputs/outputs."""
    if isinstance(shape, TensorShape):
        return tuple(shape.as_list()) if shape.rank is not None else None
    if is_shape_like(shape):
        return tuple(shape)
    if isinstance(shape, (list, tuple)):
        return [shape_for_display(s) for s in shape]
    return shape


def serialize_initializer(initializer):
    return initializers.serialize(initializer) if isinstance(
        initializer, initializers.Initializer) else initializer


def serialize_regularizer(regularizer):
    return None if regularizer is None else getattr(regularizer, "__name__", regularizer)


def set_kernel_and_bias_options(layer, who, activation, use_bias, kernel_initializer,
                                bias_initializer, kernel_regularizer, bias_regularizer,
                                kernel_constraint, bias_constraint):
    """The options Dense and Conv2D share, set on ``layer`` (their weights are built later);
    ``who`` names the layer class in errors."""
    layer.activation = activations.get(activation)
    layer.use_bias = bool(use_bias)
    layer.kernel_initializer = initializers.get(kernel_initializer)
    layer.bias_initializer = initializers.get(bias_initializer)
    layer.kernel_regularizer = get_regularizer(kernel_regularizer, who)
    layer.bias_regularizer = get_regularizer(bias_regularizer, who)
    layer.kernel_constraint = kernel_constraint
    layer.bias_constraint = bias_constraint
    layer.kernel = None
    layer.bias = None


def kernel_and_bias_config(layer):
    """The get_config entries of those options (and of the activity regularizer)."""
    return {
        "activation": activations.serialize(layer.activation), "use_bias": layer.use_bias,
        "kernel_initializer": serialize_initializer(layer.kernel_initializer),
        "bias_initializer": serialize_initializer(layer.bias_initializer),
        "kernel_regularizer": serialize_regularizer(layer.kernel_regularizer),
        "bias_regularizer": serialize_regularizer(layer.bias_regularizer),
        "activity_regularizer": serialize_regularizer(layer.activity_regularizer),
        "kernel_constraint": layer.kernel_constraint, "bias_constraint": layer.bias_constraint}
