"""Checks shared by the Keras layer tests: weight gradients against float64 finite
differences, and a save/reload round trip of a model through a ``.keras`` file."""
import numpy as np

import hybridtf as tf
from hybridtf import keras


def check_weight_and_input_gradients(layer, inputs, call_kwargs=None, separate_inputs=False,
                                     eps=1e-6, rtol=1e-5, atol=1e-7):
    """The tape's gradients of ``sum(layer(x) * w)`` with respect to the layer's trainable
    weights and ``inputs[0]`` match central finite differences (float64 layer).  Several
    inputs are passed as one list, or as separate arguments with ``separate_inputs``."""
    call_kwargs = call_kwargs or {}
    inputs = [np.asarray(a, np.float64) for a in inputs]

    def forward(arrays):
        if separate_inputs:
            return layer(*arrays, **call_kwargs)
        return layer(arrays[0] if len(arrays) == 1 else arrays, **call_kwargs)

    out = forward(inputs).numpy()
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=out.shape)
    x = tf.constant(inputs[0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = tf.reduce_sum(forward([x] + inputs[1:]) * weights)
    variables = layer.trainable_weights
    grads = tape.gradient(total, [x] + list(variables))

    def loss():
        return float(np.sum(forward(inputs).numpy() * weights))

    values = [inputs[0]] + [np.array(v.numpy(), dtype=np.float64) for v in variables]
    for k, (value, grad) in enumerate(zip(values, grads)):
        assert grad is not None, f"gradient {k} is None"
        numeric = np.zeros_like(value)
        flat, nflat = value.reshape(-1), numeric.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            results = []
            for delta in (eps, -eps):
                flat[j] = old + delta
                if k:
                    variables[k - 1].assign(value)
                results.append(loss())
            flat[j] = old
            if k:
                variables[k - 1].assign(value)
            nflat[j] = (results[0] - results[1]) / (2 * eps)
        what = variables[k - 1].name if k else "inputs"
        np.testing.assert_allclose(np.asarray(tf.convert_to_tensor(grad)), numeric, rtol=rtol,
                                   atol=atol, err_msg=f"gradient with respect to {what}")


def assert_model_round_trips(model, x, tmp_path, custom_objects=None):
    """``model.save`` to a ``.keras`` file and ``load_model`` give a model with the same
    config class names, weights and outputs."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "model.keras"
    expected = model(x).numpy()
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects=custom_objects)
    assert [type(layer).__name__ for layer in loaded.layers] == \
        [type(layer).__name__ for layer in model.layers]
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(loaded(x).numpy(), expected, rtol=1e-6, atol=1e-7)
    return loaded
