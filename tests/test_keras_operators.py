"""Python operators on the KerasTensors of functional models, as in Keras 3."""
import numpy as np
import pytest

import hybridtf as tf


def _model():
    a = tf.keras.Input((3,))
    b = tf.keras.Input((3,))
    h = tf.keras.layers.Dense(3, kernel_initializer="ones", use_bias=False)(a)
    out = (-(h + b) * 2.0 - 1.0) / (b ** 2 + 1.0) + abs(2.0 - a) % 10.0
    return tf.keras.Model([a, b], out)


def _expected(a, b):
    h = a.sum(1, keepdims=True).repeat(3, 1)
    return (-(h + b) * 2.0 - 1.0) / (b ** 2 + 1.0) + np.abs(2.0 - a) % 10.0


def test_operators_build_layers_that_compute_like_numpy():
    model = _model()
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    b = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(model([a, b]).numpy(), _expected(a, b), rtol=1e-6)
    names = {type(layer).__name__ for layer in model.layers}
    assert "OperatorLayer" in names


def test_a_model_with_operators_saves_and_loads(tmp_path):
    model = _model()
    a = np.ones((2, 3), np.float32)
    b = np.full((2, 3), 0.5, np.float32)
    model.save(tmp_path / "m.keras")
    loaded = tf.keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded([a, b]).numpy(), model([a, b]).numpy(), rtol=1e-6)


def test_a_matrix_product_with_an_array_computes_and_refuses_to_save_it(tmp_path):
    x = tf.keras.Input((3,))
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    model = tf.keras.Model(x, x @ w)
    data = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(model(data).numpy(), data @ w)
    with pytest.raises(TypeError, match="cannot be saved"):
        model.save(tmp_path / "m.keras")


def test_a_model_with_operators_trains():
    x = tf.keras.Input((4,))
    h = tf.keras.layers.Dense(4)(x)
    model = tf.keras.Model(x, tf.keras.layers.Dense(1)(h + x))
    model.compile(optimizer="sgd", loss="mse")
    data = np.random.default_rng(0).random((32, 4)).astype(np.float32)
    before = model.evaluate(data, data.sum(1), verbose=0)
    model.fit(data, data.sum(1), epochs=5, verbose=0)
    assert model.evaluate(data, data.sum(1), verbose=0) < before


def test_an_unknown_operator_is_a_clear_error():
    from hybridtf.keras.layers.operator_layer import OperatorLayer
    with pytest.raises(ValueError, match="unknown operator 'xor'"):
        OperatorLayer("xor")
