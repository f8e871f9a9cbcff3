"""ops.segment against NumPy references."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from ops import segment as G
from kernel_helpers import NUMERIC, arrays, shapes

SET = settings(max_examples=40, deadline=None)
NUMPY_REDUCE = {G.SUM: np.add, G.PROD: np.multiply, G.MAX: np.maximum, G.MIN: np.minimum}


@SET
@given(st.sampled_from(NUMERIC), shapes(min_dims=1, max_dims=3), st.integers(0, 4),
       st.sampled_from(sorted(NUMPY_REDUCE)), st.data())
def test_segment_reduce(dtype, dshape, num_segments, reduction, data):
    values = data.draw(arrays(dtype, dshape, lo=-3, hi=3))
    k = data.draw(st.integers(1, len(dshape)))
    ids = data.draw(hnp.arrays(np.int64, dshape[:k], elements=st.integers(-1, num_segments)))
    got, counts = G.segment_reduce(values, ids, num_segments, reduction)
    want = np.full((num_segments,) + dshape[k:], G.identity(reduction, dtype), dtype)
    rows = values.reshape((ids.size,) + dshape[k:])
    for i, s in enumerate(ids.reshape(-1)):
        if 0 <= s < num_segments:   # ids outside the segments are skipped
            want[s] = NUMPY_REDUCE[reduction](want[s], rows[i])
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)
    expected_counts = [int(np.sum(ids == s)) for s in range(num_segments)]
    assert counts.tolist() == expected_counts


def test_segment_identities_are_tf_empty_values():
    assert G.identity(G.MAX, np.float32) == np.finfo(np.float32).min
    assert G.identity(G.MIN, np.int32) == np.iinfo(np.int32).max
    assert G.identity(G.PROD, np.int64) == 1


def test_segment_reduce_float16_and_nan_rule():
    out, _ = G.segment_reduce(np.array([1.0, 2.0, 4.0], np.float16), np.array([0, 0, 1]), 2,
                              G.SUM)
    assert out.dtype == np.float16 and out.tolist() == [3.0, 4.0]
    nan = np.nan
    out, _ = G.segment_reduce(np.array([nan, 1.0, 1.0, nan, 1.0, nan, 2.0]),
                              np.array([0, 0, 1, 1, 2, 2, 2]), 3, G.MAX)
    np.testing.assert_array_equal(out, [1.0, nan, 2.0])


@SET
@given(shapes(min_dims=1, max_dims=2), st.integers(0, 7), st.booleans(), st.data())
def test_bincount(shape, size, binary, data):
    arr = data.draw(hnp.arrays(np.int32, shape, elements=st.integers(0, 6)))
    weights = None if binary or data.draw(st.booleans()) else \
        data.draw(arrays(np.float64, shape, lo=-2, hi=2))
    got = G.bincount(arr, size, weights, binary)
    rows = arr.reshape(1, -1) if arr.ndim < 2 else arr
    w = np.ones(rows.shape) if weights is None else weights.reshape(rows.shape)
    want = np.zeros((rows.shape[0], size))
    for r, n in np.ndindex(*rows.shape):
        if rows[r, n] < size:
            want[r, rows[r, n]] = 1 if binary else want[r, rows[r, n]] + w[r, n]
    assert got.shape == (want.shape if arr.ndim >= 2 else (size,))
    assert got.dtype == (np.float64 if weights is not None else np.int32)
    np.testing.assert_allclose(got.reshape(want.shape), want, atol=1e-12)


def test_confusion_matrix_casts_weights_first():
    got = G.confusion_matrix(np.array([1, 2]), np.array([2, 2]), 3, np.array([0.5, 1.5]),
                             np.int32)
    assert got.dtype == np.int32 and got.tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 1]]
