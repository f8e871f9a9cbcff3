"""Reductions, arg-reductions and scans against NumPy; gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients

IAE = tf.errors.InvalidArgumentError
NUMERIC_DTYPES = [np.float32, np.float64, np.int32, np.int64]


# ---- strategies ---------------------------------------------------------------------------------
@st.composite
def axis_args(draw, rank):
    """A reduction ``axis`` argument: None, one (maybe negative) int, or a list of them."""
    if rank == 0:
        return draw(st.sampled_from([None, []]))
    single = st.integers(-rank, rank - 1)
    return draw(st.one_of(st.none(), single,
                          st.lists(single, min_size=0, max_size=rank,
                                   unique_by=lambda a: a % rank)))


def np_axes(axis, rank):
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, int):
        return (axis % rank,)
    return tuple(sorted(a % rank for a in axis))


def _values(shape, dtype, low=-5, high=5):
    if np.dtype(dtype).kind == "f":
        return hnp.arrays(np.float64, shape, elements=st.floats(low, high)).map(
            lambda a: a.astype(dtype))
    return hnp.arrays(dtype, shape, elements=st.integers(low, high))


def _distinct(shape, spacing=0.25):
    """float64 values whose pairwise gaps are all >= spacing (so max/min are unique)."""
    size = int(np.prod(shape))
    return st.permutations(range(size)).map(
        lambda p: (np.asarray(p, np.float64) * spacing - size * spacing / 2).reshape(shape))


# ---- reduce_sum/mean/max/min/prod ----------------------------------------------------------------
def _np_mean(x, axis, keepdims):
    if x.dtype.kind in "iu":
        s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
        count = int(np.prod([x.shape[a] for a in axis])) if axis else 1
        return np.trunc(s / count).astype(x.dtype) if count else np.zeros_like(s, x.dtype)
    return np.mean(x, axis=axis, keepdims=keepdims)


REDUCTIONS = {
    "sum": (tf.reduce_sum, lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims,
                                                            dtype=x.dtype)),
    "prod": (tf.reduce_prod, lambda x, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims,
                                                               dtype=x.dtype)),
    "mean": (tf.reduce_mean, _np_mean),
    "max": (tf.reduce_max, lambda x, axis, keepdims: np.max(
        x, axis=axis, keepdims=keepdims,
        initial=-np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min)),
    "min": (tf.reduce_min, lambda x, axis, keepdims: np.min(
        x, axis=axis, keepdims=keepdims,
        initial=np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).max)),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reduction_matches_numpy(name, data):
    dtype = data.draw(st.sampled_from(NUMERIC_DTYPES), label="dtype")
    fn, ref = REDUCTIONS[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    low, high = (-2, 2) if name == "prod" else (-5, 5)
    x = data.draw(_values(shape, dtype, low, high))
    axis = data.draw(axis_args(len(shape)))
    keepdims = data.draw(st.booleans())
    axes = np_axes(axis, len(shape))
    if name == "mean" and np.dtype(dtype).kind == "f":
        assume(all(shape[a] for a in axes))  # empty float mean is NaN; tested separately
    out = fn(tf.constant(x), axis=axis, keepdims=keepdims)
    expected = np.asarray(ref(x, axes, keepdims)).astype(dtype)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == expected.shape
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(out.numpy(), expected,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    else:
        np.testing.assert_array_equal(out.numpy(), expected)


def test_reduction_of_python_lists_and_empty_conventions():
    assert tf.reduce_sum([[1, 2], [3, 4]]).numpy() == 10
    assert tf.reduce_sum([[1, 2], [3, 4]]).dtype == tf.int32
    np.testing.assert_array_equal(tf.reduce_sum([[1, 2], [3, 4]], axis=-1).numpy(), [3, 7])
    assert tf.reduce_sum(tf.zeros([0, 3])).numpy() == 0
    assert tf.reduce_prod(tf.zeros([3, 0])).numpy() == 1
    assert tf.reduce_max(tf.zeros([0])).numpy() == -np.inf
    assert tf.reduce_min(tf.zeros([0])).numpy() == np.inf
    assert tf.reduce_max(tf.zeros([0], tf.int32)).numpy() == np.iinfo(np.int32).min
    assert np.isnan(tf.reduce_mean(tf.zeros([0])).numpy())


def test_integer_mean_truncates_toward_zero():
    assert tf.reduce_mean(tf.constant([1, 2])).numpy() == 1
    assert tf.reduce_mean(tf.constant([-1, -2])).numpy() == -1
    assert tf.reduce_mean(tf.constant([-3, 0, 0, 0])).numpy() == 0
    np.testing.assert_array_equal(
        tf.reduce_mean(tf.constant([[1, 2, 4], [-7, 0, 0]], tf.int64), axis=1).numpy(), [2, -2])
    assert tf.reduce_mean(tf.constant([1, 2])).dtype == tf.int32


@pytest.mark.parametrize("name", ["any", "all"])
@given(data=st.data())
def test_logical_reductions(name, data):
    fn, ref = (tf.reduce_any, np.any) if name == "any" else (tf.reduce_all, np.all)
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(hnp.arrays(np.bool_, shape))
    axis = data.draw(axis_args(len(shape)))
    keepdims = data.draw(st.booleans())
    out = fn(tf.constant(x), axis=axis, keepdims=keepdims)
    expected = ref(x, axis=np_axes(axis, len(shape)), keepdims=keepdims)
    assert out.dtype == tf.bool
    assert tuple(out.shape) == np.shape(expected)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_duplicate_reduction_axes_are_rejected():
    with pytest.raises(IAE, match="reduce_sum: .*duplicate"):
        tf.reduce_sum(tf.ones([2, 3]), axis=[0, 0])


@pytest.mark.parametrize("axis", [0, -1, [0]])
def test_reducing_a_scalar_over_an_axis_is_rejected(axis):
    with pytest.raises(IAE, match="reduce_sum: axis .* out of range"):
        tf.reduce_sum(tf.constant(1.0), axis=axis)


def test_non_integer_axis_is_rejected():
    with pytest.raises((TypeError, IAE), match="reduce_sum: axis must be an integer"):
        tf.reduce_sum(tf.ones([2, 2]), axis=0.5)


def test_logical_reductions_reject_numbers():
    with pytest.raises(TypeError, match="reduce_any: input_tensor has dtype float32"):
        tf.reduce_any(tf.constant([1.0]))
    with pytest.raises(TypeError, match="reduce_sum: input_tensor has dtype bool"):
        tf.reduce_sum(tf.constant([True]))


@pytest.mark.parametrize("name", ["sum", "mean", "prod"])
@given(data=st.data())
def test_smooth_reduction_gradients(name, data):
    fn, ref = REDUCTIONS[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    x = data.draw(_values(shape, np.float64, -2, 2))
    axis = data.draw(axis_args(len(shape)))
    keepdims = data.draw(st.booleans())
    axes = np_axes(axis, len(shape))
    if name == "mean":
        assume(all(shape[a] for a in axes))
    check_gradients(lambda t: fn(t, axis=axis, keepdims=keepdims),
                    lambda a: ref(a, axes, keepdims), [x])


@pytest.mark.parametrize("name", ["max", "min"])
@given(data=st.data())
def test_extremum_gradients_with_distinct_values(name, data):
    fn, ref = REDUCTIONS[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    x = data.draw(_distinct(shape))
    axis = data.draw(axis_args(len(shape)))
    keepdims = data.draw(st.booleans())
    check_gradients(lambda t: fn(t, axis=axis, keepdims=keepdims),
                    lambda a: ref(a, np_axes(axis, len(shape)), keepdims), [x])


@pytest.mark.parametrize("fn", [tf.reduce_max, tf.reduce_min])
def test_ties_share_the_extremum_gradient(fn):
    x = tf.constant([[1.0, 3.0, 3.0, 3.0], [2.0, 2.0, -1.0, 0.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x, axis=1)
    grad = tape.gradient(y, x).numpy()
    if fn is tf.reduce_max:
        np.testing.assert_allclose(grad, [[0, 1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0, 0]])
    else:
        np.testing.assert_allclose(grad, [[1, 0, 0, 0], [0, 0, 1, 0]])


@given(data=st.data())
def test_prod_gradient_with_zeros(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    x = data.draw(hnp.arrays(np.float64, shape,
                             elements=st.sampled_from([0.0, 0.0, 1.0, -1.0, 2.0, 0.5, -1.5])))
    axis = data.draw(axis_args(len(shape)))
    keepdims = data.draw(st.booleans())
    axes = np_axes(axis, len(shape))
    check_gradients(lambda t: tf.reduce_prod(t, axis=axis, keepdims=keepdims),
                    lambda a: np.prod(a, axis=axes, keepdims=keepdims), [x])


def test_prod_gradient_exact_values():
    x = tf.constant([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_prod(x, axis=1)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(),
                                  [[6, 0, 0], [0, 0, 0], [8, 4, 2]])


def test_prod_gradient_over_an_empty_axis():
    x = tf.zeros([2, 0, 3])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_prod(x, axis=1)
    grad = tape.gradient(y, x)
    assert grad.shape == (2, 0, 3)


# ---- logsumexp, variance, std --------------------------------------------------------------------
def _np_logsumexp(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


STATS = {
    "logsumexp": (tf.reduce_logsumexp, _np_logsumexp),
    "variance": (tf.math.reduce_variance,
                 lambda x, axis, keepdims: np.var(x, axis=axis, keepdims=keepdims)),
    "std": (tf.math.reduce_std, lambda x, axis, keepdims: np.std(x, axis=axis, keepdims=keepdims)),
}


@pytest.mark.parametrize("name", sorted(STATS))
@given(data=st.data())
def test_statistics_match_numpy(name, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    fn, ref = STATS[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    x = data.draw(_values(shape, dtype, -5, 5))
    axis = data.draw(axis_args(len(shape)))
    keepdims = data.draw(st.booleans())
    out = fn(tf.constant(x), axis=axis, keepdims=keepdims)
    expected = ref(x.astype(np.float64), np_axes(axis, len(shape)), keepdims)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == np.shape(expected)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5 if dtype == np.float32 else 1e-10,
                               atol=1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("name", sorted(STATS))
@given(data=st.data())
def test_statistics_gradients(name, data):
    fn, ref = STATS[name]
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    x = data.draw(_distinct(shape, 0.3))  # distinct values keep the std away from 0
    axis = data.draw(axis_args(len(shape)))
    keepdims = data.draw(st.booleans())
    axes = np_axes(axis, len(shape))
    if name == "std":
        assume(np.prod([shape[a] for a in axes]) > 1)  # the std of one value is 0: no derivative
    check_gradients(lambda t: fn(t, axis=axis, keepdims=keepdims),
                    lambda a: ref(a, axes, keepdims), [x])


def test_logsumexp_is_stable_and_handles_infinities():
    x = tf.constant([[1000.0, 1000.0], [-1000.0, -1000.0]])
    np.testing.assert_allclose(tf.reduce_logsumexp(x, axis=1).numpy(),
                               [1000 + np.log(2), -1000 + np.log(2)], rtol=1e-6)
    inf = np.inf
    out = tf.reduce_logsumexp(tf.constant([[-inf, -inf], [inf, 1.0], [-inf, 0.0]]), axis=1)
    np.testing.assert_array_equal(out.numpy(), [-inf, inf, 0.0])
    assert tf.reduce_logsumexp(tf.zeros([0])).numpy() == -inf


def test_logsumexp_gradient_at_large_values_is_softmax():
    x = tf.constant([1000.0, 1001.0, 999.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_logsumexp(x)
    e = np.exp([0.0, 1.0, -1.0])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), e / e.sum(), rtol=1e-12)


@pytest.mark.parametrize("fn", [tf.math.reduce_variance, tf.math.reduce_std,
                                tf.reduce_logsumexp])
def test_statistics_reject_integers(fn):
    with pytest.raises(TypeError, match=r"reduce_(variance|std|logsumexp).*int32"):
        fn(tf.constant([1, 2, 3]))


# ---- argmax / argmin -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_arg_reductions(name, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint8]),
                      label="dtype")
    fn, ref = (tf.argmax, np.argmax) if name == "argmax" else (tf.argmin, np.argmin)
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(_values(shape, dtype, 0, 3))  # few distinct values: ties are common
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    output_type = data.draw(st.sampled_from([None, tf.int32, tf.int64]))
    kwargs = {} if output_type is None else {"output_type": output_type}
    out = fn(tf.constant(x), axis=axis, **kwargs)
    expected = ref(x, axis=axis)  # NumPy also returns the first index on ties
    assert out.dtype == (output_type or tf.int64)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_arg_reductions_default_axis_is_zero_and_have_no_gradient():
    x = tf.constant([[1.0, 5.0], [3.0, 2.0]])
    np.testing.assert_array_equal(tf.argmax(x).numpy(), [1, 0])
    np.testing.assert_array_equal(tf.math.argmin(x).numpy(), [0, 1])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(tf.argmax(x, axis=1), tf.float32)
    assert tape.gradient(y, x) is None


def test_arg_reduction_errors():
    with pytest.raises(IAE, match="argmax: input must have rank >= 1"):
        tf.argmax(tf.constant(1.0))
    with pytest.raises(IAE, match="argmin: axis 2 is out of range"):
        tf.argmin(tf.zeros([2, 2]), axis=2)
    with pytest.raises(TypeError, match="argmax: output_type must be int32 or int64"):
        tf.argmax(tf.zeros([2]), output_type=tf.float32)


# ---- cumsum / cumprod ----------------------------------------------------------------------------
def _np_scan(kind, x, axis, exclusive, reverse):
    fn, identity = (np.cumsum, 0) if kind == "cumsum" else (np.cumprod, 1)
    if reverse:
        x = np.flip(x, axis)
    y = fn(x, axis=axis, dtype=x.dtype)
    if exclusive:
        y = np.moveaxis(y, axis, 0)
        y = np.concatenate([np.full_like(y[:1], identity), y[:-1]], axis=0)
        y = np.moveaxis(y, 0, axis)
    if reverse:
        y = np.flip(y, axis)
    return y


SCANS = {"cumsum": tf.math.cumsum, "cumprod": tf.math.cumprod}


@pytest.mark.parametrize("kind", sorted(SCANS))
@given(data=st.data())
def test_scans_match_numpy(kind, data):
    dtype = data.draw(st.sampled_from(NUMERIC_DTYPES), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    x = data.draw(_values(shape, dtype, -3, 3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    out = SCANS[kind](tf.constant(x), axis=axis, exclusive=exclusive, reverse=reverse)
    expected = _np_scan(kind, x, axis, exclusive, reverse)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_cumsum_is_exported_at_top_level():
    np.testing.assert_array_equal(tf.cumsum([1, 2, 3]).numpy(), [1, 3, 6])
    np.testing.assert_array_equal(tf.cumsum([1, 2, 3], exclusive=True, reverse=True).numpy(),
                                  [5, 3, 0])


@pytest.mark.parametrize("kind", sorted(SCANS))
@given(data=st.data())
def test_scan_gradients(kind, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    # cumprod's gradient (TF's rule) divides by x, so keep x away from zero.
    elements = st.floats(0.3, 2.0).flatmap(lambda v: st.sampled_from([v, -v]))
    x = data.draw(hnp.arrays(np.float64, shape, elements=elements))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    check_gradients(lambda t: SCANS[kind](t, axis=axis, exclusive=exclusive, reverse=reverse),
                    lambda a: _np_scan(kind, a, axis, exclusive, reverse), [x])


@pytest.mark.parametrize("kind", sorted(SCANS))
def test_scan_errors(kind):
    with pytest.raises(IAE, match=f"{kind}: axis 1 is out of range"):
        SCANS[kind](tf.zeros([3]), axis=1)
    with pytest.raises(IAE, match=f"{kind}: .*rank >= 1"):
        SCANS[kind](tf.constant(2.0))
