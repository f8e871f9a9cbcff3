"""``keras.utils`` (to_categorical, pad_sequences, custom objects, set_random_seed,
plot_model), the ``keras.backend`` functions scripts still use, and ``tf.compat``'s string
conversions.  Expected values are hand-computed or were recorded from TF 2.21 (Keras 3.15.1).
"""
import random
import sys
import types

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import object_registration, saving
from hybridtf.keras.utils import model_visualization

U = keras.utils


# ---- to_categorical ---------------------------------------------------------------------------
def test_to_categorical_matches_tf():
    np.testing.assert_array_equal(U.to_categorical([0, 2, 1], 4),
                                  [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]])
    assert U.to_categorical([0, 1]).dtype == np.float64
    assert U.to_categorical([[1], [2]]).shape == (2, 3)        # a trailing 1 is dropped
    assert U.to_categorical(3).shape == (4,)
    assert U.to_categorical([[0, 1], [2, 0]], 3).shape == (2, 2, 3)
    np.testing.assert_array_equal(U.to_categorical([1.0, 2.0], 3), [[0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(U.to_categorical(tf.constant([1, 0])), [[0, 1], [1, 0]])


def test_to_categorical_bad_input():
    with pytest.raises(ValueError, match="out of range"):
        U.to_categorical([0, 5], 3)
    with pytest.raises(ValueError, match="out of range"):
        U.to_categorical([-1, 1], 3)
    with pytest.raises(ValueError, match="integers"):
        U.to_categorical([0.5])


def test_normalize_matches_numpy():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(U.normalize(x), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(U.normalize(x, axis=0), x / np.array([[3.0, 4.0]]))


# ---- pad_sequences ----------------------------------------------------------------------------
def test_pad_sequences_matches_tf():
    seqs = [[1, 2, 3], [4, 5], [6]]
    np.testing.assert_array_equal(U.pad_sequences(seqs, maxlen=2), [[2, 3], [4, 5], [0, 6]])
    np.testing.assert_array_equal(
        U.pad_sequences(seqs, padding="post", truncating="post", value=-1),
        [[1, 2, 3], [4, 5, -1], [6, -1, -1]])
    out = U.pad_sequences(seqs)
    assert out.dtype == np.int32 and out.shape == (3, 3)
    np.testing.assert_array_equal(U.pad_sequences([[1.5, 2.5], [3.0]], dtype="float32"),
                                  [[1.5, 2.5], [0.0, 3.0]])
    np.testing.assert_array_equal(U.pad_sequences([["a", "b"], ["c"]], dtype=object, value="z"),
                                  [["a", "b"], ["z", "c"]])
    assert U.pad_sequences([], maxlen=3).shape == (0, 3)
    np.testing.assert_array_equal(U.pad_sequences([[], [1]]), [[0], [1]])
    assert U.pad_sequences([[[1, 2], [3, 4]], [[5, 6]]]).shape == (2, 2, 2)


def test_pad_sequences_bad_input():
    with pytest.raises(ValueError, match='Padding type "mid" not understood'):
        U.pad_sequences([[1], [2]], padding="mid")
    with pytest.raises(ValueError, match="dtype=object"):
        U.pad_sequences([["a"]])
    with pytest.raises(ValueError, match="non-iterable"):
        U.pad_sequences([1, 2])
    with pytest.raises(ValueError, match="same shape"):
        U.pad_sequences([[[1, 2]], [[1, 2, 3]]])


# ---- custom objects: the same registry as keras.saving ----------------------------------------
def test_custom_object_functions_are_keras_saving_s():
    for name in ("register_keras_serializable", "get_custom_objects", "custom_object_scope",
                 "CustomObjectScope", "get_registered_name", "get_registered_object"):
        assert getattr(U, name) is getattr(saving, name) is getattr(object_registration, name)


def test_custom_object_scope_and_registry():
    @U.register_keras_serializable(package="utils_test")
    def my_fn(x):
        return x

    assert U.get_custom_objects()["utils_test>my_fn"] is my_fn
    assert U.get_registered_name(my_fn) == "utils_test>my_fn"
    with U.custom_object_scope({"Thing": int}):
        assert U.get_registered_object("Thing") is int
    assert U.get_registered_object("Thing") is None


# ---- set_random_seed ---------------------------------------------------------------------------
def _draws():
    return (random.random(), np.random.rand(), tf.random.normal([3]).numpy(),
            keras.layers.Dense(2, kernel_initializer="glorot_uniform")(
                np.ones((1, 2), np.float32)).numpy())


def test_set_random_seed_repeats_every_generator():
    U.set_random_seed(123)
    first = _draws()
    U.set_random_seed(123)
    second = _draws()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    U.set_random_seed(124)
    assert _draws()[0] != first[0]


def test_set_random_seed_rejects_non_integers():
    with pytest.raises(ValueError, match="Expected `seed` argument to be an integer"):
        U.set_random_seed(1.5)
    with pytest.raises(ValueError, match="integer"):
        U.set_random_seed("3")


# ---- plot_model --------------------------------------------------------------------------------
def _functional():
    a = keras.Input((3,), name="a")
    b = keras.Input((3,), name="b")
    s = keras.layers.Add(name="sum")([keras.layers.Dense(3, name="da")(a), b])
    return keras.Model([a, b], keras.layers.Dense(1, name="out")(s), name="net")


def test_dot_source_draws_layers_and_connections():
    source = model_visualization.dot_source(_functional(), show_shapes=True)
    assert source.startswith('digraph "net" {')
    for label in ("a (InputLayer)", "da (Dense)", "sum (Add)", "out (Dense)",
                  "output: (None, 1)"):
        assert label in source
    ids = {line.split()[0]: line for line in source.splitlines() if "[label=" in line}
    by_name = {name: next(i for i, line in ids.items() if f'"{name} (' in line)
               for name in ("a", "b", "da", "sum", "out")}
    edges = {tuple(line.strip().rstrip(";").split(" -> ")) for line in source.splitlines()
             if "->" in line}
    assert edges == {(by_name["a"], by_name["da"]), (by_name["da"], by_name["sum"]),
                     (by_name["b"], by_name["sum"]), (by_name["sum"], by_name["out"])}


def test_plot_model_without_pydot_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydot", None)        # import pydot fails
    with pytest.raises(ImportError, match=r"You must install pydot \(`pip install pydot`\) for "
                                          r"`plot_model` to work."):
        U.plot_model(_functional())
    with pytest.raises(ImportError, match="model_to_dot"):
        U.model_to_dot(_functional())


def test_plot_model_writes_through_pydot(monkeypatch, tmp_path):
    written = {}

    class FakeDot:
        def __init__(self, source=None):
            self.source = source

        def write(self, path, format):            # noqa: A002 - pydot's argument name
            written.update(path=path, format=format, source=self.source)

        @staticmethod
        def create(dot):
            return b""

    fake = types.SimpleNamespace(Dot=FakeDot,
                                 graph_from_dot_data=lambda text: [FakeDot(text)])
    monkeypatch.setitem(sys.modules, "pydot", fake)
    target = tmp_path / "model.svg"
    assert U.plot_model(_functional(), to_file=target, show_layer_names=True) == str(target)
    assert written["format"] == "svg" and "out (Dense)" in written["source"]
    assert isinstance(U.model_to_dot(_functional()), FakeDot)


def test_plot_model_without_graphviz(monkeypatch, tmp_path):
    class NoGraphviz:
        def __init__(self, source=None):
            pass

        @staticmethod
        def create(dot):
            raise FileNotFoundError("dot not found in path")

    fake = types.SimpleNamespace(Dot=NoGraphviz, graph_from_dot_data=lambda t: [NoGraphviz()])
    monkeypatch.setitem(sys.modules, "pydot", fake)
    with pytest.raises(ImportError, match="You must install graphviz"):
        U.plot_model(_functional(), to_file=tmp_path / "m.png")


# ---- keras.backend -----------------------------------------------------------------------------
def test_backend_functions():
    B = keras.backend
    assert B.floatx() == "float32" and B.epsilon() == 1e-7
    assert B.int_shape(tf.zeros([2, 3])) == (2, 3)
    assert B.int_shape(keras.Input((4,))) == (None, 4)
    x = B.random_normal((2000,), mean=3.0, stddev=0.5, seed=1)
    assert x.dtype == tf.float32 and x.shape == (2000,)
    assert abs(float(np.mean(x.numpy())) - 3.0) < 0.05
    assert abs(float(np.std(x.numpy())) - 0.5) < 0.05
    tf.random.set_seed(5)
    first = B.random_normal((3,)).numpy()
    tf.random.set_seed(5)
    np.testing.assert_array_equal(B.random_normal((3,)).numpy(), first)
    u = B.random_uniform((1000,), 2.0, 3.0, dtype="float64")
    assert u.dtype == tf.float64 and 2.0 <= float(np.min(u.numpy())) < float(
        np.max(u.numpy())) < 3.0
    assert B.cast_to_floatx(np.arange(3)).dtype == np.float32
    assert B.cast_to_floatx(tf.constant([1, 2])).dtype == tf.float32
    with pytest.raises(ValueError, match="floating"):
        B.random_normal((2,), dtype="int32")


def test_clear_session_restarts_layer_names():
    keras.backend.clear_session()
    assert keras.layers.Dense(1).name == "dense"
    assert keras.layers.Dense(1).name == "dense_1"
    keras.backend.clear_session(free_memory=True)
    assert keras.layers.Dense(1).name == "dense"


# ---- tf.compat -------------------------------------------------------------------------------
def test_compat_string_conversions_match_tf():
    assert tf.compat.as_bytes("é") == b"\xc3\xa9"
    assert tf.compat.as_bytes("é", encoding="latin-1") == b"\xe9"
    assert tf.compat.as_bytes(bytearray(b"x")) == b"x"
    assert tf.compat.as_str(b"\xc3\xa9") == "é"
    assert tf.compat.as_text(b"abc") == "abc" and tf.compat.as_text("abc") == "abc"
    assert tf.compat.as_str_any(3) == "3" and tf.compat.as_str_any(b"ab") == "ab"
    for bad in (3, None):
        with pytest.raises(TypeError, match="Expected binary or unicode string, got"):
            tf.compat.as_bytes(bad)
        with pytest.raises(TypeError, match="Expected binary or unicode string, got"):
            tf.compat.as_text(bad)
