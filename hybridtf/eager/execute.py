"""Running a registered op eagerly: check, compute with the op's kernel for the device of its
inputs, wrap, record."""
import numpy as np

from ops import deferred_compiles

from hybridtf.eager import placement
from hybridtf.eager import tape as tape_lib
from hybridtf.framework import context, devices, fp_errors
from hybridtf.framework.constant_op import convert_to_tensor, python_scalar_array, to_numpy
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import Spec

_TAPES = tape_lib.STATE  # per-thread: .active is the list of recording tapes
_CPU = devices.CPU
_CPU_TYPES = devices.CPU_TYPES   # exact types of CPU arrays: a set lookup per input
# .cpu_only: every op runs on the CPU without asking (no GPU visible): the fast paths' condition
_PLACEMENT = devices.PLACEMENT
_NDARRAY = np.ndarray
# Hot paths make a tensor as ``out = _new_tensor(Tensor); out._value = array``: Tensor(array)
# without the frame of Tensor.__init__, which costs as much as a small op's checks.
_new_tensor = Tensor.__new__
_new_tuple = tuple.__new__   # Spec(shape, dtype) is _new_tuple(Spec, (shape, dtype)) less a frame


def execute(op, inputs, attrs):
    """Runs ``op`` on ``inputs`` (tensors) and returns its outputs as a tuple of tensors.

    The op runs where ``placement.place`` puts it (TF's placement: the ``tf.device`` scope, the
    device of its inputs, the GPU by default when there is one; the CPU for an op without a
    kernel there), with its kernel for that device's backend.
    The op's shape/dtype rule and value checks run before its kernel, so bad input raises a
    clear error instead of reaching compiled code.  While a function is traced, an op with a
    symbolic input (or a stateful op) adds a node to the graph instead.
    """
    on_cpu = True
    for t in inputs:
        if type(t) is not Tensor:
            return add_node(_graph_for(t), op, inputs, attrs)
        if type(t._value) not in _CPU_TYPES:
            on_cpu = False
    if op.stateful:
        graph = context.current_graph()
        if graph is not None:
            return add_node(graph, op, inputs, attrs)
    if on_cpu and _PLACEMENT.cpu_only:   # the common case: a set lookup per input above
        backend = _CPU
        arrays = [v if type(v := t._value) is _NDARRAY else np.asarray(v) for t in inputs]
    else:
        backend, arrays = placement.place(op, [t._value for t in inputs])
    kernel = op.kernels.get(backend.name) or op.kernel(backend)
    # (a device array's shape may not be a tuple: the CUDA simulator's refuses negative indices)
    op.infer([_new_tuple(Spec, (a.shape if backend is _CPU else tuple(a.shape), a.dtype))
              for a in arrays], attrs)
    if op.check_values is not None:
        op.check_values(arrays, attrs)
    if backend is _CPU:
        result = kernel.run_now(arrays, attrs)
    else:
        result = placement.run_kernel(op, kernel, backend, arrays, attrs)
    if op.num_outputs == 1:
        out = _new_tensor(Tensor)
        out._value = result
        outputs = (out,)
    else:
        outputs = tuple(Tensor(r) for r in result)
    if _TAPES.active and op.grad is not None:
        tape_lib.record(op, inputs, outputs, attrs, op.grad)
    return outputs


def _graph_for(symbolic):
    """The graph an op on ``symbolic`` goes to: the one being traced (a branch or loop body may
    use tensors of the graphs around it), else the tensor's own."""
    current = context.current_graph()
    return current if current is not None else symbolic.graph


def add_node(graph, op, inputs, attrs):
    """Adds ``op`` to the traced ``graph``; its outputs are symbolic tensors.

    Eager inputs are captured by value.  The tape records the original inputs, so a tensor
    watched before it was captured stays connected.
    """
    graph_inputs = [graph.as_input(t) for t in inputs]
    specs = op.infer([Spec(t._shape_tuple, t._np_dtype) for t in graph_inputs], attrs)
    outputs = graph.add_node(op, graph_inputs, attrs, specs)
    if _TAPES.active and op.grad is not None:
        tape_lib.record(op, tuple(inputs), outputs, attrs, op.grad)
    return outputs


def execute1(op, inputs, attrs):
    """``execute`` for single-output ops: returns the tensor itself."""
    return execute(op, inputs, attrs)[0]


# ---- elementwise fast path ----------------------------------------------------------------------
# Elementwise ops are the bulk of eager traffic, so on the CPU they skip the generic path:
# operands are converted inline, the dtype is checked inline, the CPU kernel's ufunc for the
# dtype is cached on the op, and broadcasting errors (which NumPy detects before running any
# loop) are turned into the op's InvalidArgumentError by its shape rule.  Operands of another
# device take the generic path.  The ufuncs run in _QUIET.run: IEEE results without NumPy's
# floating-point warnings, as TF (Kernel.run is quiet by itself; see fp_errors for the costs).
# The flat loops are compiled code, which never warns.
_QUIET = fp_errors.QUIET

LOOP_MIN_SIZE = 4096  # below this a ufunc call is as fast as a flat loop
# Dtypes whose elementwise ops have no flat loops, only a ufunc: strings (NumPy's object loops)
# and float16 (computed in float32: ops.elementwise.WidenedUfunc), by dtype.char.
_UFUNC_ONLY = "Oe"


def as_tensor(value, dtype=None):
    """A tensor for an op input: tensors pass through, variables are read (and taped)."""
    if type(value) is Tensor:
        return value
    if getattr(value, "_is_variable", False):
        return value.value()
    return convert_to_tensor(value, dtype_hint=dtype)


def _like(value, other, op_name):
    """Converts a non-tensor operand using the other operand's dtype, as TF's operators do."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return Tensor(python_scalar_array(value, other._np_dtype, op_name))
    if isinstance(value, (np.ndarray, np.generic, list, tuple)):
        return Tensor(to_numpy(value, other.dtype))
    return as_tensor(value)


def _operand(value):
    if isinstance(value, Tensor):  # eager or symbolic
        return value
    if getattr(value, "_is_variable", False):
        return value.value()
    return None


def binary_operands(op_name, x, y):
    """Both operands of a binary op as tensors, Python and NumPy values taking the other's dtype."""
    xt = _operand(x)
    yt = _operand(y)
    if xt is None:
        if yt is None:
            xt = as_tensor(x)
        else:
            xt = _like(x, yt, op_name)
    if yt is None:
        yt = _like(y, xt, op_name)
    return xt, yt


def _fast_kernel(op, dtype):
    kernel = op.cpu_ufuncs.get(dtype)
    if kernel is None:
        specs = [Spec((), dtype)] * op.scalar.arity
        if op.scalar.arity == 3:  # select: a bool condition, then the two values
            specs[0] = Spec((), np.dtype(np.bool_))
        op.infer(specs, None)  # raises the op's error for an unsupported dtype
        cpu = op.kernel(_CPU)
        reference = (cpu.reference_ufunc(dtype) if cpu.reference_ufunc is not None
                     and deferred_compiles.allowed() else None)
        key = (id(cpu), dtype)
        if reference is None or deferred_compiles.failed(key):   # (the latter raises here)
            kernel = op.cpu_ufuncs[dtype] = cpu.ufunc(dtype)
            deferred_compiles.forget(key)
            return kernel
        if deferred_compiles.queued(key):
            return reference
        try:
            with deferred_compiles.deferring():
                kernel = op.cpu_ufuncs[dtype] = cpu.ufunc(dtype)
        except deferred_compiles.KernelNotReady:
            # compiling in the background: NumPy's results meanwhile, and the compiled ufunc
            # is looked for again on the first call after
            deferred_compiles.compile_later(key, lambda: cpu.ufunc(dtype))
            return reference
    return kernel


def execute_unary(op, x):
    if (type(x) is Tensor and (type(a := x._value) is _NDARRAY or type(a) in _CPU_TYPES)
            and _PLACEMENT.cpu_only):
        kernel = op.cpu_ufuncs.get(a.dtype) or _fast_kernel(op, a.dtype)
        out = _new_tensor(Tensor)
        out._value = _QUIET.run(kernel, a)
        if _TAPES.active and op.grad is not None:
            tape_lib.record(op, (x,), (out,), None, op.grad)
        return out
    xt = as_tensor(x)
    if type(xt) is not Tensor:
        return add_node(_graph_for(xt), op, (xt,), None)[0]
    if type(xt._value) in _CPU_TYPES and _PLACEMENT.cpu_only:
        return execute_unary(op, xt)
    return execute(op, (xt,), None)[0]


def execute_binary(op, x, y):
    """Runs a binary elementwise op; this is the hottest path of eager execution."""
    if type(x) is Tensor:
        a = x._value
        ty = type(y)
        if ty is Tensor:
            b = y._value
        elif (ty is float and type(a) is _NDARRAY
              and (scalar := _FLOAT_OPERANDS.get((y, dtype := a.dtype))) is not None
              and (ufunc := op.cpu_ufuncs.get(dtype)) is not None
              and a.size < LOOP_MIN_SIZE and not _TAPES.active and _PLACEMENT.cpu_only):
            # ``x * 0.5`` with a float seen before with this dtype (only float dtypes are
            # kept), a small array and no tape: the ufunc at once, without the frame and
            # checks of _with_python_float (a tenth of a small op's time)
            out = _new_tensor(Tensor)
            out._value = _QUIET.run(ufunc, a, scalar)
            return out
        elif (ty is float and (type(a) is _NDARRAY or type(a) in _CPU_TYPES)
              and (dtype := a.dtype).kind == "f" and _PLACEMENT.cpu_only):
            return _with_python_float(op, x, a, dtype, y, True)
        else:
            x, y = binary_operands(op.name, x, y)
            if type(y) is not Tensor:
                return add_node(_graph_for(y), op, (x, y), None)[0]
            b = y._value
    elif (type(x) is float and type(y) is Tensor and type(b := y._value) in _CPU_TYPES
          and (dtype := b.dtype).kind == "f" and _PLACEMENT.cpu_only):
        return _with_python_float(op, y, b, dtype, x, False)
    else:
        x, y = binary_operands(op.name, x, y)
        if type(x) is not Tensor or type(y) is not Tensor:
            return add_node(_graph_for(x if type(x) is not Tensor else y), op, (x, y), None)[0]
        a = x._value
        b = y._value
    if ((type(a) is not _NDARRAY and type(a) not in _CPU_TYPES)
            or (type(b) is not _NDARRAY and type(b) not in _CPU_TYPES)
            or not _PLACEMENT.cpu_only):
        return execute(op, (x, y), None)[0]
    dtype = a.dtype
    if dtype is not b.dtype:
        op.infer([Spec(a.shape, dtype), Spec(b.shape, b.dtype)], None)  # raises
    ufunc = op.cpu_ufuncs.get(dtype) or _fast_kernel(op, dtype)
    if op.check_values is not None:
        op.check_values((a, b), None)
    try:  # free unless raised; NumPy checks broadcasting before running any loop
        if ((a.size < LOOP_MIN_SIZE and b.size < LOOP_MIN_SIZE) or dtype.char in _UFUNC_ONLY
                or op.cpu_ufuncs.get(dtype) is not ufunc):   # (a reference ufunc: no loops yet)
            result = _QUIET.run(ufunc, a, b)
        elif b.ndim == 0 and a.flags.c_contiguous:
            result = _array_with_scalar(op, ufunc, a, b[()], "as")
        elif a.ndim == 0 and b.flags.c_contiguous:
            result = _array_with_scalar(op, ufunc, b, a[()], "sa")
        else:
            result = _QUIET.run(ufunc, a, b)
    except ValueError:
        op.infer([Spec(a.shape, a.dtype), Spec(b.shape, b.dtype)], None)  # raises
        raise
    out = _new_tensor(Tensor)
    out._value = result
    if _TAPES.active and op.grad is not None:
        tape_lib.record(op, (x, y), (out,), None, op.grad)
    return out


def _array_with_scalar(op, ufunc, array, scalar, variant):
    """A large contiguous array with a scalar, by the CPU kernel's flat loop (``variant`` "as":
    array op scalar, "sa": scalar op array), which vectorises where a broadcasting ufunc does
    not.  While the loop is not compiled yet (an empty kernel cache), the ufunc computes the
    result and the loop compiles in the background."""
    result = np.empty(array.shape, ufunc.types[0][-1])
    kernel = op.kernel(_CPU).flat_loop(variant)
    flat = array.reshape(-1), result.reshape(-1)
    args = (flat[0], scalar, flat[1]) if variant == "as" else (scalar, *flat)
    if not deferred_compiles.allowed():
        kernel(*args)
        return result
    key = (id(kernel), array.dtype)

    def run(*loop_args):
        kernel(*loop_args)
        return result

    def by_ufunc(*loop_args_and_key):   # the loop compiles, on copies, meanwhile
        copies = [deferred_compiles.like(a) if type(a) is _NDARRAY else a
                  for a in loop_args_and_key[:-1]]
        deferred_compiles.compile_later(key, lambda: kernel(*copies))
        return (_QUIET.run(ufunc, array, scalar) if variant == "as"
                else _QUIET.run(ufunc, scalar, array))

    return deferred_compiles.run_or_substitute(run, lambda *loop_args: key, by_ufunc, *args)


def _with_python_float(op, x, a, dtype, value, tensor_first):
    """``float_tensor <op> python_float`` (``tensor_first``) or the reverse: the commonest eager
    calls (``x * 0.5``, ``x + 1.0``, ``1.0 - x``); ``a``: the tensor's CPU array, of ``dtype``.

    The float is converted to ``dtype``, as TF does (and as NumPy would inside the ufunc call,
    on every call): a ufunc takes the 0-d array of ``_float_operand`` in half the time.
    """
    ufunc = op.cpu_ufuncs.get(dtype) or _fast_kernel(op, dtype)
    scalar = _FLOAT_OPERANDS.get((value, dtype))
    if scalar is None:
        scalar = _float_operand(value, dtype)
    if (a.size < LOOP_MIN_SIZE or not a.flags.c_contiguous or dtype.char in _UFUNC_ONLY
            or op.cpu_ufuncs.get(dtype) is not ufunc):
        result = _QUIET.run(ufunc, a, scalar) if tensor_first else _QUIET.run(ufunc, scalar, a)
    else:
        result = _array_with_scalar(op, ufunc, a, scalar[()], "as" if tensor_first else "sa")
    out = _new_tensor(Tensor)
    out._value = result
    if _TAPES.active and op.grad is not None:
        constant = Tensor(scalar[()])
        tape_lib.record(op, (x, constant) if tensor_first else (constant, x), (out,), None,
                        op.grad)
    return out


# Python floats met as operands, by (value, dtype): 0-d arrays of them, never written to.
# Bounded (cleared when full); zeros are left out (0.0 and -0.0 are equal keys), and so is NaN
# (never equal to itself, so never found).
_FLOAT_OPERANDS = {}
_FLOAT_OPERANDS_MAX = 1024


def _float_operand(value, dtype):
    """``value`` (a Python float) as a 0-d array of the floating ``dtype`` (a float beyond the
    dtype's range becomes inf, as in TF), kept in _FLOAT_OPERANDS where it may be."""
    scalar = _QUIET.run(np.array, value, dtype)
    if value and value == value:
        if len(_FLOAT_OPERANDS) >= _FLOAT_OPERANDS_MAX:
            _FLOAT_OPERANDS.clear()
        _FLOAT_OPERANDS[value, dtype] = scalar
    return scalar


def execute_ternary(op, c, x, y):
    ct = as_tensor(c)
    xt, yt = binary_operands(op.name, x, y)
    for t in (ct, xt, yt):
        if type(t) is not Tensor:
            return add_node(_graph_for(t), op, (ct, xt, yt), None)[0]
        if type(t._value) not in _CPU_TYPES or not _PLACEMENT.cpu_only:
            return execute(op, (ct, xt, yt), None)[0]
    arrays = [np.asarray(t._value) for t in (ct, xt, yt)]
    op.infer([Spec(a.shape, a.dtype) for a in arrays], None)
    out = Tensor(_QUIET.run(_fast_kernel(op, arrays[1].dtype), *arrays))
    if _TAPES.active and op.grad is not None:
        tape_lib.record(op, (ct, xt, yt), (out,), None, op.grad)
    return out
