"""tf.keras.losses: functions and Loss classes against TF 2.21's numbers, NumPy, and finite
differences; reductions, sample weights, lookup by name, errors, and use inside tf.function."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients

L = tf.keras.losses

# Inputs shared by the TF-value tables (float32, as TF's were computed).
YT_REG = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]], np.float32)
YP_REG = np.array([[0.7, -0.2, 1.0], [1.0, 0.3, -2.5]], np.float32)
YT_POS = np.array([[0.2, 1.0, 3.0], [0.0, 2.5, 0.7]], np.float32)
YP_POS = np.array([[0.3, 0.8, 2.0], [0.1, 3.0, 0.4]], np.float32)
YT_HINGE = np.array([[0., 1., 1.], [1., 0., 0.]], np.float32)
YP_HINGE = np.array([[0.3, 0.8, -0.4], [-0.6, 0.2, 1.3]], np.float32)
ONEHOT = np.array([[0., 1., 0.], [1., 0., 0.], [0., 0., 1.]], np.float32)
PROBS = np.array([[0.1, 0.7, 0.2], [0.6, 0.3, 0.1], [0.25, 0.25, 0.5]], np.float32)
LOGITS = np.array([[1.0, 2.5, -0.5], [0.3, -1.2, 2.0], [4.0, 0.0, -3.0]], np.float32)
SPARSE = np.array([1, 0, 2], np.int32)
BIN_T = np.array([[1., 0.], [0., 1.], [1., 1.]], np.float32)
BIN_P = np.array([[0.9, 0.2], [0.4, 0.65], [0.3, 1.0]], np.float32)
BIN_L = np.array([[2.0, -1.0], [0.5, -0.3], [-1.5, 8.0]], np.float32)
SATURATED = np.array([[0., 1., 0.], [0., 1., 0.], [0., 0., 1.]], np.float32)

# (call, TF 2.21's result)
FUNCTION_CASES = {
    "mse": (lambda: L.mse(YT_REG, YP_REG), [0.56, 1.4466667]),
    "mean_squared_error": (lambda: L.mean_squared_error(YT_REG, YP_REG), [0.56, 1.4466667]),
    "mae": (lambda: L.mae(YT_REG, YP_REG), [0.6666667, 0.93333334]),
    "mape": (lambda: L.mape(YT_REG, YP_REG), [56.666668, 1.0000014e+08]),
    "msle": (lambda: L.msle(YT_POS, YP_POS), [0.03342288, 0.021537079]),
    "huber": (lambda: L.huber(YT_REG, YP_REG), [0.28, 0.5566667]),
    "huber_delta": (lambda: L.huber(YT_REG, YP_REG, delta=0.5), [0.22333334, 0.34833333]),
    "logcosh": (lambda: L.logcosh(YT_REG, YP_REG), [0.2481342, 0.49648595]),
    "hinge": (lambda: L.hinge(YT_HINGE, YP_HINGE), [0.9666667, 1.7000002]),
    "hinge_pm1": (lambda: L.hinge(2 * YT_HINGE - 1, YP_HINGE), [0.9666667, 1.7000002]),
    "squared_hinge": (lambda: L.squared_hinge(YT_HINGE, YP_HINGE), [1.2299999, 3.0966666]),
    "categorical_hinge": (lambda: L.categorical_hinge(YT_HINGE, YP_HINGE), [0.9, 2.9]),
    "kld": (lambda: L.kld(ONEHOT * 0.8 + 0.05, PROBS), [0.061060548, 0.17181537, 0.29009026]),
    "poisson": (lambda: L.poisson(YT_POS, YP_POS), [0.49483213, 0.46495757]),
    "cce": (lambda: L.categorical_crossentropy(ONEHOT, PROBS),
            [0.35667497, 0.5108256, 0.6931472]),
    "cce_unnormalised": (lambda: L.categorical_crossentropy(ONEHOT, PROBS * 2),
                         [0.35667497, 0.5108256, 0.6931472]),
    "cce_saturated": (lambda: L.categorical_crossentropy(ONEHOT, SATURATED),
                      [1.1920930e-07, 1.6118095e+01, 1.1920929e-07]),
    "cce_logits": (lambda: L.categorical_crossentropy(ONEHOT, LOGITS, from_logits=True),
                   [0.24131133, 1.9016712, 7.019045]),
    "cce_smoothing": (lambda: L.categorical_crossentropy(ONEHOT, PROBS, label_smoothing=0.1),
                      [0.46329743, 0.5936558, 0.739357]),
    "scce": (lambda: L.sparse_categorical_crossentropy(SPARSE, PROBS),
             [0.35667488, 0.5108256, 0.6931472]),
    "scce_logits": (lambda: L.sparse_categorical_crossentropy(SPARSE, LOGITS, from_logits=True),
                    [0.24131133, 1.9016712, 7.019045]),
    "scce_saturated": (lambda: L.sparse_categorical_crossentropy(np.array([0, 1, 2]), SATURATED),
                       [1.6118095e+01, 2.3841855e-07, 2.3841855e-07]),
    "bce": (lambda: L.binary_crossentropy(BIN_T, BIN_P), [0.16425204, 0.47080427, 0.60198647]),
    "bce_logits": (lambda: L.binary_crossentropy(BIN_T, BIN_L, from_logits=True),
                   [0.22009484, 0.91421616, 0.85087436]),
    "bce_smoothing": (lambda: L.binary_crossentropy(BIN_T, BIN_P, label_smoothing=0.2),
                      [0.34342793, 0.52202946, 1.3567406]),
}

CLASS_CASES = {
    "mse": (lambda: L.MeanSquaredError()(YT_REG, YP_REG), 1.0033333),
    "mse_sum_weighted": (lambda: L.MeanSquaredError(reduction="sum")(
        YT_REG, YP_REG, sample_weight=np.array([0.5, 2.0], np.float32)), 3.1733334),
    "mse_none": (lambda: L.MeanSquaredError(reduction="none")(YT_REG, YP_REG),
                 [0.56, 1.4466667]),
    "mse_auto": (lambda: L.MeanSquaredError(reduction="auto")(YT_REG, YP_REG), 1.0033333),
    "mse_mean_with_sample_weight": (lambda: L.MeanSquaredError(
        reduction="mean_with_sample_weight")(YT_REG, YP_REG, sample_weight=[0.5, 2.0]),
        1.2693334),
    "mae_column_weights": (lambda: L.MeanAbsoluteError()(
        YT_REG, YP_REG, sample_weight=np.array([[1.5], [0.5]], np.float32)), 0.73333335),
    "scce": (lambda: L.SparseCategoricalCrossentropy()(SPARSE, PROBS), 0.52021587),
    "scce_column_labels": (lambda: L.SparseCategoricalCrossentropy(from_logits=True)(
        SPARSE[:, None], LOGITS), 3.0540092),
    "scce_weighted": (lambda: L.SparseCategoricalCrossentropy(from_logits=True)(
        SPARSE, LOGITS, sample_weight=np.array([1., 2., 0.], np.float32)), 1.348218),
    "scce_ignore_class": (lambda: L.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=2)(SPARSE, LOGITS), 1.0714912),
    "cce": (lambda: L.CategoricalCrossentropy()(ONEHOT, PROBS), 0.52021593),
    "cce_logits_smoothing": (lambda: L.CategoricalCrossentropy(
        from_logits=True, label_smoothing=0.2)(ONEHOT, LOGITS), 2.9273427),
    "bce": (lambda: L.BinaryCrossentropy()(BIN_T, BIN_P), 0.41234758),
    "bce_logits_none": (lambda: L.BinaryCrossentropy(from_logits=True, reduction="none")(
        BIN_T, BIN_L), [0.22009484, 0.91421616, 0.85087436]),
    "bce_labels_vector": (lambda: L.BinaryCrossentropy()(
        np.array([1., 0., 1., 0.], np.float32),
        np.array([[0.9], [0.2], [0.6], [0.4]], np.float32)), 0.3375388),
    "huber": (lambda: L.Huber(delta=0.8)(YT_REG, YP_REG), 0.37833333),
    "kld": (lambda: L.KLDivergence()(ONEHOT * 0.8 + 0.05, PROBS), 0.17432205),
    "msle": (lambda: L.MeanSquaredLogarithmicError()(YT_POS, YP_POS), 0.02747998),
    "hinge": (lambda: L.Hinge()(YT_HINGE, YP_HINGE), 1.3333335),
}


@pytest.mark.parametrize("case", sorted(FUNCTION_CASES))
def test_loss_functions_match_tf(case):
    call, expected = FUNCTION_CASES[case]
    result = call()
    assert result.dtype == tf.float32
    np.testing.assert_allclose(result.numpy(), np.asarray(expected, np.float32), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("case", sorted(CLASS_CASES))
def test_loss_classes_match_tf(case):
    call, expected = CLASS_CASES[case]
    result = call()
    assert result.dtype == tf.float32
    assert result.shape == np.shape(expected)
    np.testing.assert_allclose(result.numpy(), np.asarray(expected, np.float32), rtol=1e-5)


# ---- NumPy references -------------------------------------------------------------------------
EPS = 1e-7


def np_log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def np_cce(t, p):
    p = np.clip(p / p.sum(axis=-1, keepdims=True), EPS, 1 - EPS)
    return -(t * np.log(p)).sum(axis=-1)


def np_cce_logits(t, logits):
    return -(t * np_log_softmax(logits)).sum(axis=-1)


def np_scce(labels, p):
    log_p = np_log_softmax(np.log(np.clip(p, EPS, 1 - EPS)))
    return -np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]


def np_scce_logits(labels, logits):
    return -np.take_along_axis(np_log_softmax(logits), labels[..., None], axis=-1)[..., 0]


def np_bce(t, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean(axis=-1)


def np_bce_logits(t, x):
    return (np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))).mean(axis=-1)


def np_huber(t, p, delta=1.0):
    err = np.abs(p - t)
    return np.where(err <= delta, 0.5 * err ** 2, delta * err - 0.5 * delta ** 2).mean(axis=-1)


def np_kld(t, p):
    t, p = np.clip(t, EPS, 1), np.clip(p, EPS, 1)
    return (t * np.log(t / p)).sum(axis=-1)


@st.composite
def classification(draw, min_value=0.01, max_value=1.0):
    """(batch shape, classes, labels, one-hot, predictions) with predictions in the range."""
    batch = draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=4))
    classes = draw(st.integers(2, 5))
    labels = draw(hnp.arrays(np.int64, batch, elements=st.integers(0, classes - 1)))
    preds = draw(hnp.arrays(np.float64, batch + (classes,),
                            elements=st.floats(min_value, max_value)))
    return labels, np.eye(classes)[labels], preds


@given(classification())
def test_categorical_crossentropies_match_numpy(data):
    labels, onehot, probs = data
    np.testing.assert_allclose(L.categorical_crossentropy(onehot, probs).numpy(),
                               np_cce(onehot, probs), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(L.sparse_categorical_crossentropy(labels, probs).numpy(),
                               np_scce(labels, probs), rtol=1e-10, atol=1e-12)


@given(classification(min_value=-20.0, max_value=20.0))
def test_crossentropies_from_logits_match_numpy(data):
    labels, onehot, logits = data
    np.testing.assert_allclose(
        L.categorical_crossentropy(onehot, logits, from_logits=True).numpy(),
        np_cce_logits(onehot, logits), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        L.sparse_categorical_crossentropy(labels, logits, from_logits=True).numpy(),
        np_scce_logits(labels, logits), rtol=1e-10, atol=1e-12)


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4).flatmap(
    lambda shape: st.tuples(
        hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 1.0])),
        hnp.arrays(np.float64, shape, elements=st.floats(-30.0, 30.0)))))
def test_binary_crossentropy_matches_numpy(data):
    labels, logits = data
    probs = 1 / (1 + np.exp(-logits))
    np.testing.assert_allclose(L.binary_crossentropy(labels, probs).numpy(),
                               np_bce(labels, probs), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(L.binary_crossentropy(labels, logits, from_logits=True).numpy(),
                               np_bce_logits(labels, logits), rtol=1e-10, atol=1e-12)


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4).flatmap(
    lambda shape: st.tuples(hnp.arrays(np.float64, shape, elements=st.floats(-5.0, 5.0)),
                            hnp.arrays(np.float64, shape, elements=st.floats(-5.0, 5.0)))))
def test_regression_losses_match_numpy(data):
    y_true, y_pred = data
    np.testing.assert_allclose(L.mse(y_true, y_pred).numpy(),
                               ((y_true - y_pred) ** 2).mean(axis=-1), rtol=1e-12)
    np.testing.assert_allclose(L.mae(y_true, y_pred).numpy(),
                               np.abs(y_true - y_pred).mean(axis=-1), rtol=1e-12)
    np.testing.assert_allclose(L.huber(y_true, y_pred, delta=1.5).numpy(),
                               np_huber(y_true, y_pred, 1.5), rtol=1e-12)
    np.testing.assert_allclose(L.log_cosh(y_true, y_pred).numpy(),
                               np.log(np.cosh(y_pred - y_true)).mean(axis=-1), rtol=1e-9,
                               atol=1e-12)


@given(st.integers(1, 4), st.integers(1, 3), st.sampled_from(
    ["sum_over_batch_size", "sum", "none", "auto"]), st.booleans())
def test_reductions_and_weights_match_numpy(batch, width, reduction, weighted):
    rng = np.random.default_rng(batch * 10 + width)
    y_true, y_pred = rng.normal(size=(2, batch, width))
    weights = rng.uniform(0, 2, size=batch) if weighted else None
    result = L.MeanSquaredError(reduction=reduction, dtype="float64")(y_true, y_pred,
                                                                      sample_weight=weights)
    per_sample = ((y_true - y_pred) ** 2).mean(axis=-1) * (1 if weights is None else weights)
    expected = {"none": per_sample, "sum": per_sample.sum()}.get(reduction,
                                                                 per_sample.sum() / batch)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-12)


# ---- gradients --------------------------------------------------------------------------------
RNG = np.random.default_rng(7)
G_PROBS = RNG.uniform(0.05, 1.0, size=(3, 4))
G_ONEHOT = np.eye(4)[[0, 3, 1]]
G_LOGITS = RNG.normal(size=(3, 4))
G_LABELS = np.array([0, 3, 1])
G_BIN_T = RNG.integers(0, 2, size=(3, 2)).astype(np.float64)
G_BIN_P = RNG.uniform(0.05, 0.95, size=(3, 2))
G_A, G_B = RNG.normal(size=(2, 3, 2))


def test_categorical_crossentropy_gradients():
    check_gradients(lambda t, p: L.categorical_crossentropy(t, p), np_cce,
                    [G_ONEHOT, G_PROBS])
    check_gradients(lambda t, x: L.categorical_crossentropy(t, x, from_logits=True),
                    np_cce_logits, [G_ONEHOT, G_LOGITS])


def test_sparse_categorical_crossentropy_gradients():
    labels = tf.constant(G_LABELS)
    check_gradients(lambda p: L.sparse_categorical_crossentropy(labels, p),
                    lambda p: np_scce(G_LABELS, p), [G_PROBS])
    check_gradients(lambda x: L.sparse_categorical_crossentropy(labels, x, from_logits=True),
                    lambda x: np_scce_logits(G_LABELS, x), [G_LOGITS])


def test_binary_crossentropy_gradients():
    check_gradients(lambda p: L.binary_crossentropy(tf.constant(G_BIN_T), p),
                    lambda p: np_bce(G_BIN_T, p), [G_BIN_P])
    check_gradients(lambda x: L.binary_crossentropy(tf.constant(G_BIN_T), x, from_logits=True),
                    lambda x: np_bce_logits(G_BIN_T, x), [G_A])


def test_regression_loss_gradients():
    check_gradients(L.mse, lambda t, p: ((t - p) ** 2).mean(axis=-1), [G_A, G_B])
    check_gradients(L.mae, lambda t, p: np.abs(t - p).mean(axis=-1), [G_A, G_B])
    check_gradients(lambda t, p: L.huber(t, p, delta=0.7), lambda t, p: np_huber(t, p, 0.7),
                    [G_A, G_B])
    check_gradients(L.kld, np_kld, [G_PROBS, G_PROBS[::-1].copy()])


def test_loss_object_gradient_with_sample_weight():
    loss = L.SparseCategoricalCrossentropy(from_logits=True, dtype="float64")
    weights = np.array([0.5, 1.0, 2.0])
    check_gradients(lambda x: loss(G_LABELS, x, sample_weight=weights),
                    lambda x: (np_scce_logits(G_LABELS, x) * weights).mean(), [G_LOGITS])


# ---- behaviour --------------------------------------------------------------------------------
def test_loss_objects_cast_inputs_to_their_dtype():
    y_true, y_pred = np.array([1.0, 2.0]), np.array([1.5, 2.0])   # float64 arrays
    assert L.MeanSquaredError()(y_true, y_pred).dtype == tf.float32
    assert L.MeanSquaredError(dtype="float64")(y_true, y_pred).dtype == tf.float64
    assert L.mse(y_true, y_pred).dtype == tf.float64   # functions keep y_pred's dtype
    assert L.MeanSquaredError().dtype == "float32"


def test_rank_one_targets_against_column_predictions():
    # y_true [batch] and y_pred [batch, 1] are aligned, not broadcast to [batch, batch].
    result = L.MeanSquaredError()(np.array([1., 2, 3]), np.array([[1.], [2.5], [2]]))
    np.testing.assert_allclose(result.numpy(), 0.41666666, rtol=1e-6)


def test_empty_batch_reduces_to_empty():
    assert L.MeanSquaredError()(np.zeros((0, 2), np.float32),
                                np.zeros((0, 2), np.float32)).shape == (0,)


def test_names_configs_and_reduction_constants():
    assert L.MeanSquaredError().name == "mean_squared_error"
    assert L.Huber().name == "huber_loss"
    assert L.KLDivergence().name == "kl_divergence"
    assert L.SparseCategoricalCrossentropy(name="xent").name == "xent"
    assert L.CategoricalCrossentropy(from_logits=True).get_config() == {
        "name": "categorical_crossentropy", "reduction": "sum_over_batch_size",
        "from_logits": True, "label_smoothing": 0.0, "axis": -1}
    assert L.Reduction.AUTO == "auto" and L.Reduction.SUM_OVER_BATCH_SIZE in L.Reduction.all()
    assert L.MeanSquaredError(reduction=L.Reduction.AUTO).reduction == "sum_over_batch_size"
    copy = L.BinaryCrossentropy.from_config(L.BinaryCrossentropy(
        from_logits=True, label_smoothing=0.1).get_config())
    assert copy.from_logits and copy.label_smoothing == 0.1


def test_get_resolves_names_classes_and_configs():
    assert L.get("mse") is L.mean_squared_error
    assert L.get("sparse_categorical_crossentropy") is L.sparse_categorical_crossentropy
    assert isinstance(L.get("MeanSquaredError"), L.MeanSquaredError)
    loss = L.get({"class_name": "CategoricalCrossentropy", "config": {"from_logits": True}})
    assert isinstance(loss, L.CategoricalCrossentropy) and loss.from_logits
    assert L.get(None) is None
    assert L.get(L.hinge) is L.hinge
    assert L.deserialize(L.serialize(L.Huber(delta=2.0))).fn is L.huber
    with pytest.raises(ValueError, match="Could not interpret loss identifier: 'nope'"):
        L.get("nope")
    with pytest.raises(ValueError, match="Could not interpret loss identifier"):
        L.get(3)


def test_subclassed_loss_is_weighted_and_reduced():
    class ScaledAbsolute(L.Loss):
        def call(self, y_true, y_pred):
            return 2.0 * tf.reduce_mean(tf.abs(y_true - y_pred), axis=-1)

    loss = ScaledAbsolute()
    assert loss.name == "scaled_absolute"
    value = loss([[1., 2.], [3., 4.]], [[1., 1.], [2., 2.]], sample_weight=[1., 3.])
    np.testing.assert_allclose(value.numpy(), (1.0 * 1 + 3.0 * 3) / 2)


def test_notebook_step_sparse_crossentropy_of_softmax():
    """The TF2 tutorial's train step: softmax probabilities, keyword arguments, reduce_mean."""
    logits = tf.constant(LOGITS)
    loss = tf.reduce_mean(L.sparse_categorical_crossentropy(y_true=SPARSE,
                                                            y_pred=tf.nn.softmax(logits)))
    np.testing.assert_allclose(loss.numpy(), np.mean([0.24131133, 1.9016712, 7.019045]),
                               rtol=1e-5)


def test_loss_inside_tf_function_matches_eager_and_trains():
    loss_fn = L.SparseCategoricalCrossentropy(from_logits=True)
    w = tf.Variable(np.zeros((3, 3), np.float32))

    @tf.function
    def step(x, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, tf.matmul(x, w))
        w.assign_sub(0.5 * tape.gradient(loss, w))
        return loss

    x = tf.constant(LOGITS)
    eager = loss_fn(SPARSE, tf.matmul(x, w))
    losses = [float(step(x, tf.constant(SPARSE))) for _ in range(3)]
    np.testing.assert_allclose(losses[0], eager.numpy(), rtol=1e-6)
    np.testing.assert_allclose(losses[0], np.log(3.0), rtol=1e-6)
    assert losses[2] < losses[1] < losses[0]


# ---- errors -----------------------------------------------------------------------------------
def test_shape_mismatch_errors_name_the_loss_and_shapes():
    with pytest.raises(ValueError, match=r"categorical_crossentropy: .*y_true.shape=\(2, 3\) "
                                         r"and y_pred.shape=\(2, 4\)"):
        L.categorical_crossentropy(np.ones((2, 3)), np.ones((2, 4)) / 4)
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy: .*y_true.shape="
                                         r"\(3,\) and y_pred.shape=\(2, 3\).*one-hot"):
        L.sparse_categorical_crossentropy(np.array([0, 1, 1]), np.ones((2, 3)) / 3)
    with pytest.raises(ValueError, match=r"binary_crossentropy: .*\(4,\).*\(4, 2\)"):
        L.binary_crossentropy(np.ones(4), np.ones((4, 2)) / 2)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"mean_squared_error: .*\(2, 3\) and \(2, 4\)"):
        L.MeanSquaredError()(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"sample_weight of shape \(2, 3\).*\(2,\)"):
        L.MeanSquaredError()(YT_REG, YP_REG, sample_weight=np.ones((2, 3)))


def test_out_of_range_sparse_labels_are_rejected():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"sparse_categorical_crossentropy: y_true\[1\] = 5 .*\[0, 3\)"):
        L.sparse_categorical_crossentropy(np.array([0, 5]), np.ones((2, 3)) / 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"y_true\[0\] = -1"):
        L.SparseCategoricalCrossentropy(from_logits=True)(np.array([-1, 0]), np.ones((2, 3)))

    @tf.function
    def traced(labels, logits):
        return L.sparse_categorical_crossentropy(labels, logits, from_logits=True)

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"labels\[1\] = 7 is not in"):
        traced(tf.constant([0, 7]), tf.constant(np.ones((2, 3), np.float32)))


def test_invalid_arguments():
    with pytest.raises(ValueError, match="Invalid value for argument `reduction`: 'avg'"):
        L.MeanSquaredError(reduction="avg")
    with pytest.raises(ValueError, match="only axis=-1"):
        L.sparse_categorical_crossentropy(SPARSE, PROBS, axis=0)
    with pytest.raises(TypeError):
        L.CategoricalCrossentropy(True, 0.0, -1, "sum", "name", None, "extra")
