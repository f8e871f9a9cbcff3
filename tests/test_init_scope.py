"""tf.init_scope: code inside runs eagerly, outside every function being traced and every tape."""
import numpy as np

import hybridtf as tf


def test_init_scope_runs_eagerly_inside_a_trace_and_creates_variables_once():
    seen = []

    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.count = None

        @tf.function
        def __call__(self):
            if self.count is None:
                with tf.init_scope():
                    seen.append(tf.executing_eagerly())
                    self.count = tf.Variable(0)
            seen.append(tf.executing_eagerly())
            self.count.assign_add(1)
            return self.count.read_value()

    counter = Counter()
    assert [int(counter()) for _ in range(3)] == [1, 2, 3]
    assert seen == [True, False]   # traced once: eager inside the scope, symbolic outside
    assert int(counter.count.numpy()) == 3


def test_values_computed_in_init_scope_are_eager_and_captured():
    @tf.function
    def scaled(x):
        with tf.init_scope():
            factor = tf.constant(3.0) * 2.0
            assert isinstance(factor.numpy(), np.floating)   # a value, not a symbolic tensor
        return x * factor

    assert scaled(tf.constant([1.0, 2.0])).numpy().tolist() == [6.0, 12.0]
    assert tf.executing_eagerly()


def test_init_scope_pauses_tapes_and_restores_everything():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tf.init_scope():
            hidden = x * x
        seen = x * x
    assert tape.gradient(hidden, x) is None
    assert float(tape.gradient(seen, x)) == 4.0

    @tf.function
    def nested(v):
        with tf.init_scope():
            with tf.init_scope():
                inner = tf.executing_eagerly()
            middle = tf.executing_eagerly()
        return v, inner, middle, tf.executing_eagerly()

    assert nested(tf.constant(1.0))[1:] == (True, True, False)
