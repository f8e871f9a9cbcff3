"""Serving Keras models from SavedModels: ``tf.saved_model.save(model, path)`` gives a
``serving_default`` signature traced from the model's call, and ``model.export(path)`` writes
Keras 3's inference artifact (``serve`` endpoint).  The signature names were recorded from TF
2.21 (Keras 3.15.1) for the same models; the reloaded functions give the model's predictions.
"""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 6


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _functional():
    inputs = keras.Input((3,), name="feat")
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(inputs))


def _two_inputs():
    a = keras.Input((2,), name="a")
    b = keras.Input((3,), name="b")
    return keras.Model([a, b], {"x": keras.layers.Dense(1, name="dx")(a),
                                "y": keras.layers.Dense(2, name="dy")(b)})


class _Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = keras.layers.Dense(2)

    def call(self, x):
        return self.d(x)


def _specs(signature):
    return {k: (tuple(s.shape.as_list()), s.dtype.name)
            for k, s in signature.structured_input_signature[1].items()}


def test_saved_model_save_gives_serving_default(tmp_path):
    model = _functional()
    tf.saved_model.save(model, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    signature = loaded.signatures["serving_default"]
    assert list(loaded.signatures) == ["serving_default"]
    assert _specs(signature) == {"inputs": ((None, 3), "float32")}
    assert list(signature.structured_outputs) == ["output_0"]
    np.testing.assert_allclose(signature(inputs=tf.constant(X))["output_0"].numpy(),
                               model.predict(X, verbose=0), rtol=1e-6)


def test_saved_model_save_names_several_inputs_and_dict_outputs(tmp_path):
    model = _two_inputs()
    tf.saved_model.save(model, str(tmp_path))
    signature = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    assert _specs(signature) == {"inputs": ((None, 2), "float32"),
                                 "inputs_1": ((None, 3), "float32")}
    assert sorted(signature.structured_outputs) == ["x", "y"]
    a, b = X[:, :2], X
    out = signature(inputs=tf.constant(a), inputs_1=tf.constant(b))
    expected = model.predict([a, b], verbose=0)
    np.testing.assert_allclose(out["x"].numpy(), expected["x"], rtol=1e-6)
    np.testing.assert_allclose(out["y"].numpy(), expected["y"], rtol=1e-6)


def test_subclassed_model_signature_uses_the_built_shape(tmp_path):
    model = _Subclassed()
    model(X[:1])
    tf.saved_model.save(model, str(tmp_path))
    signature = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    assert _specs(signature) == {"inputs": ((1, 3), "float32")}     # as TF: the built shape
    np.testing.assert_allclose(signature(inputs=tf.constant(X[:1]))["output_0"].numpy(),
                               model(X[:1]).numpy(), rtol=1e-6)


def test_explicit_signatures_still_win(tmp_path):
    model = _functional()
    fn = tf.function(lambda x: model(x) * 2.0, input_signature=[tf.TensorSpec([None, 3])])
    tf.saved_model.save(model, str(tmp_path), signatures={"double": fn})
    loaded = tf.saved_model.load(str(tmp_path))
    assert list(loaded.signatures) == ["double"]


@pytest.mark.parametrize("kind,names", [
    ("functional", {"feat": ((None, 3), "float32")}),
    ("two_inputs", {"a": ((None, 2), "float32"), "b": ((None, 3), "float32")}),
    ("subclassed", {"args_0": ((None, 3), "float32")})])
def test_model_export(tmp_path, kind, names, capsys):
    if kind == "subclassed":
        model = _Subclassed()
        model(X[:1])
    else:
        model = _functional() if kind == "functional" else _two_inputs()
    model.export(str(tmp_path))
    assert "The following endpoints are available: serve" in capsys.readouterr().out
    loaded = tf.saved_model.load(str(tmp_path))
    assert sorted(loaded.signatures) == ["serve", "serving_default"]
    signature = loaded.signatures["serving_default"]
    assert _specs(signature) == names
    assert len(loaded.variables) == len(model.variables)
    assert len(loaded.trainable_variables) == len(model.trainable_variables)
    x = [X[:, :2], X] if kind == "two_inputs" else X
    expected = model.predict(x, verbose=0)
    # As in Keras: one argument, a list for a model with several inputs.
    got = loaded.serve([tf.constant(v) for v in x] if kind == "two_inputs" else tf.constant(x))
    for key in (["x", "y"] if kind == "two_inputs" else [None]):
        np.testing.assert_allclose((got[key] if key else got).numpy(),
                                   expected[key] if key else expected, rtol=1e-6)


def test_export_archive_endpoints(tmp_path):
    model = _functional()
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("double", lambda x: model(x) * 2.0,
                         input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    archive.write_out(str(tmp_path), verbose=False)
    loaded = tf.saved_model.load(str(tmp_path))
    np.testing.assert_allclose(loaded.double(tf.constant(X)).numpy(),
                               2 * model.predict(X, verbose=0), rtol=1e-6)
    with pytest.raises(ValueError, match="already taken"):
        archive.add_endpoint("double", lambda x: x, [tf.TensorSpec([None, 3])])
    with pytest.raises(ValueError, match="No endpoints"):
        keras.export.ExportArchive().write_out(str(tmp_path / "empty"))


def test_export_errors(tmp_path):
    with pytest.raises(ValueError, match="format"):
        _functional().export(str(tmp_path), format="onnx")
    with pytest.raises(ValueError, match="has not been built"):
        _Subclassed().export(str(tmp_path))
