"""``model.save("x.keras")`` / ``keras.models.load_model``: architecture, weights, compile
settings and optimizer state round trips, for Sequential, subclassed and functional models."""
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras

ROOT = pathlib.Path(__file__).resolve().parent.parent


def separable(n=24, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 4).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int32)


def sequential(dropout=0.2):
    tf.random.set_seed(1)
    return keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                             keras.layers.BatchNormalization(),
                             keras.layers.Dropout(dropout),
                             keras.layers.Dense(2, activation="softmax")])


def assert_same_weights(a, b):
    assert len(a) == len(b)
    for wa, wb in zip(a, b):
        np.testing.assert_array_equal(wa, wb)


# ---- Sequential ---------------------------------------------------------------------------------
def test_sequential_round_trip_restores_weights_compile_state_and_optimizer(tmp_path):
    x, y = separable()
    model = sequential(dropout=0.0)     # no random draws: the two runs below can be compared
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  ["accuracy"])
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    assert zipfile.is_zipfile(path)

    loaded = keras.models.load_model(path)
    assert type(loaded) is keras.Sequential and loaded.name == model.name
    assert [type(layer).__name__ for layer in loaded.layers] == [
        "Dense", "BatchNormalization", "Dropout", "Dense"]
    assert_same_weights(loaded.get_weights(), model.get_weights())
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    # Compiled as it was: the same optimizer settings, loss and metrics.
    assert type(loaded.optimizer).__name__ == "Adam"
    assert float(loaded.optimizer.learning_rate) == pytest.approx(0.01)
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)
    assert loaded.metrics_names == ["loss", "compile_metrics"]
    assert [m.name for m in loaded.compiled_metrics.metrics] == ["accuracy"]
    # The optimizer's state came back too: training goes on identically.
    assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations) == 6
    assert_same_weights(loaded.optimizer.get_weights(), model.optimizer.get_weights())
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    loaded.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_uncompiled_and_compile_false(tmp_path):
    x, _ = separable()
    model = sequential()
    model.save(tmp_path / "plain.keras")
    loaded = keras.models.load_model(tmp_path / "plain.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    with pytest.raises(RuntimeError, match="compile"):
        loaded.evaluate(x, x, verbose=0)
    model.compile("sgd", "mse")
    model.save(tmp_path / "compiled.keras")
    keras.models.save_model(model, tmp_path / "same.keras")
    for name in ("compiled.keras", "same.keras"):
        assert keras.models.load_model(tmp_path / name).optimizer is not None
    not_compiled = keras.models.load_model(tmp_path / "compiled.keras", compile=False)
    with pytest.raises(RuntimeError, match="compile"):
        not_compiled.fit(x, x, verbose=0)


def test_fresh_process_loads_a_saved_sequential(tmp_path):
    x, y = separable()
    model = sequential()
    model.compile("adam", "sparse_categorical_crossentropy", ["accuracy"])
    model.fit(x, y, epochs=1, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, json, numpy as np\n"
        "import hybridtf as tf\n"
        "model = tf.keras.models.load_model(sys.argv[1])\n"
        "x = np.load(sys.argv[2])\n"
        "print(json.dumps({'predictions': model.predict(x, verbose=0).tolist(),\n"
        "                  'metrics': model.metrics_names or ['loss', 'accuracy'],\n"
        "                  'optimizer': type(model.optimizer).__name__}))\n")
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    env.setdefault("HYBRIDTF_CACHE_DIR", str(ROOT / ".numba_cache"))
    result = subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path / "x.npy")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(out["predictions"], model.predict(x, verbose=0), rtol=1e-6)
    assert out["optimizer"] == "Adam"


# ---- custom layers and subclassed models ---------------------------------------------------------
class Scale(keras.layers.Layer):
    """A custom layer with a config: ``inputs * factor * w`` with one trainable w."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="ones")

    def call(self, inputs):
        return inputs * self.factor * self.w

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class Tower(keras.Model):
    """A subclassed model with get_config."""

    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = keras.layers.Dense(units, activation="relu")
        self.scale = Scale(0.5)
        self.out = keras.layers.Dense(1)

    def call(self, inputs):
        return self.out(self.scale(self.hidden(inputs)))

    def get_config(self):
        return {"units": self.units, "name": self.name}


class NoConfig(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2)

    def call(self, inputs):
        return self.dense(inputs)


def test_sequential_with_a_custom_layer(tmp_path):
    x, _ = separable()
    model = keras.Sequential([keras.Input((4,)), Scale(3.0, name="scale"),
                              keras.layers.Dense(1)])
    model.layers[0].w.assign([1.0, 2.0, 3.0, 4.0])
    model.save(tmp_path / "custom.keras")
    loaded = keras.models.load_model(tmp_path / "custom.keras", custom_objects={"Scale": Scale})
    assert loaded.layers[0].factor == 3.0
    np.testing.assert_array_equal(loaded.layers[0].w.numpy(), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_subclassed_model_with_get_config(tmp_path):
    x, _ = separable()
    tf.random.set_seed(2)
    model = Tower(units=5, name="tower")
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse", ["mae"])
    model.fit(x, x[:, :1], epochs=1, batch_size=8, verbose=0)
    model.save(tmp_path / "tower.keras")
    loaded = keras.models.load_model(tmp_path / "tower.keras", custom_objects={"Tower": Tower})
    assert type(loaded) is Tower and loaded.units == 5 and loaded.name == "tower"
    assert_same_weights(loaded.get_weights(), model.get_weights())
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert loaded.evaluate(x, x[:, :1], verbose=0) == model.evaluate(x, x[:, :1], verbose=0)
    assert loaded.optimizer.get_config()["momentum"] == 0.9


def test_subclassed_model_without_a_usable_config(tmp_path):
    model = NoConfig()
    model(np.ones((1, 3), np.float32))
    model.save(tmp_path / "noconfig.keras")
    with pytest.raises(TypeError, match=r"could not rebuild NoConfig from its config .*"
                                        r"get_config\(\) return every argument"):
        keras.models.load_model(tmp_path / "noconfig.keras",
                                custom_objects={"NoConfig": NoConfig})


def test_a_class_name_shared_by_two_loaded_classes_needs_custom_objects(tmp_path):
    def make_class():
        class Twin(keras.Model):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.dense = keras.layers.Dense(1)

            def call(self, inputs):
                return self.dense(inputs)
        return Twin

    first, second = make_class(), make_class()
    model = first()
    model(np.ones((1, 2), np.float32))
    model.save(tmp_path / "twin.keras")
    with pytest.raises(ValueError, match=r"class 'Twin' is not a Keras class, not in "
                                         r"custom_objects and not registered.*safe_mode=False"):
        keras.models.load_model(tmp_path / "twin.keras")
    with pytest.raises(ValueError, match=r"2 loaded classes are named 'Twin'.*custom_objects"):
        keras.models.load_model(tmp_path / "twin.keras", safe_mode=False)
    loaded = keras.models.load_model(tmp_path / "twin.keras", custom_objects={"Twin": second})
    assert type(loaded) is second


def test_custom_loss_function_needs_custom_objects(tmp_path):
    def scaled_mse(y_true, y_pred):
        return 2.0 * tf.reduce_mean(tf.square(y_true - y_pred), axis=-1)

    x, _ = separable()
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(4,))])
    model.compile("sgd", scaled_mse)
    model.save(tmp_path / "loss.keras")
    with pytest.warns(UserWarning, match="loaded but not compiled"):
        loaded = keras.models.load_model(tmp_path / "loss.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    loaded = keras.models.load_model(tmp_path / "loss.keras",
                                     custom_objects={"scaled_mse": scaled_mse})
    target = x[:, :1]
    assert loaded.evaluate(x, target, verbose=0) == pytest.approx(
        model.evaluate(x, target, verbose=0))


# ---- functional models ---------------------------------------------------------------------------
def test_functional_model_round_trip(tmp_path):
    rng = np.random.RandomState(3)
    a = rng.randn(10, 4).astype(np.float32)
    b = rng.randn(10, 4).astype(np.float32)
    tf.random.set_seed(4)
    left = keras.Input((4,), name="left")
    right = keras.Input((4,), name="right")
    shared = keras.layers.Dense(3, activation="tanh", name="shared")
    merged = keras.layers.Concatenate(name="merge")([shared(left), shared(right)])
    label = keras.layers.Dense(2, name="label")(merged)
    score = keras.layers.Dense(1, name="score")(keras.layers.Add(name="sum")(
        [shared(left), shared(right)]))
    model = keras.Model([left, right], [label, score], name="siamese")
    model.compile("adam",
                  loss={"label": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        "score": "mse"},
                  loss_weights=[1.0, 0.25], metrics={"label": ["accuracy"]})
    labels = (a[:, 0] > b[:, 0]).astype(np.int32)
    model.fit([a, b], [labels, a[:, :1]], epochs=1, batch_size=5, verbose=0)
    model.save(tmp_path / "functional.keras")

    loaded = keras.models.load_model(tmp_path / "functional.keras")
    assert loaded.name == "siamese"
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in model.layers]
    assert loaded.count_params() == model.count_params()
    assert_same_weights(loaded.get_weights(), model.get_weights())
    for got, expected in zip(loaded.predict([a, b], verbose=0),
                             model.predict([a, b], verbose=0)):
        np.testing.assert_array_equal(got, expected)
    assert loaded.evaluate([a, b], [labels, a[:, :1]], verbose=0, return_dict=True) == \
        model.evaluate([a, b], [labels, a[:, :1]], verbose=0, return_dict=True)


def test_functional_model_inside_a_functional_model(tmp_path):
    x, _ = separable()
    inner_in = keras.Input((4,))
    inner = keras.Model(inner_in, keras.layers.Dense(3, name="inner_dense")(inner_in),
                        name="inner")
    outer_in = keras.Input((4,))
    model = keras.Model(outer_in, keras.layers.Dense(1, name="head")(inner(outer_in)))
    model.save(tmp_path / "nested.keras")
    loaded = keras.models.load_model(tmp_path / "nested.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


# ---- errors --------------------------------------------------------------------------------------
def test_save_and_load_errors(tmp_path):
    model = sequential()
    with pytest.raises(ValueError, match=r"invalid filepath extension .*model\.txt"):
        model.save(tmp_path / "model.txt")
    model.save(tmp_path / "model.keras")
    with pytest.raises(FileExistsError, match="exists and overwrite=False"):
        model.save(tmp_path / "model.keras", overwrite=False)
    unbuilt = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="has no weights yet"):
        unbuilt.save(tmp_path / "unbuilt.keras")

    with pytest.raises(FileNotFoundError, match="no such file"):
        keras.models.load_model(tmp_path / "missing.keras")
    with pytest.raises(ValueError, match="is a directory"):
        keras.models.load_model(tmp_path)
    (tmp_path / "text.keras").write_text("not a model")
    with pytest.raises(ValueError, match=r"text\.keras is not a \.keras model archive \(a zip "
                                         r"file\): it starts with b'not '"):
        keras.models.load_model(tmp_path / "text.keras")
    data = (tmp_path / "model.keras").read_bytes()
    (tmp_path / "truncated.keras").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"truncated\.keras is truncated or corrupted .*Save the "
                                         r"model again"):
        keras.models.load_model(tmp_path / "truncated.keras")
    with zipfile.ZipFile(tmp_path / "foreign.keras", "w") as zf:
        zf.writestr("config.json", json.dumps({"format": "keras", "class_name": "Sequential"}))
        zf.writestr("model.weights.h5", b"")
    with pytest.raises(ValueError, match="not a model file this version of hybridtf can read "
                                         r"\(format 'keras'"):
        keras.models.load_model(tmp_path / "foreign.keras")
    with zipfile.ZipFile(tmp_path / "other.keras", "w") as zf:
        zf.writestr("metadata.json", "{}")
    with pytest.raises(ValueError, match=r"other\.keras is a zip archive but not a model saved "
                                         r"by model.save: it has no config.json or "
                                         r"model.weights.h5"):
        keras.models.load_model(tmp_path / "other.keras")
    with pytest.raises(TypeError, match="safe_mode must be True or False"):
        keras.models.load_model(tmp_path / "model.keras", safe_mode="no")


# ---- safe mode: Lambda layers and callables the file names ---------------------------------------
def double(x):
    return x * 2.0


@keras.saving.register_keras_serializable(package="TestModelSaving")
def halve(x):
    return x * 0.5


@keras.saving.register_keras_serializable(package="TestModelSaving")
class Offset(keras.layers.Layer):
    def __init__(self, offset=1.0, **kwargs):
        super().__init__(**kwargs)
        self.offset = offset

    def call(self, inputs):
        return inputs + self.offset

    def get_config(self):
        return {**super().get_config(), "offset": self.offset}


def _lambda_model(function, **kwargs):
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="dense")(inputs)
    return keras.Model(inputs, keras.layers.Lambda(function, name="fn", **kwargs)(hidden))


def test_a_lambda_is_bytecode_that_only_safe_mode_false_loads(tmp_path):
    x, _ = separable()
    scale = 3.0
    model = _lambda_model(lambda t, power=2: tf.square(t) * scale + power)
    path = tmp_path / "lambda.keras"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        config = json.loads(zf.read("config.json"))
    function = config["config"]["layers"][1]["config"]["function"]
    assert function["class_name"] == "__lambda__"
    assert function["config"]["closure"] == [3.0] and function["config"]["defaults"] == [2]
    assert function["config"]["globals"] == {"tf": "hybridtf"}
    with pytest.raises(ValueError, match=r"Layer 'fn' is a Lambda layer whose function is a "
                                         r"Python lambda.*refused in safe mode.*"
                                         r"safe_mode=False"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, safe_mode=False)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    # Bytecode of another Python version is refused, never run.
    config["config"]["layers"][1]["config"]["function"]["config"]["python_version"] = [2, 7]
    other = tmp_path / "other_python.keras"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(other, "w") as dst:
        dst.writestr("config.json", json.dumps(config))
        dst.writestr("model.weights.h5", src.read("model.weights.h5"))
    with pytest.raises(ValueError, match=r"saved as bytecode of Python 2\.7, which this Python"):
        keras.models.load_model(other, safe_mode=False)


def test_named_functions_need_to_be_known_in_safe_mode(tmp_path):
    x, _ = separable()
    model = _lambda_model(double)
    path = tmp_path / "double.keras"
    model.save(path)
    with pytest.raises(ValueError, match=r"uses the function 'double' \(from module "
                                         r".*\), which is not a hybridtf function, not "
                                         r"registered, and not in custom_objects.*"
                                         r"safe_mode=False"):
        keras.models.load_model(path)
    expected = model.predict(x, verbose=0)
    for loaded in (keras.models.load_model(path, custom_objects={"double": double}),
                   keras.models.load_model(path, safe_mode=False)):     # imported by name
        np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)
    with keras.saving.custom_object_scope({"double": double}):
        np.testing.assert_array_equal(
            keras.models.load_model(path).predict(x, verbose=0), expected)


def test_registered_and_hybridtf_callables_load_in_safe_mode(tmp_path):
    x, _ = separable()
    for function in (halve, tf.nn.relu, keras.activations.tanh):
        model = _lambda_model(function)
        model.save(tmp_path / "fn.keras")
        loaded = keras.models.load_model(tmp_path / "fn.keras")
        assert loaded.get_layer("fn").function is function
        np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    with zipfile.ZipFile(tmp_path / "fn.keras") as zf:
        assert "tanh" in zf.read("config.json").decode()
    model = keras.Sequential([keras.Input((4,)), Offset(2.5, name="offset")])
    model.save(tmp_path / "offset.keras")
    loaded = keras.models.load_model(tmp_path / "offset.keras")      # no custom_objects
    assert type(loaded.layers[0]) is Offset and loaded.layers[0].offset == 2.5
    assert keras.saving.get_registered_name(Offset) == "TestModelSaving>Offset"
    assert keras.saving.get_registered_object("TestModelSaving>halve") is halve
    with pytest.raises(ValueError, match="has already been registered"):
        keras.saving.register_keras_serializable(package="TestModelSaving")(halve)


def test_lambda_layer_config_round_trips_its_options(tmp_path):
    layer = keras.layers.Lambda(double, output_shape=(3,), arguments={},
                                mask=None, name="fn")
    config = layer.get_config()
    assert config["function"] == {"module": double.__module__, "class_name": "function",
                                  "config": "double", "registered_name": "double"}
    assert config["output_shape"] == [3]
    again = keras.layers.Lambda.from_config(config, custom_objects={"double": double})
    assert again.function is double and again.compute_output_shape((None, 7)) == (None, 3)
    with pytest.raises(ValueError, match="refused in safe mode"):
        keras.layers.Lambda.from_config(keras.layers.Lambda(lambda t: t).get_config())
    with pytest.warns(UserWarning, match=r"uses the global\(s\) \['separable'\]"):
        keras.layers.Lambda(lambda t: separable(t), name="g").get_config()
