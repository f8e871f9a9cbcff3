"""Fuzzing: every public op with hostile arguments, eagerly and inside ``tf.function``.

For every call, whatever the arguments: no crash; only TF's error types (``tf.errors.*``,
ValueError, TypeError -- never an IndexError, a KeyError or an error of NumPy or Numba from
inside a kernel); no warning (NumPy's floating-point warnings included: TF is silent); tensors
out, never an object tensor of anything but strings; the traced result equal to the eager one;
and, where the input is valid and a NumPy reference exists (``fuzz_references``), NumPy's result.

The ops are enumerated from the public namespaces and the Tensor operators, so an op added later
is fuzzed without touching this file; arguments are drawn by parameter name (``fuzz_args``).

The campaign runs in a child process, so that a crash fails one test instead of killing the
session.  ``HYBRIDTF_FUZZ_CHILD=1 pytest tests/test_fuzz.py -k NAME`` runs it in-process (to
debug one op); ``HYPOTHESIS_PROFILE=thorough`` runs more examples; with
``HYBRIDTF_FUZZ_REPORT=FILE`` every outcome is recorded instead of stopping at the first failure,
and the counts by kind are written to FILE as JSON.  The examples are the same on every run
(derandomized, so that a test run is reproducible); ``HYBRIDTF_FUZZ_RANDOM=1`` draws new ones
each run, to search further.
"""
import collections
import inspect
import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf.api import operators
from hybridtf.framework import nest

import fuzz_args
from fuzz_references import Approx, reference

IN_CHILD = os.environ.get("HYBRIDTF_FUZZ_CHILD") == "1"
REPORT = os.environ.get("HYBRIDTF_FUZZ_REPORT")
RANDOM = os.environ.get("HYBRIDTF_FUZZ_RANDOM") == "1"

NAMESPACES = [("tf", tf), ("tf.math", tf.math), ("tf.nn", tf.nn), ("tf.linalg", tf.linalg),
              ("tf.random", tf.random), ("tf.io", tf.io), ("tf.image", tf.image)]
# Public functions that are not ops on tensor arguments (each has its own tests).
NOT_OPS = {
    "tf.cond", "tf.while_loop", "tf.py_function",   # run user callables
    "tf.function", "tf.custom_gradient",              # decorators
    "tf.executing_eagerly",                           # differs inside a function by definition
    "tf.get_logger",                                  # returns the logging.Logger
    "tf.random.set_seed",                             # global state
    "tf.io.read_file", "tf.io.write_file",            # touch files (tf.io.gfile: a module)
}
# Ops whose result is not (always) a tensor: ``==`` and ``!=`` give a Python bool for operands
# that cannot be compared, as in TF.
NON_TENSOR_RESULTS = {"tf.as_dtype", "tf.is_tensor", "tf.print", "Tensor.__eq__",
                      "Tensor.__ne__", "tf.Assert", "tf.assert_equal", "tf.assert_greater",
                      "tf.assert_less", "tf.assert_rank"}   # the assertions return None
# Arguments that stay Python values when traced: TF's tf.constant takes no symbolic tensor.
CONSTANT_ARGUMENTS = {"tf.constant": {"value"}}
# The child's address space: hybridtf needs well under 1 GiB.
MEMORY_LIMIT = 6 << 30
# The error types TF raises for bad input.
ALLOWED_ERRORS = (tf.errors.OpError, ValueError, TypeError)
_LIBRARIES = ("numpy", "numba", "llvmlite")


class Op:
    """A public op to fuzz: how to call it and what its parameters are called."""

    def __init__(self, name, fn, params, varargs=None, method=None):
        self.name = name
        self.fn = fn
        self.params = params          # [(name, required)]
        self.varargs = varargs        # the name of *args, or None
        self.method = method          # Tensor operators: the method's name
        self.random = name.startswith("tf.random.") or "dropout" in name or \
            "random_flip" in name

    @classmethod
    def from_function(cls, name, fn):
        params, varargs = [], None
        for p in inspect.signature(fn).parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                varargs = p.name
            elif p.name != "name" and p.kind is not p.VAR_KEYWORD:
                params.append((p.name, p.default is p.empty))
        return cls(name, fn, params, varargs)

    @classmethod
    def from_operator(cls, method, fn):
        arity = sum(1 for p in inspect.signature(fn).parameters.values()
                    if p.default is p.empty)
        other = "key" if method == "__getitem__" else "other"
        params = [("self", True)] + [(other, True)] * (arity - 1)
        return cls(f"Tensor.{method}", fn, params, method=method)

    def invoke(self, args, kwargs):
        if self.method is not None:
            rest = [kwargs[p] for p, _ in self.params[1:]]
            return getattr(kwargs["self"], self.method)(*rest)
        return self.fn(*args, **kwargs)


def public_ops():
    """Every public op: the functions of the public namespaces and the Tensor operators."""
    ops, seen = {}, set()
    for prefix, module in NAMESPACES:
        for attr in sorted(dir(module)):
            fn = getattr(module, attr)
            name = f"{prefix}.{attr}"
            if attr.startswith("_") or not inspect.isfunction(fn) or id(fn) in seen:
                continue
            seen.add(id(fn))
            if name not in NOT_OPS:
                ops[name] = Op.from_function(name, fn)
    for method, fn in operators.OPERATORS.items():
        ops[f"Tensor.{method}"] = Op.from_operator(method, fn)
    return ops


OPS = public_ops()
# Examples per op: the profile's max_examples times 48, spread over all the ops, so that the
# campaign's time stays bounded as ops are added (about 20 s on 2 cores with the default
# profile; HYPOTHESIS_PROFILE=thorough runs twelve times as many).
EXAMPLES_PER_OP = max(4, settings.default.max_examples * 48 // len(OPS))


# ---- drawing a call -----------------------------------------------------------------------------
# Parameters whose tensors become inputs of the traced function: TF's names for tensor operands.
# The rest are closed over, as Python values and attributes are in TF (a parameter that may
# only be a Python value -- a flag, a count -- would otherwise be a false finding).
TENSOR_PARAMS = {"self", "other", "x", "y", "a", "b", "input", "input_", "input_tensor", "tensor",
                 "value", "values", "inputs", "features", "logits", "labels", "params",
                 "indices", "data", "segment_ids", "t", "condition", "filters", "out_backprop",
                 "bias", "predictions", "updates", "mask", "arr", "weights", "image", "images",
                 "contents", "records"}


def _is_tensor_param(param):
    return param in TENSOR_PARAMS


@st.composite
def self_tensors(draw, ctx):
    """The tensor (or variable) an operator is called on."""
    value = draw(fuzz_args.tensor_args(ctx))
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return value
    return tf.constant(draw(fuzz_args.arrays(ctx.dtype, ctx.shape)))


@st.composite
def calls(draw, op):
    """(context, positional args, keyword args) for one call of ``op``."""
    ctx = draw(fuzz_args.contexts)
    kwargs = {}
    for param, required in op.params:
        if not (required or draw(st.booleans())):
            continue
        if param == "self":
            kwargs[param] = draw(self_tensors(ctx))
        elif param == "key":
            kwargs[param] = draw(fuzz_args.index_keys(ctx))
        else:
            kwargs[param] = draw(fuzz_args.for_param(ctx, param))
    args = draw(st.lists(fuzz_args.tensor_args(ctx), max_size=3)) if op.varargs else []
    return ctx, args, kwargs


# ---- running it ---------------------------------------------------------------------------------
class Outcome:
    def __init__(self, result=None, error=None, caught=()):
        self.result = result
        self.error = error
        self.warnings = [f"{w.category.__name__}: {w.message}" for w in caught]


def run(call):
    """Runs ``call()``, recording what it returned or raised and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as err:  # the fuzzer classifies every error (see error_problem)
            return Outcome(error=err, caught=caught)
    return Outcome(result=result, caught=caught)


def _symbolic_positions(op, args, kwargs):
    """The arguments that become the traced function's inputs: eager tensors (and lists of
    them) passed for tensor parameters."""
    def eligible(key, value):
        if key in CONSTANT_ARGUMENTS.get(op.name, ()):
            return False
        if fuzz_args.PARAMS.get(key) is fuzz_args.tensor_lists:
            return isinstance(value, list) and value and all(type(v) is tf.Tensor for v in value)
        return type(value) is tf.Tensor and _is_tensor_param(key)
    keys = [k for k, v in kwargs.items() if eligible(k, v)]
    positions = [i for i, v in enumerate(args) if type(v) is tf.Tensor]
    return keys, positions


def _spec(value, dynamic):
    if isinstance(value, list):
        return [_spec(v, dynamic) for v in value]
    shape = [None] * value.ndim if dynamic else value.shape
    return tf.TensorSpec(shape, value.dtype)


def traced_call(op, args, kwargs, dynamic):
    """``op`` called inside a ``tf.function`` whose inputs are the call's tensors (with unknown
    dimensions when ``dynamic``)."""
    keys, positions = _symbolic_positions(op, args, kwargs)
    inputs = [kwargs[k] for k in keys] + [args[i] for i in positions]

    def body(symbolic):
        new_kwargs = dict(kwargs, **dict(zip(keys, symbolic)))
        new_args = list(args)
        for i, value in zip(positions, symbolic[len(keys):]):
            new_args[i] = value
        return op.invoke(new_args, new_kwargs)

    signature = [[_spec(v, dynamic) for v in inputs]]
    return lambda: tf.function(body, input_signature=signature)(inputs)


# ---- judging it ---------------------------------------------------------------------------------
def error_problem(err):
    """None for one of TF's error types raised by hybridtf, else what is wrong with it."""
    kind = type(err)
    if isinstance(err, ALLOWED_ERRORS) and kind.__module__.split(".")[0] not in _LIBRARIES:
        return None
    return f"escaped {kind.__module__}.{kind.__qualname__}"


def _leaves(result):
    return [leaf for leaf in nest.flatten(result)] if isinstance(result, (list, tuple)) \
        else [result]


def result_problems(op, outcome):
    """What is wrong with a successful call's result."""
    problems = [f"warning {w}" for w in outcome.warnings]
    if op.name in NON_TENSOR_RESULTS:
        return problems
    for leaf in _leaves(outcome.result):
        if not isinstance(leaf, tf.Tensor):
            problems.append(f"not a tensor: {type(leaf).__name__}")
            continue
        if type(leaf) is tf.Tensor and leaf.dtype == tf.string and not all(
                isinstance(e, bytes) for e in np.asarray(leaf._value, object).reshape(-1)):
            problems.append("object tensor: a string tensor holding non-strings")
    return problems


def _tolerance(dtype):
    return {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float16): (1e-3, 1e-3)}.get(
        np.dtype(dtype), (1e-11, 1e-14))


def mismatch(actual, expected):
    """None when ``actual`` (an array) matches ``expected`` (array or Approx), else why not."""
    atol_extra = 0.0
    if isinstance(expected, Approx):
        expected, atol_extra = expected.value, expected.atol
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if actual.dtype == object or expected.dtype == object:
        return None if actual.tolist() == expected.tolist() else f"{actual!r} != {expected!r}"
    with np.errstate(all="ignore"):
        expected = expected.astype(actual.dtype)
    if actual.dtype.kind in "fc":
        rtol, atol = _tolerance(actual.dtype)
        close = np.isclose(actual, expected, rtol=rtol, atol=atol + atol_extra, equal_nan=True)
        same_inf = np.isinf(actual) == np.isinf(expected)
        ok = bool(np.all(close & same_inf))
    else:
        ok = bool(np.array_equal(actual, expected))
    return None if ok else f"{actual!r}, expected {expected!r}"


def _as_numpy(value):
    if isinstance(value, str):
        return value.encode()   # a Python string is a tf.string, of bytes
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return np.asarray(value)
    if isinstance(value, list) and value and all(isinstance(v, (tf.Tensor, tf.Variable))
                                                 for v in value):
        return [np.asarray(v) for v in value]
    return value


def _reference_arguments(kwargs):
    """The call's arguments for its NumPy reference, or None when a tensor argument is a nested
    Python list (converted by TF's rules, which NumPy's do not match)."""
    converted = {}
    for key, value in kwargs.items():
        tensors = isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (tf.Tensor, tf.Variable)) for v in value)
        if fuzz_args.PARAMS.get(key) is fuzz_args.tensor_lists and not tensors:
            return None
        if _is_tensor_param(key) and isinstance(value, (list, tuple)) and not tensors:
            return None
        if _is_tensor_param(key) and type(value) is float:
            value = np.float32(value)   # TF converts a Python float to a float32 tensor first
        converted[key] = _as_numpy(value)
    return converted


def numpy_problem(op, args, kwargs, outcome):
    if op.random or op.name in NON_TENSOR_RESULTS or args:
        return None
    ref_kwargs = _reference_arguments(kwargs)
    expected = None if ref_kwargs is None else reference(op.name, ref_kwargs)
    if expected is None:
        return None
    actual = _leaves(outcome.result)
    expected = expected if isinstance(expected, list) else [expected]
    if len(actual) != len(expected):
        return f"differs from NumPy: {len(actual)} results, expected {len(expected)}"
    for a, e in zip(actual, expected):
        why = mismatch(np.asarray(a), e)
        if why:
            return f"differs from NumPy: {why}"
    return None


# The errors of TF's (and hybridtf's) rules for Python code on symbolic tensors.
_TRACING_RULES = ("Iterating over a symbolic tf.Tensor", "as a Python bool is not allowed")


def _traceable(kwargs, dynamic, eager, traced):
    """Whether a call that works eagerly must work traced.  Not where TF's rules for Python code
    on symbolic tensors forbid what the call does eagerly (iterating a tensor that stands where a
    list is expected, using one as a Python bool), nor when a list of symbolic tensors stands for
    one tensor (hybridtf does not pack those into a tensor: tf.stack them), nor when ``==`` found
    its operands incomparable (TF's graphs say False at run time; hybridtf's raise the op's
    error), nor where hybridtf says that it needs a dimension known when tracing (and the trace
    left it unknown)."""
    if isinstance(eager.result, bool):
        return False
    message = str(traced.error)
    if any(rule in message for rule in _TRACING_RULES):
        return False
    if dynamic and "known when tracing" in message:
        return False
    return not any(fuzz_args.PARAMS.get(key) is fuzz_args.tensor_lists and
                   isinstance(value, list) and isinstance(traced.error, TypeError)
                   for key, value in kwargs.items())


def traced_problem(op, kwargs, dynamic, eager, traced):
    """What is wrong with the traced call, given the eager one."""
    if traced.error is not None:
        problem = error_problem(traced.error)
        if problem:
            return f"traced: {problem}"
        if eager.error is None and _traceable(kwargs, dynamic, eager, traced):
            return f"traced rejects a valid call: {type(traced.error).__name__}: {traced.error}"
        return None
    problems = result_problems(op, traced)
    if problems:
        return "traced: " + "; ".join(problems)
    if eager.error is not None:
        return f"traced accepts what eager rejects ({type(eager.error).__name__}: {eager.error})"
    if op.random or op.name in NON_TENSOR_RESULTS:
        return None
    actual, expected = _leaves(traced.result), _leaves(eager.result)
    if len(actual) != len(expected):
        return f"traced gives {len(actual)} results, eager {len(expected)}"
    for a, e in zip(actual, expected):
        if a.dtype != e.dtype:
            return f"traced gives dtype {a.dtype.name}, eager {e.dtype.name}"
        why = mismatch(np.asarray(a), np.asarray(e))
        if why:
            return f"traced differs from eager: {why}"
    return None


def problems_of(op, args, kwargs, dynamic):
    """Every problem found calling ``op`` eagerly and traced; also counts the outcomes."""
    eager = run(lambda: op.invoke(args, kwargs))
    problems = []
    if eager.error is not None:
        problem = error_problem(eager.error)
        if problem:
            problems.append(f"{problem}: {eager.error}")
    else:
        problems += result_problems(op, eager)
        problem = numpy_problem(op, args, kwargs, eager)
        if problem:
            problems.append(problem)
    traced = run(traced_call(op, args, kwargs, dynamic))
    problem = traced_problem(op, kwargs, dynamic, eager, traced)
    if problem:
        problems.append(problem)
    STATS.count(op.name, f"args={args!r}, kwargs={kwargs!r}, dynamic={dynamic}"[:600], eager,
                traced, problems)
    return problems


class Stats:
    """Counts of calls and problems by kind (for ``HYBRIDTF_FUZZ_REPORT``)."""

    def __init__(self):
        self.calls = 0
        self.outcomes = collections.Counter()
        self.problems = collections.Counter()
        self.by_op = collections.Counter()
        self.examples = {}

    def count(self, name, call, eager, traced, problems):
        self.calls += 2
        for mode, outcome in (("eager", eager), ("traced", traced)):
            kind = "ok" if outcome.error is None else type(outcome.error).__name__
            self.outcomes[f"{mode} {kind}"] += 1
        for problem in problems:
            kind = problem.split(":")[0]
            self.problems[kind] += 1
            self.by_op[f"{name}: {kind}"] += 1
            self.examples.setdefault(f"{name}: {kind}", f"{problem[:300]}\n    in {call}")

    def write(self, path):
        pathlib.Path(path).write_text(json.dumps(
            {"calls": self.calls, "problems": dict(self.problems.most_common()),
             "outcomes": dict(self.outcomes.most_common()), "by_op": dict(self.by_op),
             "examples": self.examples},
            indent=1))


STATS = Stats()


# ---- the tests ----------------------------------------------------------------------------------
def test_public_ops_are_enumerated():
    assert {"tf.add", "tf.reshape", "tf.nn.conv2d", "tf.math.floormod", "Tensor.__getitem__",
            "tf.random.uniform", "tf.constant", "tf.image.resize", "tf.io.decode_png",
            "tf.io.decode_csv"} <= set(OPS)
    assert not set(OPS) & NOT_OPS


if IN_CHILD:
    try:
        import resource
    except ImportError:   # not on Windows
        resource = None
    if resource is not None:
        # An op that allocates without bound fails with a MemoryError (a finding) instead of
        # exhausting the machine.
        _hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT if _hard == resource.RLIM_INFINITY
                                                else min(MEMORY_LIMIT, _hard), _hard))

    @pytest.fixture(scope="module", autouse=True)
    def _report():
        yield
        if REPORT:
            STATS.write(REPORT)

    @pytest.mark.parametrize("name", sorted(OPS))
    @settings(max_examples=EXAMPLES_PER_OP, derandomize=not RANDOM)
    @given(data=st.data())
    def test_op_with_hostile_arguments(name, data):
        op = OPS[name]
        _, args, kwargs = data.draw(calls(op), label="call")
        dynamic = data.draw(st.booleans(), label="traced with unknown dimensions")
        problems = problems_of(op, args, kwargs, dynamic)
        if not REPORT:
            assert not problems, f"{name}(*{args!r}, **{kwargs!r}):\n  " + "\n  ".join(problems)

else:
    def test_fuzz_campaign_in_a_child_process():
        """Runs the campaign in a child process: a crash there fails this test only."""
        root = pathlib.Path(__file__).resolve().parent.parent
        env = dict(os.environ, HYBRIDTF_FUZZ_CHILD="1")
        child = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "--no-header", str(pathlib.Path(__file__).resolve())],
                               cwd=root, env=env, capture_output=True, text=True, timeout=1800)
        output = (child.stdout + child.stderr)[-20000:]
        assert child.returncode >= 0, f"the fuzz campaign crashed (signal {-child.returncode}):\n" \
            + output
        assert child.returncode == 0, output
