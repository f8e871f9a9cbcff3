"""Running a FuncGraph node by node on the ops' kernels for the graph's device.

This is the first execution tier: a new trace runs at once, without waiting for a compiler.
Each node runs with its kernel for the graph's backend (``FuncGraph.backend``), or on the CPU
when it has none there (soft placement, as eager ops), its inputs copied where it runs;
variables keep their values on their own device.
"""
import weakref

import numpy as np

from hybridtf.eager import placement
from hybridtf.framework import devices
from hybridtf.registry import Spec

_CPU = devices.CPU
_PLACEMENT = devices.PLACEMENT
_RELEASES = weakref.WeakKeyDictionary()   # FuncGraph -> (what they were computed for, releases)


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


def run_node(node, values, call_index, backend):
    """Runs ``node`` on ``backend`` (the CPU when the op has no kernel there), reading its
    inputs from ``values`` (id(tensor) -> array) and storing its outputs there."""
    op = node.op
    if backend is _CPU and _PLACEMENT.cpu_only:
        arrays = [np.asarray(values[id(t)]) for t in node.inputs]
    else:   # values may be on other devices (a variable on the GPU read by a CPU graph)
        inputs = [values[id(t)] for t in node.inputs]
        if not op.has_kernel(backend) or placement.host_only(inputs):
            backend = _CPU
        arrays = [devices.on_backend(backend, v) for v in inputs]
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
    kernel = op.kernel(backend)
    if backend is _CPU:
        result = kernel.run_now(arrays, attrs)
    else:
        result = placement.run_kernel(op, kernel, backend, arrays, attrs)
    outputs = (result,) if op.num_outputs == 1 else tuple(result)
    for tensor, value in zip(node.outputs, outputs):
        values[id(tensor)] = value


def _releases(graph, top_level):
    """For each node of ``graph`` in program order, the ids of the values it is the last to read
    (or makes and nobody reads), but for what the caller reads afterwards: the outputs, and at
    the top level the variables' new values.  The interpreter drops them once the node has run,
    so that a dead intermediate is freed at once and the next large one reuses its memory
    rather than fresh pages (Adam's updates of a 3136x1024 kernel allocate 12.8 MB a step)."""
    key = (id(graph.nodes), len(graph.nodes), top_level)
    cached = _RELEASES.get(graph)
    if cached is not None and cached[0] == key:
        return cached[1]
    last = {}
    for position, node in enumerate(graph.nodes):
        for t in node.inputs + node.outputs:
            last[id(t)] = position
    kept = list(graph.outputs)
    if top_level:
        kept += [t for _, t in graph.updated_variables()]
    for t in kept:
        last.pop(id(t), None)
    releases = [[] for _ in graph.nodes]
    for value, position in last.items():
        releases[position].append(value)
    _RELEASES[graph] = (key, releases)
    return releases


def _run_nodes(graph, values, call_index, top_level):
    backend = graph.backend
    for node, dead in zip(graph.nodes, _releases(graph, top_level)):
        run_node(node, values, call_index, backend)
        for value in dead:
            del values[value]


def run(graph, input_arrays, call_index=0):
    """Runs every node in program order; returns the output values and assigns variables
    (the caller holds the locks of the variables the graph updates)."""
    values = _bind_sources(graph, input_arrays)
    _run_nodes(graph, values, call_index, top_level=True)
    for variable, tensor in graph.updated_variables():
        variable._set(_own_copy(variable, values[id(tensor)]), owned=True)
    return [values[id(t)] for t in graph.outputs]


def _own_copy(variable, array):
    """A new array holding ``array``'s value, on the variable's device."""
    if type(array) in devices.CPU_TYPES and type(variable._value) in devices.CPU_TYPES:
        return np.array(array)
    backend = devices.backend_of(variable._value)
    moved = devices.on_backend(backend, array)
    return moved if moved is not array else backend.copy(moved)


def run_subgraph(graph, outer_arrays, input_arrays=(), call_index=0):
    """Runs a branch or loop body on the values of the enclosing graph it uses; returns its
    outputs (which end with the new values of the variables it assigns)."""
    values = _bind_sources(graph, input_arrays, outer_arrays)
    _run_nodes(graph, values, call_index, top_level=False)
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
            run_node(node, values, 0, graph.backend)
    return [values[id(t)] for t in tensors]
