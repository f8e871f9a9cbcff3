"""What the traced control flow shares: ``tf.cond``, ``tf.while_loop`` and loops over datasets
(``data.in_function``).

Each traces its branches or loop parts as subgraphs nested in the graph being traced.  Loop
values are tensors or TensorArrays (a TensorArray travels through the loop as its buffer);
variables a part assigns are carried as extra loop values ("seeded" into the part's
placeholders); the node takes the enclosing-graph values the subgraphs use as extra inputs.
"""
import numpy as np

from hybridtf.api.tensor_array_ops import TensorArray
from hybridtf.eager import tape as tape_lib
from hybridtf.eager.execute import as_tensor
from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph
from hybridtf.registry import Spec, checks


def leaf_tensor(value):
    """A tensor or variable as a tensor (a variable read); anything else as it is."""
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        return as_tensor(value)
    return value


def check_same_structure(expected, got, message):
    """Raises ``ValueError(message)`` unless ``got`` has the nested structure of
    ``expected``."""
    try:
        nest.assert_same_structure(expected, got)
    except ValueError:
        raise ValueError(message) from None


# ---- loop values --------------------------------------------------------------------------------
def unwrap(flat):
    """Loop values as tensors: a TensorArray travels as its buffer."""
    return [v._buffer if isinstance(v, TensorArray) else v for v in flat]


def rewrap(tensors, templates):
    """Tensors back as the loop values ``templates`` describe (TensorArrays around buffers)."""
    # A TensorArray still without a buffer goes in as it is (the discovery pass).
    return [(t._with_buffer(v) if t._buffer is not None else t) if isinstance(t, TensorArray)
            else v for v, t in zip(tensors, templates)]


def body_results(flat, templates):
    """A loop body's flat results as tensors: a Python number takes the dtype of its loop
    value."""
    values = unwrap([leaf_tensor(v) for v in flat])
    return [as_tensor(v, dtype=o.dtype) if not isinstance(v, Tensor) else v
            for v, o in zip(values, unwrap(templates))]


def check_loop_values(before, after, what):
    """Raises TF's error when the body changed the number, a dtype or a rank of the loop
    values."""
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


def loop_specs(templates, tensors, shape_invariants):
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


def seeded_specs(seeded):
    """(shape, dtype) of the loop values that carry the seeded variables."""
    return [(tuple(v.shape), v._value.dtype) for v in seeded]


def state_specs(specs, seeded):
    """The node's ``state_specs`` attribute: one ``Spec`` per loop value, the seeded variables
    last."""
    return [Spec(shape, np.dtype(dtype)) for shape, dtype in specs + seeded_specs(seeded)]


def learn_tensor_array_shapes(templates, result_flat, parent, what):
    """Gives each TensorArray loop value still without a buffer the element shape the body
    wrote into it (in ``templates``, in place); returns the positions it changed."""
    unknown = [i for i, t in enumerate(templates)
               if isinstance(t, TensorArray) and t._buffer is None]
    for i in unknown:
        written = result_flat[i]
        if not isinstance(written, TensorArray) or written._buffer is None:
            raise ValueError(f"{what}: a TensorArray loop value is never written in the body "
                             "and has no element_shape.")
        with func_graph.building(parent):
            templates[i] = templates[i]._with_buffer(
                templates[i]._zeros(written._buffer._shape_tuple[1:]))
    return unknown


# ---- subgraphs ----------------------------------------------------------------------------------
def loop_placeholders(graph, specs, seeded):
    """Placeholders in ``graph`` (a loop part being traced) for the loop values of ``specs``;
    the last ``len(seeded)`` stand for the seeded variables' values inside the part.  Returns
    the placeholders of the user's loop values."""
    placeholders = [graph.placeholder(shape, dtype, f"loop_var_{i}")
                    for i, (shape, dtype) in enumerate(specs)]
    n_user = len(specs) - len(seeded)
    for variable, placeholder in zip(seeded, placeholders[n_user:]):
        graph._variable_values[id(variable)] = placeholder
        graph._initial_values[id(variable)] = (variable, placeholder)
    return placeholders[:n_user]


def set_condition_output(graph, test, what):
    """Makes ``test`` (a scalar bool) the output of the condition subgraph ``graph``."""
    with func_graph.building(graph):
        test = as_tensor(test)
        if test.dtype.name != "bool" or test._shape_tuple not in ((), None):
            raise TypeError(f"{what} must be a scalar bool tensor, got {test!r}.")
        graph.outputs = [graph.as_input(test)]


def set_body_outputs(graph, values, seeded):
    """Makes the new loop values and the seeded variables' final values the outputs of the
    body subgraph ``graph``; returns them."""
    with func_graph.building(graph):
        outputs = [graph.as_input(v) for v in values]
        outputs += [graph.read_variable(v) for v in seeded]
    graph.outputs = outputs
    return outputs


def assigned_variables(graphs):
    """The variables the subgraphs assign, once each, in order."""
    seen = {}
    for graph in graphs:
        for variable, _ in graph.updated_variables():
            seen.setdefault(id(variable), variable)
    return list(seen.values())


def merge_outer_inputs(graphs):
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


def tape_variable_reads(graphs):
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


def enter_loop(parent, flat, seeded):
    """The loop node's state inputs: the loop values, then the seeded variables' values."""
    return list(flat) + [parent.read_variable(v) for v in seeded]


def leave_loop(parent, final, templates, seeded):
    """Assigns the seeded variables their final values (in ``parent``); returns the user's
    loop values, rewrapped."""
    n = len(templates)
    for variable, value in zip(seeded, final[n:]):
        parent.assign_variable(variable, value)
    return rewrap(list(final[:n]), templates)
