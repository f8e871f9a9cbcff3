"""tf.random: shapes, dtypes, ranges, rough distributions, and TF 2's seeding rules.

Distribution checks use large samples and bounds of about 6 standard errors: they fail on a bug
(wrong scale, shift or range), not by chance.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf

IAE = tf.errors.InvalidArgumentError
N = 20000


@pytest.fixture(autouse=True)
def _fresh_global_seed():
    """Each test starts (and leaves) the global seed unset, as a fresh program."""
    tf.random.set_seed(None)
    yield
    tf.random.set_seed(None)


SAMPLERS = {
    "uniform": lambda shape, dtype, seed=None: tf.random.uniform(shape, dtype=dtype, seed=seed),
    "normal": lambda shape, dtype, seed=None: tf.random.normal(shape, dtype=dtype, seed=seed),
    "truncated_normal": lambda shape, dtype, seed=None: tf.random.truncated_normal(
        shape, dtype=dtype, seed=seed),
}


# ---- shapes and dtypes ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
def test_shape_and_dtype(name, dtype, shape):
    out = SAMPLERS[name](list(shape), dtype)
    assert out.dtype == dtype
    assert tuple(out.shape) == shape
    assert np.all(np.isfinite(out.numpy()))


def test_default_dtype_and_shape_forms():
    assert tf.random.uniform([2]).dtype == tf.float32
    assert tf.random.normal((2, 3)).shape == (2, 3)
    assert tf.random.truncated_normal(tf.constant([3, 1])).shape == (3, 1)
    assert tf.random.uniform(tf.TensorShape([4])).shape == (4,)
    assert tf.random.uniform([]).shape == ()


# ---- ranges and distributions --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("low, high", [(0.0, None), (-2.0, 3.0), (5.0, 5.5), (-1e-3, 0.0)])
def test_uniform_range_and_moments(dtype, low, high):
    tf.random.set_seed(1)
    kwargs = {"minval": low} if high is None else {"minval": low, "maxval": high}
    x = tf.random.uniform([N], dtype=dtype, **kwargs).numpy().astype(np.float64)
    high = 1.0 if high is None else high
    assert x.min() >= low and x.max() <= high
    if high == 1.0 and low == 0.0:
        assert x.max() < 1.0
    width = high - low
    assert abs(x.mean() - (low + high) / 2) < 6 * width / np.sqrt(12 * N)
    assert abs(x.std() - width / np.sqrt(12)) < 0.02 * width
    # Roughly flat: each tenth of the range holds about a tenth of the values.
    counts = np.histogram(x, bins=10, range=(low, high))[0]
    assert np.all(np.abs(counts - N / 10) < 6 * np.sqrt(N / 10))


def test_tensor_parameters_broadcast_against_the_samples():
    # TF computes sample * stddev + mean (and sample * (max - min) + min) with broadcasting.
    tf.random.set_seed(6)
    x = tf.random.normal([N, 2], mean=[0.0, 100.0], stddev=tf.constant([1.0, 0.01])).numpy()
    assert x.shape == (N, 2)
    assert abs(x[:, 0].mean()) < 0.05 and abs(x[:, 0].std() - 1.0) < 0.05
    assert abs(x[:, 1].mean() - 100.0) < 1e-3 and abs(x[:, 1].std() - 0.01) < 1e-3
    t = tf.random.truncated_normal([N, 2], mean=[0.0, -5.0], stddev=[1.0, 2.0],
                                   dtype=tf.float64).numpy()
    assert t.dtype == np.float64
    assert np.all(np.abs(t[:, 0]) <= 2.0) and np.all(np.abs(t[:, 1] + 5.0) <= 4.0 + 1e-12)
    assert np.any(np.abs(t[:, 1] + 5.0) > 2.0)
    u = tf.random.uniform([N, 2], minval=[0.0, 10.0], maxval=[1.0, 12.0]).numpy()
    assert 0 <= u[:, 0].min() and u[:, 0].max() < 1
    assert 10 <= u[:, 1].min() and u[:, 1].max() <= 12 and u[:, 1].max() > 11.5


def test_uniform_accepts_tensor_bounds():
    x = tf.random.uniform([1000], minval=tf.constant(2.0), maxval=tf.constant(4.0), seed=1)
    assert 2.0 <= x.numpy().min() and x.numpy().max() < 4.0


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
@pytest.mark.parametrize("low, high", [(0, 5), (-3, 2), (7, 8), (-2**31, 2**31 - 1)])
def test_integer_uniform(dtype, low, high):
    tf.random.set_seed(2)
    x = tf.random.uniform([N], minval=low, maxval=high, dtype=dtype)
    assert x.dtype == dtype
    values = x.numpy()
    assert values.min() >= low and values.max() < high
    if high - low <= 5:
        counts = np.bincount(values - low, minlength=high - low)
        assert len(counts) == high - low
        expected = N / (high - low)
        assert np.all(np.abs(counts - expected) < 6 * np.sqrt(expected))
    else:
        assert values.std() > (high - low) / 4  # spread over the range, not stuck


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("mean, stddev", [(0.0, 1.0), (3.0, 0.5), (-10.0, 4.0)])
def test_normal_moments(dtype, mean, stddev):
    tf.random.set_seed(3)
    x = tf.random.normal([N], mean=mean, stddev=stddev, dtype=dtype).numpy().astype(np.float64)
    assert abs(x.mean() - mean) < 6 * stddev / np.sqrt(N)
    assert abs(x.std() - stddev) < 6 * stddev / np.sqrt(2 * N)
    # About 68% within one standard deviation.
    inside = np.mean(np.abs(x - mean) < stddev)
    assert abs(inside - 0.6827) < 6 * np.sqrt(0.6827 * 0.3173 / N)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("mean, stddev", [(0.0, 1.0), (2.0, 3.0)])
def test_truncated_normal(dtype, mean, stddev):
    tf.random.set_seed(4)
    x = tf.random.truncated_normal([N], mean=mean, stddev=stddev, dtype=dtype).numpy()
    x = x.astype(np.float64)
    assert np.all(np.abs(x - mean) <= 2 * stddev * (1 + 1e-6))
    # A normal truncated at +-2 sd has standard deviation 0.8796 sd.
    assert abs(x.mean() - mean) < 6 * stddev / np.sqrt(N)
    assert abs(x.std() - 0.8796 * stddev) < 0.02 * stddev
    # Not clipped: no mass piles up at the bounds.
    assert np.mean(np.abs(x - mean) > 1.99 * stddev) < 0.01


# ---- seeding (tf.random.set_seed's documented rules) ---------------------------------------------
def _program():
    return [tf.random.uniform([4]).numpy(), tf.random.normal([3]).numpy(),
            tf.random.uniform([2], seed=7).numpy(), tf.random.uniform([2], seed=7).numpy(),
            tf.random.uniform([3], minval=0, maxval=100, dtype=tf.int32).numpy()]


def test_global_seed_makes_the_program_reproducible():
    tf.random.set_seed(1234)
    first = _program()
    tf.random.set_seed(1234)
    second = _program()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_different_global_seeds_give_different_values():
    tf.random.set_seed(1)
    a = tf.random.uniform([8]).numpy()
    tf.random.set_seed(2)
    b = tf.random.uniform([8]).numpy()
    assert not np.array_equal(a, b)


def test_global_seed_without_op_seed_gives_new_values_on_each_call():
    tf.random.set_seed(5)
    a, b = tf.random.uniform([8]).numpy(), tf.random.uniform([8]).numpy()
    assert not np.array_equal(a, b)


def test_same_op_seed_twice_gives_a1_then_a2_and_set_seed_resets():
    # The example of tf.random.set_seed's docs: 'A1', 'A2', then again 'A1', 'A2'.
    tf.random.set_seed(1234)
    a1 = tf.random.uniform([1], seed=1).numpy()
    a2 = tf.random.uniform([1], seed=1).numpy()
    assert not np.array_equal(a1, a2)
    tf.random.set_seed(1234)
    np.testing.assert_array_equal(tf.random.uniform([1], seed=1).numpy(), a1)
    np.testing.assert_array_equal(tf.random.uniform([1], seed=1).numpy(), a2)


def test_op_seed_without_global_seed_is_reproducible_after_reset():
    # No global seed: a default global seed is used with the op seed (TF's rule), so the
    # sequence repeats once set_seed (even set_seed(None)) resets the op's counter.
    a1 = tf.random.normal([4], seed=3).numpy()
    a2 = tf.random.normal([4], seed=3).numpy()
    assert not np.array_equal(a1, a2)
    tf.random.set_seed(None)
    np.testing.assert_array_equal(tf.random.normal([4], seed=3).numpy(), a1)
    np.testing.assert_array_equal(tf.random.normal([4], seed=3).numpy(), a2)


def test_op_seed_does_not_depend_on_other_ops_in_between():
    tf.random.set_seed(9)
    a = tf.random.uniform([3], seed=2).numpy()
    tf.random.set_seed(9)
    tf.random.normal([5])
    tf.random.uniform([1], seed=99)
    np.testing.assert_array_equal(tf.random.uniform([3], seed=2).numpy(), a)


def test_different_op_seeds_differ():
    tf.random.set_seed(9)
    assert not np.array_equal(tf.random.uniform([8], seed=1).numpy(),
                              tf.random.uniform([8], seed=2).numpy())


def test_no_seed_at_all_gives_fresh_values():
    a, b = tf.random.uniform([8]).numpy(), tf.random.uniform([8]).numpy()
    assert not np.array_equal(a, b)


@given(seed=st.integers(0, 2**31 - 1))
def test_any_seed_is_reproducible(seed):
    tf.random.set_seed(seed)
    a = tf.random.truncated_normal([5], dtype=tf.float64).numpy()
    tf.random.set_seed(seed)
    np.testing.assert_array_equal(tf.random.truncated_normal([5], dtype=tf.float64).numpy(), a)


# ---- errors --------------------------------------------------------------------------------------
def test_random_errors():
    with pytest.raises(IAE, match=r"random.uniform: shape must have non-negative dimensions, "
                                  r"got \[2, -1\]"):
        tf.random.uniform([2, -1])
    with pytest.raises(IAE, match=r"random.normal: shape must have non-negative"):
        tf.random.normal([-3])
    with pytest.raises(IAE, match=r"random.uniform: Need minval < maxval, got 3 >= 3"):
        tf.random.uniform([2], minval=3, maxval=3, dtype=tf.int64)
    with pytest.raises(TypeError, match=r"random_normal: dtype has dtype int32"):
        tf.random.normal([2], dtype=tf.int32)
    with pytest.raises(TypeError, match=r"truncated_normal: dtype has dtype int64"):
        tf.random.truncated_normal([2], dtype=tf.int64)
    with pytest.raises(TypeError, match=r"random_uniform: dtype has dtype bool"):
        tf.random.uniform([2], dtype=tf.bool)
