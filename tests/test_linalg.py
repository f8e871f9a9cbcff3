"""matmul and tensordot against NumPy, and their gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients

IAE = tf.errors.InvalidArgumentError


def _values(shape, dtype=np.float64):
    if np.dtype(dtype).kind == "f":
        return hnp.arrays(np.float64, shape, elements=st.floats(-3, 3)).map(
            lambda a: a.astype(dtype))
    return hnp.arrays(dtype, shape, elements=st.integers(-4, 4))


@st.composite
def matmul_case(draw, dtype=np.float64, min_side=0):
    """Operands of a (batched, broadcast) matmul with random transposes."""
    (batch_a, batch_b), _ = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=2, min_side=min_side, max_side=3))
    m, k, n = (draw(st.integers(min_side, 4)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a = draw(_values(batch_a + ((k, m) if ta else (m, k)), dtype))
    b = draw(_values(batch_b + ((n, k) if tb else (k, n)), dtype))
    return a, b, ta, tb


def _np_matmul(a, b, ta, tb):
    return np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@given(data=st.data())
def test_matmul_matches_numpy(dtype, data):
    a, b, ta, tb = data.draw(matmul_case(dtype))
    out = tf.matmul(tf.constant(a), tf.constant(b), transpose_a=ta, transpose_b=tb)
    expected = _np_matmul(a, b, ta, tb).astype(dtype)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == expected.shape
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(out.numpy(), expected,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
    else:
        np.testing.assert_array_equal(out.numpy(), expected)


@given(data=st.data())
def test_matmul_gradients(data):
    a, b, ta, tb = data.draw(matmul_case())
    check_gradients(lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb),
                    lambda x, y: _np_matmul(x, y, ta, tb), [a, b])


def test_matmul_adjoint_and_operator_and_lists():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(tf.linalg.matmul(a, b, adjoint_b=True).numpy(), a @ b.T)
    np.testing.assert_allclose((tf.constant(a) @ tf.constant(b.T)).numpy(), a @ b.T)
    out = tf.matmul([[1, 2]], [[3], [4]])
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), [[11]])


def test_matmul_errors():
    with pytest.raises(IAE, match=r"matmul: inputs must be tensors of rank >= 2, got shapes "
                                  r"\[3\] and \[3,2\]"):
        tf.matmul(tf.zeros([3]), tf.zeros([3, 2]))
    with pytest.raises(IAE, match=r"matmul: Incompatible shapes: \[2\] vs. \[3\]"):
        tf.matmul(tf.zeros([2, 1, 1]), tf.zeros([3, 1, 1]))
    with pytest.raises(IAE, match=r"inner dimensions 2 and 3 must match"):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([3, 2]), transpose_a=True)
    with pytest.raises(TypeError, match="matmul: a has dtype bool"):
        tf.matmul(tf.constant([[True]]), tf.constant([[True]]))


# ---- tensordot -----------------------------------------------------------------------------------
@st.composite
def tensordot_case(draw, min_side=0):
    a_shape = list(draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=min_side,
                                         max_side=3)))
    b_free = list(draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=min_side, max_side=3)))
    if draw(st.booleans()):  # integer form: the last n of a with the first n of b
        n = draw(st.integers(0, len(a_shape)))
        b_shape = a_shape[len(a_shape) - n:] + b_free
        return a_shape, b_shape, n, n
    n = draw(st.integers(0, len(a_shape)))
    a_axes = draw(st.permutations(range(len(a_shape))))[:n]
    b_shape = list(b_free)
    b_axes = []
    for ax in a_axes:
        pos = draw(st.integers(0, len(b_shape)))
        b_axes = [p + 1 if p >= pos else p for p in b_axes] + [pos]
        b_shape.insert(pos, a_shape[ax])
    # Mix in negative axis numbers.
    a_axes = [ax - len(a_shape) if draw(st.booleans()) else ax for ax in a_axes]
    b_axes = [ax - len(b_shape) if draw(st.booleans()) else ax for ax in b_axes]
    return a_shape, b_shape, [a_axes, b_axes], [a_axes, b_axes]


@given(data=st.data())
def test_tensordot_matches_numpy(data):
    a_shape, b_shape, axes, np_axes = data.draw(tensordot_case())
    a = data.draw(_values(tuple(a_shape)))
    b = data.draw(_values(tuple(b_shape)))
    out = tf.tensordot(tf.constant(a), tf.constant(b), axes)
    expected = np.tensordot(a, b, np_axes)
    assert out.dtype == tf.float64
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


@given(data=st.data())
def test_tensordot_gradients(data):
    a_shape, b_shape, axes, np_axes = data.draw(tensordot_case())
    a = data.draw(_values(tuple(a_shape)))
    b = data.draw(_values(tuple(b_shape)))
    check_gradients(lambda x, y: tf.tensordot(x, y, axes),
                    lambda x, y: np.tensordot(x, y, np_axes), [a, b])


def test_tensordot_single_axis_pair_and_int_dtype():
    a = np.arange(6).reshape(2, 3).astype(np.int32)
    b = np.arange(12).reshape(3, 4).astype(np.int32)
    out = tf.tensordot(a, b, axes=[1, 0])
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), a @ b)


def test_tensordot_errors():
    with pytest.raises(IAE, match=r"tensordot: .*\[2,3\].*\[4,5\]"):
        tf.tensordot(tf.zeros([2, 3]), tf.zeros([4, 5]), 1)
    with pytest.raises(IAE, match="tensordot: .*same number of axes"):
        tf.tensordot(tf.zeros([2, 3]), tf.zeros([3, 2]), [[0, 1], [1]])
    with pytest.raises(IAE, match="tensordot: .*axes"):
        tf.tensordot(tf.zeros([2, 3]), tf.zeros([3, 2]), 3)
    with pytest.raises(IAE, match="tensordot: a has dtype float32 but b has dtype int32"):
        tf.tensordot(tf.zeros([2]), tf.zeros([2], tf.int32), 1)
