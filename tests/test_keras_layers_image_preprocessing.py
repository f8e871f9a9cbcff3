"""The image preprocessing and augmentation layers: Resizing, CenterCrop, RandomFlip,
RandomRotation, RandomZoom, RandomTranslation, RandomContrast, RandomCrop -- NumPy references
for the deterministic parts and for the random ones given their draws, ranges and outcomes
across seeds, training vs inference, models, fit, Dataset.map, configs and .keras files."""
import math

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.api import image_ops
from hybridtf.keras import layers
from keras_layer_checks import check_weight_and_input_gradients
from test_image_transform import reference_transform

RANDOM_LAYERS = {
    "flip": lambda seed=None: layers.RandomFlip(seed=seed),
    "rotation": lambda seed=None: layers.RandomRotation(0.2, seed=seed),
    "zoom": lambda seed=None: layers.RandomZoom(0.3, seed=seed),
    "translation": lambda seed=None: layers.RandomTranslation(0.2, 0.3, seed=seed),
    "contrast": lambda seed=None: layers.RandomContrast(0.5, seed=seed),
    "crop": lambda seed=None: layers.RandomCrop(3, 4, seed=seed if seed is not None else 7),
}


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _images(n=3, h=5, w=6, c=2, seed=0):
    return np.random.RandomState(seed).uniform(0, 255, (n, h, w, c)).astype(np.float32)


def _draws_of(images, count, seed, global_seed):
    """The draws a layer with ``seed`` makes on its first call after set_seed(global_seed)."""
    tf.random.set_seed(global_seed)
    return image_ops.random_per_image_uniform(images, count, seed=seed).numpy()


def _layer_output(layer, images, global_seed, **kwargs):
    tf.random.set_seed(global_seed)
    return layer(images, training=True, **kwargs).numpy()


# ---- geometric layers against NumPy, given their draws ------------------------------------------
def _rotation_rows(angles, h, w):
    rows = []
    for a in angles:
        cos, sin = math.cos(a), math.sin(a)
        cx, cy = (w - 1) / 2, (h - 1) / 2
        rows.append([cos, -sin, cx - cx * cos + cy * sin, sin, cos,
                     cy - cx * sin - cy * cos, 0, 0])
    return np.array(rows, np.float32)


@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_random_rotation_matches_numpy_for_its_angles(fill_mode, interpolation):
    x = _images()
    layer = layers.RandomRotation((-0.1, 0.3), fill_mode=fill_mode, interpolation=interpolation,
                                  fill_value=7.0, seed=11)
    out = _layer_output(layer, x, 5)
    u = _draws_of(x, 1, 11, 5)[:, 0].astype(np.float64)
    angles = (-0.1 + u * 0.4) * 2 * math.pi
    assert ((angles >= -0.1 * 2 * math.pi) & (angles <= 0.3 * 2 * math.pi)).all()
    expected = reference_transform(x, _rotation_rows(angles, 5, 6), (5, 6), interpolation,
                                   fill_mode, 7.0)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-2)


def test_random_zoom_matches_numpy_for_its_factors():
    x = _images()
    layer = layers.RandomZoom((-0.5, 0.2), (0.1, 0.4), fill_mode="constant", seed=3)
    out = _layer_output(layer, x, 1)
    u = _draws_of(x, 2, 3, 1).astype(np.float64)
    zoom_h, zoom_w = 0.5 + u[:, 0] * 0.7, 1.1 + u[:, 1] * 0.3
    rows = np.array([[zw, 0, 2.5 * (1 - zw), 0, zh, 2 * (1 - zh), 0, 0]
                     for zh, zw in zip(zoom_h, zoom_w)], np.float32)
    expected = reference_transform(x, rows, (5, 6), "bilinear", "constant", 0.0)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-2)
    # Without width_factor the zoom keeps the aspect ratio.
    same = layers.RandomZoom(0.3, seed=3)
    out = _layer_output(same, x, 1)
    zoom = 0.7 + _draws_of(x, 2, 3, 1)[:, 0].astype(np.float64) * 0.6
    rows = np.array([[z, 0, 2.5 * (1 - z), 0, z, 2 * (1 - z), 0, 0] for z in zoom], np.float32)
    np.testing.assert_allclose(out, reference_transform(x, rows, (5, 6), "bilinear", "reflect",
                                                        0.0), rtol=1e-4, atol=1e-2)


def test_random_translation_matches_numpy_for_its_shifts():
    x = _images()
    layer = layers.RandomTranslation((-0.4, 0.2), 0.5, fill_mode="wrap",
                                     interpolation="nearest", seed=8)
    out = _layer_output(layer, x, 2)
    u = _draws_of(x, 2, 8, 2).astype(np.float64)
    dy, dx = (-0.4 + u[:, 0] * 0.6) * 5, (-0.5 + u[:, 1]) * 6
    rows = np.array([[1, 0, -sx, 0, 1, -sy, 0, 0] for sy, sx in zip(dy, dx)], np.float32)
    expected = reference_transform(x, rows, (5, 6), "nearest", "wrap", 0.0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-3)


def test_fixed_factors_give_fixed_transforms_on_single_images():
    x = _images(n=1)
    rotated = layers.RandomRotation((0.125, 0.125), fill_mode="constant")(x[0]).numpy()
    expected = reference_transform(x, _rotation_rows([math.pi / 4], 5, 6), (5, 6), "bilinear",
                                   "constant", 0.0)[0]
    np.testing.assert_allclose(rotated, expected, rtol=1e-4, atol=1e-2)
    shifted = layers.RandomTranslation((0.4, 0.4), (-1 / 3, -1 / 3), fill_mode="constant",
                                       interpolation="nearest")(x[0]).numpy()
    expected = np.zeros_like(x[0])
    expected[2:, :4] = x[0, :3, 2:]
    np.testing.assert_allclose(shifted, expected)


def test_rotation_gradient_with_respect_to_the_images():
    layer = layers.RandomRotation((0.05, 0.05), fill_mode="reflect", dtype="float64")
    x = np.random.RandomState(1).randn(1, 3, 4, 1)
    check_weight_and_input_gradients(layer, [x], call_kwargs={"training": True})


# ---- flips, contrast, crops ---------------------------------------------------------------------
@pytest.mark.parametrize("mode, axes", [("horizontal", (2,)), ("vertical", (1,)),
                                        ("horizontal_and_vertical", (1, 2))])
def test_random_flip_flips_the_images_its_draws_select(mode, axes):
    x = _images(n=8)
    layer = layers.RandomFlip(mode, seed=4)
    out = _layer_output(layer, x, 9)
    flips = _draws_of(x, 1, 4, 9)[:, 0] <= 0.5
    expected = np.where(flips[:, None, None, None], np.flip(x, axes), x)
    np.testing.assert_array_equal(out, expected)
    outcomes = set()
    for global_seed in range(6):
        out = _layer_output(layers.RandomFlip(mode, seed=1), x[:1], global_seed)[0]
        outcomes.add("flipped" if np.array_equal(out, np.flip(x[0], np.array(axes) - 1))
                     else "kept" if np.array_equal(out, x[0]) else "other")
    assert outcomes == {"flipped", "kept"}


def test_random_contrast_matches_numpy_and_stays_in_range():
    x = _images(n=6)
    layer = layers.RandomContrast((0.2, 0.6), value_range=(10, 200), seed=2)
    out = _layer_output(layer, x, 3)
    factors = 0.8 + _draws_of(x, 1, 2, 3)[:, 0].astype(np.float64) * 0.8
    mean = x.astype(np.float64).mean(axis=(1, 2), keepdims=True)
    expected = np.clip((x - mean) * factors[:, None, None, None] + mean, 10, 200)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-3)
    # A single number f draws from [1, 1 + f], as Keras 3.
    assert layers.RandomContrast(0.5).factor == (0.0, 0.5)
    ones = np.array([[[[0.0]], [[1.0]]]], np.float32)       # one 2x1 image: mean 0.5
    spread = [float(np.ptp(layers.RandomContrast(0.5, value_range=(-9, 9))(ones)))
              for _ in range(20)]
    assert min(spread) >= 1.0 - 1e-6 and max(spread) <= 1.5 + 1e-6
    assert max(spread) - min(spread) > 0.05


def test_random_crop_takes_windows_at_random_places():
    x = _images(n=2, h=5, w=6)
    starts = set()
    for global_seed in range(8):
        out = _layer_output(layers.RandomCrop(3, 4, seed=2), x, global_seed)
        assert out.shape == (2, 3, 4, 2)
        found = [(i, j) for i in range(3) for j in range(3)
                 if np.array_equal(out, x[:, i:i + 3, j:j + 4])]
        assert len(found) == 1
        starts.add(found[0])
    assert len(starts) > 2
    tf.random.set_seed(4)
    draws = tf.random.uniform([2], seed=2).numpy()
    top, left = int(draws[0] * 3), int(draws[1] * 3)
    np.testing.assert_array_equal(_layer_output(layers.RandomCrop(3, 4, seed=2), x, 4),
                                  x[:, top:top + 3, left:left + 4])


def test_random_crop_of_small_images_crops_to_the_aspect_ratio_and_resizes():
    x = _images(n=1, h=4, w=6, c=1)
    out = layers.RandomCrop(4, 3, seed=1)(x, training=True).numpy()
    np.testing.assert_array_equal(out, x[:, :, 1:4])
    out = layers.RandomCrop(8, 6, seed=1)(x, training=True).numpy()
    expected = tf.image.resize(x[:, :, 1:4], (8, 6)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-6)


# ---- Resizing and CenterCrop --------------------------------------------------------------------
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest", "bicubic", "area"])
def test_resizing_matches_tf_image_resize(interpolation):
    x = _images(n=2, h=4, w=6)
    out = layers.Resizing(3, 5, interpolation=interpolation)(x)
    expected = tf.image.resize(x, (3, 5), method=interpolation).numpy()
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_resizing_to_the_aspect_ratio_and_integer_images():
    x = np.arange(24, dtype=np.float32).reshape(1, 4, 6, 1)
    cropped = layers.Resizing(3, 3, crop_to_aspect_ratio=True)(x).numpy()
    np.testing.assert_allclose(cropped, tf.image.resize(x[:, :, 1:5], (3, 3)).numpy(),
                               rtol=1e-6)
    padded = layers.Resizing(4, 4, pad_to_aspect_ratio=True, fill_value=-1.0)(x).numpy()
    with_border = np.pad(x, [(0, 0), (1, 1), (0, 0), (0, 0)], constant_values=-1.0)
    np.testing.assert_allclose(padded, tf.image.resize(with_border, (4, 4)).numpy(),
                               rtol=1e-6)
    # Keras 3 values for these two (TF 2.21).
    np.testing.assert_allclose(cropped[0, 0, :, 0], [2.1666667, 3.5, 4.8333335], rtol=1e-6)
    np.testing.assert_allclose(padded[0, 0, :, 0], [-0.6875, -0.3125, 0.0625, 0.4375])
    small = layers.Resizing(2, 3)(x.astype(np.uint8))
    assert small.dtype == tf.uint8
    np.testing.assert_array_equal(small.numpy().ravel(), [4, 6, 8, 16, 18, 20])


def test_center_crop_crops_or_resizes_small_images():
    x = np.arange(2 * 5 * 6 * 1, dtype=np.uint8).reshape(2, 5, 6, 1)
    out = layers.CenterCrop(2, 3)(x)
    assert out.dtype == tf.float32 and out.shape == (2, 2, 3, 1)
    np.testing.assert_array_equal(out.numpy(), x[:, 1:3, 1:4].astype(np.float32))
    np.testing.assert_array_equal(layers.CenterCrop(2, 3)(x[0]).numpy(), x[0, 1:3, 1:4])
    taller = layers.CenterCrop(7, 3)(x).numpy()
    expected = tf.image.resize(x[:, :, 2:4].astype(np.float32), (7, 3)).numpy()
    np.testing.assert_allclose(taller, expected, rtol=1e-6)


def test_channels_first_equals_channels_last_transposed():
    x = _images(n=2, h=4, w=5, c=3)
    first = np.transpose(x, (0, 3, 1, 2))
    for make in (lambda fmt: layers.CenterCrop(2, 3, data_format=fmt),
                 lambda fmt: layers.Resizing(3, 2, data_format=fmt),
                 lambda fmt: layers.RandomRotation((0.1, 0.1), data_format=fmt),
                 lambda fmt: layers.RandomZoom((0.2, 0.2), data_format=fmt)):
        last = make("channels_last")(x).numpy()
        got = make("channels_first")(first).numpy()
        np.testing.assert_allclose(np.transpose(got, (0, 2, 3, 1)), last, rtol=1e-5, atol=1e-4)


# ---- training vs inference, models, fit, Dataset.map --------------------------------------------
@pytest.mark.parametrize("name", sorted(RANDOM_LAYERS))
def test_random_layers_act_only_in_training(name):
    x = _images(n=4)
    layer = RANDOM_LAYERS[name](seed=3)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    trained = layer(x).numpy()          # a direct call trains, as in Keras 3
    assert trained.shape != x.shape or not np.allclose(trained, x)
    single = layer(x[0], training=True)
    assert single.shape.rank == 3
    model = keras.Sequential([keras.Input((5, 6, 2)), RANDOM_LAYERS[name](seed=3)])
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
    np.testing.assert_array_equal(model(x, training=False).numpy(), x)
    called = model(x).numpy()           # so does calling the model, as in Keras 3
    assert called.shape != x.shape or not np.allclose(called, x)


def test_random_layers_in_a_model_trained_with_fit_and_saved(tmp_path):
    x = np.random.RandomState(0).uniform(0, 1, (8, 6, 6, 1)).astype(np.float32)
    y = np.arange(8) % 2
    model = keras.Sequential([
        keras.Input((6, 6, 1)), layers.RandomFlip("horizontal", seed=1),
        layers.RandomRotation(0.1, fill_mode="nearest", seed=2), layers.RandomZoom(0.1, seed=3),
        layers.RandomTranslation(0.1, 0.1, fill_mode="constant", seed=4),
        layers.RandomContrast(0.2, value_range=(0, 1), seed=5), layers.RandomCrop(4, 4, seed=6),
        layers.Resizing(5, 5), layers.CenterCrop(4, 4), layers.Flatten(), layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = model.layers[-1].get_weights()[0].copy()
    history = model.fit(x, y, epochs=2, batch_size=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert not np.allclose(model.layers[-1].get_weights()[0], before)
    expected = model.predict(x, verbose=0)
    path = tmp_path / "augment.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert [layer.get_config() for layer in loaded.layers[:-1]] == \
        [layer.get_config() for layer in model.layers[:-1]]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-6, atol=1e-6)


def test_fit_trains_on_augmented_images():
    # One lit pixel on the left: only flipped images reach the weight of its mirror image.
    x = np.zeros((8, 2, 2, 1), np.float32)
    x[:, 0, 0, 0] = 1.0
    dense = layers.Dense(1, use_bias=False, kernel_initializer="zeros")
    model = keras.Sequential([keras.Input((2, 2, 1)), layers.RandomFlip("horizontal", seed=2),
                              layers.Flatten(), dense])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.fit(x, np.ones((8, 1), np.float32), batch_size=4, epochs=2, verbose=0)
    kernel = dense.get_weights()[0][:, 0]        # pixels (0, 0), (0, 1), (1, 0), (1, 1)
    assert kernel[0] > 0 and kernel[1] > 0 and kernel[2] == 0 and kernel[3] == 0
    np.testing.assert_array_equal(model.predict(x, verbose=0)[:, 0], np.full(8, kernel[0]))


def test_in_dataset_map_and_tf_function_with_unknown_batch():
    x = _images(n=5)
    rotate = layers.RandomRotation(0.25, fill_mode="constant", fill_value=-1.0, seed=1)
    batches = [b.numpy() for b in tf.data.Dataset.from_tensor_slices(x).batch(2).map(rotate)]
    assert [b.shape for b in batches] == [(2, 5, 6, 2), (2, 5, 6, 2), (1, 5, 6, 2)]
    assert not np.allclose(np.concatenate(batches), x)
    # Each element draws anew, though the mapped function is traced once.
    same = tf.data.Dataset.from_tensors(x[0]).repeat(4)
    assert len({o.numpy().tobytes() for o in same.map(rotate)}) == 4
    crop = layers.RandomCrop(3, 3, seed=2)
    singles = list(tf.data.Dataset.from_tensor_slices(x).map(lambda t: crop(t, training=True)))
    assert all(s.shape == (3, 3, 2) for s in singles)
    assert all(any(np.array_equal(s.numpy(), image[i:i + 3, j:j + 3]) for i in range(3)
                   for j in range(4)) for s, image in zip(singles, x))
    flip = layers.RandomFlip("vertical", seed=3)

    @tf.function(input_signature=[tf.TensorSpec([None, 5, 6, 2])])
    def augment(images):
        return flip(images, training=True)

    out = augment(x[:4]).numpy()
    for image, result in zip(x[:4], out):
        assert np.array_equal(result, image) or np.array_equal(result, image[::-1])


# ---- configs and errors -------------------------------------------------------------------------
@pytest.mark.parametrize("layer", [
    layers.RandomFlip("vertical", seed=2),
    layers.RandomRotation((-0.2, 0.1), fill_mode="wrap", interpolation="nearest",
                          fill_value=1.0, seed=3),
    layers.RandomZoom(0.2, (-0.1, 0.3), fill_mode="constant", seed=1),
    layers.RandomTranslation(0.1, (0.0, 0.2), fill_value=2.0),
    layers.RandomContrast((0.1, 0.4), value_range=(0, 1), seed=5),
    layers.RandomCrop(2, 3),
    layers.Resizing(3, 4, interpolation="nearest", crop_to_aspect_ratio=True),
    layers.CenterCrop(2, 2, data_format="channels_first")], ids=lambda layer: type(layer).__name__)
def test_configs_round_trip(layer):
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    rebuilt = layers.deserialize(layers.serialize(layer))
    assert type(rebuilt) is type(layer) and rebuilt.get_config() == config


def test_keras_3_config_values():
    config = layers.RandomRotation(0.2).get_config()
    assert config["factor"] == (-0.2, 0.2) and config["fill_mode"] == "reflect"
    assert config["interpolation"] == "bilinear" and config["fill_value"] == 0.0
    assert isinstance(layers.RandomCrop(2, 2).get_config()["seed"], int)
    assert layers.Resizing(2, 2).get_config()["data_format"] == "channels_last"


@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.RandomRotation(1.5), ValueError, "factor"),
    (lambda: layers.RandomRotation(0.1, fill_mode="mirror"), NotImplementedError, "fill_mode"),
    (lambda: layers.RandomZoom(0.1, interpolation="cubic"), ValueError, "interpolation"),
    (lambda: layers.RandomZoom((-1.0, 0.2)), ValueError, r"\(-1.0, 1.0\]"),
    (lambda: layers.RandomTranslation(0.1, "a"), ValueError, "width_factor"),
    (lambda: layers.RandomContrast(-0.2), ValueError, "factor"),
    (lambda: layers.RandomContrast(0.2, value_range=(1, 0)), ValueError, "value_range"),
    (lambda: layers.RandomFlip("diagonal"), ValueError, "mode"),
    (lambda: layers.RandomCrop(0, 3), ValueError, "height"),
    (lambda: layers.Resizing(2, 2, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True),
     ValueError, "only one"),
    (lambda: layers.CenterCrop(2, 2, data_format="nhwc"), ValueError, "data_format"),
])
def test_bad_arguments_raise_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_inputs_of_the_wrong_rank_are_rejected():
    with pytest.raises(ValueError, match="rank 3"):
        layers.RandomRotation(0.1)(np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match="rank 3"):
        layers.CenterCrop(2, 2)(np.zeros((1, 1, 4, 4, 1), np.float32))
