"""``tf.cond`` and ``tf.while_loop``: eagerly plain Python control flow; while tracing, nodes
whose branches / loop parts are nested graphs, so the decision is made each time the graph runs.
"""
import numpy as np

from hybridtf.api.tensor_array_ops import TensorArray
from hybridtf.eager import tape as tape_lib
from hybridtf.eager.execute import as_tensor, execute
from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph
from hybridtf.graph.func_graph import FuncGraph, GraphTensor
from hybridtf.graph.function import replay
from hybridtf.registry import checks
from hybridtf.registry import control_flow as CF


def _is_symbolic(value):
    return isinstance(value, GraphTensor)


def _leaf_tensor(value):
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        return as_tensor(value)
    return value


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
    try:
        nest.assert_same_structure(true_result, false_result)
    except ValueError:
        raise ValueError(f"cond: true_fn and false_fn must return the same structure, got "
                         f"{true_result!r} and {false_result!r}.") from None
    true_flat = nest.flatten(true_result)
    false_flat = nest.flatten(false_result)
    _finish_branch(true_graph, true_flat, false_flat)
    _finish_branch(false_graph, false_flat, true_flat)
    for i, (a, b) in enumerate(zip(true_graph.outputs, false_graph.outputs)):
        if a._static_dtype != b._static_dtype:
            raise TypeError(f"cond: output {i} of true_fn has dtype {a.dtype.name} but false_fn's "
                            f"has {b.dtype.name}; both branches must return the same dtypes.")
    variables = _assigned_variables([true_graph, false_graph])
    for graph in (true_graph, false_graph):
        _append_variable_outputs(graph, variables)
        graph.prune()
    inputs, maps = _merge_outer_inputs([true_graph, false_graph])
    specs = [_merged_spec(a, b) for a, b in zip(true_graph.outputs, false_graph.outputs)]
    stateful = any(n.op.stateful for g in (true_graph, false_graph) for n in g.nodes) or variables
    op = CF.STATEFUL_COND if stateful else CF.COND
    _tape_variable_reads([true_graph, false_graph])
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


def _tape_variable_reads(graphs):
    """Lets active tapes see the variables the subgraphs read, as reads in the enclosing graph
    (so gradients with respect to those variables reach the node)."""
    if not tape_lib.STATE.active:
        return
    for graph in graphs:
        outer_of = {id(ph): t for t, ph in graph.outer_inputs}
        for variable, placeholder in graph._initial_values.values():
            outer = outer_of.get(id(placeholder))
            if outer is not None:
                tape_lib.record_variable_read(variable, outer)


def _finish_branch(graph, flat, other_flat):
    """The branch's outputs; Python numbers take the dtype of the other branch's tensor (the
    seed's ``x = 0`` against ``x = x * x``)."""
    outputs = []
    with func_graph.building(graph):
        for leaf, other in zip(flat, other_flat):
            other = _leaf_tensor(other)
            leaf = _leaf_tensor(leaf)
            if not isinstance(leaf, Tensor):
                if leaf is None:
                    raise ValueError("cond: a branch returned None where the other returned a "
                                     "value; both must produce every output.")
                dtype = other.dtype if isinstance(other, Tensor) else None
                leaf = as_tensor(np.asarray(leaf, dtype=dtype.as_numpy_dtype)
                                 if dtype is not None else leaf)
            outputs.append(graph.as_input(leaf))
    graph.outputs = outputs


def _assigned_variables(graphs):
    seen = {}
    for graph in graphs:
        for variable, _ in graph.updated_variables():
            seen.setdefault(id(variable), variable)
    return list(seen.values())


def _append_variable_outputs(graph, variables):
    with func_graph.building(graph):
        for variable in variables:
            graph.outputs.append(graph.read_variable(variable))


def _merge_outer_inputs(graphs):
    """The enclosing-graph tensors the subgraphs use, once each, and each subgraph's positions."""
    inputs, positions, maps = [], {}, []
    for graph in graphs:
        mapping = []
        for tensor, _ in graph.outer_inputs:
            if id(tensor) not in positions:
                positions[id(tensor)] = len(inputs)
                inputs.append(tensor)
            mapping.append(positions[id(tensor)])
        maps.append(tuple(mapping))
    return inputs, tuple(maps)


class _Spec:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _merged_spec(a, b):
    sa, sb = a._static_shape, b._static_shape
    if sa is None or sb is None or len(sa) != len(sb):
        shape = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(sa, sb))
    return _Spec(shape, a._static_dtype)


def cond_gradient(record, grads):
    """The gradient of a cond node: a cond over the two branches' gradients."""
    from hybridtf.api.array_ops import zeros_like
    from hybridtf.eager.backprop import GradientTape
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
    flat = [_leaf_tensor(v) for v in nest.flatten(structure)]
    flat = [as_tensor(v) if isinstance(v, (int, float, bool, np.ndarray, np.generic)) else v
            for v in flat]
    graph = func_graph.current()
    tensors = [v._buffer if isinstance(v, TensorArray) else v for v in flat]
    if graph is None and not any(_is_symbolic(v) for v in tensors):
        return _eager_while(cond, body, structure, flat, maximum_iterations, single)
    first = cond(*nest.pack_sequence_as(structure, flat))
    if not _is_symbolic(first) and not any(_is_symbolic(v) for v in tensors):
        # Everything is known while tracing: the loop unrolls (its values are constants).
        return _eager_while(cond, body, structure, flat, maximum_iterations, single)
    return _traced_while(cond, body, structure, flat, shape_invariants, maximum_iterations,
                         single)


def _unwrap(flat):
    """Loop values as tensors: a TensorArray travels as its buffer."""
    return [v._buffer if isinstance(v, TensorArray) else v for v in flat]


def _rewrap(tensors, templates):
    # A TensorArray still without a buffer goes in as it is (the discovery pass).
    return [(t._with_buffer(v) if t._buffer is not None else t) if isinstance(t, TensorArray)
            else v for v, t in zip(tensors, templates)]


def _check_same(before, after, what="while_loop"):
    if len(before) != len(after):
        raise ValueError(f"{what}: body returned {len(after)} loop variables, expected "
                         f"{len(before)}.")
    for i, (a, b) in enumerate(zip(before, after)):
        if isinstance(a, TensorArray) or isinstance(b, TensorArray):
            continue
        if not isinstance(b, Tensor):
            b = as_tensor(b, dtype=a.dtype)
        if a._np_dtype != b._np_dtype:
            checks.fail(what, f"loop variable {i} changed dtype from {a.dtype.name} to "
                        f"{b.dtype.name}; the body must keep each loop variable's dtype.")
        ra, rb = a._shape_tuple, b._shape_tuple
        if ra is not None and rb is not None and len(ra) != len(rb):
            checks.fail(what, f"loop variable {i} changed rank from {len(ra)} (shape "
                        f"{list(ra)}) to {len(rb)} (shape {list(rb)}); give shape_invariants "
                        "or keep its rank.")


def _eager_while(cond, body, structure, flat, maximum_iterations, single):
    iterations = 0
    current = flat
    while maximum_iterations is None or iterations < int(maximum_iterations):
        if not bool(cond(*nest.pack_sequence_as(structure, current))):
            break
        result = body(*nest.pack_sequence_as(structure, current))
        result = [result] if single else list(result) if isinstance(result, (list, tuple)) \
            else [result]
        new = [_leaf_tensor(v) for v in nest.flatten(result)]
        new = [as_tensor(v, dtype=o.dtype) if not isinstance(v, (Tensor, TensorArray)) else v
               for v, o in zip(new, current)]
        _check_same(current, new)
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
        placeholders = [graph.placeholder(s[0], s[1], f"loop_var_{i}")
                        for i, s in enumerate(specs)]
        n_user = len(specs) - len(seeded)
        for variable, ph in zip(seeded, placeholders[n_user:]):
            graph._variable_values[id(variable)] = ph
            graph._initial_values[id(variable)] = (variable, ph)
        with tape_lib.stop_recording(), func_graph.building(graph):
            values = _rewrap(placeholders[:n_user], templates)
            result = fn(*nest.pack_sequence_as(structure, values))
        graphs.append((graph, result, placeholders))
    return graphs


def _traced_while(cond, body, structure, flat, shape_invariants, maximum_iterations, single):
    parent = func_graph.current() or next(v.graph for v in _unwrap(flat) if _is_symbolic(v))
    templates = list(flat)
    seeded = []
    for _ in range(3):
        # A TensorArray nothing was written to yet learns its element shape from the body.
        tensors = _unwrap(templates)
        specs = _loop_specs(templates, tensors, shape_invariants)
        (cond_graph, test, _), (body_graph, result, _) = _loop_graphs(
            cond, body, structure, specs + [(tuple(v.shape), v._value.dtype) for v in seeded],
            parent, seeded, templates)
        result = [result] if single else list(result) if isinstance(result, (list, tuple)) \
            else [result]
        result_flat = nest.flatten(result)
        unknown = [i for i, t in enumerate(templates)
                   if isinstance(t, TensorArray) and t._buffer is None]
        for i in unknown:
            written = result_flat[i]
            if not isinstance(written, TensorArray) or written._buffer is None:
                raise ValueError("while_loop: a TensorArray loop variable is never written in "
                                 "the body and has no element_shape.")
            with func_graph.building(parent):
                templates[i] = templates[i]._with_buffer(
                    templates[i]._zeros(written._buffer._shape_tuple[1:]))
        assigned = [v for v in _assigned_variables([body_graph]) if all(v is not s for s in seeded)]
        if not assigned and not unknown:
            break
        seeded = seeded + assigned  # carry them as loop values and trace again
    flat = _unwrap(templates)
    invariants = [s[0] for s in specs]
    with func_graph.building(cond_graph):
        test = as_tensor(test)
        if test.dtype.name != "bool" or test._shape_tuple not in ((), None):
            raise TypeError(f"while_loop: cond must return a scalar bool tensor, got {test!r}.")
        cond_graph.outputs = [cond_graph.as_input(test)]
    with func_graph.building(body_graph):
        new = _unwrap([_leaf_tensor(v) for v in nest.flatten(result)])
        new = [as_tensor(v, dtype=o.dtype) if not isinstance(v, Tensor) else v
               for v, o in zip(new, flat)]
        _check_same(flat, new)
        outputs = [body_graph.as_input(v) for v in new]
        outputs += [body_graph.read_variable(v) for v in seeded]
        body_graph.outputs = outputs
    for inv, out, i in zip(invariants, outputs, range(len(flat))):
        if inv is not None and out._static_shape is not None and any(
                a is not None and b is not None and a != b for a, b in zip(inv, out._static_shape)):
            checks.fail("while_loop", f"loop variable {i} has shape {list(inv)} on entry but "
                        f"{list(out._static_shape)} after an iteration; give shape_invariants "
                        "with None for the dimensions that change.")
    cond_graph.prune()
    body_graph.prune()
    inputs, (cond_map, body_map) = _merge_outer_inputs([cond_graph, body_graph])
    entry = list(flat) + [parent.read_variable(v) for v in seeded]
    state_specs = [_Spec(s[0], s[1]) for s in specs] + [
        _Spec(tuple(v.shape), np.dtype(v.dtype.as_numpy_dtype)) for v in seeded]
    stateful = bool(seeded) or any(n.op.stateful for g in (cond_graph, body_graph)
                                   for n in g.nodes)
    op = CF.STATEFUL_WHILE if stateful else CF.WHILE
    _tape_variable_reads([cond_graph, body_graph])
    attrs = {"cond": cond_graph, "body": body_graph, "cond_map": cond_map,
             "body_map": body_map, "n_state": len(entry), "state_specs": state_specs,
             "maximum_iterations": None if maximum_iterations is None else
             int(maximum_iterations)}
    final = execute(op, entry + inputs, attrs)
    for variable, value in zip(seeded, final[len(flat):]):
        parent.assign_variable(variable, value)
    packed = nest.pack_sequence_as(structure, _rewrap(list(final[:len(flat)]), templates))
    return packed[0] if single else type(structure)(packed)


def _loop_specs(templates, tensors, shape_invariants):
    """(shape, dtype) of each loop value: its shape invariant if given, else its shape; a
    TensorArray that may grow has an unknown length."""
    if shape_invariants is not None:
        invariants = [getattr(s, "as_list", lambda s=s: s)() if s is not None else None
                      for s in nest.flatten(shape_invariants)]
    else:
        invariants = [None if v is None else v._shape_tuple for v in tensors]
    specs = []
    for template, tensor, inv in zip(templates, tensors, invariants):
        if isinstance(template, TensorArray):
            if tensor is None:
                specs.append(((), template.dtype.as_numpy_dtype))  # unused: discovery pass
                continue
            if template.dynamic_size and inv is not None:
                inv = (None,) + tuple(inv[1:])
        specs.append((None if inv is None else tuple(inv), tensor._np_dtype))
    return specs


def while_gradient(record, grads):
    """The gradient of a while node: a node that replays the loop and runs the body's
    vector-Jacobian product backwards through the stored iteration states."""
    from hybridtf.api.array_ops import zeros_like
    from hybridtf.eager.backprop import GradientTape
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
