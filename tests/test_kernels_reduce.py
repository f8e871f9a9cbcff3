"""ops.reduce against NumPy references."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops import reduce as R
from kernel_helpers import NUMERIC, FLOATS, arrays, axes_of, shapes, tol

SET = settings(max_examples=40, deadline=None)


@st.composite
def array_and_axes(draw, dtypes=NUMERIC, lo=-10, hi=10, allow_nan=False, max_dims=4):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(shapes(max_dims=max_dims))
    x = draw(arrays(dtype, shape, lo, hi, allow_nan))
    # sometimes a non-contiguous view
    if x.ndim >= 2 and draw(st.booleans()):
        x = np.swapaxes(x, 0, x.ndim - 1)
    return x, draw(axes_of(x.ndim)), draw(st.booleans())


def _ref(fn, x, axes, keepdims, identity):
    if not axes:
        return x
    if int(np.prod([x.shape[a] for a in axes])) == 0:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else \
            tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return np.full(shape, identity, x.dtype)
    return fn(x, axis=axes, keepdims=keepdims)


def _check(got, want, x):
    assert got.dtype == x.dtype
    assert got.shape == np.shape(want)
    if x.dtype.kind == "f":
        np.testing.assert_allclose(got, want, equal_nan=True, **tol(x.dtype))
    else:
        np.testing.assert_array_equal(got, np.asarray(want).astype(x.dtype))


@SET
@given(array_and_axes())
def test_sum(case):
    x, axes, keep = case
    want = _ref(lambda a, axis, keepdims: np.sum(a.astype(np.float64) if a.dtype.kind == "f"
                                                 else a, axis=axis, keepdims=keepdims),
                x, axes, keep, 0)
    _check(R.reduce_sum(x, axes, keep), want, x)


@SET
@given(array_and_axes(lo=-2, hi=2))
def test_prod(case):
    x, axes, keep = case
    _check(R.reduce_prod(x, axes, keep), _ref(np.prod, x, axes, keep, 1), x)


@SET
@given(array_and_axes(allow_nan=True))
def test_max_min(case):
    x, axes, keep = case
    lo = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    hi = np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).max
    _check(R.reduce_max(x, axes, keep), _ref(np.max, x, axes, keep, lo), x)
    _check(R.reduce_min(x, axes, keep), _ref(np.min, x, axes, keep, hi), x)


@SET
@given(array_and_axes(dtypes=FLOATS))
def test_mean_float(case):
    x, axes, keep = case
    want = _ref(lambda a, axis, keepdims: np.mean(a.astype(np.float64), axis=axis,
                                                  keepdims=keepdims), x, axes, keep, np.nan)
    _check(R.reduce_mean(x, axes, keep), want, x)


@SET
@given(array_and_axes(dtypes=(np.int32, np.int64), lo=-20, hi=20))
def test_mean_int_truncates_toward_zero(case):
    x, axes, keep = case
    got = R.reduce_mean(x, axes, keep)
    if not axes:
        np.testing.assert_array_equal(got, x)
        return
    count = int(np.prod([x.shape[a] for a in axes]))
    s = np.sum(x.astype(np.int64), axis=axes, keepdims=keep)
    want = np.zeros_like(s) if count == 0 else np.trunc(s / count).astype(np.int64)
    _check(got, want, x)


@SET
@given(array_and_axes(dtypes=(np.bool_,)))
def test_any_all(case):
    x, axes, keep = case
    got_any, got_all = R.reduce_any(x, axes, keep), R.reduce_all(x, axes, keep)
    assert got_any.dtype == np.bool_ and got_all.dtype == np.bool_
    want_any = np.any(x, axis=axes, keepdims=keep) if axes else x
    want_all = np.all(x, axis=axes, keepdims=keep) if axes else x
    np.testing.assert_array_equal(got_any, want_any)
    np.testing.assert_array_equal(got_all, want_all)


def test_empty_identities():
    x = np.zeros((0, 3), np.float32)
    np.testing.assert_array_equal(R.reduce_sum(x, (0,)), [0, 0, 0])
    np.testing.assert_array_equal(R.reduce_prod(x, (0,)), [1, 1, 1])
    np.testing.assert_array_equal(R.reduce_max(x, (0,)), [-np.inf] * 3)
    np.testing.assert_array_equal(R.reduce_min(x, (0,)), [np.inf] * 3)
    assert np.isnan(R.reduce_mean(x, (0,))).all()
    xi = np.zeros((0, 2), np.int32)
    np.testing.assert_array_equal(R.reduce_max(xi, (0,)), [np.iinfo(np.int32).min] * 2)
    np.testing.assert_array_equal(R.reduce_min(xi, (0, 1)), np.iinfo(np.int32).max)
    assert R.reduce_any(np.zeros(0, bool), (0,)) == np.False_
    assert R.reduce_all(np.zeros(0, bool), (0,)) == np.True_
    assert R.reduce_sum(x, (0, 1), keepdims=True).shape == (1, 1)


def test_int_sum_wraps_like_tf():
    x = np.full(4, 2 ** 30, np.int32)
    assert R.reduce_sum(x, (0,)) == np.int32(0)  # 2**32 wraps to 0 in int32
    assert R.reduce_mean(np.array([-3, -4], np.int32), (0,)) == -3  # -3.5 truncates to -3


@pytest.mark.parametrize("shape,axes", [((1000, 1000), (0, 1)), ((1000, 1000), (1,)),
                                        ((1000, 1000), (0,)), ((7, 300001), (1,))])
def test_float32_sum_is_accurate(shape, axes):
    rng = np.random.default_rng(0)
    x = rng.random(shape, dtype=np.float32) + np.float32(0.5)
    want = np.sum(x.astype(np.float64), axis=axes)
    np.testing.assert_allclose(R.reduce_sum(x, axes), want, rtol=1e-6)
    np.testing.assert_allclose(R.reduce_mean(x, axes), want / np.prod([shape[a] for a in axes]),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 5, 300, 1000, 4099])
def test_max_min_nan_and_long_runs(dtype, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((3, n)).astype(dtype)
    for f, g in ((R.reduce_max, np.max), (R.reduce_min, np.min)):
        np.testing.assert_array_equal(f(x, (1,)), g(x, axis=1))
        np.testing.assert_array_equal(f(x, (0, 1)), g(x))
        np.testing.assert_array_equal(f(x, (0,)), g(x, axis=0))
    x[1, rng.integers(n)] = np.nan
    for f in (R.reduce_max, R.reduce_min):
        got = f(x, (1,))
        assert np.isnan(got[1]) and not np.isnan(got[0]) and not np.isnan(got[2])
        assert np.isnan(f(x, (0, 1)))
        assert np.isnan(f(x, (0,))).sum() == 1


def test_noncontiguous_axes_and_size_one_dims():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 1, 4, 5))
    for axes in [(0, 2), (0, 3), (1, 2), (0, 1, 3), (1,), (0, 1, 2, 3)]:
        np.testing.assert_allclose(R.reduce_sum(x, axes), x.sum(axis=axes), rtol=1e-12)
        np.testing.assert_array_equal(R.reduce_max(x, axes, True), x.max(axis=axes,
                                                                         keepdims=True))


def test_no_axes_returns_copy():
    x = np.arange(6.0).reshape(2, 3)
    y = R.reduce_sum(x, ())
    np.testing.assert_array_equal(y, x)
    y[0, 0] = 99
    assert x[0, 0] == 0


# ---- argmax / argmin ---------------------------------------------------------------------------
@st.composite
def array_and_axis(draw, dtypes=NUMERIC, allow_nan=False):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(shapes(min_dims=1, min_side=1))
    x = draw(arrays(dtype, shape, -3, 3, allow_nan))  # small range: many ties
    return x, draw(st.integers(0, x.ndim - 1))


@SET
@given(array_and_axis(allow_nan=True), st.sampled_from([np.int32, np.int64]))
def test_argmax_argmin(case, out_dtype):
    x, axis = case
    for f, g in ((R.argmax, np.argmax), (R.argmin, np.argmin)):
        got = f(x, axis, out_dtype)
        assert got.dtype == out_dtype
        np.testing.assert_array_equal(got, g(x, axis=axis))


@pytest.mark.parametrize("n", [1000, 257])
def test_argmax_long_rows(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 50, (4, n)).astype(np.float32)
    np.testing.assert_array_equal(R.argmax(x, 1), x.argmax(1))
    np.testing.assert_array_equal(R.argmin(x, 1), x.argmin(1))
    x[2, 7] = np.nan
    x[2, 9] = np.nan
    assert R.argmax(x, 1)[2] == 7 and R.argmin(x, 1)[2] == 7


def test_argmax_empty_axis_is_refused():
    with pytest.raises(ValueError):
        R.argmax(np.zeros((2, 0)), 1)


# ---- cumsum / cumprod --------------------------------------------------------------------------
def _scan_ref(x, axis, exclusive, reverse, fn, identity):
    y = np.flip(x, axis) if reverse else x
    out = fn(y, axis=axis, dtype=x.dtype)
    if exclusive:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (1, 0)
        out = np.pad(out, pad, constant_values=identity)
        out = np.take(out, np.arange(x.shape[axis]), axis=axis)
    return np.flip(out, axis) if reverse else out


@SET
@given(array_and_axis(), st.booleans(), st.booleans())
def test_cumsum_cumprod(case, exclusive, reverse):
    x, axis = case
    for f, g, ident in ((R.cumsum, np.cumsum, 0), (R.cumprod, np.cumprod, 1)):
        got = f(x, axis, exclusive, reverse)
        want = _scan_ref(x, axis, exclusive, reverse, g, ident)
        assert got.dtype == x.dtype and got.shape == x.shape
        if x.dtype.kind == "f":
            np.testing.assert_allclose(got, want, **tol(x.dtype))
        else:
            np.testing.assert_array_equal(got, want)


def test_cumsum_tf_examples():
    x = np.array([1, 2, 3, 4], np.int32)
    np.testing.assert_array_equal(R.cumsum(x, 0), [1, 3, 6, 10])
    np.testing.assert_array_equal(R.cumsum(x, 0, exclusive=True), [0, 1, 3, 6])
    np.testing.assert_array_equal(R.cumsum(x, 0, reverse=True), [10, 9, 7, 4])
    np.testing.assert_array_equal(R.cumsum(x, 0, True, True), [9, 7, 4, 0])
    np.testing.assert_array_equal(R.cumprod(x, 0, True, True), [24, 12, 4, 1])
    assert R.cumsum(np.zeros((0, 3)), 0).shape == (0, 3)
