"""``tf.py_function``: call a Python function on tensors, every time the graph runs."""
from hybridtf.eager.execute import as_tensor, execute
from hybridtf.framework import nest
from hybridtf.graph import func_graph
from hybridtf.registry.python_ops import PY_FUNCTION


def py_function(func, inp, Tout, name=None):  # noqa: N803 - TF's argument name
    """Runs ``func`` on eager tensors made from ``inp``; returns tensors of dtypes ``Tout``.

    Eagerly it is a plain call; inside a traced function it runs on every call of the
    function, in program order.
    """
    inputs = [as_tensor(x) for x in (inp or [])]
    if func_graph.current() is None and all(type(t).__name__ == "Tensor" for t in inputs):
        result = func(*inputs)
        if Tout is None or (isinstance(Tout, (list, tuple)) and not Tout):
            return [] if isinstance(Tout, (list, tuple)) else None
        if isinstance(Tout, (list, tuple)):
            return [as_tensor(r, dtype=d) if r is not None else None
                    for r, d in zip(nest.flatten(result), Tout)]
        return as_tensor(result, dtype=Tout)
    outputs = execute(PY_FUNCTION, inputs, {"func": func, "Tout": Tout})
    if Tout is None or (isinstance(Tout, (list, tuple)) and not Tout):
        return [] if isinstance(Tout, (list, tuple)) else None
    return list(outputs) if isinstance(Tout, (list, tuple)) else outputs[0]
