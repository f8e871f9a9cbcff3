"""Constant folding: the nodes whose values are fixed when a graph is compiled run once, then.

A node folds when it is pure, not elementwise, and every input is a captured constant or a
folded value, or when it reads only its input's static shape (``fill_like``, ``shape``): most of
the gradient of a mean -- ones, reshapes, broadcasts -- and the zeros of a relu's gradient.
Folded values are bound to the driver as constants and, when uniform, passed to the fused
loops as scalars (see ``render.literal_pays``).  Values over MAX_FOLDED_SIZE elements are
computed per call instead, except a ``fill_like``, which folds at any size as a zero-strided
view of its one value.
"""
import numpy as np

from hybridtf.compiler import plan as plan_lib

_SHAPE_ONLY = {"fill_like", "shape"}   # ops that read only their input's shape
MAX_FOLDED_SIZE = 1 << 20              # elements: larger values are computed per call


def _input_arrays(node, known):
    if node.op.name in _SHAPE_ONLY:
        if not all(plan_lib.known(t._static_shape) and t._static_dtype != object
                   for t in node.inputs):
            return None
        # A zero-strided view stands for the input: only its shape and dtype are read.
        return [np.broadcast_to(np.zeros((), t._static_dtype), t._static_shape)
                for t in node.inputs]
    if all(id(t) in known for t in node.inputs):
        return [np.asarray(known[id(t)]) for t in node.inputs]
    return None


def fold_constants(graph):
    """(id(tensor) -> array of every folded value, set of the ids of the folded nodes)."""
    known = {id(placeholder): tensor._value for tensor, placeholder in graph.captures}
    folded, nodes = {}, set()
    for node in graph.nodes:
        op, attrs = node.op, node.attrs
        if op.stateful or op.kind == "elementwise" or (
                attrs is not None and ("branches" in attrs or "body" in attrs)):
            # Elementwise ops on constants are left to the fused loops, which take uniform
            # constants as scalars: running their eager ufuncs here would build them in every
            # new process.
            continue
        arrays = _input_arrays(node, known)
        if arrays is None:
            continue
        try:
            if op.check_values is not None:
                op.check_values(arrays, attrs)
            if op.name == "fill_like":
                # one value: a zero-strided view of it, so that any size folds
                result = np.broadcast_to(np.asarray(attrs["value"], attrs["dtype"]),
                                         arrays[0].shape)
            else:
                result = op.eager(arrays, attrs)
        except Exception:
            continue   # the same error is raised when the graph runs, in program order
        outputs = [result] if op.num_outputs == 1 else list(result)
        outputs = [np.asarray(v) for v in outputs]
        if any(v.size > MAX_FOLDED_SIZE and any(v.strides) for v in outputs):
            continue
        for tensor, value in zip(node.outputs, outputs):
            known[id(tensor)] = folded[id(tensor)] = value
        nodes.add(id(node))
    return folded, nodes


def uniform_value(array):
    """The single value every element of ``array`` has (to inline it), or None."""
    if array.size == 0 or array.dtype.kind not in "biuf":
        return None
    first = array.reshape(-1)[0]
    if not any(array.strides):
        return first   # a zero-strided view of one value
    return first if bool(np.all(array == first)) else None
