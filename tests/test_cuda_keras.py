"""Keras on the GPU (Numba's CUDA simulator stands in for one): the seed CNN's layers -- Conv2D,
MaxPooling2D, Flatten, Dense, Dropout -- trained by ``fit`` under ``tf.device('/GPU:0')`` give
the CPU's weights and history, on a model small enough for the simulator."""
import numpy as np

import hybridtf as tf
from hybridtf import keras

GPU_NAME = "/job:localhost/replica:0/task:0/device:GPU:0"


def _seed_cnn():
    # The seed CNN's architecture, narrowed: 4x4 images, 2 and 3 filters, 8 hidden units (the
    # simulated GPU runs a Python thread per element).
    return keras.Sequential([
        keras.Input((4, 4, 1)),
        keras.layers.Conv2D(2, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(3, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(8, activation="relu"),
        keras.layers.Dropout(0.4),
        keras.layers.Dense(4),
    ])


def _fit(device, images, labels):
    tf.keras.utils.set_random_seed(7)   # the same initial weights and dropout masks
    with tf.device(device):
        model = _seed_cnn()
        model.compile(optimizer=keras.optimizers.Adam(0.01),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        history = model.fit(images, labels, batch_size=4, epochs=2, verbose=0, shuffle=False)
        predictions = model.predict(images, verbose=0)
    return model, history.history, predictions


def test_fit_on_the_gpu_gives_the_cpu_weights_and_history(gpu):
    rng = np.random.default_rng(3)
    images = rng.standard_normal((4, 4, 4, 1)).astype(np.float32)
    labels = rng.integers(0, 4, 4)
    gpu_model, gpu_history, gpu_predictions = _fit("/GPU:0", images, labels)
    cpu_model, cpu_history, cpu_predictions = _fit("/CPU:0", images, labels)
    assert all(w.device == GPU_NAME for w in gpu_model.weights)
    assert all(w.device != GPU_NAME for w in cpu_model.weights)
    for gw, cw in zip(gpu_model.get_weights(), cpu_model.get_weights()):
        np.testing.assert_allclose(gw, cw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gpu_history["loss"], cpu_history["loss"], rtol=1e-4)
    assert gpu_history["accuracy"] == cpu_history["accuracy"]
    np.testing.assert_allclose(gpu_predictions, cpu_predictions, rtol=1e-4, atol=1e-5)
    assert np.all(np.isfinite(gpu_history["loss"])) and gpu_history["loss"][0] > 0
