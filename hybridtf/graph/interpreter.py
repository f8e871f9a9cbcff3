"""Running a FuncGraph node by node on the ops' CPU kernels.

This is the first execution tier: a new trace runs at once, without waiting for a compiler.
Graphs run on the CPU, where they are compiled.
"""
import numpy as np

from hybridtf.framework import devices
from hybridtf.registry import Spec


def _bind_sources(graph, input_arrays, outer_arrays=()):
    values = {}
    for (_, placeholder), array in zip(graph.outer_inputs, outer_arrays):
        values[id(placeholder)] = array
    for placeholder, array in zip(graph.inputs, input_arrays):
        values[id(placeholder)] = array
    for tensor, placeholder in graph.captures:
        values[id(placeholder)] = tensor._value
    for variable, placeholder in graph.variables:
        # Handed out: the kernels' results may be views of it, and the graph's
        # write-backs are copies.
        values[id(placeholder)] = variable._shared_array()
    return values


def infer_shapes(node, arrays):
    """Runs the op's shape and dtype rule on the actual inputs: for inputs whose shapes were not
    fully known when the node was traced (the rule raises the op's error for a mismatch)."""
    node.op.infer([Spec(a.shape, a.dtype) for a in arrays], node.attrs)


def _run_node(node, values, call_index):
    op = node.op
    arrays = [np.asarray(values[id(t)]) for t in node.inputs]
    if node.unknown_input_shapes:
        infer_shapes(node, arrays)
    attrs = node.attrs
    if op.random_stream:
        # A random op draws a fresh stream on every call of the function.
        attrs = dict(attrs, counter=(attrs["counter"] << 32) + call_index)
    elif op.stateful and op.kind == "control_flow":
        attrs = dict(attrs, call_index=call_index)  # passed on to the random ops inside
    if op.check_values is not None:
        op.check_values(arrays, attrs)
    result = op.kernel(devices.CPU).run(arrays, attrs)
    outputs = (result,) if op.num_outputs == 1 else tuple(result)
    for tensor, value in zip(node.outputs, outputs):
        values[id(tensor)] = value


def run(graph, input_arrays, call_index=0):
    """Runs every node in program order; returns the output values and assigns variables
    (the caller holds the locks of the variables the graph updates)."""
    values = _bind_sources(graph, input_arrays)
    for node in graph.nodes:
        _run_node(node, values, call_index)
    for variable, tensor in graph.updated_variables():
        variable._set(np.array(values[id(tensor)]), owned=True)
    return [values[id(t)] for t in graph.outputs]


def run_subgraph(graph, outer_arrays, input_arrays=(), call_index=0):
    """Runs a branch or loop body on the values of the enclosing graph it uses; returns its
    outputs (which end with the new values of the variables it assigns)."""
    values = _bind_sources(graph, input_arrays, outer_arrays)
    for node in graph.nodes:
        _run_node(node, values, call_index)
    return [values[id(t)] for t in graph.outputs]


def evaluate(graph, tensors, input_arrays):
    """The values of ``tensors`` computed from the inputs, running only the nodes they need
    (no side effects): used to initialise variables created while tracing."""
    needed = graph.ancestors(tensors)
    values = _bind_sources(graph, input_arrays)
    for node in graph.nodes:
        if id(node) in needed:
            if node.op.stateful:
                raise ValueError(f"A variable's initial value depends on the stateful op "
                                 f"{node.op.name!r}; create the variable outside the function.")
            _run_node(node, values, 0)
    return [values[id(t)] for t in tensors]
