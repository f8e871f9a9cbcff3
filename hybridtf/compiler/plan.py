"""Lowering a ``FuncGraph`` to a plan: fused elementwise groups and opaque steps, in an order
that keeps every value available before use and stateful nodes in program order.

A *group* is a set of pure elementwise nodes with one output shape (fully known statically),
run as one generated loop.  Float reductions (ops of kind "reduction": sum, mean, max, min, over
all or some axes) consuming a group's values may join it as accumulators (the loop's epilogue).
Everything else is a *step*: ``check_values`` then the op's kernel, exactly as the interpreter
runs a node.  What an op is comes from its registry entry alone (``registry.opdef``).

Groups are formed greedily in program order.  Several groups (of different shapes) may be open at
once; a group is emitted (placed in the step list) as soon as a later node consumes one of its
values, or at the end.  Nodes that do not consume an open group's values are emitted before it,
which only moves pure elementwise work later: stateful nodes keep their relative order.
"""
import numpy as np

from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.registry import checks


def known(shape):
    """Whether a static shape is fully known (rank and every dimension)."""
    return shape is not None and all(d is not None for d in shape)


def fusable(node, constants=None):
    """Whether ``node`` can be computed inside a fused loop; ``constants``: id(placeholder) ->
    value of the graph's captured constants."""
    op = node.op
    if op.kind != "elementwise" or op.stateful or op.num_outputs != 1:
        return False
    tensors = list(node.inputs) + list(node.outputs)
    # Numba has no float16 on the CPU: float16 ops run their (widening) kernels.
    if any(not known(t._static_shape) or t._static_dtype == object
           or t._static_dtype.kind not in "biuf" or t._static_dtype == np.float16
           for t in tensors):
        return False
    if op.check_values is not None:
        # Checks of integer operands only (a zero divisor, a negative exponent): fused when
        # every operand is a float, or when the second operand is a constant that passes.
        if not op.float_safe_checks:
            return False
        if any(t._static_dtype.kind != "f" for t in node.inputs) and \
                not _checked_constant_operand(node, constants or {}):
            return False
    out_rank = len(node.outputs[0]._static_shape)
    return all(len(t._static_shape) <= out_rank for t in node.inputs)


def _checked_constant_operand(node, constants):
    x, y = node.inputs
    value = constants.get(id(y))
    if value is None:
        return False
    try:
        node.op.check_values([np.zeros((), x._static_dtype), np.asarray(value)], node.attrs)
    except InvalidArgumentError:   # the check fails: leave it to run, and raise, in order
        return False
    return True


def reduced_axes(node):
    """The axes a reduction (kind "reduction": sum / mean / max / min) of a float tensor of
    known shape reduces (the reductions a group can take as accumulators), or None."""
    if node.op.kind != "reduction" or node.op.stateful:
        return None
    x, = node.inputs
    shape = x._static_shape
    if not known(shape) or len(shape) == 0 or x._static_dtype.kind != "f":
        return None
    # (the op's shape rule checked the axes when the node was traced)
    axes = checks.axes(node.op.name, node.attrs["axis"], len(shape))
    if not axes or not known(node.outputs[0]._static_shape):
        return None
    return sorted(axes)


class Group:
    """Elementwise nodes fused into one loop over ``shape``, with optional reductions."""

    def __init__(self, shape):
        self.shape = shape
        self.members = []        # elementwise nodes, in program order
        self.reductions = []     # reductions of member values, in program order
        self.produced = set()    # id of every tensor the group computes
        self.outputs = []        # tensors written out (set by finish())

    def add(self, node):
        self.members.append(node)
        self.produced.add(id(node.outputs[0]))

    def add_reduction(self, node):
        self.reductions.append(node)
        self.produced.add(id(node.outputs[0]))

    def size(self):
        return len(self.members) + len(self.reductions)


class Plan:
    """``items``: ("step", node) and ("group", Group) in execution order."""

    def __init__(self, graph, items):
        self.graph = graph
        self.items = items

    def readers(self):
        """id(tensor) -> the indices of the items that read it, in order; None stands for
        the graph's outputs and its variables' new values (read after every item)."""
        readers = {}
        for index, (kind, item) in enumerate(self.items):
            for node in [item] if kind == "step" else item.members + item.reductions:
                for t in node.inputs:
                    readers.setdefault(id(t), []).append(index)
        kept = list(self.graph.outputs) + [t for _, t in self.graph.updated_variables()]
        for t in kept:
            readers.setdefault(id(t), []).append(None)
        return readers


def lower(graph, skip=frozenset()):
    """The plan of ``graph``; nodes whose ids are in ``skip`` (folded constants) are left out.

    A node alone is a group too: its generated loop loads from the disk cache in a new process,
    where building the op's ufunc would take a third of a second."""
    items = []
    open_groups = []
    owner = {}   # id(tensor) -> open Group computing it

    def close(group):
        open_groups.remove(group)
        for key in group.produced:
            owner.pop(key, None)
        items.append(("group", group))

    def close_deps(node, keep=None):
        deps = []
        for t in node.inputs:
            g = owner.get(id(t))
            if g is not None and g is not keep and g not in deps:
                deps.append(g)
        for g in sorted(deps, key=open_groups.index):
            close(g)

    constants = {id(placeholder): tensor._value for tensor, placeholder in graph.captures}
    for node in graph.nodes:
        if id(node) in skip:
            continue
        if fusable(node, constants):
            shape = node.outputs[0]._static_shape
            target = next((g for g in open_groups if g.shape == shape), None)
            if target is not None and any(r.outputs[0] is t for r in target.reductions
                                          for t in node.inputs):
                close(target)  # a reduction's value is ready only after its group's loop
                target = None
            close_deps(node, keep=target)
            if target is None:
                target = Group(shape)
                open_groups.append(target)
            target.add(node)
            owner[id(node.outputs[0])] = target
            continue
        if reduced_axes(node) is not None:
            g = owner.get(id(node.inputs[0]))
            if g is not None and any(m.outputs[0] is node.inputs[0] for m in g.members):
                g.add_reduction(node)
                owner[id(node.outputs[0])] = g
                continue
            close_deps(node)
            g = Group(node.inputs[0]._static_shape)   # a reduction loop of its own
            open_groups.append(g)
            g.add_reduction(node)
            owner[id(node.outputs[0])] = g
            continue
        close_deps(node)
        items.append(("step", node))
    for g in list(open_groups):
        close(g)
    return Plan(graph, _finish(graph, items))


def _finish(graph, items):
    """Decides which group values are written out."""
    consumers = {}
    for kind, item in items:
        nodes = [item] if kind == "step" else item.members + item.reductions
        for node in nodes:
            for t in node.inputs:
                consumers.setdefault(id(t), set()).add(id(item))
    for t in graph.outputs:
        consumers.setdefault(id(t), set()).add("out")
    for _, t in graph.updated_variables():
        consumers.setdefault(id(t), set()).add("out")

    result = []
    for kind, item in items:
        if kind == "step":
            result.append((kind, item))
            continue
        outs = []
        for node in item.members + item.reductions:
            t = node.outputs[0]
            if consumers.get(id(t), set()) - {id(item)}:
                outs.append(t)
        item.outputs = outs
        result.append((kind, item))
    return result


def in_place_updates(graph, plan, min_size):
    """step index -> {id(new value): placeholder} for the variable updates whose new value a
    group of at least ``min_size`` elements may write over the variable's current array.

    The group must read the variable's placeholder at its loop index (same shape and dtype)
    and be the last step that reads it; neither value may be returned (the caller would share
    the variable's array).  Whether anything else refers to the array is only known per call:
    whether the variable has handed it out (``Variable._claim_in_place``), and whether a view
    of it that is read later (``views_read_from``) shares its memory."""
    placeholders = {id(variable): placeholder for variable, placeholder in graph.variables}
    readers = plan.readers()
    group_of = {id(node.outputs[0]): index for index, (kind, item) in enumerate(plan.items)
                if kind == "group" for node in item.members}
    returned = {id(t) for t in graph.outputs}
    updates = {}
    for variable, value in graph.updated_variables():
        placeholder = placeholders.get(id(variable))
        index = group_of.get(id(value))
        if (placeholder is None or index is None or id(value) in returned
                or id(placeholder) in returned):
            continue
        group = plan.items[index][1]
        if (not any(t is value for t in group.outputs)
                or readers.get(id(placeholder), [None])[-1] != index
                or tuple(placeholder._static_shape) != tuple(group.shape)
                or placeholder._static_dtype != value._static_dtype
                or int(np.prod(group.shape)) < max(min_size, 2)):
            continue
        updates.setdefault(index, {})[id(value)] = placeholder
    return updates


def possible_views(plan, tensor):
    """(item index, tensor) for each tensor whose array may share memory with ``tensor``'s at
    run time: the outputs of the steps reading it or one of these, transitively (an opaque
    kernel or a native loop may return an input, or a view of one).  Fused groups write new
    arrays."""
    found = {id(tensor)}
    views = []
    for index, (kind, item) in enumerate(plan.items):
        if kind == "step" and any(id(t) in found for t in item.inputs):
            for t in item.outputs:
                found.add(id(t))
                views.append((index, t))
    return views


def views_read_from(plan, tensor, index, readers):
    """The possible views of ``tensor`` computed before item ``index`` and read by it or later,
    or kept (returned, or a variable's new value): those that an overwrite of ``tensor``'s
    array by item ``index`` would change under their readers.  With ``index`` past the last
    item: the views the caller or a variable gets.  ``readers``: ``plan.readers()``."""
    return [t for at, t in possible_views(plan, tensor) if at < index
            and any(r is None or r >= index for r in readers.get(id(t), ()))]
