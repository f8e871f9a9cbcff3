"""Helpers shared by layers and models: default names, nested structures, shapes,
regularizers and constraints, the options of layers with a kernel and a bias."""
import re

import numpy as np

from hybridtf.framework import dtypes
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import activations, backend, constraints, initializers, regularizers


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


def axis_argument(axis, who):
    """A layer's ``axis`` argument checked: an int, or a list of ints (from a list or tuple)."""
    if isinstance(axis, (list, tuple)) and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis):
        return [int(a) for a in axis]
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return int(axis)
    raise TypeError(f"{who}: expected an int or a list/tuple of ints for the argument 'axis', "
                    f"but received: {axis!r}")


def get_regularizer(identifier, who):
    """A weight regularizer from ``identifier`` (see ``keras.regularizers.get``); errors name
    the layer class ``who``."""
    try:
        return regularizers.get(identifier)
    except ValueError as err:
        raise ValueError(f"{who}: {err}") from None


def get_constraint(identifier, who):
    """A weight constraint from ``identifier`` (see ``keras.constraints.get``); errors name
    the layer class ``who``."""
    try:
        return constraints.get(identifier)
    except ValueError as err:
        raise ValueError(f"{who}: {err}") from None


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
    return regularizers.serialize(regularizer)


def serialize_constraint(constraint):
    return constraints.serialize(constraint)


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
    layer.kernel_constraint = get_constraint(kernel_constraint, who)
    layer.bias_constraint = get_constraint(bias_constraint, who)
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
        "kernel_constraint": serialize_constraint(layer.kernel_constraint),
        "bias_constraint": serialize_constraint(layer.bias_constraint)}
