"""Weight files: hybridtf.keras.saving.save_weights / load_weights, in both formats: HDF5 in
Keras 3's layout for names ending in ``.h5`` (more in test_h5_weights.py), hybridtf's
``.npz`` archive for other names."""
import os
import zipfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from hybridtf.keras import saving
from hybridtf.saved_model.array_file import UnreadableFileError


class TwoLayers(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.kernel = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="kernel")
        self.bias = tf.Variable(np.zeros(3, np.float32), name="bias")
        self.steps = tf.Variable(7, trainable=False, name="steps")


class StandIn:
    """What a Keras layer looks like to the saving functions: a name and ordered weights."""

    def __init__(self, weights, name="dense"):
        self.weights = weights
        self.name = name


def _values(module):
    return [np.array(v.numpy()) for v in module.variables]


def _leftovers(directory):
    return [n for n in os.listdir(directory) if n.endswith(".tmp")]


@pytest.mark.parametrize("name", ["model.weights.h5", os.path.join("ckpt", "weights"),
                                  "weights", os.path.join("a", "b", "w.ckpt")])
def test_round_trip_with_keras_file_names(tmp_path, name):
    source = TwoLayers()
    source.kernel.assign(source.kernel * 2.5)
    source.steps.assign(42)
    path = tmp_path / name
    saving.save_weights(source, str(path))
    assert path.is_file()                      # parent directories were created
    assert _leftovers(path.parent) == []
    assert path.read_bytes()[:4] == (b"\x89HDF" if name.endswith(".h5") else b"PK\x03\x04")

    target = TwoLayers()
    saving.load_weights(target, path)          # a PathLike works too
    for got, want in zip(_values(target), _values(source)):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    assert int(target.steps.numpy()) == 42


weight_arrays = st.lists(
    hnp.arrays(dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.bool_,
                                      np.float16, np.uint8]),
               shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)),
    min_size=0, max_size=4)


@given(weight_arrays)
def test_any_weights_round_trip_exactly(tmp_path_factory, arrays):
    path = tmp_path_factory.mktemp("w") / "w.weights.h5"
    saving.save_weights(StandIn([tf.Variable(a) for a in arrays]), path)
    restored = [tf.Variable(np.zeros_like(a)) for a in arrays]
    saving.load_weights(StandIn(restored), path)
    for variable, array in zip(restored, arrays):
        got = variable.numpy()
        assert got.dtype == array.dtype and got.shape == array.shape
        np.testing.assert_array_equal(got, array)     # NaNs compare equal here too


def test_overwrite(tmp_path):
    path = tmp_path / "w.h5"
    saving.save_weights(TwoLayers(), path)
    first = path.read_bytes()
    changed = TwoLayers()
    changed.bias.assign([1.0, 2.0, 3.0])
    with pytest.raises(FileExistsError, match="already exists and overwrite=False"):
        saving.save_weights(changed, path, overwrite=False)
    assert path.read_bytes() == first
    saving.save_weights(changed, path)          # overwrite=True (the default) replaces it
    target = TwoLayers()
    saving.load_weights(target, path)
    np.testing.assert_array_equal(target.bias.numpy(), [1.0, 2.0, 3.0])
    saving.save_weights(changed, tmp_path / "new.h5", overwrite=False)  # a new file is fine


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "w"
    saving.save_weights(TwoLayers(), path)
    before = path.read_bytes()

    def broken_savez(file, **arrays):
        file.write(b"PK\x03\x04partial")
        raise OSError("disk full")
    monkeypatch.setattr(np, "savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        saving.save_weights(TwoLayers(), path)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_failed_hdf5_write_keeps_the_old_file(tmp_path, monkeypatch):
    import h5py
    path = tmp_path / "w.weights.h5"
    saving.save_weights(TwoLayers(), path)
    before = path.read_bytes()
    original = h5py.Group.create_dataset

    def fails_on_the_second(group, name, **kwargs):
        if name == "1":
            raise OSError("disk full")
        return original(group, name, **kwargs)
    monkeypatch.setattr(h5py.Group, "create_dataset", fails_on_the_second)
    with pytest.raises(OSError, match="disk full"):
        saving.save_weights(TwoLayers(), path)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_count_mismatch_names_both_counts(tmp_path):
    path = tmp_path / "w"
    saving.save_weights(TwoLayers(), path)
    with pytest.raises(ValueError, match=r"dense has 1 weights but the file .* holds 3"):
        saving.load_weights(StandIn([tf.Variable(1.0)]), path)
    with pytest.raises(ValueError, match="has no weights yet: build it"):
        saving.load_weights(StandIn([]), path)


def test_shape_mismatch_names_the_variable_and_assigns_nothing(tmp_path):
    path = tmp_path / "w"
    saving.save_weights(TwoLayers(), path)
    # TwoLayers.variables is ordered by attribute name: bias (3,), kernel (2, 3), steps.
    target = StandIn([tf.Variable(np.full(3, 9.0, np.float32), name="b"),
                      tf.Variable(np.full((3, 2), 9.0, np.float32), name="k"),
                      tf.Variable(9, name="s")])
    with pytest.raises(ValueError, match=r"weight #1 'k:0' of dense has shape \(3, 2\).*"
                                         r"holds shape \(2, 3\).*saved as 'kernel:0'"):
        saving.load_weights(target, path)
    assert np.all(target.weights[0].numpy() == 9.0)   # checked first, nothing assigned


def test_dtype_mismatch_names_the_variable(tmp_path):
    path = tmp_path / "w"
    saving.save_weights(StandIn([tf.Variable(np.ones(2, np.float32), name="w")]), path)
    with pytest.raises(ValueError, match=r"weight #0 'v:0' of dense has dtype float64 but the "
                                         r"file .* holds float32"):
        saving.load_weights(StandIn([tf.Variable(np.ones(2), name="v")]), path)


def test_missing_file(tmp_path):
    path = tmp_path / "nothing.h5"
    with pytest.raises(FileNotFoundError, match="nothing.h5' does not exist"):
        saving.load_weights(TwoLayers(), path)


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        saving.save_weights(TwoLayers(), tmp_path)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        saving.load_weights(TwoLayers(), tmp_path)


@pytest.mark.parametrize("name", ["w.h5", "w.ckpt"])
def test_truncated_file(tmp_path, name):
    path = tmp_path / name
    saving.save_weights(TwoLayers(), path)
    data = path.read_bytes()
    for cut in (len(data) // 2, 40, 6):
        path.write_bytes(data[:cut])
        with pytest.raises(UnreadableFileError, match=rf"{name}' is truncated or corrupted") \
                as err:
            saving.load_weights(TwoLayers(), path)
        assert err.value.path == str(path)


def test_corrupted_bytes_inside(tmp_path):
    path = tmp_path / "w.ckpt"
    saving.save_weights(TwoLayers(), path)
    data = bytearray(path.read_bytes())
    data[len(data) // 3: len(data) // 3 + 20] = b"\x00" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="truncated or corrupted|unreadable manifest"):
        saving.load_weights(TwoLayers(), path)


@pytest.mark.parametrize("content, message", [
    (bytes(range(256)) * 4, "not a hybridtf hybridtf.weights file: it starts with bytes"),
    (b"\x89HDF\r\n\x1a\n" + b"\x00" * 100, "truncated or corrupted"),
    (b"", "it is empty"),
])
def test_foreign_files(tmp_path, content, message):
    path = tmp_path / "w.h5"
    path.write_bytes(content)
    with pytest.raises(UnreadableFileError, match=message):
        saving.load_weights(TwoLayers(), path)


def test_foreign_zip_and_npz(tmp_path):
    npz = tmp_path / "plain.npz"
    np.savez(npz, a=np.ones(3))
    with pytest.raises(UnreadableFileError, match="was not written by hybridtf"):
        saving.load_weights(TwoLayers(), npz)
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(UnreadableFileError, match="was not written by hybridtf"):
        saving.load_weights(TwoLayers(), other)


def test_pickled_arrays_are_never_loaded(tmp_path):
    path = tmp_path / "evil.ckpt"
    saving.save_weights(StandIn([tf.Variable(1.0)]), path)
    with zipfile.ZipFile(path, "a") as z:
        with z.open("weight_1.npy", "w") as f:
            np.lib.format.write_array(f, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(UnreadableFileError, match="truncated or corrupted.*allow_pickle"):
        saving.load_weights(StandIn([tf.Variable(0.0)]), path)


def test_other_hybridtf_formats_and_newer_versions(tmp_path):
    from hybridtf.saved_model import array_file
    path = tmp_path / "w"
    array_file.write_arrays(path, {"format": "hybridtf.saved_model.variables", "version": 1}, {})
    with pytest.raises(UnreadableFileError, match="holds a 'hybridtf.saved_model.variables' "
                                                  "file, not a 'hybridtf.weights' file"):
        saving.load_weights(TwoLayers(), path)
    array_file.write_arrays(path, {"format": "hybridtf.weights", "version": 99, "weights": []},
                            {})
    with pytest.raises(UnreadableFileError, match="format version 99.*Upgrade hybridtf"):
        saving.load_weights(TwoLayers(), path)


def test_string_weights_are_refused(tmp_path):
    with pytest.raises(TypeError, match="dtype string, which cannot be saved"):
        saving.save_weights(StandIn([tf.Variable(np.array([b"a"], dtype=object))]),
                            tmp_path / "w")


def test_objects_without_weights_are_refused(tmp_path):
    with pytest.raises(TypeError, match="neither `weights` nor `variables`"):
        saving.save_weights(object(), tmp_path / "w")
    with pytest.raises(TypeError, match="is not a tf.Variable"):
        saving.save_weights(StandIn([np.ones(2)]), tmp_path / "w")
