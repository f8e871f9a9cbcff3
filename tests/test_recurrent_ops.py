"""The fused recurrences (simple_rnn_sequence, lstm_sequence, gru_sequence) against NumPy loops
over time, with masks and go_backwards, and their gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf.api import recurrent_ops

from gradcheck import numeric_gradients
from recurrent_references import gru_reference, lstm_reference, simple_rnn_reference


def _case(seed, batch, steps, units, gates, dtype, masked):
    rng = np.random.default_rng(seed)
    xp = rng.normal(size=(batch, steps, gates * units)).astype(dtype)
    h0 = rng.normal(size=(batch, units)).astype(dtype) * 0.5
    c0 = rng.normal(size=(batch, units)).astype(dtype) * 0.5
    rk = (rng.normal(size=(units, gates * units)) * 0.5).astype(dtype)
    rb = rng.normal(size=(gates * units,)).astype(dtype)
    mask = rng.random((batch, steps)) > 0.35 if masked else np.ones((batch, steps), bool)
    return xp, h0, c0, rk, rb, mask


def _call(kind, xp, h0, c0, rk, rb, mask, go_backwards, zero_output, reset_after=True):
    kw = dict(mask=mask, go_backwards=go_backwards, zero_output_for_mask=zero_output)
    if kind == "simple":
        return recurrent_ops.simple_rnn_sequence(xp, h0, rk, **kw)
    if kind == "lstm":
        return recurrent_ops.lstm_sequence(xp, h0, c0, rk, **kw)
    return recurrent_ops.gru_sequence(xp, h0, rk, rb if reset_after else None,
                                      reset_after=reset_after, **kw)


def _reference(kind, xp, h0, c0, rk, rb, mask, go_backwards, zero_output, reset_after=True):
    if kind == "simple":
        return simple_rnn_reference(xp, h0, rk, mask, go_backwards, zero_output)
    if kind == "lstm":
        return lstm_reference(xp, h0, c0, rk, mask, go_backwards, zero_output)
    return gru_reference(xp, h0, rk, rb, mask, go_backwards, zero_output, reset_after)


KINDS = [("simple", 1, True), ("lstm", 4, True), ("gru", 3, True), ("gru", 3, False)]


@pytest.mark.parametrize("kind,gates,reset_after", KINDS)
@settings(max_examples=8, deadline=None)
@given(batch=st.integers(1, 3), steps=st.integers(1, 4), units=st.integers(1, 3),
       dtype=st.sampled_from([np.float32, np.float64]), masked=st.booleans(),
       go_backwards=st.booleans(), zero_output=st.booleans(), seed=st.integers(0, 1000))
def test_matches_numpy_loop(kind, gates, reset_after, batch, steps, units, dtype, masked,
                            go_backwards, zero_output, seed):
    xp, h0, c0, rk, rb, mask = _case(seed, batch, steps, units, gates, dtype, masked)
    got = _call(kind, xp, h0, c0, rk, rb, mask, go_backwards, zero_output, reset_after)
    want = _reference(kind, *(a.astype(np.float64) if a.dtype != bool else a
                              for a in (xp, h0, c0, rk, rb, mask)),
                      go_backwards, zero_output, reset_after)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == dtype and g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol)


# Widths where the step products run whole register tiles (ops.tile_gemm: 16 float32 or 8
# float64 columns per vector), with rows left over and a last partial tile of columns.
@pytest.mark.parametrize("kind,gates,reset_after", KINDS)
@pytest.mark.parametrize("units,batch", [(8, 9), (16, 17), (20, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wide_recurrences_match_numpy_loop(kind, gates, reset_after, units, batch, dtype):
    xp, h0, c0, rk, rb, mask = _case(units + batch, batch, 3, units, gates, dtype, True)
    rk = (rk / np.sqrt(units)).astype(dtype)
    got = _call(kind, xp, h0, c0, rk, rb, mask, False, False, reset_after)
    want = _reference(kind, *(a.astype(np.float64) if a.dtype != bool else a
                              for a in (xp, h0, c0, rk, rb, mask)), False, False, reset_after)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind,gates,reset_after", KINDS)
def test_wide_recurrence_gradients_match_a_directional_difference(kind, gates, reset_after):
    """d/de loss(args + e * direction) at 0, by central differences, against the gradients'
    dot product with the direction (float64; 16 units: whole tiles in every step product)."""
    xp, h0, c0, rk, rb, mask = _case(5, 9, 3, 16, gates, np.float64, True)
    rk = rk / 4.0
    args = [xp, h0, c0, rk, rb]
    rng = np.random.default_rng(6)
    direction = [rng.normal(size=a.shape) for a in args]
    weights = [rng.uniform(0.5, 1.5, size=o.shape) for o in
               _reference(kind, *args, mask, False, False, reset_after)]

    def loss(values):
        outs = _reference(kind, *values, mask, False, False, reset_after)
        return sum(np.sum(o * w) for o, w in zip(outs, weights))

    eps = 1e-6
    numeric = (loss([a + eps * d for a, d in zip(args, direction)])
               - loss([a - eps * d for a, d in zip(args, direction)])) / (2 * eps)
    tensors = [tf.constant(a) for a in args]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        outs = _call(kind, *tensors, mask, False, False, reset_after)
        total = sum(tf.reduce_sum(o * w) for o, w in zip(outs, weights))
    grads = tape.gradient(total, tensors)
    analytic = sum(np.sum(g.numpy() * d) for g, d in zip(grads, direction) if g is not None)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


@pytest.mark.parametrize("kind,gates,reset_after", KINDS)
@pytest.mark.parametrize("go_backwards,zero_output", [(False, False), (True, True)])
def test_gradients_match_finite_differences(kind, gates, reset_after, go_backwards,
                                            zero_output):
    xp, h0, c0, rk, rb, _ = _case(3, 2, 4, 2, gates, np.float64, False)
    mask = np.array([[True, False, True, True], [False, True, True, False]])
    names = ["xp", "h0"] + (["c0"] if kind == "lstm" else []) + ["rk"] + (
        ["rb"] if kind == "gru" and reset_after else [])
    values = {"xp": xp, "h0": h0, "c0": c0, "rk": rk, "rb": rb}
    arrays = [values[n] for n in names]
    weights = [np.random.default_rng(i).uniform(0.5, 1.5, size=s) for i, s in
               enumerate([(2, 4, 2), (2, 2), (2, 2)])]

    def bind(args):
        full = dict(values)
        full.update(zip(names, args))
        return [full[n] for n in ("xp", "h0", "c0", "rk", "rb")]

    def np_fn(*args):
        outs = _reference(kind, *bind(args), mask, go_backwards, zero_output, reset_after)
        return sum(np.sum(o * w) for o, w in zip(outs, weights))

    tensors = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        outs = _call(kind, *bind(tensors), mask, go_backwards, zero_output, reset_after)
        loss = sum(tf.reduce_sum(o * w) for o, w in zip(outs, weights))
    grads = tape.gradient(loss, tensors)
    expected, scale = numeric_gradients(np_fn, arrays)   # of scale * np_fn
    for name, g, e in zip(names, grads, expected):
        np.testing.assert_allclose(g.numpy() * scale, e, rtol=1e-6, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("kind,gates,reset_after", KINDS)
def test_float32_gates_stay_accurate_when_saturated(kind, gates, reset_after):
    # float32 gates use a polynomial exp; large pre-activations (|x| up to 60) saturate them.
    xp, h0, c0, rk, rb, mask = _case(9, 3, 5, 4, gates, np.float32, True)
    xp = xp * 20.0
    got = _call(kind, xp, h0, c0, rk, rb, mask, False, False, reset_after)
    want = _reference(kind, *(a.astype(np.float64) if a.dtype != bool else a
                              for a in (xp, h0, c0, rk, rb, mask)), False, False, reset_after)
    for g, w in zip(got, want):
        assert np.all(np.isfinite(g.numpy()))
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)


def test_float32_sigmoid_matches_numpy_over_the_whole_range():
    # (the float32 tanh has its own tests: test_kernels_fast_tanh.py)
    from ops import recurrent
    v = np.concatenate([np.linspace(-90, 90, 20001), [0.0, -0.0, 1e-30, -1e-30, 1e-7]])
    v32 = v.astype(np.float32)
    sigmoid = np.array([recurrent._sigmoid_f32(x) for x in v32], np.float64)
    exact = v32.astype(np.float64)
    want_sigmoid = 1 / (1 + np.exp(-exact))
    normal = exact > -85   # below, the float32 result underflows towards 0
    np.testing.assert_allclose(sigmoid[normal], want_sigmoid[normal], rtol=1e-6)
    assert np.all((sigmoid[~normal] >= 0) & (sigmoid[~normal] < 1e-36))
