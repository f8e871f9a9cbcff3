"""tf.keras.metrics: metric functions and stateful Metric objects against TF 2.21's numbers and
NumPy, eagerly and inside tf.function; lookup by name; errors."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf

M = tf.keras.metrics

PROBS = np.array([[0.1, 0.7, 0.2], [0.6, 0.3, 0.1], [0.25, 0.25, 0.5], [0.2, 0.5, 0.3]],
                 np.float32)
SPARSE = np.array([1, 2, 2, 0])
ONEHOT = np.eye(3, dtype=np.float32)[SPARSE]
REG_T = np.array([[0.5, 1.], [2., -1.]], np.float32)
REG_P = np.array([[0., 1.5], [2.5, 1.]], np.float32)


# ---- metric functions (TF 2.21's values) ------------------------------------------------------
def test_accuracy_functions_match_tf():
    np.testing.assert_array_equal(M.sparse_categorical_accuracy(SPARSE, PROBS).numpy(),
                                  [1., 0., 1., 0.])
    np.testing.assert_array_equal(M.sparse_categorical_accuracy(SPARSE[:, None], PROBS).numpy(),
                                  [1., 0., 1., 0.])
    np.testing.assert_array_equal(M.categorical_accuracy(ONEHOT, PROBS).numpy(),
                                  [1., 0., 1., 0.])
    binary = M.binary_accuracy(np.array([[1.], [0.], [1.], [0.]]),
                               np.array([[0.6], [0.5], [0.4], [0.1]]))
    np.testing.assert_array_equal(binary.numpy(), [[1.], [1.], [0.], [1.]])
    np.testing.assert_array_equal(M.binary_accuracy(np.array([1., 0., 1., 0.]),
                                                    np.array([0.6, 0.5, 0.4, 0.1]),
                                                    threshold=0.3).numpy(), [1., 0., 1., 1.])
    np.testing.assert_array_equal(M.accuracy([1, 2, 3], [1, 2, 4]).numpy(), [1., 1., 0.])
    assert M.sparse_categorical_accuracy(SPARSE, PROBS).dtype == tf.float32


@given(st.integers(1, 5), st.integers(2, 4), st.data())
def test_accuracy_functions_match_numpy(batch, classes, data):
    preds = data.draw(hnp.arrays(np.float64, (batch, classes), elements=st.floats(0, 1),
                                 unique=True))
    labels = data.draw(hnp.arrays(np.int64, (batch,), elements=st.integers(0, classes - 1)))
    expected = (preds.argmax(axis=-1) == labels).astype(np.float32)
    np.testing.assert_array_equal(M.sparse_categorical_accuracy(labels, preds).numpy(), expected)
    np.testing.assert_array_equal(M.categorical_accuracy(np.eye(classes)[labels], preds).numpy(),
                                  expected)
    threshold = data.draw(st.floats(0.05, 0.95))
    assume(np.all(np.abs(preds[:, 0] - threshold) > 1e-6))   # a tie depends on the dtype
    binary_labels = (labels % 2).astype(np.float64)
    np.testing.assert_array_equal(
        M.binary_accuracy(binary_labels, preds[:, 0], threshold=threshold).numpy(),
        ((preds[:, 0] > threshold) == binary_labels).astype(np.float32))


# ---- stateful metrics (TF 2.21's values) ------------------------------------------------------
def test_mean_and_sum_with_sample_weights_match_tf():
    mean = M.Mean()
    mean.update_state([1., 2., 3.])
    mean.update_state([[1., 2.], [3., 5.]], sample_weight=[1., 0.5])
    np.testing.assert_allclose(mean.result().numpy(), 2.1111112, rtol=1e-6)
    elementwise = M.Mean()
    elementwise.update_state(np.array([[1., 2.], [3., 5.]]),
                             sample_weight=np.array([[1., 0.], [0.5, 2.]]))
    np.testing.assert_allclose(elementwise.result().numpy(), 3.5714285, rtol=1e-6)
    total = M.Sum()
    total.update_state([1., 2., 3.])
    total.update_state([[1., 2.], [3., 5.]], sample_weight=[1., 0.5])
    np.testing.assert_allclose(total.result().numpy(), 13.0)


@pytest.mark.parametrize("make, updates, expected", [
    (M.SparseCategoricalAccuracy, [((SPARSE, PROBS), {}),
                                   (([0, 1], PROBS[:2]), {"sample_weight": [2., 1.]})],
     0.2857143),
    (M.CategoricalAccuracy, [((ONEHOT, PROBS), {})], 0.5),
    (lambda: M.BinaryAccuracy(threshold=0.45),
     [(([[1], [0], [1], [0]], [[0.6], [0.5], [0.4], [0.1]]), {})], 0.5),
    (M.Accuracy, [(([[1, 2], [3, 4]], [[1, 2], [0, 4]]), {})], 0.75),
    (M.MeanSquaredError, [((REG_T, REG_P), {}),
                          (([[1., 1.]], [[0., 0.]]), {"sample_weight": [3.]})], 1.075),
    (M.MeanAbsoluteError, [((REG_T, REG_P), {})], 0.875),
    (M.RootMeanSquaredError, [((REG_T, REG_P), {})], 1.0897248),
    (lambda: M.SparseCategoricalCrossentropy(from_logits=True),
     [((SPARSE, np.log(PROBS) * 2), {})], 1.6456405),
    (M.BinaryCrossentropy, [(([[1.], [0.]], [[0.8], [0.3]]), {})], 0.28990924),
])
def test_metric_classes_match_tf(make, updates, expected):
    metric = make()
    for args, kwargs in updates:
        metric.update_state(*args, **kwargs)
    result = metric.result()
    assert result.dtype == tf.float32
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-6)


@given(st.lists(hnp.arrays(np.float64, st.integers(1, 5), elements=st.floats(-10, 10)),
                min_size=1, max_size=4), st.booleans())
def test_mean_over_batches_matches_numpy(batches, weighted):
    rng = np.random.default_rng(len(batches))
    weights = [rng.uniform(0.1, 2.0, size=b.shape) for b in batches] if weighted else None
    mean = M.Mean(dtype="float64")
    for i, values in enumerate(batches):
        mean.update_state(values, sample_weight=None if weights is None else weights[i])
    values = np.concatenate(batches)
    w = np.ones_like(values) if weights is None else np.concatenate(weights)
    np.testing.assert_allclose(mean.result().numpy(), (values * w).sum() / w.sum(), rtol=1e-12)


def test_call_updates_and_returns_result_and_reset_clears():
    accuracy = M.SparseCategoricalAccuracy()
    np.testing.assert_allclose(accuracy(SPARSE[:2], PROBS[:2]).numpy(), 0.5)
    np.testing.assert_allclose(accuracy(SPARSE[2:], PROBS[2:]).numpy(), 0.5)
    np.testing.assert_allclose(accuracy([2], PROBS[2:3]).numpy(), 3 / 5)
    accuracy.reset_state()
    assert accuracy.result().numpy() == 0.0
    accuracy.update_state([1], PROBS[:1])
    accuracy.reset_states()   # TF 2's name
    np.testing.assert_array_equal([v.numpy() for v in accuracy.variables], [0.0, 0.0])


def test_state_lives_in_non_trainable_variables_found_by_modules():
    mean = M.Mean(name="loss_mean")
    assert isinstance(mean, tf.Module)
    assert [v.name for v in mean.variables] == ["loss_mean/total:0", "loss_mean/count:0"]
    assert mean.trainable_variables == ()
    assert len(mean.non_trainable_variables) == 2
    holder = tf.Module()
    holder.metric = mean
    assert {id(v) for v in holder.variables} == {id(v) for v in mean.variables}
    assert mean.dtype == "float32"
    assert M.Mean(name="val loss").name == "val loss"   # any name, even not an identifier


def test_update_state_inside_tf_function_runs_every_call():
    mean = M.Mean()
    accuracy = M.SparseCategoricalAccuracy()

    @tf.function
    def step(values, labels, probs):
        mean.update_state(values)
        accuracy.update_state(labels, probs)
        return mean.result(), accuracy.result()

    for i in range(3):
        step(tf.constant([float(i), float(i) + 1.0]), tf.constant(SPARSE), tf.constant(PROBS))
    # Eager and traced updates share the state.
    np.testing.assert_allclose(mean.result().numpy(), np.mean([0, 1, 1, 2, 2, 3]))
    np.testing.assert_allclose(mean.count.numpy(), 6.0)
    np.testing.assert_allclose(accuracy.result().numpy(), 0.5)
    result, _ = step(tf.constant([10.0, 10.0]), tf.constant(SPARSE), tf.constant(PROBS))
    np.testing.assert_allclose(result.numpy(), 29 / 8)
    assert step.experimental_get_tracing_count() == 1

    @tf.function
    def reset():
        mean.reset_state()

    reset()
    assert mean.result().numpy() == 0.0 and mean.count.numpy() == 0.0


def test_metric_and_its_call_inside_tf_function_match_eager():
    eager, traced = M.MeanSquaredError(), M.MeanSquaredError()
    batches = [(REG_T, REG_P), (REG_P, REG_T * 2)]
    call = tf.function(lambda t, p: traced(t, p))
    for t, p in batches:
        expected = eager(t, p)
        np.testing.assert_allclose(call(tf.constant(t), tf.constant(p)).numpy(),
                                   expected.numpy(), rtol=1e-6)


def test_subclassed_metric_with_add_weight():
    class CountPositives(M.Metric):
        def __init__(self, name="count_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.positives = self.add_weight(name="positives", initializer="zeros")

        def update_state(self, values, sample_weight=None):
            self.positives.assign_add(tf.reduce_sum(tf.cast(tf.greater(values, 0.0),
                                                            tf.float32)))

        def result(self):
            return self.positives.value()

    metric = CountPositives()
    metric.update_state([1.0, -1.0, 2.0])
    tf.function(lambda v: metric.update_state(v))(tf.constant([3.0, 4.0, -5.0]))
    assert metric.result().numpy() == 4.0
    assert metric.variables[0].name == "count_positives/positives:0"
    metric.reset_state()
    assert metric.result().numpy() == 0.0
    assert metric.add_weight("extra", (2,), "ones").numpy().tolist() == [1.0, 1.0]


# ---- names, configs, lookup -------------------------------------------------------------------
def test_names_and_configs():
    assert M.Mean().name == "mean"
    assert M.Accuracy().name == "accuracy"
    assert M.MeanSquaredError().name == "mean_squared_error"
    assert M.SparseCategoricalAccuracy().get_config() == {
        "name": "sparse_categorical_accuracy", "dtype": "float32"}
    assert M.BinaryAccuracy().get_config() == {"name": "binary_accuracy", "dtype": "float32",
                                               "threshold": 0.5}
    copy = M.BinaryAccuracy.from_config(M.BinaryAccuracy(threshold=0.3).get_config())
    assert copy.threshold == 0.3


@pytest.mark.parametrize("name, cls", [
    ("accuracy", M.Accuracy), ("acc", M.Accuracy), ("Accuracy", M.Accuracy),
    ("sparse_categorical_accuracy", M.SparseCategoricalAccuracy),
    ("categorical_accuracy", M.CategoricalAccuracy), ("binary_accuracy", M.BinaryAccuracy),
    ("mse", M.MeanSquaredError), ("MSE", M.MeanSquaredError),
    ("mean_squared_error", M.MeanSquaredError), ("mae", M.MeanAbsoluteError),
    ("mean_absolute_error", M.MeanAbsoluteError),
    ("sparse_categorical_crossentropy", M.SparseCategoricalCrossentropy),
])
def test_get_resolves_compile_strings(name, cls):
    assert type(M.get(name)) is cls


def test_get_passes_objects_through_and_rejects_unknown_names():
    metric = M.Mean()
    assert M.get(metric) is metric
    assert M.get(M.binary_accuracy) is M.binary_accuracy
    assert M.get(None) is None
    config = M.get({"class_name": "BinaryAccuracy", "config": {"threshold": 0.7}})
    assert config.threshold == 0.7
    with pytest.raises(ValueError, match="Could not interpret metric identifier: 'nope'"):
        M.get("nope")


@pytest.mark.parametrize("y_true, y_pred, cls", [
    ((None,), (None, 3), M.SparseCategoricalAccuracy),
    ((None, 1), (None, 3), M.SparseCategoricalAccuracy),
    ((None, 3), (None, 3), M.CategoricalAccuracy),
    ((None, 1), (None, 1), M.BinaryAccuracy),
])
def test_resolve_picks_the_accuracy_compile_means(y_true, y_pred, cls):
    metric = M.resolve("acc", y_true, y_pred)
    assert type(metric) is cls and metric.name == "acc"


def test_resolve_wraps_functions_and_names_after_the_identifier():
    metric = M.resolve("mse")
    assert isinstance(metric, M.MeanSquaredError) and metric.name == "mse"
    wrapped = M.resolve(lambda t, p: tf.abs(t - p))
    wrapped.update_state([1.0, 2.0], [2.0, 4.0])
    assert isinstance(wrapped, M.MeanMetricWrapper) and wrapped.result().numpy() == 1.5


# ---- errors -----------------------------------------------------------------------------------
def test_errors_name_the_metric_and_shapes():
    with pytest.raises(ValueError, match=r"sparse_categorical_accuracy: .*y_true.shape=\(3,\) "
                                         r"and y_pred.shape=\(4, 3\)"):
        M.SparseCategoricalAccuracy().update_state([0, 1, 2], PROBS)
    with pytest.raises(ValueError, match=r"categorical_accuracy: .*same shape"):
        M.categorical_accuracy(SPARSE, PROBS)
    with pytest.raises(ValueError, match=r"sample_weight of shape \(3,\)"):
        M.Mean().update_state([1.0, 2.0], sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="cannot be trainable"):
        M.Mean().add_weight(name="w", trainable=True)
