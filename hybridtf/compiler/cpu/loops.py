"""The CPU's control-flow kernels: a ``while_loop`` or ``cond`` whose parts compile completely
runs as one native loop or branch.

Each part (a loop's condition and body, a cond's two branches) is lowered like any graph
(``plan.lower``); its groups are rendered as fused ``@njit`` functions (``cpu.render``), and one
more ``@njit`` function runs the ``while`` / ``if`` itself, calling those group functions -- and
the kernels of control flow nested in the part -- directly.  A node whose parts hold anything
else (opaque ops, stateful ops, variables, values of unknown shape) is left to its kernel, which
runs the parts node by node.
"""
import numpy as np

from hybridtf.compiler import fold as fold_lib
from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler import render as render_lib
from hybridtf.compiler.cpu.render import RENDERER


class ControlFlowKernel:
    """A rendered loop or branch: the kernels it calls, its own kernel, what the driver passes.

    The kernel takes the node's inputs followed by ``captured`` (arrays the parts closed over)
    and returns the node's outputs as a tuple.
    """

    def __init__(self, kernels, kernel, captured):
        self.kernels = kernels
        self.kernel = kernel
        self.captured = captured


def render(node):
    """The ``ControlFlowKernel`` of a pure while loop or two-branch conditional (an op declaring
    ``control_flow`` "while" or "cond"), or None.  A stateful one (assignments, random draws,
    Python callbacks inside) runs on its kernel, in program order."""
    if node.op.stateful:
        return None
    if node.op.control_flow == "while":
        return _render_while(node)
    if node.op.control_flow == "cond":
        return _render_cond(node)
    return None


class _Part:
    """Renders the statements of one part (a subgraph) inside a kernel being built."""

    def __init__(self, kernels, captured):
        self.kernels = kernels      # group / nested kernels the kernel calls (shared list)
        self.captured = captured    # arrays passed after the node's inputs (shared list)

    def statements(self, graph, input_names, outer_names):
        """(source lines, names of the part's outputs), or None if the part does not compile.

        input_names: the kernel's names for the part's inputs; outer_names: for each of its
        outer inputs (values of the enclosing graph).
        """
        if graph.variables or any(node.op.stateful for node in graph.nodes):
            return None
        names = {}
        for placeholder, name in zip(graph.inputs, input_names):
            names[id(placeholder)] = name
        for (_, placeholder), name in zip(graph.outer_inputs, outer_names):
            names[id(placeholder)] = name
        for tensor, placeholder in graph.captures:
            names[id(placeholder)] = f"k{len(self.captured)}"
            self.captured.append(np.asarray(tensor._value))
        constants = fold_lib.small_constants(graph)
        lines = []
        for kind, item in plan_lib.lower(graph).items:
            if kind == "group":
                if not item.outputs:
                    continue
                kernel = RENDERER.render(item, constants)
                args = [names[id(t)] + ("[()]" if scalar else "")
                        for t, scalar in zip(kernel.args, kernel.scalar_args)]
                for array in render_lib.pack_arrays(kernel, constants):
                    args.append(f"k{len(self.captured)}")
                    self.captured.append(array)
                outputs = kernel.outputs
            else:
                nested = render(item)
                if nested is None:
                    return None
                self.kernels.extend(nested.kernels)
                kernel = nested.kernel
                args = [names[id(t)] for t in item.inputs]
                for array in nested.captured:
                    args.append(f"k{len(self.captured)}")
                    self.captured.append(array)
                outputs = list(item.outputs)
            self.kernels.append(kernel)
            outs = []
            for t in outputs:
                names[id(t)] = f"t{len(names)}"
                outs.append(names[id(t)])
            call = f"{kernel.name}({', '.join(args)})"
            if kind == "group" and len(outs) == 1:
                lines.append(f"{outs[0]} = {call}")
            else:
                lines.append(f"{''.join(o + ', ' for o in outs)}= {call}")
        return lines, [names[id(t)] for t in graph.outputs]


def _kernel(prefix, params, lines, node, kernels, captured):
    params = params + [f"k{n}" for n in range(len(captured))]
    name, source = RENDERER.function(prefix, ", ".join(params), lines)
    kernel = render_lib.Kernel(name, source, list(node.inputs), [False] * len(node.inputs),
                               list(node.outputs), [])
    kernel.control_flow = True   # compiled through its caller: never run on dummy values
    return ControlFlowKernel(kernels, kernel, captured)


def _render_while(node):
    attrs = node.attrs
    n_state = attrs["n_state"]
    n_outer = len(node.inputs) - n_state
    state = [f"s{i}" for i in range(n_state)]
    outer = [f"u{j}" for j in range(n_outer)]
    kernels, captured = [], []
    part = _Part(kernels, captured)
    cond = part.statements(attrs["cond"], state, [outer[i] for i in attrs["cond_map"]])
    body = part.statements(attrs["body"], state, [outer[i] for i in attrs["body_map"]])
    if cond is None or body is None:
        return None
    (cond_lines, (test,)), (body_lines, new_state) = cond, body
    limit = attrs["maximum_iterations"]
    lines = ["    iterations = 0"] if limit is not None else []
    lines.append(f"    while {'iterations < ' + str(int(limit)) if limit is not None else 'True'}:")
    lines += ["        " + line for line in cond_lines]
    lines.append(f"        if not {test}[()]:")
    lines.append("            break")
    lines += ["        " + line for line in body_lines]
    if n_state:
        lines.append("        " + "".join(s + ", " for s in state) + "= "
                     + "".join(v + ", " for v in new_state))
    if limit is not None:
        lines.append("        iterations += 1")
    lines.append("    return (" + "".join(s + ", " for s in state) + ")")
    return _kernel("loop", state + outer, lines, node, kernels, captured)


def _render_cond(node):
    attrs = node.attrs
    outer = [f"u{j}" for j in range(len(node.inputs) - 1)]
    kernels, captured = [], []
    part = _Part(kernels, captured)
    branches = [part.statements(graph, [], [outer[i] for i in positions])
                for graph, positions in zip(attrs["branches"], attrs["maps"])]
    if None in branches:
        return None
    lines = []
    for keyword, (branch_lines, results) in zip(("if p[()]:", "else:"), branches):
        lines.append("    " + keyword)
        lines += ["        " + line for line in branch_lines]
        lines.append("        return (" + "".join(r + ", " for r in results) + ")")
    return _kernel("branch", ["p"] + outer, lines, node, kernels, captured)
