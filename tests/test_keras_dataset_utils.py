"""keras.utils' data utilities: image_dataset_from_directory, text_dataset_from_directory,
timeseries_dataset_from_array, load_img / img_to_array / array_to_img / save_img, get_file,
and their keras.preprocessing names.  Numbers marked TF 2.21 were recorded with TensorFlow 2.21
(Keras 3.15) on the same files, which the tests write with Pillow from a seeded generator."""
import io
import os
import sys
import tarfile
import zipfile

import numpy as np
import pytest
from PIL import Image

import hybridtf as tf
from hybridtf import keras


# ---- a directory of images -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def image_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    rs = np.random.RandomState(0)
    sizes = {"cats": [(6, 8), (8, 6), (5, 5)], "dogs": [(7, 9), (4, 10)], "zebras": [(9, 4)]}
    for cls, shapes in sizes.items():
        (root / cls).mkdir()
        for i, (h, w) in enumerate(shapes):
            Image.fromarray(rs.randint(0, 256, (h, w, 3)).astype("uint8")).save(
                root / cls / f"img_{i}.png")
    (root / "dogs" / "puppies").mkdir()              # nested: still a dog
    Image.fromarray(rs.randint(0, 256, (6, 6, 3)).astype("uint8")).save(
        root / "dogs" / "puppies" / "p.png")
    (root / "cats" / "notes.txt").write_text("not an image")      # not an image format
    Image.fromarray(rs.randint(0, 256, (5, 5)).astype("uint8")).save(root / "stray.png")
    return str(root)


def relative(paths, root):
    return [os.path.relpath(p, root).replace(os.sep, "/") for p in paths]


FILES = ["cats/img_0.png", "cats/img_1.png", "cats/img_2.png", "dogs/img_0.png",
         "dogs/img_1.png", "dogs/puppies/p.png", "zebras/img_0.png"]


def test_image_dataset_matches_tensorflow(image_root, capsys):
    ds = keras.utils.image_dataset_from_directory(image_root, image_size=(4, 4), batch_size=3,
                                                  shuffle=False)
    assert "Found 7 files belonging to 3 classes." in capsys.readouterr().out
    assert ds.class_names == ["cats", "dogs", "zebras"]
    assert relative(ds.file_paths, image_root) == FILES
    images_spec, labels_spec = ds.element_spec
    assert images_spec.shape.as_list() == [None, 4, 4, 3] and images_spec.dtype == tf.float32
    assert labels_spec.shape.as_list() == [None] and labels_spec.dtype == tf.int32
    batches = [(x.numpy(), y.numpy()) for x, y in ds]
    assert [b[1].tolist() for b in batches] == [[0, 0, 0], [1, 1, 1], [2]]
    sums = [b[0].sum(axis=(1, 2, 3)).tolist() for b in batches]
    np.testing.assert_allclose(sums[0] + sums[1] + sums[2],                       # TF 2.21
                               [5844.0, 5884.0, 5821.625, 5860.5, 6101.0, 6868.312, 6473.625],
                               rtol=1e-6)
    np.testing.assert_allclose(batches[0][0][0, 0, :2], [[150.625, 62.5, 167.625],
                                                         [179.375, 95.375, 133.125]])
    # Against tf.image.resize of the decoded file, by hand.
    first = np.asarray(Image.open(os.path.join(image_root, FILES[0])), np.float32)
    np.testing.assert_allclose(batches[0][0][0], tf.image.resize(first, (4, 4)).numpy(),
                               rtol=1e-6)


def test_image_dataset_shuffles_files_as_keras_does(image_root):
    ds = keras.utils.image_dataset_from_directory(image_root, image_size=(4, 4),
                                                  batch_size=None, seed=42, verbose=False)
    assert relative(ds.file_paths, image_root) == [                             # TF 2.21
        "cats/img_0.png", "cats/img_1.png", "dogs/puppies/p.png", "cats/img_2.png",
        "dogs/img_1.png", "dogs/img_0.png", "zebras/img_0.png"]
    first_epoch = [(float(x.numpy().sum()), int(y)) for x, y in ds]
    assert sorted(y for _, y in first_epoch) == [0, 0, 0, 1, 1, 1, 2]   # each image once
    # The same seed gives the same epochs.
    again = keras.utils.image_dataset_from_directory(image_root, image_size=(4, 4),
                                                     batch_size=None, seed=42, verbose=False)
    assert [(float(x.numpy().sum()), int(y)) for x, y in again] == first_epoch


def test_image_dataset_label_modes_color_modes_and_resizing(image_root):
    ds = keras.utils.image_dataset_from_directory(
        image_root, image_size=(3, 5), batch_size=8, shuffle=False, label_mode="categorical",
        color_mode="grayscale", crop_to_aspect_ratio=True, verbose=False)
    x, y = next(iter(ds))
    assert x.shape == (7, 3, 5, 1)
    np.testing.assert_array_equal(y.numpy(), np.eye(3, dtype="f")[[0, 0, 0, 1, 1, 1, 2]])
    # TF 2.21; TF's PNG decoder turns RGB into gray slightly differently (by one level in
    # about one pixel in a hundred), hence the tolerance.
    np.testing.assert_allclose(x.numpy().sum(axis=(1, 2, 3)),
                               [1885.3, 1567.3, 1612.0, 1754.733, 1833.95, 2206.1, 2371.8],
                               rtol=1e-3)
    ds = keras.utils.image_dataset_from_directory(
        image_root, image_size=(5, 3), batch_size=8, shuffle=False, pad_to_aspect_ratio=True,
        labels=None, color_mode="rgba", verbose=False)
    x = next(iter(ds))                             # images only; the stray one too
    assert x.shape == (8, 5, 3, 4) and ds.class_names is None
    np.testing.assert_allclose(x.numpy().sum(axis=(1, 2, 3)),                   # TF 2.21
                               [6138.666, 4147.167, 7420.5, 5641.444, 3704.0, 1885.916, 6138.5,
                                6711.6], rtol=1e-6)
    np.testing.assert_array_equal(x.numpy()[1, :, :, 3],                        # zero padding
                                  [[0, 0, 0], [255, 255, 255], [255, 255, 255], [0, 0, 0],
                                   [0, 0, 0]])
    ds = keras.utils.image_dataset_from_directory(
        image_root, image_size=(4, 4), batch_size=2, shuffle=False, interpolation="nearest",
        class_names=["dogs", "cats"], label_mode="binary", verbose=False)
    x, y = next(iter(ds))
    assert x.dtype == tf.uint8 and y.numpy().tolist() == [[0.0], [0.0]]         # TF 2.21
    assert relative(ds.file_paths, image_root) == [
        "dogs/img_0.png", "dogs/img_1.png", "dogs/puppies/p.png", "cats/img_0.png",
        "cats/img_1.png", "cats/img_2.png"]
    ds = keras.utils.image_dataset_from_directory(
        image_root, image_size=(2, 2), labels=[0, 1, 2, 0, 1, 2, 0, 1], batch_size=8,
        shuffle=False, verbose=False)
    assert relative(ds.file_paths, image_root) == ["stray.png"] + FILES
    assert next(iter(ds))[1].numpy().tolist() == [0, 1, 2, 0, 1, 2, 0, 1]
    assert ds.class_names == ["0", "1", "2"]
    ds = keras.utils.image_dataset_from_directory(image_root, image_size=(4, 4), batch_size=2,
                                                  shuffle=False, data_format="channels_first",
                                                  verbose=False)
    assert next(iter(ds))[0].shape == (2, 3, 4, 4)


def test_image_dataset_validation_split(image_root, capsys):
    train, val = keras.utils.image_dataset_from_directory(
        image_root, image_size=(4, 4), validation_split=0.34, subset="both", seed=7)
    out = capsys.readouterr().out
    assert "Using 5 files for training." in out and "Using 2 files for validation." in out
    assert relative(train.file_paths, image_root) == [                          # TF 2.21
        "cats/img_2.png", "dogs/puppies/p.png", "cats/img_0.png", "zebras/img_0.png",
        "dogs/img_0.png"]
    assert relative(val.file_paths, image_root) == ["cats/img_1.png", "dogs/img_1.png"]
    alone = keras.utils.image_dataset_from_directory(
        image_root, image_size=(4, 4), validation_split=0.34, subset="validation", seed=7,
        verbose=False)
    assert alone.file_paths == val.file_paths
    # The guide's use: fit on the training images, validate on the others.
    model = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Flatten(),
                              keras.layers.Dense(3)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  ["accuracy"])
    history = model.fit(train, validation_data=val, epochs=2, verbose=0)
    assert set(history.history) == {"accuracy", "loss", "val_accuracy", "val_loss"}


def test_image_dataset_reads_every_image_format(tmp_path):
    rs = np.random.RandomState(3)
    pixels = rs.randint(0, 256, (6, 6, 3)).astype("uint8")
    (tmp_path / "a").mkdir()
    for ext in ("png", "bmp", "jpg", "jpeg", "gif"):
        Image.fromarray(pixels).save(tmp_path / "a" / f"x.{ext.upper() if ext == 'png' else ext}")
    ds = keras.utils.image_dataset_from_directory(str(tmp_path), image_size=(6, 6),
                                                  batch_size=None, shuffle=False,
                                                  verbose=False)
    assert relative(ds.file_paths, str(tmp_path)) == [
        "a/x.PNG", "a/x.bmp", "a/x.gif", "a/x.jpeg", "a/x.jpg"]
    images = [x.numpy() for x, _ in ds]
    np.testing.assert_array_equal(images[0], pixels)          # lossless: exact
    np.testing.assert_array_equal(images[1], pixels)
    for lossy in images[2:]:
        assert lossy.shape == (6, 6, 3) and np.abs(lossy - pixels).mean() < 60


def test_image_dataset_errors(image_root, tmp_path):
    def make(**kwargs):
        return keras.utils.image_dataset_from_directory(image_root, verbose=False, **kwargs)
    with pytest.raises(ValueError, match="No images found in directory"):
        keras.utils.image_dataset_from_directory(str(tmp_path), verbose=False)
    with pytest.raises(FileNotFoundError, match="Could not find directory"):
        keras.utils.image_dataset_from_directory(str(tmp_path / "nowhere"), verbose=False)
    with pytest.raises(ValueError, match="len\\(labels\\) is 2 while we found 8 files"):
        make(labels=[0, 1])
    with pytest.raises(ValueError, match='label_mode="binary"`, there must be exactly 2'):
        make(label_mode="binary")
    with pytest.raises(ValueError, match="must provide a `seed` argument"):
        make(validation_split=0.2, subset="training")
    with pytest.raises(ValueError, match="`validation_split` must be set"):
        make(subset="training")
    with pytest.raises(ValueError, match="did not match the names of the subdirectories"):
        make(class_names=["cats", "horses"])
    with pytest.raises(ValueError, match="`color_mode` must be one of"):
        make(color_mode="cmyk")
    with pytest.raises(ValueError, match="Only one of `pad_to_aspect_ratio`"):
        make(crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)
    with pytest.raises(ValueError, match="`format` must be \"tf\""):
        make(format="grain")


def test_graph_tensor_set_shape_refines_the_static_shape():
    # What the utilities (and Keras users) do after decoding in Dataset.map.
    ds = tf.data.Dataset.from_tensor_slices([b"ab", b"cde"])

    def load(text):
        out = tf.py_function(lambda t: t.numpy()[:1], [text], tf.string)
        assert out.shape.rank is None
        out.set_shape(())
        return out
    assert ds.map(load).element_spec.shape.as_list() == []

    def wrong(text):
        text.set_shape((2,))
        return text
    with pytest.raises(ValueError, match="not compatible with supplied shape"):
        ds.map(wrong)


# ---- text ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def text_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("texts")
    for cls, texts in {"neg": ["bad movie", "awful plot twist", "meh"],
                       "pos": ["great film!", "loved it"]}.items():
        (root / cls).mkdir()
        for i, text in enumerate(texts):
            (root / cls / f"{i}.txt").write_text(text)
    return str(root)


def test_text_dataset_matches_tensorflow(text_root):
    ds = keras.utils.text_dataset_from_directory(text_root, batch_size=2, shuffle=False,
                                                 max_length=5, verbose=False)
    assert ds.class_names == ["neg", "pos"]
    texts, labels = ds.element_spec
    assert texts.shape.as_list() == [None] and texts.dtype == tf.string
    got = [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    assert got == [([b"bad m", b"awful"], [0, 0]), ([b"meh", b"great"], [0, 1]),   # TF 2.21
                   ([b"loved"], [1])]
    ds = keras.utils.text_dataset_from_directory(text_root, batch_size=None, seed=3,
                                                 label_mode="categorical", verbose=False)
    assert relative(ds.file_paths, text_root) == [
        "pos/0.txt", "pos/1.txt", "neg/1.txt", "neg/0.txt", "neg/2.txt"]
    texts, labels = ds.element_spec
    assert texts.shape.as_list() == [] and labels.shape.as_list() == [2]
    pairs = sorted((x.numpy(), tuple(y.numpy())) for x, y in ds)
    assert pairs == [(b"awful plot twist", (1.0, 0.0)), (b"bad movie", (1.0, 0.0)),
                     (b"great film!", (0.0, 1.0)), (b"loved it", (0.0, 1.0)),
                     (b"meh", (1.0, 0.0))]
    train, val = keras.utils.text_dataset_from_directory(
        text_root, validation_split=0.4, subset="both", seed=1, verbose=False)
    assert len(train.file_paths) == 3 and len(val.file_paths) == 2
    assert not set(train.file_paths) & set(val.file_paths)
    with pytest.raises(ValueError, match="`max_length` must be a non-negative integer"):
        keras.utils.text_dataset_from_directory(text_root, max_length=-1)


# ---- timeseries ----------------------------------------------------------------------------------
def windows_np(data, targets, length, stride, rate, start, end):
    """The windows and targets, by hand."""
    end = len(data) if end is None else end
    starts = range(start, end - (length - 1) * rate, stride)
    if targets is not None:
        starts = [s for s in starts if s < len(targets)]
    x = np.stack([data[s:s + length * rate:rate] for s in starts])
    return x, None if targets is None else np.asarray(targets)[list(starts)]


def test_timeseries_dataset_matches_tensorflow_and_numpy():
    data = np.arange(30, dtype="float32").reshape(15, 2)
    targets = np.arange(100, 115)
    ds = keras.utils.timeseries_dataset_from_array(
        data, targets, sequence_length=4, sequence_stride=2, sampling_rate=2, batch_size=3,
        start_index=1, end_index=14)
    got = [(x.numpy()[:, :, 0].tolist(), y.numpy().tolist()) for x, y in ds]
    assert got == [([[2.0, 6.0, 10.0, 14.0], [6.0, 10.0, 14.0, 18.0],            # TF 2.21
                     [10.0, 14.0, 18.0, 22.0]], [101, 103, 105]),
                   ([[14.0, 18.0, 22.0, 26.0]], [107])]
    x_spec, y_spec = ds.element_spec
    assert x_spec.shape.as_list()[::2] == [None, 2] and x_spec.dtype == tf.float32
    assert y_spec.dtype == tf.int64
    rng = np.random.RandomState(0)
    for length, stride, rate, start, end, n_targets in [(3, 1, 1, 0, None, 20),
                                                        (5, 3, 2, 2, 18, 9),
                                                        (1, 4, 1, 0, 7, None),
                                                        (4, 1, 3, 5, None, 20)]:
        series = rng.randn(20, 3).astype("float32")
        tgt = None if n_targets is None else rng.randn(n_targets).astype("float32")
        ds = keras.utils.timeseries_dataset_from_array(
            series, tgt, length, sequence_stride=stride, sampling_rate=rate, batch_size=2,
            start_index=start or None, end_index=end)
        want_x, want_y = windows_np(series, tgt, length, stride, rate, start, end)
        if tgt is None:
            got_x = np.concatenate([x.numpy() for x in ds])
        else:
            got_x = np.concatenate([x.numpy() for x, _ in ds])
            np.testing.assert_array_equal(np.concatenate([y.numpy() for _, y in ds]), want_y)
        np.testing.assert_array_equal(got_x, want_x)


def test_timeseries_dataset_shuffles_every_window_once():
    data = np.arange(15, dtype="float32")
    ds = keras.utils.timeseries_dataset_from_array(data, None, sequence_length=3,
                                                   batch_size=None, shuffle=True, seed=5)
    starts = [int(x.numpy()[0]) for x in ds]
    assert sorted(starts) == list(range(13)) and starts != list(range(13))      # 13: TF 2.21
    with pytest.raises(ValueError, match="`sampling_rate` must be higher than 0"):
        keras.utils.timeseries_dataset_from_array(data, None, 3, sampling_rate=0)
    with pytest.raises(ValueError, match="`end_index` must be higher than `start_index`"):
        keras.utils.timeseries_dataset_from_array(data, None, 3, start_index=5, end_index=4)
    with pytest.raises(ValueError, match="`start_index` must be lower than the length"):
        keras.utils.timeseries_dataset_from_array(data, None, 3, start_index=20)


# ---- images as arrays ----------------------------------------------------------------------------
def test_load_img_and_array_conversions_match_tensorflow(image_root, tmp_path):
    path = os.path.join(image_root, "dogs", "img_0.png")
    img = keras.utils.load_img(path, target_size=(4, 5), interpolation="bilinear")
    assert img.size == (5, 4) and img.mode == "RGB"
    array = keras.utils.img_to_array(img)
    assert array.dtype == np.float32 and array.shape == (4, 5, 3)
    assert array.sum() == 7390.0                                                # TF 2.21
    gray = keras.utils.load_img(path, color_mode="grayscale", target_size=(3, 3),
                                keep_aspect_ratio=True)
    assert gray.mode == "L"
    assert keras.utils.img_to_array(gray).ravel().tolist() == [                  # TF 2.21
        167.0, 64.0, 147.0, 149.0, 46.0, 137.0, 117.0, 55.0, 139.0]
    assert keras.utils.img_to_array(gray).shape == (3, 3, 1)
    with open(path, "rb") as f:
        from_bytes = keras.utils.load_img(io.BytesIO(f.read()))
    assert from_bytes.size == (9, 7)
    values = np.linspace(-1, 1, 24, dtype="float32").reshape(2, 4, 3)
    back = keras.utils.array_to_img(values)
    assert back.mode == "RGB" and back.size == (4, 2)
    assert np.asarray(back).ravel()[:6].tolist() == [0, 11, 22, 33, 44, 55]      # TF 2.21
    np.testing.assert_array_equal(np.asarray(back),
                                  ((values + 1) / 2 * 255).astype(np.uint8))
    assert keras.utils.img_to_array(back, data_format="channels_first").shape == (3, 2, 4)
    assert keras.utils.array_to_img(values[:, :, :1], scale=False).mode == "L"
    keras.utils.save_img(str(tmp_path / "out.png"), values)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "out.png")), np.asarray(back))
    resized = keras.preprocessing.image.smart_resize(
        np.arange(48, dtype="float32").reshape(4, 4, 3), (2, 3))
    assert isinstance(resized, np.ndarray)
    np.testing.assert_allclose(resized.ravel(), [                                # TF 2.21
        12.5, 13.5, 14.5, 16.5, 17.5, 18.5, 20.5, 21.5, 22.5, 24.5, 25.5, 26.5, 28.5, 29.5,
        30.5, 32.5, 33.5, 34.5])
    with pytest.raises(ValueError, match="rank 3"):
        keras.utils.array_to_img(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="invalid interpolation method 'cubic'"):
        keras.utils.load_img(path, target_size=(2, 2), interpolation="cubic")


def test_image_helpers_without_pillow(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(ImportError, match=r"load_img needs Pillow.*hybridtf\[images\]"):
        keras.utils.load_img("whatever.png")
    with pytest.raises(ImportError, match="array_to_img needs Pillow"):
        keras.utils.array_to_img(np.zeros((2, 2, 3)))
    # img_to_array needs only NumPy.
    assert keras.utils.img_to_array(np.ones((2, 3))).shape == (2, 3, 1)


# ---- get_file ------------------------------------------------------------------------------------
def test_get_file_reads_the_keras_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    datasets = tmp_path / "home" / "datasets"
    datasets.mkdir(parents=True)
    (datasets / "data.csv").write_text("a,b\n1,2\n")
    origin = "https://example.invalid/files/data.csv"
    assert keras.utils.get_file("data.csv", origin=origin) == str(datasets / "data.csv")
    assert keras.utils.get_file(origin=origin) == str(datasets / "data.csv")   # name from URL
    sha256 = "0" * 64
    with pytest.raises(ValueError, match="does not match the expected sha256 hash"):
        keras.utils.get_file("data.csv", origin=origin, file_hash=sha256)
    import hashlib
    digest = hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    md5 = hashlib.md5(b"a,b\n1,2\n").hexdigest()
    assert keras.utils.get_file("data.csv", origin=origin, file_hash=digest).endswith("data.csv")
    assert keras.utils.get_file("data.csv", origin=origin, md5_hash=md5).endswith("data.csv")
    other = tmp_path / "elsewhere"
    (other / "models").mkdir(parents=True)
    (other / "models" / "w.h5").write_bytes(b"x")
    assert keras.utils.get_file("w.h5", origin="https://example.invalid/w.h5",
                                cache_dir=str(other), cache_subdir="models") == \
        str(other / "models" / "w.h5")


def test_get_file_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    origin = "https://example.invalid/missing.npz"
    with pytest.raises(FileNotFoundError, match="never downloads: download "
                                                "https://example.invalid/missing.npz"):
        keras.utils.get_file("missing.npz", origin=origin)
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "missing.npz").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="force_download=True"):
        keras.utils.get_file("missing.npz", origin=origin, force_download=True)
    with pytest.raises(ValueError, match='specify the "origin" argument'):
        keras.utils.get_file("missing.npz")
    with pytest.raises(ValueError, match="use the `cache_dir` argument"):
        keras.utils.get_file(os.path.join("sub", "missing.npz"), origin=origin)


def test_get_file_extracts_archives_where_keras_does(tmp_path):
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    with tarfile.open(datasets / "bundle.tar.gz", "w:gz") as archive:
        payload = b"hello"
        info = tarfile.TarInfo("bundle/readme.txt")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    path = keras.utils.get_file("bundle.tar.gz", origin="https://example.invalid/bundle.tar.gz",
                                extract=True, cache_dir=str(tmp_path))
    assert path == str(datasets / "bundle_extracted")                           # TF 2.21
    assert (datasets / "bundle_extracted" / "bundle" / "readme.txt").read_bytes() == b"hello"
    with zipfile.ZipFile(datasets / "pack_archive", "w") as archive:
        archive.writestr("a/b.txt", "zip content")
    path = keras.utils.get_file(origin="https://example.invalid/pack", extract=True,
                                cache_dir=str(tmp_path))
    assert path == str(datasets / "pack")
    assert (datasets / "pack" / "a" / "b.txt").read_text() == "zip content"
    with zipfile.ZipFile(datasets / "evil.zip", "w") as archive:
        archive.writestr("../outside.txt", "no")
    with pytest.raises(ValueError, match="outside"):
        keras.utils.get_file("evil.zip", origin="https://example.invalid/evil.zip",
                             extract=True, cache_dir=str(tmp_path))
    assert not (tmp_path / "outside.txt").exists()


# ---- keras.preprocessing -------------------------------------------------------------------------
def test_preprocessing_names():
    pre = keras.preprocessing
    assert pre.image_dataset_from_directory is keras.utils.image_dataset_from_directory
    assert pre.text_dataset_from_directory is keras.utils.text_dataset_from_directory
    assert pre.timeseries_dataset_from_array is keras.utils.timeseries_dataset_from_array
    assert pre.sequence.pad_sequences is keras.utils.pad_sequences
    assert pre.image.load_img is keras.utils.load_img
    assert pre.image.img_to_array is keras.utils.img_to_array
    assert pre.image.array_to_img is keras.utils.array_to_img
    assert pre.sequence.pad_sequences([[1, 2], [3]]).tolist() == [[1, 2], [0, 3]]
