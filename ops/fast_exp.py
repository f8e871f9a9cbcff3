"""An exp for float32 loops that vectorizes: 2^n * exp(r), |r| <= ln(2) / 2, exp(r) by its
Taylor series to degree 7, 2^n built from its exponent bits.  No library call, so a loop over a
row computes 8 or 16 values at once (the C library's ``expf`` runs one at a time).

Within 2 units in the last place (float32) of the exact exp for arguments in [-87, 0].  Used
where the argument is never positive: softmax (x - max) and the recurrences' sigmoid and tanh
(of -|v|).
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ops.kernel_cache import njit

# "contract": the series and the reduction by ln 2 run as fused multiply-adds where the CPU has
# them (a third fewer instructions in a vectorized loop; the error bound holds either way).
_jit = njit(error_model="numpy", nogil=True, fastmath={"contract"})

_F32 = np.float32
_ZERO, _HALF, _ONE = _F32(0.0), _F32(0.5), _F32(1.0)
_EXP_FLOOR = _F32(-87.0)              # 2^n stays a normal float32
_LOG2E = _F32(1.4426950408889634)
_LN2_HI = _F32(0.693359375)           # ln 2 in two parts: n * _LN2_HI is exact
_LN2_LO = _F32(-2.12194440e-4)
_C3, _C4, _C5, _C6, _C7 = (_F32(1.0 / 6), _F32(1.0 / 24), _F32(1.0 / 120), _F32(1.0 / 720),
                           _F32(1.0 / 5040))


@intrinsic
def _pow2_f32(typingctx, n):
    """2.0 ** n as a float32, for an int32 n in [-126, 127], built from its exponent bits (no
    library call, so loops over it vectorize)."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        bits = builder.shl(builder.add(args[0], ir.Constant(i32, 127)), ir.Constant(i32, 23))
        return builder.bitcast(bits, ir.FloatType())
    return types.float32(types.int32), codegen


@_jit
def exp_parts_f32(y):
    """(2^n, q) with exp(y) = 2^n * (1 + q), for a float32 y <= 0 (clamped at -87): q is
    exp(r) - 1 without the cancellation, so that expm1 stays accurate near 0."""
    y = max(y, _EXP_FLOOR)
    n = np.floor(y * _LOG2E + _HALF)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    q = r * (_ONE + r * (_HALF + r * (_C3 + r * (_C4 + r * (_C5 + r * (_C6 + r * _C7))))))
    return _pow2_f32(np.int32(n)), q


@_jit
def _exp_nonpositive_f32(y):
    scale, q = exp_parts_f32(y)
    e = scale * (_ONE + q)
    if y < _EXP_FLOOR:
        e = _ZERO         # exp(-inf) is 0; below -87 the exact value is subnormal or 0
    if y != y:
        e = y             # NaN stays NaN
    return e


def exp_nonpositive(y):
    """exp(y) for y <= 0 (or NaN) in y's float type: the vectorizing float32 exp above (0 below
    -87), the library's exp for float64."""


@overload(exp_nonpositive)
def _exp_nonpositive_impl(y):
    if y == types.float32:
        return lambda y: _exp_nonpositive_f32(y)
    return lambda y: np.exp(y)
