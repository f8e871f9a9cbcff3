"""tf.reverse, tf.roll, tf.linspace and tf.meshgrid: against NumPy, gradients against finite
differences, eagerly and traced (with known and unknown dimensions)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients, floats_array, shapes
from run_modes import in_all_modes


# ---- reverse ------------------------------------------------------------------------------------
@st.composite
def _array_and_axes(draw, repeats=False, min_dims=1):
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=4, min_side=0, max_side=4))
    rank = len(shape)
    if repeats:
        axes = draw(st.lists(st.integers(0, rank - 1), max_size=4))
    else:
        axes = draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank)) if rank \
            else []
    # Each axis may be written counting from the end.
    axes = [a - rank if draw(st.booleans()) else a for a in axes]
    return draw(hnp.arrays(np.int32, shape, elements=st.integers(-50, 50))), axes


@given(case=_array_and_axes(min_dims=0))
def test_reverse_matches_numpy(case):
    x, axes = case
    out = tf.reverse(tf.constant(x), axes)
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), np.flip(x, axis=tuple(axes)) if axes else x)


def test_reverse_of_strings_bools_and_axis_tensors():
    assert tf.reverse(tf.constant(["a", "b"]), [0]).numpy().tolist() == [b"b", b"a"]
    assert tf.reverse(tf.constant([True, False]), [0]).numpy().tolist() == [False, True]
    out = tf.reverse(tf.constant([[1, 2], [3, 4]]), tf.constant([0]))
    assert out.numpy().tolist() == [[3, 4], [1, 2]]


@given(data=st.data())
def test_reverse_gradient(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=3))
    x = data.draw(floats_array(shape))
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1))
    check_gradients(lambda t: tf.reverse(t, axes), lambda a: np.flip(a, axis=tuple(axes)), [x])


def test_reverse_rejects_bad_axes_like_tf():
    x = tf.constant([[1, 2], [3, 4]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 1 specified more than once"):
        tf.reverse(x, [1, -1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 2 is out of range"):
        tf.reverse(x, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-D list of axes.*write \\[1\\]"):
        tf.reverse(x, 1)
    with pytest.raises(TypeError, match="reverse: axis must be an integer"):
        tf.reverse(x, [0.5])


# ---- roll ---------------------------------------------------------------------------------------
@given(case=_array_and_axes(repeats=True), data=st.data())
def test_roll_matches_numpy(case, data):
    x, axes = case
    shifts = data.draw(st.lists(st.integers(-9, 9), min_size=len(axes), max_size=len(axes)))
    if not axes:
        shifts, axes = [3], [0]
    out = tf.roll(tf.constant(x), shifts, axes)
    # Shifts of a repeated axis add up, as in TF (and NumPy).
    np.testing.assert_array_equal(out.numpy(), np.roll(x, shifts, axis=axes))


def test_roll_values_match_tf():
    assert tf.roll([1, 2, 3, 4, 5], 2, 0).numpy().tolist() == [4, 5, 1, 2, 3]
    assert tf.roll([[1, 2, 3], [4, 5, 6]], [1, -1], [0, 1]).numpy().tolist() == \
        [[5, 6, 4], [2, 3, 1]]
    assert tf.roll([1, 2, 3], tf.constant(1, tf.int64), 0).numpy().tolist() == [3, 1, 2]
    assert tf.roll(tf.zeros([0, 2]), 1, 0).shape == (0, 2)


@given(data=st.data())
def test_roll_gradient(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4))
    x = data.draw(floats_array(shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    shift = data.draw(st.integers(-6, 6))
    check_gradients(lambda t: tf.roll(t, shift, axis), lambda a: np.roll(a, shift, axis), [x])


def test_roll_rejects_bad_arguments_like_tf():
    with pytest.raises(tf.errors.InvalidArgumentError, match="shift and axis must have the same"):
        tf.roll([1, 2, 3], [1, 1], [0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="shift and axis must have the same"):
        tf.roll([[1, 2, 3]], 1, [0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 1 is out of range"):
        tf.roll([1, 2, 3], 1, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="input must be 1-D or higher"):
        tf.roll(5, 1, 0)
    with pytest.raises(TypeError, match="shift must be int32 or int64, got float32"):
        tf.roll([1, 2], 1.0, 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar or a 1-D vector"):
        tf.roll([1, 2, 3], [[1]], [0])


def test_roll_and_reverse_traced():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    out, = in_all_modes(lambda t: tf.roll(tf.reverse(t, [0]), [1, -1], [1, 0]), x)
    np.testing.assert_array_equal(out, np.roll(np.flip(x, 0), [1, -1], axis=[1, 0]))


def test_roll_with_a_shift_known_only_when_the_function_runs():
    @tf.function
    def rolled(x, shift):
        return tf.roll(x, shift, axis=0)

    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    for shift in (1, -1, 6):
        np.testing.assert_array_equal(rolled(x, tf.constant(shift)).numpy(),
                                      np.roll(x.numpy(), shift))
    assert "could not lower" not in rolled.get_concrete_function(x, tf.constant(1)).kernel_source
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = rolled(x, tf.constant(1)) * tf.constant([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 3.0, 4.0, 1.0])


# ---- linspace -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(start=st.floats(-10, 10), stop=st.floats(-10, 10), num=st.integers(0, 7))
def test_linspace_matches_numpy(dtype, start, stop, num):
    out = tf.linspace(tf.constant(start, tf.as_dtype(dtype)), stop, num)
    assert out.dtype == tf.as_dtype(dtype) and out.shape == (num,)
    expected = np.linspace(dtype(start), dtype(stop), num)
    np.testing.assert_allclose(out.numpy(), expected.astype(dtype), rtol=1e-6, atol=1e-5)
    if num >= 2:   # both ends exact, as TF
        assert out.numpy()[0] == dtype(start) and out.numpy()[-1] == dtype(stop)


@given(data=st.data())
def test_batched_linspace_matches_numpy(data):
    (s_shape, e_shape), _ = data.draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=2, max_side=3))
    start = data.draw(floats_array(s_shape))
    stop = data.draw(floats_array(e_shape))
    num = data.draw(st.integers(0, 5))
    rank = max(len(s_shape), len(e_shape))
    axis = data.draw(st.integers(-rank - 1, rank))
    out = tf.linspace(tf.constant(start), tf.constant(stop), num, axis=axis)
    expected = np.linspace(start, stop, num, axis=axis)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_linspace_dtypes_and_values_match_tf():
    out = tf.linspace(0, 1, 5)   # integers give float64, as TF
    assert out.dtype == tf.float64
    np.testing.assert_array_equal(out.numpy(), [0, 0.25, 0.5, 0.75, 1])
    assert tf.linspace(0., 1, 3).dtype == tf.float32
    assert tf.linspace(2., 5., 1).numpy().tolist() == [2.0]
    assert tf.linspace(0., 1., tf.constant(3, tf.int64)).numpy().tolist() == [0, 0.5, 1]
    np.testing.assert_array_equal(tf.linspace([0., 1.], [10., 11.], 3, axis=-1).numpy(),
                                  [[0, 5, 10], [1, 6, 11]])


def test_linspace_rejects_bad_arguments():
    with pytest.raises(TypeError, match="linspace: num must be an integer, got 2.5"):
        tf.linspace(0., 1., 2.5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num must be >= 0.*got -1"):
        tf.linspace(2., 5., -1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"fit in int64\), got 92233"):
        tf.linspace(0., 1., 2 ** 63)
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 2 is out of range"):
        tf.linspace([0., 1.], [10., 11.], 3, axis=2)
    with pytest.raises(TypeError, match="stop has dtype float32 but start has dtype float64"):
        tf.linspace(tf.constant(0., tf.float64), tf.constant(1.), 3)
    with pytest.raises(TypeError, match="start and stop must be floating point or integer"):
        tf.linspace(True, False, 3)


@given(data=st.data())
def test_linspace_gradient(data):
    shape = data.draw(shapes(min_dims=0, max_dims=2, max_side=3))
    start = data.draw(floats_array(shape))
    stop = data.draw(floats_array(shape))
    num = data.draw(st.integers(1, 5))
    axis = data.draw(st.integers(0, len(shape)))
    check_gradients(lambda a, b: tf.linspace(a, b, num, axis=axis),
                    lambda a, b: np.linspace(a, b, num, axis=axis), [start, stop])


def test_linspace_gradient_matches_tf():
    x, y = tf.constant([[0., 1.]]), tf.constant([[10., 12.]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = tf.linspace(x, y, 4) * tf.constant([[[1., 2.]], [[3., 4.]], [[5., 6.]], [[7., 8.]]])
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_allclose(gx.numpy(), [[4.6666665, 6.6666665]], rtol=1e-6)
    np.testing.assert_allclose(gy.numpy(), [[11.333334, 13.333334]], rtol=1e-6)


def test_linspace_traced_including_a_run_time_num():
    start, stop = np.array([0.0, 1.0]), np.array([4.0, -1.0])
    out, = in_all_modes(lambda a, b: tf.linspace(a, b, 5, axis=1), start, stop)
    np.testing.assert_allclose(out, np.linspace(start, stop, 5, axis=1))

    @tf.function
    def spaced(num):
        return tf.linspace(0.0, 1.0, num)
    for num in (0, 1, 2, 5):
        np.testing.assert_allclose(spaced(tf.constant(num)).numpy(), np.linspace(0, 1, num),
                                   rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="linspace: num must be >= 0"):
        spaced(tf.constant(-1))


# ---- meshgrid -----------------------------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@given(data=st.data())
def test_meshgrid_matches_numpy(indexing, data):
    sizes = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    vectors = [np.arange(n, dtype=np.int32) * (i + 1) for i, n in enumerate(sizes)]
    outs = tf.meshgrid(*[tf.constant(v) for v in vectors], indexing=indexing)
    expected = np.meshgrid(*vectors, indexing=indexing)
    assert len(outs) == len(expected)
    for out, e in zip(outs, expected):
        assert out.dtype == tf.int32
        np.testing.assert_array_equal(out.numpy(), e)


def test_meshgrid_flattens_inputs_and_checks_arguments_like_tf():
    x, y = tf.meshgrid([[1, 2]], 3)
    assert x.numpy().tolist() == [[1, 2]] and y.numpy().tolist() == [[3, 3]]
    assert tf.meshgrid() == []
    assert [t.shape for t in tf.meshgrid([1, 2, 3], [4, 5], [6, 7, 8, 9])] == [(2, 3, 4)] * 3
    with pytest.raises(ValueError, match="indexing must be either 'xy' or 'ij', got 'foo'"):
        tf.meshgrid([1, 2], [3], indexing="foo")
    with pytest.raises(TypeError, match="'foo' is an invalid keyword argument"):
        tf.meshgrid([1], [2], foo=1)
    with pytest.raises(TypeError, match="input 0 has int32 and input 1 has float32"):
        tf.meshgrid([1, 2], [3.])


@given(data=st.data())
def test_meshgrid_gradient(data):
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=2, max_size=3))
    vectors = [data.draw(floats_array((n,))) for n in sizes]
    indexing = data.draw(st.sampled_from(["xy", "ij"]))
    check_gradients(lambda *ts: tf.add_n(tf.meshgrid(*ts, indexing=indexing)),
                    lambda *arrays: sum(np.meshgrid(*arrays, indexing=indexing)), vectors)


def test_meshgrid_traced_with_known_and_unknown_sizes():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    xs, ys = in_all_modes(lambda u, v: tf.meshgrid(u, v), a, b)
    ex, ey = np.meshgrid(a, b)
    np.testing.assert_array_equal(xs, ex)
    np.testing.assert_array_equal(ys, ey)


def test_top_k_and_in_top_k_are_in_tf_nn():
    assert tf.nn.top_k is tf.math.top_k and tf.nn.in_top_k is tf.math.in_top_k
    values, indices = tf.nn.top_k(tf.constant([1.0, 5.0, 3.0]), k=2)
    assert values.numpy().tolist() == [5.0, 3.0] and indices.numpy().tolist() == [1, 2]
