"""Dataset ops inside traced functions: a loop over a dataset's elements, and the next element
of an iterator.

``dataset_loop`` is a control-flow node like ``while_loop``: its inputs are the loop state
followed by the values of the enclosing graph its parts use, and its attrs carry the body graph
(taking an element's components, then the state), an optional condition graph (taking the
state: false ends the loop early, after a ``break``), ``elements``, which starts the pass to
iterate -- a new pass of the dataset on every run (so a shuffled dataset is reshuffled), or the
rest of an iterator's pass -- and optionally ``run_body`` / ``run_cond``, compiled runners of
the parts (the interpreter runs them otherwise).  Both ops are stateful: they run in program
order on every call.
"""
import numpy as np

from hybridtf.framework.errors import OutOfRangeError
from hybridtf.registry import OpDef, Spec, register

# Iteration k of call c runs the body with call index (c << ITERATION_BITS) + k, so the random
# ops in the body draw new values in each iteration.
ITERATION_BITS = 24


def _runner(attrs, part):
    """``run(outer, inputs, call_index)`` of a loop part: the compiled runner the loop was built
    with (``attrs["run_" + part]``), else the part's graph, interpreted."""
    run = attrs.get("run_" + part)
    if run is not None:
        return run
    graph = attrs[part]
    return graph.run_subgraph


def _loop_eager(arrays, attrs):
    n = attrs["n_state"]
    state = list(arrays[:n])
    outer = list(arrays[n:])
    body_outer = [outer[i] for i in attrs["body_map"]]
    test_outer = [outer[i] for i in attrs["cond_map"]]
    run_body = _runner(attrs, "body")
    run_test = _runner(attrs, "cond") if attrs["cond"] is not None else None
    call_index = attrs.get("call_index", 0) << ITERATION_BITS
    elements = attrs["elements"]()
    try:
        iteration = 0
        while True:
            if run_test is not None:
                keep_going, = run_test(test_outer, state, call_index)
                if not bool(np.asarray(keep_going)):
                    break
            element = next(elements, None)
            if element is None:
                break
            state = list(run_body(body_outer, list(element) + state, call_index + iteration))
            iteration += 1
    finally:
        close = getattr(elements, "close", None)
        if close is not None:
            close()   # a loop left early ends its pass (and the pass's background work)
    return tuple(state)


def _loop_infer(specs, attrs):
    return [Spec(s.shape, s.dtype) for s in attrs["state_specs"]]


DATASET_LOOP = register(OpDef("dataset_loop", "control_flow", {"cpu": _loop_eager}, _loop_infer,
                              num_outputs=None, stateful=True, subgraphs=("body", "cond")))


def _next_eager(arrays, attrs):
    element = attrs["next_element"]()
    if element is None:
        raise OutOfRangeError(None, "iterator_get_next", "End of sequence")
    return tuple(element)


def _next_infer(specs, attrs):
    return [Spec(s.shape, s.dtype) for s in attrs["output_specs"]]


ITERATOR_GET_NEXT = register(OpDef("iterator_get_next", "opaque", {"cpu": _next_eager},
                                   _next_infer, num_outputs=None, stateful=True))
