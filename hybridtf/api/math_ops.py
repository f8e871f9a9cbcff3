"""``tf.math``: elementwise arithmetic, comparisons, reductions, casts and matmul."""
import operator
from collections.abc import Iterable

import numpy as np

from hybridtf.api.array_ops import ones_like, reshape, stop_gradient, transpose, zeros_like
from hybridtf.eager.execute import (as_tensor, binary_operands, execute1,
                                    execute_binary, execute_ternary, execute_unary)
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import elementwise as E
from hybridtf.registry import linalg as L
from hybridtf.registry import reductions as R
from hybridtf.registry import array as AR
from hybridtf.registry import Spec, checks
from hybridtf.registry.checks import fail


# ---- binary arithmetic --------------------------------------------------------------------------
def add(x, y, name=None):
    """x + y elementwise, with broadcasting."""
    return execute_binary(E.ADD, x, y)


def subtract(x, y, name=None):
    return execute_binary(E.SUBTRACT, x, y)


def multiply(x, y, name=None):
    return execute_binary(E.MULTIPLY, x, y)


def _true_divide_operands(x, y):
    xt, yt = binary_operands("truediv", x, y)
    kind = xt._np_dtype.kind
    if kind in "iu" and xt._np_dtype == yt._np_dtype:
        # TF: int8/int16/uint8 divide in float32, int32/int64 in float64.
        target = dtypes.float32 if xt._np_dtype.itemsize <= 2 else dtypes.float64
        xt, yt = cast(xt, target), cast(yt, target)
    return xt, yt


def divide(x, y, name=None):
    """x / y in floating point (integers are converted first, as TF's truediv)."""
    return execute_binary(E.DIVIDE, *_true_divide_operands(x, y))


truediv = divide


def div_no_nan(x, y, name=None):
    """x / y, with 0 wherever y is 0."""
    xt, yt = _true_divide_operands(x, y)
    is_zero = equal(yt, 0)
    quotient = divide(xt, where(is_zero, ones_like(yt), yt))
    return where(is_zero, zeros_like(quotient), quotient)


def floordiv(x, y, name=None):
    """Floor of x / y (integers: rounding toward -inf)."""
    xt, yt = binary_operands("floordiv", x, y)
    if xt._np_dtype.kind == "f":
        return floor(divide(xt, yt))
    return execute_binary(E.FLOORDIV, xt, yt)


def floormod(x, y, name=None):
    """Remainder of floor division: result has the sign of y (tf.math.floormod / tf.math.mod)."""
    return execute_binary(E.FLOORMOD, x, y)


mod = floormod


def pow(x, y, name=None):  # noqa: A001 - TF's name
    """x ** y elementwise.  Integer tensors may not be raised to negative integer powers."""
    xt, yt = binary_operands("pow", x, y)
    return execute_binary(E.POWER, xt, yt)


def maximum(x, y, name=None):
    return execute_binary(E.MAXIMUM, x, y)


def minimum(x, y, name=None):
    return execute_binary(E.MINIMUM, x, y)


def squared_difference(x, y, name=None):
    return execute_binary(E.SQUARED_DIFFERENCE, x, y)


# ---- comparisons and logic ----------------------------------------------------------------------
def equal(x, y, name=None):
    return execute_binary(E.EQUAL, x, y)


def not_equal(x, y, name=None):
    return execute_binary(E.NOT_EQUAL, x, y)


def less(x, y, name=None):
    return execute_binary(E.LESS, x, y)


def less_equal(x, y, name=None):
    return execute_binary(E.LESS_EQUAL, x, y)


def greater(x, y, name=None):
    return execute_binary(E.GREATER, x, y)


def greater_equal(x, y, name=None):
    return execute_binary(E.GREATER_EQUAL, x, y)


def logical_and(x, y, name=None):
    return execute_binary(E.LOGICAL_AND, x, y)


def logical_or(x, y, name=None):
    return execute_binary(E.LOGICAL_OR, x, y)


def logical_xor(x, y, name=None):
    return execute_binary(E.LOGICAL_XOR, x, y)


def logical_not(x, name=None):
    return execute_unary(E.LOGICAL_NOT, x)


def where(condition, x=None, y=None, name=None):
    """Elementwise choice of x where condition is true and y elsewhere (broadcasting).

    With only ``condition``: the int64 coordinates of its true elements, shape [n, rank].
    """
    if x is None and y is None:
        return execute1(AR.WHERE_INDICES, [as_tensor(condition)], None)
    if x is None or y is None:
        raise ValueError("where: x and y must both be given, or neither.")
    return execute_ternary(E.SELECT, condition, x, y)


# ---- unary --------------------------------------------------------------------------------------
def negative(x, name=None):
    return execute_unary(E.NEGATIVE, x)


def abs(x, name=None):  # noqa: A001 - TF's name
    return execute_unary(E.ABSOLUTE, x)


def sign(x, name=None):
    return execute_unary(E.SIGN, x)


def square(x, name=None):
    return execute_unary(E.SQUARE, x)


def sqrt(x, name=None):
    return execute_unary(E.SQRT, x)


def rsqrt(x, name=None):
    return execute_unary(E.RSQRT, x)


def reciprocal(x, name=None):
    return execute_unary(E.RECIPROCAL, x)


def exp(x, name=None):
    return execute_unary(E.EXP, x)


def expm1(x, name=None):
    return execute_unary(E.EXPM1, x)


def log(x, name=None):
    return execute_unary(E.LOG, x)


def log1p(x, name=None):
    return execute_unary(E.LOG1P, x)


def tanh(x, name=None):
    return execute_unary(E.TANH, x)


def sigmoid(x, name=None):
    return execute_unary(E.SIGMOID, x)


def tanh_grad(y, dy, name=None):
    """dy * (1 - y * y): the gradient through tanh of its output y, given the gradient dy of
    that output (TF's raw op TanhGrad; gradient rules call it)."""
    return execute_binary(E.TANH_GRAD, y, dy)


def sigmoid_grad(y, dy, name=None):
    """dy * y * (1 - y): the gradient through sigmoid of its output y (TF's SigmoidGrad)."""
    return execute_binary(E.SIGMOID_GRAD, y, dy)


def softplus(features, name=None):
    return execute_unary(E.SOFTPLUS, features)


def sin(x, name=None):
    return execute_unary(E.SIN, x)


def cos(x, name=None):
    return execute_unary(E.COS, x)


def floor(x, name=None):
    return execute_unary(E.FLOOR, x)


def ceil(x, name=None):
    return execute_unary(E.CEIL, x)


def round(x, name=None):  # noqa: A001 - TF's name
    """Rounds half to even, as TF."""
    xt = as_tensor(x)
    if xt._np_dtype.kind in "iu":
        return xt
    return execute_unary(E.ROUND, xt)


def relu(features, name=None):
    return execute_unary(E.RELU, features)


# ---- special functions and floating-point predicates ----------------------------------------
def erf(x, name=None):
    """The Gauss error function, elementwise (floating point x)."""
    return execute_unary(E.ERF, x)


def erfc(x, name=None):
    """The complementary error function 1 - erf(x), accurate where erf(x) is close to 1."""
    return execute_unary(E.ERFC, x)


def erfinv(x, name=None):
    """The inverse of erf: inf at 1, -inf at -1, NaN outside [-1, 1]."""
    return execute_unary(E.ERFINV, x)


def lgamma(x, name=None):
    """log(abs(Gamma(x))), elementwise; inf at the poles 0, -1, -2, ..."""
    return execute_unary(E.LGAMMA, x)


def digamma(x, name=None):
    """The derivative of lgamma (psi); NaN at the poles 0, -1, -2, ..."""
    return execute_unary(E.DIGAMMA, x)


def polygamma(a, x, name=None):
    """The ``a``-th derivative of digamma at ``x`` (``a`` a non-negative integer value of x's
    floating dtype; NaN otherwise)."""
    return execute_binary(E.POLYGAMMA, a, x)


def is_nan(x, name=None):
    """True where x is NaN (floating point x); a bool tensor."""
    return execute_unary(E.IS_NAN, x)


def is_inf(x, name=None):
    """True where x is +inf or -inf (floating point x); a bool tensor."""
    return execute_unary(E.IS_INF, x)


def is_finite(x, name=None):
    """True where x is neither infinite nor NaN (floating point x); a bool tensor."""
    return execute_unary(E.IS_FINITE, x)


# ---- casting, clipping, sums --------------------------------------------------------------------
def cast(x, dtype, name=None):
    """Converts x to ``dtype`` (floats to ints truncate toward zero, as TF)."""
    xt = as_tensor(x)
    target = dtypes.as_dtype(dtype)
    if xt.dtype is target:
        return xt
    return execute1(AR.CAST, [xt], {"dtype": target.as_numpy_dtype})


def saturate_cast(value, dtype, name=None):
    """Casts ``value`` to ``dtype``, first clamping it to the range of ``dtype`` so that nothing
    overflows.  A bound that ``value``'s dtype cannot hold exactly moves inward to the nearest
    value it can, as in TF (float32 values clamp to int32's range at 2147483520)."""
    target = dtypes.as_dtype(dtype)
    xt = as_tensor(value)
    source = xt.dtype
    real = (source.is_floating or source.is_integer) and (target.is_floating or target.is_integer)
    # Floats are always clamped: an inf has no value in any integer dtype.
    if real and (source.is_floating or source.min < target.min or source.max > target.max):
        xt = clip_by_value(xt, *_saturation_bounds(source, target))
    return cast(xt, target)


def _saturation_bounds(source, target):
    """(low, high): ``target``'s range as values of dtype ``source``, inside both ranges."""
    bounds = []
    for bound, inside in ((max(source.min, target.min), operator.ge),
                          (min(source.max, target.max), operator.le)):
        value = source.as_numpy_dtype(bound)
        if not inside(value.item(), bound):   # rounded outward (Python compares int and float
            value = np.nextafter(value, source.as_numpy_dtype(0))   # exactly)
        bounds.append(value)
    return bounds


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips t to [clip_value_min, clip_value_max]; the gradient passes where t is inside."""
    return minimum(maximum(t, clip_value_min), clip_value_max)


def add_n(inputs, name=None):
    """Sum of a list of tensors of equal shape and (numeric) dtype."""
    if isinstance(inputs, (str, bytes, dict, set)) or not isinstance(inputs, Iterable):
        raise ValueError(f"add_n: inputs must be a non-empty list of tensors, got {inputs!r}.")
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: inputs must be a non-empty list of tensors.")
    total = as_tensor(inputs[0])
    if not (total.dtype.is_floating or total.dtype.is_integer or total.dtype.is_complex):
        raise TypeError(f"add_n: inputs must be numeric tensors, got dtype {total.dtype.name}.")
    for item in inputs[1:]:
        other = as_tensor(item)
        if tuple(other.shape) != tuple(total.shape):
            fail("add_n", f"all inputs must have the same shape, got {total.shape} and "
                          f"{other.shape}.")
        total = add(total, other)
    return total


# ---- reductions ---------------------------------------------------------------------------------
def _reduce(op, input_tensor, axis, keepdims):
    x = as_tensor(input_tensor)
    return execute1(op, [x], {"axis": axis, "keepdims": bool(keepdims)})


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over ``axis`` (None: all axes); ``keepdims`` keeps reduced axes with size 1."""
    return _reduce(R.SUM, input_tensor, axis, keepdims)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over ``axis``; integer tensors give the truncated integer mean, as TF."""
    return _reduce(R.MEAN, input_tensor, axis, keepdims)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(R.MAX, input_tensor, axis, keepdims)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(R.MIN, input_tensor, axis, keepdims)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(R.PROD, input_tensor, axis, keepdims)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(R.ANY, input_tensor, axis, keepdims)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(R.ALL, input_tensor, axis, keepdims)


def _floating_input(op_name, x):
    if not x.dtype.is_floating:
        raise TypeError(f"{op_name}: input_tensor has dtype {x.dtype.name} (shape "
                        f"{x.shape.as_list()}), but this op needs float32 or float64; cast it "
                        "with tf.cast.")


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over ``axis``, computed stably."""
    x = as_tensor(input_tensor)
    _floating_input("reduce_logsumexp", x)
    m = stop_gradient(reduce_max(x, axis=axis, keepdims=True))
    # Shift by the max only where it is finite (as TF): an all -inf row gives -inf, a row with
    # +inf gives +inf, and an empty reduction gives log(0) = -inf -- never inf - inf = NaN.
    m = where(less(abs(m), np.inf), m, zeros_like(m))
    out = add(log(reduce_sum(exp(subtract(x, m)), axis=axis, keepdims=True)), m)
    if not keepdims:
        kept = [d for i, d in enumerate(x.shape) if i not in _axes_of(axis, x.ndim)]
        out = reshape(out, kept)
    return out


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Population variance over ``axis`` (floating point input only, as TF)."""
    x = as_tensor(input_tensor)
    _floating_input("reduce_variance", x)
    mean = reduce_mean(x, axis=axis, keepdims=True)
    return reduce_mean(square(subtract(x, mean)), axis=axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Population standard deviation over ``axis`` (floating point input only, as TF)."""
    _floating_input("reduce_std", as_tensor(input_tensor))
    return sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims))


def _axes_of(axis, rank):
    return checks.axes("reduce", axis, rank)


def argmax(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    """Index of the largest value along ``axis`` (default 0); first index on ties."""
    x = as_tensor(input)
    return execute1(R.ARGMAX, [x], {"axis": 0 if axis is None else axis,
                                    "output_type": dtypes.as_dtype(output_type).as_numpy_dtype})


def argmin(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    x = as_tensor(input)
    return execute1(R.ARGMIN, [x], {"axis": 0 if axis is None else axis,
                                    "output_type": dtypes.as_dtype(output_type).as_numpy_dtype})


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    return execute1(R.CUMSUM, [as_tensor(x)], {"axis": axis, "exclusive": bool(exclusive),
                                               "reverse": bool(reverse)})


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    return execute1(R.CUMPROD, [as_tensor(x)], {"axis": axis, "exclusive": bool(exclusive),
                                                "reverse": bool(reverse)})


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) along ``axis``, computed stably (floating point x); ``exclusive``
    and ``reverse`` as for ``cumsum`` (an empty exclusive sum gives -inf)."""
    return execute1(R.CUMULATIVE_LOGSUMEXP, [as_tensor(x)],
                    {"axis": axis, "exclusive": bool(exclusive), "reverse": bool(reverse)})


# ---- linear algebra -----------------------------------------------------------------------------
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None):
    """Matrix product of the last two dimensions, batch dimensions broadcast."""
    at, bt = binary_operands("matmul", a, b)
    return execute1(L.MATMUL, [at, bt], {"transpose_a": bool(transpose_a or adjoint_a),
                                         "transpose_b": bool(transpose_b or adjoint_b)})


def _axis_list(value):
    """One side of tensordot's ``axes`` pair (an int, a list or a 1-D tensor) as a list."""
    try:
        return [operator.index(value)]
    except TypeError:
        return checks.integers("tensordot", value, "axes")


def tensordot(a, b, axes, name=None):
    """Sum over the given axes of a and b (an int n: last n of a with first n of b)."""
    at, bt = binary_operands("tensordot", a, b)
    checks.same_dtype("tensordot", [Spec(at._shape_tuple, at._np_dtype),
                                    Spec(bt._shape_tuple, bt._np_dtype)], names=("a", "b"))
    ashape, bshape = at.shape.as_list(), bt.shape.as_list()
    if isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if not isinstance(axes, (list, tuple)):
        n = checks.integer("tensordot", axes, "axes")
        if not 0 <= n <= min(at.ndim, bt.ndim):
            fail("tensordot", f"axes={n} must be in [0, {min(at.ndim, bt.ndim)}] for a of shape "
                 f"{ashape} and b of shape {bshape}.")
        a_axes, b_axes = list(range(at.ndim - n, at.ndim)), list(range(n))
    else:
        if len(axes) != 2:
            fail("tensordot", f"axes must be an int or a pair of axis lists, got {axes!r}.")
        a_axes, b_axes = _axis_list(axes[0]), _axis_list(axes[1])
        if len(a_axes) != len(b_axes):
            fail("tensordot", f"axes {a_axes} and {b_axes} must have the same number of axes.")
    a_axes = [checks.axis("tensordot", ax, at.ndim, "axes") for ax in a_axes]
    b_axes = [checks.axis("tensordot", ax, bt.ndim, "axes") for ax in b_axes]
    if len(set(a_axes)) != len(a_axes) or len(set(b_axes)) != len(b_axes):
        fail("tensordot", f"axes {a_axes} and {b_axes} must not repeat an axis.")
    for i, j in zip(a_axes, b_axes):
        if None not in (ashape[i], bshape[j]) and ashape[i] != bshape[j]:
            fail("tensordot", f"dimension {i} of a (shape {checks.fmt_shape(ashape)}) and "
                 f"dimension {j} of b (shape {checks.fmt_shape(bshape)}) must match to be summed "
                 f"over, got {ashape[i]} and {bshape[j]}.")
    a_free = [i for i in range(at.ndim) if i not in a_axes]
    b_free = [i for i in range(bt.ndim) if i not in b_axes]
    summed = [ashape[i] if ashape[i] is not None else bshape[j] for i, j in zip(a_axes, b_axes)]
    free = [ashape[i] for i in a_free] + [bshape[i] for i in b_free]
    # Explicit sizes where known, not -1: any of them may be 0.
    k, m, n = (None if None in dims else int(np.prod(dims)) for dims in
               (summed, [ashape[i] for i in a_free], [bshape[i] for i in b_free]))

    def as_matrix(x, perm, rows, cols, matrix):
        x = transpose(x, perm)
        if matrix:   # already [rows, cols]
            return x
        if [rows, cols].count(None) + (rows == 0 or cols == 0) > 1:
            raise TypeError(f"tensordot: a of shape {checks.fmt_shape(ashape)} and b of shape "
                            f"{checks.fmt_shape(bshape)} need more of their dimensions known "
                            "when tracing (one product of them may be unknown).")
        return reshape(x, [-1 if d is None else d for d in (rows, cols)])

    a2 = as_matrix(at, a_free + a_axes, m, k, len(a_free) == len(a_axes) == 1)
    b2 = as_matrix(bt, b_axes + b_free, k, n, len(b_free) == len(b_axes) == 1)
    out = matmul(a2, b2)
    if len(a_free) == len(b_free) == 1:   # already [a's free, b's free]
        return out
    if free.count(None) > 1:
        raise TypeError(f"tensordot: a of shape {checks.fmt_shape(ashape)} and b of shape "
                        f"{checks.fmt_shape(bshape)} need more of their free dimensions known "
                        "when tracing (one of them may be unknown).")
    return reshape(out, [-1 if d is None else d for d in free])
