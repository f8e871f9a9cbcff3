"""Array ops (shape changes, joins, splits, gathers, creation) against NumPy, with gradients."""
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from hybridtf.api import array_ops
from gradcheck import check_gradients

IAE = tf.errors.InvalidArgumentError
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


def _shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def _values(shape, dtype=np.float64):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return hnp.arrays(np.float64, shape, elements=st.floats(-3, 3)).map(
            lambda a: a.astype(dtype))
    if dtype.kind == "b":
        return hnp.arrays(dtype, shape)
    return hnp.arrays(dtype, shape, elements=st.integers(-5, 5))


def _check(out, expected, dtype=None):
    expected = np.asarray(expected)
    assert tuple(out.shape) == expected.shape
    assert out.dtype == tf.as_dtype(dtype if dtype is not None else expected.dtype)
    np.testing.assert_array_equal(out.numpy(), expected)


def _no_gradient(fn, x):
    """The tape's gradient of sum(fn(x)) with respect to x."""
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x)


# ---- reshape, transpose, squeeze, expand_dims ----------------------------------------------------
@st.composite
def reshape_case(draw):
    shape = draw(_shapes(max_dims=4))
    dims = list(draw(st.permutations(list(shape))))
    merged = []
    for d in dims:  # merge random neighbours, insert some 1s
        if merged and draw(st.booleans()):
            merged[-1] *= d
        else:
            merged.append(d)
        if draw(st.integers(0, 5)) == 0:
            merged.append(1)
    known = [d for d in merged]
    if merged and draw(st.booleans()):
        i = draw(st.integers(0, len(merged) - 1))
        if int(np.prod(merged[:i] + merged[i + 1:])) != 0:
            known[i] = -1
    return shape, merged, known


@given(data=st.data())
def test_reshape(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape, target, requested = data.draw(reshape_case())
    x = data.draw(_values(shape, dtype))
    _check(tf.reshape(tf.constant(x), requested), x.reshape(target))
    _check(tf.reshape(tf.constant(x), tf.constant(requested)), x.reshape(target))


@given(data=st.data())
def test_reshape_gradient(data):
    shape, _, requested = data.draw(reshape_case())
    x = data.draw(_values(shape))
    check_gradients(lambda t: tf.reshape(t, requested), lambda a: a.reshape(requested), [x])


@given(data=st.data())
def test_reshape_like_and_gradients_through_unknown_shapes(data):
    shape, target, _ = data.draw(reshape_case())
    x = data.draw(_values(shape))
    like = np.zeros(target)
    _check(array_ops.reshape_like(tf.constant(x), tf.constant(like)), x.reshape(target))
    check_gradients(lambda t: array_ops.reshape_like(t, tf.constant(like)),
                    lambda a: a.reshape(target), [x])


def test_reshape_and_expand_dims_gradients_with_unknown_dimensions():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64)])
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.expand_dims(x, 1) * tf.reshape(x, [-1])[0])
        return tape.gradient(y, x)

    x = np.arange(1.0, 7.0).reshape(2, 3)
    expected = np.full_like(x, x[0, 0])
    expected[0, 0] += x.sum()
    np.testing.assert_allclose(f(x).numpy(), expected)
    with pytest.raises(tf.errors.InvalidArgumentError, match="reshape"):
        array_ops.reshape_like(tf.ones([2, 3]), tf.ones([4]))


@st.composite
def transpose_case(draw):
    shape = draw(_shapes(max_dims=4))
    perm = draw(st.one_of(st.none(), st.permutations(range(len(shape)))))
    return shape, perm


@given(data=st.data())
def test_transpose(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape, perm = data.draw(transpose_case())
    x = data.draw(_values(shape, dtype))
    _check(tf.transpose(tf.constant(x), perm), np.transpose(x, perm))


@given(data=st.data())
def test_transpose_gradient(data):
    shape, perm = data.draw(transpose_case())
    x = data.draw(_values(shape))
    check_gradients(lambda t: tf.transpose(t, perm), lambda a: np.transpose(a, perm), [x])


@st.composite
def squeeze_case(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    ones = [i for i, d in enumerate(shape) if d == 1]
    if draw(st.booleans()) or not ones:
        return shape, None, None
    chosen = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
    axis = [a - len(shape) if draw(st.booleans()) else a for a in chosen]
    return shape, axis, tuple(chosen)


@given(data=st.data())
def test_squeeze(data):
    shape, axis, np_axis = data.draw(squeeze_case())
    x = data.draw(_values(shape))
    _check(tf.squeeze(tf.constant(x), axis), np.squeeze(x, np_axis))
    check_gradients(lambda t: tf.squeeze(t, axis), lambda a: np.squeeze(a, np_axis), [x])


@given(data=st.data())
def test_expand_dims(data):
    shape = data.draw(_shapes())
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    x = data.draw(_values(shape))
    _check(tf.expand_dims(tf.constant(x), axis), np.expand_dims(x, axis))
    check_gradients(lambda t: tf.expand_dims(t, axis), lambda a: np.expand_dims(a, axis), [x])


def test_shape_change_errors():
    with pytest.raises(IAE, match=r"squeeze: Can not squeeze dim\[1\]"):
        tf.squeeze(tf.zeros([1, 2]), axis=-1)
    with pytest.raises(IAE, match="squeeze: axis 2 is out of range"):
        tf.squeeze(tf.zeros([1, 1]), axis=2)
    with pytest.raises(IAE, match=r"transpose: perm \[0\] is not a permutation"):
        tf.transpose(tf.zeros([2, 3]), [0])
    with pytest.raises(IAE, match="reshape: dimensions of the new shape must be >= -1"):
        tf.reshape(tf.zeros([4]), [-2, -2])
    with pytest.raises(TypeError, match="reshape: shape must be a list of integers"):
        tf.reshape(tf.zeros([4]), None)
    with pytest.raises(TypeError, match="reshape: shape must be a list of integers"):
        tf.reshape(tf.zeros([4]), ["a", 2])


# ---- broadcast_to, identity, stop_gradient -------------------------------------------------------
@given(data=st.data())
def test_broadcast_to(data):
    (shape, _), target = data.draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3))
    x = data.draw(_values(shape))
    _check(tf.broadcast_to(tf.constant(x), target), np.broadcast_to(x, target))
    check_gradients(lambda t: tf.broadcast_to(t, target),
                    lambda a: np.broadcast_to(a, target), [x])


def test_broadcast_to_errors():
    with pytest.raises(IAE, match=r"broadcast_to: Incompatible shapes: \[3\] vs. \[2\]"):
        tf.broadcast_to(tf.zeros([3]), [2])
    with pytest.raises(IAE, match=r"broadcast_to: cannot broadcast shape \[2,1\] to \[3\]"):
        tf.broadcast_to(tf.zeros([2, 1]), [3])
    with pytest.raises(IAE, match=r"broadcast_to: shape must have non-negative dimensions, "
                                  r"got \[-1\]"):
        tf.broadcast_to(tf.zeros([1]), [-1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_identity(dtype):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    _check(tf.identity(tf.constant(x)), x)
    check_gradients(tf.identity, lambda a: a, [x.astype(np.float64)])


def test_stop_gradient_blocks_gradients():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.stop_gradient(x * x) * x
        z = tf.stop_gradient(x)
    np.testing.assert_array_equal(y.numpy(), [1.0, 8.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 4.0])
    assert tape.gradient(z, x) is None


# ---- concat, stack, unstack, split ---------------------------------------------------------------
@st.composite
def concat_case(draw, dtype=np.float64):
    base = list(draw(_shapes(min_dims=1)))
    axis = draw(st.integers(-len(base), len(base) - 1))
    count = draw(st.integers(1, 3))
    arrays = []
    for _ in range(count):
        shape = list(base)
        shape[axis] = draw(st.integers(0, 3))
        arrays.append(draw(_values(tuple(shape), dtype)))
    return arrays, axis


@given(data=st.data())
def test_concat(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    arrays, axis = data.draw(concat_case(dtype))
    _check(tf.concat([tf.constant(a) for a in arrays], axis), np.concatenate(arrays, axis))


@given(data=st.data())
def test_concat_gradient(data):
    arrays, axis = data.draw(concat_case())
    check_gradients(lambda *ts: tf.concat(list(ts), axis),
                    lambda *a: np.concatenate(a, axis), arrays)


@st.composite
def stack_case(draw, dtype=np.float64):
    shape = draw(_shapes())
    count = draw(st.integers(1, 3))
    arrays = [draw(_values(shape, dtype)) for _ in range(count)]
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    return arrays, axis


@given(data=st.data())
def test_stack(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    arrays, axis = data.draw(stack_case(dtype))
    _check(tf.stack([tf.constant(a) for a in arrays], axis), np.stack(arrays, axis))


@given(data=st.data())
def test_stack_gradient(data):
    arrays, axis = data.draw(stack_case())
    check_gradients(lambda *ts: tf.stack(list(ts), axis), lambda *a: np.stack(a, axis), arrays)


@given(data=st.data())
def test_unstack_and_its_gradient(data):
    shape = data.draw(_shapes(min_dims=1))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(_values(shape))
    parts = tf.unstack(tf.constant(x), axis=axis)
    expected = [np.take(x, i, axis=axis) for i in range(shape[axis])]
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        _check(p, e)
    assume(shape[axis] > 0)
    pick = data.draw(st.integers(0, shape[axis] - 1))
    # Only one part is used: the others' gradients must be filled with zeros.
    check_gradients(lambda t: tf.unstack(t, axis=axis)[pick] * 2.0,
                    lambda a: np.take(a, pick, axis=axis) * 2.0, [x])


@st.composite
def split_case(draw):
    shape = list(draw(_shapes(min_dims=1, max_side=6)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    dim = shape[axis]
    if draw(st.booleans()):
        divisors = [n for n in range(1, 7) if dim % n == 0]
        num = draw(st.sampled_from(divisors))
        return shape, axis, num, [dim // num] * num
    sizes = []
    left = dim
    while left > 0 and draw(st.booleans()):
        s = draw(st.integers(0, left))
        sizes.append(s)
        left -= s
    sizes.append(left)
    requested = list(sizes)
    if draw(st.booleans()):
        requested[draw(st.integers(0, len(sizes) - 1))] = -1
    return shape, axis, requested, sizes


@given(data=st.data())
def test_split(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape, axis, requested, sizes = data.draw(split_case())
    x = data.draw(_values(tuple(shape), dtype))
    parts = tf.split(tf.constant(x), requested, axis=axis)
    expected = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        _check(p, e)


@given(data=st.data())
def test_split_gradient(data):
    shape, axis, requested, sizes = data.draw(split_case())
    x = data.draw(_values(tuple(shape)))
    pick = data.draw(st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=2))

    def tf_fn(t):
        parts = tf.split(t, requested, axis=axis)
        return tf.concat([parts[i] * (i + 1.0) for i in pick], axis=axis)

    def np_fn(a):
        parts = np.split(a, np.cumsum(sizes)[:-1], axis=axis)
        return np.concatenate([parts[i] * (i + 1.0) for i in pick], axis=axis)

    check_gradients(tf_fn, np_fn, [x])


def test_join_and_split_errors():
    with pytest.raises(IAE, match=r"split: sizes \[2, 2\] do not add up to the dimension's size 5"):
        tf.split(tf.zeros([5]), [2, 2])
    with pytest.raises(IAE, match=r"split: at most one size may be -1"):
        tf.split(tf.zeros([5]), [-1, -1])
    with pytest.raises(IAE, match=r"split: sizes \[4, -1\] do not add up"):
        tf.split(tf.zeros([3]), [4, -1])
    with pytest.raises(IAE, match="concat: axis 1 is out of range"):
        tf.concat([tf.zeros([2]), tf.zeros([2])], axis=1)
    with pytest.raises(IAE, match="concat: axis 1 is out of range"):
        tf.concat([tf.zeros([2])], axis=1)
    with pytest.raises(IAE, match="concat: cannot concatenate scalars"):
        tf.concat([tf.constant(1.0), tf.constant(2.0)], axis=0)
    with pytest.raises(IAE, match=r"unstack: num=3 does not match dimension 0 of size 2"):
        tf.unstack(tf.zeros([2, 2]), num=3)
    with pytest.raises(IAE, match="unstack: cannot unstack a scalar"):
        tf.unstack(tf.constant(1.0))
    with pytest.raises(IAE, match="stack: axis 3 is out of range"):
        tf.stack([tf.zeros([2]), tf.zeros([2])], axis=3)
    with pytest.raises(IAE, match="split: value must have rank >= 1, got a scalar"):
        tf.split(tf.constant(1.0), 1)
    with pytest.raises(IAE, match="split: cannot split a dimension of size 4 into 0 equal parts"):
        tf.split(tf.zeros([4]), 0)


# ---- tile, pad -----------------------------------------------------------------------------------
@st.composite
def tile_case(draw):
    shape = draw(_shapes(max_dims=3, max_side=3))
    multiples = draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape)))
    return shape, multiples


@given(data=st.data())
def test_tile(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape, multiples = data.draw(tile_case())
    x = data.draw(_values(shape, dtype))
    _check(tf.tile(tf.constant(x), multiples), np.tile(x, multiples))


@given(data=st.data())
def test_tile_gradient(data):
    shape, multiples = data.draw(tile_case())
    x = data.draw(_values(shape))
    check_gradients(lambda t: tf.tile(t, multiples), lambda a: np.tile(a, multiples), [x])


@st.composite
def pad_case(draw):
    mode = draw(st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    min_side = {"CONSTANT": 0, "REFLECT": 2, "SYMMETRIC": 1}[mode]
    shape = draw(_shapes(max_dims=3, min_side=min_side, max_side=4))
    paddings = []
    for d in shape:
        limit = {"CONSTANT": 3, "REFLECT": d - 1, "SYMMETRIC": d}[mode]
        paddings.append([draw(st.integers(0, limit)), draw(st.integers(0, limit))])
    value = draw(st.integers(-3, 3)) if mode == "CONSTANT" else 0
    return shape, paddings, mode, value


def _np_pad(a, paddings, mode, value):
    if a.ndim == 0:
        return a.copy()
    pads = np.asarray(paddings, dtype=np.int64).reshape(-1, 2)
    if mode == "CONSTANT":
        return np.pad(a, pads, constant_values=value)
    return np.pad(a, pads, mode=mode.lower())


@given(data=st.data())
def test_pad(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]), label="dtype")
    shape, paddings, mode, value = data.draw(pad_case())
    x = data.draw(_values(shape, dtype))
    out = tf.pad(tf.constant(x), paddings, mode=mode, constant_values=value)
    _check(out, _np_pad(x, paddings, mode, value).astype(dtype))


@given(data=st.data())
def test_pad_gradient(data):
    shape, paddings, mode, value = data.draw(pad_case())
    x = data.draw(_values(shape))
    check_gradients(lambda t: tf.pad(t, paddings, mode=mode, constant_values=value),
                    lambda a: _np_pad(a, paddings, mode, value), [x])


def test_pad_accepts_lowercase_mode_and_tensor_paddings():
    x = np.arange(6.0).reshape(2, 3).astype(np.float32)
    out = tf.pad(tf.constant(x), tf.constant([[1, 0], [0, 2]]), mode="reflect")
    _check(out, np.pad(x, [[1, 0], [0, 2]], mode="reflect"))


def test_tile_and_pad_errors():
    with pytest.raises(IAE, match=r"tile: multiples \[-1, 1\] must have one non-negative entry"):
        tf.tile(tf.zeros([2, 2]), [-1, 1])
    with pytest.raises(IAE, match=r"pad: paddings must be non-negative with shape \[2, 2\]"):
        tf.pad(tf.zeros([2, 2]), [[1, 1]])
    with pytest.raises(IAE, match="pad: paddings must be non-negative"):
        tf.pad(tf.zeros([2]), [[-1, 0]])
    with pytest.raises(IAE, match=r"pad: paddings \(2, 0\) too large for dimension 0 of size 2 "
                                  "in mode REFLECT"):
        tf.pad(tf.zeros([2]), [[2, 0]], mode="REFLECT")
    with pytest.raises(IAE, match="pad: mode must be CONSTANT, REFLECT or SYMMETRIC"):
        tf.pad(tf.zeros([2]), [[1, 0]], mode="WRAP")


# ---- gather, unsorted_segment_sum, one_hot -------------------------------------------------------
@st.composite
def gather_case(draw, dtype=np.float64):
    pshape = draw(_shapes(min_dims=1, max_dims=3, max_side=3))
    axis = draw(st.integers(-len(pshape), len(pshape) - 1))
    n = pshape[axis]
    ishape = draw(_shapes(max_dims=2, max_side=4)) if n else draw(
        _shapes(max_dims=2, max_side=4).filter(lambda s: 0 in s))
    idtype = draw(st.sampled_from([np.int32, np.int64]))
    indices = draw(hnp.arrays(idtype, ishape, elements=st.integers(0, max(n - 1, 0))))
    params = draw(_values(pshape, dtype))
    return params, indices, axis


@given(data=st.data())
def test_gather(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    params, indices, axis = data.draw(gather_case(dtype))
    out = tf.gather(tf.constant(params), tf.constant(indices), axis=axis)
    _check(out, np.take(params, indices, axis=axis))


@given(data=st.data())
def test_gather_gradient(data):
    params, indices, axis = data.draw(gather_case())
    check_gradients(lambda p: tf.gather(p, indices, axis=axis),
                    lambda p: np.take(p, indices, axis=axis), [params])


def test_gather_gradient_accumulates_repeated_indices():
    params = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with tf.GradientTape() as tape:
        tape.watch(params)
        y = tf.gather(params, [2, 0, 2, 2])
    np.testing.assert_array_equal(tape.gradient(y, params).numpy(), [[1, 1], [0, 0], [3, 3]])
    with tf.GradientTape() as tape:
        tape.watch(params)
        y = tf.gather(params, [[1, 1], [0, 1]], axis=1)
    np.testing.assert_array_equal(tape.gradient(y, params).numpy(), [[1, 3], [1, 3], [1, 3]])


@st.composite
def batch_gather_case(draw):
    batch = draw(st.integers(0, 3))
    n = draw(st.integers(1, 4))
    rest = draw(_shapes(max_dims=1, max_side=3))
    k = draw(st.integers(0, 3))
    params = draw(_values((batch, n) + rest))
    indices = draw(hnp.arrays(np.int32, (batch, k), elements=st.integers(0, n - 1)))
    return params, indices


def _np_batch_gather(params, indices):
    out = np.stack([np.take(params[b], indices[b], axis=0) for b in range(params.shape[0])]) \
        if params.shape[0] else np.zeros(indices.shape + params.shape[2:], params.dtype)
    return out.reshape(indices.shape + params.shape[2:])


@given(data=st.data())
def test_gather_with_batch_dims(data):
    params, indices = data.draw(batch_gather_case())
    out = tf.gather(tf.constant(params), tf.constant(indices), axis=1, batch_dims=1)
    _check(out, _np_batch_gather(params, indices))
    check_gradients(lambda p: tf.gather(p, indices, axis=1, batch_dims=1),
                    lambda p: _np_batch_gather(p, indices), [params])


def test_gather_errors():
    with pytest.raises(IAE, match=r"gather: indices\[1,0\] = 2 is not in \[0, 2\)"):
        tf.gather(tf.zeros([3, 2]), [[0], [2]], axis=1)
    with pytest.raises(IAE, match="gather: params must have rank >= 1"):
        tf.gather(tf.constant(1.0), [0])
    with pytest.raises(IAE, match="gather: axis 2 is out of range"):
        tf.gather(tf.zeros([3, 2]), [0], axis=2)
    with pytest.raises(IAE, match=r"gather: indices\[0,1\] = 5 is not in \[0, 2\)"):
        tf.gather(tf.zeros([2, 2]), [[0, 5], [0, 0]], axis=1, batch_dims=1)
    with pytest.raises(IAE, match="gather: batch dimensions of params"):
        tf.gather(tf.zeros([2, 2]), tf.zeros([3, 1], tf.int32), axis=1, batch_dims=1)


@st.composite
def segment_case(draw):
    ishape = draw(_shapes(min_dims=1, max_dims=2, max_side=4))
    rest = draw(_shapes(max_dims=2, max_side=3))
    num_segments = draw(st.integers(0, 4))
    ids = draw(hnp.arrays(np.int32, ishape, elements=st.integers(-1, num_segments - 1)))
    data = draw(_values(ishape + rest))
    return data, ids, num_segments


def _np_segment_sum(data, ids, num_segments):
    out = np.zeros((num_segments,) + data.shape[ids.ndim:], data.dtype)
    keep = ids >= 0  # TF drops negative ids
    np.add.at(out, ids[keep], data[keep])
    return out


@given(data=st.data())
def test_unsorted_segment_sum(data):
    values, ids, num_segments = data.draw(segment_case())
    out = tf.math.unsorted_segment_sum(tf.constant(values), tf.constant(ids), num_segments)
    np.testing.assert_allclose(out.numpy(), _np_segment_sum(values, ids, num_segments))
    assert out.shape == (num_segments,) + values.shape[ids.ndim:]
    assert out.dtype == tf.float64
    check_gradients(lambda d: tf.math.unsorted_segment_sum(d, ids, num_segments),
                    lambda d: _np_segment_sum(d, ids, num_segments), [values])


def test_unsorted_segment_sum_integers_and_errors():
    out = tf.math.unsorted_segment_sum(tf.constant([1, 2, 3, 4]), tf.constant([0, 2, 0, -1]), 3)
    _check(out, np.array([4, 0, 2], np.int32))
    with pytest.raises(IAE, match=r"unsorted_segment_sum: segment_ids\[1\] = 3 is not in "
                                  r"\[0, 3\)"):
        tf.math.unsorted_segment_sum(tf.zeros([2]), tf.constant([0, 3]), 3)
    with pytest.raises(IAE, match=r"unsorted_segment_sum: segment_ids shape \[3\] must be a "
                                  r"prefix of data shape \[2\]"):
        tf.math.unsorted_segment_sum(tf.zeros([2]), tf.constant([0, 1, 1]), 3)


@st.composite
def one_hot_case(draw):
    ishape = draw(_shapes(max_dims=2, max_side=3))
    depth = draw(st.integers(0, 4))
    indices = draw(hnp.arrays(np.int64, ishape, elements=st.integers(-1, depth + 1)))
    axis = draw(st.sampled_from([None, -1] + list(range(len(ishape) + 1))))
    return indices, depth, axis


def _np_one_hot(indices, depth, on, off, axis, dtype):
    out = np.where(indices[..., None] == np.arange(depth), on, off).astype(dtype)
    if axis is not None and axis != -1:
        out = np.moveaxis(out, -1, axis)
    return out


@given(data=st.data())
def test_one_hot(data):
    indices, depth, axis = data.draw(one_hot_case())
    on, off, dtype = data.draw(st.sampled_from([(None, None, None), (5.0, -1.0, np.float64),
                                                (3, 1, np.int32), (2.5, 0.5, None)]))
    kwargs = {k: v for k, v in (("on_value", on), ("off_value", off)) if v is not None}
    if dtype is not None:
        kwargs["dtype"] = tf.as_dtype(dtype)
    out = tf.one_hot(tf.constant(indices), depth, axis=axis, **kwargs)
    expected_dtype = dtype or np.float32
    _check(out, _np_one_hot(indices, depth, 1 if on is None else on, 0 if off is None else off,
                            axis, expected_dtype))


def test_one_hot_out_of_range_gives_a_row_of_off_values():
    out = tf.one_hot([0, 3, -1, 1], 3, on_value=1.0, off_value=-1.0)
    np.testing.assert_array_equal(out.numpy(), [[1, -1, -1], [-1, -1, -1], [-1, -1, -1],
                                                [-1, 1, -1]])


def test_one_hot_of_float16():
    out = tf.one_hot([0, 2, -1], 3, on_value=0.1, off_value=-2.5, dtype=tf.float16)
    _check(out, np.where(np.eye(3, dtype=bool)[[0, 2, 0]] & [[1], [1], [0]], np.float16(0.1),
                         np.float16(-2.5)))


def test_one_hot_dtype_follows_on_and_off_values():
    # TF: without dtype, the dtype of on_value/off_value (Python ints are int32).
    assert tf.one_hot([0, 1], 2, on_value=5, off_value=0).dtype == tf.int32
    _check(tf.one_hot([0, 1], 2, on_value=5, off_value=0), np.array([[5, 0], [0, 5]], np.int32))
    assert tf.one_hot([0], 2, on_value=tf.constant(1.0, tf.float64)).dtype == tf.float64
    assert tf.one_hot([0], 2, off_value=2.0).dtype == tf.float32
    with pytest.raises(TypeError, match="one_hot: indices must be an integer tensor"):
        tf.one_hot([0.0], 2)
    with pytest.raises(IAE, match="one_hot: depth must be >= 0"):
        tf.one_hot([0], -1)


def test_one_hot_of_strings():
    out = tf.one_hot([0, 2, 5], 3, on_value="x", off_value="y", axis=0)
    assert out.dtype == tf.string
    np.testing.assert_array_equal(out.numpy(), np.array(
        [[b"x", b"y", b"y"], [b"y", b"y", b"y"], [b"y", b"x", b"y"]], object))


@pytest.mark.parametrize("kwargs, pattern", [
    ({"on_value": "x"}, "Cannot convert 0 to a tensor of dtype string"),   # TF's default off
    ({"on_value": 2, "off_value": -3e38}, "dtype int32 of on_value does not match dtype float32"),
    ({"on_value": 1.5, "dtype": tf.int32}, "float32 of on_value does not match the dtype param"),
])
def test_one_hot_values_must_share_one_dtype_like_tf(kwargs, pattern):
    with pytest.raises(TypeError, match=pattern):
        tf.one_hot([0, 1], 3, **kwargs)


@pytest.mark.parametrize("traced", [False, True])
def test_gather_and_pad_of_strings(traced):
    s = tf.constant([["a", "b"], ["c", "d"]])
    gather = tf.function(tf.gather) if traced else tf.gather
    np.testing.assert_array_equal(gather(s, [1, 0]).numpy(), np.array([[b"c", b"d"],
                                                                       [b"a", b"b"]], object))
    np.testing.assert_array_equal(gather(s, [1, 1], axis=1).numpy(),
                                  np.array([[b"b", b"b"], [b"d", b"d"]], object))
    # TF pads strings with b"" by default.
    assert tf.pad(s, [[0, 0], [1, 0]]).numpy().tolist() == [[b"", b"a", b"b"], [b"", b"c", b"d"]]
    assert tf.pad(s[0], [[1, 1]], constant_values="z").numpy().tolist() == [b"z", b"a", b"b",
                                                                            b"z"]
    assert tf.pad(s[0], [[1, 1]], mode="REFLECT").numpy().tolist() == [b"b", b"a", b"b", b"a"]


def test_one_hot_values_must_be_scalars():
    with pytest.raises(IAE, match="one_hot: on_value must be a scalar, got shape \\[2\\]"):
        tf.one_hot([0, 1], 3, on_value=[1.0, 2.0])


# ---- creation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [None, tf.float64, tf.int32, tf.int64, tf.bool])
@given(shape=_shapes())
def test_zeros_and_ones(dtype, shape):
    kw = {} if dtype is None else {"dtype": dtype}
    np_dtype = np.float32 if dtype is None else dtype.as_numpy_dtype
    _check(tf.zeros(shape, **kw), np.zeros(shape, np_dtype))
    _check(tf.ones(list(shape), **kw), np.ones(shape, np_dtype))
    _check(tf.zeros(tf.constant(list(shape), tf.int32), **kw), np.zeros(shape, np_dtype))


@given(data=st.data())
def test_zeros_like_and_ones_like(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    x = data.draw(_values(data.draw(_shapes()), dtype))
    _check(tf.zeros_like(tf.constant(x)), np.zeros_like(x))
    _check(tf.ones_like(tf.constant(x)), np.ones_like(x))
    _check(tf.ones_like(tf.constant(x), dtype=tf.float64), np.ones(x.shape))


def test_zeros_of_strings_are_empty_strings_like_tf():
    np.testing.assert_array_equal(tf.zeros([2], tf.string).numpy(), np.array([b"", b""], object))
    np.testing.assert_array_equal(tf.zeros_like(tf.constant(["a", "bc"])).numpy(),
                                  np.array([b"", b""], object))
    traced = tf.function(tf.zeros_like, input_signature=[tf.TensorSpec([None], tf.string)])
    np.testing.assert_array_equal(traced(tf.constant(["a"])).numpy(), np.array([b""], object))


def test_fill_takes_the_value_dtype():
    _check(tf.fill([2, 3], 5), np.full((2, 3), 5, np.int32))
    _check(tf.fill([2], 1.5), np.full((2,), 1.5, np.float32))
    _check(tf.fill([0, 2], tf.constant(2, tf.int64)), np.zeros((0, 2), np.int64))
    _check(tf.fill(tf.constant([1, 2]), True), np.ones((1, 2), np.bool_))
    with pytest.raises(IAE, match="fill: value must be a scalar"):
        tf.fill([2], [1.0, 2.0])


@given(rows=st.integers(0, 4), cols=st.one_of(st.none(), st.integers(0, 4)),
       batch=st.one_of(st.none(), _shapes(max_dims=2, max_side=2)),
       dtype=st.sampled_from([None, tf.float64, tf.int32]))
def test_eye(rows, cols, batch, dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    out = tf.eye(rows, cols, batch_shape=batch, **kw)
    expected = np.eye(rows, cols, dtype=np.float32 if dtype is None else dtype.as_numpy_dtype)
    if batch is not None:
        expected = np.broadcast_to(expected, tuple(batch) + expected.shape)
    _check(out, expected)


@pytest.mark.parametrize("args, kwargs, expected", [
    ((5,), {}, np.arange(5, dtype=np.int32)),
    ((1.0, 2.0, 0.5), {}, np.array([1.0, 1.5], np.float32)),
    ((2, 11, 3), {}, np.array([2, 5, 8], np.int32)),
    ((5, 0, -2), {}, np.array([5, 3, 1], np.int32)),
    ((0, 3), {"dtype": tf.float64}, np.arange(3.0)),
    ((3,), {"dtype": tf.int64}, np.arange(3, dtype=np.int64)),
    ((0, 1, 0.25), {}, np.array([0, 0.25, 0.5, 0.75], np.float32)),
    ((3, 1), {}, np.zeros(0, np.int32)),
])
def test_range_dtype_rules(args, kwargs, expected):
    _check(tf.range(*args, **kwargs), expected)


def test_range_of_tensors_takes_their_dtype():
    _check(tf.range(tf.constant(4, tf.int64)), np.arange(4, dtype=np.int64))
    _check(tf.range(tf.constant(0.0, tf.float64), 1.0, 0.5), np.array([0.0, 0.5]))


def test_range_of_python_ints_beyond_int32_is_int64():
    _check(tf.range(2**31, 2**31 + 2), np.array([2**31, 2**31 + 1], np.int64))


def test_range_too_large_for_memory_is_resource_exhausted_before_allocating():
    @tf.function
    def traced(n):
        return tf.range(n)

    too_large = r"range: OOM when allocating a tensor of shape \[1099511627776\] and type int64"
    for make in (lambda: tf.range(2**40), lambda: tf.range(0, 2**40, 1, dtype=tf.int64),
                 lambda: traced(tf.constant(2**40, tf.int64))):
        with pytest.raises(tf.errors.ResourceExhaustedError, match=too_large + r".*TiB"):
            make()


@pytest.mark.parametrize("args, message", [
    ((0.0, float("inf")), r"\(limit - start\) / delta = inf"),
    ((0.0, float("nan")), "must not be NaN"),
    ((0.0, 1e30, 1e-30), r"\(limit - start\) / delta = 1e\+60"),
    ((0, 5, 0), "delta must not be zero"),
])
def test_range_bounds_that_give_no_length_are_invalid(args, message):
    with pytest.raises(IAE, match="range: .*" + message):
        tf.range(*args)


def test_creation_errors():
    with pytest.raises(IAE, match=r"ones: shape must have non-negative dimensions, got \[2, -3\]"):
        tf.ones([2, -3])
    with pytest.raises(IAE, match="fill: shape must have non-negative"):
        tf.fill([-1], 1.0)
    with pytest.raises(IAE, match="eye: num_rows and num_columns must be >= 0"):
        tf.eye(-1)


@given(data=st.data())
def test_shape_size_rank(data):
    shape = data.draw(_shapes(max_dims=4))
    x = tf.zeros(shape)
    _check(tf.shape(x), np.array(shape, np.int32))
    _check(tf.shape(x, out_type=tf.int64), np.array(shape, np.int64))
    _check(tf.size(x), np.int32(np.prod(shape)))
    _check(tf.size(x, out_type=tf.int64), np.int64(np.prod(shape)))
    _check(tf.rank(x), np.int32(len(shape)))


# ---- tf.slice ------------------------------------------------------------------------------------
@st.composite
def slice_case(draw):
    shape = draw(_shapes(min_dims=1, max_dims=3))
    begin, size, index = [], [], []
    for d in shape:
        b = draw(st.integers(0, d))
        s = draw(st.integers(-1, d - b))
        begin.append(b)
        size.append(s)
        index.append(slice(b, d if s == -1 else b + s))
    return shape, begin, size, tuple(index)


@given(data=st.data())
def test_slice(data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape, begin, size, index = data.draw(slice_case())
    x = data.draw(_values(shape, dtype))
    _check(tf.slice(tf.constant(x), begin, size), x[index])
    _check(tf.slice(tf.constant(x), tf.constant(begin), tf.constant(size)), x[index])


@given(data=st.data())
def test_slice_gradient(data):
    shape, begin, size, index = data.draw(slice_case())
    x = data.draw(_values(shape))
    check_gradients(lambda t: tf.slice(t, begin, size), lambda a: a[index], [x])


def test_slice_errors():
    with pytest.raises(IAE, match=r"slice: begin \[1\] / size \[3\] out of bounds for shape \[3\]"):
        tf.slice(tf.zeros([3]), [1], [3])
    with pytest.raises(IAE, match="slice: begin .* need one entry per dimension"):
        tf.slice(tf.zeros([3, 3]), [1], [1])


# ---- traced with dimensions known only when the function runs ------------------------------------
def test_squeeze_of_unknown_dimensions_squeezes_when_the_function_runs():
    everything = tf.function(tf.squeeze, input_signature=[tf.TensorSpec([None, None])])
    assert everything(tf.zeros([2, 1])).shape == (2,)
    assert everything(tf.zeros([1, 1])).shape == ()
    one = tf.function(lambda x: tf.squeeze(x, 1), input_signature=[tf.TensorSpec([None, None])])
    assert one(tf.zeros([3, 1])).shape == (3,)
    with pytest.raises(IAE, match=r"squeeze: Can not squeeze dim\[1\], expected a dimension of 1"):
        one(tf.zeros([3, 2]))
    x = tf.Variable([[1.0], [2.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(one(x) * 2.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[2.0], [2.0]])


def test_broadcast_to_from_unknown_dimensions():
    fn = tf.function(lambda x: tf.broadcast_to(x, [2, 3]),
                     input_signature=[tf.TensorSpec([None, None])])
    np.testing.assert_array_equal(fn(tf.ones([1, 3])).numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(fn(tf.zeros([2, 3])).numpy(), np.zeros((2, 3)))
    with pytest.raises(IAE, match=r"broadcast_to: Incompatible shapes: \[2,2\] vs. \[2,3\]"):
        fn(tf.zeros([2, 2]))


def test_fill_with_a_value_known_only_when_the_function_runs():
    fn = tf.function(lambda v: tf.fill([2, 2], v))
    np.testing.assert_array_equal(fn(tf.constant(3.0)).numpy(), np.full((2, 2), 3.0))
    with pytest.raises(IAE, match="fill: value must be a scalar"):
        fn(tf.constant([3.0]))


def test_broadcasting_errors_found_when_the_function_runs_name_the_op():
    fn = tf.function(lambda x, y: x + y,
                     input_signature=[tf.TensorSpec([None]), tf.TensorSpec([None, None])])
    with pytest.raises(IAE, match=r"add: Incompatible shapes: \[2\] vs. \[2,3\]"):
        fn(tf.zeros([2]), tf.zeros([2, 3]))
