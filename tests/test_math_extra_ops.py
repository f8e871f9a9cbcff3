"""tf.math's special functions (erf, erfc, erfinv, lgamma, digamma, polygamma), its floating-point
predicates (is_nan, is_inf, is_finite) and cumulative_logsumexp: against SciPy/NumPy, gradients
against finite differences, eagerly and traced, fused where elementwise."""
import numpy as np
import pytest
import scipy.special as sp
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients, numeric_gradients
from run_modes import in_all_modes


def _values(shape, low, high, dtype=np.float64):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high)).map(
        lambda a: a.astype(dtype))


def _no_poles(x):
    return x[np.abs(x - np.round(x)) > 0.05] if x.ndim else x


# name: (hybridtf fn, SciPy reference, domain)
SPECIAL = {
    "erf": (tf.math.erf, sp.erf, (-4, 4)),
    "erfc": (tf.math.erfc, sp.erfc, (-4, 4)),
    "erfinv": (tf.math.erfinv, sp.erfinv, (-0.999, 0.999)),
    "lgamma": (tf.math.lgamma, sp.gammaln, (-6, 8)),
    "digamma": (tf.math.digamma, sp.digamma, (-6, 8)),
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data())
def test_special_functions_match_scipy(name, dtype, data):
    fn, ref, (low, high) = SPECIAL[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(_values(shape, low, high, dtype))
    if name in ("lgamma", "digamma"):
        assume(np.all(np.abs(x - np.round(x)) > 1e-3) or x.size == 0)   # away from the poles
    out = fn(tf.constant(x))
    assert out.dtype == tf.as_dtype(dtype) and out.shape == shape
    expected = ref(x.astype(np.float64)).astype(dtype)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=rtol)


def test_special_values_match_tf():
    # The expected values are TF 2.21's.
    inf, nan = np.inf, np.nan
    np.testing.assert_array_equal(tf.math.erfinv(tf.constant([-1., 1., 1.5, nan])).numpy(),
                                  [-inf, inf, nan, nan])
    np.testing.assert_allclose(tf.math.erfinv(tf.constant([0.5])).numpy(), [0.4769363])
    np.testing.assert_array_equal(tf.math.erf(tf.constant([inf, -inf, nan])).numpy(),
                                  [1, -1, nan])
    np.testing.assert_allclose(tf.math.lgamma(tf.constant([-1., -0.5, 0., 0.5, 3.])).numpy(),
                               [inf, 1.2655121, inf, 0.5723649, 0.6931472], rtol=1e-6)
    np.testing.assert_allclose(tf.math.digamma(tf.constant([-1., -0.5, 0., 0.5, 3.])).numpy(),
                               [nan, 0.03648996, nan, -1.9635108, 0.9227842], rtol=1e-6)
    np.testing.assert_allclose(
        tf.math.polygamma(tf.constant([0., 1., 2., 1.5, -1.]), tf.constant([0.5] * 5)).numpy(),
        [-1.9635108, 4.934802, -16.828794, nan, nan], rtol=1e-6)
    np.testing.assert_allclose(
        tf.math.polygamma(tf.constant([1., 1., 2.]), tf.constant([-0.5, -1., -2.5])).numpy(),
        [8.934802, inf, -0.10820416], rtol=1e-6)


def test_erfinv_is_exact_in_the_tails():
    x = np.concatenate([1 - np.logspace(-16, -1, 40), -np.logspace(-300, -1, 40)])
    np.testing.assert_allclose(tf.math.erfinv(tf.constant(x)).numpy(), sp.erfinv(x),
                               rtol=1e-14)


@pytest.mark.parametrize("order", [1, 2, 3, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data())
def test_polygamma_matches_scipy(order, dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4))
    x = data.draw(_values(shape, -5, 30, dtype))
    assume(np.all(np.abs(x - np.round(x)) > 1e-2))
    out = tf.math.polygamma(tf.constant(np.full(shape, order, dtype)), tf.constant(x))
    rtol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(out.numpy(), sp.polygamma(order, x.astype(np.float64)),
                               rtol=rtol)


def test_polygamma_far_from_zero_and_at_huge_orders():
    x = np.array([-2e5 - 0.25, -5e4 - 0.5, 1e6, 0.5])
    for order in (1.0, 3.0):
        np.testing.assert_allclose(
            tf.math.polygamma(tf.constant(np.full(4, order)), tf.constant(x)).numpy(),
            sp.polygamma(int(order), x), rtol=1e-12)
    # Far-out arguments return at once (no term-by-term sums of 1e10 terms): psi_1 at a
    # half-integer far below zero is pi^2 plus a vanishing rest; a huge order overflows.
    out = tf.math.polygamma(tf.constant([1.0, 2.0, 1e18], tf.float64),
                            tf.constant([-1e10 + 0.5, -1e15 + 0.5, 0.5], tf.float64)).numpy()
    np.testing.assert_allclose(out[0], np.pi ** 2, rtol=1e-9)
    assert abs(out[1]) < 1e-9 and np.isinf(out[2])


GRADIENT_DOMAINS = {"erf": (-3, 3), "erfc": (-3, 3), "erfinv": (-0.9, 0.9),
                    "lgamma": (0.2, 6), "digamma": (0.3, 6)}


@pytest.mark.parametrize("name", sorted(GRADIENT_DOMAINS))
@given(data=st.data())
def test_special_function_gradients(name, data):
    fn, ref, _ = SPECIAL[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    x = data.draw(_values(shape, *GRADIENT_DOMAINS[name]))
    check_gradients(fn, ref, [x], rtol=1e-5, atol=1e-6)


@given(data=st.data())
def test_polygamma_gradient_is_the_next_order(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    x = data.draw(_values(shape, 0.5, 5))
    order = data.draw(st.sampled_from([1.0, 2.0]))
    check_gradients(lambda t: tf.math.polygamma(tf.constant(np.full(shape, order)), t),
                    lambda a: sp.polygamma(int(order), a), [x], rtol=1e-5)
    n = tf.constant(np.full(shape, order))
    with tf.GradientTape() as tape:
        tape.watch(n)
        y = tf.math.polygamma(n, tf.constant(x))
    assert tape.gradient(y, n) is None   # no gradient with respect to the order, as TF


def test_lgamma_second_derivative_through_nested_tapes():
    x = tf.constant([0.7, 2.5, 4.0], tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.math.lgamma(x)
        dy = inner.gradient(y, x)
    np.testing.assert_allclose(dy.numpy(), sp.digamma(x.numpy()), rtol=1e-12)
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), sp.polygamma(1, x.numpy()),
                               rtol=1e-12)


@pytest.mark.parametrize("name", ["erf", "erfinv", "lgamma", "digamma", "polygamma"])
def test_special_functions_reject_integers(name):
    fn = {**{k: v[0] for k, v in SPECIAL.items()},
          "polygamma": lambda t: tf.math.polygamma(t, t)}[name]
    with pytest.raises(TypeError, match=f"{name}: x has dtype int32.*float32, float64"):
        fn(tf.constant([1, 2]))


# ---- predicates ---------------------------------------------------------------------------------
PREDICATES = {"is_nan": (tf.math.is_nan, np.isnan), "is_inf": (tf.math.is_inf, np.isinf),
              "is_finite": (tf.math.is_finite, np.isfinite)}


@pytest.mark.parametrize("name", sorted(PREDICATES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data())
def test_predicates_match_numpy(name, dtype, data):
    fn, ref = PREDICATES[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(hnp.arrays(dtype, shape, elements=st.sampled_from(
        [0.0, -1.5, 2.0, np.inf, -np.inf, np.nan, 1e30])))
    out = fn(tf.constant(x))
    assert out.dtype == tf.bool and out.shape == shape
    np.testing.assert_array_equal(out.numpy(), ref(x))


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_predicates_have_no_gradient_and_reject_integers(name):
    fn, _ = PREDICATES[name]
    x = tf.constant([1.0, np.nan])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(fn(x), tf.float32)
    assert tape.gradient(y, x) is None
    with pytest.raises(TypeError, match=f"{name}: x has dtype int32"):
        fn(tf.constant([1]))


# ---- traced and fused ---------------------------------------------------------------------------
def test_new_elementwise_ops_agree_traced_and_fuse_into_one_kernel():
    def fn(x, n):
        y = tf.math.erf(x) + tf.math.erfc(x) * tf.math.lgamma(x + 3.0)
        y = y + tf.math.digamma(x + 4.0) + tf.math.erfinv(x * 0.5)
        y = y + tf.math.polygamma(n, x + 5.0)
        finite = tf.math.is_finite(y) & ~tf.math.is_nan(x) & ~tf.math.is_inf(x)
        return y, finite

    x = np.array([[-0.9, -0.2, 0.0], [0.3, 0.8, np.nan]])
    n = np.full((2, 3), 2.0)
    y, finite = in_all_modes(fn, x, n)
    np.testing.assert_allclose(y[0], sp.erf(x[0]) + sp.erfc(x[0]) * sp.gammaln(x[0] + 3)
                               + sp.digamma(x[0] + 4) + sp.erfinv(x[0] / 2)
                               + sp.polygamma(2, x[0] + 5), rtol=1e-12)
    np.testing.assert_array_equal(finite, [[True] * 3, [True, True, False]])
    source = tf.function(fn).get_concrete_function(tf.constant(x), tf.constant(n)).kernel_source
    fused = source.split("# ---- driver")[0]
    assert fused.count("def fused_") == 1
    for name in ["erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "is_finite", "is_nan",
                 "is_inf"]:
        assert f"f_{name}(" in fused, name


def test_existing_math_ops_are_exported_where_tf_has_them_and_fuse():
    # TF 2.21 has these in tf.math only (softplus also in tf.nn), none as tf.*.
    for name in ["log1p", "expm1", "softplus", "reciprocal", "rsqrt", "floormod", "erf", "erfc",
                 "erfinv", "lgamma", "digamma", "polygamma", "is_nan", "is_inf", "is_finite",
                 "cumulative_logsumexp", "cumsum"]:
        assert callable(getattr(tf.math, name)), name
    assert tf.nn.softplus is tf.math.softplus

    def fn(x, y):
        return (tf.math.log1p(x) + tf.math.expm1(x) + tf.math.softplus(x)
                + tf.math.reciprocal(y) + tf.math.rsqrt(y) + tf.math.floormod(x, y))

    x = np.array([0.5, -0.3, 2.0])
    y = np.array([0.7, 1.5, 3.0])
    out, = in_all_modes(fn, x, y)
    np.testing.assert_allclose(out, np.log1p(x) + np.expm1(x) + np.logaddexp(0, x) + 1 / y
                               + 1 / np.sqrt(y) + np.mod(x, y), rtol=1e-12)
    source = tf.function(fn).get_concrete_function(tf.constant(x), tf.constant(y)).kernel_source
    assert source.split("# ---- driver")[0].count("def fused_") == 1


# ---- cumulative_logsumexp -----------------------------------------------------------------------
def _np_cumulative_logsumexp(x, axis, exclusive, reverse):
    moved = np.moveaxis(x, axis, -1)
    if reverse:
        moved = moved[..., ::-1]
    out = np.logaddexp.accumulate(moved, axis=-1) if moved.shape[-1] else moved.copy()
    if exclusive:
        out = np.concatenate([np.full(out[..., :1].shape, -np.inf, out.dtype), out[..., :-1]],
                             axis=-1)
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data())
def test_cumulative_logsumexp_matches_numpy(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    x = data.draw(_values(shape, -30, 30, dtype))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    out = tf.math.cumulative_logsumexp(tf.constant(x), axis=axis, exclusive=exclusive,
                                       reverse=reverse)
    assert out.dtype == tf.as_dtype(dtype) and out.shape == shape
    expected = _np_cumulative_logsumexp(x.astype(np.float64), axis, exclusive, reverse)
    np.testing.assert_allclose(out.numpy(), expected.astype(dtype),
                               rtol=1e-6 if dtype == np.float32 else 1e-13)


def test_cumulative_logsumexp_values_match_tf():
    # TF 2.21's values, including the infinities and a spread no exp() could hold.
    x = tf.constant([1., 2., 3.])
    np.testing.assert_allclose(tf.math.cumulative_logsumexp(x).numpy(),
                               [1., 2.3132617, 3.4076061], rtol=1e-6)
    np.testing.assert_allclose(tf.math.cumulative_logsumexp(x, exclusive=True, reverse=True)
                               .numpy(), [3.3132617, 3., -np.inf], rtol=1e-6)
    inf = np.inf
    np.testing.assert_array_equal(
        tf.math.cumulative_logsumexp(tf.constant([-inf, -inf, 1., inf, 2.])).numpy(),
        [-inf, -inf, 1., inf, inf])
    np.testing.assert_array_equal(
        tf.math.cumulative_logsumexp(tf.constant([-1000., 0.])).numpy(), [-1000., 0.])


@given(data=st.data())
def test_cumulative_logsumexp_gradient(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=4))
    x = data.draw(_values(shape, -4, 4))
    axis = data.draw(st.integers(0, len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    # Mixed-sign weights: the rule takes the positive and negative parts of the upstream
    # gradient separately.  Exclusive scans have an empty (-inf) sum, masked out of the check.
    signs = np.where(np.arange(x.size).reshape(shape) % 3 == 1, -2.0, 1.0)
    if exclusive:
        first = [slice(None)] * len(shape)
        first[axis] = slice(-1, None) if reverse else slice(0, 1)
        signs[tuple(first)] = 0.0

    def tf_fn(t):
        out = tf.math.cumulative_logsumexp(t, axis=axis, exclusive=exclusive, reverse=reverse)
        return tf.where(tf.constant(signs != 0), out, tf.zeros_like(out)) * signs

    def np_fn(a):
        out = _np_cumulative_logsumexp(a, axis, exclusive, reverse)
        return np.where(signs != 0, out, 0.0) * signs
    check_gradients(tf_fn, np_fn, [x])


def _cumulative_logsumexp_gradient(t):
    with tf.GradientTape() as tape:
        tape.watch(t)
        out = tf.math.cumulative_logsumexp(t, reverse=True) * np.array([1.0, -1.5, 2.0])
    return tape.gradient(out, t)


def test_cumulative_logsumexp_gradient_matches_tf_and_second_order():
    x = tf.constant([1., -2., 3.])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.cumulative_logsumexp(x, exclusive=True) * tf.constant([1., -2., 0.5])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [-1.5237129, 0.02371294, 0.],
                               rtol=1e-5, atol=1e-7)   # TF 2.21's values
    # The gradient of the gradient against finite differences of the (checked) gradient.
    a = np.array([0.3, -1.0, 2.0])
    expected, weights = numeric_gradients(
        lambda v: _cumulative_logsumexp_gradient(tf.constant(v)).numpy(), [a])
    t = tf.constant(a)
    with tf.GradientTape() as outer:
        outer.watch(t)
        total = tf.reduce_sum(_cumulative_logsumexp_gradient(t) * tf.constant(weights))
    np.testing.assert_allclose(outer.gradient(total, t).numpy(), expected[0], rtol=1e-5,
                               atol=1e-7)


def test_cumulative_logsumexp_traced_and_errors():
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -0.5]])
    for exclusive in (False, True):
        out, = in_all_modes(lambda t: tf.math.cumulative_logsumexp(t, axis=1,
                                                                   exclusive=exclusive), x)
        np.testing.assert_allclose(out, _np_cumulative_logsumexp(x, 1, exclusive, False))
    with pytest.raises(TypeError, match="cumulative_logsumexp: x has dtype int32"):
        tf.math.cumulative_logsumexp(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 1, got a scalar"):
        tf.math.cumulative_logsumexp(tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 2 is out of range"):
        tf.math.cumulative_logsumexp(tf.constant(x), axis=2)


def test_cumsum_exclusive_and_reverse():
    x = tf.constant([1, 2, 3])
    assert tf.cumsum(x, exclusive=True, reverse=True).numpy().tolist() == [5, 3, 0]
    assert tf.math.cumsum(x, exclusive=True).numpy().tolist() == [0, 1, 3]
