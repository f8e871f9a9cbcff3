"""Elementwise ops against NumPy, and their gradients against finite differences."""
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import broadcastable_pair, check_gradients
from hybridtf.api import math_ops


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
    # the gradients through tanh and sigmoid (TF's TanhGrad, SigmoidGrad), of the output y
    "tanh_grad": (math_ops.tanh_grad, lambda y, dy: dy * (1 - y * y), (-1, 1), (-3, 3)),
    "sigmoid_grad": (math_ops.sigmoid_grad, lambda y, dy: dy * y * (1 - y), (0, 1), (-3, 3)),
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


@pytest.mark.parametrize("fn, grad_op", [(tf.tanh, "tanh_grad"), (tf.sigmoid, "sigmoid_grad")])
def test_tanh_and_sigmoid_gradients_are_one_op_and_differentiable_again(fn, grad_op):
    """Their gradients are one op each (not three), in a trace as on the tape, and the
    second derivative through that op matches finite differences."""
    x = np.linspace(-2.0, 2.0, 7)
    with tf.GradientTape() as outer:
        xt = tf.constant(x)
        outer.watch(xt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            y = fn(xt)
        dy = inner.gradient(y, xt)
    d2y = outer.gradient(dy, xt).numpy()
    f = {"tanh_grad": np.tanh, "sigmoid_grad": _sigmoid}[grad_op]
    first = lambda v: (f(v + 1e-5) - f(v - 1e-5)) / 2e-5   # noqa: E731
    np.testing.assert_allclose(d2y, (first(x + 1e-4) - first(x - 1e-4)) / 2e-4, atol=1e-5)

    def gradient(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            out = fn(v)
        return tape.gradient(out, v)
    graph = tf.function(gradient).get_concrete_function(tf.TensorSpec([3], tf.float32)).graph
    ops = [node.op.name for node in graph.nodes]
    assert ops.count(grad_op) == 1 and "multiply" not in ops and "subtract" not in ops, ops


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


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("traced", [False, True])
@given(data=st.data())
def test_integer_power_wraps_like_numpy_for_any_exponent(dtype, traced, data):
    info = np.iinfo(dtype)
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    x = data.draw(hnp.arrays(dtype, shape, elements=st.integers(max(info.min, -5), 5)))
    y = data.draw(hnp.arrays(dtype, shape, elements=st.integers(0, info.max)))
    power = tf.function(tf.pow) if traced else tf.pow
    out = power(tf.constant(x), tf.constant(y))
    assert out.dtype == tf.as_dtype(dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out.numpy(), np.power(x, y))


def test_integer_power_of_two_to_a_huge_exponent_is_zero_like_numpy():
    assert tf.pow(tf.constant(2, tf.int64), tf.constant(2**31 - 1, tf.int64)).numpy() == 0


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


@pytest.mark.parametrize("size", [3, 5000])   # the ufunc, and the flat loops
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_python_float_operands_on_either_side_and_their_gradients(size, dtype):
    x = np.linspace(0.5, 2.0, size).astype(dtype)
    t = tf.constant(x)
    cases = [(lambda a: a * 1.5, lambda a: a * dtype(1.5), 1.5),
             (lambda a: 1.5 * a, lambda a: dtype(1.5) * a, 1.5),
             (lambda a: 2.0 - a, lambda a: dtype(2.0) - a, -1.0),
             (lambda a: a - 2.0, lambda a: a - dtype(2.0), 1.0),
             (lambda a: 3.0 / a, lambda a: dtype(3.0) / a, None),
             (lambda a: a / 3.0, lambda a: a / dtype(3.0), 1 / 3)]
    for fn, ref, slope in cases:
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = fn(t)
        assert y.dtype == t.dtype
        np.testing.assert_array_equal(y.numpy(), ref(x))
        grad = tape.gradient(y, t).numpy()
        expected = -3.0 / x.astype(np.float64) ** 2 if slope is None else np.full(size, slope)
        np.testing.assert_allclose(grad, expected, rtol=2e-3 if dtype == np.float16 else 1e-6)
        # again without a tape: the float's converted form is kept by now (the quickest path)
        np.testing.assert_array_equal(fn(t).numpy(), ref(x))


def test_a_python_float_kept_for_a_float_tensor_is_still_refused_by_an_integer_one():
    t = tf.constant([1.0, 2.0])
    for _ in range(2):
        np.testing.assert_array_equal((t * 1.5).numpy(), [1.5, 3.0])
        with pytest.raises(TypeError, match="cannot convert 1.5 to EagerTensor of dtype int32"):
            tf.constant([1, 2]) * 1.5
        np.testing.assert_array_equal((tf.constant([1, 2]) * 2.0).numpy(), [2, 4])


def test_signed_zero_and_nan_python_operands_keep_their_values():
    t = tf.constant([1.0, -2.0])
    for _ in range(2):   # converted operands may be reused: each call sees its own value
        np.testing.assert_array_equal(np.signbit((t * 0.0).numpy()), [False, True])
        np.testing.assert_array_equal(np.signbit((t * -0.0).numpy()), [True, False])
        np.testing.assert_array_equal(np.signbit((0.0 - t * 0.0).numpy()), [False, False])
        assert np.isnan((t + float("nan")).numpy()).all()
        np.testing.assert_array_equal((t * 3.0).numpy(), [3.0, -6.0])


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


# ---- float16 and the wide unsigned dtypes -------------------------------------------------------
UNSIGNED = [np.uint16, np.uint32, np.uint64]
UNSIGNED_OPS = [(tf.add, np.add), (tf.subtract, np.subtract), (tf.multiply, np.multiply),
                (tf.math.floordiv, np.floor_divide), (tf.math.floormod, np.mod),
                (tf.maximum, np.maximum), (tf.minimum, np.minimum), (tf.equal, np.equal),
                (tf.less, np.less), (tf.greater_equal, np.greater_equal)]


@pytest.mark.parametrize("dtype", UNSIGNED)
@given(data=st.data())
def test_wide_unsigned_ops_keep_dtype_and_every_bit(dtype, data):
    # Values up to the dtype's max: uint64 ones beyond 2**53 would lose bits through a float.
    (sx, sy), _ = data.draw(broadcastable_pair())
    top = np.iinfo(dtype).max
    x = data.draw(hnp.arrays(dtype, sx, elements=st.integers(0, top)))
    y = data.draw(hnp.arrays(dtype, sy, elements=st.integers(1, top)))
    tx, ty = tf.constant(x), tf.constant(y)
    for fn, ref in UNSIGNED_OPS:
        out = fn(tx, ty)
        expected = ref(x, y)
        assert out.dtype == tf.as_dtype(expected.dtype)
        np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(tf.nn.relu(tx).numpy(), x)
    np.testing.assert_array_equal(tf.square(tx).numpy(), x * x)
    c = x > y[..., :1] if y.ndim else x > y
    np.testing.assert_array_equal(tf.where(tf.constant(c), tx, tx + 1).numpy(),
                                  np.where(c, x, x + dtype(1)))


FLOAT16_UNARY = ["negative", "abs", "sign", "square", "sqrt", "rsqrt", "reciprocal", "exp",
                 "expm1", "log", "log1p", "tanh", "sigmoid", "softplus", "sin", "cos", "floor",
                 "ceil", "round", "relu"]
FLOAT16_BINARY = ["add", "subtract", "multiply", "divide", "pow", "maximum", "minimum",
                  "floormod"]


def _float16s(shape):
    return hnp.arrays(np.float16, shape, elements=st.floats(width=16, allow_nan=True))


def _rounded(tensor):
    with np.errstate(all="ignore"):
        return tensor.numpy().astype(np.float16)


@given(data=st.data())
def test_float16_ops_are_the_float32_ops_rounded_to_float16(data):
    # Numba has no float16 on the CPU: each op runs in float32, its result rounded (which is
    # exact float16 arithmetic for +, -, *, / and sqrt).
    (sx, sy), _ = data.draw(broadcastable_pair())
    x, y = data.draw(_float16s(sx)), data.draw(_float16s(sy))
    wide_x, wide_y = tf.constant(x.astype(np.float32)), tf.constant(y.astype(np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # silently, as TF
        for name in FLOAT16_UNARY:
            fn = UNARY[name][0]
            out = fn(tf.constant(x))
            assert out.dtype == tf.float16
            np.testing.assert_array_equal(out.numpy(), _rounded(fn(wide_x)))
        for name in FLOAT16_BINARY:
            fn = BINARY[name][0]
            out = fn(tf.constant(x), tf.constant(y))
            assert out.dtype == tf.float16
            np.testing.assert_array_equal(out.numpy(), _rounded(fn(wide_x, wide_y)))
        for fn, ref in COMPARISONS.values():
            np.testing.assert_array_equal(fn(tf.constant(x), tf.constant(y)).numpy(), ref(x, y))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(tf.multiply(tf.constant(x), tf.constant(y)).numpy(), x * y)


def test_float16_floordiv_and_squared_difference_round_their_first_step_as_tf():
    # TF computes floor(x / y) and (x - y) ** 2 on float16 values: the quotient (difference) is
    # rounded to float16 before the floor (square).  The expected values are TF 2.21's.
    x = tf.constant(np.array([-4.345e-05, 7.0, 0.000198], np.float16))
    y = tf.constant(np.array([6.093e04, 0.7, -4.15], np.float16))
    np.testing.assert_array_equal(tf.math.floordiv(x, y).numpy(),
                                  np.array([-0.0, 10.0, -1.0], np.float16))
    assert tf.math.squared_difference(x, y).numpy()[2] == np.float16(17.2)


def test_float16_with_a_python_float_rounds_the_scalar_first_on_every_path():
    x = np.random.default_rng(2).normal(size=5000).astype(np.float16)   # above the loop size
    for values in (x, x[:10]):
        t = tf.constant(values)
        expected = (values.astype(np.float32) * np.float32(np.float16(0.1))).astype(np.float16)
        np.testing.assert_array_equal((t * 0.1).numpy(), expected)
        np.testing.assert_array_equal((0.1 * t).numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float16, np.uint16, np.uint32, np.uint64])
def test_traced_ops_on_float16_and_wide_unsigned_match_eager(dtype):
    def f(x, y):
        return tf.maximum(x * y, y) // y + tf.nn.relu(x - y)

    x = tf.constant(np.array([3, 7, 250, 9], dtype))
    y = tf.constant(np.array([2, 4, 5, 9], dtype))
    out = tf.function(f)(x, y)
    assert out.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), f(x, y).numpy())
    np.testing.assert_array_equal(out.numpy(), np.array([4, 10, 495, 9], dtype))


def test_ops_tf_has_no_float16_kernel_for_say_so():
    with pytest.raises(TypeError, match="erfinv: x has dtype float16, which this op does not "
                                        "support; allowed: float32, float64"):
        tf.math.erfinv(tf.constant([0.5], tf.float16))


# (value, dtype) -> TF 2.21's tf.saturate_cast (which has no clip kernel for uint32 and uint64
# inputs: theirs are the values clamped to the target's range)
SATURATE_CASTS = [
    (np.array([1.5, 7e4, -3.0, np.inf], np.float32), tf.uint8, [1, 255, 0, 255]),
    (np.array([6e4, np.inf, -np.inf, 2.5], np.float16), tf.uint16, [60000, 65504, 0, 2]),
    (np.array([np.inf, 65504, -np.inf], np.float16), tf.int32, [65504, 65504, -65504]),
    (np.array([3e9, -3e9, 1.0], np.float32), tf.int32, [2147483520, -2147483648, 1]),
    (np.array([1e300, -1e300, 0.5]), tf.float32, [3.4028234663852886e38, -3.4028234663852886e38,
                                                  0.5]),
    (np.array([2**64 - 1, 5], np.uint64), tf.int64, [2**63 - 1, 5]),
    (np.array([70000, 2**32 - 1], np.uint32), tf.uint16, [65535, 65535]),
    (np.array([-5, 300], np.int16), tf.uint8, [0, 255]),
]


@pytest.mark.parametrize("value, dtype, expected", SATURATE_CASTS)
def test_saturate_cast_clamps_to_bounds_the_input_dtype_can_hold(value, dtype, expected):
    out = tf.saturate_cast(tf.constant(value), dtype)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), np.array(expected, dtype.as_numpy_dtype))
