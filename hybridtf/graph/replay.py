"""Replaying a traced graph through the op API.

A graph's nodes are run again with ``eager.execute``: eagerly, the ops run and are recorded on
the active tapes (how a function call is differentiated); while another function is traced,
they are added to its graph (how a function called from a traced function, or a branch's
gradient, is inlined).
"""
from hybridtf.eager.execute import execute


def replay(graph, inputs, apply_variable_updates, outer=(), variable_values=None):
    """Re-creates ``graph``'s computation on ``inputs`` (and, for a branch or loop body, on the
    enclosing-graph values ``outer``) through the op API, so that it is traced into the current
    graph or recorded on active tapes; returns the output tensors.

    Without ``apply_variable_updates`` only the nodes the outputs need run (no prints, no
    assignments): the form gradients use.  ``variable_values`` (one tensor per entry of
    ``graph.variables``) stand for the variables' values instead of their current ones.
    """
    mapping = {id(ph): t for ph, t in zip(graph.inputs, inputs)}
    for (_, placeholder), value in zip(graph.outer_inputs, outer):
        mapping[id(placeholder)] = value
    for tensor, placeholder in graph.captures:
        mapping[id(placeholder)] = tensor
    if variable_values is None:
        variable_values = [variable.value() for variable, _ in graph.variables]
    for (_, placeholder), value in zip(graph.variables, variable_values):
        mapping[id(placeholder)] = value
    wanted = None if apply_variable_updates else graph.ancestors(graph.outputs)
    for node in graph.nodes:
        if wanted is not None and id(node) not in wanted:
            continue
        outs = execute(node.op, [mapping[id(t)] for t in node.inputs], node.attrs)
        for t, o in zip(node.outputs, outs):
            mapping[id(t)] = o
    if apply_variable_updates:
        for variable, tensor in graph.updated_variables():
            variable.assign(mapping[id(tensor)])
    return [mapping[id(t)] for t in graph.outputs]
