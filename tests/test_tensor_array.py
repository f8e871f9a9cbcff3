"""tf.TensorArray: eager and traced, as a loop variable, and differentiable."""
import numpy as np
import pytest

import hybridtf as tf


def test_seed_array_write_and_read():
    @tf.function
    def array_write_and_read():
        arr = tf.TensorArray(dtype=tf.float32, size=3)
        arr = arr.write(0, tf.constant(0.0))
        arr = arr.write(1, tf.constant(1.0))
        arr = arr.write(2, tf.constant(2.0))
        return arr.stack(), arr.read(0), arr.read(1), arr.read(2)

    stacked, a, b, c = array_write_and_read()
    assert stacked.numpy().tolist() == [0.0, 1.0, 2.0]
    assert [str(t) for t in (a, b, c)] == [
        "tf.Tensor(0.0, shape=(), dtype=float32)", "tf.Tensor(1.0, shape=(), dtype=float32)",
        "tf.Tensor(2.0, shape=(), dtype=float32)"]


def test_eager_operations():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for i in range(3):
        ta = ta.write(i, tf.constant([1.0, 2.0]) * i)
    assert int(ta.size()) == 3
    np.testing.assert_array_equal(ta.stack().numpy(), [[0, 0], [1, 2], [2, 4]])
    np.testing.assert_array_equal(ta.gather([2, 0]).numpy(), [[2, 4], [0, 0]])
    np.testing.assert_array_equal(ta.concat().numpy(), [0, 0, 1, 2, 2, 4])
    un = tf.TensorArray(tf.int32, size=2).unstack(tf.constant([[1, 2], [3, 4]]))
    assert un.read(1).numpy().tolist() == [3, 4]
    sc = tf.TensorArray(tf.float32, size=3, element_shape=[2]).scatter(
        [2, 0], tf.constant([[5.0, 6.0], [7.0, 8.0]]))
    np.testing.assert_array_equal(sc.stack().numpy(), [[7, 8], [0, 0], [5, 6]])


def test_errors():
    ta = tf.TensorArray(tf.float32, size=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        ta.write(2, tf.constant(1.0))
    with pytest.raises(TypeError, match="dtype int32"):
        ta.write(0, tf.constant(1))
    with pytest.raises(ValueError, match="nothing has been written"):
        tf.TensorArray(tf.float32, size=2).read(0)
    filled = ta.write(0, tf.constant([1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not match the element shape"):
        filled.write(1, tf.constant([1.0]))


def test_loop_variable_with_element_shape_learnt_from_the_body():
    @tf.function
    def squares(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

        def body(i, ta):
            return i + 1, ta.write(i, tf.cast(i * i, tf.float32) * tf.ones([2]))
        _, ta = tf.while_loop(lambda i, ta: i < n, body, (tf.constant(0), ta))
        return ta.stack()

    np.testing.assert_array_equal(squares(tf.constant(4)).numpy(),
                                  [[0, 0], [1, 1], [4, 4], [9, 9]])
    assert squares(tf.constant(2)).shape == (2, 2)
    assert squares.experimental_get_tracing_count() == 1


def test_rnn_over_a_tensor_array_trains():
    # The seed's dynamic_rnn with a trainable step, written with an explicit while_loop.
    w = tf.Variable(tf.fill([4, 4], 0.1))

    def dynamic_rnn(input_data, initial_state):
        input_data = tf.transpose(input_data, [1, 0, 2])
        steps = input_data.shape[0]
        states = tf.TensorArray(tf.float32, size=steps)

        def body(i, state, states):
            state = tf.tanh(tf.gather(input_data, i) + tf.matmul(state, w))
            return i + 1, state, states.write(i, state)
        _, _, states = tf.while_loop(lambda i, s, t: i < steps, body,
                                     (tf.constant(0), initial_state, states))
        return tf.transpose(states.stack(), [1, 0, 2])

    x = tf.random.uniform([2, 3, 4], seed=3)
    target = tf.random.uniform([2, 3, 4], seed=4)
    eager_out = dynamic_rnn(x, tf.zeros([2, 4]))

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(dynamic_rnn(x, tf.zeros([2, 4])) - target))
        grad = tape.gradient(loss, w)
        w.assign_sub(0.5 * grad)
        return loss, grad

    np.testing.assert_allclose(tf.function(dynamic_rnn)(x, tf.zeros([2, 4])).numpy(),
                               eager_out.numpy(), rtol=1e-6)
    with tf.GradientTape() as tape:
        eager_loss = tf.reduce_mean(tf.square(dynamic_rnn(x, tf.zeros([2, 4])) - target))
    eager_grad = tape.gradient(eager_loss, w)
    losses = []
    for step in range(5):
        loss, grad = train_step()
        if step == 0:
            np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-5, atol=1e-7)
        losses.append(float(loss))
    assert losses[-1] < losses[0]
