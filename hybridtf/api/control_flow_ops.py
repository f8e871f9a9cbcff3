"""``tf.cond`` and ``tf.while_loop``: eagerly plain Python control flow; while tracing, nodes
whose branches / loop parts are nested graphs, so the decision is made each time the graph runs.
"""
import numpy as np

from hybridtf.api import control_flow_util as util
from hybridtf.api.array_ops import zeros_like
from hybridtf.api.tensor_array_ops import TensorArray
from hybridtf.eager import tape as tape_lib
from hybridtf.eager.backprop import GradientTape
from hybridtf.eager.execute import as_tensor, execute
from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph
from hybridtf.graph.func_graph import FuncGraph, GraphTensor
from hybridtf.graph.replay import replay
from hybridtf.registry import Spec, checks
from hybridtf.registry import control_flow as CF


def _is_symbolic(value):
    return isinstance(value, GraphTensor)


# ---- cond ---------------------------------------------------------------------------------------
def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if ``pred`` else ``false_fn()``; both must return the same structure.

    Eagerly only the chosen function runs.  Inside a traced function with a symbolic ``pred``
    both are traced, and the choice is made every time the function runs.
    """
    if true_fn is None or false_fn is None or not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must both be callables.")
    if not _is_symbolic(pred):
        return true_fn() if bool(pred) else false_fn()
    if pred.dtype.name != "bool" or (pred._shape_tuple not in ((), None)):
        raise TypeError(f"cond: pred must be a scalar bool tensor, got {pred!r}.")
    parent = pred.graph
    true_graph, true_result = _trace_branch(parent, true_fn, "cond_true")
    false_graph, false_result = _trace_branch(parent, false_fn, "cond_false")
    util.check_same_structure(true_result, false_result, f"cond: true_fn and false_fn must "
                              f"return the same structure, got {true_result!r} and "
                              f"{false_result!r}.")
    true_flat = nest.flatten(true_result)
    false_flat = nest.flatten(false_result)
    _finish_branch(true_graph, true_flat, false_flat)
    _finish_branch(false_graph, false_flat, true_flat)
    for i, (a, b) in enumerate(zip(true_graph.outputs, false_graph.outputs)):
        if a._static_dtype != b._static_dtype:
            raise TypeError(f"cond: output {i} of true_fn has dtype {a.dtype.name} but false_fn's "
                            f"has {b.dtype.name}; both branches must return the same dtypes.")
    variables = util.assigned_variables([true_graph, false_graph])
    for graph in (true_graph, false_graph):
        _append_variable_outputs(graph, variables)
        graph.prune()
    inputs, maps = util.merge_outer_inputs([true_graph, false_graph])
    specs = [_merged_spec(a, b) for a, b in zip(true_graph.outputs, false_graph.outputs)]
    stateful = any(n.op.stateful for g in (true_graph, false_graph) for n in g.nodes) or variables
    op = CF.STATEFUL_COND if stateful else CF.COND
    util.tape_variable_reads([true_graph, false_graph])
    outputs = execute(op, [pred] + inputs, {
        "branches": (true_graph, false_graph), "maps": maps, "output_specs": specs})
    n = len(true_flat)
    for variable, value in zip(variables, outputs[n:]):
        parent.assign_variable(variable, value)
    results = [out if leaf is not None else leaf for out, leaf in zip(outputs[:n], true_flat)]
    return nest.pack_sequence_as(true_result, results)


def _trace_branch(parent, fn, name):
    # The subgraph's own ops are not taped: the node as a whole is, and its gradient rule
    # differentiates the subgraph.
    graph = FuncGraph(name, parent=parent)
    with tape_lib.stop_recording(), func_graph.building(graph):
        result = fn()
    return graph, result


def _finish_branch(graph, flat, other_flat):
    """The branch's outputs; Python numbers take the dtype of the other branch's tensor (the
    seed's ``x = 0`` against ``x = x * x``)."""
    outputs = []
    with func_graph.building(graph):
        for leaf, other in zip(flat, other_flat):
            other = util.leaf_tensor(other)
            leaf = util.leaf_tensor(leaf)
            if not isinstance(leaf, Tensor):
                if leaf is None:
                    raise ValueError("cond: a branch returned None where the other returned a "
                                     "value; both must produce every output.")
                dtype = other.dtype if isinstance(other, Tensor) else None
                leaf = as_tensor(np.asarray(leaf, dtype=dtype.as_numpy_dtype)
                                 if dtype is not None else leaf)
            outputs.append(graph.as_input(leaf))
    graph.outputs = outputs


def _append_variable_outputs(graph, variables):
    with func_graph.building(graph):
        for variable in variables:
            graph.outputs.append(graph.read_variable(variable))


def _merged_spec(a, b):
    sa, sb = a._static_shape, b._static_shape
    if sa is None or sb is None or len(sa) != len(sb):
        shape = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(sa, sb))
    return Spec(shape, a._static_dtype)


def cond_gradient(record, grads):
    """The gradient of a cond node: a cond over the two branches' gradients."""
    pred, outer = record.inputs[0], list(record.inputs[1:])
    branches, maps = record.attrs["branches"], record.attrs["maps"]
    grads = [g if g is not None else zeros_like(y) for g, y in zip(grads, record.outputs)]
    wanted = [i for i, t in enumerate(outer) if t._np_dtype.kind == "f"]

    def branch_gradient(graph, mapping):
        def compute():
            mine = [outer[i] for i in mapping]
            with GradientTape() as tape:
                tape.watch(mine)
                outputs = replay(graph, (), False, outer=mine)
            found = tape.gradient(outputs, mine, output_gradients=grads)
            by_position = {}
            for position, g in zip(mapping, found):
                if g is not None:
                    by_position[position] = by_position[position] + g \
                        if position in by_position else g
            return [by_position.get(i, zeros_like(outer[i])) for i in wanted]
        return compute

    result = cond(pred, branch_gradient(branches[0], maps[0]),
                  branch_gradient(branches[1], maps[1]))
    full = [None] * len(outer)
    for i, g in zip(wanted, result):
        full[i] = g
    return [None] + full


# ---- while_loop ---------------------------------------------------------------------------------
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; returns the final
    loop variables in their structure.  A loop variable may not change dtype or rank."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables.")
    single = not isinstance(loop_vars, (list, tuple))
    structure = [loop_vars] if single else list(loop_vars)
    flat = [util.leaf_tensor(v) for v in nest.flatten(structure)]
    flat = [as_tensor(v) if isinstance(v, (int, float, bool, np.ndarray, np.generic)) else v
            for v in flat]
    graph = func_graph.current()
    tensors = util.unwrap(flat)
    if graph is None and not any(_is_symbolic(v) for v in tensors):
        return _eager_while(cond, body, structure, flat, maximum_iterations, single)
    first = cond(*nest.pack_sequence_as(structure, flat))
    if not _is_symbolic(first) and not any(_is_symbolic(v) for v in tensors):
        # Everything is known while tracing: the loop unrolls (its values are constants).
        return _eager_while(cond, body, structure, flat, maximum_iterations, single)
    return _traced_while(cond, body, structure, flat, shape_invariants, maximum_iterations,
                         single)


def _eager_while(cond, body, structure, flat, maximum_iterations, single):
    iterations = 0
    current = flat
    while maximum_iterations is None or iterations < int(maximum_iterations):
        if not bool(cond(*nest.pack_sequence_as(structure, current))):
            break
        result = body(*nest.pack_sequence_as(structure, current))
        result = [result] if single else list(result) if isinstance(result, (list, tuple)) \
            else [result]
        new = [util.leaf_tensor(v) for v in nest.flatten(result)]
        new = [as_tensor(v, dtype=o.dtype) if not isinstance(v, (Tensor, TensorArray)) else v
               for v, o in zip(new, current)]
        util.check_loop_values(current, new, "while_loop")
        current = new
        iterations += 1
    packed = nest.pack_sequence_as(structure, current)
    return packed[0] if single else type(structure)(packed)


def _loop_graphs(cond, body, structure, specs, parent, seeded, templates):
    """Traces cond and body on placeholders; ``seeded`` variables are carried as loop values and
    TensorArrays (``templates``) as their buffers."""
    graphs = []
    for name, fn in (("while_cond", cond), ("while_body", body)):
        graph = FuncGraph(name, parent=parent)
        placeholders = util.loop_placeholders(graph, specs, seeded)
        with tape_lib.stop_recording(), func_graph.building(graph):
            values = util.rewrap(placeholders, templates)
            result = fn(*nest.pack_sequence_as(structure, values))
        graphs.append((graph, result))
    return graphs


def _traced_while(cond, body, structure, flat, shape_invariants, maximum_iterations, single):
    parent = func_graph.current() or next(v.graph for v in util.unwrap(flat)
                                          if _is_symbolic(v))
    templates = list(flat)
    seeded = []
    for _ in range(3):
        # A TensorArray nothing was written to yet learns its element shape from the body.
        specs = util.loop_specs(templates, util.unwrap(templates), shape_invariants)
        (cond_graph, test), (body_graph, result) = _loop_graphs(
            cond, body, structure, specs + util.seeded_specs(seeded), parent, seeded, templates)
        result = [result] if single else list(result) if isinstance(result, (list, tuple)) \
            else [result]
        result_flat = nest.flatten(result)
        unknown = util.learn_tensor_array_shapes(templates, result_flat, parent, "while_loop")
        assigned = [v for v in util.assigned_variables([body_graph])
                    if all(v is not s for s in seeded)]
        if not assigned and not unknown:
            break
        seeded = seeded + assigned  # carry them as loop values and trace again
    flat = util.unwrap(templates)
    invariants = [s[0] for s in specs]
    util.set_condition_output(cond_graph, test, "while_loop: what cond returns")
    with func_graph.building(body_graph):
        new = util.body_results(result_flat, templates)
        util.check_loop_values(flat, new, "while_loop")
    outputs = util.set_body_outputs(body_graph, new, seeded)
    for inv, out, i in zip(invariants, outputs, range(len(flat))):
        if inv is not None and out._static_shape is not None and any(
                a is not None and b is not None and a != b for a, b in zip(inv, out._static_shape)):
            checks.fail("while_loop", f"loop variable {i} has shape {list(inv)} on entry but "
                        f"{list(out._static_shape)} after an iteration; give shape_invariants "
                        "with None for the dimensions that change.")
    cond_graph.prune()
    body_graph.prune()
    inputs, (cond_map, body_map) = util.merge_outer_inputs([cond_graph, body_graph])
    entry = util.enter_loop(parent, flat, seeded)
    stateful = bool(seeded) or any(n.op.stateful for g in (cond_graph, body_graph)
                                   for n in g.nodes)
    op = CF.STATEFUL_WHILE if stateful else CF.WHILE
    util.tape_variable_reads([cond_graph, body_graph])
    attrs = {"cond": cond_graph, "body": body_graph, "cond_map": cond_map,
             "body_map": body_map, "n_state": len(entry),
             "state_specs": util.state_specs(specs, seeded),
             "maximum_iterations": None if maximum_iterations is None else
             int(maximum_iterations)}
    final = execute(op, entry + inputs, attrs)
    packed = nest.pack_sequence_as(structure, util.leave_loop(parent, final, templates, seeded))
    return packed[0] if single else type(structure)(packed)


def while_gradient(record, grads):
    """The gradient of a while node: a node that replays the loop and runs the body's
    vector-Jacobian product backwards through the stored iteration states."""
    attrs = record.attrs
    n = attrs["n_state"]
    state_in, outer = list(record.inputs[:n]), list(record.inputs[n:])
    grads = [g if g is not None else zeros_like(y) for g, y in zip(grads, record.outputs)]
    body = attrs["body"]
    vjp = attrs.get("_vjp")
    if vjp is None:
        vjp = FuncGraph("while_body_vjp")
        state_ph = [vjp.placeholder(t._static_shape, t._static_dtype, "state")
                    for t in body.inputs]
        outer_ph = [vjp.placeholder(t._static_shape, t._static_dtype, "outer")
                    for t, _ in body.outer_inputs]
        grad_ph = [vjp.placeholder(t._static_shape, t._static_dtype, "grad")
                   for t in body.outputs]
        with func_graph.building(vjp):
            with GradientTape() as tape:
                tape.watch(state_ph + outer_ph)
                outputs = replay(body, state_ph, False, outer=outer_ph)
            found = tape.gradient(outputs, state_ph + outer_ph, output_gradients=grad_ph)
            vjp.outputs = [vjp.as_input(g if g is not None else zeros_like(p))
                           for g, p in zip(found, state_ph + outer_ph)]
        vjp.prune()
        attrs["_vjp"] = vjp
    grad_attrs = dict(attrs, body_vjp=vjp, n_outer=len(outer))
    result = execute(CF.WHILE_GRAD, state_in + outer + grads, grad_attrs)
    out = []
    for value, g in zip(list(state_in) + outer, result):
        out.append(g if value._np_dtype.kind == "f" else None)
    return out
