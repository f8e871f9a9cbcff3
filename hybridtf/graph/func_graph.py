"""``FuncGraph``: the graph a traced function builds, and ``GraphTensor``, its symbolic tensors.

While a function is traced, ops whose inputs include a ``GraphTensor`` (and stateful ops, and
variable reads) add a ``Node`` to the current graph instead of computing.  Pure ops on eager
values are computed at once and enter the graph as constants (constant folding).  Nodes are kept
in program order, which is the order stateful ops (assignments, prints, random draws, Python
callbacks) run in.
"""
import itertools

import numpy as np

from hybridtf.framework import context, devices, dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.graph import interpreter


class GraphTensor(Tensor):
    """A symbolic tensor: the output ``index`` of ``node`` (or a graph input) in ``graph``.

    It has a dtype and a possibly partial shape but no value; asking for one (``numpy()``,
    ``bool()``, ``float()``) is an error, as for TF's graph tensors.
    """

    __slots__ = ("graph", "node", "index", "_static_shape", "_static_dtype", "_name")

    def __init__(self, graph, node, index, shape, dtype, name):
        self._value = None
        self.graph = graph
        self.node = node
        self.index = index
        self._static_shape = tuple(shape) if shape is not None else None
        self._static_dtype = np.dtype(dtype)
        self._name = name

    @property
    def dtype(self):
        return dtypes.of_array(np.empty(0, self._static_dtype)) \
            if self._static_dtype != object else dtypes.string

    @property
    def shape(self):
        return TensorShape(self._static_shape)

    @property
    def _shape_tuple(self):
        return self._static_shape

    def set_shape(self, shape):
        """Refines the static shape with dimensions the caller knows (TF's ``set_shape``,
        e.g. after ``tf.py_function`` or ``decode_image`` in ``Dataset.map``); ValueError when
        ``shape`` contradicts what is already known."""
        super().set_shape(shape)
        merged = self.shape.merge_with(TensorShape(shape))
        self._static_shape = None if merged.rank is None else tuple(merged.as_list())

    @property
    def _np_dtype(self):
        return self._static_dtype

    @property
    def ndim(self):
        return None if self._static_shape is None else len(self._static_shape)

    @property
    def name(self):
        return self._name

    @property
    def device(self):
        """The device the traced graph runs on."""
        return self.graph.device

    def numpy(self):
        raise TypeError(f"Tensor {self._name!r} is symbolic (inside a traced hybridtf.function) "
                        "and has no value yet; return it from the function, or use tf.print to "
                        "print it at run time.")

    def _no_python_value(self, what):
        raise TypeError(f"Using a symbolic tf.Tensor ({self._name}) as a Python {what} is not "
                        "allowed inside a traced hybridtf.function: its value is only known when "
                        "the graph runs. Use tf.cond / tf.while_loop, or compare Python values.")

    def __bool__(self):
        self._no_python_value("bool")

    def __float__(self):
        self._no_python_value("float")

    def __int__(self):
        self._no_python_value("int")

    def __index__(self):
        self._no_python_value("index")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert a symbolic tf.Tensor ({self._name}) to a NumPy array: "
                        "it only has a value when the traced function runs.")

    def __len__(self):
        if not self._static_shape or self._static_shape[0] is None:
            raise TypeError(f"len is not well defined for a symbolic tensor of shape {self.shape}.")
        return self._static_shape[0]

    def __repr__(self):
        return f'<tf.Tensor "{self._name}" shape={self.shape} dtype={self.dtype.name}>'

    def __iter__(self):
        raise TypeError(f"Iterating over a symbolic tf.Tensor ({self._name}) is not allowed "
                        "inside a traced hybridtf.function without autograph; use tf.while_loop, "
                        "or keep autograph on (the default) for `for x in tensor` loops.")

    def __format__(self, spec):
        return format(str(self), spec)

    def __str__(self):
        return f'Tensor("{self._name}", shape={self.shape}, dtype={self.dtype.name})'

    def __reduce__(self):
        raise TypeError("A symbolic tensor cannot be pickled.")


class Node:
    """One op in a graph: the registry entry, its input tensors, attributes and outputs."""

    __slots__ = ("op", "inputs", "attrs", "outputs", "unknown_input_shapes")

    def __init__(self, op, inputs, attrs):
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.outputs = ()
        # Inputs whose shapes the trace could not check: checked when the graph runs.
        self.unknown_input_shapes = any(
            t._static_shape is None or None in t._static_shape for t in self.inputs)

    def __repr__(self):
        ins = ", ".join(t.name for t in self.inputs)
        outs = ", ".join(t.name for t in self.outputs)
        return f"{outs} = {self.op.name}({ins}){'' if not self.attrs else ' ' + repr(self.attrs)}"


class FuncGraph:
    """The graph of one trace: inputs, nodes in program order, captured values and variables."""

    _ids = itertools.count()

    def __init__(self, name, parent=None):
        self.name = name
        self.parent = parent    # the enclosing graph of a branch or loop body, else None
        # The backend the graph runs on, placed when tracing starts as an eager op would be
        # (the tf.device scope, else the default device); a branch or body runs on its parent's.
        self.backend = (parent.backend if parent is not None
                        else devices.CPU if devices.PLACEMENT.cpu_only
                        else devices.placement_target())
        self.outer_inputs = []  # (tensor of an enclosing graph, placeholder standing for it)
        self._outer = {}
        self.inputs = []        # placeholders for the flattened tensor arguments
        self.nodes = []
        self.captures = []      # (eager tensor, placeholder): closed-over values, by value
        self._captured = {}     # id(eager tensor) -> placeholder
        self.variables = []     # (variable, placeholder of its value at call start), by reference
        self._variable_values = {}   # id(variable) -> current GraphTensor of its value
        self._initial_values = {}    # in a branch or loop body: id -> (variable, value on entry)
        self.outputs = []
        self.output_leaves = []      # the flattened result: tensors' slots and Python values
        self.structured_outputs = None
        self.created_variables = []  # variables created while tracing
        self.example_inputs = None   # the arrays of the call being traced, when there is one
        self._names = itertools.count()

    @property
    def device(self):
        """The full name of the device the graph runs on (``backend``'s)."""
        return self.backend.device_name

    # ---- building -------------------------------------------------------------------------
    def _tensor(self, node, index, shape, dtype, label):
        return GraphTensor(self, node, index, shape, dtype, f"{label}:{next(self._names)}")

    def placeholder(self, shape, dtype, name):
        t = self._tensor(None, len(self.inputs), shape, dtype, name)
        self.inputs.append(t)
        return t

    def capture(self, tensor):
        """The placeholder standing for an eager tensor used inside the graph (by value)."""
        found = self._captured.get(id(tensor))
        if found is None:
            value = np.asarray(tensor._value)
            found = self._tensor(None, None, value.shape, value.dtype, "capture")
            self.captures.append((tensor, found))
            self._captured[id(tensor)] = found
        return found

    def capture_outer(self, tensor):
        """The placeholder standing for a tensor of an enclosing graph (a branch or loop body
        using a value computed outside it)."""
        found = self._outer.get(id(tensor))
        if found is None:
            available = self.parent.as_input(tensor)
            found = self._tensor(None, None, available._static_shape, available._static_dtype,
                                 "outer")
            self.outer_inputs.append((available, found))
            self._outer[id(tensor)] = found
        return found

    def read_variable(self, variable):
        """The variable's current value in this graph (the value at call start, until assigned)."""
        current = self._variable_values.get(id(variable))
        if current is None and self.parent is not None:
            # In a branch or loop body: the enclosing graph's current value, passed in.
            current = self.capture_outer(self.parent.read_variable(variable))
            self._variable_values[id(variable)] = current
            self._initial_values[id(variable)] = (variable, current)
            return current
        if current is None:
            current = self._tensor(None, None, tuple(variable.shape), variable._value.dtype,
                                   variable.name.split(":")[0] + "/read")
            self.variables.append((variable, current))
            self._variable_values[id(variable)] = current
        return current

    def assign_variable(self, variable, value):
        """Records that ``variable`` holds ``value`` from here on (written back after a call)."""
        if id(variable) not in self._variable_values:
            self.read_variable(variable)
        self._variable_values[id(variable)] = value

    def evaluate(self, tensor):
        """The value ``tensor`` has for the call being traced (to initialise a variable)."""
        if self.example_inputs is None:
            raise ValueError("A variable created inside a traced function needs a value that "
                             "depends on its inputs, but the function is being traced from "
                             "TensorSpecs only; call it with real values first.")
        return interpreter.evaluate(self, [tensor], self.example_inputs)[0]

    def run_subgraph(self, outer_arrays, input_arrays=(), call_index=0):
        """Runs this branch or loop body with the graph interpreter on the values of the
        enclosing graph it uses; returns its outputs (ending with the new values of the variables
        it assigns).  Control-flow kernels run their subgraphs through this method."""
        return interpreter.run_subgraph(self, outer_arrays, input_arrays, call_index)

    def updated_variables(self):
        """(variable, final GraphTensor) for every variable assigned in the graph."""
        initial = {id(v): t for v, t in self.variables}
        initial.update({key: t for key, (_, t) in self._initial_values.items()})
        every = [v for v, _ in self.variables] + [v for v, _ in self._initial_values.values()]
        return [(v, self._variable_values[id(v)]) for v in every
                if self._variable_values[id(v)] is not initial[id(v)]]

    @staticmethod
    def ancestors(tensors):
        """The ids of the nodes the given tensors are computed from."""
        needed = set()
        stack = list(tensors)
        while stack:
            node = getattr(stack.pop(), "node", None)
            if node is not None and id(node) not in needed:
                needed.add(id(node))
                stack.extend(node.inputs)
        return needed

    def prune(self):
        """Drops nodes nothing needs: not stateful, and not on a path to an output or to a
        variable's new value (e.g. the gradient of an input nobody asked for)."""
        roots = list(self.outputs) + [t for _, t in self.updated_variables()]
        stateful = [n for n in self.nodes if n.op.stateful]
        keep = self.ancestors(roots + [t for n in stateful for t in n.inputs])
        keep.update(id(n) for n in stateful)
        self.nodes = [n for n in self.nodes if id(n) in keep]

    def add_node(self, op, inputs, attrs, specs):
        node = Node(op, inputs, attrs)
        node.outputs = tuple(self._tensor(node, i, s.shape, s.dtype, op.name)
                             for i, s in enumerate(specs))
        self.nodes.append(node)
        return node.outputs

    def as_input(self, value):
        """A graph tensor for an op input: this graph's own, or a capture of an eager one."""
        if isinstance(value, GraphTensor):
            if value.graph is self:
                return value
            if self._encloses(value.graph):
                return self.capture_outer(value)
            raise ValueError(f"Tensor {value.name} belongs to another traced function; "
                             "pass it in as an argument instead of closing over it.")
        return self.capture(value)

    def _encloses(self, graph):
        outer = self.parent
        while outer is not None:
            if outer is graph:
                return True
            outer = outer.parent
        return False

    def __repr__(self):
        lines = [f"FuncGraph {self.name}("
                 + ", ".join(str(t) for t in self.inputs) + ")"]
        for tensor, ph in self.captures:
            lines.append(f"  {ph.name} = capture {np.asarray(tensor._value)!r}")
        for variable, ph in self.variables:
            lines.append(f"  {ph.name} = read {variable.name}")
        lines += [f"  {node!r}" for node in self.nodes]
        for variable, t in self.updated_variables():
            lines.append(f"  {variable.name} <- {t.name}")
        lines.append("  return " + ", ".join(t.name for t in self.outputs))
        return "\n".join(lines)


# ---- the graph being traced, per thread (kept in the thread's execution context) ----------------
_STATE = context.STATE
tracing_graphs = context.tracing_graphs
current = context.current_graph


class building:
    """Context manager: ops in this thread add nodes to ``graph``."""

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        _STATE.graphs.append(self.graph)
        return self.graph

    def __exit__(self, *exc):
        _STATE.graphs.pop()
        return False
