"""``FuncGraph`` <-> JSON-able description.

A graph is written as its placeholders (inputs, captured constants, variables read, values of
an enclosing graph), its nodes in program order (op name from the registry, input references,
attributes, output shapes and dtypes), its outputs and the variables it assigns.  A tensor
reference is a short list naming where the tensor comes from in its own graph: ``["in", i]``,
``["cap", i]``, ``["var", i]``, ``["outer", i]`` or ``["node", node, output]``.  Captured
constants and array attributes go to the array store; variables are indices into the SavedModel's
variable list; the branch and loop graphs of control-flow nodes go to a graph table shared by all
functions (a graph used by two nodes, e.g. a loop and its gradient, is written once).
"""
import numpy as np

from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor
from hybridtf.graph.func_graph import FuncGraph, GraphTensor, Node
from hybridtf.registry import OPS
from hybridtf.registry.python_ops import TensorSlot
from hybridtf.saved_model import values

# Ops that call arbitrary Python when they run: their graphs cannot be saved.
_PYTHON_CALLBACK_OPS = {"py_function"}


class UnsavableGraphError(ValueError):
    """A traced function holds something a SavedModel cannot store (e.g. tf.py_function)."""


class CorruptGraphError(ValueError):
    """A saved graph description that does not make sense (a damaged SavedModel)."""


# ---- saving --------------------------------------------------------------------------------------
class GraphWriter:
    """Serialises graphs into a shared table.

    ``variable_index(variable) -> int`` numbers variables; ``store_array(ndarray) -> key``
    keeps arrays; ``function_name`` is used in error messages.
    """

    def __init__(self, variable_index, store_array):
        self._variable_index = variable_index
        self._store_array = store_array
        self._index = {}          # id(FuncGraph) -> table index
        self._keep = []           # keeps serialised graphs alive so ids stay unique
        self.table = []
        self.function_name = None

    def add(self, graph):
        """The table index of ``graph``, serialising it (and its subgraphs) on first use."""
        found = self._index.get(id(graph))
        if found is not None:
            return found
        index = len(self.table)
        self._index[id(graph)] = index
        self._keep.append(graph)
        self.table.append(None)
        self.table[index] = self._serialise(graph)
        return index

    def _serialise(self, graph):
        refs = {}
        for i, t in enumerate(graph.inputs):
            refs[id(t)] = ["in", i]
        for i, (_, ph) in enumerate(graph.captures):
            refs[id(ph)] = ["cap", i]
        for i, (_, ph) in enumerate(graph.variables):
            refs[id(ph)] = ["var", i]
        for i, (_, ph) in enumerate(graph.outer_inputs):
            refs[id(ph)] = ["outer", i]
        nodes = []
        for j, node in enumerate(graph.nodes):
            nodes.append(self._node(graph, node, refs))
            for k, t in enumerate(node.outputs):
                refs[id(t)] = ["node", j, k]

        def ref(tensor, what):
            found = refs.get(id(tensor))
            if found is None:
                raise UnsavableGraphError(
                    f"{self._context()}: {what} {tensor!r} of graph {graph.name!r} is not "
                    "computed in that graph; the traced graph is inconsistent.")
            return found

        return {
            "name": graph.name,
            "inputs": [_tensor_spec(t) | {"label": _label(t)} for t in graph.inputs],
            "captures": [self._capture(tensor) for tensor, _ in graph.captures],
            "variables": [self._variable_index(v) for v, _ in graph.variables],
            "outer_inputs": [_tensor_spec(ph) for _, ph in graph.outer_inputs],
            "nodes": nodes,
            "outputs": [ref(t, "output") for t in graph.outputs],
            "variable_values": [[self._variable_index(graph_variable(graph, key)),
                                 ref(t, "variable value")]
                                for key, t in graph._variable_values.items()],
            "initial_values": [[self._variable_index(v), ref(t, "variable value")]
                               for v, t in graph._initial_values.values()],
        }

    def _capture(self, tensor):
        """A captured constant: numbers go to the array store, strings inline."""
        array = np.asarray(tensor._value)
        if array.dtype.hasobject:
            return values.encode_strings(array)
        return {"key": self._store_array(array)}

    def _node(self, graph, node, refs):
        op = node.op
        if op.name in _PYTHON_CALLBACK_OPS:
            func = (node.attrs or {}).get("func")
            raise UnsavableGraphError(
                f"{self._context()} uses tf.py_function (op {op.name!r}"
                f"{', calling ' + getattr(func, '__name__', repr(func)) if func else ''}), which "
                "runs arbitrary Python and cannot be saved in a SavedModel (TF cannot save it "
                "either). Rewrite it with TensorFlow ops, or save only the variables with "
                "save_weights / tf.train.Checkpoint-style files.")
        inputs = []
        for t in node.inputs:
            found = refs.get(id(t))
            if found is None:
                raise UnsavableGraphError(
                    f"{self._context()}: input {t!r} of op {op.name!r} in graph "
                    f"{graph.name!r} is not computed in that graph; the traced graph is "
                    "inconsistent.")
            inputs.append(found)
        return {"op": op.name, "inputs": inputs, "attrs": self._attrs(node),
                "outputs": [_tensor_spec(t) for t in node.outputs]}

    def _attrs(self, node):
        attrs = node.attrs
        if attrs is None:
            return None
        encoded = {}
        for key, value in attrs.items():
            if key.startswith("_"):
                continue    # caches kept on the attrs (e.g. a loop's gradient graph)
            if node.op.name == "print" and key == "template":
                value = _printable_template(value)
            try:
                encoded[key] = values.encode(value, self._store_array, self._subgraph)
            except values.UnsavableValueError as err:
                raise UnsavableGraphError(
                    f"{self._context()}: op {node.op.name!r} has attribute {key!r} = {err}, "
                    "which cannot be saved in a SavedModel.") from None
        return encoded

    def _subgraph(self, value):
        if isinstance(value, FuncGraph):
            return self.add(value)
        return None

    def _context(self):
        return f"tf.saved_model.save: function {self.function_name!r}"


def graph_variable(graph, key):
    """The variable whose id is ``key`` in ``graph._variable_values``."""
    for v, _ in graph.variables:
        if id(v) == key:
            return v
    found = graph._initial_values.get(key)
    if found is not None:
        return found[0]
    raise UnsavableGraphError(f"graph {graph.name!r} tracks the value of a variable it neither "
                              "reads nor receives; the traced graph is inconsistent.")


def _printable_template(template):
    """tf.print formats Python values in its template with ``str``: storing that text instead
    of the objects prints exactly the same and makes any template savable."""
    def leaf(value):
        if isinstance(value, TensorSlot) or type(value) in (str, int, float, bool, type(None)):
            return value
        return str(value)
    return nest.map_structure(leaf, template)


def _tensor_spec(t):
    shape = t._static_shape
    return {"shape": None if shape is None else [None if d is None else int(d) for d in shape],
            "dtype": np.dtype(t._static_dtype).name}


def _label(t):
    return t.name.rsplit(":", 1)[0]


# ---- loading -------------------------------------------------------------------------------------
class GraphReader:
    """Rebuilds graphs from a table written by ``GraphWriter``.

    ``variables`` is the list of restored variables; ``load_array(key)`` returns a stored array.
    """

    def __init__(self, table, variables, load_array):
        self._table = table
        self._variables = variables
        self._load_array = load_array
        self._built = {}
        self._building = set()

    def graph(self, index, parent=None):
        """The FuncGraph at ``index`` (built once; ``parent`` is the graph holding the node
        that uses it, for branch and loop graphs)."""
        found = self._built.get(index)
        if found is not None:
            return found
        if not isinstance(index, int) or not 0 <= index < len(self._table) \
                or index in self._building:
            raise CorruptGraphError(f"graph reference {index!r} is invalid")
        self._building.add(index)
        try:
            graph = self._build(self._table[index], parent)
        except (KeyError, IndexError, TypeError, ValueError) as err:
            if isinstance(err, CorruptGraphError):
                raise
            raise CorruptGraphError(f"graph #{index} cannot be rebuilt "
                                    f"({type(err).__name__}: {err})") from None
        finally:
            self._building.discard(index)
        self._built[index] = graph
        return graph

    def _variable(self, index):
        if not isinstance(index, int) or not 0 <= index < len(self._variables):
            raise CorruptGraphError(f"variable reference {index!r} is invalid")
        return self._variables[index]

    def _build(self, data, parent):
        graph = FuncGraph(data["name"], parent=parent)
        for spec in data["inputs"]:
            graph.placeholder(_shape(spec), np.dtype(spec["dtype"]), spec["label"])
        for capture in data["captures"]:
            tensor = Tensor(values.decode_strings(capture) if "$" in capture
                            else self._load_array(capture["key"]))
            array = tensor._value
            ph = graph._tensor(None, None, array.shape, array.dtype, "capture")
            graph.captures.append((tensor, ph))
            graph._captured[id(tensor)] = ph
        for index in data["variables"]:
            variable = self._variable(index)
            ph = graph._tensor(None, None, tuple(variable.shape), variable._value.dtype,
                               variable.name.split(":")[0] + "/read")
            graph.variables.append((variable, ph))
        for spec in data["outer_inputs"]:
            shape, dtype = _shape(spec), np.dtype(spec["dtype"])
            # Stands for the enclosing graph's tensor: at run time only the position matters.
            source = GraphTensor(parent, None, None, shape, dtype, "outer_source")
            ph = graph._tensor(None, None, shape, dtype, "outer")
            graph.outer_inputs.append((source, ph))
            graph._outer[id(source)] = ph

        tensors = {}
        for i, t in enumerate(graph.inputs):
            tensors[("in", i)] = t
        for i, (_, ph) in enumerate(graph.captures):
            tensors[("cap", i)] = ph
        for i, (_, ph) in enumerate(graph.variables):
            tensors[("var", i)] = ph
        for i, (_, ph) in enumerate(graph.outer_inputs):
            tensors[("outer", i)] = ph

        def resolve(ref):
            found = tensors.get(tuple(ref))
            if found is None:
                raise CorruptGraphError(f"tensor reference {ref!r} in graph {data['name']!r} "
                                        "is invalid")
            return found

        for j, item in enumerate(data["nodes"]):
            op = OPS.get(item["op"])
            if op is None:
                raise CorruptGraphError(f"graph {data['name']!r} uses op {item['op']!r}, which "
                                        "this hybridtf does not have; load the SavedModel with "
                                        "the hybridtf version that wrote it")
            attrs = item["attrs"]
            if attrs is not None:
                attrs = {key: values.decode(value, self._load_array,
                                            lambda i, g=graph: self.graph(i, g))
                         for key, value in attrs.items()}
            node = Node(op, [resolve(r) for r in item["inputs"]], attrs)
            node.outputs = tuple(graph._tensor(node, k, _shape(spec), np.dtype(spec["dtype"]),
                                               op.name)
                                 for k, spec in enumerate(item["outputs"]))
            graph.nodes.append(node)
            for k, t in enumerate(node.outputs):
                tensors[("node", j, k)] = t

        graph.outputs = [resolve(r) for r in data["outputs"]]
        for index, ref in data["initial_values"]:
            variable = self._variable(index)
            graph._initial_values[id(variable)] = (variable, resolve(ref))
        for index, ref in data["variable_values"]:
            graph._variable_values[id(self._variable(index))] = resolve(ref)
        return graph


def _shape(spec):
    shape = spec["shape"]
    return None if shape is None else tuple(shape)
