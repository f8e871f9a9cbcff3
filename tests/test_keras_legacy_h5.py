"""Legacy HDF5 whole-model files: ``model.save("m.h5")`` and ``keras.models.load_model``, in
the layout Keras 3 writes (``legacy_h5_format``), both ways.

The fixtures in ``data/keras3_legacy_h5`` were written by real Keras 3.15.1 (TensorFlow 2.21's
``tf.keras``) with this module's ``build`` and ``inputs`` (they take the ``keras`` module as an
argument and run under either framework):

    keras.utils.set_random_seed(0)
    for kind in ("sequential", "functional"):
        model = build(keras, kind)
        if kind == "sequential":       # compile settings and optimizer state too
            model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
            model.fit(inputs(kind), np.ones((5, 2), "float32"), epochs=2, verbose=0)
        model.save(f"{kind}.h5")
        np.savez(f"{kind}.expected.npz",
                 predictions=np.asarray(model.predict(inputs(kind), verbose=0)))

The reverse direction was checked the same way by hand: hybridtf ran the script above, and
Keras 3.15.1 loaded both files with ``keras.models.load_model(path, compile=False)`` and gave
the same predictions (max difference 0.0), with the L2 regularizer and MaxNorm constraint
objects rebuilt.  (Keras 3.15.1 cannot compile from a training_config whose loss is the string
"mse" -- not even from its own files -- hence ``compile=False`` there.)  Without Keras here,
``test_hybridtf_writes_keras_layout`` checks that hybridtf's file has the attributes, groups
and datasets of Keras's.
"""
import json
import pathlib

import h5py
import numpy as np
import pytest

from hybridtf import keras
from hybridtf.saved_model.array_file import UnreadableFileError

DATA = pathlib.Path(__file__).resolve().parent / "data" / "keras3_legacy_h5"


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def build(keras, kind):
    """The same architecture under Keras 3 or hybridtf (``keras`` is the framework's module)."""
    layers = keras.layers
    if kind == "sequential":
        return keras.Sequential([
            keras.Input((4,)),
            layers.Dense(3, activation="relu", kernel_regularizer=keras.regularizers.L2(0.01),
                         name="d1"),
            layers.Dense(2, name="d2")], name="seq")
    image = keras.Input((6, 6, 2), name="image")
    aux = keras.Input((4,), name="aux")
    x = layers.Conv2D(3, 3, padding="same", activation="relu", name="conv")(image)
    x = layers.MaxPooling2D(name="pool")(x)
    x = layers.Flatten(name="flat")(x)
    x = layers.Dense(4, name="d1")(x)
    x = layers.Add(name="add")([x, aux])
    out = layers.Dense(2, kernel_constraint=keras.constraints.MaxNorm(2.0), name="out")(x)
    return keras.Model([image, aux], out, name="func")


def inputs(kind):
    rng = np.random.RandomState(7)
    if kind == "sequential":
        return rng.uniform(-1, 1, (5, 4)).astype("float32")
    return [rng.uniform(-1, 1, (5, 6, 6, 2)).astype("float32"),
            rng.uniform(-1, 1, (5, 4)).astype("float32")]


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_loads_keras_3_files(kind):
    model = keras.models.load_model(DATA / f"{kind}.h5")
    expected = np.load(DATA / f"{kind}.expected.npz")["predictions"]
    np.testing.assert_allclose(model.predict(inputs(kind), verbose=0), expected, rtol=1e-5,
                               atol=1e-6)
    if kind == "sequential":
        assert isinstance(model.layers[0].kernel_regularizer, keras.regularizers.L2)
        assert model.layers[0].kernel_regularizer.l2 == pytest.approx(0.01)
        # Compiled as saved, with Adam's state after 2 epochs of 1 step.
        assert isinstance(model.optimizer, keras.optimizers.Adam)
        assert int(model.optimizer.iterations.numpy()) == 2
        assert model.optimizer.learning_rate.numpy() == pytest.approx(0.01)
        assert model.loss is keras.losses.mean_squared_error
        momentum = model.optimizer.get_slot(model.layers[0].kernel, "momentum").numpy()
        assert np.abs(momentum).sum() > 0
    else:
        assert sorted(layer.name for layer in model.layers) == sorted(
            ["image", "conv", "pool", "flat", "d1", "aux", "add", "out"])
        assert model.get_layer("out").kernel_constraint.max_value == 2.0
        assert model.optimizer is None


def test_keras_3_file_without_compiling():
    model = keras.models.load_model(DATA / "sequential.h5", compile=False)
    assert model.optimizer is None


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_round_trip(tmp_path, kind):
    model = build(keras, kind)
    if kind == "sequential":
        model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
        model.fit(inputs(kind), np.ones((5, 2), "float32"), epochs=2, verbose=0)
    path = tmp_path / "model.h5"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_array_equal(restored.predict(inputs(kind), verbose=0),
                                  model.predict(inputs(kind), verbose=0))
    if kind == "sequential":
        for a, b in zip(restored.optimizer.get_weights(), model.optimizer.get_weights()):
            np.testing.assert_array_equal(a, b)


def test_hybridtf_writes_keras_layout(tmp_path):
    keras_file = h5py.File(DATA / "sequential.h5", "r")
    model = build(keras, "sequential")
    model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    model.fit(inputs("sequential"), np.ones((5, 2), "float32"), epochs=2, verbose=0)
    model.save(tmp_path / "m.h5")
    ours = h5py.File(tmp_path / "m.h5", "r")
    assert set(ours.attrs) == set(keras_file.attrs)
    assert set(ours) == set(keras_file) == {"model_weights", "optimizer_weights"}

    def names(values):
        return [v.decode() if isinstance(v, bytes) else str(v) for v in values]
    assert names(ours["model_weights"].attrs["layer_names"]) == \
        names(keras_file["model_weights"].attrs["layer_names"]) == ["d1", "d2"]

    def shapes(group):
        return [group[name].shape for name in names(group.attrs["weight_names"])]
    for layer in ("d1", "d2"):
        assert shapes(ours["model_weights"][layer]) == shapes(keras_file["model_weights"][layer])
    assert shapes(ours["optimizer_weights"]) == shapes(keras_file["optimizer_weights"])
    ours_config = json.loads(ours.attrs["model_config"])
    keras_config = json.loads(keras_file.attrs["model_config"])
    assert ours_config["class_name"] == keras_config["class_name"] == "Sequential"
    assert [(e["class_name"], e["config"]["name"]) for e in ours_config["config"]["layers"]] \
        == [("InputLayer", "input_1"), ("Dense", "d1"), ("Dense", "d2")]
    assert ours_config["config"]["layers"][0]["config"]["batch_shape"] == [None, 4]
    for entry in ours_config["config"]["layers"][1:]:
        assert "batch_input_shape" not in entry["config"]      # Keras 3 layers reject it
    training = json.loads(ours.attrs["training_config"])
    assert training["optimizer_config"]["class_name"] == "Adam"
    assert training["loss"] == "mse" and training["metrics"] == ["mae"]


def test_subclassed_model_round_trip(tmp_path):
    @keras.saving.register_keras_serializable(package="legacy_h5_test")
    class Net(keras.Model):
        def __init__(self, units=2, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.dense = keras.layers.Dense(units)

        def call(self, x):
            return self.dense(x)

        def get_config(self):
            return {"units": self.units, "name": self.name}

    model = Net(3)
    model(np.ones((1, 4), np.float32))
    model.save(tmp_path / "net.h5")
    restored = keras.models.load_model(tmp_path / "net.h5")
    assert type(restored) is Net and restored.units == 3
    x = inputs("sequential")
    np.testing.assert_array_equal(restored(x).numpy(), model(x).numpy())


def test_errors(tmp_path):
    model = build(keras, "sequential")
    model.save_weights(tmp_path / "w.weights.h5")
    with pytest.raises(ValueError, match="HDF5 weights file, not a whole model"):
        keras.models.load_model(tmp_path / "w.weights.h5")
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    other.save(tmp_path / "other.h5")
    with h5py.File(tmp_path / "other.h5", "r+") as f:
        f.attrs["model_config"] = json.dumps(json.loads(f.attrs["model_config"]) | {})
        del f["model_weights"]["dense"]
    with pytest.raises(UnreadableFileError, match="holds no weights group"):
        keras.models.load_model(tmp_path / "other.h5")
    with pytest.raises(FileExistsError):
        model.save(tmp_path / "other.h5", overwrite=False)
