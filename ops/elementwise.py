"""Elementwise ops: one scalar definition each, serving eager ufuncs, eager loops and fused kernels.

Each op is a scalar ``@njit`` function.  From it, ``kernels(name)`` builds (lazily, in a generated
module file so that Numba's disk cache applies):

* ``ufunc(name, dtype)`` -- a ``@vectorize`` ufunc with exactly one loop, compiled for ``dtype``
  with an explicit signature so that the output dtype is TF's (int8 + int8 -> int8, never int64);
* ``loop_as / loop_sa`` -- for binary ops, flat loops of a contiguous array with a scalar, which
  Numba vectorises (a broadcasting ufunc loop with a stride-0 operand is several times slower).

The compiler reuses the scalar functions inside its fused loops.
"""
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ops.codegen import load_source

FLOATS = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
NUMERIC = INTS + FLOATS
BOOL = ("bool",)
ALL = BOOL + NUMERIC

_jit = njit(cache=True, error_model="numpy")


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
    return np.tanh(x)


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
    return math.floor(x)


@_jit
def ceil(x):
    return math.ceil(x)


@_jit
def round_half_to_even(x):
    return np.rint(x)


@_jit
def relu(x):
    if x <= 0:
        return 0
    return x   # x > 0, or NaN, which propagates as in TF


@_jit
def logical_not(x):
    return not x


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
    return x ** y


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
    **_table(2, NUMERIC, "add subtract multiply floordiv floormod power maximum minimum "
                         "squared_difference"),
    **_table(2, FLOATS, "divide"),
    **_table(2, ALL, "equal not_equal", bool_output=True),
    **_table(2, NUMERIC, "less less_equal greater greater_equal", bool_output=True),
    **_table(2, BOOL, "logical_and logical_or logical_xor", bool_output=True),
    **_table(3, ALL, "select"),
}

_LOOP_BODY = {"as": "out[i] = f(a[i], b)", "sa": "out[i] = f(a, b[i])"}


def _kernel_source(op):
    args = ", ".join("xyz"[:op.arity])
    lines = [
        f'"""Eager kernels of the elementwise op {op.name!r} (generated by ops.elementwise)."""',
        "from numba import njit, vectorize",
        f"from ops.elementwise import {op.name} as f",
    ]
    for dtype in op.dtypes:  # one ufunc per dtype: NumPy's loop search can never pick another
        lines += ["", "", "@vectorize(cache=True)", f"def ufunc_{dtype}({args}):",
                  f"    return f({args})"]
    if op.arity == 2:
        for variant, body in _LOOP_BODY.items():
            lines += ["", "", '@njit(cache=True, error_model="numpy")',
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
    """The NumPy ufunc computing op ``name`` on inputs of ``dtype`` (a NumPy dtype name)."""
    op = SCALAR_OPS[name]
    if dtype not in op.dtypes:
        raise TypeError(f"{name} does not support dtype {dtype}; it supports {op.dtypes}.")
    dufunc = getattr(kernels(name), "ufunc_" + dtype)
    if not dufunc.ufunc.types:
        arg = _numba_name(dtype)
        out = "boolean" if op.bool_output else arg
        args = ["boolean", arg, arg] if name == "select" else [arg] * op.arity
        dufunc.add(f"{out}({', '.join(args)})")
    return dufunc.ufunc


def _numba_name(dtype):
    return "boolean" if dtype == "bool" else dtype
