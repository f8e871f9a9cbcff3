"""GradientTape: the seed's examples with their numbers, and every documented behaviour."""
import numpy as np
import pytest

import hybridtf as tf


# ---- the seed examples (backprop.py docstrings) ------------------------------------------------
def test_seed_square_gradient_is_6():
    x = tf.constant(3.0)
    with tf.GradientTape() as g:
        g.watch(x)
        y = x * x
    dy_dx = g.gradient(y, x)
    assert str(dy_dx) == "tf.Tensor(6.0, shape=(), dtype=float32)"


def test_seed_nested_tapes_second_derivative():
    x = tf.constant(5.0)
    with tf.GradientTape() as g:
        g.watch(x)
        with tf.GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy_dx = gg.gradient(y, x)
    d2y_dx2 = g.gradient(dy_dx, x)
    assert str(dy_dx) == "tf.Tensor(10.0, shape=(), dtype=float32)"
    assert str(d2y_dx2) == "tf.Tensor(2.0, shape=(), dtype=float32)"


def test_seed_persistent_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
        z = y * y
    assert float(g.gradient(z, x)) == 108.0
    assert float(g.gradient(y, x)) == 6.0


def test_seed_watch_accessed_variables_false():
    x = tf.Variable(2.0)
    w = tf.Variable(5.0)
    with tf.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(x)
        y = x ** 2
        z = w ** 3
    assert str(tape.gradient(y, x)) == "tf.Tensor(4.0, shape=(), dtype=float32)"
    assert tape.gradient(z, w) is None


def test_seed_stop_recording():
    x = tf.constant(4.0)
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            y = x ** 2
    assert tape.gradient(y, x) is None


def test_seed_jacobian():
    with tf.GradientTape() as g:
        x = tf.constant([1.0, 2.0])
        g.watch(x)
        y = x * x
    jacobian = g.jacobian(y, x)
    np.testing.assert_array_equal(jacobian.numpy(), [[2.0, 0.0], [0.0, 4.0]])


def test_seed_batch_jacobian():
    with tf.GradientTape() as g:
        x = tf.constant([[1., 2.], [3., 4.]], dtype=tf.float32)
        g.watch(x)
        y = x * x
    batch_jacobian = g.batch_jacobian(y, x)
    np.testing.assert_array_equal(batch_jacobian.numpy(),
                                  [[[2, 0], [0, 4]], [[6, 0], [0, 8]]])


def test_seed_reset_only_differentiates_what_follows():
    x = tf.Variable(3.0)
    with tf.GradientTape() as t:
        loss = x * x
        t.reset()
        loss += 5.0 * x
    assert float(t.gradient(loss, x)) == 5.0


def test_seed_gradients_function_numbers_via_tape():
    # f(x, y) = x^3 y - x y^2: df/dx = 3x^2 y - y^2, df/dy = x^3 - 2xy, d2f/dx2 = 6xy
    x, y = tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch([x, y])
            f = x * x * x * y - x * y * y
        dx, dy = inner.gradient(f, [x, y])
    assert float(dx) == 3 * (2 ** 2) * 3 - 3 ** 2
    assert float(dy) == (2 ** 3) - 2 * 2 * 3
    assert float(outer.gradient(dx, x)) == 6 * 2 * 3


# ---- watching ----------------------------------------------------------------------------------
def test_trainable_variables_are_watched_automatically_and_listed_in_order():
    a = tf.Variable(1.0)
    b = tf.Variable(2.0)
    frozen = tf.Variable(3.0, trainable=False)
    with tf.GradientTape() as tape:
        y = b * a * frozen
    assert [v.name for v in tape.watched_variables()] == [a.name, b.name]
    assert tape.watched_variables()[0] is a
    ga, gb, gf = tape.gradient(y, [a, b, frozen])
    assert float(ga) == 6.0 and float(gb) == 3.0 and gf is None


def test_unwatched_constant_has_no_gradient_and_zero_mode_gives_zeros():
    x = tf.constant([1.0, 2.0])
    c = tf.constant([3.0, 4.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * 2.0)
    assert tape.gradient(y, c) is None
    np.testing.assert_array_equal(
        tape.gradient(y, c, unconnected_gradients=tf.UnconnectedGradients.ZERO).numpy(), [0, 0])
    np.testing.assert_array_equal(
        tape.gradient(y, c, unconnected_gradients="zero").numpy(), [0, 0])
    with pytest.raises(ValueError):
        tape.gradient(y, x, unconnected_gradients="sometimes")


def test_watch_rejects_non_tensors():
    with tf.GradientTape() as tape:
        with pytest.raises(ValueError, match="not tf.Tensor"):
            tape.watch("x")


def test_integer_sources_get_none():
    x = tf.constant(3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, x) is None


# ---- tape lifetime -----------------------------------------------------------------------------
def test_non_persistent_tape_is_used_once():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_gradient_inside_context_of_persistent_tape_records_higher_order():
    x = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x ** 3
        dy = tape.gradient(y, x)
    assert float(dy) == 12.0
    assert float(tape.gradient(dy, x)) == 12.0  # d(3x^2)/dx = 6x


def test_reentering_a_recording_tape_is_an_error():
    tape = tf.GradientTape()
    with tape:
        with pytest.raises(ValueError, match="still recording"):
            tape.__enter__()


def test_stop_recording_outside_context_is_an_error():
    tape = tf.GradientTape()
    with pytest.raises(RuntimeError):
        with tape.stop_recording():
            pass


def test_none_target_is_a_type_error():
    with tf.GradientTape() as tape:
        pass
    with pytest.raises(TypeError):
        tape.gradient(None, [])


# ---- structures and output gradients -----------------------------------------------------------
def test_nested_sources_and_targets_keep_structure():
    x = tf.constant(1.0)
    y = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        targets = {"a": x * y, "b": [x * x]}
    grads = tape.gradient(targets, {"first": x, "rest": (y,)})
    assert set(grads) == {"first", "rest"}
    assert float(grads["first"]) == 2.0 + 2.0
    assert isinstance(grads["rest"], tuple) and float(grads["rest"][0]) == 1.0


def test_output_gradients_weight_targets():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=tf.constant([10.0, 100.0]))
    np.testing.assert_array_equal(g.numpy(), [20.0, 400.0])


def test_same_tensor_used_twice_accumulates():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x + x
    assert float(tape.gradient(y, x)) == 7.0


def test_gradient_wrt_intermediate_tensor():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        h = x * 3.0
        y = h * h
    gh, gx = tape.gradient(y, [h, x])
    assert float(gh) == 12.0 and float(gx) == 36.0


def test_variable_target_and_assign_inside_tape():
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = v * 2.0
        v.assign(10.0)  # the value read earlier is the one differentiated
        z = y * v
    assert float(tape.gradient(z, v)) == 2.0 * 10.0 + 6.0


def test_jacobian_of_matrix_function_and_unconnected():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    other = tf.constant([1.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = tf.reduce_sum(x * x, axis=1)
    j = tape.jacobian(y, x)
    assert j.shape == (2, 2, 2)
    np.testing.assert_array_equal(j.numpy(), [[[2, 4], [0, 0]], [[0, 0], [6, 8]]])
    assert tape.jacobian(y, other) is None
    zeros = tape.jacobian(y, other, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert zeros.shape == (2, 1) and not zeros.numpy().any()


def test_batch_jacobian_checks_batch_dimension():
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reshape(x, [2, 1])
    with pytest.raises(ValueError, match="first dimension"):
        tape.batch_jacobian(y, x)


# ---- custom_gradient ---------------------------------------------------------------------------
def test_custom_gradient_replaces_the_gradient():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return tf.math.log(1 + e), grad

    x = tf.constant(100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert float(tape.gradient(y, x)) == 1.0  # the naive gradient would be NaN


def test_custom_gradient_with_variables():
    w = tf.Variable(2.0)

    @tf.custom_gradient
    def scaled(x):
        def grad(upstream, variables=None):
            return upstream * w, [upstream * x * 100.0]
        return x * w, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    gx, gw = tape.gradient(y, [x, w])
    assert float(gx) == 2.0 and float(gw) == 300.0


def test_custom_gradient_second_order():
    @tf.custom_gradient
    def cube(x):
        def grad(upstream):
            return upstream * 3.0 * x * x
        return x * x * x, grad

    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy = inner.gradient(y, x)
    assert float(dy) == 12.0
    assert float(outer.gradient(dy, x)) == 12.0


def test_higher_order_through_many_ops():
    x = tf.constant(0.5, dtype=tf.float64)
    with tf.GradientTape() as t2:
        t2.watch(x)
        with tf.GradientTape() as t1:
            t1.watch(x)
            y = tf.tanh(x) * tf.exp(x)
        d1 = t1.gradient(y, x)
    d2 = t2.gradient(d1, x)
    xv = 0.5
    th, ex = np.tanh(xv), np.exp(xv)
    sech2 = 1 - th ** 2
    expected_d2 = ex * (th + 2 * sech2 - 2 * th * sech2)
    np.testing.assert_allclose(float(d2), expected_d2, rtol=1e-12)


# ---- the backward pass computes only what the sources need -------------------------------------
def _count_kernel_runs(monkeypatch, op):
    """A list that grows by one each time ``op``'s CPU kernel runs."""
    kernel = op.kernels["cpu"]
    runs = []
    run = kernel.run

    def counted(arrays, attrs):
        runs.append(op.name)
        return run(arrays, attrs)
    monkeypatch.setattr(kernel, "run", counted)
    return runs


@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_gradient_computes_no_product_for_a_constant_operand(monkeypatch, ta, tb):
    from hybridtf.registry import linalg
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4) if not ta else (4, 3))
    b = rng.normal(size=(4, 5) if not tb else (5, 4))
    x, w = tf.constant(a), tf.Variable(b)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.matmul(x, w, transpose_a=ta, transpose_b=tb))
    runs = _count_kernel_runs(monkeypatch, linalg.MATMUL)
    grad = tape.gradient(y, w)
    assert runs == ["matmul"]   # dL/dw only; the constant x gets no product
    op_a = a.T if ta else a
    expected = op_a.T @ np.ones((op_a.shape[0], 5))
    np.testing.assert_allclose(grad.numpy(), expected.T if tb else expected, rtol=1e-12)


def test_elementwise_gradient_skips_constant_operands(monkeypatch):
    from hybridtf.registry import reductions
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 0.5 + tf.constant([1.0, 2.0])   # the constants' gradients would be sums
    runs = _count_kernel_runs(monkeypatch, reductions.SUM)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full((2, 2), 0.5))
    assert runs == []


def test_persistent_tape_gives_each_source_its_gradient_whatever_was_asked_before():
    a, b = tf.constant([[1.0, 2.0]]), tf.constant([[3.0], [4.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        y = tf.matmul(a, b) * tf.reduce_sum(a)
    ga = tape.gradient(y, a)
    gb = tape.gradient(y, b)
    both = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), [[3 * 3 + 11, 4 * 3 + 11]])
    np.testing.assert_allclose(gb.numpy(), [[3.0], [6.0]])
    np.testing.assert_allclose(both[0].numpy(), ga.numpy())
    np.testing.assert_allclose(both[1].numpy(), gb.numpy())
