"""The eager ufuncs' compiled inner loops (``ops.ufunc_loops``): every form of the loop --
contiguous operands, a broadcast scalar on either side, any strides (reversed, transposed,
broadcast rows) -- against NumPy, for each kind of output; and the contiguous forms vectorize."""
import re

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops import elementwise, ufunc_loops

REFERENCES = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
              "greater": np.greater, "subtract": np.subtract}


def _operand_forms(rng, dtype):
    """(x, y) pairs of a (4, 5) result reaching each form of a binary loop."""
    x = (rng.standard_normal((4, 5)) * 10).astype(dtype)
    y = (rng.standard_normal((4, 5)) * 10).astype(dtype)
    s = dtype(3)
    return [(x, y), (x, s), (s, y),                  # contiguous, scalar right, scalar left
            (x[::-1], y), (x.T.copy().T, y[:, ::-1]),  # negative strides
            (x, y[:1]), (x[:, :1], y),                 # broadcast rows and columns
            (np.asfortranarray(x), y)]


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8])
def test_binary_loops_in_every_form_equal_numpy(name, dtype):
    rng = np.random.default_rng(0)
    ufunc = elementwise.ufunc(name, np.dtype(dtype).name)
    for x, y in _operand_forms(rng, dtype):
        with np.errstate(over="ignore"):
            expected = REFERENCES[name](x, y)
        got = ufunc(x, y)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=20)
@given(st.integers(0, 40), st.integers(-3, 3).filter(bool), st.floats(-50, 50, width=32))
def test_unary_and_select_loops_on_strided_views(size, step, value):
    x = np.linspace(-value, value, size * 3, dtype=np.float32)[::step]
    np.testing.assert_array_equal(elementwise.ufunc("negative", "float32")(x), -x)
    condition = np.arange(x.size) % 2 == 0
    select = elementwise.ufunc("select", "float32")
    np.testing.assert_array_equal(select(condition, x, np.float32(value)),
                                  np.where(condition, x, np.float32(value)))
    np.testing.assert_array_equal(select(condition[::-1], x, x[::-1]),
                                  np.where(condition[::-1], x, x[::-1]))


def test_the_contiguous_loops_vectorize():
    # compiled afresh (a loop loaded from the cache has no IR to inspect)
    loop = elementwise.kernels("multiply").ufunc_loop_float32
    compiled = numba.cfunc(ufunc_loops.LOOP_SIGNATURE, error_model="numpy")(loop)
    assert re.search(r"<\d+ x float>", compiled.inspect_llvm()), "no vector loop"


def test_an_empty_operand_and_the_output_argument():
    add = elementwise.ufunc("add", "float64")
    assert add(np.zeros(0), np.zeros(0)).shape == (0,)
    out = np.empty(3)
    assert add(np.ones(3), 2.0, out=out) is out
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])
