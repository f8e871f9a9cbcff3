"""Helpers shared by layers and models: default names, nested structures, shapes,
regularizers."""
import re

import numpy as np

from hybridtf.api import math_ops
from hybridtf.framework import dtypes
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import backend


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
