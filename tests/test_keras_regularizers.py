"""``keras.regularizers`` and ``keras.constraints``: values against NumPy and against TF 2.21
(Keras 3.15.1), how layers take them (objects, names, configs), their penalties in
``model.losses`` and in the training loss, and constraints applied after each update.

TF's numbers were recorded with ``keras.regularizers.OrthogonalRegularizer(f, mode)(t)`` and
``keras.constraints.<C>(...)(t)`` on ``t = keras.ops.convert_to_tensor(W)`` (a tensor: for a
NumPy array Keras 3.15 normalizes the rows in "columns" mode, a bug).
"""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import constraints, regularizers

W = np.array([[1., 2., 0.5], [0.3, -1., 2.], [0.0, 1., 1.]], np.float32)
W2 = np.array([[1., 2.], [0.5, -1.], [2., 0.25], [1, 1]], np.float32)


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _np_orthogonal(x, factor):
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    product = np.abs(unit @ unit.T) * (1 - np.eye(len(x)))
    pairs = len(x) * (len(x) - 1) / 2
    return factor * 0.5 * product.sum() / pairs


# ---- regularizers ----------------------------------------------------------------------------
def test_penalties_match_numpy():
    x = np.random.RandomState(0).randn(4, 3).astype(np.float64)
    np.testing.assert_allclose(float(regularizers.L1(0.3)(x)), 0.3 * np.abs(x).sum(), rtol=1e-6)
    np.testing.assert_allclose(float(regularizers.L2(0.1)(x)), 0.1 * (x ** 2).sum(), rtol=1e-6)
    np.testing.assert_allclose(float(regularizers.L1L2(0.2, 0.05)(x)),
                               0.2 * np.abs(x).sum() + 0.05 * (x ** 2).sum(), rtol=1e-6)
    assert float(regularizers.L1L2()(x)) == 0.0
    assert regularizers.L2(0.1)(tf.constant(x)).dtype == tf.float64


def test_keras_documented_values():
    # Keras's docstring: L2(2.)(ones(5, 5)) == 50.
    assert float(regularizers.L2(2.0)(np.ones((5, 5), np.float32))) == 50.0


@pytest.mark.parametrize("matrix,factor,mode,tf_value", [
    (W, 0.1, "rows", 0.040678299963474274), (W, 0.1, "columns", 0.03748617321252823),
    (W2, 0.2, "rows", 0.11805944889783859), (W2, 0.2, "columns", 0.09747322648763657)])
def test_orthogonal_regularizer_matches_tf_and_numpy(matrix, factor, mode, tf_value):
    value = float(regularizers.OrthogonalRegularizer(factor, mode)(tf.constant(matrix)))
    np.testing.assert_allclose(value, tf_value, rtol=1e-5)
    reference = _np_orthogonal(matrix.astype(np.float64) if mode == "rows"
                               else matrix.T.astype(np.float64), factor)
    np.testing.assert_allclose(value, reference, rtol=1e-5)


def test_orthogonal_regularizer_rejects_bad_input():
    with pytest.raises(ValueError, match="rank 2"):
        regularizers.OrthogonalRegularizer()(np.ones((2, 2, 2), np.float32))
    with pytest.raises(ValueError, match="mode"):
        regularizers.OrthogonalRegularizer(mode="diagonal")


def test_factor_checks():
    for bad in (-1.0, float("nan"), "0.1", True):
        with pytest.raises(ValueError, match="non-negative"):
            regularizers.L2(bad)


def test_get_by_name_class_and_config():
    assert isinstance(regularizers.get("l1"), regularizers.L1)
    assert regularizers.get("l2").get_config() == {"l2": 0.01}
    assert regularizers.get("l1_l2").get_config() == {"l1": 0.01, "l2": 0.01}   # Keras's docs
    assert regularizers.get("L1L2").get_config() == {"l1": 0.0, "l2": 0.0}      # Keras 3's code
    assert isinstance(regularizers.get("orthogonal_regularizer"),
                      regularizers.OrthogonalRegularizer)
    assert regularizers.get(regularizers.L2).get_config() == {"l2": 0.01}
    assert regularizers.get({"class_name": "L2", "config": {"l2": 0.3}}).l2 == 0.3
    assert regularizers.l1_l2(l1=0.1).get_config() == {"l1": 0.1, "l2": 0.0}
    assert regularizers.get(None) is None
    with pytest.raises(ValueError, match="Could not interpret regularizer"):
        regularizers.get("l3")


def test_serialize_as_keras_3_does():
    # Recorded from keras.regularizers.serialize in TF 2.21.
    assert regularizers.serialize(regularizers.L2(0.5)) == {
        "module": "keras.regularizers", "class_name": "L2", "config": {"l2": 0.5},
        "registered_name": None}
    assert regularizers.serialize(regularizers.L1L2(l1=0.1)) == {
        "module": "keras.regularizers", "class_name": "L1L2",
        "config": {"l1": 0.1, "l2": 0.0}, "registered_name": None}
    restored = regularizers.deserialize(regularizers.serialize(regularizers.L1L2(0.1, 0.2)))
    assert restored.get_config() == {"l1": 0.1, "l2": 0.2}


def test_custom_regularizer_registered_round_trip():
    @keras.utils.register_keras_serializable(package="test_reg")
    class Sum(regularizers.Regularizer):
        def __init__(self, a=1.0):
            self.a = a

        def __call__(self, x):
            return self.a * tf.reduce_sum(x)

        def get_config(self):
            return {"a": self.a}

    config = regularizers.serialize(Sum(2.0))
    assert config["registered_name"] == "test_reg>Sum" and config["module"] is None
    assert regularizers.deserialize(config).a == 2.0


def test_layer_penalties_in_losses_keras_docstring_example():
    # Keras's Regularizer docstring: kernel L1 0.25 and activity L2 5.0 (divided by batch).
    layer = keras.layers.Dense(5, kernel_initializer="ones",
                               kernel_regularizer=regularizers.L1(0.01),
                               activity_regularizer=regularizers.L2(0.01))
    layer(np.ones((5, 5), np.float32) * 2.0)
    np.testing.assert_allclose(sorted(float(v) for v in layer.losses), [0.25, 5.0], rtol=1e-6)


@pytest.mark.parametrize("name,expected", [("l1", lambda k: 0.01 * np.abs(k).sum()),
                                           ("l2", lambda k: 0.01 * (k ** 2).sum()),
                                           ("l1_l2", lambda k: 0.01 * (np.abs(k).sum()
                                                                       + (k ** 2).sum()))])
def test_layers_take_regularizers_by_name(name, expected):
    for layer, shape in ((keras.layers.Dense(3, kernel_regularizer=name), (2, 4)),
                         (keras.layers.Conv2D(2, 2, kernel_regularizer=name), (1, 4, 4, 1))):
        layer(np.zeros(shape, np.float32))
        kernel = layer.kernel.numpy()
        assert len(layer.losses) == 1
        np.testing.assert_allclose(float(layer.losses[0]), expected(kernel), rtol=1e-5)


def test_regularizer_config_round_trip():
    layer = keras.layers.Dense(3, kernel_regularizer=regularizers.L1L2(0.1, 0.2),
                               bias_regularizer="l2", activity_regularizer="l1",
                               kernel_constraint="max_norm", bias_constraint=constraints.NonNeg())
    config = layer.get_config()
    assert config["kernel_regularizer"]["class_name"] == "L1L2"
    assert config["kernel_constraint"] == {"module": "keras.constraints", "class_name": "MaxNorm",
                                           "config": {"max_value": 2, "axis": 0},
                                           "registered_name": None}
    clone = keras.layers.Dense.from_config(config)
    assert clone.kernel_regularizer.get_config() == {"l1": 0.1, "l2": 0.2}
    assert isinstance(clone.bias_constraint, constraints.NonNeg)
    assert clone.activity_regularizer.get_config() == {"l1": 0.01}


def _penalty_model(regularizer):
    model = keras.Sequential([keras.Input((3,)),
                              keras.layers.Dense(2, kernel_regularizer=regularizer,
                                                 kernel_initializer="ones", name="d")])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    return model


def test_fit_and_compute_loss_add_the_penalties():
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = np.ones((4, 2), np.float32)
    model = _penalty_model(regularizers.L2(0.5))
    kernel = model.get_layer("d").kernel.numpy()
    penalty = 0.5 * (kernel ** 2).sum()
    mse = np.mean((x @ kernel - y) ** 2)
    assert len(model.losses) == 1
    np.testing.assert_allclose(float(model.losses[0]), penalty, rtol=1e-6)
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"][0], mse + penalty, rtol=1e-5)
    loss = model.compute_loss(x, y, model(x))
    np.testing.assert_allclose(float(loss), mse + penalty, rtol=1e-5)


def test_penalty_gradient_moves_weights():
    x = np.zeros((2, 3), np.float32)        # the data term has zero gradient: only L2 acts
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(
        1, kernel_initializer="ones", use_bias=False, kernel_regularizer=regularizers.L2(0.5))])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.fit(x, np.zeros((2, 1), np.float32), batch_size=2, epochs=1, verbose=0)
    # d(0.5 * k^2)/dk = k = 1, so k <- 1 - 0.1 * 1.
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), np.full((3, 1), 0.9), rtol=1e-6)


# ---- constraints -----------------------------------------------------------------------------
# Recorded from keras.constraints in TF 2.21 on W.
TF_CONSTRAINED = {
    "MaxNorm(1.5)": [[1.0, 1.2247450351715088, 0.32732701301574707],
                     [0.30000001192092896, -0.6123719811439514, 1.3093069791793823],
                     [0.0, 0.6123719811439514, 0.6546540260314941]],
    "MinMaxNorm(0.5, 1.0, rate=0.7)": [[0.9704779982566833, 1.1715480089187622,
                                        0.30275198817253113],
                                       [0.2911440134048462, -0.5857740044593811,
                                        1.2110099792480469],
                                       [0.0, 0.5857740044593811, 0.6055049896240234]],
    "NonNeg()": [[1.0, 2.0, 0.5], [0.30000001192092896, 0.0, 2.0], [0.0, 1.0, 1.0]],
    "UnitNorm()": [[0.9578260183334351, 0.8164970278739929, 0.21821799874305725],
                   [0.2873480021953583, -0.40824800729751587, 0.872871994972229],
                   [0.0, 0.40824800729751587, 0.4364359974861145]],
    "MaxNorm(1.0, axis=1)": [[0.4364359974861145, 0.872871994972229, 0.21821799874305725],
                             [0.13297300040721893, -0.44324201345443726, 0.8864840269088745],
                             [0.0, 0.7071070075035095, 0.7071070075035095]],
}


@pytest.mark.parametrize("expression", sorted(TF_CONSTRAINED))
def test_constraints_match_tf(expression):
    constraint = eval(f"constraints.{expression}")    # noqa: S307 - the table's own text
    np.testing.assert_allclose(constraint(tf.constant(W)).numpy(), TF_CONSTRAINED[expression],
                               rtol=1e-5, atol=1e-7)


def test_constraints_match_numpy_on_conv_kernels():
    k = np.random.RandomState(1).randn(2, 2, 3, 4)
    norms = np.sqrt((k ** 2).sum(axis=(0, 1, 2), keepdims=True))
    got = constraints.MaxNorm(0.5, axis=[0, 1, 2])(tf.constant(k)).numpy()
    np.testing.assert_allclose(got, k * np.clip(norms, 0, 0.5) / (1e-7 + norms), rtol=1e-6)
    got = constraints.UnitNorm(axis=[0, 1, 2])(tf.constant(k)).numpy()
    np.testing.assert_allclose(np.sqrt((got ** 2).sum(axis=(0, 1, 2))), np.ones(4), rtol=1e-6)


def test_constraint_names_and_configs():
    for name, cls in (("max_norm", constraints.MaxNorm), ("non_neg", constraints.NonNeg),
                      ("unit_norm", constraints.UnitNorm),
                      ("min_max_norm", constraints.MinMaxNorm), ("MaxNorm", constraints.MaxNorm)):
        assert type(constraints.get(name)) is cls
    assert constraints.serialize(constraints.MaxNorm(3)) == {
        "module": "keras.constraints", "class_name": "MaxNorm",
        "config": {"max_value": 3, "axis": 0}, "registered_name": None}
    assert constraints.deserialize(constraints.serialize(constraints.MinMaxNorm(
        0.1, 0.9, 0.5, 1))).get_config() == {"min_value": 0.1, "max_value": 0.9, "rate": 0.5,
                                             "axis": 1}
    with pytest.raises(ValueError, match="Could not interpret constraint"):
        constraints.get("nonneg")
    with pytest.raises(ValueError, match="min_value"):
        constraints.MinMaxNorm(2.0, 1.0)


def test_optimizer_applies_the_constraint_after_each_update():
    layer = keras.layers.Dense(2, kernel_initializer="ones", kernel_constraint="non_neg",
                               bias_constraint=constraints.MaxNorm(0.5))
    layer(np.zeros((1, 3), np.float32))
    assert isinstance(layer.kernel.constraint, constraints.NonNeg)
    grads = [np.full((3, 2), 5.0, np.float32), np.full((2,), -10.0, np.float32)]
    keras.optimizers.SGD(1.0).apply(grads, [layer.kernel, layer.bias])
    np.testing.assert_array_equal(layer.kernel.numpy(), np.zeros((3, 2)))   # 1 - 5 -> 0
    # The bias [10, 10] has norm sqrt(200) along axis 0: rescaled to norm 0.5.
    np.testing.assert_allclose(layer.bias.numpy(), [10 * 0.5 / (1e-7 + np.sqrt(200))] * 2,
                               rtol=1e-6)


def test_fit_keeps_constrained_weights_in_range():
    rng = np.random.RandomState(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(
        3, kernel_constraint=constraints.UnitNorm(axis=0))])
    model.compile(keras.optimizers.SGD(0.5), "mse")
    model.fit(rng.randn(8, 4).astype(np.float32), rng.randn(8, 3).astype(np.float32) * 10,
              batch_size=4, epochs=2, verbose=0)
    kernel = model.layers[0].kernel.numpy()
    np.testing.assert_allclose(np.sqrt((kernel ** 2).sum(axis=0)), np.ones(3), rtol=1e-5)
