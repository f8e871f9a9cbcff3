"""Elementwise ops against NumPy, and their gradients against finite differences."""
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import broadcastable_pair, check_gradients


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(0, x)


# name: (hybridtf fn, NumPy reference, domain (low, high), differentiable)
UNARY = {
    "negative": (tf.negative, np.negative, (-3, 3), True),
    "abs": (tf.abs, np.abs, (0.1, 3), True),
    "sign": (tf.sign, np.sign, (-3, 3), False),
    "square": (tf.square, np.square, (-3, 3), True),
    "sqrt": (tf.sqrt, np.sqrt, (0.1, 4), True),
    "rsqrt": (tf.math.rsqrt, lambda x: 1 / np.sqrt(x), (0.2, 4), True),
    "reciprocal": (tf.math.reciprocal, np.reciprocal, (0.3, 3), True),
    "exp": (tf.exp, np.exp, (-3, 3), True),
    "expm1": (tf.math.expm1, np.expm1, (-3, 3), True),
    "log": (tf.math.log, np.log, (0.1, 4), True),
    "log1p": (tf.math.log1p, np.log1p, (-0.5, 3), True),
    "tanh": (tf.tanh, np.tanh, (-3, 3), True),
    "sigmoid": (tf.sigmoid, _sigmoid, (-5, 5), True),
    "softplus": (tf.math.softplus, _softplus, (-5, 5), True),
    "sin": (tf.sin, np.sin, (-3, 3), True),
    "cos": (tf.cos, np.cos, (-3, 3), True),
    "floor": (tf.math.floor, np.floor, (-3, 3), False),
    "ceil": (tf.math.ceil, np.ceil, (-3, 3), False),
    "round": (tf.round, np.round, (-3, 3), False),
    "relu": (tf.nn.relu, lambda x: np.maximum(x, 0), (-3, 3), True),
}

BINARY = {
    "add": (tf.add, np.add, (-3, 3), (-3, 3)),
    "subtract": (tf.subtract, np.subtract, (-3, 3), (-3, 3)),
    "multiply": (tf.multiply, np.multiply, (-3, 3), (-3, 3)),
    "divide": (tf.divide, np.divide, (-3, 3), (0.5, 3)),
    "pow": (tf.pow, np.power, (0.2, 3), (-2, 2)),
    "maximum": (tf.maximum, np.maximum, (-3, 3), (-3, 3)),
    "minimum": (tf.minimum, np.minimum, (-3, 3), (-3, 3)),
    "squared_difference": (tf.math.squared_difference, lambda x, y: (x - y) ** 2, (-3, 3), (-3, 3)),
    "floormod": (tf.math.floormod, np.mod, (-3, 3), (0.5, 3)),
}

COMPARISONS = {
    "equal": (tf.equal, np.equal), "not_equal": (tf.not_equal, np.not_equal),
    "less": (tf.less, np.less), "less_equal": (tf.less_equal, np.less_equal),
    "greater": (tf.greater, np.greater), "greater_equal": (tf.greater_equal, np.greater_equal),
}


def _values(shape, low, high, dtype=np.float64):
    values = hnp.arrays(np.float64, shape, elements=st.floats(low, high))
    return values.map(lambda a: a.astype(dtype))


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data())
def test_unary_matches_numpy(name, dtype, data):
    fn, ref, (low, high), _ = UNARY[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(_values(shape, low, high, dtype))
    out = fn(tf.constant(x))
    assert out.dtype == tf.as_dtype(dtype)
    assert out.shape == shape
    np.testing.assert_allclose(out.numpy(), ref(x).astype(dtype), rtol=2e-6 if dtype == np.float32
                               else 1e-12, atol=1e-6)


@pytest.mark.parametrize("name", sorted(n for n, v in UNARY.items() if v[3]))
@given(data=st.data())
def test_unary_gradient(name, data):
    fn, ref, (low, high), _ = UNARY[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    x = data.draw(_values(shape, low, high))
    if name == "relu":
        assume(np.all(np.abs(x) > 1e-3))
    check_gradients(fn, ref, [x])


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round"])
def test_piecewise_constant_ops_have_no_gradient(name):
    x = tf.constant([0.5, 1.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = UNARY[name][0](x)
    grad = tape.gradient(y, x)
    assert grad is None or not np.any(grad.numpy())


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data())
def test_binary_matches_numpy_with_broadcasting(name, dtype, data):
    fn, ref, xr, yr = BINARY[name]
    (sx, sy), _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0,
                                                               max_dims=3, min_side=0,
                                                               max_side=4))
    x = data.draw(_values(sx, *xr, dtype))
    y = data.draw(_values(sy, *yr, dtype))
    out = fn(tf.constant(x), tf.constant(y))
    expected = ref(x, y)
    assert out.shape == expected.shape
    assert out.dtype == tf.as_dtype(dtype)
    np.testing.assert_allclose(out.numpy(), expected.astype(dtype),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("name", sorted(set(BINARY) - {"floormod"}))
@given(data=st.data())
def test_binary_gradient_with_broadcasting(name, data):
    fn, ref, xr, yr = BINARY[name]
    (sx, sy), _ = data.draw(broadcastable_pair(max_dims=2, max_side=3))
    x = data.draw(_values(sx, *xr))
    y = data.draw(_values(sy, *yr))
    if name in ("maximum", "minimum"):
        assume(np.all(np.abs(np.subtract(x, y)) > 1e-3))
    check_gradients(fn, ref, [x, y])


@given(data=st.data())
def test_floormod_gradient_wrt_x(data):
    (sx, sy), _ = data.draw(broadcastable_pair(max_dims=2, max_side=3))
    x = data.draw(_values(sx, -3, 3))
    y = data.draw(_values(sy, 0.5, 3))
    assume(np.all(np.abs(np.mod(x, y)) > 1e-3) and np.all(np.abs(np.mod(x, y) - y) > 1e-3))
    check_gradients(tf.math.floormod, np.mod, [x, y])


@pytest.mark.parametrize("name", sorted(COMPARISONS))
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
@given(data=st.data())
def test_comparisons(name, dtype, data):
    fn, ref = COMPARISONS[name]
    (sx, sy), _ = data.draw(broadcastable_pair())
    elements = st.integers(-3, 3)
    x = data.draw(hnp.arrays(dtype, sx, elements=elements))
    y = data.draw(hnp.arrays(dtype, sy, elements=elements))
    out = fn(tf.constant(x), tf.constant(y))
    assert out.dtype == tf.bool
    np.testing.assert_array_equal(out.numpy(), ref(x, y))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
@given(data=st.data())
def test_integer_arithmetic_keeps_dtype(dtype, data):
    (sx, sy), _ = data.draw(broadcastable_pair())
    x = data.draw(hnp.arrays(dtype, sx, elements=st.integers(1, 9)))
    y = data.draw(hnp.arrays(dtype, sy, elements=st.integers(1, 9)))
    tx, ty = tf.constant(x), tf.constant(y)
    for fn, ref in [(tf.add, np.add), (tf.subtract, np.subtract), (tf.multiply, np.multiply),
                    (tf.math.floordiv, np.floor_divide), (tf.math.floormod, np.mod),
                    (tf.maximum, np.maximum), (tf.minimum, np.minimum)]:
        out = fn(tx, ty)
        assert out.dtype == tf.as_dtype(dtype)
        np.testing.assert_array_equal(out.numpy(), ref(x, y).astype(dtype))


@given(data=st.data())
def test_logical_ops(data):
    (sx, sy), _ = data.draw(broadcastable_pair())
    x = data.draw(hnp.arrays(np.bool_, sx))
    y = data.draw(hnp.arrays(np.bool_, sy))
    tx, ty = tf.constant(x), tf.constant(y)
    np.testing.assert_array_equal(tf.logical_and(tx, ty).numpy(), x & y)
    np.testing.assert_array_equal(tf.logical_or(tx, ty).numpy(), x | y)
    np.testing.assert_array_equal(tf.math.logical_xor(tx, ty).numpy(), x ^ y)
    np.testing.assert_array_equal(tf.logical_not(tx).numpy(), ~x)
    np.testing.assert_array_equal((tx & ty).numpy(), x & y)
    np.testing.assert_array_equal((~tx).numpy(), ~x)


@given(data=st.data())
def test_where_and_its_gradient(data):
    (sc, sx, sy), _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=2,
                                                                   max_side=3))
    c = data.draw(hnp.arrays(np.bool_, sc))
    x = data.draw(_values(sx, -3, 3))
    y = data.draw(_values(sy, -3, 3))
    np.testing.assert_array_equal(tf.where(tf.constant(c), tf.constant(x), tf.constant(y)).numpy(),
                                  np.where(c, x, y))
    check_gradients(lambda a, b: tf.where(tf.constant(c), a, b),
                    lambda a, b: np.where(c, a, b), [x, y])


def test_large_array_with_scalar_uses_the_same_values():
    # Arrays above the flat-loop threshold take a different kernel than small ones.
    x = np.random.default_rng(1).normal(size=(70, 80)).astype(np.float32)
    t = tf.constant(x)
    np.testing.assert_allclose((t ** 2).numpy(), x ** 2, rtol=1e-6)
    np.testing.assert_allclose((abs(t) ** 0.5).numpy(), np.abs(x) ** np.float32(0.5), rtol=1e-6)
    np.testing.assert_allclose((t * 3).numpy(), x * 3, rtol=1e-6)
    np.testing.assert_allclose((2.0 - t).numpy(), 2 - x, rtol=1e-6)
    np.testing.assert_array_equal((t > 0.5).numpy(), x > 0.5)
    assert (t ** 2).dtype == tf.float32


def test_clip_by_value_and_its_gradient():
    x = np.array([-2.0, -0.5, 0.3, 1.7, 3.0])
    np.testing.assert_allclose(tf.clip_by_value(tf.constant(x), -1.0, 1.5).numpy(),
                               np.clip(x, -1.0, 1.5))
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = tf.clip_by_value(t, -1.0, 1.5)
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), [0, 1, 1, 0, 0])


def test_integer_true_division_gives_float64_like_tf():
    out = tf.constant([3, 4]) / tf.constant([2, 8])
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out.numpy(), [1.5, 0.5])
    assert (tf.constant([3], tf.int16) / tf.constant([2], tf.int16)).dtype == tf.float32


def test_cast_and_its_gradient():
    x = tf.constant([1.7, -1.7, 2.5])
    np.testing.assert_array_equal(tf.cast(x, tf.int32).numpy(), [1, -1, 2])
    assert tf.cast(tf.constant([0, 2]), tf.bool).numpy().tolist() == [False, True]
    check_gradients(lambda a: tf.cast(tf.cast(a, tf.float32), tf.float64) * 2.0,
                    lambda a: a * 2.0, [np.array([0.5, 1.5])], rtol=1e-3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(tf.cast(x, tf.int32), tf.float32)
    assert tape.gradient(y, x) is None


# Float floor division is floor(x / y) in IEEE arithmetic, as TF's: quotients beyond int64,
# infinities and NaN included (the expected values are TF 2.21's).
_INF, _NAN = np.inf, np.nan
FLOORDIV_IEEE = [(1e20, 1.0, 1e20), (5.0, 0.0, _INF), (-5.0, 0.0, -_INF), (0.0, 0.0, _NAN),
                 (_NAN, 1.0, _NAN), (_INF, 1.0, _INF), (-7.0, 2.0, -4.0), (1.0, _INF, 0.0),
                 (-1.0, _INF, -0.0), (_INF, _INF, _NAN)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("traced", [False, True])
def test_float_floordiv_follows_ieee_like_tf(dtype, traced):
    x, y, expected = (np.array(column, dtype) for column in zip(*FLOORDIV_IEEE))
    fn = tf.function(tf.math.floordiv) if traced else tf.math.floordiv
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # and silently, as TF
        out = fn(tf.constant(x), tf.constant(y))
        operator_out = tf.constant(x) // tf.constant(y)
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(operator_out.numpy(), expected)


@pytest.mark.parametrize("fn, ref", [(tf.math.floor, np.floor), (tf.math.ceil, np.ceil)])
def test_floor_and_ceil_keep_huge_and_non_finite_values(fn, ref):
    x = np.array([1e20, -1e30, 3e38, _INF, -_INF, _NAN, -2.5, 0.5], np.float32)
    np.testing.assert_array_equal(fn(tf.constant(x)).numpy(), ref(x))
    np.testing.assert_array_equal(tf.function(fn)(tf.constant(x.astype(np.float64))).numpy(),
                                  ref(x.astype(np.float64)))
