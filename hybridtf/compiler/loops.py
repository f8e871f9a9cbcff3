"""Loop kernels: a ``while_loop`` whose condition and body fuse completely runs as one native loop.

The condition and the body are lowered like any graph (``plan.lower``), each group is rendered as a fused ``@njit`` function, and one more ``@njit`` function
runs the ``while`` itself, calling those group functions once per iteration.  A loop whose parts
hold anything else (opaque ops, stateful ops, variables, values of unknown shape) is left to the
eager while-loop kernel, which runs the parts node by node.
"""
import hashlib

import numpy as np

from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler import render as render_lib

# Captured constants with at most this many elements are inlined in the generated code.
INLINE_SIZE = 1


class LoopKernel:
    """A rendered loop: the group kernels it calls, its own kernel, and what the driver passes.

    The loop kernel takes the node's inputs (loop values, then the enclosing graph's values the
    parts use) followed by ``captured`` (arrays the parts closed over), and returns the final
    loop values.
    """

    def __init__(self, kernels, kernel, captured):
        self.kernels = kernels
        self.kernel = kernel
        self.captured = captured


def small_constants(graph):
    """id(placeholder) -> value, for the captures of ``graph`` small enough to inline."""
    constants = {}
    for tensor, placeholder in graph.captures:
        value = np.asarray(tensor._value)
        if value.size == 1 and value.size <= INLINE_SIZE and value.dtype.kind in "biuf":
            constants[id(placeholder)] = value
    return constants


def _lowerable(graph):
    if graph.variables or any(node.op.stateful for node in graph.nodes):
        return None
    the_plan = plan_lib.lower(graph)
    if any(kind != "group" for kind, _ in the_plan.items):
        return None
    return the_plan


def render_while(node):
    """The ``LoopKernel`` of a ``while_loop`` node, or None when its parts do not all fuse."""
    if node.op.name != "while_loop":
        return None
    attrs = node.attrs
    cond_graph, body_graph = attrs["cond"], attrs["body"]
    plans = [_lowerable(cond_graph), _lowerable(body_graph)]
    if None in plans:
        return None
    n_state = attrs["n_state"]
    n_outer = len(node.inputs) - n_state
    params = [f"s{i}" for i in range(n_state)] + [f"u{j}" for j in range(n_outer)]
    captured = []
    kernels = []

    def statements(graph, the_plan, outer_map):
        names = {}
        for placeholder, name in zip(graph.inputs, params[:n_state]):
            names[id(placeholder)] = name
        for (_, placeholder), position in zip(graph.outer_inputs, outer_map):
            names[id(placeholder)] = f"u{position}"
        for tensor, placeholder in graph.captures:
            names[id(placeholder)] = f"k{len(captured)}"
            captured.append(np.asarray(tensor._value))
        constants = small_constants(graph)
        lines = []
        for _, group in the_plan.items:
            if not group.outputs:
                continue
            kernel = render_lib.render(group, constants)
            kernels.append(kernel)
            args = [names[id(t)] + ("[()]" if scalar else "")
                    for t, scalar in zip(kernel.args, kernel.scalar_args)]
            outs = []
            for t in kernel.outputs:
                names[id(t)] = f"t{len(names)}"
                outs.append(names[id(t)])
            target = outs[0] if len(outs) == 1 else "".join(o + ", " for o in outs)
            lines.append(f"{target} = {kernel.name}({', '.join(args)})")
        return lines, [names[id(t)] for t in graph.outputs]

    cond_lines, (test,) = statements(cond_graph, plans[0], attrs["cond_map"])
    body_lines, new_state = statements(body_graph, plans[1], attrs["body_map"])
    params += [f"k{n}" for n in range(len(captured))]

    limit = attrs["maximum_iterations"]
    lines = ["    iterations = 0"] if limit is not None else []
    lines.append(f"    while {'iterations < ' + str(int(limit)) if limit is not None else 'True'}:")
    lines += ["        " + line for line in cond_lines]
    lines.append(f"        if not {test}[()]:")
    lines.append("            break")
    lines += ["        " + line for line in body_lines]
    if n_state:
        lines.append("        " + "".join(f"s{i}, " for i in range(n_state)) + "= "
                     + "".join(v + ", " for v in new_state))
    if limit is not None:
        lines.append("        iterations += 1")
    lines.append("    return (" + "".join(f"s{i}, " for i in range(n_state)) + ")")
    text = "\n".join(lines)
    signature = ", ".join(params)
    digest = hashlib.sha256((signature + "\n" + text).encode()).hexdigest()[:12]
    name = f"loop_{digest}"
    source = (f"{render_lib.DECORATOR.format(extra='')}\ndef {name}({signature}):\n{text}\n")
    kernel = render_lib.Kernel(name, source, list(node.inputs), [False] * len(node.inputs),
                               list(node.outputs), [])
    return LoopKernel(kernels, kernel, captured)
