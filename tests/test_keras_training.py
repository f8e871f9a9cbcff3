"""Keras training: compile / fit / evaluate / predict, the single-batch methods, custom train
steps, and the compiled step function.  Expected numbers marked "TF" come from TensorFlow 2.21
(tf.keras) on the same weights and data."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf import keras
from hybridtf.polymorphic_function import Function
from hybridtf.keras.data_adapter import ArrayData

ROOT = pathlib.Path(__file__).resolve().parent.parent


# ---- data and models ----------------------------------------------------------------------------
def separable(n=64, seed=0):
    """Two classes split by the sign of x0 + x1 (plus two noise features)."""
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 4).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    return x, y


def classifier(units=2, activation=None, seed=1):
    tf.random.set_seed(seed)
    return keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             keras.layers.Dense(units, activation=activation)])


def first_last(history, key):
    return history.history[key][0], history.history[key][-1]


# TF's numbers: a 3-4-3 net with these weights, SGD(0.1), batch 4, validation_split 0.25.
def tf_case():
    rng = np.random.RandomState(0)
    x = rng.randn(12, 3).astype("float32")
    y = np.array([0, 1, 2, 1, 0, 2, 1, 1, 0, 2, 0, 1], "int32")
    k1 = (rng.randn(3, 4) * 0.5).astype("float32")
    k2 = (rng.randn(4, 3) * 0.5).astype("float32")
    weights = [k1, np.zeros(4, "float32"), k2, np.array([0.1, -0.2, 0.3], "float32")]
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"),
                              keras.layers.Dense(3)])
    model.set_weights(weights)
    return model, x, y


# ---- fit learns ----------------------------------------------------------------------------------
def test_fit_learns_with_string_identifiers():
    x, y = separable()
    model = classifier(activation="softmax")
    model.compile("adam", "sparse_categorical_crossentropy", ["accuracy"])
    np.random.seed(0)   # fit shuffles with NumPy's global generator
    history = model.fit(x, y, epochs=20, batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert all(np.diff(losses) < 0) and losses[-1] < 0.7 * losses[0]
    acc0, acc1 = first_last(history, "accuracy")
    assert acc1 > acc0 + 0.3
    assert history.epoch == list(range(20))


def test_fit_learns_with_loss_and_optimizer_objects_from_logits():
    x, y = separable()
    model = classifier()
    model.compile(keras.optimizers.Adam(0.02),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  [keras.metrics.SparseCategoricalAccuracy()])
    history = model.fit(x, y, epochs=10, batch_size=16, verbose=0)
    loss0, loss1 = first_last(history, "loss")
    assert loss1 < 0.5 * loss0
    assert history.history["sparse_categorical_accuracy"][-1] >= 0.9


def test_fit_learns_binary_with_sigmoid():
    x, y = separable()
    model = classifier(units=1, activation="sigmoid")
    model.compile(keras.optimizers.Adam(0.02), "binary_crossentropy", ["accuracy"])
    history = model.fit(x, y[:, None].astype(np.float32), epochs=10, batch_size=16, verbose=0)
    loss0, loss1 = first_last(history, "loss")
    assert loss1 < 0.5 * loss0
    assert history.history["accuracy"][-1] >= 0.9
    # "accuracy" on one sigmoid unit is binary accuracy: thresholded at 0.5.
    acc = np.mean((model.predict(x, verbose=0)[:, 0] > 0.5) == y)
    assert abs(model.evaluate(x, y[:, None], verbose=0)[1] - acc) < 1e-6


def test_fit_learns_mse_regression():
    rng = np.random.RandomState(3)
    x = rng.randn(64, 4).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0], np.float32) + 0.3)[:, None]
    tf.random.set_seed(2)
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
    model.compile(keras.optimizers.SGD(0.1), "mse", ["mae"])
    history = model.fit(x, y, epochs=20, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 1e-3 < history.history["loss"][0]
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel[:, 0], [1.0, -2.0, 0.5, 0.0], atol=0.02)
    np.testing.assert_allclose(bias, [0.3], atol=0.02)


def test_custom_tf_function_training_loop_learns():
    x, y = separable()
    model = classifier()
    optimizer = keras.optimizers.Adam(0.02)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = []
    for _ in range(10):
        losses.append(np.mean([float(train_step(x[i:i + 16], y[i:i + 16]))
                               for i in range(0, 64, 16)]))
    assert losses[-1] < 0.5 * losses[0]
    accuracy = np.mean(np.argmax(model.predict(x, verbose=0), axis=1) == y)
    assert accuracy >= 0.9
    # As in TF: the first call creates the optimizer's slots, so the function is traced again
    # now that they exist; later calls reuse that trace.
    assert train_step.experimental_get_tracing_count() == 2


def test_fit_equals_hand_written_loop():
    """Same init, same batches (a last partial one too), shuffle=False: the same weights."""
    x, y = separable(n=40)
    sample_weight = np.linspace(0.5, 1.5, 40).astype(np.float32)
    fitted = classifier()
    manual = classifier()
    manual.set_weights(fitted.get_weights())
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    fitted.compile(keras.optimizers.Adam(0.01), loss)
    fitted.fit(x, y, batch_size=16, epochs=2, shuffle=False, sample_weight=sample_weight,
               verbose=0)
    optimizer = keras.optimizers.Adam(0.01)
    for _ in range(2):
        for i in range(0, 40, 16):
            with tf.GradientTape() as tape:
                value = loss(y[i:i + 16], manual(x[i:i + 16], training=True),
                             sample_weight=sample_weight[i:i + 16])
            grads = tape.gradient(value, manual.trainable_variables)
            optimizer.apply_gradients(zip(grads, manual.trainable_variables))
    for a, b in zip(fitted.get_weights(), manual.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fit_matches_tensorflow_numbers():
    model, x, y = tf_case()
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=4, epochs=3, validation_split=0.25, shuffle=False,
                        verbose=0)
    # Keras 3 reports the logs with their keys sorted.
    assert list(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    np.testing.assert_allclose(history.history["loss"], [1.137448, 1.077869, 1.042849],
                               rtol=1e-5)
    np.testing.assert_allclose(history.history["accuracy"], [2 / 9, 1 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(history.history["val_loss"], [1.177244, 1.166099, 1.15428],
                               rtol=1e-5)
    assert history.history["val_accuracy"] == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(model.get_weights()[2][0], [-0.62398, -0.21229, -0.52479],
                               atol=1e-5)

    second = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"),
                               keras.layers.Dense(3)])
    second.set_weights(model.get_weights())
    second.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    history = second.fit(x, np.eye(3, dtype="float32")[y], batch_size=5, epochs=2,
                         shuffle=False, verbose=0,
                         sample_weight=np.linspace(0.5, 1.5, 12).astype("float32"))
    np.testing.assert_allclose(history.history["loss"], [0.732003, 0.298575], rtol=1e-5)
    np.testing.assert_allclose(second.predict(x[:2], verbose=0),
                               [[0.51492, 0.01794, 0.19812], [0.22411, 0.13608, 0.41245]],
                               atol=1e-5)


def test_evaluate_with_sample_weight_and_weighted_metrics_matches_tensorflow():
    rng = np.random.RandomState(0)
    x = rng.randn(10, 3).astype("float32")
    y = np.array([0, 1, 2, 1, 0, 2, 1, 1, 0, 2], "int32")
    sample_weight = np.linspace(0, 1, 10).astype("float32")
    kernel = rng.randn(3, 3).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, kernel_regularizer="l2")])
    model.set_weights([kernel, np.array([0.1, -0.2, 0.3], "float32")])
    model.compile(optimizer="sgd",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], weighted_metrics=["accuracy"])
    weighted = model.evaluate(x, y, sample_weight=sample_weight, batch_size=4, verbose=0,
                              return_dict=True)
    # TF: the loss is sum(w * l) / batch size (plus the kernel's l2), averaged over batches
    # by sample count; "accuracy" ignores the weights, "weighted_accuracy" uses them.
    assert weighted == pytest.approx({"loss": 0.7263567, "accuracy": 0.2,
                                      "weighted_accuracy": 0.28888887}, rel=1e-5)
    plain = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert plain == pytest.approx({"loss": 1.3204546, "accuracy": 0.2,
                                   "weighted_accuracy": 0.2}, rel=1e-5)
    # Keras 3: the compiled metrics are one metric, `compile_metrics`, with a dict result.
    assert model.metrics_names == ["loss", "compile_metrics"]
    assert [m.name for m in model.compiled_metrics.metrics] == ["accuracy", "accuracy"]


# ---- fit arguments -------------------------------------------------------------------------------
class BatchSizes(keras.callbacks.Callback):
    """Records the size of every training batch (from the model's last input)."""

    def __init__(self):
        super().__init__()
        self.steps = []

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append(batch)


class RecordingModel(keras.Model):
    """Runs eagerly and records the inputs of every train and test step."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.train_batches, self.test_batches = [], []

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        self.train_batches.append(np.asarray(data[0]).copy())
        return super().train_step(data)

    def test_step(self, data):
        self.test_batches.append(np.asarray(data[0]).copy())
        return super().test_step(data)


def recording_model():
    model = RecordingModel()
    model.compile("sgd", "mse", run_eagerly=True)
    return model


def test_batch_size_epochs_and_last_partial_batch():
    model = recording_model()
    x = np.arange(10, dtype=np.float32)[:, None]
    history = model.fit(x, x, batch_size=4, epochs=2, shuffle=False, verbose=0)
    sizes = [len(b) for b in model.train_batches]
    assert sizes == [4, 4, 2, 4, 4, 2]
    np.testing.assert_array_equal(np.concatenate(model.train_batches[:3])[:, 0], np.arange(10))
    assert history.params == {"epochs": 2, "steps": 3, "verbose": 0}
    assert len(history.history["loss"]) == 2


@settings(max_examples=40)
@given(n=st.integers(1, 40), batch_size=st.integers(1, 12), shuffle=st.booleans(),
       split=st.floats(0.05, 0.95))
def test_array_batches_cover_the_data(n, batch_size, shuffle, split):
    x = np.arange(n * 2, dtype=np.float64).reshape(n, 2)
    y = np.arange(n, dtype=np.int32)
    data = ArrayData(x, y, None, batch_size)
    batches = list(data.batches(shuffle=shuffle))
    assert data.steps == len(batches) == -(-n // batch_size)
    assert [len(b[1]) for b in batches[:-1]] == [batch_size] * (len(batches) - 1)
    xs = np.concatenate([b[0].numpy() for b in batches])
    ys = np.concatenate([b[1].numpy() for b in batches])
    assert xs.dtype == np.float32 and ys.dtype == np.int32    # floats are fed as floatx
    np.testing.assert_array_equal(xs[:, 0], 2 * ys)            # rows stay paired
    assert sorted(ys.tolist()) == list(range(n))
    if not shuffle:
        assert ys.tolist() == list(range(n))
    cut = int(n * (1 - split))
    if 0 < cut < n:
        train, valid = data.split(split)
        assert (train.size, valid.size) == (cut, n - cut)
        np.testing.assert_array_equal(valid.y, y[cut:])
    else:
        with pytest.raises(ValueError, match="leaves no samples"):
            data.split(split)


def test_validation_split_takes_the_last_fraction_before_shuffling():
    model = recording_model()
    x = np.arange(20, dtype=np.float32)[:, None]
    np.random.seed(0)
    model.fit(x, x, batch_size=5, epochs=2, validation_split=0.25, shuffle=True, verbose=0)
    seen = np.concatenate(model.train_batches[:3])[:, 0]
    assert sorted(seen.tolist()) == list(range(15))
    assert seen.tolist() != list(range(15))           # shuffled within the training part
    np.testing.assert_array_equal(np.concatenate(model.test_batches)[:, 0],
                                  list(range(15, 20)) * 2)


def test_validation_split_val_loss_is_evaluate_on_the_held_out_samples():
    x, y = separable(n=40)
    model = classifier()
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy"])
    history = model.fit(x, y, epochs=1, batch_size=8, validation_split=0.2, verbose=0)
    held_out = model.evaluate(x[32:], y[32:], batch_size=8, verbose=0, return_dict=True)
    assert history.history["val_loss"][0] == pytest.approx(held_out["loss"], rel=1e-6)
    assert history.history["val_accuracy"][0] == pytest.approx(held_out["accuracy"])


def test_validation_data_two_and_three_tuples():
    x, y = separable(n=32)
    vx, vy = separable(n=12, seed=5)
    vw = np.linspace(0.0, 2.0, 12).astype(np.float32)
    model = classifier()
    model.compile(keras.optimizers.SGD(0.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    two = model.fit(x, y, epochs=1, batch_size=16, validation_data=(vx, vy), verbose=0)
    three = model.fit(x, y, epochs=1, batch_size=16, validation_data=(vx, vy, vw), verbose=0)
    assert two.history["val_loss"][0] == pytest.approx(
        model.evaluate(vx, vy, batch_size=16, verbose=0)[0], rel=1e-6)
    weighted = model.evaluate(vx, vy, sample_weight=vw, batch_size=16, verbose=0,
                              return_dict=True)
    assert three.history["val_loss"][0] == pytest.approx(weighted["loss"], rel=1e-6)
    assert three.history["val_loss"][0] != pytest.approx(two.history["val_loss"][0])
    with pytest.raises(ValueError, match="validation_data must be"):
        model.fit(x, y, validation_data=(vx, vy, vw, vw), verbose=0)


def test_validation_freq():
    x, y = separable(n=32)
    model = classifier()
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    seen = []
    callback = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.append("val_loss" in logs))
    model.fit(x, y, epochs=4, batch_size=16, validation_data=(x, y), validation_freq=2,
              callbacks=[callback], verbose=0)
    assert seen == [False, True, False, True]


def test_shuffle_changes_the_batches_and_no_shuffle_is_deterministic():
    x, y = separable(n=32)

    def weights_after(shuffle, seed):
        np.random.seed(seed)
        model = classifier()
        model.compile(keras.optimizers.SGD(0.5),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, epochs=1, batch_size=8, shuffle=shuffle, verbose=0)
        return model.get_weights()[0]

    np.testing.assert_array_equal(weights_after(False, 0), weights_after(False, 1))
    np.testing.assert_array_equal(weights_after(True, 3), weights_after(True, 3))
    assert not np.allclose(weights_after(False, 0), weights_after(True, 3))


def test_sample_weight_zero_removes_samples_from_the_gradient():
    x, y = separable(n=16)
    weights = np.r_[np.ones(8), np.zeros(8)].astype(np.float32)
    a, b = classifier(), classifier()
    for model in (a, b):
        model.compile(keras.optimizers.SGD(0.5),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    a.fit(x, y, sample_weight=weights, batch_size=16, epochs=1, shuffle=False, verbose=0)
    # sum_over_batch_size: sum(w * l) / 16 == mean over the 8 kept samples / 2.
    b.compile(keras.optimizers.SGD(0.25),
              keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    b.fit(x[:8], y[:8], batch_size=8, epochs=1, shuffle=False, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-7)


def test_class_weight_weights_samples_by_class():
    x, y = separable(n=16)
    a, b = classifier(), classifier()
    for model in (a, b):
        model.compile(keras.optimizers.SGD(0.3),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    a.fit(x, y, class_weight={0: 0.5, 1: 2.0}, batch_size=8, shuffle=False, verbose=0)
    b.fit(x, y, sample_weight=np.where(y == 1, 2.0, 0.5).astype(np.float32), batch_size=8,
          shuffle=False, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6)
    with pytest.raises(ValueError, match=r"no weight for class\(es\) \[1\]"):
        a.fit(x, y, class_weight={0: 1.0}, verbose=0)


def test_initial_epoch_and_history():
    x, y = separable(n=32)
    model = classifier()
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy"])
    epochs = []
    history = model.fit(x, y, epochs=5, initial_epoch=2, batch_size=16, verbose=0,
                        callbacks=[keras.callbacks.LambdaCallback(
                            on_epoch_begin=lambda epoch, logs: epochs.append(epoch))])
    assert epochs == [2, 3, 4] and history.epoch == [2, 3, 4]
    assert model.history is history
    assert isinstance(history, keras.callbacks.History)
    assert sorted(history.history) == ["accuracy", "loss"]
    assert all(len(v) == 3 for v in history.history.values())
    assert all(isinstance(v, float) for v in history.history["loss"])


class Batches:
    """A Sequence-like source: ``len`` batches by index, ``on_epoch_end`` after each epoch."""

    def __init__(self, x, y, batch_size):
        self.x, self.y, self.batch_size = x, y, batch_size
        self.epochs_ended = 0

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_fit_on_a_generator_with_steps_per_epoch():
    x, y = separable(n=32)
    served = []

    def generator():
        while True:
            for i in range(0, 32, 8):
                served.append(i)
                yield x[i:i + 8], y[i:i + 8]

    model = classifier()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy"])
    sizes = BatchSizes()
    history = model.fit(generator(), steps_per_epoch=3, epochs=2, callbacks=[sizes], verbose=0)
    assert sizes.steps == [0, 1, 2, 0, 1, 2]
    assert served == [0, 8, 16, 24, 0, 8]      # the generator is read on across epochs
    assert history.params["steps"] == 3 and len(history.history["loss"]) == 2
    evaluated = model.evaluate(generator(), steps=4, verbose=0)
    assert evaluated == pytest.approx(model.evaluate(x, y, batch_size=8, verbose=0), rel=1e-6)
    predicted = model.predict((x[i:i + 8] for i in range(0, 32, 8)), verbose=0)
    np.testing.assert_allclose(predicted, model.predict(x, verbose=0), rtol=1e-6)


def test_fit_on_a_sequence_and_a_generator_that_runs_out():
    x, y = separable(n=20)
    model = classifier()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    source = Batches(x, y, 8)
    history = model.fit(source, epochs=3, verbose=0)
    assert history.params["steps"] == 3 and source.epochs_ended == 3
    finite = ((x[i:i + 8], y[i:i + 8]) for i in range(0, 16, 8))
    with pytest.warns(UserWarning, match="ran out of data"):
        history = model.fit(finite, steps_per_epoch=2, epochs=3, verbose=0)
    assert history.epoch == [0]


def test_verbose_modes_print_to_stdout(capsys):
    x, y = separable(n=32)
    model = classifier()
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy"])
    model.fit(x, y, epochs=2, batch_size=16, verbose=0, validation_split=0.25)
    model.evaluate(x, y, verbose=0)
    model.predict(x, verbose=0)
    assert capsys.readouterr().out == ""

    model.fit(x, y, epochs=2, batch_size=16, verbose=2, validation_split=0.25)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    for line in (lines[1], lines[3]):
        assert "loss: " in line and "accuracy: " in line and "val_loss: " in line \
            and "val_accuracy: " in line

    history = model.fit(x, y, epochs=2, batch_size=16, verbose=1)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "2/2" in out
    assert f"loss={history.history['loss'][-1]:.4f}" in out and "accuracy=" in out

    result = model.evaluate(x, y, verbose=1)
    out = capsys.readouterr().out
    assert f"loss: {result[0]:.4f}" in out and f"accuracy: {result[1]:.4f}" in out


# ---- evaluate / predict / single batches ---------------------------------------------------------
def test_evaluate_return_forms():
    x, y = separable(n=32)
    model = classifier()
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    loss = model.evaluate(x, y, verbose=0)
    assert isinstance(loss, float)
    logits = model(x).numpy()
    shifted = logits - logits.max(axis=1, keepdims=True)
    expected = np.mean(np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(32), y])
    assert loss == pytest.approx(expected, rel=1e-5)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy", "sparse_categorical_crossentropy"])
    values = model.evaluate(x, y, verbose=0)
    assert isinstance(values, list) and len(values) == 3
    assert values[0] == pytest.approx(expected, rel=1e-5)
    assert values[1] == pytest.approx(np.mean(np.argmax(logits, axis=1) == y))
    as_dict = model.evaluate(x, y, verbose=0, return_dict=True)
    assert list(as_dict) == ["accuracy", "loss", "sparse_categorical_crossentropy"]
    assert [as_dict[k] for k in ("loss", "accuracy", "sparse_categorical_crossentropy")] == \
        pytest.approx(values)


def test_predict_batches_and_equals_calling_the_model():
    x, _ = separable(n=37)
    model = classifier()
    expected = model(x).numpy()
    for batch_size in (None, 5, 100):
        predicted = model.predict(x, batch_size=batch_size, verbose=0)
        assert isinstance(predicted, np.ndarray) and predicted.shape == (37, 2)
        np.testing.assert_allclose(predicted, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(x.tolist(), verbose=0), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(x[:5]), expected[:5], rtol=1e-5,
                               atol=1e-6)
    # Float64 data is fed as float32 (Keras's floatx): no new trace for it.
    assert model.predict(x.astype(np.float64), verbose=0).dtype == np.float32
    assert model.predict_function.experimental_get_tracing_count() == 4


def test_train_test_predict_on_batch():
    x, y = separable(n=16)
    model = classifier()
    model.compile(keras.optimizers.SGD(0.5),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    before = model.test_on_batch(x, y)
    assert before == pytest.approx(model.evaluate(x, y, batch_size=16, verbose=0))
    first = model.train_on_batch(x, y)
    # The loss reported by a train step is the loss before its update.
    assert first[0] == pytest.approx(before[0], rel=1e-6)
    for _ in range(10):
        model.train_on_batch(x, y)
    after = model.test_on_batch(x, y, return_dict=True)
    assert after["loss"] < before[0] and set(after) == {"loss", "accuracy"}
    np.testing.assert_allclose(model.predict_on_batch(x), model(x).numpy(), rtol=1e-6)


def test_dropout_and_batch_norm_train_only_in_fit():
    rng = np.random.RandomState(0)
    x = (rng.randn(16, 3) * 3 + 5).astype(np.float32)
    y = rng.randn(16, 1).astype(np.float32)
    tf.random.set_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.BatchNormalization(),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    norm = model.layers[0]
    model.evaluate(x, y, verbose=0)
    model.predict(x, verbose=0)
    np.testing.assert_array_equal(norm.moving_mean.numpy(), np.zeros(3))
    # predict is deterministic (no dropout) and equals the inference-mode call.
    np.testing.assert_allclose(model.predict(x, verbose=0), model(x, training=False).numpy(),
                               rtol=1e-6)
    loss = model.evaluate(x, y, batch_size=16, verbose=0)
    history = model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    # One training batch: the moving mean moved 1% (momentum 0.99) towards the batch mean.
    np.testing.assert_allclose(norm.moving_mean.numpy(), 0.01 * x.mean(axis=0), rtol=1e-4)
    # In training the batch is normalised with its own statistics and half the units dropped.
    assert history.history["loss"][0] != pytest.approx(loss, rel=1e-3)


def test_regularization_and_add_loss_are_part_of_the_loss():
    class ActivityPenalty(keras.layers.Layer):
        def call(self, inputs):
            self.add_loss(0.5 * tf.reduce_mean(tf.square(inputs)))
            return inputs

    x, y = separable(n=16)
    tf.random.set_seed(4)
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(2, kernel_regularizer="l2"),
                              ActivityPenalty()])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    logits = model(x).numpy()
    shifted = logits - logits.max(axis=1, keepdims=True)
    data_loss = np.mean(np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(16), y])
    l2 = 0.01 * np.sum(model.layers[0].kernel.numpy() ** 2)
    penalty = 0.5 * np.mean(logits ** 2)
    assert len(model.losses) == 2
    assert model.evaluate(x, y, batch_size=16, verbose=0) == pytest.approx(
        data_loss + l2 + penalty, rel=1e-5)

    # Compiled without a loss: add_loss alone drives training.
    only_added = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2), ActivityPenalty()])
    only_added.compile(keras.optimizers.SGD(0.5))
    history = only_added.fit(x, epochs=5, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


# ---- custom train steps --------------------------------------------------------------------------
class TF2CustomStep(keras.Model):
    """The TF 2 guide's pattern: compiled_loss / compiled_metrics in train_step."""

    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(8, activation="relu")
        self.out = keras.layers.Dense(1)
        self.steps_run = 0

    def call(self, x):
        return self.out(self.hidden(x))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


class TrackerStep(keras.Model):
    """The Keras 3 guide's pattern: own Metric attributes, compute_loss."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}


def regression(n=32):
    rng = np.random.RandomState(1)
    x = rng.randn(n, 3).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


def test_custom_train_step_with_compiled_loss_and_metrics():
    x, y = regression()
    tf.random.set_seed(3)
    model = TF2CustomStep()
    model.compile(keras.optimizers.Adam(0.05), "mse", ["mae"])
    history = model.fit(x, y, epochs=8, batch_size=8, verbose=0)
    # The step returned {"loss": ..., "compile_metrics": {"mae": ...}}: flattened, sorted.
    # compiled_loss adds the loss to the `loss` tracker, as in Keras 2 (Keras 3's stand-in
    # for it does not, so its "loss" would not be the loss).
    assert list(history.history) == ["mae", "loss"]
    assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]
    assert history.history["mae"][-1] < history.history["mae"][0]
    # evaluate uses the default test_step.
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert result["loss"] == pytest.approx(np.mean((model.predict(x, verbose=0) - y) ** 2),
                                           rel=1e-4)


def test_custom_train_step_with_own_metric_trackers():
    x, y = regression()
    tf.random.set_seed(3)
    model = TrackerStep()
    model.build((None, 3))       # built: the step creates no variables, so it traces once
    model.compile(keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    # The trackers are reset every epoch (they are in model.metrics), so the last epoch's
    # loss is that epoch's mean only.
    assert history.history["loss"][-1] < 0.05 * history.history["loss"][0]
    # evaluate runs the default test_step: it adds the compiled loss to the compiled `loss`
    # tracker, but the model's own tracker, also named "loss", comes later in
    # model.metrics and is reported: 0, untouched since the reset (TF 2.21 gives the same).
    assert model.metrics_names == ["loss", "loss", "mae"]
    assert model.evaluate(x, y, batch_size=32, verbose=0) == [0.0, 0.0, 0.0]
    compiled_tracker = model.metrics[0]
    assert float(compiled_tracker.result()) == pytest.approx(
        np.mean((model.predict(x, verbose=0) - y) ** 2), rel=1e-5)
    assert model.loss_tracker in model.metrics and model.mae_metric in model.metrics
    assert model.train_function.experimental_get_tracing_count() == 1


# ---- the compiled step ---------------------------------------------------------------------------
def test_train_step_is_one_function_traced_once_per_batch_shape():
    x, y = separable(n=40)
    model = classifier()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy"])
    model.fit(x, y, batch_size=16, epochs=3, verbose=0)      # batches of 16, 16, 8
    assert isinstance(model.train_function, Function)
    assert model.train_function.experimental_get_tracing_count() == 2
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert model.train_function.experimental_get_tracing_count() == 2
    model.fit(x[:20], y[:20], batch_size=20, epochs=1, verbose=0)
    assert model.train_function.experimental_get_tracing_count() == 3
    model.evaluate(x, y, batch_size=20, verbose=0)
    assert model.test_function.experimental_get_tracing_count() == 1
    # compile makes a new step function.
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert model.train_function is None


def test_run_eagerly_runs_without_tracing():
    class EagerProbe(keras.layers.Layer):
        def call(self, inputs):
            modes.append(tf.executing_eagerly())
            return inputs

    modes = []
    x, y = separable(n=16)
    model = keras.Sequential([keras.Input((4,)), EagerProbe(), keras.layers.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=True)
    assert model.run_eagerly
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert not isinstance(model.train_function, Function)
    assert modes[-4:] == [True] * 4 and modes.count(True) == 4
    modes.clear()
    model.run_eagerly = False
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert isinstance(model.train_function, Function)
    assert modes == [False]                                  # traced once, run 4 times


# ---- errors --------------------------------------------------------------------------------------
def test_errors_are_clear():
    x, y = separable(n=16)
    model = classifier()
    with pytest.raises(RuntimeError, match="must compile your model before training"):
        model.fit(x, y, verbose=0)
    with pytest.raises(RuntimeError, match="compile"):
        model.evaluate(x, y, verbose=0)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match=r"x sizes: 16\n  y sizes: 12"):
        model.fit(x, y[:12], verbose=0)
    with pytest.raises(ValueError, match="sample_weight sizes: 3"):
        model.fit(x, y, sample_weight=np.ones(3), verbose=0)
    with pytest.raises(ValueError, match="verbose must be 'auto', 0, 1 or 2, got 3"):
        model.fit(x, y, verbose=3)
    with pytest.raises(ValueError, match="verbose must be"):
        model.predict(x, verbose="loud")
    for split in (1.0, -0.1, "half"):
        with pytest.raises(ValueError, match="validation_split must be a float in"):
            model.fit(x, y, validation_split=split, verbose=0)
    with pytest.raises(ValueError, match="leaves no samples"):
        model.fit(x[:1], y[:1], validation_split=0.3, verbose=0)
    generator = ((x[i:i + 4], y[i:i + 4]) for i in range(0, 16, 4))
    with pytest.raises(ValueError, match="`y` argument is not supported when x is a generator"):
        model.fit(generator, y, verbose=0)
    with pytest.raises(ValueError, match="validation_split is only supported for array"):
        model.fit(generator, validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        model.fit(x, y, batch_size=0, verbose=0)
    with pytest.raises(ValueError, match="no target y was given"):
        model.fit(x, verbose=0)
    with pytest.raises(TypeError, match=r"metrics must be a list .* metrics=\['accuracy'\]"):
        model.compile("sgd", "mse", metrics="accuracy")
    with pytest.raises(ValueError, match="Could not interpret loss identifier: 'msee'"):
        model.compile("sgd", "msee")
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        model.compile("sgd", "mse", metric=["mae"])
    no_loss = classifier()
    no_loss.compile("sgd")
    with pytest.raises(ValueError, match="No loss to compute"):
        no_loss.fit(x, y, verbose=0)


# ---- multi-output models -------------------------------------------------------------------------
def test_two_output_functional_model_with_per_output_losses():
    x, y = separable(n=32)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    label = keras.layers.Dense(2, name="label")(hidden)
    score = keras.layers.Dense(1, name="score")(hidden)
    model = keras.Model(inputs, [label, score])
    target = (x[:, :1] - x[:, 1:2]).astype(np.float32)
    model.compile(keras.optimizers.Adam(0.02),
                  loss={"label": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        "score": "mse"},
                  loss_weights={"label": 1.0, "score": 0.5},
                  metrics={"label": ["accuracy"]})
    history = model.fit(x, [y, target], epochs=5, batch_size=16, verbose=0)
    assert list(history.history) == ["label_accuracy", "label_loss", "loss", "score_loss"]
    result = model.evaluate(x, [y, target], batch_size=32, verbose=0, return_dict=True)
    assert result["loss"] == pytest.approx(result["label_loss"] + 0.5 * result["score_loss"],
                                           rel=1e-5)
    _, score_pred = model.predict(x, verbose=0)
    assert result["score_loss"] == pytest.approx(np.mean((score_pred - target) ** 2), rel=1e-5)
    with pytest.raises(ValueError, match="not output names"):
        model.compile("sgd", loss={"labels": "mse"})
        model.fit(x, [y, target], verbose=0)


# ---- the custom-layer example --------------------------------------------------------------------
def test_custom_layer_example_runs():
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    env.setdefault("HYBRIDTF_CACHE_DIR", str(ROOT / ".numba_cache"))
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "custom_layer.py")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "NoisyDense" in out and "trainable weights" in out
    train_acc = float(out.split("train accuracy: ")[1].split()[0])
    test_acc = float(out.split("test accuracy: ")[1].split()[0])
    assert train_acc >= 0.9 and test_acc >= 0.85
    assert "reloaded model agrees: True" in out
