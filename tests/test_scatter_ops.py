"""gather_nd, scatter_nd, tensor_scatter_nd_* and boolean_mask against NumPy, with gradients,
eagerly and traced."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients
from ops import scatter as scatter_kernels
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


def _shapes(min_dims=0, max_dims=3, min_side=0, max_side=3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def _values(dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return hnp.arrays(dtype, shape, elements=st.floats(-3, 3, width=8 * dtype.itemsize))
    if dtype.kind == "b":
        return hnp.arrays(dtype, shape)
    return hnp.arrays(dtype, shape, elements=st.integers(-5, 5))


def _index_tuples(draw, dims, lead):
    """Index tuples of shape lead + (len(dims),), every entry in range of its dimension."""
    idtype = draw(st.sampled_from([np.int32, np.int64]))
    if any(d == 0 for d in dims):
        lead = lead[:-1] + (0,) if lead else (0,)
    columns = [draw(hnp.arrays(idtype, lead, elements=st.integers(0, max(d - 1, 0))))
               for d in dims]
    return np.stack(columns, axis=-1) if columns else np.zeros(lead + (0,), idtype)


def _np_gather_nd(params, indices, batch_dims=0):
    if batch_dims:
        parts = [_np_gather_nd(p, i, batch_dims - 1) for p, i in zip(params, indices)]
        k = indices.shape[-1]
        shape = indices.shape[:-1] + params.shape[batch_dims + k:]
        return np.stack(parts).reshape(shape) if parts else np.zeros(shape, params.dtype)
    flat = indices.reshape(int(np.prod(indices.shape[:-1])), indices.shape[-1])
    picked = [params[tuple(i)] for i in flat]
    shape = indices.shape[:-1] + params.shape[indices.shape[-1]:]
    return np.array(picked, params.dtype).reshape(shape) if picked else np.zeros(shape,
                                                                                 params.dtype)


# ---- gather_nd ----------------------------------------------------------------------------------
@st.composite
def gather_nd_case(draw, dtypes=DTYPES):
    dtype = draw(st.sampled_from(dtypes))
    batch_dims = draw(st.integers(0, 1))
    pshape = draw(_shapes(min_dims=1 + batch_dims))
    k = draw(st.integers(0 if batch_dims == 0 else 1, len(pshape) - batch_dims))
    lead = pshape[:batch_dims] + draw(_shapes(max_dims=2))
    indices = _index_tuples(draw, pshape[batch_dims:batch_dims + k], lead)
    if batch_dims and indices.shape[:1] != pshape[:1]:
        indices = np.zeros(pshape[:1] + (0, k), indices.dtype)
    return draw(_values(dtype, pshape)), indices, batch_dims


@given(gather_nd_case())
def test_gather_nd(case):
    params, indices, batch_dims = case
    out, = in_all_modes(lambda p, i: tf.gather_nd(p, i, batch_dims=batch_dims), params, indices,
                        keep_last=[1])
    expected = _np_gather_nd(params, indices, batch_dims)
    assert out.dtype == params.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@given(gather_nd_case(dtypes=[np.float64]))
def test_gather_nd_gradient_accumulates_repeated_indices(case):
    params, indices, batch_dims = case
    check_gradients(lambda p: tf.gather_nd(p, indices, batch_dims=batch_dims),
                    lambda p: _np_gather_nd(p, indices, batch_dims), [params])


def test_gather_nd_tf_examples():
    p = tf.reshape(tf.range(24.0), [2, 3, 4])
    assert tf.gather_nd(p, [[1, 2], [0, 0]]).numpy().tolist() == [[20, 21, 22, 23], [0, 1, 2, 3]]
    assert tf.gather_nd(p, [[[1, 0]], [[2, 3]]], batch_dims=1).numpy().tolist() == [[4.0], [23.0]]
    assert tf.gather_nd(p, tf.zeros([2, 0], tf.int32)).shape == (2, 2, 3, 4)
    strings = tf.constant([["a", "b"], ["c", "d"]])
    assert tf.gather_nd(strings, [[1, 0], [0, 1]]).numpy().tolist() == [b"c", b"b"]


def test_gather_nd_errors_name_the_index_and_the_valid_range():
    p = tf.zeros([2, 3, 4])
    with pytest.raises(IAE, match=r"gather_nd: indices\[0\] = \[1, 5\] does not index into "
                                  r"params of shape \[2,3,4\]: an index must lie in "
                                  r"\[0, 2\) x \[0, 3\)"):
        tf.gather_nd(p, [[1, 5]])
    with pytest.raises(IAE, match=r"gather_nd: indices\[0,0\] = \[1, -1\]"):
        tf.gather_nd(p, [[[1, -1]]])
    with pytest.raises(IAE, match=r"gather_nd: indices\[1\] = \[3\] does not index into params of "
                                  r"shape \[2,3,4\] after its 1 batch dimensions: an index must "
                                  r"lie in \[0, 3\)"):
        tf.gather_nd(p, [[1], [3]], batch_dims=1)
    with pytest.raises(IAE, match="gather_nd: index tuples of length 4 cannot index into params "
                                  "of rank 3"):
        tf.gather_nd(p, [[1, 1, 1, 1]])
    with pytest.raises(IAE, match="gather_nd: params must have rank >= 1"):
        tf.gather_nd(tf.constant(1.0), tf.zeros([0], tf.int32))
    with pytest.raises(IAE, match="gather_nd: indices must have rank >= 1"):
        tf.gather_nd(p, 1)
    with pytest.raises(TypeError, match="gather_nd: indices must be an integer tensor"):
        tf.gather_nd(p, [[1.0, 2.0]])
    with pytest.raises(IAE, match="gather_nd: the 1 batch dimensions of params"):
        tf.gather_nd(p, [[1], [2], [0]], batch_dims=1)
    with pytest.raises(IAE, match=r"gather_nd: indices\[0\] = \[1, 5\]"):
        tf.function(lambda x, i: tf.gather_nd(x, i))(p, tf.constant([[1, 5]]))


def test_kernels_refuse_out_of_range_rows_rather_than_read_out_of_bounds():
    with pytest.raises(IndexError):
        scatter_kernels.gather_nd(np.arange(4.0), np.array([[4]]))
    out = scatter_kernels.scatter_nd(np.array([[7], [1]]), np.array([1.0, 2.0]), np.zeros(3),
                                     scatter_kernels.ADD)
    assert out.tolist() == [0.0, 2.0, 0.0]


# ---- scatter_nd ---------------------------------------------------------------------------------
@st.composite
def scatter_case(draw, dtypes=(np.float32, np.float64, np.int32, np.int64)):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(_shapes(min_dims=1))
    k = draw(st.integers(1, len(shape)))
    indices = _index_tuples(draw, shape[:k], draw(_shapes(min_dims=1, max_dims=2)))
    updates = draw(_values(dtype, indices.shape[:-1] + shape[k:]))
    return indices, updates, shape


def _np_scatter(tensor, indices, updates, combine):
    out = tensor.copy()
    k = indices.shape[-1]
    m = int(np.prod(indices.shape[:-1]))
    for i, u in zip(indices.reshape(m, k), updates.reshape((m,) + tensor.shape[k:])):
        out[tuple(i)] = combine(out[tuple(i)], u)
    return out


@given(scatter_case())
def test_scatter_nd_sums_repeated_indices(case):
    indices, updates, shape = case
    out, = in_all_modes(lambda i, u: tf.scatter_nd(i, u, shape), indices, updates, keep_last=[0])
    expected = _np_scatter(np.zeros(shape, updates.dtype), indices, updates, np.add)
    assert out.dtype == updates.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@given(scatter_case(dtypes=(np.float64,)))
def test_scatter_nd_gradient(case):
    indices, updates, shape = case
    check_gradients(lambda u: tf.scatter_nd(indices, u, shape),
                    lambda u: _np_scatter(np.zeros(shape), indices, u, np.add), [updates])


def test_scatter_nd_tf_examples_and_errors():
    assert tf.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5]).numpy().tolist() == \
        [0, 4, 0, 2, 0]
    assert tf.scatter_nd([[1]], [True], tf.constant([3], tf.int64)).numpy().tolist() == \
        [False, True, False]
    with pytest.raises(IAE, match=r"scatter_nd: indices\[1\] = \[7\] does not index into shape "
                                  r"\[5\]: an index must lie in \[0, 5\)"):
        tf.scatter_nd([[1], [7]], [1.0, 2.0], [5])
    with pytest.raises(IAE, match=r"scatter_nd: updates has shape \[2\], but indices of shape "
                                  r"\[1,1\] into a tensor of shape \[5\] need updates of shape "
                                  r"\[1\]"):
        tf.scatter_nd([[1]], [1.0, 2.0], [5])
    with pytest.raises(IAE, match="scatter_nd: shape must have non-negative dimensions"):
        tf.scatter_nd([[1]], [1.0], [-5])


def test_scatter_nd_with_a_shape_computed_inside_a_function():
    @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.int32),
                                  tf.TensorSpec([None], tf.float32)])
    def histogram(indices, updates):
        return tf.scatter_nd(indices, updates, [tf.reduce_max(indices) + 1])

    out = histogram(tf.constant([[2], [0], [2]]), tf.constant([1.0, 2.0, 3.0]))
    assert out.numpy().tolist() == [2.0, 0.0, 4.0]
    with pytest.raises(IAE, match=r"scatter_nd: updates has shape \[2\], but indices of shape "
                                  r"\[3,1\]"):
        histogram(tf.constant([[2], [0], [2]]), tf.constant([1.0, 2.0]))


# ---- tensor_scatter_nd_* ------------------------------------------------------------------------
COMBINE = {"update": lambda old, new: new, "add": np.add, "sub": np.subtract,
           "max": np.maximum, "min": np.minimum}


@given(scatter_case(), st.sampled_from(sorted(COMBINE)), st.data())
def test_tensor_scatter(case, mode, data):
    indices, updates, shape = case
    tensor = data.draw(_values(updates.dtype, shape))
    op = getattr(tf, f"tensor_scatter_nd_{mode}")
    out, = in_all_modes(lambda t, i, u: op(t, i, u), tensor, indices, updates, keep_last=[1])
    expected = _np_scatter(tensor, indices, updates, COMBINE[mode])
    assert out.dtype == tensor.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@given(st.data(), st.sampled_from(sorted(COMBINE)))
def test_tensor_scatter_gradients(data, mode):
    indices, updates, shape = data.draw(scatter_case(dtypes=(np.float64,)))
    if mode == "update":   # a repeated index is overwritten: TF's gradient assumes none is
        k = indices.shape[-1]
        flat = indices.reshape(-1, k)
        _, first = np.unique(flat, axis=0, return_index=True)
        first = np.sort(first)
        indices, updates = flat[first], updates.reshape((len(flat),) + shape[k:])[first]
    # Distinct values: max and min are differentiable away from ties.
    tensor = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 0.37 - 1.0
    updates = updates + np.arange(updates.size).reshape(updates.shape) * 1e-3 + 0.011
    op = getattr(tf, f"tensor_scatter_nd_{mode}")
    check_gradients(lambda t, u: op(t, indices, u),
                    lambda t, u: _np_scatter(t, indices, u, COMBINE[mode]), [tensor, updates])


def test_tensor_scatter_tf_examples():
    zeros = tf.zeros([4])
    assert tf.tensor_scatter_nd_update(zeros, [[1], [1]], [5.0, 6.0]).numpy().tolist() == \
        [0, 6, 0, 0]
    assert tf.tensor_scatter_nd_add(tf.ones([4]), [[1], [1]], [5.0, 6.0]).numpy().tolist() == \
        [1, 12, 1, 1]
    assert tf.tensor_scatter_nd_update(tf.zeros([2, 3]), [[1, 2], [0, 0]],
                                       [5.0, 6.0]).numpy().tolist() == [[6, 0, 0], [0, 0, 5]]
    assert tf.tensor_scatter_nd_update(tf.zeros([2], tf.bool), [[1]], [True]).numpy().tolist() \
        == [False, True]
    nan = np.nan
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_max(tf.constant([1.0, nan, 1.0]), [[0], [1], [2]],
                                 [nan, 2.0, nan]).numpy(), [1.0, nan, 1.0])


def test_tensor_scatter_max_gradient_is_shared_by_ties():
    tensor = tf.constant([2.0, 1.0])
    updates = tf.constant([2.0, 0.5])
    with tf.GradientTape() as tape:
        tape.watch([tensor, updates])
        y = tf.tensor_scatter_nd_max(tensor, [[0], [1]], updates)
    g_tensor, g_updates = tape.gradient(y, [tensor, updates])
    assert g_tensor.numpy().tolist() == [0.5, 1.0] and g_updates.numpy().tolist() == [0.5, 0.0]


def test_tensor_scatter_errors():
    with pytest.raises(IAE, match=r"tensor_scatter_nd_update: indices\[1\] = \[4\] does not index "
                                  r"into shape \[4\]"):
        tf.tensor_scatter_nd_update(tf.zeros([4]), [[1], [4]], [5.0, 6.0])
    with pytest.raises(IAE, match="tensor_scatter_nd_add: tensor has dtype float32 but updates "
                                  "has dtype float64"):
        tf.tensor_scatter_nd_add(tf.zeros([4]), [[1]], tf.constant([5.0], tf.float64))
    with pytest.raises(TypeError, match="tensor_scatter_nd_add: updates has dtype bool"):
        tf.tensor_scatter_nd_add(tf.zeros([2], tf.bool), [[1]], [True])
    with pytest.raises(IAE, match="tensor_scatter_nd_sub: updates has shape"):
        tf.tensor_scatter_nd_sub(tf.zeros([2, 3]), [[1]], [5.0])


# ---- boolean_mask -------------------------------------------------------------------------------
@st.composite
def mask_case(draw, dtypes=DTYPES):
    shape = draw(_shapes(min_dims=1))
    axis = draw(st.integers(0, len(shape) - 1))
    k = draw(st.integers(1, len(shape) - axis))
    mask = draw(hnp.arrays(np.bool_, shape[axis:axis + k]))
    return draw(_values(draw(st.sampled_from(dtypes)), shape)), mask, axis


def _np_boolean_mask(tensor, mask, axis):
    index = (slice(None),) * axis + (mask,)
    return tensor[index]


@given(mask_case())
def test_boolean_mask(case):
    tensor, mask, axis = case
    out, = in_all_modes(lambda t, m: tf.boolean_mask(t, m, axis=axis), tensor, mask)
    expected = _np_boolean_mask(tensor, mask, axis)
    assert out.dtype == tensor.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@given(mask_case(dtypes=[np.float64]))
def test_boolean_mask_gradient(case):
    tensor, mask, axis = case
    check_gradients(lambda t: tf.boolean_mask(t, mask, axis=axis),
                    lambda t: _np_boolean_mask(t, mask, axis), [tensor])


def test_boolean_mask_traced_gradient_of_a_data_dependent_selection():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64)])
    def positive_square_sum(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            picked = tf.boolean_mask(x, x > 0)
            assert picked.shape.as_list() == [None]
            total = tf.reduce_sum(picked * picked)
        return total, tape.gradient(total, x)

    total, grad = positive_square_sum(np.array([[1.0, -2.0], [3.0, 0.5]]))
    assert float(total) == 10.25
    assert grad.numpy().tolist() == [[2.0, 0.0], [6.0, 1.0]]


def test_boolean_mask_tf_examples_and_errors():
    x = tf.constant([[1, 2], [3, 4], [5, 6]])
    assert tf.boolean_mask(x, [True, False, True]).numpy().tolist() == [[1, 2], [5, 6]]
    assert tf.boolean_mask(tf.constant([[1, 2], [3, 4]]), [False, True], axis=1).numpy().tolist() \
        == [[2], [4]]
    assert tf.boolean_mask(tf.constant([1, 2]), [0, 1]).numpy().tolist() == [2]
    with pytest.raises(IAE, match="boolean_mask: mask cannot be a scalar"):
        tf.boolean_mask(tf.constant([1, 2]), True)
    with pytest.raises(IAE, match=r"boolean_mask: mask of shape \[3\] does not match the "
                                  r"dimensions of tensor \[2,2\] from axis 0"):
        tf.boolean_mask(tf.constant([[1, 2], [3, 4]]), [False, True, True])
    with pytest.raises(TypeError, match="boolean_mask: mask must be a bool tensor"):
        tf.boolean_mask(tf.constant([1, 2]), [0.0, 1.0])


def test_second_derivatives_through_index_tuples_and_masks():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            picked = tf.gather_nd(x, [[1, 0], [0, 1], [1, 0]])
            masked = tf.boolean_mask(x, [[True, False], [False, True]])
            placed = tf.tensor_scatter_nd_add(x, [[0, 0]], masked[:1])
            y = tf.reduce_sum(picked ** 3) + tf.reduce_sum(masked ** 2) \
                + tf.reduce_sum(placed ** 2)
        dy = inner.gradient(y, x)
    # picked: x10 twice, x01 once -> 6 x per pick; masked: x00, x11 -> 2 each;
    # placed: (2 x00)^2 at [0, 0] -> 8, and x01^2, x10^2, x11^2 -> 2 each.
    expected = [[2.0 + 8.0, 6 * 2.0 + 2.0], [2 * 6 * 3.0 + 2.0, 2.0 + 2.0]]
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), expected)


def test_gradients_of_index_tuple_ops_traced_with_unknown_shapes():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64),
                                  tf.TensorSpec([None, 2], tf.int32)])
    def grads(params, indices):
        with tf.GradientTape() as tape:
            tape.watch(params)
            picked = tf.gather_nd(params, indices)
            updated = tf.tensor_scatter_nd_update(params, indices, picked * 3.0)
            loss = tf.reduce_sum(updated * updated)
        return updated, tape.gradient(loss, params)

    params = np.arange(6.0).reshape(2, 3)
    updated, grad = grads(params, np.array([[1, 2], [0, 0]], np.int32))
    assert updated.numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 15.0]]
    assert grad.numpy().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 90.0]]


def test_inputs_of_unknown_rank_are_checked_when_the_function_runs():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32),
                                  tf.TensorSpec([None], tf.int32)])
    def chained(params, index):
        picked = tf.gather_nd(params, index)   # index tuples of unknown length: unknown rank
        assert picked.shape.rank is None
        row = tf.gather_nd(picked, [1])
        masked = tf.boolean_mask(picked, picked > 1.5)
        updated = tf.tensor_scatter_nd_add(picked, [[0]], [10.0])
        return row, masked, updated, tf.scatter_nd([[2], [0], [1]], updated, [4])

    params = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    row, masked, updated, placed = chained(params, tf.constant([0]))
    assert row.numpy().tolist() == 2.0 and masked.numpy().tolist() == [2.0, 3.0]
    assert updated.numpy().tolist() == [11.0, 2.0, 3.0]
    assert placed.numpy().tolist() == [2.0, 3.0, 11.0, 0.0]
    with pytest.raises(IAE, match=r"tensor_scatter_nd_add: indices\[0\] = \[5\] does not index"):
        tf.function(lambda p: tf.tensor_scatter_nd_add(tf.gather_nd(p, tf.constant([0])), [[5]],
                                                       [1.0]),
                    input_signature=[tf.TensorSpec([None, None], tf.float32)])(params)
