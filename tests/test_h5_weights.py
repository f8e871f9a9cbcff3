"""``.weights.h5`` files in Keras 3's HDF5 layout: hybridtf reads the files Keras 3 writes,
and writes the same layout, so that Keras 3 reads hybridtf's.

The fixtures in ``data/keras3_weights`` were written by real Keras 3.15.1 (TensorFlow 2.21's
``tf.keras``), with this module's ``build`` and ``own_variables`` (they take the ``keras``
module as an argument and run under either framework):

    keras.utils.set_random_seed(0)
    for kind in ("sequential", "functional", "subclassed"):
        model = build(keras, kind)
        model(inputs(kind))
        if kind == "sequential":          # optimizer state too
            model.compile(keras.optimizers.Adam(0.01), "mse")
            model.fit(inputs(kind), np.ones((2, 2), "float32"), epochs=2, verbose=0)
        for layer in model._flatten_layers():        # non-trivial BatchNorm statistics
            if isinstance(layer, keras.layers.BatchNormalization):
                n = layer.moving_mean.shape[0]
                layer.moving_mean.assign(np.arange(n, dtype="float32") + 0.5)
                layer.moving_variance.assign(np.arange(n, dtype="float32") + 2.0)
        model.save_weights(f"{kind}.weights.h5")
        np.savez(f"{kind}.expected.npz",
                 **{k: np.asarray(v.numpy()) for k, v in own_variables(model).items()})

The reverse direction was checked the same way by hand (hybridtf saves, Keras 3 loads and
compares); without Keras here, ``test_hybridtf_writes_the_layout_keras_writes`` checks that
hybridtf's file has exactly the groups, datasets and shapes of Keras's.
"""
import pathlib
import zipfile

import h5py
import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import saving
from hybridtf.saved_model.array_file import UnreadableFileError

DATA = pathlib.Path(__file__).resolve().parent / "data" / "keras3_weights"
KINDS = ("sequential", "functional", "subclassed")


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def build(keras, kind):
    """The same architecture under Keras 3 or hybridtf (``keras`` is the framework's module)."""
    layers = keras.layers
    if kind == "sequential":
        return keras.Sequential([keras.Input((4,)), layers.Dense(3, name="d1"),
                                 layers.BatchNormalization(name="bn"),
                                 layers.Dense(2, name="d2")], name="seq")
    if kind == "functional":
        x = inputs = keras.Input((6, 6, 2))
        x = layers.Conv2D(3, 3, name="conv")(x)
        x = layers.BatchNormalization(name="bn")(x)
        x = layers.Flatten(name="flat")(x)
        inner = keras.Sequential([layers.Dense(4, name="in1"), layers.Dense(4, name="in2")],
                                 name="inner")
        return keras.Model(inputs, layers.Dense(2, name="head")(inner(x)), name="fun")

    class Block(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.proj = layers.Dense(3, name="proj")

        def build(self, input_shape):
            self.alpha = self.add_weight(shape=(3,), initializer="random_normal",
                                         name="alpha")

        def call(self, x):
            return self.proj(x) * self.alpha

    class Net(keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.encoder = layers.Dense(3, name="enc")
            self.blocks = [Block(name="blk0"), layers.Dense(3, name="b1")]
            self.table = {"x": layers.Dense(3, name="tx"), "y": [layers.Dense(3, name="ty")]}
            self._hidden = layers.Dense(3, name="hid")
            self.inner = keras.Sequential([layers.Dense(3, name="s0")], name="seq")
            self.norm = layers.BatchNormalization(name="norm")
            self.out = layers.Dense(1, name="out")

        def call(self, x):
            x = self.encoder(x)
            for block in self.blocks:
                x = block(x)
            x = self.table["x"](x) + self.table["y"][0](x)
            return self.out(self.norm(self.inner(self._hidden(x))))

    return Net()


def inputs(kind):
    shape = {"sequential": (2, 4), "functional": (2, 6, 6, 2), "subclassed": (2, 5)}[kind]
    return np.random.RandomState(1).randn(*shape).astype("float32")


def own_variables(model):
    """``{"<layer name>/<i>": variable}``: each layer's own variables (trainable, then
    non-trainable), and ``"optimizer/<i>"`` for a compiled model's optimizer."""
    out = {}
    for layer in model._flatten_layers(include_self=True):
        own = list(getattr(layer, "_trainable_variables", None)
                   or getattr(layer, "_trainable_weights", []))
        own += list(getattr(layer, "_non_trainable_variables", None)
                    or getattr(layer, "_non_trainable_weights", []))
        for i, variable in enumerate(own):
            out[f"{layer.name}/{i}"] = variable
    if getattr(model, "optimizer", None) is not None:
        for i, variable in enumerate(model.optimizer.variables):
            out[f"optimizer/{i}"] = variable
    return out


def built(kind):
    model = build(keras, kind)
    model(inputs(kind))
    if kind == "sequential":
        model.compile(keras.optimizers.Adam(0.01), "mse")
        model.optimizer.build(model.trainable_variables)
    return model


def layout(path):
    """Every group (with its attributes but the layer names, which differ between runs) and
    dataset (with shape and dtype) of an HDF5 file."""
    found = set()

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            found.add((name, obj.shape, obj.dtype.str))
        else:
            found.add((name, tuple(sorted(k for k in obj.attrs))))
    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_hybridtf_loads_the_files_keras_writes(kind):
    model = built(kind)
    model.load_weights(DATA / f"{kind}.weights.h5")
    expected = np.load(DATA / f"{kind}.expected.npz")
    got = own_variables(model)
    assert sorted(got) == sorted(expected.files)
    for key in expected.files:
        np.testing.assert_array_equal(got[key].numpy(), expected[key], err_msg=key)
        assert got[key].numpy().dtype == expected[key].dtype


@pytest.mark.parametrize("kind", KINDS)
def test_hybridtf_writes_the_layout_keras_writes(kind, tmp_path):
    model = built(kind)
    path = tmp_path / "model.weights.h5"
    model.save_weights(path)
    keras_layout = layout(DATA / f"{kind}.weights.h5")
    ours = layout(path)
    # Only InputLayer groups carry auto-generated names that differ; compare everything.
    assert ours == keras_layout
    restored = built(kind)
    restored.load_weights(path)
    for key, variable in own_variables(model).items():
        np.testing.assert_array_equal(own_variables(restored)[key].numpy(), variable.numpy())


def test_optimizer_state_round_trips_and_mismatches_are_skipped_with_a_warning(tmp_path):
    x, y = inputs("sequential"), np.ones((2, 2), np.float32)
    model = built("sequential")
    model.fit(x, y, epochs=2, verbose=0)
    path = tmp_path / "trained.weights.h5"
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        assert len(f["optimizer/vars"]) == len(model.optimizer.variables) == 14
    target = built("sequential")
    target.load_weights(path)
    assert int(target.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy())
    for a, b in zip(target.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    fresh = build(keras, "sequential")
    fresh(x)
    fresh.compile(keras.optimizers.Adam(0.01), "mse")          # not built: 2 variables
    with pytest.warns(UserWarning, match=r"Skipping variable loading for optimizer 'adam.*"
                                         r"has 2 variables whereas the saved optimizer"):
        fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.layers[0].kernel.numpy(),
                                  model.layers[0].kernel.numpy())


def test_structure_mismatches_name_the_layer_its_path_and_the_file(tmp_path):
    model = built("sequential")
    path = tmp_path / "seq.weights.h5"
    model.save_weights(path)
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="d1"),
                              keras.layers.Dense(2, name="d2"), keras.layers.Dense(2, name="d3")])
    before = [w.numpy().copy() for w in other.weights]
    with pytest.raises(ValueError, match=r"layer 'd3' \(at 'layers/dense_2'\) has 2 variables "
                                         r"\['kernel', 'bias'\], but the weights file "
                                         r".*seq\.weights\.h5' holds 0 at "
                                         r"'layers/dense_2/vars'\. The file was saved from a "
                                         r"model with a different structure"):
        other.load_weights(path)
    for was, weight in zip(before, other.weights):
        np.testing.assert_array_equal(weight.numpy(), was)      # nothing was assigned
    unbuilt = keras.Sequential([keras.layers.Dense(3, name="d1")])
    with pytest.raises(ValueError, match="has no weights yet: build it"):
        unbuilt.load_weights(path)


def test_shape_mismatch_assigns_nothing(tmp_path):
    model = built("sequential")
    path = tmp_path / "seq.weights.h5"
    model.save_weights(path)
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="d1"),
                              keras.layers.BatchNormalization(name="bn"),
                              keras.layers.Dense(5, name="d2")])
    before = [w.numpy().copy() for w in other.weights]
    with pytest.raises(ValueError, match=r"variable #0 'kernel' of layer 'd2' \(at "
                                         r"'layers/dense_1'\) has shape \(3, 5\) but the weights "
                                         r"file .* holds shape \(3, 2\) at "
                                         r"layers/dense_1/vars/0"):
        other.load_weights(path)
    for was, weight in zip(before, other.weights):
        np.testing.assert_array_equal(weight.numpy(), was)


def test_damaged_data_is_detected_not_loaded(tmp_path):
    model = built("sequential")
    path = tmp_path / "seq.weights.h5"
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        offset = f["layers/dense/vars/0"].id.get_chunk_info(0).byte_offset
    data = bytearray(path.read_bytes())
    data[offset + 2] ^= 0xFF              # one flipped bit pattern inside a kernel
    damaged = tmp_path / "damaged.weights.h5"
    damaged.write_bytes(bytes(data))
    with pytest.raises(UnreadableFileError, match=r"damaged\.weights\.h5' is truncated or "
                                                  r"corrupted .*restore the file"):
        built("sequential").load_weights(damaged)
    (tmp_path / "cut.weights.h5").write_bytes(path.read_bytes()[:1000])
    with pytest.raises(UnreadableFileError, match=r"cut\.weights\.h5' is truncated or corrupted"):
        built("sequential").load_weights(tmp_path / "cut.weights.h5")


def test_foreign_and_legacy_hdf5_files(tmp_path):
    foreign = tmp_path / "data.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.ones(3)
    with pytest.raises(UnreadableFileError, match=r"data\.h5' is an HDF5 file but not a Keras "
                                                  r"weights file"):
        built("sequential").load_weights(foreign)
    legacy = tmp_path / "legacy.h5"
    with h5py.File(legacy, "w") as f:
        f.attrs["layer_names"] = [b"dense"]
    with pytest.raises(UnreadableFileError, match=r"Keras 2 \(legacy\) HDF5 weights file"):
        built("sequential").load_weights(legacy)


def test_load_weights_reads_a_keras_archive_and_errors_name_it(tmp_path):
    model = built("functional")
    path = tmp_path / "fun.keras"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["config.json", "model.weights.h5"]
        assert zf.read("model.weights.h5").startswith(b"\x89HDF")
    restored = built("functional")
    restored.load_weights(path)
    for a, b in zip(restored.weights, model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with zipfile.ZipFile(path) as zf:
        config, weights = zf.read("config.json"), zf.read("model.weights.h5")
    damaged = tmp_path / "damaged.keras"
    with zipfile.ZipFile(damaged, "w") as zf:
        zf.writestr("config.json", config)
        zf.writestr("model.weights.h5", weights[: len(weights) // 2])
    for load in (lambda: keras.models.load_model(damaged),
                 lambda: built("functional").load_weights(damaged)):
        with pytest.raises(UnreadableFileError) as err:
            load()
        message = str(err.value)
        assert f"{damaged} (model.weights.h5)' is truncated or corrupted" in message
        assert "Save the weights again, or restore the file from a copy" in message
        assert err.value.path == f"{damaged} (model.weights.h5)"


def test_modules_and_objects_with_weights_use_the_root_group(tmp_path):
    module = tf.Module()
    module.b = tf.Variable(np.arange(3, dtype=np.float32))
    module.a = tf.Variable(np.int64(7))
    module.child = tf.Module()
    module.child.w = tf.Variable(np.ones((2, 2), np.float32))
    path = tmp_path / "module.weights.h5"
    saving.save_weights(module, path)
    assert layout(path) == {("vars", ("name",)), ("vars/0", (), "<i8"),
                            ("vars/1", (3,), "<f4"), ("child", ()),
                            ("child/vars", ("name",)), ("child/vars/0", (2, 2), "<f4")}
