"""The ops' reference forms (ops.reference, ops.elementwise.reference_ufunc) against their
compiled kernels: what an op computes while its kernels compile must be what it computes after.
Bit for bit where the reference says so; float64 to rounding otherwise."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops import elementwise, linalg, random, reference
from ops import nn
from ops import reduce as reductions
from ops.array import one_hot

from hybridtf.registry import OPS

SET = settings(max_examples=25, deadline=None)
FLOAT_DTYPES = [np.float32, np.float64]
SPECIAL = [0.0, -0.0, 1.0, -1.5, 2.5, np.inf, -np.inf, np.nan, 1e-30, 3e38]


def _values(draw, shape, dtype):
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    x = rng.standard_normal(shape) * draw(st.sampled_from([1.0, 100.0]))
    if np.dtype(dtype).kind == "f":
        special = rng.random(shape) < 0.2
        x = np.where(special, rng.choice(SPECIAL, shape), x)
        return x.astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _same(actual, expected):
    assert np.asarray(actual).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(actual, expected)   # NaN equals NaN here


# ---- elementwise -----------------------------------------------------------------------------
_CASES = [(name, dtype) for name, op in elementwise.SCALAR_OPS.items() for dtype in op.dtypes
          if elementwise.reference_ufunc(name, dtype) is not None]


def test_references_cover_the_common_ops():
    for name in ("add", "subtract", "multiply", "divide", "relu", "sqrt", "greater", "select",
                 "exp", "log", "tanh", "sigmoid", "power", "maximum"):
        assert elementwise.reference_ufunc(name, "float32") is not None
    assert elementwise.reference_ufunc("add", "int64") is not None
    assert elementwise.reference_ufunc("divide", "int32") is None      # not an int op
    assert elementwise.reference_ufunc("exp", "float16") is None       # widened: no reference
    assert elementwise.reference_ufunc("floordiv", "float32") is None  # TF's two steps
    assert elementwise.reference_ufunc("add", "object") is None        # strings: no kernel


@SET
@given(st.data())
def test_elementwise_references_match_the_ufuncs(data):
    name, dtype = data.draw(st.sampled_from(_CASES))
    op = elementwise.SCALAR_OPS[name]
    shapes = data.draw(st.sampled_from([[(3, 4)] * op.arity, [(3, 1), (1, 4), (4,)][:op.arity],
                                        [()] * op.arity]))
    arrays = [_values(data.draw, shape, dtype) for shape in shapes]
    if name == "select":
        arrays[0] = _values(data.draw, shapes[0], np.bool_)
    if name == "power" and np.dtype(dtype).kind in "iu":
        arrays[1] = np.abs(arrays[1]) % 7   # the op's check: no negative integer exponents
    with np.errstate(all="ignore"):
        expected = elementwise.ufunc(name, dtype)(*arrays)
        actual = elementwise.reference_ufunc(name, dtype)(*arrays)
    if name in elementwise.EXACT_REFERENCES:
        _same(actual, expected)
        assert type(actual) is type(expected)   # a scalar from 0-d inputs, as a ufunc
    else:
        tol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-13
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


# ---- products, reductions, logits ------------------------------------------------------------
@SET
@given(st.data(), st.sampled_from(FLOAT_DTYPES))
def test_matmul_reference(data, dtype):
    m, n, k = (data.draw(st.integers(1, 9)) for _ in range(3))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    batch = data.draw(st.sampled_from([(), (2,), (3, 1)]))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = rng.standard_normal(batch + ((k, m) if ta else (m, k))).astype(dtype)
    b = rng.standard_normal(((k, n) if not tb else (n, k))).astype(dtype)
    expected = linalg.matmul(a, np.broadcast_to(b, batch + b.shape).copy(), ta, tb)
    actual = reference.matmul(a, np.broadcast_to(b, batch + b.shape), ta, tb)
    assert actual.dtype == expected.dtype and actual.flags.c_contiguous
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)
    assert reference.matmul(a.astype(np.int32), b.astype(np.int32), ta, tb) is None


@SET
@given(st.data(), st.sampled_from(["sum", "mean", "max", "min", "prod"]),
       st.sampled_from(FLOAT_DTYPES))
def test_reduction_references(data, name, dtype):
    shape = data.draw(st.sampled_from([(3, 4), (2, 0, 3), (5,), ()]))
    x = _values(data.draw, shape, dtype)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)),
                                          max_size=len(shape)))))
    keepdims = data.draw(st.booleans())
    with np.errstate(all="ignore"):
        expected = getattr(reductions, "reduce_" + name)(x, axes, keepdims)
        actual = reference.reduce(name, x, axes, keepdims)
    assert np.shape(actual) == np.shape(expected)
    if name in ("max", "min"):
        _same(actual, np.asarray(expected))
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-4, equal_nan=True)


def test_bool_reductions_and_uncovered_inputs():
    x = np.array([[True, False], [True, True]])
    _same(reference.reduce("any", x, (1,), False), reductions.reduce_any(x, (1,), False))
    _same(reference.reduce("all", x, (0, 1), True), reductions.reduce_all(x, (0, 1), True))
    assert reference.reduce("sum", np.arange(4), (0,), False) is None   # integers compile


@SET
@given(st.data(), st.sampled_from(FLOAT_DTYPES))
def test_logits_references(data, dtype):
    n, c = data.draw(st.integers(0, 5)), data.draw(st.integers(1, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    x = (rng.standard_normal((n, c)) * 30).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for log in (False, True):
        expected = nn.log_softmax(x) if log else nn.softmax(x)
        np.testing.assert_allclose(reference.softmax(x, log), expected, rtol=tol, atol=tol)
    labels = rng.integers(0, c, n).astype(np.int32)
    for actual, expected in zip(reference.sparse_softmax_cross_entropy(x, labels),
                                nn.sparse_softmax_cross_entropy(x, labels)):
        assert actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)
    dense = rng.random((n, c)).astype(dtype)
    for actual, expected in zip(reference.softmax_cross_entropy(x, dense),
                                nn.softmax_cross_entropy(x, dense)):
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


@SET
@given(st.data())
def test_one_hot_reference(data):
    shape = data.draw(st.sampled_from([(4,), (2, 3), ()]))
    depth = data.draw(st.integers(0, 5))
    indices = np.random.default_rng(data.draw(st.integers(0, 99))).integers(-1, 7, shape)
    axis = data.draw(st.integers(0, len(shape)))
    dtype = data.draw(st.sampled_from([np.float32, np.int64, np.bool_]))
    on, off = (True, False) if dtype == np.bool_ else (3, -1)
    _same(reference.one_hot(indices, depth, on, off, axis, dtype),
          one_hot(indices, depth, on, off, axis, dtype))


# ---- convolutions and pooling ----------------------------------------------------------------
@st.composite
def conv_case(draw):
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7))
    cin, cout = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilations = (1, 1) if strides != (1, 1) else (draw(st.integers(1, 2)),
                                                  draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if padding == "VALID" and ((kh - 1) * dilations[0] >= h or (kw - 1) * dilations[1] >= w):
        padding = "SAME"
    rng = np.random.default_rng(draw(st.integers(0, 10 ** 6)))
    return (rng.standard_normal((n, h, w, cin)), rng.standard_normal((kh, kw, cin, cout)),
            strides, padding, dilations)


@SET
@given(conv_case())
def test_conv_references(case):
    x, w, strides, padding, dilations = case
    y = nn.conv2d(x, w, strides, padding, dilations)
    np.testing.assert_allclose(reference.conv2d(x, w, strides, padding, dilations), y,
                               rtol=1e-10, atol=1e-10)
    dy = np.random.default_rng(7).standard_normal(y.shape)
    np.testing.assert_allclose(
        reference.conv2d_backprop_input(x.shape, w, dy, strides, padding, dilations),
        nn.conv2d_backprop_input(x.shape, w, dy, strides, padding, dilations),
        rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(
        reference.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dilations),
        nn.conv2d_backprop_filter(x, w.shape, dy, strides, padding, dilations),
        rtol=1e-10, atol=1e-10)


@SET
@given(st.data(), st.sampled_from(FLOAT_DTYPES))
def test_max_pool_references_bit_for_bit(data, dtype):
    n, h, w, c = (data.draw(st.integers(1, 5)) for _ in range(4))
    ksize = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    strides = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    padding = data.draw(st.sampled_from(["SAME", "VALID"]))
    if padding == "VALID" and (ksize[0] > h or ksize[1] > w):
        padding = "SAME"
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    x = rng.integers(-2, 3, (n, h, w, c)).astype(dtype)   # ties
    x[rng.random(x.shape) < 0.1] = np.nan
    y = nn.max_pool2d(x, ksize, strides, padding)
    _same(reference.max_pool2d(x, ksize, strides, padding), y)
    dy = rng.standard_normal(y.shape).astype(dtype)
    _same(reference.max_pool2d_grad(x, y, dy, ksize, strides, padding),
          nn.max_pool2d_grad(x, y, dy, ksize, strides, padding))


# ---- random numbers --------------------------------------------------------------------------
@SET
@given(st.sampled_from([(7,), (3, 5), (0,), (2, 3, 4), ()]),
       st.integers(0, 2 ** 63 - 1), st.integers(0, 2 ** 63 - 1))
def test_random_references_bit_for_bit(shape, seed, counter):
    for dtype in FLOAT_DTYPES:
        _same(reference.random_uniform(shape, dtype, seed, counter),
              random.uniform(shape, dtype, seed, counter))
    for dtype, (lo, hi) in [(np.int32, (-5, 1000)), (np.int64, (-2 ** 62, 2 ** 62))]:
        _same(reference.random_uniform_int(shape, dtype, lo, hi, seed, counter),
              random.uniform_int(shape, dtype, lo, hi, seed, counter))


# ---- the registry --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["matmul", "reduce_sum", "reduce_mean", "softmax",
                                  "sparse_softmax_cross_entropy_with_logits", "one_hot",
                                  "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter",
                                  "max_pool2d", "max_pool2d_grad", "bias_add", "random_uniform",
                                  "add", "relu"])
def test_the_ops_of_a_first_train_step_have_references(name):
    assert OPS[name].kernels["cpu"].reference is not None
