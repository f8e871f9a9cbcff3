"""Customizing ``fit`` as the Keras 3 guides "Customizing what happens in fit()" and "Writing a
training loop from scratch" do: overridden ``train_step`` / ``test_step`` / ``compute_loss``,
the compiled loss and metrics (``self.compute_loss``, ``self.metrics``), and metrics created
in ``__init__``.  Numbers marked TF 2.21 were recorded with TensorFlow 2.21 (Keras 3.15) on the
same weights and data."""
import warnings

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import layers


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def data():
    rs = np.random.RandomState(11)
    x = rs.randn(10, 4).astype("f")
    y = (x @ np.array([[0.5], [-1.0], [0.25], [2.0]], "f") + 0.3).astype("f")
    sample_weight = np.linspace(0.5, 2.0, 10).astype("f")
    kernel = rs.randn(4, 1).astype("f") * 0.3
    return x, y, sample_weight, kernel


def functional(cls, kernel):
    """``cls(inputs, outputs)``: one Dense unit with the given kernel and a zero bias."""
    inputs = keras.Input((4,))
    model = cls(inputs, layers.Dense(1, name="d")(inputs))
    model.get_layer("d").set_weights([kernel, np.zeros(1, "f")])
    return model


def rounded(history):
    return {key: [round(v, 6) for v in values] for key, values in history.history.items()}


def assert_history(history, expected):
    assert list(history.history) == list(expected)
    for key, values in expected.items():
        np.testing.assert_allclose(history.history[key], values, rtol=2e-5, err_msg=key)


# ---- the guide's first example: compute_loss and the metrics in self.metrics ---------------------
class GuideModel(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_guide_train_step_with_compute_loss_and_self_metrics_matches_tensorflow():
    x, y, _, kernel = data()
    model = functional(GuideModel, kernel)
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    assert model.metrics_names == ["loss", "compile_metrics"]
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    # The step returned {"loss": ..., "compile_metrics": {"mae": ...}}: flattened, sorted.
    assert_history(history, {"mae": [1.466618, 1.039349, 0.765201],
                             "loss": [3.745734, 1.745339, 0.943096]})            # TF 2.21
    # evaluate runs the default test_step with the compiled loss and metrics.
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=4, verbose=0),
                               [0.728956, 0.605079], rtol=2e-5)                  # TF 2.21
    predictions = model.predict(x, verbose=0)
    assert model.evaluate(x, y, batch_size=10, verbose=0, return_dict=True) == pytest.approx(
        {"loss": np.mean((predictions - y) ** 2), "mae": np.mean(np.abs(predictions - y))},
        rel=1e-5)


class LowLevel(keras.Model):
    """No compiled loss or metrics: a compile of its own, its metrics made in __init__."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")

    def compile(self, optimizer, loss_fn):
        super().compile(optimizer=optimizer)
        self.loss_fn = loss_fn

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.loss_fn(y, y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


def test_guide_lower_level_step_with_metrics_made_in_init_matches_tensorflow():
    x, y, _, kernel = data()
    model = functional(LowLevel, kernel)
    model.compile(keras.optimizers.SGD(0.05), keras.losses.MeanSquaredError())
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    # The metrics are reset at each epoch's start (they are in model.metrics).
    assert_history(history, {"loss": [3.745734, 1.745339, 0.943096],
                             "mae": [1.466618, 1.039349, 0.765201]})            # TF 2.21
    # Metrics are tracked as metrics, not as the model's weights.
    assert len(model.weights) == 2 and model.count_params() == 5
    assert model.loss_tracker.variables[0] not in model.non_trainable_weights


class Weighted(keras.Model):
    def train_step(self, data):
        if len(data) == 3:
            x, y, sample_weight = data
        else:
            sample_weight = None
            x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred, sample_weight=sample_weight)
        return {m.name: m.result() for m in self.metrics}


def test_guide_sample_weight_step_matches_tensorflow():
    x, y, sample_weight, kernel = data()
    model = functional(Weighted, kernel)
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    history = model.fit(x, y, sample_weight=sample_weight, batch_size=4, epochs=3,
                        shuffle=False, verbose=0)
    assert_history(history, {"mae": [1.518898, 1.029502, 0.738186],
                             "loss": [4.165192, 1.858302, 1.019197]})            # TF 2.21


class CustomTestStep(keras.Model):
    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        for metric in self.metrics:
            if metric.name != "loss":
                metric.update_state(y, y_pred)
            else:
                metric.update_state(loss)
        return {m.name: m.result() for m in self.metrics}


def test_guide_custom_test_step_matches_tensorflow():
    x, y, _, kernel = data()
    model = functional(CustomTestStep, kernel)
    model.compile(loss="mse", metrics=["mae"])
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=4, verbose=0),
                               [4.158951, 1.630398], rtol=2e-5)                  # TF 2.21


class OwnLoss(keras.Model):
    """compute_loss overridden (Keras 3's docstring example, without `training`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def compute_loss(self, x, y, y_pred, sample_weight):
        loss = tf.reduce_mean((y_pred - y) ** 2)
        self.loss_tracker.update_state(loss)
        return loss

    def reset_metrics(self):
        self.loss_tracker.reset_state()

    @property
    def metrics(self):
        return [self.loss_tracker]


def test_default_train_step_uses_an_overridden_compute_loss():
    x, y, _, kernel = data()
    model = functional(OwnLoss, kernel)
    model.compile(keras.optimizers.SGD(0.05), loss="mse")
    history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert_history(history, {"loss": [3.745734, 1.745339]})                      # TF 2.21


# ---- the default steps ---------------------------------------------------------------------------
class Counted(layers.Layer):
    """A layer holding a metric of its own, updated in call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(1, name="inner")
        self.activity = keras.metrics.Mean(name="mean_output")

    def call(self, x):
        out = self.dense(x)
        self.activity.update_state(out)
        return out


def test_default_fit_reports_the_loss_compiled_metrics_and_layer_metrics():
    x, y, _, kernel = data()
    inputs = keras.Input((4,))
    counted = Counted(name="counted")
    model = keras.Model(inputs, counted(inputs))
    counted.dense.set_weights([kernel, np.zeros(1, "f")])
    model.compile(keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    assert model.metrics_names == ["loss", "compile_metrics", "mean_output"]
    assert len(model.weights) == 2 and model.count_params() == 5
    history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    # The loss tracker is weighted by batch size (4, 4, 2), unlike the guide's own update.
    assert_history(history, {"loss": [4.238148, 2.005654], "mae": [1.466618, 1.039349],
                             "mean_output": [-0.127608, -0.289484]})            # TF 2.21
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=4, verbose=0),
                               [1.191732, 0.801822, -0.33759], rtol=2e-5)       # TF 2.21


def test_compute_loss_leaves_the_loss_tracker_to_the_step():
    x, y, sample_weight, kernel = data()
    model = functional(keras.Model, kernel)
    model.compile("sgd", loss="mse", metrics=["mae"])
    y_pred = model(x)
    loss = model.compute_loss(x, y, y_pred, sample_weight)
    expected = np.mean(sample_weight * np.mean((y_pred.numpy() - y) ** 2, axis=1))
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert float(model.metrics[0].result()) == 0.0            # not updated (Keras 3)
    metrics = model.compute_metrics(x, y, y_pred, sample_weight)
    assert set(metrics) == {"loss", "mae"}
    assert float(metrics["mae"]) == pytest.approx(np.mean(np.abs(y_pred.numpy() - y)), rel=1e-5)
    # The layers' losses are added, each summed.
    model.get_layer("d").add_loss(lambda: 2.0 * tf.reduce_sum(model.get_layer("d").kernel))
    with_penalty = model.compute_loss(x, y, y_pred)
    assert float(with_penalty) == pytest.approx(
        np.mean((y_pred.numpy() - y) ** 2) + 2.0 * kernel.sum(), rel=1e-5)
    bare = functional(keras.Model, kernel)
    bare.compile("sgd")
    with pytest.raises(ValueError, match="No loss to compute"):
        bare.compute_loss(x, y, bare(x))


def test_metrics_of_an_uncompiled_model_and_of_nested_models():
    model = LowLevel(*_io())
    assert [m.name for m in model.metrics] == ["loss", "mae"]
    inner = OwnLoss(*_io())
    inputs = keras.Input((4,))
    outer = keras.Model(inputs, inner(inputs))
    # A nested model's metrics are its own (Keras 3); the outer model's are the compiled ones.
    assert outer.metrics == []
    outer.compile("sgd", "mse")
    assert outer.metrics_names == ["loss"]


def _io():
    inputs = keras.Input((4,))
    return inputs, layers.Dense(1)(inputs)


def test_a_model_without_trainable_weights_warns():
    inputs = keras.Input((2,))
    model = keras.Model(inputs, layers.Dense(1, trainable=False)(inputs))
    model.compile("sgd", "mse", run_eagerly=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(np.ones((2, 2), "f"), np.ones((2, 1), "f"), verbose=0)
    assert any("does not have any trainable weights" in str(w.message) for w in caught)


# ---- "Writing a training loop from scratch" ------------------------------------------------------
def test_training_loop_from_scratch_matches_tensorflow():
    x, y, _, _ = data()
    inputs = keras.Input((4,))
    outputs = layers.Dense(1, name="d")(layers.Dense(3, activation="relu", name="h")(inputs))
    model = keras.Model(inputs, outputs)
    rs = np.random.RandomState(2)
    model.get_layer("h").set_weights([rs.randn(4, 3).astype("f") * 0.5, np.full(3, 0.1, "f")])
    model.get_layer("d").set_weights([rs.randn(3, 1).astype("f") * 0.5, np.zeros(1, "f")])
    optimizer = keras.optimizers.SGD(learning_rate=0.05)
    loss_fn = keras.losses.MeanSquaredError()
    train_metric = keras.metrics.MeanAbsoluteError()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            logits = model(xb, training=True)
            loss_value = loss_fn(yb, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        train_metric.update_state(yb, logits)
        return loss_value

    losses, maes = [], []
    for _ in range(2):
        for xb, yb in dataset:
            losses.append(float(train_step(xb, yb)))
        maes.append(float(train_metric.result()))
        train_metric.reset_state()
    # TF 2.21:
    np.testing.assert_allclose(losses, [6.264936, 6.229942, 0.609489, 5.573237, 5.243438,
                                        0.218377], rtol=2e-5)
    np.testing.assert_allclose(maes, [1.766814, 1.543418], rtol=2e-5)
    np.testing.assert_allclose(model.get_layer("d").get_weights()[0].ravel(),
                               [-0.31406, -0.407645, 0.587393], atol=2e-6)


# ---- the guide's GAN: two models, two optimizers, a compile of its own ---------------------------
class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real_images):
        batch_size = tf.shape(real_images)[0]
        random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))
        generated_images = self.generator(random_latent_vectors)
        combined_images = tf.concat([generated_images, real_images], axis=0)
        labels = tf.concat([tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0)
        labels += 0.05 * tf.random.uniform(tf.shape(labels))
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))
        misleading_labels = tf.zeros((batch_size, 1))
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


def test_guide_gan_trains_both_models():
    tf.random.set_seed(0)
    discriminator = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                                      layers.Dense(1)], name="discriminator")
    generator = keras.Sequential([keras.Input((3,)), layers.Dense(8, activation="relu"),
                                  layers.Dense(4, activation="sigmoid")], name="generator")
    gan = GAN(discriminator=discriminator, generator=generator, latent_dim=3)
    gan.compile(d_optimizer=keras.optimizers.Adam(learning_rate=0.01),
                g_optimizer=keras.optimizers.Adam(learning_rate=0.01),
                loss_fn=keras.losses.BinaryCrossentropy(from_logits=True))
    before = [w.copy() for w in discriminator.get_weights() + generator.get_weights()]
    real = np.random.RandomState(0).rand(20, 4).astype("float32")
    history = gan.fit(tf.data.Dataset.from_tensor_slices(real).batch(8), epochs=2, verbose=0)
    assert list(history.history) == ["d_loss", "g_loss"]
    assert all(len(v) == 2 and np.all(np.isfinite(v)) for v in history.history.values())
    after = discriminator.get_weights() + generator.get_weights()
    assert all(not np.array_equal(a, b) for a, b in zip(before, after))
    assert gan.metrics_names == ["d_loss", "g_loss"] and len(gan.weights) == 8
    assert gan.d_optimizer.iterations.numpy() == 6 and gan.g_optimizer.iterations.numpy() == 6
