"""The projective image transform (TF's ImageProjectiveTransformV3): every fill mode and
interpolation against a NumPy reference, its gradient against finite differences, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf import errors
from hybridtf.api import image_ops

FILL_MODES = ("reflect", "wrap", "constant", "nearest")


# ---- the NumPy reference, pixel by pixel --------------------------------------------------------
def _fill(coord, size, mode):
    """Where an input coordinate outside [0, size - 1] reads from, by fill mode."""
    if mode == "constant":
        return coord
    if mode == "nearest" or size == 1:
        return min(max(coord, 0.0), size - 1.0)
    if mode == "reflect":            # d c b a | a b c d | d c b a
        if coord < 0 or coord > size - 1:
            coord = coord % (2 * size)
            if coord >= size:
                coord = 2 * size - 1 - coord
        return min(max(coord, 0.0), size - 1.0)
    # wrap, shifting by whole image sizes as TF does: a b c d | a b c d
    if coord < 0:
        coord += size * (int(-coord / (size - 1)) + 1)
    elif coord > size - 1:
        coord -= size * int(coord / (size - 1))
    return min(max(coord, 0.0), size - 1.0)


def _read(image, y, x, fill_value):
    h, w = image.shape[:2]
    if 0 <= y < h and 0 <= x < w:
        return image[int(y), int(x)].astype(np.float64)
    return np.full(image.shape[2], fill_value, np.float64)


def reference_transform(images, transforms, out_hw, interpolation, fill_mode, fill_value):
    n, h, w, c = images.shape
    out = np.zeros((n,) + tuple(out_hw) + (c,), np.float64)
    t32 = np.asarray(transforms, np.float32)
    for b in range(n):
        a0, a1, a2, b0, b1, b2, c0, c1 = (float(v) for v in t32[0 if len(t32) == 1 else b])
        for y in range(out_hw[0]):
            for x in range(out_hw[1]):
                k = c0 * x + c1 * y + 1.0
                if k == 0:
                    out[b, y, x] = fill_value
                    continue
                sx = _fill((a0 * x + a1 * y + a2) / k, w, fill_mode)
                sy = _fill((b0 * x + b1 * y + b2) / k, h, fill_mode)
                if interpolation == "nearest":
                    ry = math.floor(abs(sy) + 0.5) * (1 if sy >= 0 else -1)
                    rx = math.floor(abs(sx) + 0.5) * (1 if sx >= 0 else -1)
                    out[b, y, x] = _read(images[b], ry, rx, fill_value)
                    continue
                y0, x0 = math.floor(sy), math.floor(sx)
                dy, dx = sy - y0, sx - x0
                out[b, y, x] = ((1 - dy) * (1 - dx) * _read(images[b], y0, x0, fill_value)
                                + (1 - dy) * dx * _read(images[b], y0, x0 + 1, fill_value)
                                + dy * (1 - dx) * _read(images[b], y0 + 1, x0, fill_value)
                                + dy * dx * _read(images[b], y0 + 1, x0 + 1, fill_value))
    return out


def _rotation(angle, h, w):
    """Rotation by ``angle`` about the image centre, as an output -> input map."""
    cos, sin = math.cos(angle), math.sin(angle)
    cx, cy = (w - 1) / 2, (h - 1) / 2
    return [cos, -sin, cx - cx * cos + cy * sin, sin, cos, cy - cx * sin - cy * cos, 0, 0]


def _images(n=2, h=4, w=5, c=2, seed=0):
    return np.random.RandomState(seed).uniform(0, 10, (n, h, w, c)).astype(np.float32)


# ---- forward ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fill_mode", FILL_MODES)
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_rotation_and_shift_match_numpy(fill_mode, interpolation):
    images = _images()
    transforms = np.array([_rotation(0.7, 4, 5), [1, 0, -2.5, 0, 1, 1.25, 0, 0]], np.float32)
    out = image_ops.image_projective_transform(images, transforms, interpolation=interpolation,
                                               fill_mode=fill_mode, fill_value=-3.0)
    expected = reference_transform(images, transforms, (4, 5), interpolation, fill_mode, -3.0)
    assert out.dtype == tf.float32 and out.shape == (2, 4, 5, 2)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-4)


@settings(max_examples=40, deadline=None)
@given(params=st.lists(st.floats(-3, 3), min_size=6, max_size=6),
       perspective=st.lists(st.floats(-0.2, 0.2), min_size=2, max_size=2),
       fill_mode=st.sampled_from(FILL_MODES), interpolation=st.sampled_from(["nearest",
                                                                             "bilinear"]),
       out_hw=st.tuples(st.integers(1, 5), st.integers(1, 5)),
       shape=st.tuples(st.integers(1, 2), st.integers(1, 4), st.integers(1, 4),
                       st.integers(1, 2)),
       shared=st.booleans())
def test_any_transform_and_output_shape_match_numpy(params, perspective, fill_mode,
                                                    interpolation, out_hw, shape, shared):
    images = _images(*shape, seed=3)
    rows = 1 if shared else shape[0]
    transforms = np.array([params + perspective] * rows, np.float32)
    transforms[:, 2] += np.arange(rows)      # a different shift for each image
    out = image_ops.image_projective_transform(images, transforms, output_shape=out_hw,
                                               interpolation=interpolation,
                                               fill_mode=fill_mode, fill_value=0.5)
    expected = reference_transform(images, transforms, out_hw, interpolation, fill_mode, 0.5)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-3)


def test_identity_keeps_images_and_integer_dtypes_are_kept():
    images = np.arange(2 * 3 * 4 * 1, dtype=np.uint8).reshape(2, 3, 4, 1)
    identity = np.array([[1, 0, 0, 0, 1, 0, 0, 0]], np.float32)
    out = image_ops.image_projective_transform(images, identity)
    assert out.dtype == tf.uint8
    np.testing.assert_array_equal(out.numpy(), images)
    half = image_ops.image_projective_transform(images.astype(np.float16), identity)
    assert half.dtype == tf.float16
    np.testing.assert_array_equal(half.numpy(), images.astype(np.float16))


def test_inside_a_tf_function_with_an_unknown_batch():
    images = _images(n=3)
    transforms = np.array([_rotation(a, 4, 5) for a in (0.1, 0.2, 0.3)], np.float32)

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 5, 2]), tf.TensorSpec([None, 8])])
    def run(x, t):
        return image_ops.image_projective_transform(x, t, fill_mode="wrap")

    expected = reference_transform(images, transforms, (4, 5), "bilinear", "wrap", 0.0)
    np.testing.assert_allclose(run(images, transforms).numpy(), expected, rtol=1e-5,
                               atol=1e-4)


# ---- gradient -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fill_mode", FILL_MODES)
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_gradient_matches_finite_differences(fill_mode, interpolation):
    images = _images(n=1, h=3, w=4, c=1, seed=5).astype(np.float64)
    transforms = np.array([_rotation(0.45, 3, 4)], np.float32)
    weights = np.random.RandomState(1).uniform(0.5, 1.5, (1, 3, 4, 1))

    def loss(x):
        out = image_ops.image_projective_transform(x, transforms, interpolation=interpolation,
                                                   fill_mode=fill_mode, fill_value=2.0)
        return tf.reduce_sum(out * weights)

    x = tf.constant(images)
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = loss(x)
    grad = tape.gradient(total, x).numpy()
    numeric = np.zeros_like(images)
    eps = 1e-6
    for index in np.ndindex(images.shape):
        plus, minus = images.copy(), images.copy()
        plus[index] += eps
        minus[index] -= eps
        numeric[index] = (float(loss(plus)) - float(loss(minus))) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


def test_second_order_gradient_is_the_transform_again():
    images = _images(n=1, h=3, w=3, c=1).astype(np.float64)
    transforms = np.array([_rotation(0.3, 3, 3)], np.float32)
    x = tf.constant(images)
    v = tf.constant(np.random.RandomState(2).randn(1, 3, 3, 1))
    with tf.GradientTape() as outer:
        outer.watch(v)
        with tf.GradientTape() as inner:
            inner.watch(x)
            out = image_ops.image_projective_transform(x, transforms, fill_mode="reflect")
        g = inner.gradient(out, x, output_gradients=v)
        total = tf.reduce_sum(g * images)
    # d/dv <A^T v, x> = A x (with a zero fill).
    expected = reference_transform(images, transforms, (3, 3), "bilinear", "reflect", 0.0)
    np.testing.assert_allclose(outer.gradient(total, v).numpy(), expected, rtol=1e-6)


# ---- errors -------------------------------------------------------------------------------------
def test_bad_arguments_raise_clear_errors():
    images = _images()
    good = np.zeros((1, 8), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match="images must be 4-D"):
        image_ops.image_projective_transform(images[0], good)
    with pytest.raises(errors.InvalidArgumentError, match="transforms must be float32"):
        image_ops.image_projective_transform(images, good.astype(np.float64))
    with pytest.raises(errors.InvalidArgumentError, match=r"\[1 or batch, 8\]"):
        image_ops.image_projective_transform(images, np.zeros((1, 6), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="1 row or one per image"):
        image_ops.image_projective_transform(images, np.zeros((3, 8), np.float32))
    with pytest.raises(ValueError, match="fill_mode must be one of"):
        image_ops.image_projective_transform(images, good, fill_mode="mirror")
    with pytest.raises(ValueError, match="interpolation must be one of"):
        image_ops.image_projective_transform(images, good, interpolation="bicubic")
    with pytest.raises(ValueError, match="output_shape must be 2 positive"):
        image_ops.image_projective_transform(images, good, output_shape=[0, 3])
    with pytest.raises(TypeError, match="images has dtype bool"):
        image_ops.image_projective_transform(images > 1, good)


def test_per_image_uniform_draws_one_row_per_image():
    tf.random.set_seed(3)
    draws = image_ops.random_per_image_uniform(np.zeros((5, 2, 2, 1)), 3, seed=1).numpy()
    assert draws.shape == (5, 3) and draws.dtype == np.float32
    assert (draws >= 0).all() and (draws < 1).all() and len(np.unique(draws)) == 15
    tf.random.set_seed(3)
    again = image_ops.random_per_image_uniform(np.zeros((5, 2, 2, 1)), 3, seed=1).numpy()
    np.testing.assert_array_equal(draws, again)
    assert image_ops.random_per_image_uniform(np.zeros((2, 2, 1)), 2).shape == (1, 2)
