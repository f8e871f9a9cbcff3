"""Keras callbacks: the hooks fit/evaluate/predict call and in what order, History,
EarlyStopping, ModelCheckpoint, LearningRateScheduler, TerminateOnNaN, LambdaCallback.
EarlyStopping's expected outcomes were checked against TensorFlow 2.21 on the same scripts."""
import os
import warnings

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras

callbacks = keras.callbacks


def separable(n=16, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 4).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int32)


def classifier(seed=1):
    tf.random.set_seed(seed)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                              keras.layers.Dense(2)])
    model.compile(keras.optimizers.SGD(0.1),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    return model


def scripted(key, values):
    """A callback that overwrites ``logs[key]`` at each epoch end with the next scripted value
    (callbacks run in list order, so the ones after it see the script)."""
    def inject(epoch, logs):
        logs[key] = values[epoch]
    return callbacks.LambdaCallback(on_epoch_end=inject)


# ---- hook order ----------------------------------------------------------------------------------
class Recorder(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def _record(self, name, *args):
        *index, logs = args
        self.calls.append((name, *index, tuple(sorted(logs or {}))))

    def on_train_begin(self, logs=None):
        self._record("train_begin", logs)

    def on_train_end(self, logs=None):
        self._record("train_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._record("epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._record("epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._record("batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._record("batch_end", batch, logs)

    def on_test_begin(self, logs=None):
        self._record("test_begin", logs)

    def on_test_end(self, logs=None):
        self._record("test_end", logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._record("test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._record("test_batch_end", batch, logs)

    def on_predict_begin(self, logs=None):
        self._record("predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._record("predict_end", logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._record("predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._record("predict_batch_end", batch, logs)


def test_hook_order_and_logs_in_fit_evaluate_predict():
    x, y = separable()
    model = classifier()
    recorder = Recorder()
    model.fit(x, y, batch_size=8, epochs=2, validation_data=(x[:8], y[:8]),
              callbacks=[recorder], verbose=0)
    metrics = ("accuracy", "loss")
    epoch_logs = ("accuracy", "loss", "val_accuracy", "val_loss")
    one_epoch = lambda e: [  # noqa: E731
        ("epoch_begin", e, ()),
        ("batch_begin", 0, ()), ("batch_end", 0, metrics),
        ("batch_begin", 1, ()), ("batch_end", 1, metrics),
        ("test_begin", ()), ("test_batch_begin", 0, ()), ("test_batch_end", 0, metrics),
        ("test_end", metrics),
        ("epoch_end", e, epoch_logs)]
    assert recorder.calls == [("train_begin", ())] + one_epoch(0) + one_epoch(1) + [
        ("train_end", epoch_logs)]
    assert recorder.model is model
    assert recorder.params == {"epochs": 2, "steps": 2, "verbose": 0}

    recorder.calls.clear()
    model.evaluate(x, y, batch_size=16, callbacks=[recorder], verbose=0)
    assert recorder.calls == [("test_begin", ()), ("test_batch_begin", 0, ()),
                              ("test_batch_end", 0, metrics), ("test_end", metrics)]
    recorder.calls.clear()
    model.predict(x, batch_size=16, callbacks=[recorder], verbose=0)
    assert recorder.calls == [("predict_begin", ()), ("predict_batch_begin", 0, ()),
                              ("predict_batch_end", 0, ("outputs",)), ("predict_end", ())]


def test_old_batch_hook_names_and_lambda_callback():
    x, y = separable()
    seen = []

    class OldStyle(callbacks.Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append(("batch", batch, round(logs["loss"], 6)))

    lam = callbacks.LambdaCallback(
        on_train_begin=lambda logs: seen.append(("begin", dict(logs))),
        on_epoch_end=lambda epoch, logs: seen.append(("epoch", epoch, sorted(logs))),
        on_train_batch_begin=lambda batch, logs: seen.append(("lambda batch", batch)))
    model = classifier()
    model.fit(x, y, batch_size=8, epochs=1, callbacks=[OldStyle(), lam], verbose=0)
    assert seen[0] == ("begin", {})
    assert [s[:2] for s in seen[1:]] == [("lambda batch", 0), ("batch", 0),
                                         ("lambda batch", 1), ("batch", 1), ("epoch", 0)]
    assert seen[-1] == ("epoch", 0, ["accuracy", "loss"])
    with pytest.raises(ValueError, match="unknown hook 'on_epoch_finish'"):
        callbacks.LambdaCallback(on_epoch_finish=lambda epoch, logs: None)
    with pytest.raises(TypeError, match="is not a keras.callbacks.Callback"):
        model.fit(x, y, callbacks=[lambda: None], verbose=0)


def test_history_records_every_epoch():
    x, y = separable()
    model = classifier()
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert isinstance(history, callbacks.History) and model.history is history
    assert history.epoch == [0, 1, 2]
    assert list(history.history) == ["accuracy", "loss"]
    assert all(len(values) == 3 for values in history.history.values())
    assert history.history["loss"][-1] == pytest.approx(
        model.evaluate(x, y, verbose=0)[0], rel=0.2)


# ---- EarlyStopping on scripted values ------------------------------------------------------------
class FakeModel:
    """What EarlyStopping touches: stop_training and get/set_weights (here: the epoch)."""

    def __init__(self):
        self.stop_training = False
        self.weights = [np.zeros(1)]

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [np.array(w) for w in weights]


def drive(callback, values, key="val_loss"):
    """Feeds ``values`` as the monitored log, one per epoch; returns (last epoch run, model)."""
    model = FakeModel()
    callback.set_model(model)
    callback.on_train_begin({})
    for epoch, value in enumerate(values):
        model.weights = [np.array([float(epoch)])]
        callback.on_epoch_end(epoch, {key: value})
        if model.stop_training:
            break
    callback.on_train_end({})
    return epoch, model


@pytest.mark.parametrize("kwargs, values, key, last_epoch, best", [
    ({"patience": 2}, [1.0, 0.9, 0.95, 0.92, 0.8], "val_loss", 3, 0.9),
    ({"patience": 0}, [0.5, 0.6, 0.4], "val_loss", 1, 0.5),
    ({"patience": 1, "min_delta": 0.05}, [1.0, 0.97, 0.96, 0.9], "val_loss", 1, 1.0),
    ({"patience": 2, "min_delta": 0.05}, [1.0, 0.97, 0.96, 0.9], "val_loss", 2, 1.0),
    ({"patience": 1, "min_delta": -0.05}, [1.0, 0.97, 0.96, 0.9], "val_loss", 1, 1.0),  # |d|
    ({"monitor": "val_accuracy", "patience": 1}, [0.5, 0.6, 0.55, 0.58], "val_accuracy", 2,
     0.6),
    ({"monitor": "loss", "patience": 1, "mode": "max"}, [0.5, 0.6, 0.55, 0.58], "loss", 2,
     0.6),
    ({"patience": 2, "baseline": 0.6}, [0.9, 0.95, 0.97, 0.5], "val_loss", 1, 0.9),
    ({"patience": 2}, [0.9, 0.95, 0.97, 0.5], "val_loss", 2, 0.9),
    ({"patience": 1, "start_from_epoch": 2}, [0.5, 0.9, 1.0, 1.1, 1.2], "val_loss", 3, 1.0),
    ({"patience": 5}, [1.0, 0.9, 0.8], "val_loss", 2, 0.8),
])
def test_early_stopping_on_scripted_values(kwargs, values, key, last_epoch, best):
    stopper = callbacks.EarlyStopping(**kwargs)
    epoch, model = drive(stopper, values, key)
    assert epoch == last_epoch and stopper.best == best
    stopped = last_epoch < len(values) - 1
    assert model.stop_training is stopped
    assert stopper.stopped_epoch == (last_epoch if stopped else 0)


def test_early_stopping_restores_the_best_weights():
    stopper = callbacks.EarlyStopping(patience=2, restore_best_weights=True)
    epoch, model = drive(stopper, [1.0, 0.5, 0.7, 0.8])
    assert epoch == 3 and stopper.best_epoch == 1
    assert model.weights[0][0] == 1.0             # the weights of epoch 1
    # Also when training ends without stopping early (Keras 3; Keras 2 restored only on a
    # stop -- restoring is what the argument documents).
    stopper = callbacks.EarlyStopping(patience=2, restore_best_weights=True)
    epoch, model = drive(stopper, [1.0, 0.5, 0.7])
    assert epoch == 2 and stopper.stopped_epoch == 0 and model.weights[0][0] == 1.0
    without = callbacks.EarlyStopping(patience=2)
    _, model = drive(without, [1.0, 0.5, 0.7, 0.8])
    assert model.weights[0][0] == 3.0


def test_early_stopping_missing_monitor_and_bad_mode(capsys):
    stopper = callbacks.EarlyStopping(monitor="val_auc")
    with pytest.warns(UserWarning, match=r"'val_auc' is not in the logs .*'val_loss'"):
        epoch, model = drive(stopper, [1.0, 2.0, 3.0])
    assert epoch == 2 and not model.stop_training
    with pytest.raises(ValueError, match="mode must be 'auto', 'min' or 'max', got 'lowest'"):
        callbacks.EarlyStopping(mode="lowest")
    loud = callbacks.EarlyStopping(patience=0, verbose=1, restore_best_weights=True)
    drive(loud, [1.0, 2.0])
    out = capsys.readouterr().out
    assert "Epoch 2: early stopping" in out
    assert "Restoring model weights from the end of the best epoch: 1." in out


def test_early_stopping_in_fit_stops_and_restores():
    x, y = separable()
    model = classifier()
    snapshots = []
    record = callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: snapshots.append(model.get_weights()))
    stopper = callbacks.EarlyStopping(patience=2, restore_best_weights=True)
    history = model.fit(x, y, batch_size=8, epochs=20, validation_data=(x, y),
                        callbacks=[scripted("val_loss", [3, 2, 1, 1.5, 1.2, 0.1] + [0] * 14),
                                   record, stopper], verbose=0)
    assert history.epoch == [0, 1, 2, 3, 4]
    assert history.history["val_loss"] == [3, 2, 1, 1.5, 1.2]
    assert stopper.stopped_epoch == 4 and stopper.best_epoch == 2
    for restored, best in zip(model.get_weights(), snapshots[2]):
        np.testing.assert_array_equal(restored, best)
    assert not np.allclose(snapshots[2][0], snapshots[4][0])


# ---- ModelCheckpoint -----------------------------------------------------------------------------
def test_model_checkpoint_best_weights_only_with_formatted_names(tmp_path):
    x, y = separable()
    model = classifier()
    snapshots = []
    record = callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: snapshots.append(model.get_weights()))
    pattern = str(tmp_path / "ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5")
    checkpoint = callbacks.ModelCheckpoint(pattern, save_best_only=True, save_weights_only=True)
    model.fit(x, y, batch_size=8, epochs=5, validation_data=(x, y),
              callbacks=[scripted("val_loss", [0.9, 0.5, 0.7, 0.25, 0.3]), record, checkpoint],
              verbose=0)
    assert sorted(os.listdir(tmp_path)) == ["ckpt-01-0.90.weights.h5", "ckpt-02-0.50.weights.h5",
                                            "ckpt-04-0.25.weights.h5"]
    assert checkpoint.best == 0.25
    fresh = classifier(seed=7)
    fresh.load_weights(str(tmp_path / "ckpt-04-0.25.weights.h5"))
    for loaded, saved in zip(fresh.get_weights(), snapshots[3]):
        np.testing.assert_array_equal(loaded, saved)


def test_model_checkpoint_every_epoch_full_model_and_max_mode(tmp_path, capsys):
    x, y = separable()
    model = classifier()
    every = callbacks.ModelCheckpoint(str(tmp_path / "model-{epoch}.keras"))
    best = callbacks.ModelCheckpoint(str(tmp_path / "best.keras"), monitor="val_accuracy",
                                     save_best_only=True, verbose=1)
    model.fit(x, y, batch_size=8, epochs=3, validation_data=(x, y),
              callbacks=[scripted("val_accuracy", [0.5, 0.75, 0.6]), every, best], verbose=0)
    assert sorted(os.listdir(tmp_path)) == ["best.keras", "model-1.keras", "model-2.keras",
                                            "model-3.keras"]
    out = capsys.readouterr().out
    assert "Epoch 1: val_accuracy improved from -inf to 0.50000, saving model to" in out
    assert "Epoch 3: val_accuracy did not improve from 0.75000" in out
    last = keras.models.load_model(str(tmp_path / "model-3.keras"))
    np.testing.assert_allclose(last.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    assert last.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))


def test_model_checkpoint_errors(tmp_path):
    with pytest.raises(ValueError, match=r"must end in `\.keras`.*save_weights_only=True"):
        callbacks.ModelCheckpoint(str(tmp_path / "model.ckpt"))
    with pytest.raises(ValueError, match="save_freq must be 'epoch' or a positive number"):
        callbacks.ModelCheckpoint(str(tmp_path / "m.keras"), save_freq="sometimes")
    x, y = separable()
    model = classifier()
    checkpoint = callbacks.ModelCheckpoint(str(tmp_path / "m-{val_los:.2f}.keras"))
    with pytest.raises(KeyError, match=r"names 'val_los', which is not in the logs"):
        model.fit(x, y, epochs=1, validation_data=(x, y), callbacks=[checkpoint], verbose=0)
    skipping = callbacks.ModelCheckpoint(str(tmp_path / "m.keras"), save_best_only=True)
    with pytest.warns(UserWarning, match="'val_loss' available in the logs"):
        model.fit(x, y, epochs=1, callbacks=[skipping], verbose=0)
    assert not os.path.exists(tmp_path / "m.keras")


def test_model_checkpoint_every_n_batches(tmp_path):
    x, y = separable()
    model = classifier()
    checkpoint = callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch}-{batch}.weights.h5"),
                                           save_weights_only=True, save_freq=3)
    model.fit(x, y, batch_size=4, epochs=2, callbacks=[checkpoint], verbose=0)
    assert sorted(os.listdir(tmp_path)) == ["w-1-3.weights.h5", "w-2-6.weights.h5"]


# ---- LearningRateScheduler / TerminateOnNaN ------------------------------------------------------
def test_learning_rate_scheduler_sets_the_optimizer_rate():
    x, y = separable()
    model = classifier()
    rates, weights = [], []
    probe = callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: (
            rates.append(float(model.optimizer.learning_rate)),
            weights.append(model.get_weights()[0])))
    schedule = callbacks.LearningRateScheduler(
        lambda epoch, lr: 0.0 if epoch == 1 else lr * 0.5)
    history = model.fit(x, y, batch_size=8, epochs=3, callbacks=[schedule, probe], verbose=0)
    assert rates == pytest.approx([0.05, 0.0, 0.0])
    assert history.history["lr"] == pytest.approx([0.05, 0.0, 0.0])
    # With a rate of 0 the second epoch leaves the weights unchanged.
    np.testing.assert_array_equal(weights[1], weights[2])
    assert not np.array_equal(weights[0], weights[1])

    one_argument = callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1), verbose=1)
    history = model.fit(x, y, epochs=2, callbacks=[one_argument], verbose=0)
    assert history.history["lr"] == pytest.approx([0.1, 0.05])
    bad = callbacks.LearningRateScheduler(lambda epoch, lr: "fast")
    with pytest.raises(ValueError, match="the schedule returned 'fast' for epoch 0"):
        model.fit(x, y, epochs=1, callbacks=[bad], verbose=0)
    with pytest.raises(TypeError, match="schedule must be a function"):
        callbacks.LearningRateScheduler(0.1)


def test_learning_rate_scheduler_with_a_schedule_object_is_an_error():
    x, y = separable()
    model = classifier()
    model.compile(keras.optimizers.SGD(keras.optimizers.schedules.ExponentialDecay(
        0.1, decay_steps=10, decay_rate=0.5)), "sparse_categorical_crossentropy")
    schedule = callbacks.LearningRateScheduler(lambda epoch, lr: lr)
    with pytest.raises(TypeError, match="not settable"):
        model.fit(x, y, epochs=1, callbacks=[schedule], verbose=0)


def test_terminate_on_nan_stops_at_the_bad_batch(capsys):
    x, y = separable(n=24)
    x[13] = np.nan                                   # in the fourth batch of 4
    tf.random.set_seed(1)
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    batches = []
    record = callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: batches.append(batch))
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False,
                        callbacks=[callbacks.TerminateOnNaN(), record], verbose=0)
    assert batches == [0, 1, 2, 3]
    assert history.epoch == [0] and np.isnan(history.history["loss"][0])
    assert "Batch 3: Invalid loss, terminating training" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        finite = classifier().fit(x[:12], y[:12], batch_size=4, epochs=2,
                                  callbacks=[callbacks.TerminateOnNaN()], verbose=0)
    assert finite.epoch == [0, 1]


def test_callback_can_stop_training_mid_epoch():
    x, y = separable()
    model = classifier()
    batches = []

    def stop_after_three(batch, logs):
        batches.append(batch)
        if len(batches) == 3:
            model.stop_training = True
    history = model.fit(x, y, batch_size=4, epochs=5, verbose=0,
                        callbacks=[callbacks.LambdaCallback(on_train_batch_end=stop_after_three)])
    assert batches == [0, 1, 2] and history.epoch == [0]
