"""The float32 tanh of ops.fast_tanh, which the elementwise op tanh uses: accurate, and free of
library calls (so the eager kernels' and the fused loops vectorize)."""
import math
import re

import numba
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ops import elementwise

MAX_ULPS = 3


def _ulps(result, exact):
    """|result - exact| in units of float32's spacing at the exact value."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(result.astype(np.float64) - exact) / spacing


def _float32_sweep(low, high, step):
    """Every ``step``-th float32 in [low, high] (both positive), and their negatives."""
    bits = np.arange(np.float32(low).view(np.int32), np.float32(high).view(np.int32), step,
                     dtype=np.int32)
    positive = bits.view(np.float32)
    return np.concatenate([positive, -positive])


def test_float32_tanh_kernel_is_within_three_ulps_everywhere():
    x = _float32_sweep(2.0 ** -40, 12.0, 997)
    tanh = elementwise.ufunc("tanh", "float32")
    assert _ulps(tanh(x), np.tanh(x.astype(np.float64))).max() <= MAX_ULPS


@given(st.floats(width=32, allow_nan=False))
def test_float32_tanh_matches_float64_tanh(value):
    x = np.array([value], np.float32)
    result = elementwise.ufunc("tanh", "float32")(x)
    assert result.dtype == np.float32
    assert _ulps(result, np.tanh(x.astype(np.float64)))[0] <= MAX_ULPS


def test_float32_tanh_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 100.0, -100.0], np.float32)
    with np.errstate(invalid="ignore"):   # as hybridtf calls its kernels (NaN raises the flag)
        result = elementwise.ufunc("tanh", "float32")(x)
    np.testing.assert_array_equal(result, np.tanh(x))
    assert list(np.signbit(result[:2])) == [False, True]   # tanh(+0) = +0, tanh(-0) = -0


def test_float64_tanh_is_the_c_library_tanh():
    x = np.linspace(-20, 20, 1001)
    np.testing.assert_array_equal(elementwise.ufunc("tanh", "float64")(x),
                                  [math.tanh(v) for v in x])


def test_float32_tanh_loop_has_no_library_call_and_vectorizes():
    # A fresh (uncached) loop over the elementwise op's scalar function, as the eager ufunc
    # and the compiler's fused loops use it.
    @numba.njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = elementwise.tanh(x[i])

    x = np.linspace(-3, 3, 64).astype(np.float32)
    loop(x, np.empty_like(x))
    llvm = loop.inspect_llvm(loop.signatures[0])
    assert "@tanhf" not in llvm
    assert re.search(r"<\d+ x float>", llvm), "the float32 tanh loop did not vectorize"
