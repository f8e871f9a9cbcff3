"""ops.array against NumPy references."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from ops import array as A
from kernel_helpers import NUMERIC, arrays, shapes

SET = settings(max_examples=40, deadline=None)


@st.composite
def gather_case(draw, max_batch_dims=2):
    dtype = draw(st.sampled_from(NUMERIC + (np.bool_,)))
    pshape = draw(shapes(min_dims=1, max_dims=4))
    params = draw(arrays(dtype, pshape))
    axis = draw(st.integers(0, params.ndim - 1))
    batch_dims = draw(st.integers(0, min(axis, max_batch_dims)))
    extra = draw(shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    ishape = pshape[:batch_dims] + extra
    n = pshape[axis]
    idtype = draw(st.sampled_from([np.int32, np.int64]))
    if n == 0:
        # only empty index sets are legal against an empty axis
        ishape = pshape[:batch_dims] + (0,)
        indices = np.zeros(ishape, idtype)
    else:
        indices = draw(hnp.arrays(idtype, ishape, elements=st.integers(0, n - 1)))
    return params, indices, axis, batch_dims


def gather_ref(params, indices, axis, batch_dims):
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    # recurse over the first batch dimension
    parts = [gather_ref(params[b], indices[b], axis - 1, batch_dims - 1)
             for b in range(params.shape[0])]
    out_shape = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:]
    return np.stack(parts).reshape(out_shape) if parts else np.zeros(out_shape, params.dtype)


@SET
@given(gather_case())
def test_gather(case):
    params, indices, axis, batch_dims = case
    got = A.gather(params, indices, axis, batch_dims)
    want = gather_ref(params, indices, axis, batch_dims)
    assert got.dtype == params.dtype
    assert got.shape == params.shape[:axis] + indices.shape[batch_dims:] + \
        params.shape[axis + 1:]
    np.testing.assert_array_equal(got, want)


@SET
@given(gather_case(), st.data())
def test_scatter_add_is_adjoint_of_gather(case, data):
    params, indices, axis, batch_dims = case
    params = params.astype(np.float64)
    g = A.gather(params, indices, axis, batch_dims)
    u = data.draw(arrays(np.float64, g.shape))
    s = A.scatter_add(u, indices, axis, params.shape[axis], batch_dims)
    assert s.shape == params.shape and s.dtype == u.dtype
    np.testing.assert_allclose(np.sum(g * u), np.sum(params * s), rtol=1e-9, atol=1e-9)


def test_scatter_add_accumulates_repeats():
    upd = np.arange(12, dtype=np.int32).reshape(2, 3, 2)
    idx = np.array([1, 1, 0])
    got = A.scatter_add(upd, idx, 1, 3)
    want = np.zeros((2, 3, 2), np.int32)
    np.add.at(want, (slice(None), idx), upd)
    np.testing.assert_array_equal(got, want)
    assert got[:, 2].sum() == 0


def one_hot_ref(indices, depth, on, off, axis, dtype):
    valid = (indices >= 0) & (indices < depth)
    eye = np.arange(depth) == np.where(valid, indices, -1)[..., None]
    out = np.where(eye, on, off).astype(dtype)
    return np.moveaxis(out, -1, axis if axis != -1 else out.ndim - 1)


@SET
@given(shapes(min_dims=0, max_dims=3), st.integers(0, 5), st.data(),
       st.sampled_from([np.float32, np.int32, np.int64, np.bool_]))
def test_one_hot(ishape, depth, data, dtype):
    indices = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(-2, depth + 1)))
    axis = data.draw(st.sampled_from([-1] + list(range(len(ishape) + 1))))
    on, off = (True, False) if dtype == np.bool_ else (5, -1)
    got = A.one_hot(indices, depth, on, off, axis, dtype)
    want = one_hot_ref(indices, depth, on, off, axis, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_one_hot_tf_example():
    got = A.one_hot(np.array([0, 2, -1, 1]), 3, 5.0, 0.0, -1, np.float32)
    np.testing.assert_array_equal(got, [[5, 0, 0], [0, 0, 5], [0, 0, 0], [0, 5, 0]])
    got = A.one_hot(np.array([0, 2]), 3, 1, 0, 0, np.int32)
    np.testing.assert_array_equal(got, [[1, 0], [0, 0], [0, 1]])


def test_gather_refuses_out_of_range_index():
    with pytest.raises(IndexError):
        A.gather(np.arange(4.0), np.array([0, 4]), 0)
    with pytest.raises(IndexError):
        A.gather(np.arange(4.0), np.array([-1]), 0)
