"""Control-flow ops: a two-branch conditional and a while loop over traced subgraphs.

Each branch / loop part is a FuncGraph nested in the graph being traced.  The node's inputs are
the predicate or loop variables followed by every value of the enclosing graph the subgraphs
use; ``attrs`` carry the subgraphs and which inputs each one takes.  A node whose subgraphs
contain stateful ops (prints, assignments, random draws) is itself stateful, so it runs in
program order and is never pruned.
"""
import numpy as np

from hybridtf.registry import OpDef, Spec, checks, register
from hybridtf.registry.public_ops import control_flow_ops as CFO


def _cond_eager(arrays, attrs):
    branch = 0 if bool(np.asarray(arrays[0])) else 1
    outer = [arrays[1 + i] for i in attrs["maps"][branch]]
    return tuple(attrs["branches"][branch].run_subgraph(outer,
                                                        call_index=attrs.get("call_index", 0)))


def _cond_infer(specs, attrs):
    return [Spec(s.shape, s.dtype) for s in attrs["output_specs"]]


def _cond_grad(record, grads):
    return CFO.cond_gradient(record, grads)


# Control flow runs its subgraphs' nodes, each quiet on its own (see registry.opdef): a
# py_function inside a branch or loop keeps the user's NumPy settings.
def _cond(name, stateful):
    return register(OpDef(name, "control_flow", {"cpu": _cond_eager}, _cond_infer, _cond_grad,
                          num_outputs=None, stateful=stateful, quiet_fp=False,
                          subgraphs=("branches",), control_flow="cond"))


COND = _cond("cond", stateful=False)
STATEFUL_COND = _cond("stateful_cond", stateful=True)


def run_loop(attrs, state, outer, record_states=None):
    """Runs a while loop on arrays; ``record_states`` (a list) receives every iteration's input
    state, which is what the gradient replays."""
    cond_graph, body_graph = attrs["cond"], attrs["body"]
    cond_outer = [outer[i] for i in attrs["cond_map"]]
    body_outer = [outer[i] for i in attrs["body_map"]]
    limit = attrs["maximum_iterations"]
    call_index = attrs.get("call_index", 0)
    iterations = 0
    while limit is None or iterations < limit:
        keep_going, = cond_graph.run_subgraph(cond_outer, state, call_index)
        if not bool(np.asarray(keep_going)):
            break
        if record_states is not None:
            record_states.append(state)
        new_state = body_graph.run_subgraph(body_outer, state, call_index)
        for i, (old, new) in enumerate(zip(state, new_state)):
            old, new = np.asarray(old), np.asarray(new)
            if old.dtype != new.dtype or old.ndim != new.ndim:
                checks.fail("while_loop", f"loop variable {i} changed from {old.dtype} of rank "
                            f"{old.ndim} to {new.dtype} of rank {new.ndim} in an iteration.")
        state = new_state
        iterations += 1
    return state


def _while_eager(arrays, attrs):
    n = attrs["n_state"]
    return tuple(run_loop(attrs, list(arrays[:n]), list(arrays[n:])))


def _while_infer(specs, attrs):
    return [Spec(s.shape, s.dtype) for s in attrs["state_specs"]]


def _while_grad(record, grads):
    return CFO.while_gradient(record, grads)


def _while(name, stateful):
    return register(OpDef(name, "control_flow", {"cpu": _while_eager}, _while_infer,
                          _while_grad, num_outputs=None, stateful=stateful, quiet_fp=False,
                          subgraphs=("cond", "body"), control_flow="while"))


WHILE = _while("while_loop", stateful=False)
STATEFUL_WHILE = _while("stateful_while_loop", stateful=True)


def _while_grad_eager(arrays, attrs):
    """Replays the loop forward, keeping each iteration's state, then runs the body's
    vector-Jacobian product backwards through the iterations."""
    n, n_outer = attrs["n_state"], attrs["n_outer"]
    state = list(arrays[:n])
    outer = list(arrays[n:n + n_outer])
    grads = list(arrays[n + n_outer:])
    states = []
    run_loop(attrs, state, outer, record_states=states)
    body_outer = [outer[i] for i in attrs["body_map"]]
    outer_grads = [np.zeros(np.shape(outer[i]), np.asarray(outer[i]).dtype)
                   for i in attrs["body_map"]]
    vjp = attrs["body_vjp"]
    for past in reversed(states):
        result = vjp.run_subgraph((), list(past) + body_outer + grads)
        grads = list(result[:n])
        outer_grads = [a + b for a, b in zip(outer_grads, result[n:])]
    full_outer = [np.zeros(np.shape(o), np.asarray(o).dtype) for o in outer]
    for position, g in zip(attrs["body_map"], outer_grads):
        full_outer[position] = full_outer[position] + g
    return tuple(grads) + tuple(full_outer)


WHILE_GRAD = register(OpDef(
    "while_loop_grad", "control_flow", {"cpu": _while_grad_eager},
    lambda specs, attrs: [Spec(s.shape, s.dtype) for s in specs[:attrs["n_state"] +
                                                                attrs["n_outer"]]],
    num_outputs=None, subgraphs=("cond", "body", "body_vjp")))
