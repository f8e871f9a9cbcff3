"""``ConcreteFunction`` <-> JSON-able description.

A concrete function is its graph (an index into the graph table) plus what calling it needs:
the Python signature it was traced with (parameter names, kinds and defaults), the argument
template (tensor arguments as TensorSpecs, Python arguments as their traced values), one
TensorSpec per graph input, and the structure of its result (tensor outputs marked by position,
Python values kept as they were returned).
"""
import inspect

from hybridtf.framework import nest
from hybridtf.polymorphic_function import _TENSOR_OUTPUT, ConcreteFunction
from hybridtf.registry.python_ops import TensorSlot
from hybridtf.saved_model import values
from hybridtf.saved_model.graph_serialization import UnsavableGraphError

_PARAMETER_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY,
                    inspect.Parameter.VAR_KEYWORD)


def _no_graphs(value):
    return None


def serialise_concrete(concrete, graph_writer, store_array):
    name = concrete.name
    graph_writer.function_name = name

    def enc(value, what):
        try:
            return values.encode(value, store_array, _no_graphs)
        except values.UnsavableValueError as err:
            raise UnsavableGraphError(
                f"tf.saved_model.save: function {name!r} {what} {err}, which cannot be saved; "
                "only tensors, TensorSpecs and plain Python values (numbers, strings, None, "
                "lists, tuples, dicts) can be.") from None

    parameters = []
    for p in concrete._signature.parameters.values():
        item = {"name": p.name, "kind": _PARAMETER_KINDS.index(p.kind)}
        if p.default is not inspect.Parameter.empty:
            item["default"] = enc(p.default, f"has a default for argument {p.name!r} =")
        parameters.append(item)
    template = concrete._arg_template
    arguments = [[key, enc(value, f"was traced with argument {key!r} =")]
                 for key, value in template.arguments.items()]
    graph = concrete.graph
    flat = nest.flatten(graph.structured_outputs)
    marked = []
    position = 0
    for leaf, kind in zip(flat, graph.output_leaves):
        if kind is _TENSOR_OUTPUT:
            marked.append(TensorSlot(position))
            position += 1
        else:
            marked.append(kind)
    structure = nest.pack_sequence_as(graph.structured_outputs, marked)
    return {
        "name": name,
        "graph": graph_writer.add(graph),
        "parameters": parameters,
        "arguments": arguments,
        "input_specs": [values.encode_spec(s) for s in concrete._input_specs],
        "outputs": enc(structure, "returns"),
    }


def deserialise_concrete(data, graph_reader, load_array):
    def dec(value):
        return values.decode(value, load_array, _no_graph_refs)

    graph = graph_reader.graph(data["graph"])
    parameters = []
    for item in data["parameters"]:
        default = dec(item["default"]) if "default" in item else inspect.Parameter.empty
        parameters.append(inspect.Parameter(item["name"], _PARAMETER_KINDS[item["kind"]],
                                            default=default))
    signature = inspect.Signature(parameters)
    template = inspect.BoundArguments(signature, {key: dec(value)
                                                  for key, value in data["arguments"]})
    input_specs = [values.decode_spec(s) for s in data["input_specs"]]
    if len(input_specs) != len(graph.inputs):
        raise ValueError(f"function {data['name']!r} has {len(input_specs)} input specs for "
                         f"{len(graph.inputs)} graph inputs")
    structure = dec(data["outputs"])
    leaves = []
    kinds = []
    for leaf in nest.flatten(structure):
        if isinstance(leaf, TensorSlot):
            leaves.append(graph.outputs[leaf.index])
            kinds.append(_TENSOR_OUTPUT)
        else:
            leaves.append(leaf)
            kinds.append(leaf)
    graph.output_leaves = kinds
    graph.structured_outputs = nest.pack_sequence_as(structure, leaves)
    return ConcreteFunction(data["name"], graph, signature, template, input_specs)


def _no_graph_refs(index):
    raise ValueError("a function's arguments cannot refer to graphs")
