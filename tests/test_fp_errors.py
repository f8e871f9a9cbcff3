"""IEEE results without NumPy's floating-point warnings (as TF), and the caller's NumPy settings
left as they were."""
import warnings

import numpy as np
import pytest

import hybridtf as tf
from hybridtf.eager import execute
from hybridtf.framework import fp_errors

INF, NAN = np.inf, np.nan
BIG = 4096 * 2   # above the eager fast path's flat-loop threshold

# (name, call, expected): each raises a floating-point flag in NumPy's terms.
CASES = [
    ("divide by zero", lambda x: x / 0.0, INF),
    ("zero by zero", lambda x: (x - x) / (x - x), NAN),
    ("tensor by tensor", lambda x: x / tf.zeros_like(x), INF),
    ("python float first", lambda x: 1.0 / (x - x), INF),
    ("log of zero", lambda x: tf.math.log(x - x), -INF),
    ("sqrt of negative", lambda x: tf.sqrt(-x), NAN),
    ("rsqrt of zero", lambda x: tf.math.rsqrt(x - x), INF),
    ("reciprocal of zero", lambda x: tf.math.reciprocal(x - x), INF),
    ("exp overflow", lambda x: tf.exp(x * 1000.0), INF),
    ("multiply overflow", lambda x: x * 3e38 * 10.0, INF),
    ("pow overflow", lambda x: tf.pow(x * 1e30, 3.0), INF),
    ("floormod by zero", lambda x: tf.math.floormod(x, 0.0), NAN),
    ("floordiv by zero", lambda x: x // 0.0, INF),
    ("where of a NaN", lambda x: tf.where(x > 0, x / 0.0, x), INF),
    ("cast of NaN to int", lambda x: tf.cast((x - x) / (x - x), tf.int32), None),
    ("cast overflow to float32", lambda x: tf.cast(tf.cast(x, tf.float64) * 1e300, tf.float32),
     INF),
    ("python float beyond float32", lambda x: x + 1e300, INF),
]


@pytest.mark.parametrize("size", [1, BIG])
@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("name, call, expected", CASES, ids=[c[0] for c in CASES])
def test_ieee_results_come_silently(name, call, expected, traced, size):
    fn = tf.function(call) if traced else call
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fn(tf.ones([size]))
    if expected is not None:
        np.testing.assert_array_equal(out.numpy(), np.full(size, expected, out.numpy().dtype))


def test_reductions_and_nn_ops_come_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tf.reduce_logsumexp(tf.zeros([0])).numpy() == -INF
        assert np.isnan(tf.reduce_mean(tf.zeros([0])).numpy())
        assert tf.nn.softplus(tf.constant([1e30])).numpy()[0] == np.float32(1e30)
        assert tf.sigmoid(tf.constant([-1e30])).numpy()[0] == 0.0


def test_the_callers_numpy_settings_are_left_as_they_were():
    before = np.geterr()
    with np.errstate(divide="raise"):
        tf.constant(1.0) / 0.0
        tf.function(lambda x: x / 0.0)(tf.constant([1.0, 2.0]))
        with pytest.raises(FloatingPointError):
            np.divide(np.ones(1), 0.0)
    assert np.geterr() == before


@pytest.mark.parametrize("traced", [False, True])
def test_py_function_runs_with_the_callers_numpy_settings(traced):
    def divide_by_zero(x):
        return np.divide(x.numpy(), 0.0)

    def call(x):
        return tf.py_function(divide_by_zero, [x], tf.float32)

    fn = tf.function(call) if traced else call
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        fn(tf.constant(1.0))


def test_the_fast_silencer_is_used_where_numpy_has_it():
    try:
        from numpy._core._ufunc_config import _extobj_contextvar
    except ImportError:
        pytest.skip("this NumPy keeps its error state elsewhere")
    assert isinstance(fp_errors.SILENCER, fp_errors.ContextVarSilencer)
    assert fp_errors.silences(fp_errors.ContextVarSilencer(_extobj_contextvar))


class _DoesNothing:
    ignore = staticmethod(lambda: None)
    restore = staticmethod(lambda token: None)


def test_a_silencer_that_does_not_silence_is_not_chosen():
    assert not fp_errors.silences(_DoesNothing())
    assert fp_errors.silences(fp_errors.ErrstateSilencer())


def test_the_errstate_fallback_silences_every_kernel_call(monkeypatch):
    fallback = fp_errors.ErrstateSilencer()

    class FallbackQuiet:
        run = staticmethod(fallback.quiet_run())

    monkeypatch.setattr(execute, "_QUIET", FallbackQuiet())
    monkeypatch.setattr(fp_errors, "ignore", fallback.ignore)
    monkeypatch.setattr(fp_errors, "restore", fallback.restore)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, call, expected in CASES:
            call(tf.ones([3]))
    before = np.geterr()
    with np.errstate(divide="raise"):
        tf.constant(1.0) / 0.0
        with pytest.raises(FloatingPointError):
            np.divide(np.ones(1), 0.0)
    assert np.geterr() == before


def test_quiet_run_silences_in_every_thread_at_once():
    # Each thread runs its ops in a context of its own (one context cannot be entered twice).
    import threading
    from concurrent.futures import ThreadPoolExecutor
    barrier = threading.Barrier(4)

    def work(_):
        x = tf.ones([8])
        barrier.wait()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(200):
                assert np.isinf((x / 0.0).numpy()).all()
                assert np.isnan(tf.math.log(x - 2.0).numpy()).all()

    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(work, i) for i in range(4)]:
            done.result()   # re-raises a thread's failure


def test_quiet_run_leaves_the_callers_settings_alone():
    with np.errstate(divide="raise"):
        assert np.isinf(fp_errors.QUIET.run(np.divide, np.ones(1), 0.0)).all()
        with pytest.raises(FloatingPointError):
            np.divide(np.ones(1), 0.0)
