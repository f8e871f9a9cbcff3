"""Elementwise ops: one entry per op (kernel: the scalar function in ``ops.elementwise``)."""
import numpy as np

from ops import elementwise as kernels
from ops.cuda import elementwise as cuda_kernels

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry import Kernel, OpDef, Spec, checks, register


def _infer(name, scalar):
    def infer(specs, attrs):
        if name == "select":
            if specs[0].dtype.kind != "b":
                raise TypeError(f"where: condition must be bool, got "
                                f"{checks.dtype_name(specs[0].dtype)}.")
            dtype = checks.same_dtype(name, specs[1:])
        else:
            dtype = checks.same_dtype(name, specs)
        if not (dtype == object and name in STRING_OPS):
            checks.allowed_dtype(name, dtype, scalar.dtypes)
        shape = checks.broadcast(name, [s.shape for s in specs])
        return [Spec(shape, bool if scalar.bool_output else dtype)]
    return infer


def _concat_strings(x, y):
    return np.asarray(np.add(x, y), dtype=object)  # NumPy returns bare bytes for 0-d inputs


# Ops that also apply to tf.string tensors (bytes objects): NumPy's object loops run them.
STRING_OPS = {"add": _concat_strings, "equal": np.equal, "not_equal": np.not_equal}


def ufunc_for(name, dtype):
    """The ufunc computing elementwise op ``name`` on inputs of NumPy ``dtype``; its caller
    silences NumPy's floating-point warnings (``hybridtf.framework.fp_errors``)."""
    if dtype == object and name in STRING_OPS:
        return STRING_OPS[name]
    return kernels.ufunc(name, dtype.name)


# Constants are arguments of the fused loops, so that traces differing only in a constant's
# value share one compiled kernel; a few are literals, where LLVM then emits much cheaper code
# (the ``literal_pays`` form of the CPU kernels below).  Measured on 1e5-element loops, literal
# vs argument:
# * a float power's exponent 0, 0.5 or -1: pow becomes 1, sqrt or a division (35-65x); other
#   float exponents compute pow either way, and 1, 2, 3 are branches of ops.elementwise.power;
# * an integer power's exponent 0..16: pow becomes a few multiplies (11-17x);
# * a floordiv / floormod divisor that is a power of two, 1 to 2**62: a shift or mask for
#   integers, an exact multiply for floats (10-90x); other divisors gain under 2x (integers) or
#   nothing (floats).
# Multiplying by 1 or adding 0 gains nothing measurable (within 5%), so 0/1 stay arguments.
# Each rule admits a bounded set of values, so no stream of Python numbers compiles without end.
_POWER_LITERAL_FLOAT_EXPONENTS = (0.0, 0.5, -1.0)
_POWER_LITERAL_MAX_INTEGER_EXPONENT = 16
_DIVISOR_LITERAL_MAX = 1 << 62


def _exponent_literal_pays(position, value):
    if position != 1:
        return False
    kind = np.asarray(value).dtype.kind
    if kind == "f":
        return float(value) in _POWER_LITERAL_FLOAT_EXPONENTS
    return kind in "iu" and 0 <= int(value) <= _POWER_LITERAL_MAX_INTEGER_EXPONENT


def _divisor_literal_pays(position, value):
    if position != 1 or np.asarray(value).dtype.kind not in "iuf":
        return False
    v = float(value)
    if not (1 <= v <= _DIVISOR_LITERAL_MAX) or v != int(v):
        return False
    n = int(v)
    return n & (n - 1) == 0


def _cpu_kernel(name, literal_pays=None):
    """The CPU kernel of elementwise op ``name``: its ufunc chosen by the dtype of the last
    input (the values of ``select``), with the ufunc and flat-loop forms."""
    def run(arrays, attrs):
        return ufunc_for(name, arrays[-1].dtype)(*arrays)

    def flat_loop(variant):
        return getattr(kernels.kernels(name), "loop_" + variant)

    def reference_ufunc(dtype):
        return kernels.reference_ufunc(name, dtype.name)

    def reference(arrays, attrs):
        function = reference_ufunc(arrays[-1].dtype)
        return None if function is None else function(*arrays)

    return Kernel(run, ufunc=lambda dtype: ufunc_for(name, dtype),
                  flat_loop=flat_loop if kernels.SCALAR_OPS[name].arity == 2 else None,
                  literal_pays=literal_pays, reference=reference,
                  reference_ufunc=reference_ufunc)


def _cuda_kernel(name):
    """The CUDA kernel of elementwise op ``name``: generated from the same scalar function."""
    return lambda arrays, attrs: cuda_kernels.run(name, arrays)


def _on_device(array):
    # A Numba device array (on a GPU, or the simulator's): checked there, only a flag comes back.
    return hasattr(array, "copy_to_host")


def _no_negative_integer_exponent(arrays, attrs):
    x, y = arrays
    if x.dtype.kind not in "iu":
        return
    if _on_device(y):
        negative = y.dtype.kind == "i" and cuda_kernels.any_in_range(
            y, np.iinfo(y.dtype).min, -1)
    else:
        negative = (np.asarray(y) < 0).any()
    if negative:
        checks.fail("pow", "Integers to negative integer powers are not allowed.")


def _no_integer_zero_divisor(arrays, attrs):
    x, y = arrays
    if y.dtype.kind in "iu" and (cuda_kernels.any_in_range(y, 0, 0) if _on_device(y)
                                 else (y == 0).any()):
        checks.fail("floordiv", "Integer division by zero.")


def define(name, grad=None, check_values=None, literal_pays=None):
    """Registers elementwise op ``name`` of ``ops.elementwise.SCALAR_OPS``.  Its value checks,
    if any, concern only an integer second operand (``OpDef.float_safe_checks``)."""
    scalar = kernels.SCALAR_OPS[name]
    return register(OpDef(name, "elementwise", {"cpu": _cpu_kernel(name, literal_pays),
                                                "cuda": _cuda_kernel(name)},
                          _infer(name, scalar), grad, check_values=check_values, scalar=scalar,
                          float_safe_checks=check_values is not None))


def unbroadcast(grad, x):
    """Sums ``grad`` over the dimensions that broadcasting added or stretched to reach it from
    ``x``'s shape (at run time when a dimension is unknown while tracing)."""
    gshape = grad._shape_tuple
    shape = x._shape_tuple
    if gshape is None or shape is None or None in gshape or None in shape:
        return A.sum_to_like(grad, x)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape)
                                if d == 1 and gshape[lead + i] != 1]
    if axes:
        grad = M.reduce_sum(grad, axis=axes, keepdims=True)
    return A.reshape(grad, shape)


def _binary_grad(fx, fy):
    """A gradient rule from the per-operand partials, summing over broadcast dimensions; only
    for the operands the gradient needs (not for ``x * 0.5``'s constant)."""
    def grad(record, grads):
        g, = grads
        x, y = record.inputs
        gx = unbroadcast(fx(g, x, y, record.outputs[0]), x) if fx and record.needs(0) else None
        gy = unbroadcast(fy(g, x, y, record.outputs[0]), y) if fy and record.needs(1) else None
        return gx, gy
    return grad


def _unary_grad(f):
    def grad(record, grads):
        return (f(grads[0], record.inputs[0], record.outputs[0]),)
    return grad


def _select_grad(record, grads):
    g, = grads
    c, x, y = record.inputs
    zeros = A.zeros_like(g)
    return (None, unbroadcast(M.where(c, g, zeros), x), unbroadcast(M.where(c, zeros, g), y))


def _power_dx(g, x, y, z):
    return g * y * M.pow(x, y - 1)


def _power_dy(g, x, y, z):
    safe_log = M.where(x > 0, M.log(M.where(x > 0, x, A.ones_like(x))), A.zeros_like(x))
    return g * z * safe_log


ADD = define("add", _binary_grad(lambda g, x, y, z: g, lambda g, x, y, z: g))
SUBTRACT = define("subtract", _binary_grad(lambda g, x, y, z: g, lambda g, x, y, z: -g))
MULTIPLY = define("multiply", _binary_grad(lambda g, x, y, z: g * y, lambda g, x, y, z: g * x))
DIVIDE = define("divide", _binary_grad(lambda g, x, y, z: g / y,
                                       lambda g, x, y, z: -g * x / (y * y)))
FLOORDIV = define("floordiv", check_values=_no_integer_zero_divisor,
                  literal_pays=_divisor_literal_pays)
FLOORMOD = define("floormod", _binary_grad(lambda g, x, y, z: g,
                                           lambda g, x, y, z: -g * M.floordiv(x, y)),
                  check_values=_no_integer_zero_divisor, literal_pays=_divisor_literal_pays)
POWER = define("power", _binary_grad(_power_dx, _power_dy),
               check_values=_no_negative_integer_exponent, literal_pays=_exponent_literal_pays)
MAXIMUM = define("maximum", _binary_grad(
    lambda g, x, y, z: M.where(x >= y, g, A.zeros_like(g)),
    lambda g, x, y, z: M.where(x >= y, A.zeros_like(g), g)))
MINIMUM = define("minimum", _binary_grad(
    lambda g, x, y, z: M.where(x <= y, g, A.zeros_like(g)),
    lambda g, x, y, z: M.where(x <= y, A.zeros_like(g), g)))
SQUARED_DIFFERENCE = define("squared_difference", _binary_grad(
    lambda g, x, y, z: 2.0 * g * (x - y), lambda g, x, y, z: -2.0 * g * (x - y)))
EQUAL = define("equal")
NOT_EQUAL = define("not_equal")
LESS = define("less")
LESS_EQUAL = define("less_equal")
GREATER = define("greater")
GREATER_EQUAL = define("greater_equal")
LOGICAL_AND = define("logical_and")
LOGICAL_OR = define("logical_or")
LOGICAL_XOR = define("logical_xor")
SELECT = define("select", _select_grad)

NEGATIVE = define("negative", _unary_grad(lambda g, x, y: -g))
ABSOLUTE = define("absolute", _unary_grad(lambda g, x, y: g * M.sign(x)))
SIGN = define("sign", _unary_grad(lambda g, x, y: A.zeros_like(g)))
SQUARE = define("square", _unary_grad(lambda g, x, y: g * (2.0 * x)))
SQRT = define("sqrt", _unary_grad(lambda g, x, y: g * 0.5 / y))
RSQRT = define("rsqrt", _unary_grad(lambda g, x, y: g * -0.5 * y * y * y))
RECIPROCAL = define("reciprocal", _unary_grad(lambda g, x, y: -g * y * y))
EXP = define("exp", _unary_grad(lambda g, x, y: g * y))
EXPM1 = define("expm1", _unary_grad(lambda g, x, y: g * (y + 1.0)))
LOG = define("log", _unary_grad(lambda g, x, y: g / x))
LOG1P = define("log1p", _unary_grad(lambda g, x, y: g / (x + 1.0)))
# Their gradients are ops of their own, as TF's TanhGrad and SigmoidGrad: one pass over the
# arrays where ``g * (1 - y * y)`` makes three, with the same roundings in the same order.
TANH = define("tanh", _unary_grad(lambda g, x, y: M.tanh_grad(y, g)))
SIGMOID = define("sigmoid", _unary_grad(lambda g, x, y: M.sigmoid_grad(y, g)))
TANH_GRAD = define("tanh_grad", _binary_grad(lambda g, y, dy, z: g * -2.0 * y * dy,
                                             lambda g, y, dy, z: M.tanh_grad(y, g)))
SIGMOID_GRAD = define("sigmoid_grad", _binary_grad(
    lambda g, y, dy, z: g * dy * (1.0 - 2.0 * y), lambda g, y, dy, z: M.sigmoid_grad(y, g)))
SOFTPLUS = define("softplus", _unary_grad(lambda g, x, y: g * M.sigmoid(x)))
SIN = define("sin", _unary_grad(lambda g, x, y: g * M.cos(x)))
COS = define("cos", _unary_grad(lambda g, x, y: -g * M.sin(x)))
FLOOR = define("floor")
CEIL = define("ceil")
ROUND = define("round_half_to_even")
RELU = define("relu", _unary_grad(lambda g, x, y: M.where(y > 0, g, A.zeros_like(g))))
LOGICAL_NOT = define("logical_not")

# Special functions: d/dx erf = 2/sqrt(pi) exp(-x^2); lgamma -> digamma -> polygamma(1) -> ...
_TWO_OVER_SQRT_PI = 1.1283791670955126
ERF = define("erf", _unary_grad(lambda g, x, y: g * _TWO_OVER_SQRT_PI * M.exp(-(x * x))))
ERFC = define("erfc", _unary_grad(lambda g, x, y: -g * _TWO_OVER_SQRT_PI * M.exp(-(x * x))))
ERFINV = define("erfinv", _unary_grad(lambda g, x, y: g / _TWO_OVER_SQRT_PI * M.exp(y * y)))
LGAMMA = define("lgamma", _unary_grad(lambda g, x, y: g * M.digamma(x)))
DIGAMMA = define("digamma", _unary_grad(lambda g, x, y: g * M.polygamma(A.ones_like(x), x)))
POLYGAMMA = define("polygamma", _binary_grad(None, lambda g, n, x, z: g * M.polygamma(n + 1.0, x)))
IS_NAN = define("is_nan")
IS_INF = define("is_inf")
IS_FINITE = define("is_finite")
