"""Elementwise ops: one scalar definition each, serving eager ufuncs, eager loops and fused kernels.

Each op is a scalar ``@njit`` function.  From it, ``kernels(name)`` builds (lazily, in a generated
module file so that Numba's disk cache applies):

* ``ufunc(name, dtype)`` -- a NumPy ufunc with exactly one loop, for ``dtype``, so that the
  output dtype is TF's (int8 + int8 -> int8, never int64); its inner loop is a cached compiled
  function (``ops.ufunc_loops``), so a new process builds it in about a millisecond;
* ``loop_as / loop_sa`` -- for binary ops, flat loops of a contiguous array with a scalar, which
  Numba vectorises (a broadcasting ufunc loop with a stride-0 operand is several times slower).

Numba has no float16 on the CPU, so float16 gets no kernels of its own: ``ufunc(name,
"float16")`` runs the float32 ufunc on the inputs (widened exactly) and rounds each result to
float16, which is how float16 arithmetic is computed on a CPU (and by TF's CPU kernels).

The compiler reuses the scalar functions inside its fused loops (for every dtype but float16).
"""
import math
from dataclasses import dataclass

import numpy as np

from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from ops import fast_tanh
from ops.codegen import load_source
from ops.kernel_cache import njit
from ops.ufunc_loops import loop_source, make_ufunc

FLOATS = ("float16", "float32", "float64")
SINGLE_AND_DOUBLE = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
NUMERIC = INTS + FLOATS
BOOL = ("bool",)
ALL = BOOL + NUMERIC
WIDENED = {"float16": "float32"}   # dtypes without kernels of their own: computed in another
# Ops that TF computes in two steps, the first's result rounded to the op's dtype: so are they
# in a WIDENED dtype (floor(x / y) can differ by 1 if x / y is not rounded first).
_ROUNDED_STEPS = {"floordiv": ("divide", "floor"), "squared_difference": ("subtract", "square")}

_jit = njit(error_model="numpy")


# ---- unary -----------------------------------------------------------------------------------
@_jit
def negative(x):
    return -x


@_jit
def absolute(x):
    return abs(x)


@_jit
def sign(x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    return x  # keeps 0, -0 and NaN


@_jit
def square(x):
    return x * x


@_jit
def sqrt(x):
    return np.sqrt(x)


@_jit
def rsqrt(x):
    return 1.0 / np.sqrt(x)


@_jit
def reciprocal(x):
    return 1.0 / x


@_jit
def exp(x):
    return np.exp(x)


@_jit
def expm1(x):
    return np.expm1(x)


@_jit
def log(x):
    return np.log(x)


@_jit
def log1p(x):
    return np.log1p(x)


@_jit
def tanh(x):
    return fast_tanh.tanh(x)   # float32 without a library call: its loops vectorize


@_jit
def sigmoid(x):
    # Two branches keep exp() from overflowing for large |x|.
    if x >= 0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


@_jit
def softplus(x):
    return max(x, 0.0) + np.log1p(np.exp(-abs(x)))


@_jit
def sin(x):
    return np.sin(x)


@_jit
def cos(x):
    return np.cos(x)


@_jit
def floor(x):
    # np.floor keeps the float type; math.floor gives an int64, wrong for |x| >= 2**63, inf
    # and NaN.
    return np.floor(x)


@_jit
def ceil(x):
    return np.ceil(x)


@_jit
def round_half_to_even(x):
    return np.rint(x)


@_jit
def relu(x):
    if x <= 0:
        return type(x)(0)   # a literal 0 would make the uint64 result float64, and inexact
    return x   # x > 0, or NaN, which propagates as in TF


@_jit
def logical_not(x):
    return not x


# ---- special functions and floating-point predicates -------------------------------------------
# The special functions compute in float64 (the caller casts back to the input's dtype).
@_jit
def erf(x):
    return math.erf(x)


@_jit
def erfc(x):
    return math.erfc(x)


_TWO_OVER_SQRT_PI = 1.1283791670955126


@_jit
def erfinv(x):
    # Winitzki's closed form (relative error < 2e-3), then Newton steps on erf; near the tails
    # (1 - |x| tiny) the residual is taken with erfc, which keeps full precision there.
    x = float(x)
    if not -1.0 <= x <= 1.0:
        return np.nan   # |x| > 1 and NaN
    t = abs(x)
    if t == 1.0:
        return math.copysign(np.inf, x)
    log_term = math.log((1.0 - t) * (1.0 + t))
    a = 0.147
    b = 2.0 / (math.pi * a) + 0.5 * log_term
    y = math.sqrt(math.sqrt(b * b - log_term / a) - b)
    for _ in range(8):   # 2-3 steps in the middle; the far tails converge more slowly
        slope = _TWO_OVER_SQRT_PI * math.exp(-y * y)
        if slope == 0.0:
            break
        if t < 0.5:
            step = (t - math.erf(y)) / slope
        else:
            step = (math.erfc(y) - (1.0 - t)) / slope   # == t - erf(y)
        y += step
        if abs(step) <= 1e-16 * y:
            break
    return math.copysign(y, x)


@_jit
def lgamma(x):
    return math.lgamma(x)   # log|Gamma(x)|: inf at the poles 0, -1, -2, ...


# The Bernoulli numbers B_2j (j = 1..7) over (2j)! (the Euler-Maclaurin tail of the Hurwitz zeta
# function) and over 2j (the asymptotic series of digamma).
_BERNOULLI_OVER_FACTORIAL = (1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0,
                             1.0 / 47900160.0, -691.0 / 1307674368000.0, 1.0 / 74724249600.0)
_BERNOULLI_OVER_INDEX = (1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0,
                         -691.0 / 32760.0, 1.0 / 12.0)


@_jit
def digamma(x):
    x = float(x)
    if x != x or x == -np.inf:
        return np.nan
    if x == np.inf:
        return np.inf
    if x <= 0.0 and x == math.floor(x):
        return np.nan   # a pole, as TF
    result = 0.0
    if x < 0.0:
        # Reflection: psi(x) = psi(1 - x) - pi / tan(pi x).
        result = -math.pi / math.tan(math.pi * (x - math.floor(x)))   # tan has period pi
        x = 1.0 - x
    while x < 10.0:   # psi(x) = psi(x + 1) - 1 / x, up to where the series is exact
        result -= 1.0 / x
        x += 1.0
    # psi(x) ~ log x - 1/(2x) - sum_j B_2j / (2j x^2j)
    inv2 = 1.0 / (x * x)
    power = inv2
    series = 0.0
    for coef in _BERNOULLI_OVER_INDEX:
        series += coef * power
        power *= inv2
    return result + math.log(x) - 0.5 / x - series


@_jit
def _hurwitz_zeta(s, x):
    """sum_k (x + k) ** -s for an integral s >= 2 and x not a pole (0, -1, -2, ...)."""
    total = 0.0
    a = x
    while a < s + 10.0:   # up to where the Euler-Maclaurin tail below is exact in float64
        term = a ** -s
        total += term
        a += 1.0
        if a > 1.0 and abs(term) <= 1e-17 * abs(total):
            return total   # a large exponent: the rest, smaller term by term, is negligible
    tail = a ** (1.0 - s) / (s - 1.0) + 0.5 * a ** -s
    term = s * a ** (-s - 1.0)   # s (s+1) ... (s+2j-2) / a^(s+2j-1), for j = 1
    k = s
    for coef in _BERNOULLI_OVER_FACTORIAL:
        tail += coef * term
        term *= (k + 1.0) * (k + 2.0) / (a * a)
        k += 2.0
    return total + tail


@_jit
def _cot_derivative(n, c):
    """Q_n(c), where the n-th derivative of cot(pi x) is pi^n Q_n(cot(pi x)): Q_0(c) = c and
    Q_{k+1}(c) = -(1 + c^2) Q_k'(c), a polynomial of degree n + 1."""
    return cot_derivative_in(n, c, np.empty(n + 2), np.empty(n + 2))


@_jit
def cot_derivative_in(n, c, q, slope):
    """``_cot_derivative`` computed in the scratch arrays ``q`` and ``slope`` (each at least
    n + 2 long): the GPU's form passes arrays local to its thread, which cannot allocate."""
    for i in range(n + 2):
        q[i] = 0.0
        slope[i] = 0.0
    q[1] = 1.0
    for k in range(n):
        for i in range(k + 2):   # Q_k has degree k + 1
            slope[i] = (i + 1) * q[i + 1]
        for i in range(n + 2):
            q[i] = 0.0
        for j in range(k + 1):
            q[j] -= slope[j]
            q[j + 2] -= slope[j]
    value = 0.0
    for i in range(n + 1, -1, -1):
        value = value * c + q[i]
    return value


# Below this, polygamma reflects x instead of summing the terms up to x > 0, one by one.
_MIN_SUMMED_X = -1e5
# n! overflows float64 beyond this order: so do the polygamma values of such negative x.
_MAX_REFLECTED_ORDER = 170.0


@_jit
def polygamma(n, x):
    # The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x) for n >= 1.
    n = float(n)
    x = float(x)
    if n != n or x != x or n < 0.0 or n != math.floor(n):
        return np.nan
    if n == 0.0:
        return digamma(x)
    sign = 1.0 if n % 2.0 == 1.0 else -1.0
    if x == np.inf:
        return 0.0
    if x == -np.inf:
        return np.nan
    if x <= 0.0 and x == math.floor(x):
        return sign * np.inf   # a pole
    if x > _MIN_SUMMED_X:
        return sign * math.gamma(n + 1.0) * _hurwitz_zeta(n + 1.0, x)
    if n > _MAX_REFLECTED_ORDER:
        return np.nan
    # Reflection, the n-th derivative of psi(1 - x) - psi(x) = pi cot(pi x):
    # psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) Q_n(cot(pi x)).
    reflected = sign * math.gamma(n + 1.0) * _hurwitz_zeta(n + 1.0, 1.0 - x)
    cot = 1.0 / math.tan(math.pi * (x - math.floor(x)))
    return -sign * reflected - math.pi ** (n + 1.0) * _cot_derivative(int(n), cot)


@_jit
def is_nan(x):
    return x != x


@_jit
def is_inf(x):
    return abs(x) == np.inf


@_jit
def is_finite(x):
    return abs(x) < np.inf   # False for NaN too


# ---- binary ----------------------------------------------------------------------------------
@_jit
def add(x, y):
    return x + y


@_jit
def subtract(x, y):
    return x - y


@_jit
def multiply(x, y):
    return x * y


@_jit
def divide(x, y):
    return x / y


@_jit
def tanh_grad(y, dy):
    """The gradient through tanh from its output y and the gradient dy of that output (TF's
    TanhGrad): one pass instead of three ops."""
    return dy * (type(y)(1) - y * y)


@_jit
def sigmoid_grad(y, dy):
    """The gradient through sigmoid from its output y and the gradient dy of that output (TF's
    SigmoidGrad)."""
    return dy * y * (type(y)(1) - y)


@_jit
def floordiv(x, y):
    return x // y


@_jit
def floormod(x, y):
    return x % y


@_jit
def power(x, y):
    # The common exponents are branches that LLVM hoists out of a loop over x.
    if y == 2:
        return x * x
    if y == 1:
        return x
    if y == 3:
        return x * x * x
    return _raise(x, y)


def _raise(x, y):
    return x ** y


@overload(_raise)
def _raise_typed(x, y):
    """``x ** y`` as NumPy computes it: an integer power by squaring, wrapping on overflow
    (Numba's own integer ``**`` differs from NumPy's for some huge exponents)."""
    if isinstance(x, types.Integer) and isinstance(y, types.Integer):
        one = as_dtype(x).type(1)   # keeps the arithmetic in x's type (uint64 with int64 is float)

        def integer_power(x, y):
            result = one
            base = x
            while y > 0:
                if y & 1:
                    result *= base
                base *= base
                y >>= 1
            return result
        return integer_power
    return lambda x, y: x ** y


@_jit
def maximum(x, y):
    if x >= y or x != x:
        return x
    return y


@_jit
def minimum(x, y):
    if x <= y or x != x:
        return x
    return y


@_jit
def squared_difference(x, y):
    d = x - y
    return d * d


@_jit
def equal(x, y):
    return x == y


@_jit
def not_equal(x, y):
    return x != y


@_jit
def less(x, y):
    return x < y


@_jit
def less_equal(x, y):
    return x <= y


@_jit
def greater(x, y):
    return x > y


@_jit
def greater_equal(x, y):
    return x >= y


@_jit
def logical_and(x, y):
    return x and y


@_jit
def logical_or(x, y):
    return x or y


@_jit
def logical_xor(x, y):
    return x != y


# ---- ternary ---------------------------------------------------------------------------------
@_jit
def select(c, x, y):
    return x if c else y


@dataclass(frozen=True)
class ScalarOp:
    """An elementwise op: its scalar function, arity, accepted dtypes and output dtype rule."""

    name: str
    arity: int
    dtypes: tuple
    bool_output: bool = False


def _table(arity, dtypes, names, bool_output=False):
    return {n: ScalarOp(n, arity, dtypes, bool_output) for n in names.split()}


SCALAR_OPS = {
    **_table(1, NUMERIC, "negative absolute sign square relu"),
    **_table(1, FLOATS, "sqrt rsqrt reciprocal exp expm1 log log1p tanh sigmoid softplus sin cos "
                        "floor ceil round_half_to_even"),
    **_table(1, BOOL, "logical_not"),
    **_table(1, FLOATS, "erf erfc lgamma digamma"),
    **_table(1, SINGLE_AND_DOUBLE, "erfinv"),
    **_table(1, FLOATS, "is_nan is_inf is_finite", bool_output=True),
    **_table(2, SINGLE_AND_DOUBLE, "polygamma"),
    **_table(2, NUMERIC, "add subtract multiply floordiv floormod power maximum minimum "
                         "squared_difference"),
    **_table(2, FLOATS, "divide tanh_grad sigmoid_grad"),
    **_table(2, ALL, "equal not_equal", bool_output=True),
    **_table(2, NUMERIC, "less less_equal greater greater_equal", bool_output=True),
    **_table(2, BOOL, "logical_and logical_or logical_xor", bool_output=True),
    **_table(3, ALL, "select"),
}

_LOOP_BODY = {"as": "out[i] = f(a[i], b)", "sa": "out[i] = f(a, b[i])"}


def _kernel_source(op):
    lines = [
        f'"""Eager kernels of the elementwise op {op.name!r} (generated by ops.elementwise)."""',
        "import numpy as np",
        "from numba import carray, types",
        "from ops.kernel_cache import njit",
        "from ops.ufunc_loops import load_at, store_at",
        f"from ops.elementwise import {op.name} as f",
    ]
    for dtype in op.dtypes:  # one ufunc per dtype: NumPy's loop search can never pick another
        if dtype in WIDENED:
            continue
        inputs, output = _loop_dtypes(op, dtype)
        lines += ["", "", loop_source(f"ufunc_loop_{dtype}", inputs, output).rstrip("\n")]
    if op.arity == 2:
        for variant, body in _LOOP_BODY.items():
            lines += ["", "", '@njit(error_model="numpy")',
                      f"def loop_{variant}(a, b, out):", "    for i in range(out.size):",
                      f"        {body}"]
    return "\n".join(lines) + "\n"


_KERNELS = {}


def kernels(name):
    """The generated module holding the ufuncs and loops of elementwise op ``name``."""
    module = _KERNELS.get(name)
    if module is None:
        module = _KERNELS[name] = load_source("elementwise_" + name,
                                              _kernel_source(SCALAR_OPS[name]))
    return module


def ufunc(name, dtype):
    """The NumPy ufunc computing op ``name`` on inputs of ``dtype`` (a NumPy dtype name); for
    float16, a ``WidenedUfunc``."""
    op = SCALAR_OPS[name]
    if dtype not in op.dtypes:
        raise TypeError(f"{name} does not support dtype {dtype}; it supports {op.dtypes}.")
    if dtype in WIDENED:
        first, then = _ROUNDED_STEPS.get(name, (name, None))
        return WidenedUfunc(ufunc(first, WIDENED[dtype]), np.dtype(dtype), op.bool_output,
                            None if then is None else ufunc(then, dtype))
    key = (name, dtype)
    found = _UFUNCS.get(key)
    if found is None:
        inputs, output = _loop_dtypes(op, dtype)
        found = _UFUNCS[key] = make_ufunc(
            name, getattr(kernels(name), "ufunc_loop_" + dtype), inputs, output)
    return found


_UFUNCS = {}   # (op name, dtype) -> its ufunc


# ---- references: NumPy functions computing the ops, for ``reference_ufunc`` ----------------
# (``[()]``: a scalar from 0-d inputs, as a ufunc gives)
def _relu(x):
    return np.where(x <= 0, x.dtype.type(0), x)[()]   # -0 becomes 0; NaN propagates


def _maximum(x, y):
    return np.where((x >= y) | (x != x), x, y)[()]   # ties and NaN as ``maximum``


def _minimum(x, y):
    return np.where((x <= y) | (x != x), x, y)[()]


def _select(c, x, y):
    return np.where(c, x, y)[()]


def _sigmoid(x):
    e = np.exp(-np.abs(x))   # the two branches of ``sigmoid``: exp never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)[()]


def _softplus(x):
    return (np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))[()]


def _rsqrt(x):
    return (1 / np.sqrt(x))[()]


def _tanh_grad(y, dy):
    return (dy * (y.dtype.type(1) - y * y))[()]


def _sigmoid_grad(y, dy):
    return (dy * y * (y.dtype.type(1) - y))[()]


# Bit for bit on every dtype the op takes (integers wrap as the kernels do): IEEE's exactly
# rounded operations, comparisons, selections and integer arithmetic.
_EXACT = {
    "negative": np.negative, "absolute": np.absolute, "square": np.square, "relu": _relu,
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": _maximum,
    "minimum": _minimum, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "select": _select, "logical_not": np.logical_not, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "tanh_grad": _tanh_grad, "sigmoid_grad": _sigmoid_grad,
}
# On float32 and float64: exact for sqrt, divide and the roundings, within a few units in the
# last place for the others (NumPy's exp, log and tanh are not the kernels').
_FLOAT = {
    "sqrt": np.sqrt, "divide": np.divide, "floor": np.floor, "ceil": np.ceil,
    "round_half_to_even": np.rint, "is_nan": np.isnan, "is_inf": np.isinf,
    "is_finite": np.isfinite, "exp": np.exp, "expm1": np.expm1, "log": np.log,
    "log1p": np.log1p, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "sigmoid": _sigmoid,
    "softplus": _softplus, "rsqrt": _rsqrt, "reciprocal": np.reciprocal, "power": np.power,
}
EXACT_REFERENCES = frozenset(_EXACT) | {"sqrt", "divide", "floor", "ceil", "round_half_to_even",
                                        "is_nan", "is_inf", "is_finite", "reciprocal"}


def reference_ufunc(name, dtype):
    """A NumPy function computing op ``name`` on inputs of ``dtype`` (a NumPy dtype name) as
    ``ufunc(name, dtype)`` does -- bit for bit for the ops of EXACT_REFERENCES -- or None where
    there is none (float16, strings, the integer ops NumPy computes otherwise)."""
    if dtype in SINGLE_AND_DOUBLE:
        return _EXACT.get(name) or _FLOAT.get(name)
    return _EXACT.get(name) if dtype in INTS or dtype in BOOL else None


def _loop_dtypes(op, dtype):
    """(input dtypes, output dtype) of op's loop for ``dtype``: select's condition is bool."""
    inputs = ["bool", dtype, dtype] if op.name == "select" else [dtype] * op.arity
    return inputs, "bool" if op.bool_output else dtype


class WidenedUfunc:
    """An elementwise op on a dtype without kernels (float16): ``wide``, the op's ufunc for a
    wider dtype, on the inputs as given (NumPy widens them exactly), each result rounded back to
    ``dtype`` -- correctly rounded for +, -, *, / and sqrt, since float32 has more than twice
    float16's precision -- and then given to ``then`` (the op's second step, if any).  A Python
    float operand is first rounded to ``dtype``, as TF does."""

    def __init__(self, wide, dtype, bool_output, then=None):
        self.wide = wide
        self.dtype = dtype
        self.bool_output = bool_output
        self.then = then

    def __call__(self, *args):
        args = [self.dtype.type(a) if type(a) is float else a for a in args]
        result = self.wide(*args)
        if self.bool_output:
            return result
        result = result.astype(self.dtype)
        return result if self.then is None else self.then(result)
