"""Runtime operators that AutoGraph-converted code calls (as ``ag__.<name>``).

Each operator decides at run time: a *symbolic* condition / iterable (a ``GraphTensor`` of the
function being traced) becomes ``control_flow_ops.cond`` / ``control_flow_ops.while_loop``;
anything else (Python values, eager tensors, which have a value now) runs as plain Python
control flow, so Python conditions on Python values are left alone and loops over Python
iterables unroll while tracing.

The converted code passes state explicitly: a branch / loop body is a function taking the
current values of the variables the statement modifies and returning their new values.
"""
import builtins
import contextlib
import functools
import inspect
import sys
import threading
import types
import warnings
import weakref

import numpy as np

from hybridtf.api import array_ops, control_flow_ops, math_ops
from hybridtf.api.math_ops import logical_and, logical_not
from hybridtf.autograph import converter
from hybridtf.eager.execute import as_tensor
from hybridtf.framework import dtypes, nest
from hybridtf.framework.constant_op import constant
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph
from hybridtf.graph.func_graph import GraphTensor


# ---- undefined values ----------------------------------------------------------------------------
class Undefined:
    """The value of a variable that has not been assigned yet (at a branch or loop entry)."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def _fail(self, *_, **__):
        raise UnboundLocalError(f"'{self.symbol_name}' is used before assignment (it is not "
                                "defined on every path through the control flow above).")

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        self._fail()

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = __pow__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail

    def __repr__(self):
        return f"<undefined {self.symbol_name}>"


class UndefinedReturnValue(Undefined):
    """``retval_`` before a converted ``return`` ran: the function returns None."""

    def __init__(self, symbol_name="retval_"):
        super().__init__(symbol_name)


def ld(namespace, names):
    """The current values of ``names`` in a ``locals()`` snapshot (Undefined for unbound ones)."""
    return tuple(namespace[n] if n in namespace else Undefined(n) for n in names)


def retval(value):
    return None if isinstance(value, Undefined) else value


def is_undefined(value):
    return isinstance(value, Undefined)


# ---- helpers -------------------------------------------------------------------------------------
def is_symbolic(value):
    return isinstance(value, GraphTensor)


def _is_tensor(value):
    return isinstance(value, Tensor) or getattr(value, "_is_variable", False)


def not_(value):
    """``not value``; a logical_not for symbolic tensors."""
    if is_symbolic(value):
        return logical_not(value)
    return not value


def and_(a, b):
    """``a() and b()``, lazily as Python does; a logical_and when either is symbolic."""
    left = a()
    if not is_symbolic(left):
        if not left:
            return left
        return b()
    right = b()
    if not is_symbolic(right):
        return left if right else logical_and(left, False)
    return logical_and(left, right)


def not_any(*flags):
    """``not (flags[0] or flags[1] or ...)``: the guard after a break / continue / return."""
    result = True
    for flag in flags:
        result = and_(lambda r=result: r, lambda f=flag: not_(f))
    return result


def _tuple(result, n):
    if n == 0:
        return ()
    return tuple(result)


def _add_context(err, message):
    """``err`` with ``message`` appended: a new error of the same type for plain TypeError /
    ValueError (so ``str(err)`` names the variables), else a note on ``err``."""
    if type(err) in (TypeError, ValueError):
        new = type(err)(f"{err} {message}")
        new.__cause__ = err
        return new
    try:
        err.add_note(message)
    except AttributeError:  # Python < 3.11
        pass
    return err


# ---- if ------------------------------------------------------------------------------------------
def if_stmt(cond, body, orelse, init, names, body_assigns=(), orelse_assigns=()):
    """``if cond: body else: orelse`` over the modified variables ``names``.

    ``body`` / ``orelse`` take the variables' values (``init``) and return the new values of the
    first ``len(names)`` of them (the ones used after the statement).  A symbolic ``cond`` runs
    ``control_flow_ops.cond``; anything else picks a branch in Python.
    """
    if not is_symbolic(cond):
        if _is_tensor(cond):
            cond = bool(cond)
        return body(*init) if cond else orelse(*init)
    return _graph_if(cond, body, orelse, init, names, body_assigns, orelse_assigns)


def _graph_if(cond, body, orelse, init, names, body_assigns, orelse_assigns):
    n = len(names)
    outputs = list(names)
    initial = dict(zip(names, init[:n]))
    returns_placeholder = {}
    for name in names:
        if not isinstance(initial[name], Undefined):
            continue
        in_body, in_else = name in body_assigns, name in orelse_assigns
        if name == "retval_" and in_body != in_else and not _LOOP.depth:
            raise ValueError(
                "A return statement inside an `if` on a tensor must be matched by a return in the "
                "other branch (or after the if): the function must return a value on every path.")
        if name == "retval_" and in_body != in_else:
            # A return in one branch of an `if` in a loop body (elsewhere the code after the `if`
            # became its else): the other branch carries a placeholder, never read since
            # `do_return` stays False there.
            returning = body if in_body else orelse
            discovered = _trace_scratch(lambda: _tuple(returning(*init), n)[names.index(name)])
            returns_placeholder[name] = discovered
            continue
        if in_body and not in_else:
            raise ValueError(f"'{name}' must also be initialized in the else branch: it is "
                             "assigned only in the if branch of an `if` on a tensor, and used "
                             "after it.")
        if in_else and not in_body:
            raise ValueError(f"'{name}' must also be initialized in the if branch: it is "
                             "assigned only in the else branch of an `if` on a tensor, and used "
                             "after it.")
        if not in_body and not in_else:
            outputs.remove(name)   # undefined before and after: not an output
    keep = [names.index(o) for o in outputs]

    def wrap(fn, which):
        def branch():
            values = _tuple(fn(*init), n)
            picked = tuple(values[i] for i in keep)
            picked = tuple(_zeros_like_spec(returns_placeholder[name])
                           if isinstance(value, Undefined) and name in returns_placeholder
                           else value for name, value in zip(outputs, picked))
            for name, value in zip(outputs, picked):
                if isinstance(value, Undefined):
                    raise ValueError(f"'{name}' must be initialized in the {which} branch of an "
                                     "`if` on a tensor.")
            return picked
        return branch

    cf = control_flow_ops
    try:
        result = cf.cond(cond, wrap(body, "if"), wrap(orelse, "else"))
    except Exception as err:  # noqa: BLE001 - re-raised with the variables' names
        if not outputs:
            raise
        raise _add_context(err, f"(in an `if` on a tensor whose branches set the variables "
                                f"{outputs!r}, outputs 0.. in that order: each must have the "
                                "same structure and dtype in both branches)")
    result = tuple(result) if result is not None else ()
    final = list(init[:n])
    for i, value in zip(keep, result):
        final[i] = value
    return tuple(final)


# ---- while ---------------------------------------------------------------------------------------
def while_stmt(test, body, init, names, exposed=()):
    """``while test(*vars): vars = body(*vars)``.  ``names`` are the loop-carried variables;
    ``exposed`` those read before being assigned in an iteration.  Runs in Python until the test
    is symbolic, then continues as a ``control_flow_ops.while_loop``."""
    body = _in_loop(body)
    state = tuple(init)
    while True:
        t = test(*state)
        if is_symbolic(t):
            return _graph_while(test, body, state, names, exposed)
        if _is_tensor(t):
            t = bool(t)
        if not t:
            return state
        state = _tuple(body(*state), len(names))


class _LoopDepth(threading.local):
    depth = 0


_LOOP = _LoopDepth()   # > 0 while a loop body is being run or traced


def _in_loop(fn):
    """``fn`` run as a loop body: a ``return`` under a tensor condition may happen in it."""
    def body(*args):
        _LOOP.depth += 1
        try:
            return fn(*args)
        finally:
            _LOOP.depth -= 1
    return body


def _trace_scratch(fn):
    """What ``fn`` returns when traced in a scratch graph that is then dropped: the structure,
    dtypes and shapes of a value before the graph that computes it exists."""
    _, result = control_flow_ops._trace_branch(func_graph.current(), fn, "discovery")
    return result


def _zeros_like_spec(value):
    """Zeros with the structure, dtypes and static shapes of ``value`` (from ``_trace_scratch``)."""

    def zeros(leaf):
        if _is_tensor(leaf):
            shape = leaf._shape_tuple
            if shape is None or None in shape:
                raise ValueError(
                    "A `return` inside a loop on a tensor returns a value whose shape "
                    f"({leaf.shape}) is not fully known while tracing; assign the result to a "
                    "variable defined before the loop, `break`, and return it after the loop.")
            return array_ops.zeros(shape, leaf.dtype)
        if isinstance(leaf, (bool, int, float, np.generic)):
            return type(leaf)(0)
        if leaf is None or isinstance(leaf, Undefined):
            return leaf
        raise ValueError(f"A `return` inside a loop on a tensor returns {leaf!r}; only tensors "
                         "and numbers (or nests of them) can leave a tf.while_loop.")
    return nest.map_structure(zeros, value)


def _symbolic_like(value):
    """A placeholder of the graph being built, standing for a loop value as the loop body sees
    it (numbers become tensors); other values are returned as they are."""
    if isinstance(value, Undefined) or not (
            _is_tensor(value) or isinstance(value, (bool, int, float, np.generic, np.ndarray))):
        return value
    tensor = as_tensor(value)
    return func_graph.current().placeholder(tensor._shape_tuple, tensor.dtype.as_numpy_dtype,
                                            "discovery")


def _with_return_placeholder(state, names, run_body):
    """``retval_`` is undefined when a tensor loop starts: it enters the loop as zeros shaped
    like what the body returns (found by tracing the body once on placeholders), as TF does."""
    if "retval_" not in names:
        return state
    index = names.index("retval_")
    if not isinstance(state[index], Undefined):
        return state
    discovered = _trace_scratch(
        lambda: run_body(tuple(_symbolic_like(v) for v in state))[index])
    if isinstance(discovered, Undefined):
        return state
    return state[:index] + (_zeros_like_spec(discovered),) + state[index + 1:]


def _check_loop_vars(state, names, exposed):
    for name, value in zip(names, state):
        if isinstance(value, Undefined):
            if name == "retval_":
                continue   # never returned from inside the loop: stays undefined after it
            if name in exposed:
                raise ValueError(f"'{name}' is used before assignment in the loop: a loop on a "
                                 "tensor needs it defined before the loop.")
            raise ValueError(f"'{name}' must be defined before the loop: it is assigned in a loop "
                             "on a tensor and used after the loop.")


def _loop_error(err, names):
    if not names:
        return err
    return _add_context(err, f"(the loop variables are {list(names)!r}, in that order: each "
                             "must keep its dtype, structure and rank)")


def _graph_while(test, body, state, names, exposed):
    n = len(names)
    state = _with_return_placeholder(state, names, lambda s: _tuple(body(*s), n))
    _check_loop_vars(state, names, exposed)
    try:
        return tuple(control_flow_ops.while_loop(lambda *v: test(*v),
                                                 lambda *v: tuple(_tuple(body(*v), n)),
                                                 tuple(state)))
    except Exception as err:  # noqa: BLE001 - re-raised with the variables' names
        raise _loop_error(err, names)


# ---- for -----------------------------------------------------------------------------------------
class _Range:
    """``tf.range(start, limit, delta)`` / ``range(...)`` with a symbolic bound: iterated by a
    counter in a while_loop instead of being materialised."""

    def __init__(self, start, limit, delta, dtype):
        self.start, self.limit, self.delta, self.dtype = start, limit, delta, dtype


def iter_call(fn, *args, **kwargs):
    """The iterable of ``for x in fn(*args, **kwargs)``; a symbolic ``tf.range`` / ``range``
    becomes a lazy range (it cannot be computed while tracing)."""
    if (fn is array_ops.range or fn is builtins.range) and \
            any(is_symbolic(a) for a in list(args) + list(kwargs.values())):
        params = list(args)
        for key in ("start", "limit", "delta"):
            if key in kwargs:
                params.append(kwargs[key])
        start, limit, delta = (params + [None, None, None])[:3]
        if limit is None:
            start, limit = 0, start
        if delta is None:
            delta = 1
        dtype = kwargs.get("dtype")
        if dtype is None:
            tensors = [v for v in (start, limit, delta) if _is_tensor(v)]
            dtype = tensors[0].dtype if tensors else dtypes.int32
            if any(isinstance(v, float) for v in (start, limit, delta)) and dtype.is_integer:
                dtype = dtypes.float32
        return _Range(start, limit, delta, dtypes.as_dtype(dtype))
    return fn(*args, **kwargs)


def for_stmt(iterable, extra_test, body, init, names, exposed=(), iterate=None):
    """``for x in iterable: vars = body(x, *vars)`` (stopping early when ``extra_test(*vars)`` is
    false, e.g. after a ``break``).  A ``_Range`` or symbolic tensor iterable becomes a
    while_loop over an int32 index; a dataset (or its iterator) in a function being traced
    becomes the loop its ``_graph_for_loop`` builds; anything else (lists, Python ranges,
    eager tensors, datasets run eagerly) is iterated in Python.  ``iterate`` names the loop's
    target variable, which keeps its last value after a loop on a tensor, as in TF."""
    n = len(names)
    body = _in_loop(body)
    if isinstance(iterable, _Range) or is_symbolic(iterable):
        return _graph_for(iterable, extra_test, body, tuple(init), names, exposed, iterate)
    graph_loop = getattr(iterable, "_graph_for_loop", None)
    if graph_loop is not None and func_graph.current() is not None:
        return _dataset_for(iterable, extra_test, body, tuple(init), names, exposed)
    state = tuple(init)
    for item in iterable:
        if extra_test is not None:
            t = extra_test(*state)
            if is_symbolic(t):
                # A break under a tensor condition: from here on each (unrolled) iteration
                # runs only while the loop has not stopped, decided when the graph runs.
                _check_loop_vars(state, names, exposed)
                state = _guarded_iteration(t, body, item, state, n, names)
                continue
            if not t:
                break
        state = _tuple(body(item, *state), n)
    return state


def _dataset_for(iterable, extra_test, body, state, names, exposed):
    """A loop over a dataset (or an iterator) in a function being traced: one loop node that
    runs a new pass over the dataset every time the function runs."""
    n = len(names)
    if "retval_" in names:
        raise ValueError("A `return` inside a loop over a dataset is not supported in a "
                         "decorated function; assign the result to a variable defined before "
                         "the loop, `break`, and return it after the loop.")
    state = _with_entry_values(iterable.element_spec, state, names, exposed,
                               lambda element, s: _tuple(body(element, *s), n))
    _check_loop_vars(state, names, exposed)
    test = None if extra_test is None else (lambda values: extra_test(*values))
    try:
        return tuple(iterable._graph_for_loop(
            lambda element, values: _tuple(body(element, *values), n), state, test))
    except Exception as err:  # noqa: BLE001 - re-raised with the variables' names
        raise _loop_error(err, names)


def _with_entry_values(element_spec, state, names, exposed, run_body):
    """Names the body assigns before reading them (the loop target in a loop nested in
    another loop) enter the loop as zeros of the type the body gives them -- a dimension that
    varies is 0 on entry -- and each iteration replaces them."""
    missing = [i for i, (name, value) in enumerate(zip(names, state))
               if isinstance(value, Undefined) and name not in exposed and name != "retval_"]
    specs = nest.flatten(element_spec)
    if not missing or not all(hasattr(spec, "dtype") for spec in specs):
        return state   # (a dataset of datasets: the loop itself reports it)

    def trace():
        graph = func_graph.current()
        element = nest.pack_sequence_as(element_spec, [
            graph.placeholder(spec.shape.dims, spec.dtype.as_numpy_dtype, "element")
            for spec in specs])
        return run_body(element, tuple(_symbolic_like(v) for v in state))
    discovered = _trace_scratch(trace)
    entry = list(state)
    for i in missing:
        entry[i] = nest.map_structure(_entry_zeros, discovered[i])
    return tuple(entry)


def _entry_zeros(leaf):
    if _is_tensor(leaf) and leaf.shape.rank is not None:
        shape = [0 if d is None else d for d in leaf.shape]
        return constant(np.zeros(shape, leaf.dtype.as_numpy_dtype))
    if isinstance(leaf, (bool, int, float, np.generic)):
        return type(leaf)(0)
    return leaf    # left to the loop's own checks (an undefined value stays one)


def _guarded_iteration(keep_going, body, item, state, n, names):
    def run():
        return _tuple(body(item, *state), n)

    def skip():
        return state
    try:
        return tuple(control_flow_ops.cond(keep_going, run, skip))
    except Exception as err:  # noqa: BLE001 - re-raised with the variables' names
        raise _loop_error(err, names)


def _graph_for(iterable, extra_test, body, state, names, exposed, iterate=None):
    n = len(names)
    if isinstance(iterable, _Range):
        dtype = iterable.dtype
        start = math_ops.cast(iterable.start, dtype)
        limit = math_ops.cast(iterable.limit, dtype)
        delta = iterable.delta
        if not _is_tensor(delta):
            if delta == 0:
                raise ValueError("range: delta must not be zero.")
            positive = delta > 0
        else:
            positive = None
        delta = math_ops.cast(delta, dtype)

        def in_range(i):
            if positive is True:
                return math_ops.less(i, limit)
            if positive is False:
                return math_ops.greater(i, limit)
            return math_ops.logical_or(
                math_ops.logical_and(math_ops.greater(delta, 0), math_ops.less(i, limit)),
                math_ops.logical_and(math_ops.less(delta, 0), math_ops.greater(i, limit)))

        def element(i):
            return i

        def advance(i):
            return i + delta
        first = start
    else:
        tensor = iterable
        rows = tensor.shape[0] if tensor.shape.rank else None
        if tensor.shape.rank == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        count = constant(rows, dtype="int32") if rows is not None else \
            array_ops.shape(tensor)[0]

        def in_range(i):
            return math_ops.less(i, count)

        def element(i):
            return array_ops.gather(tensor, i)

        def advance(i):
            return i + 1
        first = constant(0, dtype="int32")
    if iterate in names and isinstance(state[names.index(iterate)], Undefined):
        # The target enters the loop with a value of an element's type (the start of a range,
        # zeros shaped like a row); each iteration replaces it.
        position = names.index(iterate)
        if isinstance(iterable, _Range):
            entry = first
        elif iterable.shape.rank and iterable.shape[1:].is_fully_defined():
            entry = array_ops.zeros(iterable.shape[1:], iterable.dtype)
        else:
            entry = array_ops.zeros(array_ops.shape(iterable)[1:], iterable.dtype)
        state = state[:position] + (entry,) + state[position + 1:]
    state = _with_return_placeholder(
        state, names, lambda s: _tuple(body(element(_symbolic_like(first)), *s), n))
    _check_loop_vars(state, names, exposed)

    def loop_test(i, *v):
        ok = in_range(i)
        if extra_test is None:
            return ok
        return and_(lambda: ok, lambda: extra_test(*v))

    def loop_body(i, *v):
        new = _tuple(body(element(i), *v), n)
        return (advance(i),) + tuple(new)

    try:
        final = control_flow_ops.while_loop(loop_test, loop_body, (first,) + tuple(state))
    except Exception as err:  # noqa: BLE001 - re-raised with the variables' names
        raise _loop_error(err, names)
    return tuple(final[1:])


# ---- calls ---------------------------------------------------------------------------------------
# Modules whose functions are never converted: the framework itself, its dependencies and the
# standard library (their code has no control flow on a user's tensors).
_UNCONVERTED_MODULES = ("hybridtf", "ops", "numpy", "numba", "scipy", "tqdm", "llvmlite")
_CONVERTED = weakref.WeakKeyDictionary()   # function -> its converted function (or itself)


def _is_user_function(fn):
    if not isinstance(fn, types.FunctionType):
        return False
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    if module in _UNCONVERTED_MODULES or module in sys.stdlib_module_names:
        return False
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return False
    return not code.co_filename.startswith("<autograph")


def convert(fn):
    """``fn`` converted by AutoGraph, calling the operators of this module (its ``ag__``)."""
    return converter.convert(fn, sys.modules[__name__])


def _converted_function(fn):
    found = _CONVERTED.get(fn)
    if found is None:
        try:
            found = convert(fn)
        except converter.ConversionError:
            found = fn          # no source (e.g. defined in a console): run it as it is
        except Exception as err:  # noqa: BLE001 - conversion is never fatal
            warnings.warn(f"AutoGraph could not convert {fn.__qualname__}; running it "
                          f"unconverted ({type(err).__name__}: {err}).", stacklevel=4)
            found = fn
        _CONVERTED[fn] = found
    return found


def maybe_convert(fn):
    """``fn`` as it should run inside converted code: a user function (or bound method) is
    converted, so that its Python control flow on tensors becomes graph control flow;
    framework and library functions, builtins and classes run as they are."""
    if isinstance(fn, types.MethodType) and _is_user_function(fn.__func__):
        return types.MethodType(_converted_function(fn.__func__), fn.__self__)
    if _is_user_function(fn):
        return _converted_function(fn)
    if isinstance(fn, functools.partial) and _is_user_function(fn.func):
        return functools.partial(_converted_function(fn.func), *fn.args, **fn.keywords)
    return fn


class _Status(threading.local):
    enabled = False


_STATUS = _Status()   # True while a function with autograph on is being traced


@contextlib.contextmanager
def status(enabled):
    """Marks the trace of a function with autograph on (or off) for the code it calls."""
    saved, _STATUS.enabled = _STATUS.enabled, bool(enabled)
    try:
        yield
    finally:
        _STATUS.enabled = saved


def convert_in_context(fn):
    """``fn`` converted when a function with autograph on is being traced (how a Keras layer
    runs its ``call``), else ``fn`` itself."""
    if _STATUS.enabled and func_graph.tracing_graphs():
        return maybe_convert(fn)
    return fn


def converted_call(fn, args, kwargs):
    """A call in converted code: while a function is being traced, the user functions it calls
    are converted too (TF's recursive conversion); otherwise ``fn(*args, **kwargs)``."""
    if func_graph.tracing_graphs():
        fn = maybe_convert(fn)
    return fn(*args, **kwargs)
