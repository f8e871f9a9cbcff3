"""``tf.debugging``: assertions on values, shapes and dtypes, and ``check_numerics``.

Value checks (``assert_equal``, ``assert_positive``, ``Assert``, ...) raise
``InvalidArgumentError`` at once when the values are known (eagerly, or on constants while
tracing); on the tensors of a traced function they become stateful graph ops that check every
call.  Static checks (``assert_rank``, ``assert_type``, ``assert_shapes`` on known dimensions)
raise ValueError or TypeError right away, while tracing too, as TF's do.  The assertions return
None.
"""
import collections.abc
import operator

import numpy as np

from hybridtf.api import array_ops as A
from hybridtf.api import math_ops as M
from hybridtf.eager.execute import as_tensor, binary_operands, execute, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import assertions, checks
from hybridtf.registry.python_ops import TensorSlot

DEFAULT_SUMMARIZE = 3   # elements of each tensor a failed assertion shows


def _summarize(op_name, summarize):
    if summarize is None:
        return DEFAULT_SUMMARIZE
    return checks.integer(op_name, summarize, "summarize")


def _known(tensors):
    return all(type(t) is Tensor for t in tensors)


def _assert_condition(op_name, condition, data, names, text, message, summarize):
    """Checks that every element of the bool tensor ``condition`` holds: now if it is known,
    else (a traced function's tensor) on every call of the function."""
    attrs = {"kind": "compare", "condition": text, "names": list(names),
             "message": "" if message is None else str(message),
             "summarize": _summarize(op_name, summarize)}
    if _known([condition] + list(data)):
        assertions.check(condition._value, [t._value for t in data], attrs)
        return None
    execute(assertions.ASSERT, [condition] + list(data), attrs)
    return None


def _binary(op_name, compare, symbol, x, y, message, summarize):
    xt, yt = binary_operands(op_name, x, y)
    return _assert_condition(op_name, compare(xt, yt), [xt, yt], ["x", "y"], f"x {symbol} y",
                             message, summarize)


def _unary(op_name, compare, symbol, x, message, summarize):
    xt = as_tensor(x)
    return _assert_condition(op_name, compare(xt, 0), [xt], ["x"], f"x {symbol} 0", message,
                             summarize)


# ---- value assertions ---------------------------------------------------------------------------
def assert_equal(x, y, message=None, summarize=None, name=None):
    """Asserts x == y elementwise (with broadcasting); else InvalidArgumentError showing
    ``message`` and the first ``summarize`` (default 3; -1: all) failing and leading values."""
    return _binary("assert_equal", M.equal, "==", x, y, message, summarize)


def assert_none_equal(x, y, message=None, summarize=None, name=None):
    """Asserts x != y elementwise."""
    return _binary("assert_none_equal", M.not_equal, "!=", x, y, message, summarize)


def assert_less(x, y, message=None, summarize=None, name=None):
    """Asserts x < y elementwise."""
    return _binary("assert_less", M.less, "<", x, y, message, summarize)


def assert_less_equal(x, y, message=None, summarize=None, name=None):
    """Asserts x <= y elementwise."""
    return _binary("assert_less_equal", M.less_equal, "<=", x, y, message, summarize)


def assert_greater(x, y, message=None, summarize=None, name=None):
    """Asserts x > y elementwise."""
    return _binary("assert_greater", M.greater, ">", x, y, message, summarize)


def assert_greater_equal(x, y, message=None, summarize=None, name=None):
    """Asserts x >= y elementwise."""
    return _binary("assert_greater_equal", M.greater_equal, ">=", x, y, message, summarize)


def assert_positive(x, message=None, summarize=None, name=None):
    """Asserts x > 0 elementwise."""
    return _unary("assert_positive", M.greater, ">", x, message, summarize)


def assert_negative(x, message=None, summarize=None, name=None):
    """Asserts x < 0 elementwise."""
    return _unary("assert_negative", M.less, "<", x, message, summarize)


def assert_non_negative(x, message=None, summarize=None, name=None):
    """Asserts x >= 0 elementwise."""
    return _unary("assert_non_negative", M.greater_equal, ">=", x, message, summarize)


def assert_non_positive(x, message=None, summarize=None, name=None):
    """Asserts x <= 0 elementwise."""
    return _unary("assert_non_positive", M.less_equal, "<=", x, message, summarize)


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """Asserts |x - y| <= atol + rtol * |y| elementwise (floating point x and y); the default
    tolerances are 10 machine epsilons of their dtype."""
    xt, yt = binary_operands("assert_near", x, y)
    if not xt.dtype.is_floating:
        raise TypeError(f"assert_near: x and y must be floating point tensors, got dtype "
                        f"{xt.dtype.name}; use assert_equal for integers.")
    eps = float(np.finfo(xt._np_dtype).eps)
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    rtol_t = M.cast(as_tensor(rtol), xt.dtype)
    atol_t = M.cast(as_tensor(atol), xt.dtype)
    condition = M.less_equal(M.abs(xt - yt), atol_t + rtol_t * M.abs(yt))
    tolerance = f"rtol = {_scalar_text(rtol_t)}, atol = {_scalar_text(atol_t)}"
    return _assert_condition("assert_near", condition, [xt, yt], ["x", "y"],
                             f"|x - y| <= atol + rtol * |y| ({tolerance})", message, summarize)


def _scalar_text(t):
    return str(t._value) if type(t) is Tensor else t.name


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """Asserts that the bool scalar ``condition`` holds; else InvalidArgumentError showing
    ``data`` (tensors as their first ``summarize`` elements, other values as text)."""
    cond = as_tensor(condition)
    if not cond.dtype.is_bool or cond._shape_tuple != ():
        checks.fail("Assert", f"condition must be a bool scalar, got a {cond.dtype.name} tensor "
                    f"of shape {cond.shape}.")
    tensors, template = [], []
    for item in data:
        if isinstance(item, Tensor) or getattr(item, "_is_variable", False):
            template.append(TensorSlot(len(tensors)))
            tensors.append(as_tensor(item))
        else:
            template.append(str(item))
    attrs = {"kind": "data", "template": template, "summarize": _summarize("Assert", summarize)}
    if _known([cond] + tensors):
        assertions.check(cond._value, [t._value for t in tensors], attrs)
        return None
    execute(assertions.ASSERT, [cond] + tensors, attrs)
    return None


# ---- numerics -----------------------------------------------------------------------------------
def check_numerics(tensor, message, name=None):
    """``tensor`` itself, after checking it holds no NaN or infinity (InvalidArgumentError
    "<message> : Tensor had NaN values" otherwise).  Its gradient passes through, checked the
    same way."""
    return execute1(assertions.CHECK_NUMERICS, [as_tensor(tensor)], {"message": str(message)})


def assert_all_finite(x, message, name=None):
    """``x`` itself, after checking it holds no NaN or infinity (as ``check_numerics``)."""
    return check_numerics(x, message)


def is_numeric_tensor(tensor):
    """True for a tensor of a numeric dtype (integer, floating or complex; not bool or string)."""
    return isinstance(tensor, Tensor) and tensor.dtype.is_numeric


# ---- static assertions: dtypes, ranks, shapes ---------------------------------------------------
def _prefixed(message, text):
    return f"{message}.  {text}" if message else text


def _shape_text(t):
    shape = t._shape_tuple
    return "<unknown>" if shape is None else str(tuple(shape))


def assert_type(tensor, tf_type, message=None, name=None):
    """Raises TypeError unless ``tensor`` (a tensor or variable) has dtype ``tf_type``."""
    dtype = as_tensor(tensor).dtype
    expected = dtypes.as_dtype(tf_type)
    if dtype != expected:
        raise TypeError(_prefixed(message, f"tensor must be of type tf.{expected.name}; got "
                                           f"tf.{dtype.name}"))


def assert_integer(x, message=None, name=None):
    """Raises TypeError unless ``x`` has an integer dtype."""
    dtype = as_tensor(x).dtype
    if not dtype.is_integer:
        raise TypeError(_prefixed(message, f'Expected "x" to be integer type.  Found: tensor of '
                                           f"dtype {dtype.name}"))


def _static_rank(op_name, x):
    rank = x.ndim
    if rank is None:
        raise ValueError(f"{op_name}: the rank of x must be known when the function is traced; "
                         "give the input a shape of known rank (a TensorSpec with a list of "
                         "dimensions).")
    return rank


def _rank_value(op_name, rank):
    """``rank`` as a Python int, or as a symbolic int32 scalar tensor of a traced function."""
    if isinstance(rank, Tensor) or getattr(rank, "_is_variable", False):
        t = as_tensor(rank)
        if t._shape_tuple != ():
            raise ValueError(f"{op_name}: rank must be a scalar, got shape {t.shape}.")
        if not t.dtype.is_integer:
            raise TypeError(f"{op_name}: rank must be an integer, got dtype {t.dtype.name}.")
        if type(t) is not Tensor:
            return M.cast(t, dtypes.int32)
        return int(t._value)
    return checks.integer(op_name, rank, "rank")


# relation: (on Python ints, on tensors, its symbol, its wording in messages)
_RANK_RELATIONS = {"equal": (operator.eq, M.equal, "==", ""),
                   "at_least": (operator.ge, M.greater_equal, ">=", "at least ")}


def _assert_rank_relation(op_name, x, rank, message, relation):
    on_ints, on_tensors, symbol, wording = _RANK_RELATIONS[relation]
    xt = as_tensor(x)
    actual = _static_rank(op_name, xt)
    expected = _rank_value(op_name, rank)
    if isinstance(expected, Tensor):   # known when the function runs
        held = on_tensors(Tensor(np.int32(actual)), expected)
        return _assert_condition(op_name, held, [expected], ["rank"],
                                 f"rank(x) {symbol} rank, with rank(x) = {actual}", message, None)
    if not on_ints(actual, expected):
        raise ValueError(_prefixed(message, f"Tensor x must have rank {wording}{expected}.  "
                                            f"Received rank {actual}, shape {_shape_text(xt)}"))
    return None


def assert_rank(x, rank, message=None, name=None):
    """Raises ValueError unless ``x`` has rank ``rank`` (a tensor known only when a traced
    function runs is checked then, raising InvalidArgumentError)."""
    return _assert_rank_relation("assert_rank", x, rank, message, "equal")


def assert_rank_at_least(x, rank, message=None, name=None):
    """Raises ValueError unless ``x`` has rank ``rank`` or more."""
    return _assert_rank_relation("assert_rank_at_least", x, rank, message, "at_least")


def assert_rank_in(x, ranks, message=None, name=None):
    """Raises ValueError unless the rank of ``x`` is one of ``ranks``."""
    xt = as_tensor(x)
    allowed = tuple(checks.integers("assert_rank_in", list(ranks), "ranks"))
    actual = _static_rank("assert_rank_in", xt)
    if actual not in allowed:
        raise ValueError(_prefixed(message, f"Tensor x must have rank in {allowed}.  Received "
                                            f"rank {actual}, shape {_shape_text(xt)}"))


def assert_scalar(tensor, message=None, name=None):
    """Raises ValueError unless ``tensor`` is a scalar (rank 0)."""
    t = as_tensor(tensor)
    if _static_rank("assert_scalar", t) != 0:
        raise ValueError(_prefixed(message, f"Expected scalar shape, saw shape: "
                                            f"{_shape_text(t)}."))


def _parse_shape_spec(spec):
    """(entries, whether a leading ``...`` or '*' allows any outer dimensions)."""
    entries = list(spec.as_list() if hasattr(spec, "as_list") else spec)
    outer = bool(entries) and (entries[0] is Ellipsis or entries[0] == "*")
    if outer:
        entries = entries[1:]
    return (entries or [1]), outer   # a shape of length zero means one dimension of size 1


def _describe(t):
    return t.name if type(t) is not Tensor else f"shape={_shape_text(t)} dtype={t.dtype.name}"


def _dimension(t, index):
    """Dimension ``index`` of ``t``: a Python int, or an int32 scalar tensor when it is known
    only when the function runs."""
    size = t._shape_tuple[index]
    if size is not None:
        return size
    return A.shape(t)[index]


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Asserts that tensors have the given shapes, with named dimensions consistent across them.

    ``shapes``: (tensor, shape) pairs, or a dict of them (keyed by ``tensor.ref()``, tensors
    and variables being unhashable).  In a shape, an int is an exact size,
    None or '.' any size, anything else a symbol whose size must be the same wherever it
    appears; a leading ``...`` or '*' lets any outer dimensions precede the given ones.  A
    scalar counts as shape [1] (and the shape ``()`` as ``(1,)``).  Sizes known while tracing
    are checked at once (ValueError); the others each time the function runs
    (InvalidArgumentError, showing ``data`` too).
    """
    pairs = list(shapes.items() if isinstance(shapes, collections.abc.Mapping) else shapes)
    extra = [as_tensor(d) for d in (data or [])]
    symbols = {}   # symbol -> (size, tensor description, dimension index)
    for tensor, spec in pairs:
        t = as_tensor(tensor.deref() if hasattr(tensor, "deref") else tensor)
        if t._shape_tuple == ():
            t = A.reshape(t, [1])
        rank = _static_rank("assert_shapes", t)
        entries, outer = _parse_shape_spec(spec)
        if rank < len(entries) or (not outer and rank != len(entries)):
            wording = "at least " if outer else ""
            raise ValueError(_prefixed(message, f"Tensor {_describe(t)} must have rank "
                                                f"{wording}{len(entries)}.  Received rank "
                                                f"{rank}, shape {_shape_text(t)}"))
        for j, entry in enumerate(entries):
            index = rank - len(entries) + j
            if entry is None or entry == ".":
                continue
            size = _dimension(t, index)
            if isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
                expected, source = int(entry), "Specified explicitly."
            elif entry in symbols:
                expected, origin, origin_index = symbols[entry]
                source = f"Specified by tensor {origin} dimension {origin_index}."
            else:
                symbols[entry] = (size, _describe(t), index)
                continue
            _check_dimension(t, index, size, expected, source, extra, summarize, message)


def _check_dimension(t, index, size, expected, source, extra, summarize, message):
    if isinstance(size, int) and isinstance(expected, int):
        if size != expected:
            raise ValueError(_prefixed(message, f"{source}  Tensor {_describe(t)} dimension "
                                                f"{index} must have size {expected}.  Received "
                                                f"size {size}, shape {_shape_text(t)}"))
        return
    size, expected = as_tensor(size, dtypes.int32), as_tensor(expected, dtypes.int32)
    _assert_condition("assert_shapes", M.equal(size, expected), [size, expected] + extra,
                      ["size", "expected size"] + [f"data[{i}]" for i in range(len(extra))],
                      f"size == expected size for dimension {index} of tensor {_describe(t)} "
                      f"({source[:-1]})", message, summarize)
