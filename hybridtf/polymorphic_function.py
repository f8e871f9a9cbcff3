"""``hybridtf.function``: a polymorphic callable that traces a graph per input signature.

Semantics follow TF 2's ``tf.function``: the trace cache is keyed as described in
``trace_key``; Python side effects happen only while tracing; variables are used by reference;
stateful ops run in program order on every call; variables may be created on the first trace
only.  A new trace runs on the graph interpreter while its kernels compile in the background,
then compiled (``execution_tiers``).

It is the layer above AutoGraph, the public ops and the compiler, all of which it uses: the
graph layer below (``FuncGraph``, ``replay``, the interpreter) knows nothing of it.
"""
import collections
import functools
import itertools
import inspect
import threading
import types
import warnings
import weakref

import numpy as np

from ops import kernel_prefetch

from hybridtf import autograph, compiler
from hybridtf.api.array_ops import zeros_like
from hybridtf.autograph import operators as autograph_operators
from hybridtf.eager import tape as tape_lib
from hybridtf.eager.backprop import GradientTape
from hybridtf.eager.execute import as_tensor
from hybridtf.execution_tiers import ExecutionTiers
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework import devices, dtypes, nest
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.graph import func_graph
from hybridtf.graph import trace_key as tk
from hybridtf.graph.replay import replay
from hybridtf.graph.func_graph import FuncGraph, GraphTensor

RETRACE_WARNING_THRESHOLD = 5
# A Function warns about retracing this many times at most (as TF, which logs its warning twice
# per function): the messages differ, so each would print and stay in the warnings registry.
MAX_RETRACING_WARNINGS = 2

# A Function keeps its MAX_TRACES most recently used traces.  TF keeps every trace, but a
# long-running process that traces for a stream of Python values must stay flat: the least
# recently used trace is dropped, and a later call that needs it traces it again (its Python
# side effects run again, and experimental_get_tracing_count counts it, as on any trace).  A
# ConcreteFunction the caller holds stays valid.
MAX_TRACES = 256
# Entries of the positional fast path (several may lead to one trace), dropped oldest first.
MAX_FAST_ENTRIES = 4 * MAX_TRACES


class RetracingWarning(UserWarning):
    """A decorated function keeps tracing new graphs: a sign of an avoidable cost."""


class _Config(threading.local):
    run_eagerly = False


_CONFIG = _Config()


def run_functions_eagerly(run_eagerly):
    """With True, decorated functions run their Python code eagerly on every call."""
    _CONFIG.run_eagerly = bool(run_eagerly)


def functions_run_eagerly():
    return _CONFIG.run_eagerly


_FAST_SCALARS = (int, float, bool, str, type(None))


def _fast_key(args):
    """An exact, cheap key for calls made only of eager tensors and Python scalars, or None
    (also while a device other than the CPU is visible: the key must then name the device)."""
    if not devices.PLACEMENT.cpu_only:
        return None
    key = []
    for a in args:
        t = type(a)
        if t is Tensor:
            value = a._value
            key.append((value.dtype, value.shape))
        elif t in _FAST_SCALARS:
            key.append((t, a))
        else:
            return None
    return tuple(key)


def _call_key(pairs):
    """The trace-cache key of a call's canonical arguments (``tk.call_key``), naming the device
    its trace runs on while one besides the CPU is visible: a trace runs where it was placed."""
    key = tk.call_key(pairs)
    if not devices.PLACEMENT.cpu_only:
        key += ((None, devices.placement_target().name),)
    return key


def _is_tensor_arg(value):
    return isinstance(value, (Tensor, np.ndarray, np.generic, TensorSpec))


# ---- ConcreteFunction ---------------------------------------------------------------------------
class ConcreteFunction:
    """One traced graph with a fixed input signature; callable like the Python function."""

    def __init__(self, name, graph, signature, arg_template, input_specs):
        self.name = name
        self.graph = graph
        self._signature = signature
        self._arg_template = arg_template   # bound arguments with tensor leaves as specs
        self._input_specs = input_specs     # one TensorSpec per graph input
        self._call_numbers = itertools.count()   # next() is atomic: no lock per call
        self._backward = None
        self._tiers = ExecutionTiers(graph, name)

    @property
    def structured_outputs(self):
        return self.graph.structured_outputs

    @property
    def structured_input_signature(self):
        return self._arg_template.args, self._arg_template.kwargs

    @property
    def inputs(self):
        return list(self.graph.inputs)

    @property
    def outputs(self):
        return list(self.graph.outputs)

    @property
    def variables(self):
        return [v for v, _ in self.graph.variables]

    def pretty_printed_graph(self):
        return repr(self.graph)

    # ---- the compiled plan ------------------------------------------------------------------
    def _compiled_run(self):
        """``run(arrays, call_index)`` for this call: the compiled plan once ready, the graph
        interpreter until then (see ``execution_tiers``)."""
        return self._tiers.run()

    def _compiled_graph(self):
        """The ``compiler.CompiledGraph`` this function runs, compiled now if it is not yet
        (None when the compiler failed on the graph)."""
        self._tiers.wait()
        return self._tiers.compiled

    @property
    def kernel_source(self):
        """The generated source this function runs: fused Numba kernels and the driver."""
        compiled = self._compiled_graph()
        if compiled is None:
            return (f"# hybridtf.compiler could not lower this graph "
                    f"({self._tiers.compile_error}); "
                    "it runs on the graph interpreter.\n")
        return compiler.describe(compiled)

    def __repr__(self):
        return f"<ConcreteFunction {self.name}{self._signature}>"

    # ---- calling --------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Calls the graph; arguments must be compatible with the traced signature."""
        try:
            bound = tk.bind(self._signature, args, kwargs)
        except TypeError as err:
            raise TypeError(f"{self.name}: {err}") from None
        flat = _flatten_tensor_args(bound, self._arg_template)
        return self.call_flat(flat)

    def call_flat(self, flat_args, call_index=None):
        """Calls the graph on its flattened tensor inputs.  ``call_index`` (internal) replays
        the random draws of an earlier call: a backward pass recomputing its forward pass."""
        tensors = []
        for i, (value, spec) in enumerate(zip(flat_args, self._input_specs)):
            tensor = _as_input_tensor(value, spec, self.name, i)
            tensors.append(tensor)
        if len(tensors) != len(self._input_specs):
            raise TypeError(f"{self.name} takes {len(self._input_specs)} tensor inputs, got "
                            f"{len(tensors)}.")
        graph = func_graph.current()
        if graph is not None or any(type(t) is not Tensor for t in tensors):
            return self._inline(tensors)
        return self._run_eagerly(tensors, call_index)

    def _run_eagerly(self, tensors, call_index=None):
        if call_index is None:
            call_index = next(self._call_numbers)
        arrays = [t._value for t in tensors]
        if not devices.PLACEMENT.cpu_only:   # inputs held elsewhere go to the graph's device
            backend = self.graph.backend
            arrays = [devices.on_backend(backend, a) for a in arrays]
        if tape_lib.STATE.active:
            return self._run_recorded(tensors, arrays, call_index)
        run = self._tiers.run()
        values = run(arrays, call_index)
        if self._returns_one_tensor():
            return Tensor(values[0])   # the common `return tensor`: nothing to pack
        return self._pack([Tensor(v) for v in values])

    def _returns_one_tensor(self):
        single = self.__dict__.get("_single_tensor_output")
        if single is None:
            graph = self.graph
            single = self._single_tensor_output = (
                len(graph.output_leaves) == 1 and graph.output_leaves[0] is _TENSOR_OUTPUT
                and not nest.is_nested(graph.structured_outputs))
        return single

    def _pack(self, flat_outputs):
        return nest.pack_sequence_as(self.graph.structured_outputs, _restore_python_outputs(
            self.graph, flat_outputs))

    def _inline(self, tensors):
        """Adds this function's nodes to the graph being traced (a nested call)."""
        outputs = replay(self.graph, tensors, apply_variable_updates=True)
        return self._pack(outputs)

    # ---- gradients through a call -----------------------------------------------------------
    def _run_recorded(self, tensors, arrays, call_index):
        variables = [v for v, _ in self.graph.variables]
        reads = [v.value() for v in variables]  # lets active tapes watch them
        values = self._compiled_run()(arrays, call_index)
        outputs = [Tensor(v) for v in values]
        float_inputs = list(tensors) + reads

        def backward(record, grads):
            return self._backward_function()(float_inputs, grads, record.outputs, call_index)

        tape_lib.record(None, tuple(float_inputs), tuple(outputs), None, backward)
        return self._pack(outputs)

    def _backward_function(self):
        """A traced function giving the gradients of this graph's outputs w.r.t. its inputs
        and variables; itself differentiable, so higher-order gradients work."""
        if self._backward is None:
            forward = self.graph
            n_inputs = len(forward.inputs)

            # The forward pass is recomputed on the variables' values read before the call:
            # the call may have updated them since.
            def gradients(inputs, variable_values, output_grads):
                with GradientTape(watch_accessed_variables=False) as tape:
                    tape.watch(list(inputs) + list(variable_values))
                    outputs = replay(forward, inputs, apply_variable_updates=False,
                                     variable_values=variable_values)
                return tape.gradient(outputs, list(inputs) + list(variable_values),
                                     output_gradients=output_grads)

            traced = function(gradients, name=f"{self.name}_backward")

            def call(float_inputs, grads, outputs, call_index):
                grads = [g if g is not None else _zeros_for(y) for g, y in zip(grads, outputs)]
                inputs = list(float_inputs[:n_inputs])
                values = list(float_inputs[n_inputs:])
                if func_graph.current() is not None:
                    return traced(inputs, values, grads)
                # The forward pass is recomputed with the forward call's random draws.
                concrete = traced.get_concrete_function(inputs, values, grads)
                return concrete.call_flat(inputs + values + grads, call_index=call_index)
            self._backward = call
        return self._backward


def _zeros_for(tensor):
    return zeros_like(tensor)


def _restore_python_outputs(graph, flat_outputs):
    """Output leaves that were Python values at trace time come back as those values."""
    result = []
    it = iter(flat_outputs)
    for leaf in graph.output_leaves:
        result.append(next(it) if leaf is _TENSOR_OUTPUT else leaf)
    return result


_TENSOR_OUTPUT = object()


def _flatten_tensor_args(bound, template):
    """The tensor leaves of a call, in the order of the template's tensor leaves."""
    flat = []
    for name, spec_value in template.arguments.items():
        if name not in bound.arguments:
            continue
        value = bound.arguments[name]
        spec_leaves = nest.flatten(spec_value)
        try:
            nest.assert_same_structure(spec_value, value)
        except ValueError:
            raise TypeError(f"Argument {name!r} has a different structure than the traced "
                            f"signature: {value!r} vs {spec_value!r}.") from None
        for leaf, spec in zip(nest.flatten(value), spec_leaves):
            if isinstance(spec, TensorSpec):
                flat.append(leaf)
    return flat


def _fill_slots(arguments, slots, values):
    """Puts ``values`` in the ``slots`` (from ``Function._positional_slots``) of a call's
    ``arguments``: a named parameter takes its value, an entry of ``*args`` is replaced."""
    starred = {name: list(arguments[name]) for name, i in slots if i is not None}
    for (name, i), value in zip(slots, values):
        if i is None:
            arguments[name] = value
        else:
            starred[name][i] = value
    for name, entries in starred.items():
        arguments[name] = tuple(entries)


def _list_as_array(value):
    if isinstance(value, (list, tuple)):
        try:
            return np.asarray(value)
        except ValueError:   # ragged: left for the signature check to report
            return value
    return value


def _as_signature_tensor(leaf, spec):
    """An argument leaf given for an input_signature entry, as a tensor of the spec's dtype."""
    if isinstance(leaf, TensorSpec):
        return leaf
    if isinstance(leaf, Tensor) or getattr(leaf, "_is_variable", False):
        return as_tensor(leaf)
    return as_tensor(np.asarray(leaf, dtype=spec.dtype.as_numpy_dtype))


def _as_input_tensor(value, spec, fn_name, index):
    if getattr(value, "_is_variable", False):
        value = value.value()
    if not isinstance(value, Tensor):
        try:
            value = as_tensor(value, dtype=spec.dtype)
            if isinstance(value, Tensor) and value.dtype is not spec.dtype and \
                    not isinstance(value, GraphTensor):
                value = convert_to_tensor(np.asarray(value), dtype=spec.dtype)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{fn_name}: input #{index} ({value!r}) cannot be converted to "
                            f"{spec}: {err}") from None
    if value.dtype is not spec.dtype:
        raise InvalidArgumentError(
            None, fn_name, f"cannot compute {fn_name} as input #{index}(zero-based) was expected "
            f"to be a {spec.dtype.name} tensor but is a {value.dtype.name} tensor")
    if not spec.shape.is_compatible_with(value.shape):
        raise ValueError(f"{fn_name}: input #{index} has shape {value.shape}, which is not "
                         f"compatible with the traced shape {spec.shape}.")
    return value


# ---- Function -----------------------------------------------------------------------------------
class Function:
    """A Python function traced into graphs, one per input signature (``tf.function``)."""

    def __init__(self, python_function, name=None, input_signature=None, autograph=True,
                 jit_compile=None, reduce_retracing=False, experimental_implements=None,
                 experimental_autograph_options=None, experimental_attributes=None,
                 experimental_relax_shapes=None, experimental_compile=None,
                 experimental_follow_type_hints=None):
        if input_signature is not None and not isinstance(input_signature, (list, tuple)):
            raise TypeError(f"input_signature must be either a tuple or a list, got "
                            f"{type(input_signature).__name__}.")
        if input_signature is not None:
            for spec in nest.flatten(list(input_signature)):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"input_signature must contain only tf.TensorSpec, got "
                                    f"{spec!r}.")
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = None if input_signature is None else tuple(input_signature)
        self._autograph = autograph
        self._jit_compile = jit_compile
        self._reduce_retracing = bool(reduce_retracing or experimental_relax_shapes)
        self._signature = inspect.signature(python_function)
        # trace key -> ConcreteFunction, least recently used first (at most MAX_TRACES)
        self._cache = collections.OrderedDict()
        self._relaxed = []          # (general key, ConcreteFunction) of the relaxed traces
        self._last_key = None
        self._tracing_count = 0
        self._retracing_warnings = 0
        self._variables_created = False
        self._lock = threading.RLock()
        self._bound_instances = {}
        # exact positional-argument signature -> (concrete, tensor positions, trace key)
        self._fast_cache = {}
        functools.update_wrapper(self, python_function)

    # ---- properties TF has -------------------------------------------------------------------
    @property
    def python_function(self):
        """The Python function this traces (for a decorated method, bound to its object)."""
        if isinstance(self._python_function, _WeakMethod):
            return self._python_function.bound()
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    @property
    def function_spec(self):
        return self._signature

    def experimental_get_tracing_count(self):
        """How many times the Python function has been traced."""
        return self._tracing_count

    def __repr__(self):
        return f"<hybridtf.function {self._name}>"

    # ---- methods ---------------------------------------------------------------------------
    def __get__(self, instance, owner):
        """Binds a decorated method per instance, so each object has its own traces."""
        if instance is None:
            return self
        bound = self._bound_instances.get(id(instance))
        if bound is None or bound[0]() is not instance:
            try:
                ref = weakref.ref(instance, lambda _, key=id(instance):
                                  self._bound_instances.pop(key, None))
                # As in TF, the traces do not keep the object alive: it goes when its last
                # other reference goes, and its traces with it.
                method = _WeakMethod(self._python_function, ref, self._name)
            except TypeError:   # an object without weak references: held for good
                ref = (lambda obj: (lambda: obj))(instance)
                method = functools.partial(self._python_function, instance)
            functools.update_wrapper(method, self._python_function)
            fn = Function(method, name=self._name, input_signature=self._input_signature,
                          autograph=self._autograph, jit_compile=self._jit_compile,
                          reduce_retracing=self._reduce_retracing)
            fn._signature = _drop_first_parameter(self._signature)
            bound = self._bound_instances[id(instance)] = (ref, fn)
        return bound[1]

    # ---- calling ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _CONFIG.run_eagerly:
            return self._python_function(*args, **kwargs)
        if not kwargs and not func_graph.tracing_graphs():
            # Fast path for the common call: positional eager tensors and Python scalars whose
            # exact dtypes, shapes and values were seen before map straight to their trace.
            fast_key = _fast_key(args)
            if fast_key is not None:
                entry = self._fast_cache.get(fast_key)
                if entry is not None:
                    concrete, positions, trace_key = entry
                    try:
                        self._cache.move_to_end(trace_key)   # most recently used
                    except KeyError:
                        pass   # just dropped by another thread: this call still runs it
                    return concrete._run_eagerly([args[i] for i in positions])
        concrete, flat, trace_key = self._concrete_for_call(args, kwargs)
        if not kwargs:
            fast_key = _fast_key(args)
            if fast_key is not None and len(flat) == len(concrete._input_specs):
                positions = tuple(i for i, a in enumerate(args) if type(a) is Tensor)
                if len(positions) == len(flat):
                    self._remember_fast(fast_key, (concrete, positions, trace_key))
        first_call = concrete.__dict__.pop("_first_call", None)
        try:
            return concrete.call_flat(flat)
        finally:
            if first_call is not None:   # what it asked for, written down
                first_call.finish()

    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (tensors, arrays or ``tf.TensorSpec`` s);
        with an input_signature, no arguments are needed."""
        if not args and not kwargs and self._input_signature is not None:
            args = self._input_signature
        concrete, _, _ = self._concrete_for_call(args, kwargs)
        first_call = concrete.__dict__.pop("_first_call", None)
        if first_call is not None:   # not run here: the trace's kernels are its working set
            first_call.finish()
        return concrete

    def _concrete_for_call(self, args, kwargs):
        """(ConcreteFunction, its flat tensor arguments, its key in the trace cache)."""
        try:
            bound = tk.bind(self._signature, args, kwargs)
        except TypeError as err:
            raise TypeError(f"{self._name}(): {err}") from None
        if self._input_signature is not None:
            bound = self._apply_input_signature(bound)
        pairs = tk.arguments_of(bound)
        key = _call_key(pairs)
        found = self._lookup(key)
        if found is None:
            with self._lock:
                found = self._lookup(key)
                if found is None:
                    found = self._trace_for(bound, key)
        trace_key, concrete = found
        flat = [leaf for _, value in pairs for leaf in nest.flatten(value)
                if _is_tensor_arg(leaf)]
        return concrete, flat, trace_key

    # ---- the trace cache (an LRU of at most MAX_TRACES traces) --------------------------------
    def _lookup(self, key):
        """(trace key, ConcreteFunction) of the trace serving call key ``key``, now the most
        recently used; None when there is none."""
        trace_key, concrete = key, self._cache.get(key)
        if concrete is None:
            for general, candidate in self._relaxed:
                if tk.covers_call(general, key):
                    trace_key, concrete = general, candidate
                    break
            else:
                return None
        try:
            self._cache.move_to_end(trace_key)
        except KeyError:
            pass   # just dropped by another thread: this call still runs it
        return trace_key, concrete

    def _remember(self, trace_key, concrete, relaxed):
        """Caches a new trace (``self._lock`` held); drops the least recently used beyond
        MAX_TRACES."""
        self._cache[trace_key] = concrete
        if relaxed:
            self._relaxed.append((trace_key, concrete))
        while len(self._cache) > MAX_TRACES:
            _, dropped = self._cache.popitem(last=False)
            self._relaxed = [(g, c) for g, c in self._relaxed if c is not dropped]
            for fast_key in [k for k, entry in self._fast_cache.items() if entry[0] is dropped]:
                del self._fast_cache[fast_key]

    def _remember_fast(self, fast_key, entry):
        with self._lock:
            if self._cache.get(entry[2]) is not entry[0]:
                return   # dropped meanwhile
            if len(self._fast_cache) >= MAX_FAST_ENTRIES:
                del self._fast_cache[next(iter(self._fast_cache))]
            self._fast_cache[fast_key] = entry

    def _positional_slots(self, bound):
        """(parameter name, index in ``*args`` or None) of the call's positional arguments, in
        order: the named parameters, then the entries of ``*args`` (an input_signature
        describes them all, as TF's does)."""
        slots = []
        for name, parameter in self._signature.parameters.items():
            if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
                slots.append((name, None))
            elif parameter.kind is parameter.VAR_POSITIONAL:
                slots += [(name, i) for i in range(len(bound.arguments.get(name, ())))]
        return slots

    def _with_signature_specs(self, bound):
        """A copy of ``bound`` with the input_signature's specs for the arguments it describes."""
        copy = inspect.BoundArguments(bound.signature, dict(bound.arguments))
        slots = self._positional_slots(bound)[:len(self._input_signature)]
        _fill_slots(copy.arguments, slots, self._input_signature)
        return copy

    def _apply_input_signature(self, bound):
        """Checks the call against input_signature; returns it with tensors for the arguments."""
        slots = [(name, i) for name, i in self._positional_slots(bound)
                 if name in bound.arguments][:len(self._input_signature)]
        given = [bound.arguments[name] if i is None else bound.arguments[name][i]
                 for name, i in slots]
        # A (nested) Python list given for a single spec is one tensor's value, as in TF.
        given = [_list_as_array(value) if isinstance(spec, TensorSpec) else value
                 for value, spec in zip(given, self._input_signature)]
        if len(given) != len(self._input_signature):
            raise TypeError(f"{self._name}: the input_signature has {len(self._input_signature)} "
                            f"entries but the call gave {len(given)} arguments for them.")
        for (name, _), value, spec in zip(slots, given, self._input_signature):
            problem = _signature_mismatch(value, spec)
            if problem is not None:
                raise InputSignatureMismatchError(
                    f"Binding inputs to tf.function {self._name!r} failed due to "
                    f"`{problem}` (argument {name!r}). Python inputs incompatible "
                    f"with input_signature:\n  inputs: {tuple(given)!r}\n"
                    f"  input_signature: {self._input_signature!r}")
        _fill_slots(bound.arguments, slots,
                    [nest.map_structure(_as_signature_tensor, value, spec)
                     for value, spec in zip(given, self._input_signature)])
        return bound

    # ---- tracing ------------------------------------------------------------------------------
    def _traced_function(self):
        """What tracing calls: with ``autograph=True`` the AutoGraph-converted function
        (converted once, lazily); the original when its source is unavailable."""
        converted = self.__dict__.get("_autograph_function")
        if converted is None:
            method = self._python_function
            if not isinstance(method, _WeakMethod):
                method = None
            converted = self._python_function if method is None else method.func
            if self._autograph:
                try:
                    converted = autograph.convert(converted)
                except autograph.ConversionError:
                    pass        # no source (a lambda, a builtin): trace the function as is
                except Exception as err:  # noqa: BLE001 - conversion is never fatal
                    warnings.warn(f"AutoGraph could not convert {self._name}; tracing it "
                                  f"unconverted ({type(err).__name__}: {err}).", stacklevel=4)
            if method is not None:
                converted = method.with_function(converted)
            self._autograph_function = converted
        return converted

    def _trace_for(self, bound, key):
        trace_key_ = key
        if self._input_signature is not None:
            trace_key_ = _call_key(tk.arguments_of(self._with_signature_specs(bound)))
        elif self._reduce_retracing and self._last_key is not None:
            relaxed = tk.relax_call(self._last_key, key)
            if relaxed is not None and relaxed != key:
                trace_key_ = relaxed
        if (self._tracing_count >= RETRACE_WARNING_THRESHOLD - 1 and self._last_key is not None
                and self._retracing_warnings < MAX_RETRACING_WARNINGS):
            self._retracing_warnings += 1
            self._warn_retracing(key)
        first_call = self._start_first_call(key) if self._tracing_count == 0 else None
        try:
            concrete = self._trace(bound, trace_key_)
        except BaseException:
            if first_call is not None:
                first_call.finish()
            raise
        if first_call is not None:
            concrete._first_call = first_call   # finished by its first call
        self._remember(trace_key_, concrete, relaxed=trace_key_ != key)
        self._last_key = key
        return trace_key_, concrete

    def _start_first_call(self, key):
        """A ``kernel_prefetch.FirstCall`` for the first trace, for call key ``key``: the
        kernels the last process's first call of this function (with arguments of the same
        dtypes and ranks, on objects of the same types) asked for load while this one traces;
        None for a function without code.  (A later trace finds most of its kernels loaded.)"""
        function = self._python_function
        instance = ()
        if isinstance(function, _WeakMethod):
            instance = (_type_name(function._ref()),)
            function = function.func
        code = getattr(function, "__code__", None)
        if code is None:
            return None
        closure = tuple(_type_name(_cell_contents(cell))
                        for cell in getattr(function, "__closure__", None) or ())
        return kernel_prefetch.FirstCall(kernel_prefetch.working_set_name(
            code.co_filename, code.co_firstlineno, getattr(function, "__qualname__", ""),
            instance, closure, tk.without_sizes(key)))

    def _warn_retracing(self, key):
        lines = tk.differences(self._last_key, key)
        tips = tk.advice(self._last_key, key)
        warnings.warn(
            f"{self._name} has been traced {self._tracing_count + 1} times. Retracing is slow "
            f"(the Python function runs again and a new graph is built). What changed since the "
            f"previous trace: {'; '.join(lines) or 'nothing visible'}. "
            f"To avoid it: {'; '.join(tips) or 'keep argument types and shapes stable'}.",
            RetracingWarning, stacklevel=5)

    def _trace(self, bound, key):
        concrete = self._trace_once(bound, key)
        if concrete.graph.created_variables:
            if self._variables_created:
                raise ValueError(
                    f"tf.function-decorated function {self._name!r} tried to create variables "
                    "on a non-first call. Create variables once, outside the function or on "
                    "its first call only (e.g. `if self.v is None: self.v = tf.Variable(...)`).")
            self._variables_created = True
            # As TF: trace again now the variables exist; creating more is an error.
            concrete = self._trace_once(bound, key)
            if concrete.graph.created_variables:
                raise ValueError(
                    f"tf.function-decorated function {self._name!r} tried to create variables "
                    "on every call. Create variables once, outside the function or on its "
                    "first call only (e.g. `if self.v is None: self.v = tf.Variable(...)`).")
        return concrete

    def _trace_once(self, bound, key):
        self._tracing_count += 1
        graph = FuncGraph(self._name)
        specs = []
        examples = []
        key_of_arg = dict(key)

        def symbolic(leaf, leaf_key, name):
            if not _is_tensor_arg(leaf):
                return leaf
            if isinstance(leaf, TensorSpec):
                shape, dtype = leaf.shape, leaf.dtype
                examples.append(None)
            else:
                dtype = dtypes.as_dtype(leaf.dtype)
                shape = TensorShape(leaf_key.shape) if leaf_key.shape is not None else \
                    TensorShape(None)
                examples.append(np.asarray(leaf._value if isinstance(leaf, Tensor) else leaf,
                                           dtype=dtype.as_numpy_dtype))
            spec = TensorSpec(shape, dtype, name)
            specs.append(spec)
            return graph.placeholder(shape.dims, dtype.as_numpy_dtype, name)

        template_args = {}
        symbolic_args = {}
        for name, value in bound.arguments.items():
            leaves = nest.flatten(value)
            leaf_keys = _argument_leaf_keys(bound, name, key_of_arg)
            sym_leaves = []
            tmpl_leaves = []
            for leaf, lk in zip(leaves, leaf_keys):
                s = symbolic(leaf, lk, name)
                sym_leaves.append(s)
                tmpl_leaves.append(specs[-1] if isinstance(s, GraphTensor) else leaf)
            symbolic_args[name] = nest.pack_sequence_as(value, sym_leaves)
            template_args[name] = nest.pack_sequence_as(value, tmpl_leaves)
        graph.example_inputs = None if any(e is None for e in examples) else examples
        sym_bound = inspect.BoundArguments(bound.signature, _ordered(bound, symbolic_args))
        template = inspect.BoundArguments(bound.signature, _ordered(bound, template_args))
        with tape_lib.stop_recording(), func_graph.building(graph):
            with autograph_operators.status(self._autograph):
                result = self._traced_function()(*sym_bound.args, **sym_bound.kwargs)
            flat_out = nest.flatten(result)
            leaves = []
            outputs = []
            for item in flat_out:
                if getattr(item, "_is_variable", False):
                    item = item.value()
                if isinstance(item, Tensor):
                    outputs.append(graph.as_input(item))
                    leaves.append(_TENSOR_OUTPUT)
                else:
                    leaves.append(item)
        graph.outputs = outputs
        graph.prune()
        graph.output_leaves = leaves
        graph.structured_outputs = result
        return ConcreteFunction(self._name, graph, bound.signature, template, specs)


def _type_name(value):
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:   # a free variable not yet assigned
        return None


class _WeakMethod:
    """``func`` bound to an object held by the weak reference ``ref``: what a decorated method
    traces, so that its Function does not keep the object alive."""

    def __init__(self, func, ref, name):
        self.func = func
        self._ref = ref
        self._name = name

    def _instance(self):
        instance = self._ref()
        if instance is None:
            raise ReferenceError(
                f"{self._name}: the object this decorated method was bound to no longer exists, "
                "so the method cannot be traced for new arguments; keep a reference to the "
                "object while calling its methods.")
        return instance

    def __call__(self, *args, **kwargs):
        return self.func(self._instance(), *args, **kwargs)

    def bound(self):
        """A bound method of the object (which it keeps alive while it is held)."""
        return types.MethodType(self.func, self._instance())

    def with_function(self, func):
        """The same binding for ``func`` (the AutoGraph-converted method)."""
        method = _WeakMethod(func, self._ref, self._name)
        functools.update_wrapper(method, self.func)
        return method


def _flat_keys(key):
    """The leaf keys of an argument key, in ``nest.flatten`` order."""
    if isinstance(key, tk.StructureKey):
        out = []
        for item in key.items:
            out += _flat_keys(item[1] if key.kind == "dict" else item)
        return out
    return [key]


def _argument_leaf_keys(bound, name, keys):
    """The leaf keys of argument ``name`` (``*args`` / ``**kwargs`` are keyed per item)."""
    kind = bound.signature.parameters[name].kind
    value = bound.arguments[name]
    if kind is inspect.Parameter.VAR_POSITIONAL:
        return [k for i in range(len(value)) for k in _flat_keys(keys[f"{name}[{i}]"])]
    if kind is inspect.Parameter.VAR_KEYWORD:
        return [k for item in sorted(value) for k in _flat_keys(keys[f"{name}[{item!r}]"])]
    return _flat_keys(keys[name])


def _ordered(bound, arguments):
    return {name: arguments[name] for name in bound.arguments}


class InputSignatureMismatchError(TypeError, ValueError):
    """Arguments that do not match a function's ``input_signature``.  TF 2 raises TypeError
    here, and earlier TF 2 releases (and the tf.function guide) ValueError: either catches it."""


def _signature_mismatch(value, spec):
    """Why ``value`` does not match the input_signature entry ``spec``; None when it does."""
    try:
        nest.assert_same_structure(spec, value)
    except (ValueError, TypeError):
        return f"the structure of {value!r} does not match {spec!r}"
    for leaf, leaf_spec in zip(nest.flatten(value), nest.flatten(spec)):
        if not _compatible(leaf, leaf_spec):
            return f"Can not cast {_describe_leaf(leaf)} to {leaf_spec!r}"
    return None


def _describe_leaf(value):
    if isinstance(value, (Tensor, TensorSpec)) or getattr(value, "_is_variable", False):
        return repr(TensorSpec(value.shape, value.dtype))
    return repr(value)


def _compatible(value, spec):
    if isinstance(value, (Tensor, TensorSpec)) or getattr(value, "_is_variable", False):
        return value.dtype is spec.dtype and spec.shape.is_compatible_with(value.shape)
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything unconvertible is simply incompatible
        return False
    if array.dtype.kind not in "biuf":
        return False
    if array.dtype.kind == "f" and not spec.dtype.is_floating:
        return False
    return spec.shape.is_compatible_with(array.shape)


def _drop_first_parameter(signature):
    params = list(signature.parameters.values())[1:]
    return signature.replace(parameters=params)


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None, name=None):
    """Compiles a function into a callable graph (``tf.function``); usable as a decorator with
    or without arguments."""
    options = dict(input_signature=input_signature, autograph=autograph, jit_compile=jit_compile,
                   reduce_retracing=reduce_retracing,
                   experimental_relax_shapes=experimental_relax_shapes, name=name)
    if func is None:
        return lambda f: Function(f, **options)
    return Function(func, **options)
