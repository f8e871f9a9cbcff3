"""``KerasTensor``: the symbolic value ``keras.Input`` returns and layers called on it return.

It has a shape (batch dimension usually None) and a dtype but no value; it remembers the layer
call that produced it (``_keras_history``), which is what a functional ``keras.Model(inputs,
outputs)`` replays.
"""
import numpy as np

from hybridtf.framework import dtypes, nest
from hybridtf.framework.tensor_shape import TensorShape


class Node:
    """One symbolic layer call: the layer, its (symbolic) inputs and extra arguments, and the
    KerasTensors it produced."""

    __slots__ = ("layer", "inputs", "args", "kwargs", "outputs")

    def __init__(self, layer, inputs, args, kwargs):
        self.layer = layer
        self.inputs = inputs
        self.args = args
        self.kwargs = kwargs
        self.outputs = None

    @property
    def input_tensors(self):
        """The KerasTensors among the call's inputs (and arguments), in order."""
        leaves = nest.flatten([self.inputs, list(self.args), self.kwargs])
        return [t for t in leaves if isinstance(t, KerasTensor)]

    def shapes(self, which):
        """The shapes of the call's ``"input"`` (its first argument, as structured) or
        ``"output"`` (one shape, or a list for several outputs)."""
        if which == "input":
            return nest.map_structure(
                lambda t: t.shape if isinstance(t, KerasTensor) else TensorShape(np.shape(t)),
                self.inputs)
        shapes = [t.shape for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes


class KerasTensor:
    """A symbolic tensor of a functional model: ``shape``, ``dtype``, ``name``, and the
    ``(layer, node, index)`` that produced it."""

    def __init__(self, shape, dtype="float32", name=None, node=None, index=0, layer=None):
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name
        self._node = node
        self._keras_history = (layer if layer is not None else
                               (node.layer if node is not None else None), node, index)

    @property
    def ndim(self):
        return self.shape.rank

    def get_shape(self):
        return self.shape

    def __len__(self):
        raise TypeError(f"KerasTensor {self.name!r} has no length: it is symbolic (the input "
                        "of a functional model), not a value.")

    def __bool__(self):
        raise TypeError(f"Using a symbolic KerasTensor ({self.name}) as a Python bool is not "
                        "allowed: it has no value; build the model with layers instead.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert a symbolic KerasTensor ({self.name}) to a NumPy array: "
                        "it is the placeholder of a functional model, not a value.")

    def __repr__(self):
        producer = self._keras_history[0]
        made_by = f", description=\"created by layer '{producer.name}'\"" if producer else ""
        return (f"<KerasTensor: shape={tuple(self.shape.as_list())} dtype={self.dtype.name} "
                f"name={self.name}{made_by}>")


def contains_keras_tensor(structure):
    if isinstance(structure, KerasTensor):
        return True
    if isinstance(structure, (list, tuple, dict)):
        return any(isinstance(t, KerasTensor) for t in nest.flatten(structure))
    return False
