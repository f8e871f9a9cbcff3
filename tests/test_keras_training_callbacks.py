"""Callbacks ``ReduceLROnPlateau``, ``CSVLogger``, ``BackupAndRestore`` with Keras 3's
arguments and file formats, and the Keras 3 optimizer API (``optimizer.apply(grads,
variables)``, ``optimizer.iterations``).

TF's values were recorded with TF 2.21 (Keras 3.15.1) by driving the callbacks' hooks with the
same logs (a stand-in model holding ``keras.optimizers.SGD(1.0)``).
"""
import json
import os

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import callbacks


class _Holder:
    """What the callbacks need of a model: an optimizer and ``stop_training``."""

    def __init__(self, rate=1.0):
        self.optimizer = keras.optimizers.SGD(rate)
        self.stop_training = False


def _data(n=8):
    rng = np.random.RandomState(0)
    x = rng.randn(n, 3).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3)


def _model(seed_weights=None):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="d")])
    model.compile(keras.optimizers.Adam(0.05), "mse")
    if seed_weights is not None:
        model.set_weights(seed_weights)
    return model


# ---- ReduceLROnPlateau --------------------------------------------------------------------------
def test_reduce_lr_on_plateau_matches_tf():
    holder = _Holder(1.0)
    cb = callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, cooldown=1,
                                     min_lr=0.1, min_delta=0.01, mode="min")
    cb.set_model(holder)
    cb.on_train_begin()
    rates = []
    for epoch, value in enumerate([1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85,
                                   0.85, 0.85]):
        logs = {"val_loss": value}
        cb.on_epoch_end(epoch, logs)
        rates.append(round(float(holder.optimizer.learning_rate.numpy()), 6))
    assert rates == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.1, 0.1]
    np.testing.assert_allclose(logs["learning_rate"], 0.1, rtol=1e-6)


def test_reduce_lr_on_plateau_mode_max_and_arguments():
    holder = _Holder(0.2)
    cb = callbacks.ReduceLROnPlateau(monitor="val_accuracy", factor=0.1, patience=1, verbose=1)
    assert cb.mode == "max"
    cb.set_model(holder)
    cb.on_train_begin()
    for epoch, value in enumerate([0.5, 0.6, 0.55]):
        cb.on_epoch_end(epoch, {"val_accuracy": value})
    np.testing.assert_allclose(float(holder.optimizer.learning_rate.numpy()), 0.02, rtol=1e-6)
    with pytest.raises(ValueError, match="does not support a factor >= 1.0"):
        callbacks.ReduceLROnPlateau(factor=1.0)
    with pytest.warns(UserWarning, match="conditioned on metric `val_loss` which is not"):
        cb2 = callbacks.ReduceLROnPlateau()
        cb2.set_model(holder)
        cb2.on_epoch_end(0, {"loss": 1.0})


def test_reduce_lr_on_plateau_in_fit():
    x, y = _data()
    model = _model()
    model.compile(keras.optimizers.SGD(1e-9), "mse")      # the loss barely moves
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[
        callbacks.ReduceLROnPlateau("loss", factor=0.5, patience=1, min_delta=1.0)])
    # As Keras: each epoch logs the rate it trained with; epochs 1 and 2 then halve it.
    np.testing.assert_allclose(history.history["learning_rate"], [1e-9, 1e-9, 5e-10],
                               rtol=1e-6)
    np.testing.assert_allclose(float(model.optimizer.learning_rate.numpy()), 2.5e-10,
                               rtol=1e-6)


# ---- CSVLogger ---------------------------------------------------------------------------------
def test_csv_logger_writes_what_tf_writes(tmp_path):
    path = tmp_path / "log.csv"
    cb = callbacks.CSVLogger(path, separator=";")
    cb.set_model(_Holder())
    cb.on_train_begin()
    cb.on_epoch_end(0, {"loss": 0.5, "acc": 0.25, "vec": np.array([1.5, 2.0])})
    cb.on_epoch_end(1, {"loss": 0.125, "acc": 0.75})
    cb.on_train_end()
    expected = ('epoch;acc;loss;vec;val_acc;val_loss;val_vec\r\n'
                '0;0.25;0.5;"""[1.5, 2.0]""";NA;NA;NA\r\n'
                '1;0.75;0.125;NA;NA;NA;NA\r\n')
    assert path.read_bytes().decode() == expected
    cb = callbacks.CSVLogger(path, append=True)        # no second header
    cb.set_model(_Holder())
    cb.on_train_begin()
    cb.on_epoch_end(2, {"loss": 1.0, "val_loss": 2.0})
    cb.on_train_end()
    assert path.read_bytes().decode() == expected + "2,1.0,2.0\r\n"


def test_csv_logger_in_fit(tmp_path):
    x, y = _data()
    path = tmp_path / "fit.csv"
    history = _model().fit(x, y, epochs=3, verbose=0, validation_split=0.25,
                           callbacks=[callbacks.CSVLogger(str(path))])
    rows = path.read_text().splitlines()
    assert rows[0] == "epoch,loss,val_loss"
    for epoch, row in enumerate(rows[1:]):
        fields = row.split(",")
        assert int(fields[0]) == epoch
        np.testing.assert_allclose(float(fields[1]), history.history["loss"][epoch])
        np.testing.assert_allclose(float(fields[2]), history.history["val_loss"][epoch])


# ---- BackupAndRestore -------------------------------------------------------------------------
class _Interrupt(callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError(f"interrupted at epoch {epoch}")


class _Epochs(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_epoch_begin(self, epoch, logs=None):
        self.seen.append(epoch)


def test_backup_and_restore_resumes_where_training_stopped(tmp_path):
    x, y = _data()
    start = _model().get_weights()
    reference = _model(start)
    reference.fit(x, y, epochs=5, batch_size=4, shuffle=False, verbose=0)

    backup = tmp_path / "backup"
    model = _model(start)
    with pytest.raises(RuntimeError, match="interrupted at epoch 3"):
        model.fit(x, y, epochs=5, batch_size=4, shuffle=False, verbose=0,
                  callbacks=[callbacks.BackupAndRestore(backup), _Interrupt(3)])
    assert sorted(os.listdir(backup)) == ["latest.weights.h5", "training_metadata.json"]
    assert json.loads((backup / "training_metadata.json").read_text()) == {"epoch": 3,
                                                                           "batch": 0}
    # A new process would start from scratch: a fresh model with other weights.
    resumed = _model()
    epochs = _Epochs()
    history = resumed.fit(x, y, epochs=5, batch_size=4, shuffle=False, verbose=0,
                          callbacks=[callbacks.BackupAndRestore(backup), epochs])
    assert epochs.seen == [3, 4] and history.epoch == [3, 4]
    assert int(resumed.optimizer.iterations.numpy()) == 10        # 5 epochs of 2 steps
    for got, want in zip(resumed.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not backup.exists()          # deleted once fit completed


def test_backup_and_restore_batch_frequency_and_kept_checkpoint(tmp_path):
    x, y = _data()
    backup = tmp_path / "b"
    cb = callbacks.BackupAndRestore(backup, save_freq=3, delete_checkpoint=False)
    _model().fit(x, y, epochs=2, batch_size=2, verbose=0, callbacks=[cb])     # 2 x 4 batches
    # Saved after the 3rd batch (epoch 0, batch 2) and the 6th (epoch 1, batch 1); the
    # epoch recorded is the number of epochs completed.
    assert json.loads((backup / "training_metadata.json").read_text()) == {"epoch": 1,
                                                                           "batch": 1}
    assert (backup / "latest.weights.h5").exists()


def test_backup_and_restore_falls_back_to_the_previous_backup(tmp_path):
    x, y = _data()
    backup = tmp_path / "b"
    model = _model()
    with pytest.raises(RuntimeError):
        model.fit(x, y, epochs=4, verbose=0, callbacks=[
            callbacks.BackupAndRestore(backup, double_checkpoint=True), _Interrupt(2)])
    assert (backup / "latest.weights.h5.bkp").exists()
    (backup / "latest.weights.h5").write_bytes(b"\x89HDF\r\n\x1a\n damaged")
    epochs = _Epochs()
    model.fit(x, y, epochs=4, verbose=0, callbacks=[
        callbacks.BackupAndRestore(backup, double_checkpoint=True), epochs])
    assert epochs.seen == [1, 2, 3]          # the previous backup was taken after epoch 0


def test_backup_and_restore_arguments():
    with pytest.raises(ValueError, match="Empty `backup_dir`"):
        callbacks.BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.BackupAndRestore("/tmp/x", save_freq="batch")


# ---- the Keras 3 optimizer API -----------------------------------------------------------------
def test_optimizer_apply_and_iterations():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable([[3.0]])
    opt = keras.optimizers.SGD(0.1)
    assert int(opt.iterations.numpy()) == 0 and opt.iterations.dtype == tf.int64
    opt.apply([tf.constant([1.0, -1.0]), tf.constant([[2.0]])], [v, w])
    np.testing.assert_allclose(v.numpy(), [0.9, 2.1])
    np.testing.assert_allclose(w.numpy(), [[2.8]])
    assert int(opt.iterations.numpy()) == 1
    opt.apply([tf.constant([1.0, 1.0]), tf.constant([[0.0]])])   # the variables it was built for
    np.testing.assert_allclose(v.numpy(), [0.8, 2.0])
    assert int(opt.iterations.numpy()) == 2
    with pytest.raises(ValueError, match="Received 1 gradients"):
        opt.apply([tf.constant([1.0, 1.0])])


def test_adam_apply_first_step_by_hand():
    v = tf.Variable([1.0, -1.0])
    opt = keras.optimizers.Adam(learning_rate=0.1)
    opt.apply([tf.constant([0.5, -2.0])], [v])
    # First Adam step: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps').
    eps_hat = 1e-7 / np.sqrt(1 - 0.999)
    expected = np.array([1.0, -1.0]) - 0.1 * np.array([0.5, -2.0]) / (
        np.abs([0.5, -2.0]) + eps_hat)
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-5)
    assert int(opt.iterations.numpy()) == 1
