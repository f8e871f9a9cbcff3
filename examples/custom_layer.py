"""A custom Keras layer in a subclassed model, trained with compile/fit, saved and reloaded.

Run: python examples/custom_layer.py
"""
import os
import tempfile

import numpy as np

import hybridtf as tf
from hybridtf import keras


class NoisyDense(keras.layers.Layer):
    """A dense layer that adds Gaussian noise to its inputs while training (a regularizer)."""

    def __init__(self, units, stddev=0.1, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.stddev = stddev

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="glorot_uniform", trainable=True)
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros",
                                    trainable=True)

    def call(self, inputs, training=None):
        if training:
            inputs = inputs + tf.random.normal(tf.shape(inputs), stddev=self.stddev)
        return tf.matmul(inputs, self.kernel) + self.bias

    def get_config(self):
        return {**super().get_config(), "units": self.units, "stddev": self.stddev}


class Classifier(keras.Model):
    def __init__(self, classes=3):
        super().__init__()
        self.hidden = NoisyDense(16, stddev=0.2)
        self.logits = keras.layers.Dense(classes)

    def call(self, inputs, training=False):
        return self.logits(tf.nn.relu(self.hidden(inputs, training=training)))


def blobs(n, seed):
    """Three Gaussian clusters in 2-D, one per class."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 3, size=n)
    centres = np.array([[0.0, 2.0], [-2.0, -1.0], [2.0, -1.0]])
    return (centres[labels] + rng.randn(n, 2) * 0.9).astype(np.float32), labels.astype(np.int32)


tf.random.set_seed(0)
x_train, y_train = blobs(600, seed=0)
x_test, y_test = blobs(200, seed=1)

model = Classifier()
model.compile(optimizer=keras.optimizers.Adam(0.02),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=8, validation_split=0.2, verbose=0)
print(f"NoisyDense: {len(model.hidden.trainable_weights)} trainable weights "
      f"{[tuple(w.shape.as_list()) for w in model.hidden.trainable_weights]}")
print(f"loss by epoch: {[round(v, 3) for v in history.history['loss']]}")
print(f"train accuracy: {history.history['accuracy'][-1]:.3f} "
      f"val accuracy: {history.history['val_accuracy'][-1]:.3f}")
test_loss, test_accuracy = model.evaluate(x_test, y_test, verbose=0)
print(f"test loss: {test_loss:.3f} test accuracy: {test_accuracy:.3f}")

with tempfile.TemporaryDirectory() as directory:
    path = os.path.join(directory, "classifier.weights.h5")
    model.save_weights(path)
    restored = Classifier()
    restored(x_test[:1])                     # create the weights, then load them
    restored.load_weights(path)
agrees = np.allclose(restored.predict(x_test, verbose=0), model.predict(x_test, verbose=0))
print(f"reloaded model agrees: {agrees}")
