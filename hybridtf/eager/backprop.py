"""``GradientTape``: records eager ops and computes gradients, jacobians and custom gradients;
and, built on it, the functional gradient API (``gradients_function``, ``make_vjp``, ...)."""
import contextlib
import enum
import functools
import inspect

import numpy as np

from hybridtf.eager import tape as tape_lib
from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor, is_tensor
from hybridtf.registry import array as AR
from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


def _unconnected_mode(value):
    if type(value) is UnconnectedGradients:
        return value
    try:
        return UnconnectedGradients(
            value.value if isinstance(value, UnconnectedGradients) else value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}; use "
                         "tf.UnconnectedGradients.NONE or .ZERO.") from None


def _accumulate(pending, key, grad):
    """Adds ``grad`` to the gradient collected for the tensor with id ``key`` (summed as the
    parts arrive, in the order they arrive)."""
    total = pending.get(key)
    pending[key] = grad if total is None else M.add(total, grad)


def _zeros_like(value):
    return A.zeros_like(value.value() if getattr(value, "_is_variable", False) else value)


def compute_gradients(tape, targets, sources, output_gradients, unconnected):
    """Reverse-mode accumulation over ``tape``'s records from ``targets`` to ``sources``.

    Only records on a path from a source take part; each rule is told which of its inputs
    lie on such a path (``Record.needed``), the only ones whose gradients are wanted.
    """
    source_ids = {id(s) for s in sources}
    reachable = set(source_ids)
    relevant = []
    for record in tape.records[:]:  # a snapshot: a persistent tape may grow while we work
        for x in record.inputs:
            if id(x) in reachable:
                relevant.append(record)
                for y in record.outputs:
                    reachable.add(id(y))
                break
    pending = {}   # id of a tensor -> its gradient so far
    for target, seed in zip(targets, output_gradients):
        if id(target) not in reachable or not tape_lib.differentiable(target):
            continue
        _accumulate(pending, id(target), A.ones_like(target) if seed is None else seed)
    for record in reversed(relevant):
        out_grads = []
        connected = False
        for y in record.outputs:
            key = id(y)
            # A source's gradient stays for the result; any other's is complete here.
            g = pending.get(key) if key in source_ids else pending.pop(key, None)
            out_grads.append(g)
            connected = connected or g is not None
        if not connected:
            continue
        inputs = record.inputs
        needed = [id(x) in reachable for x in inputs]
        record.needed = None if all(needed) else needed
        in_grads = record.grad_fn(record, out_grads)
        for x, needs, gx in zip(inputs, needed, in_grads):
            if needs and gx is not None:
                _accumulate(pending, id(x), gx)
    results = []
    for source in sources:
        grad = pending.get(id(source))
        if grad is not None and tape_lib.differentiable(source):
            results.append(grad)
        elif unconnected is UnconnectedGradients.ZERO and tape_lib.differentiable(source):
            results.append(_zeros_like(source))
        else:
            results.append(None)
    return results


class GradientTape:
    """Records operations for automatic differentiation (``tf.GradientTape``).

    Ops run inside the context are recorded when one of their inputs is watched: tensors passed
    to ``watch``, trainable variables read inside the context (unless
    ``watch_accessed_variables=False``), and anything computed from them.  A tape computes one
    set of gradients unless it is ``persistent``.  Tapes nest, which gives higher-order
    gradients.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = None
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._released_variables = {}   # the watched variables of a released tape, by id
        self._recording = False

    def __enter__(self):
        self._push_tape()
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._pop_tape()
        return False

    def _push_tape(self):
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter an "
                             "already-active tape.")
        if self._tape is None:
            self._tape = tape_lib.Tape(self._persistent, self._watch_accessed_variables)
        tape_lib.STATE.active.append(self._tape)
        self._recording = True

    def _pop_tape(self):
        if not self._recording:
            raise ValueError("Tape is not recording.")
        for i in range(len(tape_lib.STATE.active) - 1, -1, -1):
            if tape_lib.STATE.active[i] is self._tape:
                del tape_lib.STATE.active[i]
                break
        self._recording = False

    @contextlib.contextmanager
    def _ensure_recording(self):
        if self._recording:
            yield
        else:
            self._push_tape()
            try:
                yield
            finally:
                self._pop_tape()

    def _live_tape(self):
        if self._tape is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                               "of gradients (or jacobians); create it with persistent=True to "
                               "compute several.")
        return self._tape

    def watch(self, tensor):
        """Ensures ``tensor`` (a tensor, variable, or a nest of them) is traced by this tape."""
        if self._tape is None:
            self._tape = tape_lib.Tape(self._persistent, self._watch_accessed_variables)
        for t in nest.flatten(tensor):
            if not is_tensor(t):
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not "
                                 "tf.Tensor or tf.Variable.")
            self._tape.watch(t)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stops recording operations on this tape."""
        if self._tape is None or not self._recording:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._pop_tape()
        try:
            yield
        finally:
            self._push_tape()

    def reset(self):
        """Clears everything recorded so far, as if the context had been exited and re-entered."""
        self._pop_tape()
        self._tape = None
        self._push_tape()

    def watched_variables(self):
        """The variables watched by this tape, in order of construction."""
        variables = self._tape.variables if self._tape is not None else self._released_variables
        return tuple(sorted(variables.values(), key=lambda v: v._unique_id))

    def _release_if_done(self):
        if not self._persistent:
            self._released_variables = self._tape.variables
            self._tape = None

    def _flat_targets(self, target):
        if target is None:
            raise TypeError("Argument `target` should be a list or nested structure of Tensors or "
                            "Variables to be differentiated, but received None.")
        if type(target) is Tensor:   # the commonest target: one tensor
            return [target]
        flat = []
        for t in nest.flatten(target):
            if getattr(t, "_is_variable", False):
                with self._ensure_recording():
                    t = t.value()
            elif not isinstance(t, Tensor):
                raise TypeError(f"gradient: targets must be tensors or variables, got {t!r}.")
            flat.append(t)
        return flat

    @staticmethod
    def _flat_sources(sources):
        if type(sources) is Tensor or getattr(sources, "_is_variable", False):
            return [sources]   # the commonest: one tensor or variable
        flat = nest.flatten(sources)
        for s in flat:
            if not is_tensor(s):
                raise ValueError(f"gradient: sources must be tensors or variables, got {s!r} of "
                                 f"type {type(s).__name__}.")
        return flat

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of targets)/d(source) for each source, in the structure of ``sources``.

        ``output_gradients`` weights each target (default: ones); sources the targets do not
        depend on get None, or zeros with ``unconnected_gradients=tf.UnconnectedGradients.ZERO``.
        Integer sources always get None.
        """
        tape = self._live_tape()
        if self._recording and not self._persistent:
            self._pop_tape()
        mode = _unconnected_mode(unconnected_gradients)
        flat_targets = self._flat_targets(target)
        flat_sources = self._flat_sources(sources)
        if output_gradients is None:
            seeds = [None] * len(flat_targets)
        else:
            seeds = [None if g is None else as_tensor(g) for g in nest.flatten(output_gradients)]
            if len(seeds) != len(flat_targets):
                raise ValueError(f"gradient: got {len(seeds)} output_gradients for "
                                 f"{len(flat_targets)} targets.")
            for t, g in zip(flat_targets, seeds):
                if g is not None and tuple(g.shape) != tuple(t.shape):
                    raise ValueError(f"gradient: output_gradients shape {g.shape} does not match "
                                     f"its target's shape {t.shape}.")
        grads = compute_gradients(tape, flat_targets, flat_sources, seeds, mode)
        self._release_if_done()
        if len(grads) == 1 and flat_sources[0] is sources:
            return grads[0]
        return nest.pack_sequence_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d target[i...] / d source[j...] for each source: shape target.shape + source.shape."""
        tape = self._live_tape()
        if self._recording and not self._persistent:
            self._pop_tape()
        mode = _unconnected_mode(unconnected_gradients)
        target_t, = self._flat_targets(target)
        flat_sources = self._flat_sources(sources)
        rows = _vector_jacobian_rows(tape, target_t, flat_sources, mode,
                                     _one_hot_seeds(target_t.shape, batch=False))
        result = [_assemble(r, tuple(target_t.shape), s, batch=False)
                  for r, s in zip(rows, flat_sources)]
        self._release_if_done()
        return nest.pack_sequence_as(sources, result)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example jacobians: shape [batch] + target.shape[1:] + source.shape[1:].

        Assumes target[i] depends only on source[i], as TF does.
        """
        tape = self._live_tape()
        if self._recording and not self._persistent:
            self._pop_tape()
        mode = _unconnected_mode(unconnected_gradients)
        target_t, = self._flat_targets(target)
        source_shape = tuple(source.shape)
        if target_t.ndim < 2 or len(source_shape) < 2 or target_t.shape[0] != source_shape[0]:
            raise ValueError(f"Need first dimension of target shape ({target_t.shape}) and source "
                             f"shape ({source.shape}) to match, with ranks >= 2.")
        rows, = _vector_jacobian_rows(tape, target_t, [source], mode,
                                      _one_hot_seeds(target_t.shape, batch=True))
        self._release_if_done()
        return _assemble(rows, tuple(target_t.shape), source, batch=True)


def _one_hot_seeds(shape, batch):
    """Output gradients selecting one target element (or one per-example element) at a time."""
    shape = tuple(shape)
    inner = shape[1:] if batch else shape
    count = int(np.prod(inner))
    for j in range(count):
        seed = np.zeros((count,), dtype=np.float64)
        seed[j] = 1
        seed = seed.reshape(inner)
        yield np.broadcast_to(seed, shape) if batch else seed


def _vector_jacobian_rows(tape, target, sources, mode, seeds):
    rows = [[] for _ in sources]
    dtype = target._np_dtype
    for seed in seeds:
        grads = compute_gradients(tape, [target], sources, [Tensor(seed.astype(dtype))], mode)
        for row, g in zip(rows, grads):
            row.append(g)
    return rows


def _assemble(rows, target_shape, source, batch):
    source_shape = tuple(source.shape)
    if not rows or any(g is None for g in rows):
        if rows and all(g is None for g in rows):
            return None
        rows = [g if g is not None else _zeros_like(source) for g in rows]
    if not rows:
        return A.zeros(target_shape + (source_shape[1:] if batch else source_shape),
                       dtype=source.dtype)
    stacked = A.stack(rows, axis=1 if batch else 0)
    if batch:
        return A.reshape(stacked, target_shape + source_shape[1:])
    return A.reshape(stacked, target_shape + source_shape)


# ---- custom gradients ---------------------------------------------------------------------------
def custom_gradient(f=None):
    """Decorator for a function returning ``(result, grad_fn)``; ``grad_fn(*upstream)`` gives the
    gradients with respect to the inputs (and, with a ``variables`` keyword, to the variables the
    function read: it then returns ``(input_grads, variable_grads)``).
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        args = nest.map_structure(
            lambda a: as_tensor(a) if is_tensor(a) or isinstance(a, (int, float, np.ndarray,
                                                                     np.generic)) else a,
            list(args))
        with tape_lib.stop_recording(), tape_lib.watch_variable_reads() as watcher:
            result, grad_fn = f(*args, **kwargs)
        flat_results = nest.flatten(result)
        outputs = tuple(Tensor(as_tensor(r)._value) for r in flat_results)
        if tape_lib.STATE.active:
            inputs = [a for a in nest.flatten(args) if isinstance(a, Tensor)]
            variables = list(watcher.variables.values())
            reads = [v.value() for v in variables]  # watched and taped outside the stop
            wants_variables = "variables" in inspect.signature(grad_fn).parameters

            def backward(record, grads):
                grads = [g if g is not None else _zeros_like(y)
                         for g, y in zip(grads, record.outputs)]
                if wants_variables:
                    in_grads, var_grads = grad_fn(*grads, variables=variables)
                else:
                    if variables:
                        raise TypeError(
                            f"The grad_fn of @custom_gradient function {f.__name__!r} must accept "
                            "a `variables` keyword argument, because the function reads "
                            f"variables {[v.name for v in variables]}.")
                    in_grads, var_grads = grad_fn(*grads), []
                in_grads = nest.flatten(in_grads)
                if len(in_grads) != len(inputs):
                    raise ValueError(f"custom_gradient function {f.__name__!r} has "
                                     f"{len(inputs)} tensor inputs but its grad_fn returned "
                                     f"{len(in_grads)} gradients.")
                return [None if g is None else as_tensor(g) for g in
                        list(in_grads) + list(var_grads)]

            tape_lib.record(None, tuple(inputs) + tuple(reads), outputs, None, backward)
        return nest.pack_sequence_as(result, list(outputs))

    return decorated


# ---- the functional gradient API ----------------------------------------------------------------
def _parameter_positions(f, params, args):
    """The positions in the call's ``args`` of the parameters to differentiate: ``params`` None
    means every positional parameter of ``f`` (every argument when ``f`` takes ``*args`` or
    cannot be inspected); names are looked up in ``f``'s signature; ints are positions."""
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):
        signature = None
    positional = [] if signature is None else [
        p for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_varargs = signature is None or any(
        p.kind == p.VAR_POSITIONAL for p in signature.parameters.values())
    if params is None:
        count = len(args) if takes_varargs else min(len(positional), len(args))
        return list(range(count))
    params = list(params)
    if all(isinstance(p, str) for p in params):
        names = [p.name for p in positional]
        missing = [p for p in params if p not in names]
        if missing:
            raise ValueError(f"params {missing} are not positional parameters of "
                             f"{getattr(f, '__name__', f)!r}, whose are {names}.")
        positions = [names.index(p) for p in params]
    elif all(isinstance(p, int) and not isinstance(p, bool) for p in params):
        positions = params
    else:
        raise ValueError(f"params must be all strings or all integers; got {params}.")
    for i in positions:
        if not -len(args) <= i < len(args):
            raise ValueError(f"parameter position {i} is out of range for a call with "
                             f"{len(args)} positional arguments.")
    return [i % len(args) for i in positions]


def _returned(f, result):
    if result is None:
        raise ValueError("Cannot differentiate a function that returns None; did you forget to "
                         f"return a value from {getattr(f, '__name__', f)}?")
    return result


def make_vjp(f, params=None, persistent=True):
    """Returns a function that computes ``f`` and its vector-Jacobian product.

    The returned function takes ``f``'s positional arguments and returns ``(result, vjp)``:
    ``vjp(dy=None)`` gives the list of gradients of ``result`` (weighted by ``dy``, a structure
    like ``result``; ones by default) with respect to the parameters in ``params`` (names or
    positions of ``f``'s parameters; None: all of them).  Each parameter counts separately even
    when the same tensor is passed twice.  With ``persistent=False`` ``vjp`` can be called once.

    >>> result, vjp = make_vjp(lambda x: x * x)(tf.constant(3.0))   # result: 9.0
    >>> vjp()                                                       # [6.0]
    """
    def decorated(*args, **kwargs):
        if kwargs:
            raise ValueError("Functions to be differentiated cannot receive keyword arguments.")
        positions = _parameter_positions(f, params, args)
        args = list(args)
        tape = GradientTape(persistent=persistent)
        sources = []
        with tape:
            for i in positions:
                source = as_tensor(args[i])
                if any(source is s for s in sources):   # the same tensor passed twice
                    source = execute1(AR.IDENTITY, [source], None)
                sources.append(source)
                args[i] = source
            for source in sources:   # after the copies, which must not connect them
                tape.watch(source)
            result = _returned(f, f(*args))
            # Fresh tensors: a result that is one of the parameters still has its gradient.
            targets = [execute1(AR.IDENTITY, [as_tensor(r)], None)
                       for r in nest.flatten(result)]
            result = nest.pack_sequence_as(result, targets)

        def vjp(dy=None):
            seeds = None if dy is None else [as_tensor(d) for d in nest.flatten(dy)]
            return tape.gradient(targets, sources, output_gradients=seeds)
        return result, vjp
    return decorated


def val_and_grad_function(f, params=None):
    """Returns a function computing ``f`` and its gradients with respect to ``params``.

    ``f``'s result (a tensor, or a structure of tensors whose sum is differentiated) comes back
    with the list of gradients, one per parameter: ``value, grads = fn(*args)``.  The keyword
    argument ``dy`` weights the result (a vector-Jacobian product) instead of ones.
    """
    def decorated(*args, **kwargs):
        dy = kwargs.pop("dy", None)
        if kwargs:
            raise ValueError("Functions to be differentiated cannot receive keyword arguments.")
        value, vjp = make_vjp(f, params)(*args)
        return value, vjp(dy=dy)
    return decorated


def gradients_function(f, params=None):
    """Returns a function computing the gradients of ``f`` with respect to ``params`` (names
    or positions of ``f``'s parameters; None: all), as a list; it also takes ``dy``, as
    ``val_and_grad_function``.  Nesting it gives higher-order derivatives."""
    def decorated(*args, **kwargs):
        return val_and_grad_function(f, params)(*args, **kwargs)[1]
    return decorated


def implicit_val_and_grad(f):
    """Returns a function computing ``f`` and its gradients with respect to every trainable
    variable ``f`` reads: ``value, grads_and_vars = fn(*args, **kwargs)``, the pairs
    ``(gradient, variable)`` in the variables' order of creation (ready for an optimizer's
    ``apply_gradients``).  ValueError if ``f`` returns None or reads no trainable variable.
    """
    def grad_fn(*args, **kwargs):
        with GradientTape() as tape:
            result = _returned(f, f(*args, **kwargs))
        variables = list(tape.watched_variables())
        if not variables:
            raise ValueError("No trainable variables were accessed while the function was "
                             "being computed.")
        grads = tape.gradient(nest.flatten(result), variables)
        return result, list(zip(grads, variables))
    return grad_fn


def implicit_grad(f):
    """Returns a function computing the ``(gradient, variable)`` pairs of ``f`` with respect to
    every trainable variable it reads (as ``implicit_val_and_grad``, without the value)."""
    def grad_fn(*args, **kwargs):
        return implicit_val_and_grad(f)(*args, **kwargs)[1]
    return grad_fn


# The names these functions had in TF's eager-era API (``tfe.*``).
implicit_value_and_gradients = implicit_val_and_grad
implicit_gradients = implicit_grad
value_and_gradients_function = val_and_grad_function
