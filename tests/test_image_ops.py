"""``tf.image`` ops against NumPy references and TF's own outputs, with gradients, eagerly, in
``tf.function`` (static and unknown shapes) and in ``tf.data`` pipelines.

``data/tf_resize.npz`` holds outputs (and gradients) of TensorFlow 2.21's ``tf.image.resize``
for every method, with and without antialiasing, recorded for the images stored beside them.
"""
import pathlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import numeric_gradients, tape_gradients
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError
DATA = pathlib.Path(__file__).parent / "data"
METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]


@pytest.fixture(scope="module")
def tf_resize():
    with np.load(DATA / "tf_resize.npz") as f:
        return {k: f[k] for k in f.files}


def _images(max_side=5, batch=True):
    dims = 4 if batch else 3
    return hnp.array_shapes(min_dims=dims, max_dims=dims, min_side=1, max_side=max_side).flatmap(
        lambda s: hnp.arrays(np.float64, s, elements=st.floats(-3, 3)))


# ---- NumPy references -------------------------------------------------------------------------
def _bilinear_matrix(n_in, n_out):
    """Row i: the weights of output i over the inputs (half-pixel centres, edges clamped)."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        centre = (i + 0.5) * n_in / n_out - 0.5
        low = int(np.floor(centre))
        t = centre - low
        m[i, min(max(low, 0), n_in - 1)] += 1 - t
        m[i, min(max(low + 1, 0), n_in - 1)] += t
    return m


def np_resize_bilinear(images, new_h, new_w):
    return np.einsum("yh,nhwc,xw->nyxc", _bilinear_matrix(images.shape[1], new_h), images,
                     _bilinear_matrix(images.shape[2], new_w))


def np_resize_nearest(images, new_h, new_w):
    rows = [min(int(np.floor((i + 0.5) * images.shape[1] / new_h)), images.shape[1] - 1)
            for i in range(new_h)]
    cols = [min(int(np.floor((j + 0.5) * images.shape[2] / new_w)), images.shape[2] - 1)
            for j in range(new_w)]
    return images[:, rows][:, :, cols]


# ---- resize: values ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_matches_tensorflow(tf_resize, method, antialias):
    images = tf_resize["images"]
    for size in [(3, 4), (8, 11), (5, 3), (1, 1), (5, 7)]:
        key = f"{method}_{size[0]}x{size[1]}_{'aa' if antialias else 'plain'}"
        out = tf.image.resize(images, size, method=method, antialias=antialias)
        expected = tf_resize[key]
        assert out.shape == expected.shape and out.dtype == tf.as_dtype(expected.dtype)
        np.testing.assert_allclose(out.numpy(), expected, rtol=2e-6, atol=2e-6, err_msg=key)


def test_resize_of_integer_images_matches_tensorflow(tf_resize):
    u8 = tf_resize["u8"]
    out = tf.image.resize(u8, [4, 9])
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), tf_resize["u8_bilinear_4x9"], rtol=1e-6)
    nearest = tf.image.resize(u8, [4, 9], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    assert nearest.dtype == tf.uint8
    np.testing.assert_array_equal(nearest.numpy(), tf_resize["u8_nearest_4x9"])


@given(_images(), st.integers(1, 7), st.integers(1, 7))
def test_resize_bilinear_and_nearest_against_numpy(images, new_h, new_w):
    out = tf.image.resize(images, [new_h, new_w])
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), np_resize_bilinear(images, new_h, new_w),
                               rtol=1e-5, atol=1e-5)
    nearest = tf.image.resize(images, [new_h, new_w], method="nearest")
    assert nearest.dtype == tf.float64
    np.testing.assert_array_equal(nearest.numpy(), np_resize_nearest(images, new_h, new_w))


@given(_images(batch=False))
def test_resize_three_dimensional_images_as_a_batch_of_one(image):
    for method in ("bilinear", "area"):
        out = tf.image.resize(image, [3, 2], method=method)
        assert out.shape == (3, 2, image.shape[-1])
        np.testing.assert_array_equal(
            out.numpy(), tf.image.resize(image[None], [3, 2], method=method).numpy()[0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8, np.uint8, np.int16,
                                   np.uint16, np.int32, np.int64])
def test_resize_of_every_dtype(dtype):
    images = (np.arange(2 * 3 * 4 * 2).reshape(2, 3, 4, 2) % 7).astype(dtype)
    out = tf.image.resize(images, [5, 3], method="bicubic")
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), tf.image.resize(images.astype(np.float64), [5, 3],
                                                            method="bicubic").numpy())
    nearest = tf.image.resize(images, [5, 3], method="nearest")
    assert nearest.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(nearest.numpy(), np_resize_nearest(images, 5, 3))


def test_resize_preserve_aspect_ratio_fits_inside_the_size():
    image = np.zeros((5, 7, 1), np.float32)
    assert tf.image.resize(image, [4, 4], preserve_aspect_ratio=True).shape == (3, 4, 1)
    assert tf.image.resize(image, [2, 9], preserve_aspect_ratio=True).shape == (2, 3, 1)
    assert tf.image.resize(image, [10, 100], preserve_aspect_ratio=True).shape == (10, 14, 1)


def test_resize_of_an_empty_batch():
    out = tf.image.resize(np.zeros((0, 3, 4, 1), np.float32), [2, 2])
    assert out.shape == (0, 2, 2, 1)


def test_resize_in_a_function_with_unknown_and_runtime_sizes():
    images = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4, 1)
    for method in ("bilinear", "nearest", "lanczos3"):
        in_all_modes(lambda x: tf.image.resize(x, [5, 3], method=method), images)
    in_all_modes(lambda x: tf.image.resize(x, [4, 4], preserve_aspect_ratio=True), images)
    like = np.zeros((1, 2, 6, 1), np.float32)
    out, = in_all_modes(lambda x, y: tf.image.resize(x, tf.shape(y)[1:3]), images, like)
    np.testing.assert_array_equal(out, tf.image.resize(images, [2, 6]).numpy())

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 1], tf.float32)])
    def fit(x):
        return tf.image.resize(x, [4, 4], preserve_aspect_ratio=True)
    assert fit(np.zeros((1, 5, 7, 1), np.float32)).shape == (1, 3, 4, 1)


def test_resize_rejects_bad_arguments():
    image = np.ones((3, 4, 1), np.float32)
    with pytest.raises(IAE, match="output dimensions must be positive"):
        tf.image.resize(image, [0, 2])
    with pytest.raises(ValueError, match="2 elements"):
        tf.image.resize(image, [1, 2, 3])
    with pytest.raises(ValueError, match="int32"):
        tf.image.resize(image, [1.5, 2])
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        tf.image.resize(np.ones((1, 1, 1, 1, 1)), [2, 2])
    with pytest.raises(ValueError, match="at least three-dimensional"):
        tf.image.resize(np.ones((3, 4)), [2, 2])
    with pytest.raises(ValueError, match="bilinear"):
        tf.image.resize(image, [2, 2], method="BILINEAR")
    with pytest.raises(IAE, match="non-zero size"):
        tf.image.resize(np.ones((0, 4, 1), np.float32), [2, 2])
    with pytest.raises(IAE, match="at least one channel"):
        tf.image.resize(np.ones((3, 4, 0), np.float32), [2, 2])
    with pytest.raises(TypeError, match="bool"):
        tf.image.resize(image > 0, [2, 2])

    @tf.function
    def runtime_size(x, size):
        return tf.image.resize(x, size)
    with pytest.raises(IAE, match="positive"):
        runtime_size(image, tf.constant([2, -1]))


# ---- resize: gradients --------------------------------------------------------------------------
def test_resize_gradients_match_tensorflow(tf_resize):
    for method in ("bilinear", "nearest", "bicubic"):
        images = tf.constant(tf_resize["images"])
        with tf.GradientTape() as tape:
            tape.watch(images)
            total = tf.reduce_sum(tf.image.resize(images, [3, 4], method=method)
                                  * tf_resize["grad_weights"])
        np.testing.assert_allclose(tape.gradient(total, images).numpy(),
                                   tf_resize[f"grad_{method}"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("method,antialias", [
    ("bilinear", False), ("nearest", False), ("bicubic", False), ("area", False),
    ("lanczos3", True), ("mitchellcubic", False), ("bilinear", True)])
@given(images=_images(max_side=4), new_h=st.integers(1, 5), new_w=st.integers(1, 5))
def test_resize_gradients_against_finite_differences(method, antialias, images, new_h, new_w):
    def resized(x):
        return tf.image.resize(x, [new_h, new_w], method=method, antialias=antialias)

    # The resize is linear, so central differences with a step of 1 are exact up to the
    # float32 rounding of its output.
    expected, weights = numeric_gradients(lambda x: resized(x).numpy(), [images], eps=1.0)
    actual, = tape_gradients(lambda x: tf.cast(resized(x), tf.float64), [images], weights)
    assert actual.dtype == tf.float64
    np.testing.assert_allclose(actual.numpy(), expected[0], rtol=1e-5, atol=1e-5)


def test_resize_second_order_gradient_is_the_resize_again():
    images = tf.constant(np.random.default_rng(0).uniform(size=(1, 3, 5, 2)))
    weights = tf.constant(np.random.default_rng(1).uniform(size=(1, 4, 2, 2)))
    direction = tf.constant(np.random.default_rng(2).uniform(size=(1, 3, 5, 2)))
    with tf.GradientTape() as outer:
        outer.watch(weights)
        with tf.GradientTape() as inner:
            inner.watch(images)
            total = tf.reduce_sum(tf.image.resize(images, [4, 2]) * tf.cast(weights, tf.float32))
        grad = inner.gradient(total, images)
        projected = tf.reduce_sum(grad * direction)
    np.testing.assert_allclose(outer.gradient(projected, weights).numpy(),
                               tf.image.resize(direction, [4, 2]).numpy(), rtol=1e-5)


def test_resize_gradient_inside_a_function():
    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 1], tf.float32)])
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.image.resize(x, [2, 3]))
        return tape.gradient(y, x)
    images = np.ones((1, 4, 6, 1), np.float32)
    with tf.GradientTape() as tape:
        x = tf.constant(images)
        tape.watch(x)
        y = tf.reduce_sum(tf.image.resize(x, [2, 3]))
    np.testing.assert_allclose(grad(images).numpy(), tape.gradient(y, x).numpy())


# ---- flips, rotations, crops -------------------------------------------------------------------
@given(_images(batch=False) | _images())
def test_flips_and_rotations_against_numpy(image):
    h_axis = image.ndim - 3
    pairs = [
        (tf.image.flip_left_right, lambda a: np.flip(a, h_axis + 1)),
        (tf.image.flip_up_down, lambda a: np.flip(a, h_axis)),
        (lambda a: tf.image.rot90(a), lambda a: np.rot90(a, 1, (h_axis, h_axis + 1))),
        (lambda a: tf.image.rot90(a, 2), lambda a: np.rot90(a, 2, (h_axis, h_axis + 1))),
        (lambda a: tf.image.rot90(a, -1), lambda a: np.rot90(a, 3, (h_axis, h_axis + 1))),
        (lambda a: tf.image.rot90(a, 7), lambda a: np.rot90(a, 3, (h_axis, h_axis + 1))),
    ]
    for ours, reference in pairs:
        out = ours(image)
        np.testing.assert_array_equal(out.numpy(), reference(image))


def test_rot90_turns_counter_clockwise_as_tensorflow():
    image = np.arange(6.0).reshape(2, 3, 1)
    np.testing.assert_array_equal(tf.image.rot90(image).numpy()[..., 0],
                                  [[2.0, 5.0], [1.0, 4.0], [0.0, 3.0]])
    np.testing.assert_array_equal(tf.image.rot90(image, -1).numpy()[..., 0],
                                  [[3.0, 0.0], [4.0, 1.0], [5.0, 2.0]])


def test_flips_rotations_and_crops_in_functions():
    image = np.arange(2 * 3 * 4 * 2, dtype=np.float32).reshape(2, 3, 4, 2)
    in_all_modes(tf.image.flip_left_right, image)
    in_all_modes(tf.image.flip_up_down, image[0])
    in_all_modes(lambda x: tf.image.rot90(x, 3), image)
    in_all_modes(lambda x, k: tf.image.rot90(x, k), image, np.int32(1))
    in_all_modes(lambda x: tf.image.crop_to_bounding_box(x, 1, 0, 2, 3), image)
    in_all_modes(lambda x: tf.image.central_crop(x, 0.5), image)
    out, = in_all_modes(lambda x, f: tf.image.central_crop(x, f), image, np.float32(0.5))
    np.testing.assert_array_equal(out, tf.image.central_crop(image, 0.5).numpy())
    in_all_modes(lambda x, top: tf.image.crop_to_bounding_box(x, top, 1, 1, 2), image,
                 np.int32(2))


@st.composite
def _crop_case(draw):
    image = draw(_images(max_side=6) | _images(max_side=6, batch=False))
    h, w = image.shape[-3], image.shape[-2]
    top, left = draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1))
    return image, top, left, draw(st.integers(1, h - top)), draw(st.integers(1, w - left))


@given(_crop_case())
def test_crop_to_bounding_box_against_numpy(case):
    image, top, left, height, width = case
    out = tf.image.crop_to_bounding_box(image, top, left, height, width)
    np.testing.assert_array_equal(out.numpy(),
                                  image[..., top:top + height, left:left + width, :])


@given(_images(max_side=9), st.floats(0.05, 1.0))
def test_central_crop_against_numpy(images, fraction):
    h, w = images.shape[1:3]
    top, left = int((h - h * fraction) / 2), int((w - w * fraction) / 2)
    np.testing.assert_array_equal(tf.image.central_crop(images, fraction).numpy(),
                                  images[:, top:h - top, left:w - left])


def test_central_crop_matches_tensorflow():
    image = np.arange(35.0).reshape(5, 7, 1)
    np.testing.assert_array_equal(tf.image.central_crop(image, 0.5).numpy()[..., 0],
                                  [[8, 9, 10, 11, 12], [15, 16, 17, 18, 19],
                                   [22, 23, 24, 25, 26]])
    assert tf.image.central_crop(image, 0.1).numpy().ravel().tolist() == [17.0]


def test_crops_reject_bad_boxes():
    image = np.ones((3, 4, 1), np.float32)
    with pytest.raises(ValueError, match="offset_height must be >= 0"):
        tf.image.crop_to_bounding_box(image, -1, 0, 2, 2)
    with pytest.raises(ValueError, match="height must be >= target \\+ offset"):
        tf.image.crop_to_bounding_box(image, 2, 0, 2, 2)
    with pytest.raises(ValueError, match="target_height must be > 0"):
        tf.image.crop_to_bounding_box(image, 0, 0, 0, 2)
    with pytest.raises(ValueError, match="at least three-dimensional"):
        tf.image.crop_to_bounding_box(image[..., 0], 0, 0, 1, 2)
    for fraction in (0.0, 1.5):
        with pytest.raises(ValueError, match="within \\(0, 1\\]"):
            tf.image.central_crop(image, fraction)

    @tf.function
    def crop_at(x, top):
        return tf.image.crop_to_bounding_box(x, top, 0, 2, 2)
    with pytest.raises(IAE, match="height must be >= target \\+ offset"):
        crop_at(image, tf.constant(2))


def test_gradients_of_flips_rotations_and_crops():
    image = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4, 2))
    ops = [tf.image.flip_left_right, tf.image.flip_up_down, lambda x: tf.image.rot90(x, 1),
           lambda x: tf.image.rot90(x, tf.constant(3)),
           lambda x: tf.image.crop_to_bounding_box(x, 1, 1, 2, 2),
           lambda x: tf.image.central_crop(x, 0.6)]
    for op in ops:
        expected, weights = numeric_gradients(lambda x: op(x).numpy(), [image])
        actual, = tape_gradients(op, [image], weights)
        np.testing.assert_allclose(actual.numpy(), expected[0], rtol=1e-6, atol=1e-8)


def test_gradient_of_a_crop_with_a_runtime_box():
    @tf.function
    def grad(x, top):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.image.crop_to_bounding_box(x, top, 1, 1, 2) * 3.0)
        return tape.gradient(y, x)
    expected = np.zeros((3, 4, 1), np.float32)
    expected[2, 1:3] = 3.0
    np.testing.assert_array_equal(grad(np.ones((3, 4, 1), np.float32), tf.constant(2)).numpy(),
                                  expected)


# ---- random flips -------------------------------------------------------------------------------
def _flipped(out, batch):
    """Which images of ``batch`` (N, 1, W, 1 with distinct values) ``out`` flipped."""
    return (out[:, 0, 0, 0] != batch[:, 0, 0, 0]).tolist()


BATCH = np.arange(32 * 2, dtype=np.float32).reshape(32, 1, 2, 1)


def test_random_flips_flip_each_image_or_leave_it():
    for op, axis in ((tf.image.random_flip_left_right, 2), (tf.image.random_flip_up_down, 1)):
        batch = BATCH if axis == 2 else np.transpose(BATCH, (0, 2, 1, 3))
        out = op(batch).numpy()
        for i in range(len(batch)):
            assert np.array_equal(out[i], batch[i]) or \
                np.array_equal(out[i], np.flip(batch[i], axis - 1))
    flips = sum(sum(_flipped(tf.image.random_flip_left_right(BATCH).numpy(), BATCH))
                for _ in range(8))
    assert 64 < flips < 192   # a fair coin for each of 256 images


def test_random_flips_follow_the_seeding_rules():
    tf.random.set_seed(5)
    first = [_flipped(tf.image.random_flip_left_right(BATCH).numpy(), BATCH) for _ in range(2)]
    tf.random.set_seed(5)
    again = [_flipped(tf.image.random_flip_left_right(BATCH).numpy(), BATCH) for _ in range(2)]
    assert first == again and first[0] != first[1]
    tf.random.set_seed(None)
    seeded = tf.function(lambda x: tf.image.random_flip_left_right(x, seed=3))
    calls = [_flipped(seeded(BATCH).numpy(), BATCH) for _ in range(2)]
    assert calls[0] != calls[1]          # a new draw on every call of the function
    single = np.arange(4.0).reshape(1, 4, 1)
    outcomes = {tuple(tf.image.random_flip_left_right(single).numpy().ravel())
                for _ in range(40)}
    assert outcomes == {(0.0, 1.0, 2.0, 3.0), (3.0, 2.0, 1.0, 0.0)}


def test_stateless_random_flips_depend_only_on_the_seed():
    first = tf.image.stateless_random_flip_left_right(BATCH, [1, 2]).numpy()
    np.testing.assert_array_equal(
        tf.image.stateless_random_flip_left_right(BATCH, tf.constant([1, 2])).numpy(), first)
    assert _flipped(first, BATCH) != _flipped(
        tf.image.stateless_random_flip_left_right(BATCH, [1, 3]).numpy(), BATCH)
    out, = in_all_modes(lambda x, s: tf.image.stateless_random_flip_up_down(x, s),
                        np.transpose(BATCH, (0, 2, 1, 3)), np.array([7, 8], np.int64))
    with pytest.raises(IAE, match="seed must be a shape \\[2\\]"):
        tf.image.stateless_random_flip_left_right(BATCH, [1, 2, 3])


def test_random_flips_of_every_dtype():
    expected = tf.image.stateless_random_flip_left_right(BATCH, [4, 2]).numpy()
    strings = np.array([str(int(v)).encode() for v in BATCH.ravel()], object)
    for batch in (BATCH.astype(np.float16), BATCH.astype(np.uint16), BATCH.astype(np.int64),
                  BATCH > 30, strings.reshape(BATCH.shape)):
        out = tf.image.stateless_random_flip_left_right(tf.constant(batch), [4, 2])
        assert out.dtype == tf.constant(batch).dtype
        flipped = _flipped(expected, BATCH)
        for i, image in enumerate(out.numpy()):
            np.testing.assert_array_equal(image, batch[i, :, ::-1] if flipped[i] else batch[i])
        assert tf.image.random_flip_up_down(tf.constant(batch)).shape == batch.shape


def test_random_flip_gradient_follows_the_flip():
    x = tf.constant(np.arange(8.0).reshape(4, 1, 2, 1))
    weights = tf.constant([[[[1.0], [10.0]]]] * 4, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.image.random_flip_left_right(x)
        total = tf.reduce_sum(out * weights)
    grad = tape.gradient(total, x).numpy()
    for i, flipped in enumerate(_flipped(out.numpy(), x.numpy())):
        assert grad[i, 0, :, 0].tolist() == ([10.0, 1.0] if flipped else [1.0, 10.0])


# ---- convert_image_dtype, brightness, contrast --------------------------------------------------
# (input, dtype, saturate) -> TF 2.21's output
CONVERSIONS = [
    (np.array([-0.5, 0, 0.5, 1.0, 1.5], np.float32), tf.uint8, True, [0, 0, 127, 255, 255]),
    (np.array([0, 0.5, 1.0], np.float32), tf.uint8, False, [0, 127, 255]),
    (np.array([-1.0, 0.5, 1.0]), tf.int32, False, [-2147483647, 1073741823, 2147483647]),
    (np.array([-128, -1, 0, 1, 127], np.int8), tf.uint8, True, [0, 0, 0, 2, 254]),
    (np.array([0, 1, 128, 255], np.uint8), tf.int8, False, [0, 0, 64, 127]),
    (np.array([0, 255, 256, 65535], np.uint16), tf.uint8, False, [0, 0, 1, 255]),
    (np.array([0, 1, 255], np.uint8), tf.uint16, False, [0, 256, 65280]),
    (np.array([1, 2, 127], np.int8), tf.int16, False, [256, 512, 32512]),
    (np.array([0, 1, 128, 255], np.uint8), tf.float64, False,
     [0.0, 1 / 255, 128 / 255, 1.0]),
    (np.array([0, 1, 128, 255], np.uint8), tf.float16, False,
     np.array([0.0, 0.003922, 0.502, 1.0], np.float16)),
    (np.array([0, 32768, 65535], np.uint16), tf.float32, False,
     np.float32([0.0, 32768 / 65535, 1.0])),
    (np.array([0.0, 0.5, 1.0], np.float16), tf.uint8, False, [0, 127, 255]),
    (np.array([0, 0.5, 1.0, 2.0, -1], np.float16), tf.uint8, True, [0, 127, 255, 255, 0]),
    (np.array([0, 300, 65535], np.uint16), tf.int32, True, [0, 9830400, 2147450880]),
    # float16 products: 0.5 * 65535.5 is inf in float16, saturated at float16's max
    (np.array([0.5, 1.0], np.float16), tf.uint16, True, [65504, 65504]),
    (np.array([0.5, 1.0], np.float16), tf.int32, True, [65504, 65504]),
]


def test_convert_image_dtype_of_uint32_and_uint64_images_keeps_every_bit():
    # (TF 2.21 has no CPU clip kernel for these dtypes: the values are the exact scaled ones.)
    image = np.array([2**63, 2**64 - 1, 2**56 - 1], np.uint64)
    for saturate in (False, True):
        out = tf.image.convert_image_dtype(image, tf.uint8, saturate=saturate)
        np.testing.assert_array_equal(out.numpy(), np.array([128, 255, 0], np.uint8))
        out = tf.image.convert_image_dtype(np.array([0, 2**32 - 1], np.uint32), tf.uint16,
                                           saturate=saturate)
        np.testing.assert_array_equal(out.numpy(), np.array([0, 65535], np.uint16))
    np.testing.assert_array_equal(
        tf.image.convert_image_dtype(np.array([1, 255], np.uint8), tf.uint64).numpy(),
        np.array([2**56, 255 * 2**56], np.uint64))


@pytest.mark.parametrize("image,dtype,saturate,expected", CONVERSIONS)
def test_convert_image_dtype_matches_tensorflow(image, dtype, saturate, expected):
    out = tf.image.convert_image_dtype(image, dtype, saturate=saturate)
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


@given(hnp.arrays(np.uint8, hnp.array_shapes(max_dims=3)))
def test_convert_image_dtype_round_trips_integers_through_floats(image):
    as_float = tf.image.convert_image_dtype(image, tf.float32)
    np.testing.assert_allclose(as_float.numpy(), image / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(tf.image.convert_image_dtype(as_float, tf.uint8).numpy(),
                                  image)


def test_convert_image_dtype_rejects_non_numeric_dtypes():
    with pytest.raises(AttributeError, match="image dtype"):  # as TF (and a TypeError)
        tf.image.convert_image_dtype(np.array([True]), tf.float32)
    with pytest.raises(TypeError, match="dtype must be"):
        tf.image.convert_image_dtype(np.array([1.0]), tf.bool)


def test_adjust_brightness_gradient_passes_through():
    x = tf.constant(np.full((2, 2, 1), 0.25, np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.image.adjust_brightness(x, 0.5) * 2.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full((2, 2, 1), 2.0))


def test_convert_image_dtype_gradient_is_the_scale():
    x = tf.constant([0.25, 0.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.image.convert_image_dtype(x, tf.float64) * 3.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 3.0])


@given(hnp.arrays(np.float32, (2, 3, 2), elements=st.floats(-2, 2, width=32)),
       st.floats(-1, 1, width=32))
def test_adjust_brightness_adds_in_float(image, delta):
    out = tf.image.adjust_brightness(image, delta)
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), image + np.float32(delta), rtol=1e-6, atol=1e-6)


def test_adjust_brightness_matches_tensorflow_for_other_dtypes():
    np.testing.assert_array_equal(
        tf.image.adjust_brightness(np.array([0, 100, 250], np.uint8), 0.1).numpy(),
        [25, 125, 255])
    half = tf.image.adjust_brightness(np.array([0, 0.5], np.float16), 0.1)
    assert half.dtype == tf.float16
    np.testing.assert_array_equal(half.numpy(), np.array([0.1, 0.6], np.float16))
    # float64 goes through float32, as in TF
    out = tf.image.adjust_brightness(np.array([0.0, 0.1234567891234]), 0.1)
    assert out.dtype == tf.float64
    assert out.numpy()[1] == np.float64(np.float32(0.1234567891234) + np.float32(0.1))
    np.testing.assert_array_equal(
        tf.image.adjust_brightness(np.arange(4.0, dtype=np.float32).reshape(1, 2, 2),
                                   tf.constant([0.5, 1.0])).numpy().ravel(),
        [0.5, 2.0, 2.5, 4.0])


@given(hnp.array_shapes(min_dims=3, max_dims=4, min_side=1, max_side=4).flatmap(
    lambda s: hnp.arrays(np.float32, s, elements=st.floats(-2, 2, width=32))),
    st.floats(-2, 3, width=32))
def test_adjust_contrast_against_numpy(images, factor):
    mean = images.astype(np.float64).mean(axis=(-3, -2), keepdims=True)
    expected = (images - mean) * factor + mean
    np.testing.assert_allclose(tf.image.adjust_contrast(images, factor).numpy(), expected,
                               rtol=1e-4, atol=1e-4)


def test_adjust_contrast_matches_tensorflow():
    out = tf.image.adjust_contrast(np.arange(12.0, dtype=np.float32).reshape(2, 3, 2), 2.0)
    np.testing.assert_array_equal(out.numpy().ravel(),
                                  [-5, -4, -1, 0, 3, 4, 7, 8, 11, 12, 15, 16])
    u8 = np.arange(0, 240, 20).reshape(2, 3, 2).astype(np.uint8)
    np.testing.assert_array_equal(tf.image.adjust_contrast(u8, 2.0).numpy().ravel(),
                                  [0, 0, 0, 0, 60, 80, 140, 160, 220, 240, 255, 255])
    with pytest.raises(ValueError, match="at least 3-D"):
        tf.image.adjust_contrast(np.ones((2, 3), np.float32), 2.0)
    with pytest.raises(ValueError, match="scalar"):
        tf.image.adjust_contrast(np.ones((2, 3, 1), np.float32), [2.0])


def test_adjust_contrast_gradient():
    image = np.random.default_rng(4).uniform(size=(2, 3, 2)).astype(np.float32)
    x = tf.constant(image)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.image.adjust_contrast(x, 3.0) * tf.constant(image))
    # d/dx of sum(w * ((x - mean) * f + mean)) = f * w + (1 - f) * mean(w) per channel
    expected = 3.0 * image + (1 - 3.0) * image.mean(axis=(0, 1), keepdims=True)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-5)


def test_brightness_and_contrast_in_functions():
    image = np.random.default_rng(5).uniform(size=(2, 3, 4, 3)).astype(np.float32)
    in_all_modes(lambda x: tf.image.adjust_contrast(tf.image.adjust_brightness(x, 0.2), 0.5),
                 image)
    in_all_modes(lambda x: tf.image.convert_image_dtype(x, tf.uint8, saturate=True), image)


# ---- pipelines ---------------------------------------------------------------------------------
def test_augmentation_inside_dataset_map():
    images = np.random.default_rng(6).integers(0, 256, (4, 6, 8, 3)).astype(np.uint8)

    def augment(image):
        image = tf.image.convert_image_dtype(image, tf.float32)
        image = tf.image.random_flip_left_right(image, seed=1)
        image = tf.image.rot90(image, 2)
        image = tf.image.central_crop(image, 0.5)
        return tf.image.resize(image, [5, 5], method="bicubic", antialias=True)

    batches = list(tf.data.Dataset.from_tensor_slices(images).map(augment).batch(2))
    assert [b.shape for b in batches] == [(2, 5, 5, 3), (2, 5, 5, 3)]
    assert all(b.dtype == tf.float32 for b in batches)
