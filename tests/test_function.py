"""hybridtf.function: the seed documents' examples with their own numbers, and TF's rules."""
import sys
import threading
import warnings

import numpy as np
import pytest

import hybridtf as tf
from hybridtf.polymorphic_function import RetracingWarning


def _printed(capsys):
    """(Python print output, tf.print output): tf.print writes to stderr, as in TF."""
    out = capsys.readouterr()
    return out.out, out.err


# ---- 001: the tf.function API doc --------------------------------------------------------------
def test_seed_function_equals_eager_and_captures():
    def f(x, y):
        return tf.reduce_mean(tf.multiply(x ** 2, 3) + y)

    g = tf.function(f)
    x = tf.constant([[2.0, 3.0]])
    y = tf.constant([[3.0, -2.0]])
    assert f(x, y).numpy() == g(x, y).numpy() == 20.0

    @tf.function
    def h():
        return f(x, y)

    assert (h().numpy() == f(x, y).numpy()).all()


def test_seed_variable_counter():
    c = tf.Variable(0)

    @tf.function
    def f(x):
        c.assign_add(1)
        return x + tf.cast(c, tf.float32)

    assert int(c) == 0
    assert f(1.0) == 2.0
    assert int(c) == 1
    assert f(1.0) == 3.0
    assert int(c) == 2


def test_seed_methods_bind_per_instance():
    class Dense:
        def __init__(self):
            self.W = tf.Variable(tf.random.uniform((10, 10)))
            self.b = tf.Variable(tf.zeros(10))

        @tf.function
        def compute(self, x):
            return tf.matmul(x, self.W) + self.b

    d1, d2 = Dense(), Dense()
    x = tf.random.uniform((10, 10))
    assert not (d1.compute(x).numpy() == d2.compute(x).numpy()).all()
    np.testing.assert_allclose(d1.compute(x).numpy(), x.numpy() @ d1.W.numpy(), rtol=1e-5)
    assert d1.compute.experimental_get_tracing_count() == 1


def test_seed_training_argument_traces_once_per_value():
    traced = []

    class Model:
        @tf.function
        def call(self, inputs, training=True):
            traced.append(training)
            return inputs * 2.0 if training else inputs

    m = Model()
    x = tf.ones([2])
    m.call(x, training=True)
    m.call(x)
    m.call(x, training=False)
    m.call(x, False)
    assert traced == [True, False]


# ---- 003: the notebook --------------------------------------------------------------------------
def test_seed_print_at_trace_tf_print_every_call(capsys):
    @tf.function
    def f(x):
        tf.print(x)
        print("The function is running in Python")

    traced = "The function is running in Python\n"
    f(tf.constant(1, dtype=tf.int32))
    assert _printed(capsys) == (traced, "1\n")
    f(tf.constant(10, dtype=tf.int32))
    assert _printed(capsys) == ("", "10\n")
    f(np.array(2, dtype=np.int32))  # a NumPy array reuses the int32 tensor's trace
    assert _printed(capsys) == ("", "2\n")
    f(tf.constant(0.1, dtype=tf.float32))
    f(tf.constant(0.2, dtype=tf.float32))
    assert _printed(capsys) == (traced, "0.1\n0.2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetracingWarning)
        for value, retraces in ((1, True), (2, True), (1, False), (0.1, True), (0.2, True),
                                (0.1, False)):
            f(value)
            assert _printed(capsys) == (traced if retraces else "", f"{value}\n")


def test_seed_outer_variable_assign_in_function():
    a = tf.Variable(0.0)

    @tf.function
    def g():
        a.assign(a + 1.0)
        return a

    assert [str(g()) for _ in range(3)] == [
        "tf.Tensor(1.0, shape=(), dtype=float32)", "tf.Tensor(2.0, shape=(), dtype=float32)",
        "tf.Tensor(3.0, shape=(), dtype=float32)"]


def test_seed_nested_functions_and_gradient_through_a_call():
    @tf.function
    def add(a, b):
        return a + b

    assert add(tf.constant([1, 2]), tf.constant([3, 8])).numpy().tolist() == [4, 10]

    @tf.function
    def dense_layer(x, w, b):
        return add(tf.matmul(x, w), b)

    np.testing.assert_array_equal(
        dense_layer(tf.ones([3, 2]), tf.ones([2, 2]), tf.ones([2])).numpy(), np.full((3, 2), 3.0))
    w = tf.Variable(np.random.randn(3, 2), dtype=tf.float32)
    b = tf.Variable(np.random.randn(2), dtype=tf.float32)
    x = tf.constant([[1.0, 2.0, 3.]], dtype=tf.float32)
    with tf.GradientTape() as tape:
        result = dense_layer(x, w, b)
    gw, gb = tape.gradient(result, [w, b])
    np.testing.assert_array_equal(gw.numpy(), [[1., 1.], [2., 2.], [3., 3.]])
    np.testing.assert_array_equal(gb.numpy(), [1., 1.])


def test_seed_polymorphism_and_concrete_functions(capsys):
    @tf.function
    def double(a):
        print("Tracing with", a)
        return a + a

    assert str(double(tf.constant(1))) == "tf.Tensor(2, shape=(), dtype=int32)"
    assert str(double(tf.constant(2))) == "tf.Tensor(4, shape=(), dtype=int32)"
    assert double(tf.constant(1.1)).numpy() == np.float32(2.2)
    assert str(double(tf.constant("a"))) == "tf.Tensor(b'aa', shape=(), dtype=string)"
    assert _printed(capsys)[0] == (
        'Tracing with Tensor("a:0", shape=(), dtype=int32)\n'
        'Tracing with Tensor("a:0", shape=(), dtype=float32)\n'
        'Tracing with Tensor("a:0", shape=(), dtype=string)\n')
    assert double.experimental_get_tracing_count() == 3

    double_strings = double.get_concrete_function(tf.TensorSpec(shape=None, dtype=tf.string))
    traces = double.experimental_get_tracing_count()
    assert double_strings(tf.constant("a")).numpy() == b"aa"
    assert double_strings(a=tf.constant("b")).numpy() == b"bb"
    assert double_strings(tf.constant(["x", "y"])).numpy().tolist() == [b"xx", b"yy"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a string tensor"):
        double_strings(tf.constant(1))
    assert double.experimental_get_tracing_count() == traces  # calling it never retraces


def test_seed_function_of_function_retraces_each_time(capsys):
    def f():
        print("Tracing!")
        tf.print("Executing")

    tf.function(f)()
    assert _printed(capsys) == ("Tracing!\n", "Executing\n")
    tf.function(f)()
    assert _printed(capsys) == ("Tracing!\n", "Executing\n")


def test_seed_input_signature(capsys):
    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
    def next_collatz(x):
        print("Tracing with", x)
        return tf.where(x % 2 == 0, x // 2, 3 * x + 1)

    assert next_collatz(tf.constant([1, 2])).numpy().tolist() == [4, 1]
    assert next_collatz(tf.constant([1, 2, 3])).numpy().tolist() == [4, 1, 10]
    assert _printed(capsys)[0] == 'Tracing with Tensor("x:0", shape=(None,), dtype=int32)\n'
    # The guide shows a ValueError; TF 2.21 raises TypeError: the error is both.
    for error in (ValueError, TypeError):
        with pytest.raises(error, match="incompatible with input_signature"):
            next_collatz(tf.constant([[1, 2], [3, 4]]))
    with pytest.raises(TypeError):
        tf.function(lambda x: x, input_signature=tf.TensorSpec([None]))


def test_seed_side_effects(capsys):
    @tf.function
    def f(x):
        print("Traced with", x)
        tf.print("Executed with", x)

    f(1)
    assert _printed(capsys) == ("Traced with 1\n", "Executed with 1\n")
    f(1)
    assert _printed(capsys) == ("", "Executed with 1\n")
    f(2)
    assert _printed(capsys) == ("Traced with 2\n", "Executed with 2\n")


def test_seed_py_function_runs_every_call(capsys):
    external_list = []

    def side_effect(x):
        print("Python side effect")
        external_list.append(x)

    @tf.function
    def f(x):
        tf.py_function(side_effect, inp=[x], Tout=[])

    f(1)
    f(1)
    f(1)
    assert len(external_list) == 3
    assert external_list[0].numpy() == 1
    assert _printed(capsys)[0] == "Python side effect\n" * 3


def test_seed_python_iterator_is_consumed_once(capsys):
    external_var = tf.Variable(0)

    @tf.function
    def buggy_consume_next(iterator):
        external_var.assign_add(next(iterator))
        tf.print("Value of external_var:", external_var)

    iterator = iter([0, 1, 2, 3])
    for _ in range(3):
        buggy_consume_next(iterator)
    assert _printed(capsys)[1] == "Value of external_var: 0\n" * 3


def test_seed_creating_variables_on_every_call_is_an_error():
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        v.assign_add(x)
        return v

    with pytest.raises(ValueError, match="tried to create variables"):
        f(1.0)


def test_seed_variables_created_on_first_call_only():
    v = tf.Variable(1.0)

    @tf.function
    def f(x):
        return v.assign_add(x)

    assert str(f(1.0)) == "tf.Tensor(2.0, shape=(), dtype=float32)"
    assert str(f(2.0)) == "tf.Tensor(4.0, shape=(), dtype=float32)"

    class C:
        pass

    obj = C()
    obj.v = None

    @tf.function
    def g(x):
        if obj.v is None:
            obj.v = tf.Variable(1.0)
        return obj.v.assign_add(x)

    assert float(g(1.0)) == 2.0 and float(g(2.0)) == 4.0

    state = []

    @tf.function
    def fn(x):
        if not state:
            state.append(tf.Variable(2.0 * x))
            state.append(tf.Variable(state[0] * 3.0))
        return state[0] * x * state[1]

    assert str(fn(tf.constant(1.0))) == "tf.Tensor(12.0, shape=(), dtype=float32)"
    assert str(fn(tf.constant(3.0))) == "tf.Tensor(36.0, shape=(), dtype=float32)"
    assert [float(s) for s in state] == [2.0, 6.0]


# ---- gradients inside and through functions ---------------------------------------------------
def test_train_step_with_tape_inside_the_function():
    w = tf.Variable(tf.random.normal([4, 3], seed=1))
    b = tf.Variable(tf.zeros([3]))
    xs = tf.random.normal([16, 4], seed=2)
    ys = tf.constant(np.arange(16) % 3, tf.int32)

    def step(xs, ys):
        with tf.GradientTape() as tape:
            logits = tf.matmul(xs, w) + b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=ys, logits=logits))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.5 * gw)
        b.assign_sub(0.5 * gb)
        return loss

    w0, b0 = w.numpy().copy(), b.numpy().copy()
    eager_losses = [float(step(xs, ys)) for _ in range(3)]
    w.assign(w0)
    b.assign(b0)
    traced = tf.function(step)
    traced_losses = [float(traced(xs, ys)) for _ in range(3)]
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-6)
    assert traced_losses[2] < traced_losses[0]
    assert traced.experimental_get_tracing_count() == 1


def test_higher_order_gradients_through_a_function():
    @tf.function
    def cube(x):
        return x * x * x

    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        d1 = inner.gradient(y, x)
    assert float(d1) == 12.0 and float(outer.gradient(d1, x)) == 12.0


# ---- structures, options, diagnostics ---------------------------------------------------------
def test_nested_structures_in_and_out_and_variables_returned_as_tensors():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def f(inputs, scale=2.0):
        return {"sum": inputs["a"] + inputs["b"][0], "scaled": [inputs["a"] * scale, v],
                "tag": "python"}

    out = f({"a": tf.constant([1.0, 1.0]), "b": (tf.constant([2.0, 3.0]),)})
    assert out["tag"] == "python"
    np.testing.assert_array_equal(out["sum"].numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(out["scaled"][0].numpy(), [2.0, 2.0])
    assert isinstance(out["scaled"][1], tf.Tensor)
    assert f.experimental_get_tracing_count() == 1
    f({"a": tf.constant([5.0, 1.0]), "b": (tf.constant([2.0, 3.0]),)}, scale=2.0)
    assert f.experimental_get_tracing_count() == 1


def test_reduce_retracing_generalises_shapes():
    @tf.function(reduce_retracing=True)
    def f(x):
        return tf.reduce_sum(x * 2.0)

    assert float(f(tf.ones([2]))) == 4.0
    assert float(f(tf.ones([3]))) == 6.0
    assert float(f(tf.ones([7]))) == 14.0
    assert f.experimental_get_tracing_count() == 2


def test_run_functions_eagerly():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x + 1

    tf.config.run_functions_eagerly(True)
    try:
        f(tf.constant(1))
        f(tf.constant(1))
    finally:
        tf.config.run_functions_eagerly(False)
    assert len(calls) == 2 and f.experimental_get_tracing_count() == 0


def test_python_function_and_decorator_forms():
    def plain(x):
        return x * 3

    assert tf.function(plain).python_function is plain
    decorated = tf.function(jit_compile=True)(plain)
    assert float(decorated(tf.constant(2.0))) == 6.0
    concrete = decorated.get_concrete_function(tf.TensorSpec([None], tf.float32))
    np.testing.assert_array_equal(concrete(tf.constant([1.0, 2.0])).numpy(), [3.0, 6.0])
    with pytest.raises(ValueError):
        concrete(tf.constant([[1.0]]))


def test_symbolic_tensors_refuse_python_control_flow():
    @tf.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TypeError, match="as a Python bool"):
        f(tf.constant(1.0))


def test_retracing_warning_names_the_changing_argument():
    @tf.function
    def f(x, n):
        return x * n

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(6):
            f(tf.constant(1.0), n)
    messages = [str(w.message) for w in caught if issubclass(w.category, RetracingWarning)]
    assert messages and "argument 'n': Python int 3 -> Python int 4" in messages[0]
    assert "tensor instead of a Python number" in messages[0]


def test_concurrent_calls_trace_once():
    counts = []

    @tf.function
    def f(x):
        counts.append(1)
        return x * 2.0

    results = []

    def worker():
        results.append(float(f(tf.constant(3.0))))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [6.0] * 8 and len(counts) == 1


def test_random_ops_draw_new_values_every_call():
    @tf.function
    def noise():
        return tf.random.uniform([3], seed=5)

    first, second = noise().numpy(), noise().numpy()
    assert not np.array_equal(first, second)
    assert noise.experimental_get_tracing_count() == 1


def test_print_goes_to_the_chosen_stream(capsys):
    @tf.function
    def f(x):
        tf.print("x =", x, output_stream=sys.stdout)
        return x

    f(tf.constant([1, 2]))
    assert capsys.readouterr().out == "x = [1 2]\n"


def test_gradients_with_unknown_batch_dimension():
    w = tf.Variable(tf.ones([3, 2]))
    b = tf.Variable(tf.zeros([2]))

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def grads(x):
        with tf.GradientTape() as tape:
            y = tf.reduce_mean(tf.square(tf.matmul(x, w) + b))
        return tape.gradient(y, [w, b])

    for batch in (4, 2):
        x = np.random.default_rng(batch).normal(size=(batch, 3)).astype(np.float32)
        with tf.GradientTape() as tape:
            y = tf.reduce_mean(tf.square(tf.matmul(x, w) + b))
        expected = tape.gradient(y, [w, b])
        for got, want in zip(grads(tf.constant(x)), expected):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    assert grads.experimental_get_tracing_count() == 1


def test_unneeded_nodes_are_pruned_from_the_graph():
    w = tf.Variable(tf.ones([4, 3]))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(x, w))
        w.assign_sub(0.1 * tape.gradient(loss, w))  # the gradient w.r.t. x is never used
        return loss

    graph = step.get_concrete_function(tf.ones([2, 4])).graph
    assert [n.op.name for n in graph.nodes].count("matmul") == 2


def test_gradient_of_a_call_with_random_ops_uses_the_forward_draws():
    f = tf.function(lambda x: tf.nn.dropout(x, 0.5, seed=1) * x)
    x = tf.constant(np.arange(1, 9, dtype=np.float64))
    masks = []
    for _ in range(4):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        kept = y.numpy() != 0
        masks.append(tuple(kept))
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.where(kept, 4 * x.numpy(), 0))
    assert len(set(masks)) > 1   # each call draws a new mask


def test_gradient_of_a_call_that_updates_what_it_read_uses_the_values_before_the_call():
    v = tf.Variable([1.0, 2.0, 3.0], dtype=tf.float64)

    @tf.function
    def read_then_update(x):
        y = tf.reduce_sum(v * v * x)
        v.assign(2.0 * v + 1.0)
        return y

    x = tf.constant([1.0, 1.0, 2.0], dtype=tf.float64)
    for _ in range(2):   # the second call starts from the value the first one left
        before = v.numpy().copy()
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = read_then_update(x)
        gv, gx = tape.gradient(y, [v, x])
        np.testing.assert_allclose(y.numpy(), np.sum(before * before * x.numpy()))
        np.testing.assert_allclose(gv.numpy(), 2.0 * before * x.numpy())
        np.testing.assert_allclose(gx.numpy(), before * before)
        np.testing.assert_allclose(v.numpy(), 2.0 * before + 1.0)


def test_input_signature_describes_starred_arguments():
    spec = tf.TensorSpec([None], tf.float32)
    f = tf.function(lambda *a: a[0] * 2.0, input_signature=[spec])
    np.testing.assert_allclose(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(np.array([3.0, 4.0, 5.0], np.float32)).numpy(), [6.0, 8.0, 10.0])
    assert f.experimental_get_tracing_count() == 1
    g = tf.function(lambda x, *rest: x + rest[0] * rest[1],
                    input_signature=[tf.TensorSpec([], tf.float32)] * 3)
    assert float(g(1.0, 2.0, 3.0)) == 7.0
    with pytest.raises(TypeError, match="incompatible with input_signature"):
        f(tf.constant([1, 2]))


def test_input_signature_takes_a_python_list_for_a_spec():
    f = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec([None], tf.float32)])
    np.testing.assert_allclose(f([3.0, 4.0, 5.0]).numpy(), [6.0, 8.0, 10.0])
    with pytest.raises(TypeError, match="incompatible with input_signature"):
        f([[1.0, 2.0], [3.0]])
