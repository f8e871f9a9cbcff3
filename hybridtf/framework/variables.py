"""``Variable``: mutable state that ops read as a tensor and GradientTape watches."""
import itertools
import threading

import numpy as np

from hybridtf.framework import context, devices, dtypes, name_scope
from hybridtf.framework.constant_op import to_numpy
from hybridtf.framework.tensor import Reference, Tensor, format_value, is_tensor
from hybridtf.framework.tensor_shape import TensorShape

_IDS = itertools.count(1)
# Called with each new variable and its initial array, which it may replace: the distribution
# strategy in force records the variable and starts it from rank 0's value (see distribute).
_creation_hook = None


def set_creation_hook(hook):
    """Makes ``hook(variable, initial_array) -> array`` run for every variable created."""
    global _creation_hook
    _creation_hook = hook


class FreshArray:
    """An initial value a variable takes as its own array, without the copy it makes of any
    other: ``array`` is new and nothing else refers to it.  Since the variable's updates then
    overwrite that array, ``make_initial()`` makes the tensor of ``initial_value`` again when it
    is asked for (a slot's zeros)."""

    __slots__ = ("array", "make_initial")

    def __init__(self, array, make_initial):
        self.array = array
        self.make_initial = make_initial


class VariableAggregation:
    NONE, SUM, MEAN, ONLY_FIRST_REPLICA = 0, 1, 2, 3


class VariableSynchronization:
    AUTO, NONE, ON_WRITE, ON_READ = 0, 1, 2, 3


class Variable:
    """A tensor-valued, assignable state (``tf.Variable``).

    Usable wherever a tensor is; reading it inside a ``GradientTape`` makes the tape watch it
    when it is trainable.  A value read before an update is never changed by the update.

    Threads: every read-modify-write of a variable -- ``assign``, ``assign_add``,
    ``assign_sub``, an optimizer's update of it and its slots, a call of a ``tf.function`` that
    updates it -- holds the variable's lock from the read to the write, so concurrent updates
    are never lost (TF's ``use_locking=True``, always on).  Reads take no lock.
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
        graph = context.current_graph()
        if graph is not None:
            graph.created_variables.append(self)
            if getattr(initial_value, "_is_variable", False):
                initial_value = initial_value.value()
            if isinstance(initial_value, Tensor) and initial_value._value is None:  # symbolic
                initial_value = Tensor(np.asarray(devices.to_host(graph.evaluate(initial_value))))
        # An eager tensor's array never changes: it can stay the initial value while the
        # variable owns its copy, so that the first update overwrites that copy in place.
        source = initial_value if type(initial_value) is Tensor else None
        fresh = initial_value if type(initial_value) is FreshArray else None
        if fresh is not None:
            value = to_numpy(fresh.array, dtype)   # a cast only if asked for another dtype
        elif isinstance(initial_value, Tensor) or getattr(initial_value, "_is_variable", False):
            value = np.asarray(initial_value)
            if dtype is not None and dtypes.as_dtype(dtype).as_numpy_dtype != value.dtype:
                value = to_numpy(value, dtype)
        else:
            value = to_numpy(initial_value, dtype)
        if fresh is None:
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
        self._unique_id = next(_IDS)   # also the order in which UpdateLock takes locks
        # Re-entrant: a py_function or nested eager code on the updating thread may update it.
        self._lock = threading.RLock()
        self._handout = threading.Lock()   # guards _snapshot and _overwriting (see _set)
        self._overwriting = None           # the thread overwriting the array in place
        self._value = self._snapshot = None
        own = value
        if _creation_hook is not None:
            value = _creation_hook(self, value)
        placed = devices.placed(value)
        if (source is not None and placed is own and type(source._value) is np.ndarray
                and source._value.dtype == own.dtype):
            self._set(value, owned=True)
            self._initial_value = source
        elif fresh is not None and placed is own:
            self._set(value, owned=True)
            self._initial_value = None     # made when asked for
            self._make_initial = fresh.make_initial
        else:
            self._set(placed)
            self._initial_value = self._snapshot

    @staticmethod
    def _scoped_name(name):
        """TF's variable name: the enclosing ``name_scope`` + the name (default "Variable")
        + ":0"."""
        if name and ":" in name:
            return name
        return name_scope.current_prefix() + (name or "Variable") + ":0"

    # ---- who holds the current array ---------------------------------------------------------
    # ``_snapshot`` is the tensor through which the current array has been handed out (an eager
    # read, a read by a call that does not update the variable, ``initial_value``, an assigned
    # tensor), or None while nothing but the variable -- and the writer holding ``_lock`` --
    # refers to it.  An array handed out is never written again: a compiled update overwrites
    # the array in place only while it has not been (``_claim_in_place``), and a reader arriving
    # meanwhile waits for the update's call to end.  This is TF's copy-on-write, decided from
    # what the variable knows rather than from reference counts.

    def _set(self, array, owned=False):
        """Makes ``array`` the value; the caller holds ``_lock`` (or is the constructor).
        ``owned``: nothing outside the variable refers to ``array`` (a new array the caller
        made), so that a later compiled update may overwrite it in place."""
        with self._handout:
            if array is not self._value or self._snapshot is None:
                self._snapshot = None if owned else Tensor(array)
            self._value = array
            self._overwriting = None

    def _read(self):
        """The current value as a tensor; its array counts as handed out from now on."""
        snapshot = self._snapshot
        return snapshot if snapshot is not None else self._hand_out()

    def _hand_out(self):
        while True:
            with self._handout:
                writer = self._overwriting
                if writer is None:
                    if self._snapshot is None:
                        self._snapshot = Tensor(self._value)
                    return self._snapshot
                if writer == threading.get_ident():
                    # Read from inside the call overwriting it (a py_function): the array is
                    # mid-update and stays the call's to overwrite, so the reader gets a copy.
                    return Tensor(np.array(self._value))
            with self._lock:
                pass   # another thread's call is overwriting the array: wait for its end

    def _shared_array(self):
        """The current array for a call that reads the variable without updating it: handed
        out, so that no other call overwrites it in place while this one reads it."""
        return self._read()._value

    def _claim_in_place(self, array):
        """Whether a compiled update holding ``_lock`` may overwrite ``array``, the value it
        read, in place: nothing else refers to it.  Readers then wait until the call ends
        (``_set``, or ``UpdateLock`` when the call fails)."""
        with self._handout:
            if self._snapshot is None and self._value is array:
                self._overwriting = threading.get_ident()
                return True
        return False

    # ---- reading --------------------------------------------------------------------------
    def value(self):
        """The current value as a tensor; recorded on active tapes that watch this variable.

        Inside a traced function the value is symbolic and read by reference each call.
        """
        tracing = context.STATE.graphs
        if tracing:
            read = tracing[-1].read_variable(self)
        else:   # _read(), inlined: the common eager read
            read = self._snapshot
            if read is None:
                read = self._hand_out()
        state = context.STATE
        if state.active or state.variable_watchers:
            context.record_variable_read(self, read)
        return read

    read_value = value

    def numpy(self):
        return self._read().numpy()

    def __array__(self, dtype=None, copy=None):
        return self._read().__array__(dtype, copy)

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
            raise ValueError(f"{op_name}: cannot assign a value of shape "
                             f"{TensorShape(array.shape)} to variable {self._name} of shape "
                             f"{self._shape}.")
        return np.asarray(array)

    def _assign_traced(self, graph, value, op_name):
        if getattr(value, "_is_variable", False):
            tensor = value.value()
        elif is_tensor(value):
            tensor = value
        else:
            tensor = Tensor(self._converted(value, op_name))
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
        graph = context.current_graph()
        if graph is not None:
            return self._assign_traced(graph, value, "assign") if read_value else None
        array = self._converted(value, "assign")
        if array is value or array.base is not None:
            array = array.copy()   # the caller's NumPy array (or a view): theirs to change
        with self._lock:
            self._set(self._on_own_device(array))
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
        graph = context.current_graph()
        if graph is None:
            delta = self._converted(delta, op_name)   # before locking: it may read variables
            with self._lock:
                current = self._value
                if type(current) in devices.CPU_TYPES:
                    self._set(combine(current, delta))
                else:   # on another device: its kernels (Tensor's operators, from the api layer)
                    current, delta = Tensor(current), Tensor(delta)
                    updated = current + delta if combine is np.add else current - delta
                    self._set(self._on_own_device(updated._value))
            return
        # Tensor's arithmetic operators (attached by the api layer) add the op to the graph.
        value = self.value()
        self._assign_traced(graph, value + delta if combine is np.add else value - delta, op_name)

    def _on_own_device(self, array):
        """``array`` (a new value) on the device holding the variable."""
        current = self._value
        if type(current) in devices.CPU_TYPES and type(array) in devices.CPU_TYPES:
            return array
        return devices.on_backend(devices.backend_of(current), array)

    # ---- properties ------------------------------------------------------------------------
    name = property(lambda self: self._name)
    trainable = property(lambda self: self._trainable)
    dtype = property(lambda self: dtypes.of_array(self._value))
    shape = property(lambda self: self._shape if not self._shape.is_fully_defined()
                     else TensorShape(self._value.shape))
    device = property(lambda self: devices.backend_of(self._value).device_name)
    constraint = property(lambda self: self._constraint)
    synchronization = property(lambda self: self._synchronization)
    aggregation = property(lambda self: self._aggregation)
    ndim = property(lambda self: self._value.ndim)

    @property
    def initial_value(self):
        if self._initial_value is None:   # a FreshArray's, made on first use
            self._initial_value = self._make_initial()
        return self._initial_value

    def get_shape(self):
        return self.shape

    def ref(self):
        return Reference(self)

    experimental_ref = ref

    def __hash__(self):
        raise TypeError("Variable is unhashable. Instead, use variable.ref() as the key.")

    def __bool__(self):
        return bool(self._read())

    def __float__(self):
        return float(self._read())

    def __int__(self):
        return int(self._read())

    def __index__(self):
        return self._read().__index__()

    def __len__(self):
        return len(self._read())

    def __iter__(self):
        return iter(self.value())

    def __repr__(self):
        value = format_value(self.numpy(), self.dtype) if self.ndim == 0 else repr(self.numpy())
        return (f"<tf.Variable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={value}>")

    def __deepcopy__(self, memo):
        copy = Variable(self._shared_array(), trainable=self._trainable,
                        name=self._name.split(":")[0], shape=self._shape,
                        constraint=self._constraint)
        memo[id(self)] = copy
        return copy


class UpdateLock:
    """The locks of several variables, held together for a read-modify-write of all of them
    (a call of a graph that updates them, an optimizer's update of a variable and its slots).

    Taken in the variables' creation order -- the one order every holder of several locks uses,
    so two holders never deadlock -- and released in reverse.  A call that fails ends the
    in-place writes it began, so that readers stop waiting for them."""

    __slots__ = ("_variables", "_acquire", "_release")

    def __init__(self, variables):
        unique = {variable._unique_id: variable for variable in variables}
        self._variables = [unique[key] for key in sorted(unique)]
        self._acquire = [variable._lock.acquire for variable in self._variables]
        self._release = [variable._lock.release for variable in reversed(self._variables)]

    def __enter__(self):
        taken = 0
        try:
            for acquire in self._acquire:
                acquire()
                taken += 1
        except BaseException:   # interrupted while waiting: give back what was taken
            for release in self._release[len(self._release) - taken:]:
                release()
            raise
        return self

    def __exit__(self, error_type, error, traceback):
        if error_type is not None:
            me = threading.get_ident()
            for variable in self._variables:
                if variable._overwriting == me:
                    variable._overwriting = None
        for release in self._release:
            release()
