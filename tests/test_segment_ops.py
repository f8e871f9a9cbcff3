"""Segment reductions, bincount and confusion_matrix against NumPy, with gradients, eagerly and
traced."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError
REDUCTIONS = ["sum", "mean", "max", "min", "prod"]
UNSORTED = REDUCTIONS + ["sqrt_n"]


def _values(dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return hnp.arrays(dtype, shape, elements=st.sampled_from([-2.0, -0.5, 0.0, 1.0, 1.5, 3.0]))
    return hnp.arrays(dtype, shape, elements=st.integers(0 if dtype.kind == "u" else -4, 4))


def _np_segments(data, ids, num_segments, reduction, empty):
    """The reduction of data's rows (over ids' dimensions) per segment; ``empty`` for none.

    Integer sums, products and extrema are computed in the data's dtype (wrapping as the
    kernels do), the rest in float64.
    """
    rows = data.reshape((ids.size,) + data.shape[ids.ndim:])
    flat = ids.reshape(-1)
    exact = data.dtype.kind in "iu" and reduction in ("sum", "prod", "max", "min")
    dtype = data.dtype if exact else np.float64
    out = np.full((num_segments,) + rows.shape[1:], empty, dtype)
    for s in range(num_segments):
        members = rows[flat == s].astype(dtype)
        if len(members):
            out[s] = _REFERENCE[reduction](members, dtype)
    return out


_REFERENCE = {"sum": lambda m, dtype: m.sum(0, dtype=dtype),
              "prod": lambda m, dtype: m.prod(0, dtype=dtype),
              "max": lambda m, dtype: m.max(0), "min": lambda m, dtype: m.min(0),
              "mean": lambda m, dtype: m.mean(0),
              "sqrt_n": lambda m, dtype: m.sum(0) / np.sqrt(len(m))}


# ---- sorted segments ----------------------------------------------------------------------------
@st.composite
def sorted_case(draw, dtypes=(np.float32, np.float64, np.int32, np.int64)):
    dtype = draw(st.sampled_from(dtypes))
    n = draw(st.integers(0, 6))
    tail = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    ids = np.sort(draw(hnp.arrays(draw(st.sampled_from([np.int32, np.int64])), (n,),
                                  elements=st.integers(0, 4))))
    data = draw(_values(dtype, (n,) + tail))
    return data, ids


@given(sorted_case(), st.sampled_from(REDUCTIONS))
def test_segment_reductions(case, reduction):
    data, ids = case
    num_segments = int(ids[-1]) + 1 if ids.size else 0
    out, = in_all_modes(lambda d, i: getattr(tf.math, f"segment_{reduction}")(d, i), data, ids)
    expected = _np_segments(data, ids, num_segments, reduction, 1 if reduction == "prod" else 0)
    if reduction == "mean" and data.dtype.kind == "i":
        expected = np.trunc(expected)   # integer means round toward zero, as C++ division
    assert out.dtype == data.dtype and out.shape == expected.shape
    np.testing.assert_allclose(out, expected.astype(data.dtype), rtol=1e-6)


@given(sorted_case(dtypes=(np.float64,)), st.sampled_from(REDUCTIONS))
def test_segment_gradients(case, reduction):
    data, ids = case
    if reduction in ("max", "min"):   # away from ties, where the maximum is differentiable
        data = data + np.arange(data.size).reshape(data.shape) * 1e-3
    num_segments = int(ids[-1]) + 1 if ids.size else 0
    check_gradients(lambda d: getattr(tf.math, f"segment_{reduction}")(d, ids),
                    lambda d: _np_segments(d, ids, num_segments, reduction,
                                           1 if reduction == "prod" else 0), [data])


def test_segment_tf_examples():
    data = tf.constant([1.0, 2.0, 3.0])
    ids = tf.constant([0, 0, 2])
    assert tf.math.segment_max(data, ids).numpy().tolist() == [2.0, 0.0, 3.0]
    assert tf.math.segment_min(data, ids).numpy().tolist() == [1.0, 0.0, 3.0]
    assert tf.math.segment_prod(data, ids).numpy().tolist() == [2.0, 1.0, 3.0]
    assert tf.math.segment_mean(tf.constant([-1, -2, 4]), ids).numpy().tolist() == [-1, 0, 4]
    nan = np.nan
    np.testing.assert_array_equal(
        tf.math.segment_max([1.0, nan, 2.0, 5.0, nan, nan], [0, 0, 0, 1, 1, 2]).numpy(),
        [2.0, nan, nan])
    np.testing.assert_array_equal(
        tf.math.unsorted_segment_max([nan, 1.0, 1.0, nan], [0, 0, 1, 1], 2).numpy(), [1.0, nan])


def test_segment_max_gradient_is_shared_by_ties():
    data = tf.constant([[3.0, 1.0], [3.0, 2.0], [0.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(data)
        y = tf.math.segment_max(data, [0, 0, 0])
    assert tape.gradient(y, data).numpy().tolist() == [[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]]


def test_segment_prod_gradient_with_zeros():
    data = np.array([2.0, 0.0, 3.0, 0.0, 0.0, 4.0, 5.0])
    ids = np.array([0, 0, 0, 1, 1, 2, 2])
    check_gradients(lambda d: tf.math.segment_prod(d, ids),
                    lambda d: _np_segments(d, ids, 3, "prod", 1), [data])
    check_gradients(lambda d: tf.math.unsorted_segment_prod(d, ids[::-1].copy(), 3),
                    lambda d: _np_segments(d, ids[::-1], 3, "prod", 1), [data])


def test_sorted_segment_errors():
    with pytest.raises(IAE, match=r"segment_sum: segment_ids must be sorted in increasing order, "
                                  r"but segment_ids\[1\] = 0 follows segment_ids\[0\] = 1"):
        tf.math.segment_sum(tf.constant([1.0, 2.0, 3.0]), tf.constant([1, 0, 2]))
    with pytest.raises(IAE, match=r"segment_max: segment_ids\[0\] = -1 is negative"):
        tf.math.segment_max(tf.constant([1.0, 2.0]), tf.constant([-1, 0]))
    with pytest.raises(IAE, match="segment_mean: segment_ids .* must have one id per row"):
        tf.math.segment_mean(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0]))
    with pytest.raises(IAE, match="segment_prod: segment_ids must be a vector"):
        tf.math.segment_prod(tf.constant([[1.0, 2.0]]), tf.constant([[0, 0]]))
    with pytest.raises(TypeError, match="segment_sum: data has dtype bool"):
        tf.math.segment_sum(tf.constant([True]), tf.constant([0]))
    with pytest.raises(TypeError, match="segment_min: segment_ids must be an integer tensor"):
        tf.math.segment_min(tf.constant([1.0]), tf.constant([0.0]))


# ---- unsorted segments --------------------------------------------------------------------------
@st.composite
def unsorted_case(draw, dtypes=(np.float32, np.float64, np.int32, np.int64, np.uint8)):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3))
    k = draw(st.integers(0, len(shape)))   # scalar ids too: the whole of data is one slice
    num_segments = draw(st.integers(0, 4))
    ids = draw(hnp.arrays(draw(st.sampled_from([np.int32, np.int64])), shape[:k],
                          elements=st.integers(-1, num_segments - 1)))
    return draw(_values(dtype, shape)), ids, num_segments


def _unsorted_empty(reduction, dtype):
    if reduction in ("max", "min"):
        info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
        return info.min if reduction == "max" else info.max
    return 1 if reduction == "prod" else 0


@given(unsorted_case(), st.sampled_from(UNSORTED))
def test_unsorted_segment_reductions(case, reduction):
    data, ids, num_segments = case
    if reduction == "sqrt_n" and data.dtype.kind != "f":
        data = data.astype(np.float64)
    op = getattr(tf.math, f"unsorted_segment_{reduction}")
    out, = in_all_modes(lambda d, i: op(d, i, num_segments), data, ids)
    expected = _np_segments(data, ids, num_segments, reduction,
                            _unsorted_empty(reduction, data.dtype))
    dtype = data.dtype
    if reduction == "mean" and dtype.kind != "f":   # TF's true division of integers
        dtype = np.float32 if dtype.itemsize <= 2 else np.float64
    assert out.dtype == dtype and out.shape == expected.shape
    np.testing.assert_allclose(out, expected.astype(dtype), rtol=1e-6)


@given(unsorted_case(dtypes=(np.float64,)), st.sampled_from(UNSORTED))
def test_unsorted_segment_gradients(case, reduction):
    data, ids, num_segments = case
    if reduction in ("max", "min"):
        data = data + np.arange(data.size).reshape(data.shape) * 1e-3
    empty = _unsorted_empty(reduction, np.float64)
    op = getattr(tf.math, f"unsorted_segment_{reduction}")
    if reduction in ("max", "min"):   # the empty value is a constant far away: leave it out
        def weighted(d):
            return _np_segments(d, ids, num_segments, reduction, 0.0)
        check_gradients(lambda d: tf.where(tf.abs(op(d, ids, num_segments)) < 1e300,
                                           op(d, ids, num_segments), tf.zeros([], tf.float64)),
                        weighted, [data])
    else:
        check_gradients(lambda d: op(d, ids, num_segments),
                        lambda d: _np_segments(d, ids, num_segments, reduction, empty), [data])


def test_unsorted_segments_traced_with_num_segments_computed_inside():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64),
                                  tf.TensorSpec([None], tf.int32)])
    def pooled(data, ids):
        with tf.GradientTape() as tape:
            tape.watch(data)
            n = tf.reduce_max(ids) + 1
            mean = tf.math.unsorted_segment_mean(data, ids, n)
            top = tf.math.unsorted_segment_max(data, ids, n)
            loss = tf.reduce_sum(mean) + tf.reduce_sum(top * 2.0)
        return mean, top, tape.gradient(loss, data)

    data = np.array([[1.0, 5.0], [3.0, 0.0], [2.0, 2.0]])
    ids = np.array([1, 1, -1], np.int32)
    mean, top, grad = pooled(data, ids)
    assert mean.shape == (2, 2)
    np.testing.assert_array_equal(mean.numpy(), [[0.0, 0.0], [2.0, 2.5]])
    np.testing.assert_array_equal(top.numpy()[1], [3.0, 5.0])
    np.testing.assert_array_equal(grad.numpy(), [[0.5, 2.5], [2.5, 0.5], [0.0, 0.0]])
    with pytest.raises(IAE, match=r"unsorted_segment_mean: segment_ids\[0\] = 2 is not in "
                                  r"\[0, 2\)"):
        tf.function(lambda d, i, n: tf.math.unsorted_segment_mean(d, i, n))(
            tf.constant([1.0]), tf.constant([2]), tf.constant(2))


def test_unsorted_segment_errors():
    with pytest.raises(IAE, match=r"unsorted_segment_max: segment_ids\[0\] = 5 is not in "
                                  r"\[0, 3\)"):
        tf.math.unsorted_segment_max(tf.constant([1.0, 2.0]), tf.constant([5, 0]), 3)
    with pytest.raises(IAE, match=r"unsorted_segment_prod: segment_ids shape \[3\] must be a "
                                  r"prefix of data shape \[2,2\]"):
        tf.math.unsorted_segment_prod(tf.zeros([2, 2]), tf.constant([0, 1, 1]), 2)
    with pytest.raises(IAE, match="unsorted_segment_sum: num_segments must be >= 0, got -1"):
        tf.math.unsorted_segment_sum(tf.zeros([2]), tf.constant([0, 1]), -1)
    with pytest.raises(TypeError, match="unsorted_segment_sqrt_n: data has dtype int32"):
        tf.math.unsorted_segment_sqrt_n(tf.constant([1, 2]), tf.constant([0, 0]), 2)
    with pytest.raises(TypeError, match="unsorted_segment_sum: num_segments must be an integer"):
        tf.math.unsorted_segment_sum(tf.zeros([2]), tf.constant([0, 1]), 2.5)


# ---- bincount -----------------------------------------------------------------------------------
@st.composite
def bincount_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=4))
    arr = draw(hnp.arrays(draw(st.sampled_from([np.int32, np.int64])), shape,
                          elements=st.integers(0, 6)))
    weights = draw(st.one_of(st.none(), hnp.arrays(np.float64, shape,
                                                   elements=st.sampled_from([0.5, 1.0, -2.0]))))
    minlength = draw(st.one_of(st.none(), st.integers(0, 8)))
    maxlength = draw(st.one_of(st.none(), st.integers(0, 8)))
    binary = weights is None and draw(st.booleans())
    axis = draw(st.sampled_from([None, 0, -1]))
    return arr, weights, minlength, maxlength, binary, axis


def _np_bincount(arr, weights, minlength, maxlength, binary, per_row):
    """Counts (or summed weights, or 1s) per value, per row of a 2-D arr when ``per_row``."""
    size = max(int(arr.max()) + 1 if arr.size else 0, minlength or 0)
    if maxlength is not None:
        size = min(size, maxlength)
    rows = arr if per_row else arr.reshape(1, -1)
    w = np.ones(rows.shape) if weights is None else weights.reshape(rows.shape)
    out = np.zeros((rows.shape[0], size))
    for r, n in np.ndindex(*rows.shape):
        v = rows[r, n]
        if v < size:
            out[r, v] = 1 if binary else out[r, v] + w[r, n]
    return out if per_row else out.reshape(size)


@given(bincount_case())
def test_bincount(case):
    arr, weights, minlength, maxlength, binary, axis = case
    kwargs = dict(minlength=minlength, maxlength=maxlength, binary_output=binary, axis=axis)
    if weights is None:
        out, = in_all_modes(lambda a: tf.math.bincount(a, **kwargs), arr)
    else:
        out, = in_all_modes(lambda a, w: tf.math.bincount(a, w, **kwargs), arr, weights)
    expected = _np_bincount(arr, weights, minlength, maxlength, binary,
                            per_row=axis == -1 and arr.ndim == 2)
    assert out.dtype == (np.float64 if weights is not None else np.int32)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, atol=1e-12)


def test_bincount_tf_examples():
    assert tf.math.bincount([1, 1, 3], minlength=5, maxlength=2).numpy().tolist() == [0, 2]
    counted = tf.math.bincount([[1, 1], [0, 3]], weights=[[1.0, 2.0], [3.0, 4.0]], axis=-1)
    assert counted.numpy().tolist() == [[0.0, 3.0, 0.0, 0.0], [3.0, 0.0, 0.0, 4.0]]
    assert tf.math.bincount([1, 1], binary_output=True, dtype=tf.float32).numpy().tolist() == \
        [0.0, 1.0]
    assert tf.math.bincount(tf.constant([True, False])).numpy().tolist() == [1, 1]
    assert tf.math.bincount(tf.zeros([0], tf.int32)).shape == (0,)


def test_bincount_errors():
    with pytest.raises(IAE, match=r"bincount: arr\[1\] = -1 is negative"):
        tf.math.bincount([1, -1, 3])
    with pytest.raises(IAE, match=r"bincount: weights \(shape \[3\]\) must have the shape of arr"):
        tf.math.bincount([1, 1], weights=[1.0, 2.0, 3.0])
    with pytest.raises(IAE, match="bincount: with axis=-1, arr must have rank 1 or 2"):
        tf.math.bincount([[[1, 1]]], axis=-1)
    with pytest.raises(IAE, match="bincount: maxlength must be >= 0, got -1"):
        tf.math.bincount([1, 1], maxlength=-1)
    with pytest.raises(ValueError, match="bincount: binary_output and weights are mutually "
                                         "exclusive"):
        tf.math.bincount([1], weights=[1.0], binary_output=True)
    with pytest.raises(ValueError, match="bincount: axis must be None, 0 or -1"):
        tf.math.bincount([[1]], axis=1)


def test_bincount_of_a_dtype_it_cannot_count_in_is_a_type_error():
    for dtype in (tf.string, tf.bool):
        with pytest.raises(TypeError, match=f"bincount: dtype has dtype {dtype.name}, which "
                                            "this op does not support"):
            tf.math.bincount(tf.constant([0, 2]), dtype=dtype)
    half = tf.math.bincount(tf.constant([0, 2, 2]), dtype=tf.float16)
    assert half.dtype == tf.float16 and half.numpy().tolist() == [1.0, 0.0, 2.0]


# ---- confusion_matrix ---------------------------------------------------------------------------
@st.composite
def confusion_case(draw):
    n = draw(st.integers(0, 6))
    num_classes = draw(st.integers(1, 5))
    labels = draw(hnp.arrays(np.int32, (n,), elements=st.integers(0, num_classes - 1)))
    predictions = draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, num_classes - 1)))
    weights = draw(hnp.arrays(np.float64, (n,), elements=st.sampled_from([0.5, 1.0, 2.5])))
    return labels, predictions, weights, num_classes


def _np_confusion(labels, predictions, weights, num_classes):
    out = np.zeros((num_classes, num_classes))
    np.add.at(out, (labels, predictions), weights)
    return out


@given(confusion_case())
def test_confusion_matrix(case):
    labels, predictions, weights, num_classes = case
    counts, = in_all_modes(lambda lab, pred: tf.math.confusion_matrix(lab, pred, num_classes),
                           labels, predictions)
    assert counts.dtype == np.int32
    np.testing.assert_array_equal(counts, _np_confusion(labels, predictions,
                                                        np.ones(labels.size), num_classes))
    weighted, = in_all_modes(
        lambda lab, pred, w: tf.math.confusion_matrix(lab, pred, weights=w, dtype=tf.float64),
        labels, predictions, weights)
    derived = max(int(labels.max(initial=-1)), int(predictions.max(initial=-1))) + 1
    np.testing.assert_allclose(weighted, _np_confusion(labels, predictions, weights, derived))
    check_gradients(lambda w: tf.math.confusion_matrix(labels, predictions, num_classes, w,
                                                       dtype=tf.float64),
                    lambda w: _np_confusion(labels, predictions, w, num_classes), [weights])


def test_confusion_matrix_tf_examples_and_errors():
    out = tf.math.confusion_matrix([1, 2, 4], [2, 2, 4])
    assert out.shape == (5, 5) and out.dtype == tf.int32
    assert out.numpy()[1, 2] == out.numpy()[2, 2] == out.numpy()[4, 4] == 1
    cast = tf.math.confusion_matrix([1, 2], [2, 2], weights=[0.5, 1.5])
    assert cast.numpy().tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 1]]
    with pytest.raises(IAE, match=r"confusion_matrix: labels\[2\] = 4 is not in \[0, 3\)"):
        tf.math.confusion_matrix([1, 2, 4], [2, 2, 1], num_classes=3)
    with pytest.raises(IAE, match=r"confusion_matrix: labels\[1\] = -2 is not in \[0, 5\)"):
        tf.math.confusion_matrix([1, -2, 4], [2, 2, 4])
    with pytest.raises(IAE, match="confusion_matrix: labels, predictions and weights must be "
                                  "vectors of one length"):
        tf.math.confusion_matrix([1, 2], [2])
    for scalars in (tf.math.confusion_matrix, tf.function(tf.math.confusion_matrix)):
        with pytest.raises(IAE, match="confusion_matrix: labels, predictions and weights must be "
                                      "vectors"):
            scalars(tf.constant(0.0), tf.constant(0.0))


def test_gather_gradient_with_unknown_dimensions_sums_into_a_run_time_size():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64),
                                  tf.TensorSpec([None], tf.int32)])
    def grad(params, indices):
        with tf.GradientTape() as tape:
            tape.watch(params)
            y = tf.reduce_sum(tf.gather(params, indices) * 2.0)
        return tape.gradient(y, params)

    out = grad(np.ones((3, 2)), np.array([2, 0, 2], np.int32))
    assert out.numpy().tolist() == [[2.0, 2.0], [0.0, 0.0], [4.0, 4.0]]


def test_inputs_of_unknown_rank_are_checked_when_the_function_runs():
    def unknown(values):
        array = np.array(values)
        return tf.py_function(lambda: array, [], Tout=tf.as_dtype(array.dtype))

    @tf.function
    def reductions():
        data, ids = unknown([1.0, 2.0, 4.0]), unknown([0, 0, 2])
        assert data.shape.rank is None and ids.shape.rank is None
        return (tf.math.segment_sum(data, ids), tf.math.unsorted_segment_max(data, ids, 3),
                tf.math.bincount(ids), tf.math.bincount(ids, axis=-1),
                tf.math.confusion_matrix(ids, ids, num_classes=3))

    total, top, counts, row_counts, confusion = reductions()
    assert total.numpy().tolist() == [3.0, 0.0, 4.0]
    assert top.numpy()[[0, 2]].tolist() == [2.0, 4.0]
    assert counts.numpy().tolist() == row_counts.numpy().tolist() == [2, 0, 1]
    assert confusion.numpy().tolist() == [[2, 0, 0], [0, 0, 0], [0, 0, 1]]

    @tf.function
    def unsorted_ids():
        return tf.math.segment_sum(unknown([1.0, 2.0]), unknown([1, 0]))

    with pytest.raises(IAE, match="segment_sum: segment_ids must be sorted"):
        unsorted_ids()


def test_bincount_lengths_computed_inside_a_function():
    @tf.function
    def counts(arr, weights, minlength, maxlength):
        return (tf.math.bincount(arr, minlength=minlength),
                tf.math.bincount(arr, maxlength=maxlength),
                tf.math.bincount(arr, weights, minlength=minlength, maxlength=maxlength))

    arr = tf.constant([1, 1, 3])
    low, capped, weighted = counts(arr, tf.constant([0.5, 1.0, 2.0]), tf.constant(6),
                                   tf.constant(2))
    assert low.numpy().tolist() == [0, 2, 0, 1, 0, 0] and capped.numpy().tolist() == [0, 2]
    assert weighted.numpy().tolist() == [0.0, 1.5]
    with pytest.raises(IAE, match="bincount: maxlength must be >= 0, got -1"):
        counts(arr, tf.constant([0.5, 1.0, 2.0]), tf.constant(6), tf.constant(-1))


def test_a_result_too_large_to_allocate_is_resource_exhausted():
    for make in (lambda: tf.math.segment_sum([0.0], tf.constant([2**40], tf.int64)),
                 lambda: tf.math.bincount(tf.constant([2**40], tf.int64)),
                 lambda: tf.scatter_nd([[0]], [1.0], [2**40])):
        with pytest.raises(tf.errors.ResourceExhaustedError, match=r"(segment_sum|bincount|"
                                                                   r"scatter_nd): out of memory"):
            make()
