"""tf.data iteration: iterators, loops over datasets inside decorated functions, and Keras's
fit / evaluate / predict on datasets."""
import warnings

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras

Dataset = tf.data.Dataset


# ---- iterators -----------------------------------------------------------------------------------
def test_iter_and_next_eagerly():
    it = iter(Dataset.range(2))
    assert it.element_spec == tf.TensorSpec([], tf.int64)
    first = next(it)
    assert isinstance(first, tf.Tensor) and int(first) == 0
    assert int(it.get_next()) == 1
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(tf.errors.OutOfRangeError):
        it.get_next()


def test_for_loop_unpacks_tuple_elements():
    seen = [(int(x), float(y)) for x, y in Dataset.from_tensor_slices(([1, 2], [0.5, 1.5]))]
    assert seen == [(1, 0.5), (2, 1.5)]


# ---- inside decorated functions -----------------------------------------------------------------
def test_for_loop_in_a_function_runs_a_new_pass_each_call():
    ds = Dataset.range(6).shuffle(6)

    @tf.function
    def collect():
        total = tf.constant(0, tf.int64)
        order = tf.TensorArray(tf.int64, size=0, dynamic_size=True)
        i = 0
        for x in ds:
            total += x
            order = order.write(i, x)
            i += 1
        return total, order.stack()
    passes = []
    for _ in range(4):
        total, order = collect()
        assert int(total) == 15 and sorted(order.numpy().tolist()) == list(range(6))
        passes.append(tuple(order.numpy().tolist()))
    assert len(set(passes)) > 1               # reshuffled on every call
    assert collect.experimental_get_tracing_count() == 1


def test_for_loop_in_a_function_over_a_dataset_argument_with_break():
    @tf.function
    def prefix_sum(ds):
        total = tf.constant(0, tf.int64)
        for x in ds:
            if x > 2:
                break
            total += x
        return total
    assert int(prefix_sum(Dataset.range(10))) == 3
    assert int(prefix_sum(Dataset.range(10).repeat())) == 3   # an infinite dataset, left early


def test_for_loop_in_a_function_with_tuple_elements_and_partial_batches():
    ds = Dataset.from_tensor_slices((np.arange(10, dtype=np.float32),
                                     np.arange(10, dtype=np.int32))).batch(4)

    @tf.function
    def sums():
        xs = tf.constant(0.0)
        sizes = tf.constant(0)
        for x, y in ds:
            xs += tf.reduce_sum(x)
            sizes += tf.shape(y)[0]
        return xs, sizes
    xs, sizes = sums()
    assert float(xs) == 45.0 and int(sizes) == 10


def test_loop_body_side_effects_happen_once_and_ops_run_per_element(capsys):
    @tf.function
    def run():
        n = tf.constant(0, tf.int64)
        for x in Dataset.range(3):
            print("tracing the body")
            tf.print("element", x)
            n += 1
        return n
    assert int(run()) == 3
    assert int(run()) == 3
    captured = capsys.readouterr()
    assert captured.out.count("tracing the body") == 1
    assert captured.err.count("element") == 6      # tf.print writes to stderr, as TF's


def test_loops_nested_in_a_loop_over_a_dataset():
    inner = Dataset.range(3)

    @tf.function
    def pairs(n):
        total = tf.constant(0, tf.int64)
        for x in Dataset.range(4):
            for y in inner:
                total += x * y
            for _ in tf.range(n):
                total += 1
        return total
    assert int(pairs(tf.constant(2))) == (0 + 1 + 2 + 3) * (0 + 1 + 2) + 4 * 2


def test_loop_body_assigns_variables():
    v = tf.Variable(0.0)

    @tf.function
    def accumulate(ds):
        for x in ds:
            v.assign_add(x)
        return v.read_value()
    ds = Dataset.from_tensor_slices([1.0, 2.0, 3.0])
    assert float(accumulate(ds)) == 6.0
    assert float(accumulate(ds)) == 12.0
    assert float(v) == 12.0


def test_training_loop_over_a_dataset_in_a_function():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    w = tf.Variable(tf.zeros([3, 1]))
    ds = Dataset.from_tensor_slices((x, y)).shuffle(64, seed=0).batch(16)

    @tf.function
    def train_epoch():
        loss = tf.constant(0.0)
        for xb, yb in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(xb, w) - yb))
            w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss
    first = float(train_epoch())
    for _ in range(30):
        last = float(train_epoch())
    assert last < first * 0.01
    np.testing.assert_allclose(w.numpy().ravel(), [1.0, -2.0, 0.5], atol=0.05)


def test_loop_carried_shapes_that_change_are_relaxed():
    @tf.function
    def gather_all():
        seen = tf.zeros([0], tf.int64)
        for x in Dataset.range(4):
            seen = tf.concat([seen, tf.reshape(x, [1])], axis=0)
        return seen
    assert gather_all().numpy().tolist() == [0, 1, 2, 3]


def test_reduce_inside_a_function():
    @tf.function
    def total(ds, start):
        return ds.reduce(start, lambda s, x: s + x)
    assert int(total(Dataset.range(5), tf.constant(100, tf.int64))) == 110


def test_next_on_an_iterator_inside_a_function():
    it = iter(Dataset.range(5))

    @tf.function
    def pair(it):
        return next(it) + next(it)
    assert int(pair(it)) == 1
    assert int(pair(it)) == 5
    with pytest.raises(tf.errors.OutOfRangeError):
        pair(it)


def test_for_loop_over_an_iterator_inside_a_function_continues_it():
    it = iter(Dataset.range(6))
    next(it)

    @tf.function
    def rest(it):
        total = tf.constant(0, tf.int64)
        for x in it:
            total += x
        return total
    assert int(rest(it)) == 15
    with pytest.raises(StopIteration):
        next(it)


def test_misuse_inside_a_function_is_reported():
    ds = Dataset.range(3)

    @tf.function
    def length():
        return len(ds)
    with pytest.raises(TypeError, match="only supports `len` in eager mode"):
        length()

    @tf.function(autograph=False)
    def unconverted():
        total = tf.constant(0, tf.int64)
        for x in ds:
            total += x
        return total
    with pytest.raises(TypeError, match="needs AutoGraph"):
        unconverted()

    @tf.function
    def returns_inside():
        for x in ds:
            if x > 1:
                return x
        return tf.constant(-1, tf.int64)
    with pytest.raises(ValueError, match="`return` inside a loop over a dataset"):
        returns_inside()


# ---- Keras ------------------------------------------------------------------------------------
def _data(n=64):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    return x, y


def _model():
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def test_fit_evaluate_predict_on_datasets():
    x, y = _data()
    train = Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).batch(16)
    model = _model()
    history = model.fit(train, epochs=5, validation_data=Dataset.from_tensor_slices(
        (x, y)).batch(32), verbose=0)
    assert history.params["steps"] == 4
    assert len(history.history["loss"]) == 5 and len(history.history["val_loss"]) == 5
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, accuracy = model.evaluate(Dataset.from_tensor_slices((x, y)).batch(10), verbose=0)
    array_loss, array_accuracy = model.evaluate(x, y, batch_size=10, verbose=0)
    assert loss == pytest.approx(array_loss, rel=1e-5)
    predictions = model.predict(Dataset.from_tensor_slices(x).batch(16), verbose=0)
    np.testing.assert_allclose(predictions, model.predict(x, batch_size=16, verbose=0),
                               rtol=1e-5)
    with_targets = model.predict(Dataset.from_tensor_slices((x, y)).batch(16), verbose=0)
    assert with_targets.shape == (64, 2)


def test_fit_with_sample_weights_in_the_dataset():
    x, y = _data()
    weights = np.where(y == 1, 1.0, 0.0).astype(np.float32)
    model = _model()
    from_dataset = model.evaluate(Dataset.from_tensor_slices((x, y, weights)).batch(64),
                                  verbose=0, return_dict=True)
    from_arrays = model.evaluate(x, y, sample_weight=weights, batch_size=64, verbose=0,
                                 return_dict=True)
    assert from_dataset["loss"] == pytest.approx(from_arrays["loss"], rel=1e-5)


def test_fit_steps_per_epoch_continues_the_pass_and_warns_when_it_runs_out():
    x, y = _data()
    ds = Dataset.from_tensor_slices((x, y)).batch(16)      # 4 batches
    model = _model()
    with pytest.warns(UserWarning, match="Your input ran out of data; interrupting training"):
        history = model.fit(ds, epochs=3, steps_per_epoch=3, verbose=0)
    assert history.epoch == [0, 1]          # 3 batches, then 1 before the data ran out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        history = model.fit(ds.repeat(), epochs=3, steps_per_epoch=3, verbose=0)
    assert history.epoch == [0, 1, 2]


def test_fit_rejects_what_keras_rejects_for_datasets():
    x, y = _data()
    ds = Dataset.from_tensor_slices((x, y)).batch(16)
    model = _model()
    with pytest.raises(ValueError, match="`batch_size` must not be given"):
        model.fit(ds, batch_size=16, verbose=0)
    with pytest.raises(ValueError, match="`y` should not be passed"):
        model.fit(ds, y, verbose=0)
    with pytest.raises(ValueError, match="infinite"):
        model.fit(ds.repeat(), verbose=0)
    with pytest.raises(ValueError, match="infinite"):
        model.evaluate(ds.repeat(), verbose=0)


def _loop_node(fn, *args):
    graph = fn.get_concrete_function(*args).graph
    return next(node for node in graph.nodes if node.op.name == "dataset_loop")


def test_loop_body_runs_compiled():
    ds = Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(3, drop_remainder=True)

    @tf.function
    def total():
        s = tf.zeros([3])
        for x in ds:
            s = s + tf.tanh(x) * 2.0
        return s
    expected = sum(np.tanh(np.arange(i, i + 3, dtype=np.float32)) * 2.0 for i in (0, 3))
    np.testing.assert_allclose(total().numpy(), expected, rtol=1e-6)
    part = _loop_node(total).attrs["run_body"]
    assert part._run is not None and part.compile_error is None


def test_loop_body_the_compiler_cannot_lower_runs_on_the_interpreter(monkeypatch):
    from hybridtf import compiler
    from hybridtf.data import in_function

    def refuse(graph, warm_up=True):
        raise RuntimeError("no lowering for this graph")
    monkeypatch.setattr(in_function.compiler, "compile_graph", refuse)
    assert compiler.compile_graph is refuse

    @tf.function
    def total():
        s = tf.constant(0, tf.int64)
        for x in Dataset.range(4):
            s += x * x
        return s
    with pytest.warns(compiler.CompilationWarning,
                      match="loop over a dataset could not be compiled.*no lowering"):
        assert int(total()) == 14
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert int(total()) == 14        # warned once: the loop keeps its interpreter


def test_loop_over_a_dataset_nested_in_a_tensor_loop():
    ds = Dataset.from_tensor_slices((np.ones((5, 2), np.float32), np.arange(5))).batch(2)

    @tf.function
    def epochs(n):
        total = tf.constant(0.0)
        count = tf.constant(0, tf.int64)
        for _ in tf.range(n):
            for features, labels in ds:
                total += tf.reduce_sum(features)
                count += tf.reduce_sum(labels)
        return total, count
    total, count = epochs(tf.constant(3))
    assert float(total) == 30.0 and int(count) == 30
