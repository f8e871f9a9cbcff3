"""User functions of a pipeline (``map``, ``filter``), traced once into a graph as TF traces them.

The function is traced (with AutoGraph) when the transformation is created, on symbolic
tensors of the element's structure, so its Python side effects happen once; each element then
runs the compiled graph.  A tuple element is passed as positional arguments, anything else as
one argument; a list returned is a tuple, and every returned value becomes a tensor.
"""
import collections.abc
import itertools

import numpy as np

from hybridtf.autograph import operators as autograph_operators
from hybridtf.data import structure as st
from hybridtf.framework import devices, nest
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.eager import tape as tape_lib
from hybridtf.graph import func_graph
from hybridtf.graph.func_graph import FuncGraph
from hybridtf.polymorphic_function import Function


def call_with_element(fn, element):
    """``fn(*element)`` for a tuple element, else ``fn(element)`` (TF's unpacking rule)."""
    if type(element) is tuple:
        return fn(*element)
    return fn(element)


def _as_output(value, who):
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple):
        items = [_as_output(v, who) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, collections.abc.Mapping):
        result = {k: _as_output(v, who) for k, v in value.items()}
        try:
            return type(value)(result)
        except TypeError:
            return result
    if st.is_dataset(value):
        raise TypeError(f"{who}: the function returned a dataset; use flat_map for functions "
                        "that return datasets.")
    if value is None:
        raise TypeError(f"{who}: the function returned None; it must return tensors (or "
                        "tuples/dicts of them).")
    if getattr(value, "_is_variable", False):
        return value.value()
    if isinstance(value, Tensor):
        return value
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{who}: the function returned {value!r}, which is not convertible to "
                        f"a tensor ({err}).") from None


class StructuredFunction:
    """A user function on dataset elements, traced once for the input ``structure``."""

    def __init__(self, func, structure, who):
        if not callable(func):
            raise TypeError(f"{who}: expected a callable, got {func!r}.")
        if st.has_datasets(structure):
            raise TypeError(f"{who}: elements that contain datasets (from window) cannot be "
                            "passed to a traced function; use flat_map.")
        self.who = who
        self.input_structure = structure

        def traced(element):
            # The user's function is converted by AutoGraph (the trace runs with it on).
            return _as_output(call_with_element(
                autograph_operators.convert_in_context(func), element), who)
        traced.__name__ = getattr(func, "__name__", "function").replace("<lambda>", "lambda")
        self._calls = itertools.count()
        if st.discovering_now():
            # Inside flat_map's structure discovery the function may use the symbolic values
            # it is traced on: only the structure of what it returns is learnt.
            self.concrete = None
            self.output_structure = _output_structure(traced, structure, who)
            return
        function = Function(traced, name=f"{who}_{traced.__name__}",
                            input_signature=[structure])
        with devices.device("/CPU:0"):   # input pipelines run on the host, as in TF
            self.concrete = function.get_concrete_function()
        graph = self.concrete.graph
        self.output_structure = nest.pack_sequence_as(
            graph.structured_outputs,
            [TensorSpec(t.shape, t.dtype) for t in graph.outputs])

    def __call__(self, flat):
        """The function's outputs (flat arrays) for one element given as flat arrays."""
        if self.concrete is None:
            raise st.symbolic_dataset_error(self.who)
        return self.concrete._compiled_run()(list(flat), next(self._calls))


def _output_structure(traced, structure, who):
    """The specs of what ``traced`` returns for symbolic elements of ``structure``, traced in a
    scratch graph nested in the current one (so it may use that graph's values)."""
    graph = FuncGraph(f"{who}_structure", parent=func_graph.current())
    with tape_lib.stop_recording(), func_graph.building(graph):
        element = nest.pack_sequence_as(structure, [
            graph.placeholder(spec.shape.dims, spec.dtype.as_numpy_dtype, "element")
            for spec in nest.flatten(structure)])
        result = traced(element)
    return nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), result)


def check_predicate(function):
    """A filter predicate must return one scalar bool tensor."""
    out = function.output_structure
    if nest.is_nested(out) or out.dtype.name != "bool" or out.shape.rank != 0:
        raise ValueError(f"Invalid `predicate`. `predicate` must return a `tf.bool` scalar "
                         f"tensor, but its return type is {out!r}.")


def truth(value):
    return bool(np.asarray(value))
