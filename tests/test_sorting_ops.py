"""Sorting and searching ops (sort, argsort, top_k, in_top_k, searchsorted, unique) against
Python/NumPy references, with gradients, eagerly and traced."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError
SORTABLE = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16]


def _shapes(min_dims=1, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def _tied_values(dtype, shape, nan=False):
    """Values with many ties (a few distinct ones), and NaNs for floats when ``nan``."""
    dtype = np.dtype(dtype)
    lo = 0 if dtype.kind == "u" else -3
    if dtype.kind == "f":
        elements = st.sampled_from([-2.0, -0.0, 0.0, 1.5, 3.0, -np.inf] + ([np.nan] if nan else []))
    else:
        elements = st.integers(lo, 3)
    return hnp.arrays(dtype, shape, elements=elements)


def _distinct_values(shape):
    """float64 values that are all different (where gradients of sorts are defined)."""
    n = int(np.prod(shape))
    return st.permutations(list(range(n))).map(
        lambda p: (np.asarray(p, np.float64) * 0.7 - 2.0).reshape(shape))


def _stable_order(fiber, descending):
    """The stable sorting permutation of a list of numbers; NaNs last (first descending)."""
    def key(i):
        v = fiber[i]
        nan = isinstance(v, float) and math.isnan(v)
        if descending:
            return (not nan, 0 if nan else -v, i)
        return (nan, 0 if nan else v, i)
    return sorted(range(len(fiber)), key=key)


def _np_argsort(x, axis, descending):
    moved = np.moveaxis(x, axis, -1)
    flat = moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])
    order = np.array([_stable_order(row.tolist(), descending) for row in flat],
                     np.int64).reshape(moved.shape)
    return np.moveaxis(order, -1, axis)


# ---- sort and argsort ---------------------------------------------------------------------------
@st.composite
def sort_case(draw):
    dtype = draw(st.sampled_from(SORTABLE))
    shape = draw(_shapes())
    x = draw(_tied_values(dtype, shape, nan=True))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    direction = draw(st.sampled_from(["ASCENDING", "DESCENDING"]))
    return x, axis, direction


@given(sort_case())
def test_sort_and_argsort_are_stable_in_every_mode(case):
    x, axis, direction = case
    order = _np_argsort(x, axis, direction == "DESCENDING")
    values, indices = in_all_modes(
        lambda t: (tf.sort(t, axis=axis, direction=direction),
                   tf.argsort(t, axis=axis, direction=direction)), x)
    assert values.dtype == x.dtype and indices.dtype == np.int32
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis))


def test_sort_matches_tf_on_ties_and_signed_zeros():
    x = tf.constant([1.0, 0.0, 1.0, -0.0, 1.0, 0.0])
    assert tf.argsort(x).numpy().tolist() == [1, 3, 5, 0, 2, 4]
    assert tf.argsort(x, direction="DESCENDING").numpy().tolist() == [0, 2, 4, 1, 3, 5]
    ints = tf.constant([0, -2147483648, 5, 2147483647])
    assert tf.sort(ints).numpy().tolist() == [-2147483648, 0, 5, 2147483647]
    assert tf.sort(tf.constant([0, 255, 3], tf.uint8), direction="DESCENDING").numpy().tolist() \
        == [255, 3, 0]
    assert tf.sort(tf.constant([[3, 1], [2, 4]]), axis=0).numpy().tolist() == [[2, 1], [3, 4]]


@given(st.data())
def test_sort_gradient(data):
    shape = data.draw(_shapes(min_side=1))
    x = data.draw(_distinct_values(shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    direction = data.draw(st.sampled_from(["ASCENDING", "DESCENDING"]))
    descending = direction == "DESCENDING"
    check_gradients(lambda t: tf.sort(t, axis=axis, direction=direction),
                    lambda a: np.take_along_axis(a, _np_argsort(a, axis, descending), axis), [x])


def test_sort_gradient_traced_with_unknown_shape():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64)])
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sort(x, direction="DESCENDING")
                              * tf.constant([1.0, 10.0, 100.0], tf.float64))
        return tape.gradient(y, x)

    x = np.array([[2.0, 7.0, -1.0], [0.0, 5.0, 9.0]])
    np.testing.assert_array_equal(grad(x).numpy(), [[10.0, 1.0, 100.0], [100.0, 10.0, 1.0]])


def test_sort_errors():
    with pytest.raises(IAE, match="sort: values must have rank >= 1, got a scalar"):
        tf.sort(tf.constant(3.0))
    with pytest.raises(IAE, match="argsort: values must have rank >= 1, got a scalar"):
        tf.argsort(tf.constant(3.0))
    with pytest.raises(IAE, match="sort: axis 2 is out of range for a tensor of rank 2"):
        tf.sort(tf.zeros([2, 2]), axis=2)
    with pytest.raises(ValueError, match="argsort: direction must be 'ASCENDING' or 'DESCENDING'"):
        tf.argsort(tf.zeros([2]), direction="UP")
    with pytest.raises(TypeError, match="sort: values has dtype bool"):
        tf.sort(tf.constant([True, False]))


# ---- top_k --------------------------------------------------------------------------------------
@st.composite
def top_k_case(draw):
    dtype = draw(st.sampled_from(SORTABLE))
    shape = draw(_shapes())
    x = draw(_tied_values(dtype, shape))
    k = draw(st.integers(0, shape[-1]))
    return x, k


@given(top_k_case())
def test_top_k_takes_the_lower_index_first_on_ties(case):
    x, k = case
    order = _np_argsort(x, -1, True)[..., :k]
    values, indices = in_all_modes(lambda t: tuple(tf.math.top_k(t, k)), x)
    assert values.dtype == x.dtype and indices.dtype == np.int32
    assert values.shape == x.shape[:-1] + (k,)
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, -1))


def test_top_k_tf_examples_and_options():
    result = tf.math.top_k(tf.constant([1.0, 3.0, 3.0, 2.0, 3.0]), 3)
    assert result.values.numpy().tolist() == [3.0, 3.0, 3.0]
    assert result.indices.numpy().tolist() == [1, 2, 4]
    wide = tf.math.top_k(tf.constant([[1, 5, 2], [7, 7, 0]]), k=2, index_type=tf.int64)
    assert wide.indices.dtype == tf.int64
    assert wide.indices.numpy().tolist() == [[1, 2], [0, 1]]
    assert wide.values.numpy().tolist() == [[5, 2], [7, 7]]
    assert tf.math.top_k([[1.0, 2.0]], 0).values.shape == (1, 0)
    assert tf.math.top_k([4.0, 9.0, 1.0], tf.constant(2)).indices.numpy().tolist() == [1, 0]


@given(st.data())
def test_top_k_gradient(data):
    shape = data.draw(_shapes(min_side=1))
    x = data.draw(_distinct_values(shape))
    k = data.draw(st.integers(0, shape[-1]))
    check_gradients(lambda t: tf.math.top_k(t, k).values,
                    lambda a: np.take_along_axis(a, _np_argsort(a, -1, True)[..., :k], -1), [x])


def test_top_k_with_k_computed_inside_a_function():
    @tf.function
    def largest_half(x):
        k = tf.shape(x)[0] // 2
        with tf.GradientTape() as tape:
            tape.watch(x)
            top = tf.math.top_k(x, k)
            total = tf.reduce_sum(top.values)
        return top.values, top.indices, tape.gradient(total, x)

    function = largest_half.get_concrete_function(tf.TensorSpec([None], tf.float32))
    values, indices, grad = function(tf.constant([4.0, 1.0, 8.0, 3.0, 9.0, 0.0]))
    assert values.numpy().tolist() == [9.0, 8.0, 4.0]
    assert indices.numpy().tolist() == [4, 2, 0]
    assert grad.numpy().tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    with pytest.raises(IAE, match="top_k: input must have at least k columns"):
        tf.function(lambda x, k: tf.math.top_k(x, k))(tf.constant([1.0, 2.0]), tf.constant(3))


def test_top_k_errors():
    with pytest.raises(IAE, match="top_k: input must have at least k columns: its last "
                                  "dimension has 2, k is 3"):
        tf.math.top_k(tf.constant([1.0, 2.0]), 3)
    with pytest.raises(IAE, match="top_k: k must be >= 0, got -1"):
        tf.math.top_k(tf.constant([1.0, 2.0]), -1)
    with pytest.raises(IAE, match="top_k: input must have rank >= 1"):
        tf.math.top_k(tf.constant(1.0), 1)
    with pytest.raises(TypeError, match="top_k: input has dtype bool"):
        tf.math.top_k(tf.constant([True, False]), 1)
    with pytest.raises(TypeError, match="top_k: k must be an integer"):
        tf.math.top_k(tf.constant([1.0, 2.0]), 1.5)


# ---- in_top_k -----------------------------------------------------------------------------------
def _np_in_top_k(targets, predictions, k):
    out = []
    for t, row in zip(targets, predictions):
        valid = 0 <= t < row.size and np.isfinite(row).all()
        out.append(bool(valid and np.sum(row > row[t]) < k))
    return np.array(out, np.bool_)


@st.composite
def in_top_k_case(draw):
    rows = draw(st.integers(0, 4))
    classes = draw(st.integers(1, 5))
    predictions = draw(hnp.arrays(np.float32, (rows, classes), elements=st.sampled_from(
        [0.0, 0.25, 0.5, 1.0, np.nan, np.inf])))
    targets = draw(hnp.arrays(draw(st.sampled_from([np.int32, np.int64])), (rows,),
                              elements=st.integers(-1, classes)))
    k = draw(st.integers(-1, classes + 1))
    return targets, predictions, k


@given(in_top_k_case())
def test_in_top_k(case):
    targets, predictions, k = case
    out, = in_all_modes(lambda t, p: tf.math.in_top_k(t, p, k), targets, predictions)
    np.testing.assert_array_equal(out, _np_in_top_k(targets, predictions, k))


def test_in_top_k_tf_examples():
    predictions = tf.constant([[0.1, 0.9, 0.0], [0.5, 0.5, 0.1], [0.2, 0.3, 0.2]])
    assert tf.math.in_top_k(tf.constant([0, 1, 2]), predictions, 1).numpy().tolist() == \
        [False, True, False]
    ties = tf.constant([[0.3, 0.3, 0.3], [0.1, 0.3, 0.3]])
    assert tf.math.in_top_k([2, 0], ties, 1).numpy().tolist() == [True, False]
    with_inf = tf.constant([[0.1, 0.2, np.inf]])
    assert tf.math.in_top_k([1], with_inf, 2).numpy().tolist() == [False]


def test_in_top_k_errors():
    with pytest.raises(TypeError, match="in_top_k: predictions must be float32, got float64"):
        tf.math.in_top_k([0], tf.constant([[1.0, 2.0]], tf.float64), 1)
    with pytest.raises(IAE, match=r"in_top_k: the first dimension of predictions \(1\) must "
                                  r"match the length of targets \(2\)"):
        tf.math.in_top_k([0, 1], [[1.0, 2.0]], 1)
    with pytest.raises(TypeError, match="in_top_k: targets must be an integer tensor"):
        tf.math.in_top_k([0.0], [[1.0, 2.0]], 1)


# ---- searchsorted -------------------------------------------------------------------------------
@st.composite
def searchsorted_case(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    lead = draw(_shapes(min_dims=0, max_dims=2, max_side=3))
    n = draw(st.integers(0, 5))
    m = draw(st.integers(0, 4))
    sequence = np.sort(draw(_tied_values(dtype, lead + (n,))), axis=-1)
    values = draw(_tied_values(dtype, lead + (m,)))
    side = draw(st.sampled_from(["left", "right"]))
    return sequence, values, side


@given(searchsorted_case())
def test_searchsorted(case):
    sequence, values, side = case
    out, = in_all_modes(lambda s, v: tf.searchsorted(s, v, side=side), sequence, values)
    lead = int(np.prod(values.shape[:-1]))
    rows = [np.searchsorted(s, v, side=side) for s, v in
            zip(sequence.reshape(lead, sequence.shape[-1]), values.reshape(lead, values.shape[-1]))]
    expected = np.array(rows, np.int32).reshape(values.shape)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)


def test_searchsorted_tf_examples_and_errors():
    assert tf.searchsorted([1, 3, 3, 5], [0, 3, 4, 6]).numpy().tolist() == [0, 1, 3, 4]
    assert tf.searchsorted([1, 3, 3, 5], [0, 3, 4, 6], side="right").numpy().tolist() == \
        [0, 3, 3, 4]
    assert tf.searchsorted([[1, 3], [2, 4]], [[3], [3]]).numpy().tolist() == [[1], [1]]
    assert tf.searchsorted([1.0, 3.0, np.nan], [np.nan, 2.0]).numpy().tolist() == [0, 1]
    assert tf.searchsorted([1.0, 3.0], [2.0], out_type=tf.int64).dtype == tf.int64
    with pytest.raises(ValueError, match="searchsorted: side must be 'left' or 'right'"):
        tf.searchsorted([1.0, 3.0], [2.0], side="middle")
    with pytest.raises(IAE, match="searchsorted: sorted_sequence has dtype float32 but values "
                                  "has dtype int32"):
        tf.searchsorted(tf.constant([1.0, 3.0]), tf.constant([2]))
    with pytest.raises(IAE, match="searchsorted: sorted_sequence .* must have the same leading "
                                  "dimensions"):
        tf.searchsorted([[1, 3], [2, 4]], [[3]])
    with pytest.raises(IAE, match="searchsorted: sorted_sequence and values must have rank >= 1"):
        tf.searchsorted([1.0, 3.0], 2.0)


# ---- unique -------------------------------------------------------------------------------------
def _np_unique(values):
    first = {}
    idx = [first.setdefault(v, len(first)) for v in values]
    counts = np.bincount(idx, minlength=len(first)) if idx else np.zeros(0, np.int64)
    return list(first), idx, counts.tolist()


@given(st.data())
def test_unique_with_counts_in_order_of_first_occurrence(data):
    dtype = data.draw(st.sampled_from([np.int32, np.int64, np.float32, np.uint8, np.bool_]))
    x = data.draw(_tied_values(dtype, (data.draw(st.integers(0, 8)),))) if dtype != np.bool_ \
        else data.draw(hnp.arrays(np.bool_, (data.draw(st.integers(0, 8)),)))
    out_idx = data.draw(st.sampled_from([tf.int32, tf.int64]))
    y, idx, count = in_all_modes(lambda t: tuple(tf.unique_with_counts(t, out_idx=out_idx)), x)
    expected_y, expected_idx, expected_count = _np_unique(x.tolist())
    assert y.dtype == x.dtype and idx.dtype == count.dtype == out_idx.as_numpy_dtype
    assert y.tolist() == expected_y and idx.tolist() == expected_idx
    assert count.tolist() == expected_count
    y2, idx2 = tf.unique(x, out_idx=out_idx)
    np.testing.assert_array_equal(y2.numpy(), y)
    np.testing.assert_array_equal(idx2.numpy(), idx)


def test_unique_nans_are_distinct_and_strings_work():
    y, idx = tf.unique(tf.constant([np.nan, 1.0, np.nan, 0.0, -0.0]))
    np.testing.assert_array_equal(y.numpy(), [np.nan, 1.0, np.nan, 0.0])
    assert idx.numpy().tolist() == [0, 1, 2, 3, 3]
    y, idx, count = tf.unique_with_counts(tf.constant(["b", "a", "b"]))
    assert y.numpy().tolist() == [b"b", b"a"] and y.dtype == tf.string
    assert idx.numpy().tolist() == [0, 1, 0] and count.numpy().tolist() == [2, 1]


def test_unique_inside_a_function_has_an_unknown_length():
    @tf.function
    def distinct_sum(x):
        y, idx = tf.unique(x)
        assert y.shape.as_list() == [None] and idx.shape.as_list() == [5]
        return tf.reduce_sum(y), tf.size(y)

    total, n = distinct_sum(tf.constant([3, 1, 3, 2, 1]))
    assert int(total) == 6 and int(n) == 3


def test_unique_errors():
    with pytest.raises(IAE, match=r"unique: x must be a 1-D tensor, got shape \[1,2\]"):
        tf.unique(tf.constant([[1, 2]]))
    with pytest.raises(TypeError, match="unique: out_idx must be int32 or int64"):
        tf.unique(tf.constant([1, 2]), out_idx=tf.float32)


def test_sort_and_top_k_second_derivatives():
    x = tf.constant([2.0, -1.0, 3.0], tf.float64)
    weights = tf.constant([1.0, 10.0, 100.0], tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(tf.sort(x) ** 3 * weights) + tf.reduce_sum(
                tf.math.top_k(x, 1).values ** 2)
        dy = inner.gradient(y, x)
    # sorted: [-1, 2, 3] -> d2/dx2 of w * x^3 is 6 w x; the top value 3 adds 2.
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), [6 * 10 * 2.0, 6 * 1 * -1.0,
                                                               6 * 100 * 3.0 + 2.0])


def test_inputs_of_unknown_rank_are_checked_when_the_function_runs():
    @tf.function
    def ops_on_unknown_rank():
        x = tf.py_function(lambda: np.array([3.0, 1.0, 2.0, 1.0], np.float32), [], Tout=tf.float32)
        rows = tf.py_function(lambda: np.array([[3.0, 1.0]], np.float32), [], Tout=tf.float32)
        assert x.shape.rank is None and rows.shape.rank is None
        top = tf.math.top_k(x, 2)
        return (tf.sort(x), top.values, top.indices, tf.unique(x).y,
                tf.searchsorted(tf.sort(x), x), tf.math.in_top_k([0], rows, 1))

    sorted_x, values, indices, distinct, positions, hit = ops_on_unknown_rank()
    assert sorted_x.numpy().tolist() == [1.0, 1.0, 2.0, 3.0]
    assert values.numpy().tolist() == [3.0, 2.0] and indices.numpy().tolist() == [0, 2]
    assert distinct.numpy().tolist() == [3.0, 1.0, 2.0]
    assert positions.numpy().tolist() == [3, 0, 2, 0] and hit.numpy().tolist() == [True]

    @tf.function
    def too_few_columns():
        x = tf.py_function(lambda: np.array([1.0], np.float32), [], Tout=tf.float32)
        return tf.math.top_k(x, 2).values

    with pytest.raises(IAE, match="top_k: input must have at least k columns"):
        too_few_columns()


def test_top_k_selects_small_k_and_sorts_large_k_alike():
    # Both ways of finding the top entries (selection for a small k, a sort for a large one).
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 5, size=(3, 40)).astype(np.float64)
    x[0, 7] = np.nan
    for k in (0, 1, 5, 16, 17, 40):
        order = _np_argsort(x, -1, True)[:, :k]
        result = tf.math.top_k(x, k)
        np.testing.assert_array_equal(result.indices.numpy(), order)
        np.testing.assert_array_equal(result.values.numpy(), np.take_along_axis(x, order, -1))
