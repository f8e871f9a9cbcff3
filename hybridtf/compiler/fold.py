"""Constant folding: the nodes whose values are fixed when a graph is compiled run once, then.

A node folds when it is pure, neither elementwise nor control flow, and every input is a
captured constant or a folded value, or when it reads only its inputs' static shapes
(``OpDef.shape_only``: ``fill_like``, ``shape``): most of the gradient of a mean -- ones,
reshapes, broadcasts -- and the zeros of a relu's gradient.  Folded values are bound to the
driver as constants and, when uniform, passed to the fused loops as scalars (see
``render.literal_pays``).  Each runs its CPU kernel's ``constant`` form where it has one (a
fill: a zero-strided view of its one value), else its ``run``.  Values over MAX_FOLDED_SIZE
elements are computed per call instead, except zero-strided views of one value, which fold at
any size.
"""
import numpy as np

from hybridtf.compiler import plan as plan_lib
from hybridtf.framework import devices

MAX_FOLDED_SIZE = 1 << 20              # elements: larger values are computed per call


def _input_arrays(node, known):
    if node.op.shape_only:
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
    known = {id(placeholder): devices.to_host(tensor._value)
             for tensor, placeholder in graph.captures}
    folded, nodes = {}, set()
    for node in graph.nodes:
        op, attrs = node.op, node.attrs
        if op.stateful or op.kind in ("elementwise", "control_flow"):
            # Elementwise ops on constants are left to the fused loops, which take uniform
            # constants as scalars: running their ufuncs here would build them in every
            # new process.
            continue
        arrays = _input_arrays(node, known)
        if arrays is None:
            continue
        try:
            if op.check_values is not None:
                op.check_values(arrays, attrs)
            kernel = op.kernel(devices.CPU)
            result = (kernel.constant or kernel.run)(arrays, attrs)
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


def small_constants(graph):
    """id(placeholder) -> the one value (a NumPy scalar), for the numeric captures of ``graph``
    that have one element: fused kernels take them as scalars (see ``render.literal_pays``)."""
    constants = {}
    for tensor, placeholder in graph.captures:
        value = np.asarray(devices.to_host(tensor._value))
        if value.size == 1 and value.dtype.kind in "biuf":
            constants[id(placeholder)] = value.reshape(-1)[0]
    return constants


def single_values(graph, folded):
    """id(tensor) -> the one value of every single-valued constant: the small captures and the
    uniform folded values.  Fused kernels take them as arguments (a few as literals:
    ``render.literal_pays``), so a retrace for another Python number reuses the compiled
    module."""
    constants = small_constants(graph)
    for key, value in folded.items():
        one = uniform_value(value)
        if one is not None:
            constants[key] = one
    return constants
