"""tf.cond and tf.while_loop: eager, traced (decided at run time), and differentiable."""
import sys

import numpy as np
import pytest

import hybridtf as tf


def _sum_tanh_loop(x):
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
    return x


SEED_X = [0.2, 0.25, 0.06, 0.9, 0.93]


# ---- cond -------------------------------------------------------------------------------------
def test_cond_eager_runs_only_the_chosen_branch():
    ran = []
    x = tf.constant(2.0)
    out = tf.cond(x > 0, lambda: ran.append("t") or x * x, lambda: ran.append("f") or -x)
    assert float(out) == 4.0 and ran == ["t"]


def test_cond_traced_decides_each_call():
    @tf.function
    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: x * x, lambda: -x)

    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [1.0, 4.0])
    np.testing.assert_array_equal(f(tf.constant([-1.0, -2.0])).numpy(), [1.0, 2.0])
    assert f.experimental_get_tracing_count() == 1


def test_cond_structures_python_numbers_and_errors():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: {"v": x * x, "n": 1}, lambda: {"v": x, "n": 0})

    out = f(tf.constant(3))
    assert int(out["v"]) == 9 and int(out["n"]) == 1 and out["n"].dtype == tf.int32

    @tf.function
    def mismatched(x):
        return tf.cond(x > 0, lambda: x, lambda: tf.cast(x, tf.float32))

    with pytest.raises(TypeError, match="output 0 of true_fn has dtype int32"):
        mismatched(tf.constant(1))

    @tf.function
    def different_structure(x):
        return tf.cond(x > 0, lambda: (x, x), lambda: x)

    with pytest.raises(ValueError, match="same structure"):
        different_structure(tf.constant(1))


def test_cond_branch_side_effects_run_only_when_taken(capsys):
    v = tf.Variable(0)

    @tf.function
    def f(x):
        def positive():
            tf.print("positive", x)
            v.assign_add(1)
            return x

        def negative():
            tf.print("negative", x)
            return -x
        return tf.cond(x > 0, positive, negative)

    f(tf.constant(1))
    f(tf.constant(-3))
    f(tf.constant(2))
    assert capsys.readouterr().err == "positive 1\nnegative -3\npositive 2\n"
    assert int(v) == 2


# ---- while_loop -------------------------------------------------------------------------------
def test_while_loop_eager_and_traced_match_the_seed_loop():
    expected = _sum_tanh_loop(tf.constant(SEED_X)).numpy()
    eager, = tf.while_loop(lambda x: tf.reduce_sum(x) > 1, tf.tanh, [tf.constant(SEED_X)])
    np.testing.assert_allclose(eager.numpy(), expected, rtol=1e-6)

    @tf.function
    def f(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) > 1, tf.tanh, [x])[0]

    np.testing.assert_allclose(f(tf.constant(SEED_X)).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(f(tf.constant([0.1, 0.2, 0.1, 0.2, 0.3])).numpy(),
                               [0.1, 0.2, 0.1, 0.2, 0.3])  # the loop runs zero times
    assert f.experimental_get_tracing_count() == 1


def test_while_loop_structures_counters_and_maximum_iterations():
    @tf.function
    def total(n):
        i, acc = tf.while_loop(lambda i, acc: i < n,
                               lambda i, acc: (i + 1, acc + tf.cast(i, tf.float32)),
                               (tf.constant(0), tf.constant(0.0)))
        return i, acc

    i, acc = total(tf.constant(5))
    assert int(i) == 5 and float(acc) == 10.0
    assert float(total(tf.constant(3))[1]) == 3.0
    capped = tf.while_loop(lambda i: i < 100, lambda i: i + 1, [tf.constant(0)],
                           maximum_iterations=7)
    assert int(capped[0]) == 7


def test_while_loop_variables_prints_and_nesting(capsys):
    v = tf.Variable(0.0)

    @tf.function
    def f(n):
        def body(i):
            v.assign_add(tf.cond(i % 2 == 0, lambda: 1.0, lambda: 10.0))
            tf.print("step", i)
            return i + 1
        tf.while_loop(lambda i: i < n, body, [tf.constant(0)])
        return v.read_value()

    assert float(f(tf.constant(4))) == 22.0
    assert float(f(tf.constant(1))) == 23.0
    assert capsys.readouterr().err == "step 0\nstep 1\nstep 2\nstep 3\nstep 0\n"


def test_while_loop_rejects_dtype_and_rank_changes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="loop variable 0 changed dtype"):
        tf.while_loop(lambda x: x < 3, lambda x: tf.cast(x, tf.float32) + 1.0, [tf.constant(0)])

    @tf.function
    def grows(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) < 10.0,
                             lambda x: tf.concat([x, x], 0), [x])

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"loop variable 0 has shape \[1\]"):
        grows(tf.constant([1.0]))

    @tf.function
    def rank_change(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) < 10.0, lambda x: tf.reshape(x, [1, -1]),
                             [x])

    with pytest.raises(tf.errors.InvalidArgumentError, match="changed rank"):
        rank_change(tf.constant([1.0]))


def test_shape_invariants_allow_growing_loop_variables():
    @tf.function
    def grows(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) < 10.0, lambda x: tf.concat([x, x], 0),
                             [x], shape_invariants=[tf.TensorShape([None])])[0]

    assert grows(tf.constant([1.0])).numpy().tolist() == [1.0] * 16


# ---- gradients --------------------------------------------------------------------------------
def _numeric(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@pytest.mark.parametrize("x0", [2.0, -1.5])
def test_gradients_through_cond_and_while_in_a_function(x0):
    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.cond(x > 0, lambda: x * x * 3.0, lambda: tf.sin(x) * 2.0)
            _, z = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * y + x),
                                 (tf.constant(0), tf.constant(1.0, tf.float64)))
        return z, tape.gradient(z, x)

    def reference(x):
        y = x * x * 3.0 if x > 0 else np.sin(x) * 2.0
        v = 1.0
        for _ in range(3):
            v = v * y + x
        return v

    z, g = grad(tf.constant(x0, tf.float64))
    np.testing.assert_allclose(float(z), reference(x0), rtol=1e-12)
    np.testing.assert_allclose(float(g), _numeric(reference, x0), rtol=1e-6)


def test_gradient_through_data_dependent_loop_eager_and_traced():
    def loss(x):
        x = tf.while_loop(lambda x: tf.reduce_sum(x) > 1, tf.tanh, [x])[0]
        return tf.reduce_sum(x * x)

    x = tf.constant(SEED_X, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        eager_value = loss(x)
    eager_grad = tape.gradient(eager_value, x)

    @tf.function
    def traced(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = loss(x)
        return value, tape.gradient(value, x)

    value, grad = traced(x)
    np.testing.assert_allclose(float(value), float(eager_value), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-10)
    numeric = [(float(loss(tf.constant(np.array(SEED_X) + e * 1e-6))) -
                float(loss(tf.constant(np.array(SEED_X) - e * 1e-6)))) / 2e-6
               for e in np.eye(5)]
    np.testing.assert_allclose(grad.numpy(), numeric, rtol=1e-5)


def test_cond_gradient_wrt_variable_inside_function():
    w = tf.Variable(3.0)

    @tf.function
    def step(flag):
        with tf.GradientTape() as tape:
            y = tf.cond(flag, lambda: w * w, lambda: w * 5.0)
        return tape.gradient(y, w)

    assert float(step(tf.constant(True))) == 6.0
    assert float(step(tf.constant(False))) == 5.0


def test_print_in_loop_goes_to_chosen_stream(capsys):
    @tf.function
    def f(n):
        tf.while_loop(lambda i: i < n,
                      lambda i: [tf.print(i, output_stream=sys.stdout), i + 1][1],
                      [tf.constant(1)])

    f(tf.constant(4))
    assert capsys.readouterr().out == "1\n2\n3\n"
