"""Loop kernels: a while_loop whose parts fuse runs as one native loop, with the interpreter's
results."""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf import compiler
from hybridtf.graph import interpreter


def _compiled_and_interpreted(fn, *args):
    cf = fn.get_concrete_function(*args)
    arrays = [np.asarray(a) for a in args]
    compiled = compiler.compile_graph(cf.graph)
    return cf, compiled, compiled.run(arrays, 0), interpreter.run(cf.graph, arrays, 0)


def test_seed_tanh_loop_is_one_native_loop():
    @tf.function
    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    x0 = np.array([0.2, 0.25, 0.06, 0.9, 0.93], np.float32)
    cf, compiled, got, want = _compiled_and_interpreted(f, tf.constant(x0))
    assert "def loop_" in compiled.kernel_source and "while True:" in compiled.kernel_source
    assert "l0(" in compiled.driver_source   # the driver calls the loop kernel, not the op
    x = x0
    while np.sum(x) > 1:
        x = np.tanh(x)
    np.testing.assert_allclose(got[0], x, rtol=1e-6)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(f(tf.constant(x0)).numpy(), x, rtol=1e-6)


@pytest.mark.parametrize("limit", [None, 0, 3])
def test_several_loop_values_outer_values_captures_and_maximum_iterations(limit):
    w = tf.constant(np.array([[0.5, 1.5, 1.0]], np.float32))  # captured, not inlined

    @tf.function
    def f(x, n, scale):
        def body(i, x, total):
            x = x * w + scale
            return i + 1, x, total + tf.reduce_sum(x)
        return tf.while_loop(lambda i, x, total: i < n, body, (0, x, 0.0),
                             maximum_iterations=limit)

    x = tf.constant(np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], np.float32))
    n, scale = tf.constant(5), tf.constant(np.float32(0.125))
    cf, compiled, got, want = _compiled_and_interpreted(f, x, n, scale)
    assert "def loop_" in compiled.kernel_source
    steps = 5 if limit is None else min(5, limit)
    xr, total = x.numpy(), np.float32(0)
    for _ in range(steps):
        xr = xr * w.numpy() + np.float32(0.125)
        total += xr.sum()
    assert int(got[0]) == steps
    np.testing.assert_allclose(got[1], xr, rtol=1e-6)
    np.testing.assert_allclose(got[2], total, rtol=1e-5)
    for g, r in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(r).dtype
        np.testing.assert_allclose(g, r, rtol=1e-6)
    i, xf, _ = f(x, n, scale)
    assert int(i) == steps and xf.shape == (2, 3)


def test_a_loop_that_never_runs_returns_its_inputs():
    @tf.function
    def f(x):
        return tf.while_loop(lambda x: tf.reduce_max(x) > 10.0, lambda x: x * 2.0, [x])

    x = tf.constant(np.array([1.0, 2.0], np.float32))
    cf, compiled, got, _ = _compiled_and_interpreted(f, x)
    np.testing.assert_array_equal(got[0], x.numpy())


def test_loops_with_opaque_or_stateful_parts_run_on_the_interpreter():
    m = tf.constant(np.array([[0.5, 0.1], [0.0, 0.5]], np.float32))
    v = tf.Variable(0.0)

    @tf.function
    def f(x):
        while tf.reduce_sum(x) > 0.1:
            x = tf.matmul(x, m)      # opaque: no loop kernel
            v.assign_add(1.0)         # stateful
        return x

    x = tf.constant(np.array([[1.0, 1.0]], np.float32))
    cf = f.get_concrete_function(x)
    assert "def loop_" not in cf.kernel_source
    expected = x.numpy()
    count = 0
    while expected.sum() > 0.1:
        expected = expected @ m.numpy()
        count += 1
    np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-6)
    assert float(v.numpy()) == count


def test_gradient_through_a_compiled_loop():
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.while_loop(lambda y: tf.reduce_sum(y) > 1.0, lambda y: tf.tanh(y), [x])[0]
            loss = tf.reduce_sum(y * y)
        return loss, tape.gradient(loss, x)

    x0 = np.array([0.2, 0.25, 0.06, 0.9, 0.93], np.float64)
    loss, grad = f(tf.constant(x0))

    def numeric(x):
        while x.sum() > 1:
            x = np.tanh(x)
        return (x * x).sum()
    eps = 1e-6
    expected = [(numeric(x0 + eps * e) - numeric(x0 - eps * e)) / (2 * eps) for e in np.eye(5)]
    np.testing.assert_allclose(float(loss), numeric(x0), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-6)


def test_branches_and_loops_nested_in_loops_compile_natively():
    @tf.function
    def collatz_steps(n):
        steps = tf.constant(0)
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps

    @tf.function
    def nested(x, rows):
        total = tf.zeros_like(x)
        for _ in tf.range(rows):
            y = x
            while tf.reduce_max(y) > 0.5:
                y = y * 0.5
            total += y
        return total

    cf = collatz_steps.get_concrete_function(tf.constant(27))
    source = cf.kernel_source
    assert "def loop_" in source and "def branch_" in source and "if p[()]:" in source
    assert int(collatz_steps(tf.constant(27))) == 111
    assert int(collatz_steps(tf.constant(1))) == 0
    x = tf.constant(np.array([3.0, 0.2, 1.5], np.float32))
    source = nested.get_concrete_function(x, tf.constant(2)).kernel_source
    assert source.count("def loop_") == 2
    expected = x.numpy()
    while expected.max() > 0.5:
        expected = expected * 0.5
    np.testing.assert_allclose(nested(x, tf.constant(2)).numpy(), 2 * expected, rtol=1e-6)


def test_a_cond_whose_branches_fuse_is_a_native_branch():
    w = tf.constant(np.array([1.0, 2.0, 3.0], np.float32))

    @tf.function
    def f(x, flag):
        return tf.cond(flag, lambda: x * w + 1.0, lambda: tf.tanh(x) - w)

    x = tf.constant(np.array([0.5, -1.0, 2.0], np.float32))
    cf, compiled, got, want = _compiled_and_interpreted(f, x, tf.constant(True))
    assert "def branch_" in compiled.kernel_source
    np.testing.assert_allclose(got[0], x.numpy() * w.numpy() + 1, rtol=1e-6)
    np.testing.assert_allclose(f(x, tf.constant(False)).numpy(), np.tanh(x.numpy()) - w.numpy(),
                               rtol=1e-6)
