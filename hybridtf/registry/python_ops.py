"""Ops that call back into Python when they run: ``tf.print`` and ``tf.py_function``.

Both are stateful: inside a traced function they run on every call, in program order.
"""
import numpy as np

from hybridtf.framework import dtypes, nest
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import OpDef, Spec, register
from hybridtf.registry.public_ops import logging_ops as LO


class TensorSlot:
    """Marks where the n-th tensor input goes in a print template."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _print_eager(arrays, attrs):
    values = [Tensor(a) for a in arrays]
    inputs = nest.map_structure(
        lambda leaf: values[leaf.index] if isinstance(leaf, TensorSlot) else leaf,
        list(attrs["template"]))
    LO.write(inputs, attrs["output_stream"], attrs["summarize"], attrs["sep"], attrs["end"])
    return ()


PRINT = register(OpDef("print", "opaque", {"cpu": _print_eager}, lambda specs, attrs: [],
                       num_outputs=0, stateful=True))


def _py_function_eager(arrays, attrs):
    result = attrs["func"](*[Tensor(a) for a in arrays])
    touts = attrs["Tout"]
    if touts is None or (isinstance(touts, (list, tuple)) and not touts):
        return ()
    flat = result if isinstance(touts, (list, tuple)) else [result]
    if not isinstance(flat, (list, tuple)) or len(flat) != len(nest.flatten(touts)):
        raise ValueError(f"py_function: {attrs['func'].__name__} returned {result!r}, which does "
                         f"not match Tout={touts!r}.")
    out = []
    for value, dtype in zip(flat, nest.flatten(touts)):
        array = np.asarray(value)
        out.append(array.astype(dtypes.as_dtype(dtype).as_numpy_dtype))
    return tuple(out)


def _py_function_infer(specs, attrs):
    touts = attrs["Tout"]
    if touts is None:
        return []
    return [Spec(None, dtypes.as_dtype(d).as_numpy_dtype) for d in nest.flatten(touts)]


PY_FUNCTION = register(OpDef("py_function", "opaque", {"cpu": _py_function_eager},
                             _py_function_infer, num_outputs=None, stateful=True, quiet_fp=False))
