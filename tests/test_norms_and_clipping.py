"""tf.norm (vector and matrix norms), tf.clip_by_norm, tf.clip_by_global_norm and
tf.linalg.global_norm against NumPy, and their gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


@st.composite
def distinct_magnitudes(draw, min_dims=1, max_dims=3):
    """Values whose magnitudes are distinct and away from 0, so that every norm is smooth
    there (no ties for a maximum, no kink of |x| at 0)."""
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=3))
    size = int(np.prod(shape))
    magnitudes = (np.asarray(draw(st.permutations(range(size))), np.float64) + 1) * 0.3
    signs = draw(hnp.arrays(np.float64, (size,), elements=st.sampled_from([-1.0, 1.0])))
    return (magnitudes * signs).reshape(shape)


VECTOR_ORDS = ["euclidean", 1, 2, np.inf, 3, 0.5, 1.5]


def _np_vector_norm(x, order, axis, keepdims):
    order = 2 if order == "euclidean" else order
    if axis is None:
        value = np.linalg.norm(x.reshape(-1), ord=order)
        return np.reshape(value, (1,) * x.ndim) if keepdims else value
    return np.linalg.norm(x, ord=order, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", VECTOR_ORDS)
@given(x=distinct_magnitudes(), data=st.data())
def test_vector_norms_match_numpy(dtype, order, x, data):
    x = x.astype(dtype)
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    keepdims = data.draw(st.booleans())
    out = tf.norm(x, ord=order, axis=axis, keepdims=keepdims)
    expected = _np_vector_norm(x.astype(np.float64), order, axis, keepdims)
    assert out.dtype == tf.as_dtype(dtype) and tuple(out.shape) == np.shape(expected)
    np.testing.assert_allclose(out.numpy(), expected, **_tol(dtype))


@pytest.mark.parametrize("order", VECTOR_ORDS)
@given(x=distinct_magnitudes(), data=st.data())
def test_vector_norm_gradients(order, x, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    check_gradients(lambda a: tf.norm(a, ord=order, axis=axis),
                    lambda a: _np_vector_norm(a, order, axis, False), [x])


MATRIX_ORDS = ["euclidean", "fro", 1, 2, np.inf]


@st.composite
def matrix_norm_case(draw):
    x = draw(distinct_magnitudes(min_dims=2, max_dims=4))
    axes = draw(st.permutations(range(x.ndim)))[:2]
    axes = [a - x.ndim if draw(st.booleans()) else a for a in axes]
    return x, tuple(axes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", MATRIX_ORDS)
@given(case=matrix_norm_case(), keepdims=st.booleans())
def test_matrix_norms_match_numpy(dtype, order, case, keepdims):
    x, axes = case
    x = x.astype(dtype)
    out = tf.norm(x, ord=order, axis=axes, keepdims=keepdims)
    expected = np.linalg.norm(x.astype(np.float64), ord="fro" if order == "euclidean" else order,
                              axis=axes, keepdims=keepdims)
    assert out.dtype == tf.as_dtype(dtype) and tuple(out.shape) == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, **_tol(dtype))


@pytest.mark.parametrize("order", ["fro", 1, np.inf])
@given(case=matrix_norm_case())
def test_matrix_norm_gradients(order, case):
    x, axes = case
    if order != "fro":   # the largest column (row) sum must be unique: a tie is a kink
        rows, cols = (a % x.ndim for a in axes)
        summed, kept = (rows, cols) if order == 1 else (cols, rows)
        sums = np.sort(np.moveaxis(np.sum(np.abs(x), axis=summed, keepdims=True), kept, -1))
        assume(sums.shape[-1] < 2 or np.all(sums[..., -1] - sums[..., -2] > 1e-3))
    check_gradients(lambda a: tf.norm(a, ord=order, axis=axes),
                    lambda a: np.linalg.norm(a, ord=order, axis=axes), [x])


def test_spectral_norm_gradient():
    x = np.array([[3.0, 1.0, 0.2], [0.5, 2.0, 0.1]])   # distinct singular values
    check_gradients(lambda a: tf.linalg.norm(a, ord=2, axis=[-2, -1]),
                    lambda a: np.linalg.norm(a, ord=2), [x])


def test_norm_gradient_at_zero_is_nan_as_tf():
    x = tf.zeros([2])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.norm(x)
    assert np.isnan(tape.gradient(y, x).numpy()).all()


def test_norm_errors():
    x = np.ones((3, 4))
    for order in ["fro", "nuc", 0, -1, -np.inf]:
        with pytest.raises(ValueError, match="norm: ord must be a supported vector norm"):
            tf.norm(x, ord=order)
    for order in [3, 0.5, 0, "nuc"]:
        with pytest.raises(ValueError, match="norm: ord must be a supported matrix norm"):
            tf.norm(x, ord=order, axis=[0, 1])
    for axis in [[0, 1, 1], [0, 0], tf.constant(1), 1.0]:
        with pytest.raises(ValueError, match="norm: axis must be None, an integer, or a tuple "
                                             "of 2 unique integers"):
            tf.norm(x, axis=axis)
    with pytest.raises(IAE, match="norm: axis 2 is out of range for a tensor of rank 2"):
        tf.norm(x, axis=2)
    with pytest.raises(TypeError, match=r"norm: tensor has dtype int32 \(shape \[2\]\)"):
        tf.norm([1, 2])


# ---- clip_by_norm -------------------------------------------------------------------------------
def _np_clip_by_norm(t, clip, axes):
    norm = np.sqrt(np.sum(t * t, axis=axes, keepdims=True))
    clip = np.maximum(clip, 0)
    return t * clip / np.maximum(norm, clip)


@st.composite
def clip_case(draw):
    t = draw(distinct_magnitudes())
    axes = draw(st.one_of(st.none(), st.lists(st.integers(0, t.ndim - 1), min_size=1,
                                              max_size=t.ndim, unique=True)))
    return t, draw(st.floats(0.1, 8.0)), axes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(case=clip_case())
def test_clip_by_norm_matches_numpy(dtype, case):
    t, clip, axes = case
    out = tf.clip_by_norm(t.astype(dtype), clip, axes=axes)
    assert out.dtype == tf.as_dtype(dtype) and out.shape == t.shape
    np.testing.assert_allclose(out.numpy(), _np_clip_by_norm(t, clip, axes
                                                             and tuple(axes)), **_tol(dtype))


@given(case=clip_case())
def test_clip_by_norm_gradients(case):
    t, clip, axes = case
    # where a norm equals clip_norm the function has a kink: no finite difference there
    norms = np.sqrt((t.astype(np.float64) ** 2).sum(axis=axes and tuple(axes)))
    assume(np.all(np.abs(norms - clip) > 1e-3))
    check_gradients(lambda a, c: tf.clip_by_norm(a, c, axes=axes),
                    lambda a, c: _np_clip_by_norm(a, c, axes and tuple(axes)),
                    [t, np.float64(clip)])


def test_clip_by_norm_edge_cases():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(tf.clip_by_norm(t, 100.0).numpy(), t.numpy())
    np.testing.assert_allclose(tf.clip_by_norm(t, 1.0, axes=[1]).numpy(),
                               [[0.4472136, 0.8944272], [0.6, 0.8]], rtol=1e-6)
    np.testing.assert_array_equal(tf.clip_by_norm(t, -1.0).numpy(), np.zeros((2, 2)))
    # A zero tensor stays zero, with a finite gradient
    zero = tf.zeros([3])
    with tf.GradientTape() as tape:
        tape.watch(zero)
        y = tf.reduce_sum(tf.clip_by_norm(zero, 1.0))
    np.testing.assert_array_equal(tape.gradient(y, zero).numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(tf.clip_by_norm(zero, 1.0).numpy(), [0.0, 0.0, 0.0])
    # NumPy and Python values take the tensor's dtype
    out = tf.clip_by_norm(tf.constant([3.0, 4.0], tf.float64), np.float32(1.0))
    assert out.dtype == tf.float64
    with pytest.raises(TypeError, match="clip_by_norm: t has dtype int32"):
        tf.clip_by_norm(tf.constant([1, 2]), 1)
    with pytest.raises(IAE, match="clip_by_norm: clip_norm has dtype float64 but the values "
                                  "have dtype float32"):
        tf.clip_by_norm(t, tf.constant(1.0, tf.float64))


# ---- clip_by_global_norm, global_norm -----------------------------------------------------------
@given(a=distinct_magnitudes(), b=distinct_magnitudes(), clip=st.floats(0.1, 10.0))
def test_clip_by_global_norm_matches_numpy(a, b, clip):
    clipped, norm = tf.clip_by_global_norm([a, None, b], clip)
    expected_norm = np.sqrt(np.sum(a * a) + np.sum(b * b))
    np.testing.assert_allclose(norm.numpy(), expected_norm, rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.global_norm([a, None, b]).numpy(), expected_norm,
                               rtol=1e-12)
    scale = clip / max(expected_norm, clip)
    assert clipped[1] is None and len(clipped) == 3
    np.testing.assert_allclose(clipped[0].numpy(), a * scale, rtol=1e-12)
    np.testing.assert_allclose(clipped[2].numpy(), b * scale, rtol=1e-12)
    check_gradients(lambda x, y: tf.concat([tf.reshape(c, [-1]) for c in
                                            tf.clip_by_global_norm([x, y], clip)[0]], 0),
                    lambda x, y: np.concatenate([x.reshape(-1), y.reshape(-1)]) * clip / max(
                        np.sqrt(np.sum(x * x) + np.sum(y * y)), clip), [a, b])


def test_clip_by_global_norm_edge_cases():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    clipped, norm = tf.clip_by_global_norm([t], 1.0, use_norm=tf.constant(2.0))
    np.testing.assert_allclose(clipped[0].numpy(), t.numpy() / 2)
    assert norm.numpy() == 2.0
    clipped, norm = tf.clip_by_global_norm([t, tf.constant([np.inf])], 1.0)
    assert norm.numpy() == np.inf and np.isnan(clipped[0].numpy()).all()
    clipped, norm = tf.clip_by_global_norm([], 1.0)
    assert clipped == [] and norm.numpy() == 0.0 and norm.dtype == tf.float32
    clipped, norm = tf.clip_by_global_norm((None,), 1.0)
    assert clipped == [None] and norm.numpy() == 0.0
    clipped, _ = tf.clip_by_global_norm([tf.zeros([2])], 1.0)
    np.testing.assert_array_equal(clipped[0].numpy(), [0.0, 0.0])
    with pytest.raises(TypeError, match="`t_list` should be a sequence of tensors"):
        tf.clip_by_global_norm(t, 1.0)
    with pytest.raises(TypeError, match="`t_list` should be a sequence of tensors"):
        tf.linalg.global_norm(t)
    with pytest.raises(IAE, match="clip_by_global_norm: all tensors must have one dtype"):
        tf.clip_by_global_norm([t, tf.constant([1.0], tf.float64)], 1.0)
    with pytest.raises(TypeError, match="clip_by_global_norm: t_list entry 0 has dtype int32"):
        tf.clip_by_global_norm([tf.constant([1, 2])], 1.0)


def test_clipping_inside_a_function_matches_eager():
    t = np.array([[1.0, 2.0], [3.0, 4.0]])
    u = np.array([0.5, -2.0])
    in_all_modes(lambda a: tf.clip_by_norm(a, 2.0, axes=[1]), t)
    in_all_modes(lambda a, b: tf.clip_by_global_norm([a, None, b], 3.0), t, u)
    in_all_modes(lambda a: (tf.norm(a), tf.norm(a, ord=1, axis=[0, 1]),
                            tf.norm(a, ord=2, axis=[0, 1], keepdims=True)), t)
