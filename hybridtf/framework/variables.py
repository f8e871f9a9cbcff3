"""``Variable``: mutable state that ops read as a tensor and GradientTape watches."""
import itertools
import sys

import numpy as np

from hybridtf.eager import tape as tape_lib
from hybridtf.framework import dtypes, name_scope
from hybridtf.framework.constant_op import to_numpy
from hybridtf.framework.tensor import CPU_DEVICE, Reference, Tensor, format_value, is_tensor
from hybridtf.graph import func_graph
from hybridtf.framework.tensor_shape import TensorShape

_IDS = itertools.count(1)


class VariableAggregation:
    NONE, SUM, MEAN, ONLY_FIRST_REPLICA = 0, 1, 2, 3


class VariableSynchronization:
    AUTO, NONE, ON_WRITE, ON_READ = 0, 1, 2, 3


class Variable:
    """A tensor-valued, assignable state (``tf.Variable``).

    Usable wherever a tensor is; reading it inside a ``GradientTape`` makes the tape watch it
    when it is trainable.  Assignments replace the stored array (tensors already read keep the
    value they had), so a value read before an update is never changed by the update.
    """

    _is_variable = True
    __array_priority__ = 100

    def __init__(self, initial_value=None, trainable=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 import_scope=None, constraint=None,
                 synchronization=VariableSynchronization.AUTO,
                 aggregation=VariableAggregation.NONE, shape=None,
                 experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if callable(initial_value):
            initial_value = initial_value()
        graph = func_graph.current()
        if graph is not None:
            graph.created_variables.append(self)
            if getattr(initial_value, "_is_variable", False):
                initial_value = initial_value.value()
            if isinstance(initial_value, func_graph.GraphTensor):
                initial_value = Tensor(np.asarray(graph.evaluate(initial_value)))
        if isinstance(initial_value, Tensor) or getattr(initial_value, "_is_variable", False):
            value = np.asarray(initial_value)
            if dtype is not None and dtypes.as_dtype(dtype).as_numpy_dtype != value.dtype:
                value = to_numpy(value, dtype)
        else:
            value = to_numpy(initial_value, dtype)
        value = np.array(value)  # own copy, always an ndarray
        if synchronization == VariableSynchronization.ON_READ and trainable:
            raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ "
                             "only for non-trainable variables.")
        self._trainable = True if trainable is None else bool(trainable)
        self._shape = TensorShape(value.shape) if shape is None else TensorShape(shape)
        if not self._shape.is_compatible_with(value.shape):
            raise ValueError(f"The initial value's shape {value.shape} is not compatible with "
                             f"the explicitly supplied `shape` argument {self._shape}.")
        self._name = self._scoped_name(name)
        self._constraint = constraint
        self._synchronization = synchronization
        self._aggregation = aggregation
        self._unique_id = next(_IDS)
        self._set(value)
        self._initial_value = self._snapshot

    @staticmethod
    def _scoped_name(name):
        """TF's variable name: the enclosing ``name_scope`` + the name (default "Variable") + ":0"."""
        if name and ":" in name:
            return name
        return name_scope.current_prefix() + (name or "Variable") + ":0"

    def _set(self, array):
        self._value = array
        self._snapshot = Tensor(array)

    def _value_unshared(self, held):
        """Whether nothing but this variable and ``held`` references of the caller refers to its
        current array, so that a compiled update may overwrite it in place: no tensor, array or
        view read from the variable earlier can then see it change (TF's copy-on-write).

        References counted: ``_value``, the snapshot's, the caller's, getrefcount's argument;
        a snapshot held elsewhere (``value()``, ``initial_value``) counts as shared too."""
        return (sys.getrefcount(self._value) <= 3 + held
                and sys.getrefcount(self._snapshot) <= 2)

    # ---- reading --------------------------------------------------------------------------
    def value(self):
        """The current value as a tensor; recorded on active tapes that watch this variable.

        Inside a traced function the value is symbolic and read by reference each call.
        """
        tracing = func_graph.tracing_graphs()
        read = self._snapshot if not tracing else tracing[-1].read_variable(self)
        if tape_lib.STATE.active or tape_lib.STATE.variable_watchers:
            tape_lib.record_variable_read(self, read)
        return read

    read_value = value

    def numpy(self):
        return self._snapshot.numpy()

    def __array__(self, dtype=None, copy=None):
        return self._snapshot.__array__(dtype, copy)

    # ---- writing --------------------------------------------------------------------------
    def _converted(self, value, op_name):
        if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
            array = np.asarray(value)
            if array.dtype != self._value.dtype:
                raise TypeError(f"{op_name}: cannot assign a value of dtype "
                                f"{dtypes.of_array(array).name} to variable {self._name} of dtype "
                                f"{self.dtype.name}; use tf.cast first.")
        else:
            array = to_numpy(value, self.dtype)
        if not self._shape.is_compatible_with(array.shape):
            raise ValueError(f"{op_name}: cannot assign a value of shape {TensorShape(array.shape)} "
                             f"to variable {self._name} of shape {self._shape}.")
        return np.asarray(array)

    def _assign_traced(self, graph, value, op_name):
        from hybridtf.eager.execute import as_tensor
        tensor = as_tensor(value) if is_tensor(value) else Tensor(self._converted(value, op_name))
        if tensor.dtype != self.dtype:
            raise TypeError(f"{op_name}: cannot assign a value of dtype {tensor.dtype.name} to "
                            f"variable {self._name} of dtype {self.dtype.name}; use tf.cast first.")
        if not self._shape.is_compatible_with(tensor.shape):
            raise ValueError(f"{op_name}: cannot assign a value of shape {tensor.shape} to "
                             f"variable {self._name} of shape {self._shape}.")
        graph.assign_variable(self, graph.as_input(tensor))
        return self

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Sets the variable's value; returns the variable."""
        graph = func_graph.current()
        if graph is not None:
            return self._assign_traced(graph, value, "assign") if read_value else None
        array = self._converted(value, "assign")
        if array is self._value or array.base is not None:
            array = array.copy()
        self._set(array)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """Adds ``delta`` to the variable; returns the variable."""
        self._update(delta, "assign_add", np.add)
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        """Subtracts ``delta`` from the variable; returns the variable."""
        self._update(delta, "assign_sub", np.subtract)
        return self if read_value else None

    def _update(self, delta, op_name, combine):
        graph = func_graph.current()
        if graph is None:
            self._set(combine(self._value, self._converted(delta, op_name)))
            return
        from hybridtf.api import math_ops
        traced = math_ops.add if combine is np.add else math_ops.subtract
        self._assign_traced(graph, traced(self.value(), delta), op_name)

    # ---- properties ------------------------------------------------------------------------
    name = property(lambda self: self._name)
    trainable = property(lambda self: self._trainable)
    dtype = property(lambda self: dtypes.of_array(self._value))
    shape = property(lambda self: self._shape if not self._shape.is_fully_defined()
                     else TensorShape(self._value.shape))
    device = property(lambda self: CPU_DEVICE)
    constraint = property(lambda self: self._constraint)
    synchronization = property(lambda self: self._synchronization)
    aggregation = property(lambda self: self._aggregation)
    initial_value = property(lambda self: self._initial_value)
    ndim = property(lambda self: self._value.ndim)

    def get_shape(self):
        return self.shape

    def ref(self):
        return Reference(self)

    experimental_ref = ref

    def __hash__(self):
        raise TypeError("Variable is unhashable. Instead, use variable.ref() as the key.")

    def __bool__(self):
        return bool(self._snapshot)

    def __float__(self):
        return float(self._snapshot)

    def __int__(self):
        return int(self._snapshot)

    def __index__(self):
        return self._snapshot.__index__()

    def __len__(self):
        return len(self._snapshot)

    def __iter__(self):
        return iter(self.value())

    def __repr__(self):
        return (f"<tf.Variable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={format_value(self.numpy(), self.dtype) if self.ndim == 0 else repr(self.numpy())}>")

    def __deepcopy__(self, memo):
        copy = Variable(self._value, trainable=self._trainable, name=self._name.split(":")[0],
                        shape=self._shape, constraint=self._constraint)
        memo[id(self)] = copy
        return copy
