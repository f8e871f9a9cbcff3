"""Iterating a dataset inside a traced function: ``for x in ds`` (through AutoGraph),
``Dataset.reduce`` and ``next(iterator)``.

The loop becomes one ``dataset_loop`` node (``registry.data``), traced like a ``while_loop``:
the body is a subgraph taking the element and the loop-carried values, a ``break`` is a
condition subgraph on the loop-carried values, variables the body assigns and TensorArrays it
writes are carried through the loop.  Every call of the function runs the loop over the
dataset's current content -- a new pass, so a shuffled dataset is reshuffled.  A loop-carried
value whose shape changes between iterations (a growing concatenation, a partial last batch)
gets the dimensions that change relaxed to None, as TF does for dataset loops.
"""
import threading
import warnings

import numpy as np

from ops import compile_notice

from hybridtf import compiler
from hybridtf.api import control_flow_util as util
from hybridtf.api.tensor_array_ops import TensorArray
from hybridtf.eager import tape as tape_lib
from hybridtf.eager.execute import as_tensor, execute
from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.graph import func_graph, interpreter
from hybridtf.graph.func_graph import FuncGraph
from hybridtf.registry import Spec
from hybridtf.registry import data as data_ops

# Traces of the body at most: TensorArrays learn their element shape, assigned variables join
# the loop-carried values, changing shapes are relaxed.
_MAX_TRACES = 5


class CompiledPart:
    """Runs a loop part (a subgraph) as the compiler lowers it: fused kernels and a driver whose
    inputs are the part's outer values followed by its own inputs.  Compiled on first use; a
    part the compiler cannot lower runs on the graph interpreter, with a warning."""

    def __init__(self, graph):
        self.graph = graph
        self.compile_error = None
        self._run = None
        self._lock = threading.Lock()

    def __call__(self, outer, inputs, call_index):
        run = self._run or self._build()
        return run(list(outer) + list(inputs), call_index)

    def _build(self):
        with self._lock:
            if self._run is None:
                part = self.graph
                view = FuncGraph(part.name)
                view.inputs = [placeholder for _, placeholder in part.outer_inputs] + \
                    list(part.inputs)
                view.captures = list(part.captures)
                view.nodes = list(part.nodes)
                view.outputs = list(part.outputs)
                try:
                    with compile_notice.announce(
                            f"hybridtf: compiling the {part.name} of a loop over a dataset; "
                            f"its kernels are cached for the next runs"):
                        self._run = compiler.compile_graph(view).run
                except Exception as err:  # noqa: BLE001 - lowering is an optimisation
                    self.compile_error = f"{type(err).__name__}: {err}"
                    warnings.warn(compiler.CompilationWarning(
                        f"The {part.name} of a loop over a dataset could not be compiled "
                        f"({self.compile_error}); it runs on the graph interpreter: correct, "
                        "but slower. This is a bug in hybridtf's compiler; please report it."),
                        stacklevel=2)
                    count = len(part.outer_inputs)
                    self._run = lambda arrays, call_index: interpreter.run_subgraph(
                        part, arrays[:count], arrays[count:], call_index)
        return self._run


def _loop_values(state, who):
    flat = [util.leaf_tensor(v) for v in nest.flatten(state)]
    out = []
    for value in flat:
        if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
            value = as_tensor(value)
        if not isinstance(value, (Tensor, TensorArray)):
            raise TypeError(f"{who}: a loop-carried value must be a tensor, a number or a "
                            f"TensorArray (or a tuple/dict of them), got {value!r}.")
        out.append(value)
    return out


def _trace_part(name, fn, parent, element_specs, state_specs, seeded, templates, structure):
    """A subgraph of the loop: placeholders for the element's components (when
    ``element_specs`` is given) and the loop values, then ``fn`` traced on them."""
    graph = FuncGraph(name, parent=parent)
    element = None
    if element_specs is not None:
        element = [graph.placeholder(s.shape.dims, s.dtype.as_numpy_dtype, f"element_{i}")
                   for i, s in enumerate(element_specs)]
    placeholders = util.loop_placeholders(graph, state_specs, seeded)
    with tape_lib.stop_recording(), func_graph.building(graph):
        state = nest.pack_sequence_as(structure, util.rewrap(placeholders, templates))
        result = fn(element, state)
    return graph, result


def _relaxed(specs, outputs):
    """The loop values' shapes with the dimensions the body changes set to None; None when the
    body keeps every shape."""
    changed = False
    shapes = []
    for (shape, _), out in zip(specs, outputs):
        new = out._static_shape
        if shape is None or new is None or len(shape) != len(new):
            shapes.append(TensorShape(shape) if shape is not None else None)
            continue
        merged = tuple(a if a == b else None for a, b in zip(shape, new))
        changed = changed or merged != tuple(shape)
        shapes.append(TensorShape(merged))
    return shapes if changed else None


def loop(elements, element_structure, body, state, extra_test=None, who="dataset loop"):
    """Adds a loop to the graph being traced: ``state = body(element, state)`` for each element
    of the pass ``elements()`` starts, while ``extra_test(state)`` holds.  ``state`` is a tuple
    (or any nest) of tensors, numbers and TensorArrays; returns its final value."""
    parent = func_graph.current()
    element_specs = nest.flatten(element_structure)
    structure = state
    flat = _loop_values(state, who)
    templates = list(flat)
    seeded = []
    invariants = None
    for _ in range(_MAX_TRACES):
        specs = util.loop_specs(templates, util.unwrap(templates), invariants)
        state_specs = specs + util.seeded_specs(seeded)

        def run_body(element, values):
            packed = nest.pack_sequence_as(element_structure, element)
            return body(packed, values)
        body_graph, result = _trace_part(f"{who.replace(' ', '_')}_body", run_body, parent,
                                         element_specs, state_specs, seeded, templates,
                                         structure)
        test_graph = test = None
        if extra_test is not None:
            test_graph, test = _trace_part(f"{who.replace(' ', '_')}_cond",
                                           lambda _, values: extra_test(values), parent, None,
                                           state_specs, seeded, templates, structure)
        util.check_same_structure(structure, result, f"{who}: the body returned {result!r}, "
                                  f"which does not have the structure of the loop values "
                                  f"{structure!r}.")
        result_flat = nest.flatten(result)
        unknown = util.learn_tensor_array_shapes(templates, result_flat, parent, who)
        graphs = [body_graph] + ([test_graph] if test_graph is not None else [])
        assigned = [v for v in util.assigned_variables(graphs)
                    if all(v is not s for s in seeded)]
        seeded = seeded + assigned
        new_values = util.body_results(result_flat, templates)
        relaxed = None if unknown else _relaxed(specs, new_values)
        if relaxed is not None:
            invariants = relaxed
        if not assigned and not unknown and relaxed is None:
            break
    else:
        raise ValueError(f"{who}: the loop values keep changing shape or the body keeps "
                         "assigning new variables; give them fixed shapes before the loop.")
    flat = util.unwrap(templates)
    if test_graph is not None:
        util.set_condition_output(test_graph, test, f"{who}: the loop condition")
    with func_graph.building(body_graph):
        util.check_loop_values(flat, new_values, who)
    util.set_body_outputs(body_graph, new_values, seeded)
    for graph in graphs:
        graph.prune()
    inputs, maps = util.merge_outer_inputs(graphs)
    entry = util.enter_loop(parent, flat, seeded)
    util.tape_variable_reads(graphs)
    final = execute(data_ops.DATASET_LOOP, entry + inputs, {
        "elements": elements, "body": body_graph, "cond": test_graph,
        "run_body": CompiledPart(body_graph),
        "run_cond": CompiledPart(test_graph) if test_graph is not None else None,
        "body_map": maps[0], "cond_map": maps[1] if test_graph is not None else (),
        "n_state": len(entry), "state_specs": util.state_specs(specs, seeded)})
    return nest.pack_sequence_as(structure, util.leave_loop(parent, final, templates, seeded))


def next_element(next_flat, element_structure, who="iterator"):
    """Adds an ``iterator_get_next`` node: each run takes the iterator's next element
    (``next_flat()``, None at the end, where the node raises OutOfRangeError)."""
    specs = nest.flatten(element_structure)
    outputs = execute(data_ops.ITERATOR_GET_NEXT, [], {
        "next_element": next_flat,
        "output_specs": [Spec(s.shape.dims, np.dtype(s.dtype.as_numpy_dtype))
                         for s in specs]})
    return nest.pack_sequence_as(element_structure, list(outputs))
