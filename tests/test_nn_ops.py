"""tf.nn ops against NumPy references (naive conv/pool written here), with first- and
second-order gradients against finite differences."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients

IAE = tf.errors.InvalidArgumentError


@pytest.fixture(autouse=True)
def _unset_global_seed():
    """Dropout tests set the global seed; leave it unset for whatever runs next."""
    yield
    tf.random.set_seed(None)


def _values(shape, low=-3.0, high=3.0, dtype=np.float64):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high)).map(
        lambda a: a.astype(dtype))


def _away_from(values, points, gap=1e-3):
    return all(np.all(np.abs(np.asarray(values) - p) > gap) for p in points)


# ---- activations ---------------------------------------------------------------------------------
def _np_elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


ACTIVATIONS = {
    "relu": (tf.nn.relu, lambda x: np.maximum(x, 0), [0.0]),
    "relu6": (tf.nn.relu6, lambda x: np.clip(x, 0, 6), [0.0, 6.0]),
    "leaky_relu": (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x), [0.0]),
    "leaky_relu_0.5": (lambda x: tf.nn.leaky_relu(x, alpha=0.5),
                       lambda x: np.where(x > 0, x, 0.5 * x), [0.0]),
    "leaky_relu_3": (lambda x: tf.nn.leaky_relu(x, alpha=3.0),
                     lambda x: np.where(x > 0, x, 3.0 * x), [0.0]),
    "elu": (tf.nn.elu, _np_elu, [0.0]),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@given(data=st.data())
def test_activations_match_numpy(name, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    fn, ref, _ = ACTIVATIONS[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(_values(shape, -8, 8, dtype))
    out = fn(tf.constant(x))
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == shape
    np.testing.assert_allclose(out.numpy(), ref(x.astype(np.float64)).astype(dtype),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@given(data=st.data())
def test_activation_gradients(name, data):
    fn, ref, kinks = ACTIVATIONS[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
    x = data.draw(_values(shape, -8, 8))
    assume(_away_from(x, kinks))
    check_gradients(fn, ref, [x])


def test_activations_on_integers():
    # TF: relu and relu6 keep integer dtypes; leaky_relu casts integer features to float32.
    out = tf.nn.relu6(tf.constant([-2, 3, 9]))
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), [0, 3, 6])
    out = tf.nn.leaky_relu(tf.constant([-2, 3]))
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), [-0.4, 3.0])


# ---- softmax, log_softmax ------------------------------------------------------------------------
def _np_log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # -inf: an empty class axis
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def _np_softmax(x, axis=-1):
    return np.exp(_np_log_softmax(x, axis))


SOFTMAXES = {"softmax": (tf.nn.softmax, _np_softmax),
             "log_softmax": (tf.nn.log_softmax, _np_log_softmax)}


@st.composite
def softmax_case(draw, dtype=np.float64, offset=0.0):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    x = draw(_values(shape, -5, 5)) + offset
    return x.astype(dtype), axis


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
@given(data=st.data())
def test_softmax_matches_numpy_on_any_axis(name, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    offset = data.draw(st.sampled_from([0.0, 1000.0, -1000.0]), label="offset")
    fn, ref = SOFTMAXES[name]
    x, axis = data.draw(softmax_case(dtype, offset))
    out = fn(tf.constant(x)) if axis is None else fn(tf.constant(x), axis=axis)
    expected = ref(x.astype(np.float64), -1 if axis is None else axis)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == x.shape
    assert np.all(np.isfinite(out.numpy()))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5 if dtype == np.float32
                               else 1e-12)


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
@given(data=st.data())
def test_softmax_gradients(name, data):
    fn, ref = SOFTMAXES[name]
    x, axis = data.draw(softmax_case())
    check_gradients(lambda t: fn(t, axis=axis), lambda a: ref(a, -1 if axis is None else axis),
                    [x])


def test_softmax_errors():
    with pytest.raises(IAE, match="softmax: logits must have rank >= 1"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(TypeError, match="log_softmax: logits has dtype int32"):
        tf.nn.log_softmax(tf.constant([1, 2]))
    with pytest.raises(IAE, match="softmax: axis 2 is out of range"):
        tf.nn.softmax(tf.zeros([2, 2]), axis=2)


# ---- cross-entropies -----------------------------------------------------------------------------
@st.composite
def sparse_xent_case(draw, offset=0.0):
    outer = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    classes = draw(st.integers(1, 4))
    logits = draw(_values(outer + (classes,), -4, 4)) + offset
    labels = draw(hnp.arrays(draw(st.sampled_from([np.int32, np.int64])), outer,
                             elements=st.integers(0, classes - 1)))
    return logits, labels


def _np_sparse_xent(logits, labels):
    logp = _np_log_softmax(logits)
    return -np.take_along_axis(logp, labels[..., None].astype(np.int64), axis=-1)[..., 0]


@given(data=st.data())
def test_sparse_softmax_cross_entropy(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    offset = data.draw(st.sampled_from([0.0, 1000.0]), label="offset")
    logits, labels = data.draw(sparse_xent_case(offset))
    out = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels),
                                                         logits=tf.constant(logits.astype(dtype)))
    expected = _np_sparse_xent(logits.astype(dtype).astype(np.float64), labels)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == labels.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


@given(data=st.data())
def test_sparse_softmax_cross_entropy_gradient(data):
    logits, labels = data.draw(sparse_xent_case())
    check_gradients(
        lambda t: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=t),
        lambda a: _np_sparse_xent(a, labels), [logits])


def _inner_weights(shape):
    return np.random.default_rng(1).uniform(0.5, 1.5, size=shape)


@given(data=st.data())
def test_sparse_softmax_cross_entropy_second_order(data):
    logits, labels = data.draw(sparse_xent_case())
    w = _inner_weights(labels.shape)

    def first_order(t):
        with tf.GradientTape() as inner:
            inner.watch(t)
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=t)
            total = tf.reduce_sum(loss * w)
        return inner.gradient(total, t)

    def np_first_order(a):
        onehot = np.eye(a.shape[-1])[labels]
        return (_np_softmax(a) - onehot) * w[..., None]

    np.testing.assert_allclose(first_order(tf.constant(logits)).numpy(), np_first_order(logits),
                               rtol=1e-10, atol=1e-12)
    check_gradients(first_order, np_first_order, [logits])


def test_sparse_softmax_cross_entropy_gradient_at_large_logits():
    logits = tf.constant([[1000.0, 0.0, -1000.0], [1000.0, 1001.0, 999.0]], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 0], logits=logits)
    np.testing.assert_allclose(loss.numpy(), [2000.0, 1.0 + np.log(1 + np.exp(-1) + np.exp(-2))],
                               rtol=1e-12)
    e = np.exp([-1.0, 0.0, -2.0]) / np.exp([-1.0, 0.0, -2.0]).sum()
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(),
                               [[1, 0, -1], e - [1, 0, 0]], atol=1e-12)


@st.composite
def xent_case(draw, offset=0.0):
    outer = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    classes = draw(st.integers(1, 4))
    shape = outer + (classes,)
    axis = draw(st.sampled_from([-1, len(shape) - 1] + list(range(len(shape)))))
    logits = draw(_values(shape, -4, 4)) + offset
    labels = draw(_values(shape, 0, 1))
    return logits, labels, axis


def _np_xent(logits, labels, axis=-1):
    return -np.sum(labels * _np_log_softmax(logits, axis), axis=axis)


@given(data=st.data())
def test_softmax_cross_entropy(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    offset = data.draw(st.sampled_from([0.0, 1000.0, -1000.0]), label="offset")
    logits, labels, axis = data.draw(xent_case(offset))
    out = tf.nn.softmax_cross_entropy_with_logits(labels=tf.constant(labels.astype(dtype)),
                                                  logits=tf.constant(logits.astype(dtype)),
                                                  axis=axis)
    expected = _np_xent(logits.astype(dtype).astype(np.float64),
                        labels.astype(dtype).astype(np.float64), axis)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == expected.shape
    assert np.all(np.isfinite(out.numpy()))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-4)


@given(data=st.data())
def test_softmax_cross_entropy_gradients(data):
    logits, labels, axis = data.draw(xent_case())
    check_gradients(
        lambda lg, lb: tf.nn.softmax_cross_entropy_with_logits(labels=lb, logits=lg, axis=axis),
        lambda lg, lb: _np_xent(lg, lb, axis), [logits, labels])


def test_softmax_cross_entropy_gradient_at_large_logits():
    logits = tf.constant([[1000.0, 0.0, -1000.0]], tf.float64)
    labels = tf.constant([[0.25, 0.25, 0.5]], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    np.testing.assert_allclose(loss.numpy(), [0.25 * 1000 + 0.5 * 2000], rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), [[0.75, -0.25, -0.5]],
                               atol=1e-12)


@pytest.mark.parametrize("magnitude", [1e20, -1e20, 3e38])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_cross_entropies_of_equal_huge_logits_are_log_k(magnitude, dtype):
    # The log-sum-exp's max shift and log-sum stay apart: m + log(k) - m would be 0.
    logits = tf.fill([2, 3], tf.constant(magnitude, dtype))
    dense = tf.nn.softmax_cross_entropy_with_logits(
        labels=tf.constant([[1.0, 0.0, 0.0], [0.5, 0.25, 0.25]], dtype), logits=logits)
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2], logits=logits)
    rtol = 1e-6 if dtype == tf.float32 else 1e-12
    np.testing.assert_allclose(dense.numpy(), [np.log(3)] * 2, rtol=rtol)
    np.testing.assert_allclose(sparse.numpy(), [np.log(3)] * 2, rtol=rtol)


def _np_sigmoid_xent(x, z):
    return np.logaddexp(0, x) - x * z


@given(data=st.data())
def test_sigmoid_cross_entropy(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    x = data.draw(_values(shape, -1000, 1000, dtype))
    z = data.draw(_values(shape, 0, 1, dtype))
    out = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(z), logits=tf.constant(x))
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == shape
    # x - x * z cancels: its rounding error is about |x| units in the last place of the dtype
    atol = 1e-5 + 4 * np.finfo(dtype).eps * np.max(np.abs(x), initial=0.0)
    np.testing.assert_allclose(out.numpy(), _np_sigmoid_xent(x.astype(np.float64),
                                                             z.astype(np.float64)),
                               rtol=1e-5, atol=atol)


@given(data=st.data())
def test_sigmoid_cross_entropy_gradients(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    x = data.draw(_values(shape, -6, 6))
    z = data.draw(_values(shape, 0, 1))
    assume(_away_from(x, [0.0]))
    check_gradients(lambda a, b: tf.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a),
                    _np_sigmoid_xent, [x, z])


def test_cross_entropy_errors():
    with pytest.raises(IAE, match=r"sparse_softmax_cross_entropy_with_logits: labels shape \[3\] "
                                  r"must equal logits shape \[2, 3\] without its last dimension"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0, 1, 2]),
                                                       logits=tf.zeros([2, 3]))
    with pytest.raises(TypeError, match="sparse_softmax_cross_entropy_with_logits: labels must be "
                                        "int32 or int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0.0, 1.0]),
                                                       logits=tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="needs labels= and logits="):
        tf.nn.sparse_softmax_cross_entropy_with_logits(logits=tf.zeros([2, 3]))
    with pytest.raises(IAE, match=r"softmax_cross_entropy_with_logits: .*\[2,3\].*\[2,4\]"):
        tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([2, 4]), logits=tf.zeros([2, 3]))
    with pytest.raises(TypeError, match=r"sigmoid_cross_entropy_with_logits: logits has dtype "
                                        r"int32"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant([1]), logits=tf.constant([1]))
    with pytest.raises(IAE, match=r"sigmoid_cross_entropy_with_logits: logits has dtype float32 "
                                  r"but labels has dtype float64"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([1], tf.float64),
                                                logits=tf.zeros([1]))
    # TF requires equal shapes here (no broadcasting).
    with pytest.raises(IAE, match=r"sigmoid_cross_entropy_with_logits: logits and labels must "
                                  r"have the same shape, got \[1\] and \[2\]"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([2]), logits=tf.zeros([1]))


# ---- conv2d: naive NumPy references --------------------------------------------------------------
def _same_pads(size, k, stride, dilation):
    effective = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2, total - total // 2


def _geometry(size, k, stride, dilation, padding):
    if padding == "SAME":
        return _same_pads(size, k, stride, dilation)
    return (size - (k - 1) * dilation - 1) // stride + 1, 0, 0


def _conv_windows(x_shape, w_shape, strides, padding, dilations):
    _, h, wd, _ = x_shape
    kh, kw = w_shape[:2]
    ho, pt, pb = _geometry(h, kh, strides[0], dilations[0], padding)
    wo, pl, pr = _geometry(wd, kw, strides[1], dilations[1], padding)
    return ho, wo, (pt, pb, pl, pr)


def _window(a, b, ho, wo, strides, dilations):
    (sh, sw), (dh, dw) = strides, dilations
    return (slice(None), slice(a * dh, a * dh + (ho - 1) * sh + 1, sh),
            slice(b * dw, b * dw + (wo - 1) * sw + 1, sw), slice(None))


def np_conv2d(x, w, strides, padding, dilations):
    ho, wo, (pt, pb, pl, pr) = _conv_windows(x.shape, w.shape, strides, padding, dilations)
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)])
    out = np.zeros((x.shape[0], ho, wo, w.shape[3]), np.result_type(x, w))
    for a in range(w.shape[0]):
        for b in range(w.shape[1]):
            out += np.einsum("nhwc,co->nhwo", xp[_window(a, b, ho, wo, strides, dilations)],
                             w[a, b])
    return out


def np_conv2d_backprop_input(x_shape, w, dy, strides, padding, dilations):
    ho, wo, (pt, pb, pl, pr) = _conv_windows(x_shape, w.shape, strides, padding, dilations)
    n, h, wd, c = x_shape
    dxp = np.zeros((n, h + pt + pb, wd + pl + pr, c), np.result_type(w, dy))
    for a in range(w.shape[0]):
        for b in range(w.shape[1]):
            dxp[_window(a, b, ho, wo, strides, dilations)] += np.einsum("nhwo,co->nhwc", dy,
                                                                        w[a, b])
    return dxp[:, pt:pt + h, pl:pl + wd, :]


def np_conv2d_backprop_filter(x, w_shape, dy, strides, padding, dilations):
    ho, wo, (pt, pb, pl, pr) = _conv_windows(x.shape, w_shape, strides, padding, dilations)
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)])
    dw = np.zeros(w_shape, np.result_type(x, dy))
    for a in range(w_shape[0]):
        for b in range(w_shape[1]):
            dw[a, b] = np.einsum("nhwc,nhwo->co", xp[_window(a, b, ho, wo, strides, dilations)],
                                 dy)
    return dw


def _attr_form(draw, pair):
    """TF's int / [h, w] / [1, h, w, 1] spellings of strides and dilations."""
    forms = [list(pair), [1, pair[0], pair[1], 1]]
    if pair[0] == pair[1]:
        forms.append(pair[0])
    return draw(st.sampled_from(forms))


@st.composite
def conv_case(draw, max_batch=2, max_side=6, max_depth=3):
    n = draw(st.integers(0 if max_batch > 1 else 1, max_batch))
    h, wd = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    c, o = draw(st.integers(1, max_depth)), draw(st.integers(1, max_depth))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    ho, wo, _ = _conv_windows((n, h, wd, c), (kh, kw), strides, padding, dilations)
    assume(ho > 0 and wo > 0)
    kwargs = {"strides": _attr_form(draw, strides), "padding": padding,
              "dilations": _attr_form(draw, dilations)}
    geometry = (strides, padding, dilations)
    return (n, h, wd, c), (kh, kw, c, o), (n, ho, wo, o), kwargs, geometry


@given(data=st.data())
def test_conv2d_matches_naive_reference(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    x_shape, w_shape, y_shape, kwargs, geometry = data.draw(conv_case())
    x = data.draw(_values(x_shape, dtype=dtype))
    w = data.draw(_values(w_shape, dtype=dtype))
    out = tf.nn.conv2d(tf.constant(x), tf.constant(w), **kwargs)
    expected = np_conv2d(x.astype(np.float64), w.astype(np.float64), *geometry)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == y_shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-4 if dtype == np.float32 else 1e-12)


@given(data=st.data())
def test_conv2d_backprop_ops_match_naive_reference(data):
    x_shape, w_shape, y_shape, kwargs, geometry = data.draw(conv_case())
    x = data.draw(_values(x_shape))
    w = data.draw(_values(w_shape))
    dy = data.draw(_values(y_shape))
    dx = tf.nn.conv2d_backprop_input(x_shape, tf.constant(w), tf.constant(dy), **kwargs)
    assert tuple(dx.shape) == x_shape
    np.testing.assert_allclose(dx.numpy(), np_conv2d_backprop_input(x_shape, w, dy, *geometry),
                               rtol=1e-12, atol=1e-12)
    dw = tf.nn.conv2d_backprop_filter(tf.constant(x), tf.constant(w_shape), tf.constant(dy),
                                      **kwargs)
    assert tuple(dw.shape) == w_shape
    np.testing.assert_allclose(dw.numpy(), np_conv2d_backprop_filter(x, w_shape, dy, *geometry),
                               rtol=1e-12, atol=1e-12)


@settings(max_examples=15)
@given(data=st.data())
def test_conv2d_gradients(data):
    x_shape, w_shape, _, kwargs, geometry = data.draw(conv_case(max_side=5, max_depth=2))
    x = data.draw(_values(x_shape))
    w = data.draw(_values(w_shape))
    check_gradients(lambda a, b: tf.nn.conv2d(a, b, **kwargs),
                    lambda a, b: np_conv2d(a, b, *geometry), [x, w])


@settings(max_examples=15)
@given(data=st.data())
def test_conv2d_backprop_input_gradients(data):
    x_shape, w_shape, y_shape, kwargs, geometry = data.draw(conv_case(max_side=5, max_depth=2))
    w = data.draw(_values(w_shape))
    dy = data.draw(_values(y_shape))
    check_gradients(lambda a, b: tf.nn.conv2d_backprop_input(x_shape, a, b, **kwargs),
                    lambda a, b: np_conv2d_backprop_input(x_shape, a, b, *geometry), [w, dy])


@settings(max_examples=15)
@given(data=st.data())
def test_conv2d_backprop_filter_gradients(data):
    x_shape, w_shape, y_shape, kwargs, geometry = data.draw(conv_case(max_side=5, max_depth=2))
    x = data.draw(_values(x_shape))
    dy = data.draw(_values(y_shape))
    check_gradients(lambda a, b: tf.nn.conv2d_backprop_filter(a, w_shape, b, **kwargs),
                    lambda a, b: np_conv2d_backprop_filter(a, w_shape, b, *geometry), [x, dy])


@settings(max_examples=10)
@given(data=st.data())
def test_conv2d_second_order_via_nested_tapes(data):
    x_shape, w_shape, y_shape, kwargs, geometry = data.draw(conv_case(max_side=4, max_depth=2))
    x = data.draw(_values(x_shape))
    w = data.draw(_values(w_shape))
    u = _inner_weights(y_shape)

    def grad_wrt_x(b):  # d sum(conv(x, b) * u) / dx, as a function of the filters
        xt = tf.constant(x)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            total = tf.reduce_sum(tf.nn.conv2d(xt, b, **kwargs) * u)
        return inner.gradient(total, xt)

    check_gradients(grad_wrt_x, lambda b: np_conv2d_backprop_input(x_shape, b, u, *geometry),
                    [w])


def test_conv2d_errors():
    x = tf.zeros([1, 4, 4, 2])
    with pytest.raises(IAE, match=r"conv2d: input has dtype float32 but filters have float64"):
        tf.nn.conv2d(x, tf.zeros([1, 1, 2, 1], tf.float64), 1, "SAME")
    with pytest.raises(IAE, match=r"conv2d: strides \[2, 2, 2, 1\] may not stride .* batch"):
        tf.nn.conv2d(x, tf.zeros([1, 1, 2, 1]), [2, 2, 2, 1], "SAME")
    with pytest.raises(IAE, match=r"conv2d: strides must be >= 1"):
        tf.nn.conv2d(x, tf.zeros([1, 1, 2, 1]), 0, "SAME")
    with pytest.raises(IAE, match=r"conv2d: only data_format='NHWC' is supported"):
        tf.nn.conv2d(x, tf.zeros([1, 1, 2, 1]), 1, "SAME", data_format="NCHW")
    with pytest.raises(TypeError, match=r"conv2d: input has dtype int32"):
        tf.nn.conv2d(tf.zeros([1, 2, 2, 1], tf.int32), tf.zeros([1, 1, 1, 1], tf.int32), 1,
                     "SAME")
    with pytest.raises(IAE, match=r"conv2d_backprop_input: out_backprop has shape \[1,4,4,3\] "
                                  r"but the convolution's output shape is \[1,4,4,1\]"):
        tf.nn.conv2d_backprop_input([1, 4, 4, 2], tf.zeros([1, 1, 2, 1]), tf.zeros([1, 4, 4, 3]),
                                    1, "SAME")
    with pytest.raises(IAE, match=r"conv2d_backprop_filter: out_backprop has shape"):
        tf.nn.conv2d_backprop_filter(x, [1, 1, 2, 1], tf.zeros([1, 2, 2, 1]), 1, "SAME")


# ---- pooling -------------------------------------------------------------------------------------
def _pool_patches(x, ksize, strides, padding, fill):
    (kh, kw), (sh, sw) = ksize, strides
    ho, pt, pb = _geometry(x.shape[1], kh, sh, 1, padding)
    wo, pl, pr = _geometry(x.shape[2], kw, sw, 1, padding)
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], constant_values=fill)
    patches = np.stack([xp[_window(a, b, ho, wo, strides, (1, 1))]
                        for a in range(kh) for b in range(kw)], axis=3)
    return patches, (pt, pl)  # [n, ho, wo, kh*kw, c]


def np_max_pool(x, ksize, strides, padding):
    return _pool_patches(x, ksize, strides, padding, -np.inf)[0].max(axis=3)


def np_avg_pool(x, ksize, strides, padding):
    sums = _pool_patches(x, ksize, strides, padding, 0.0)[0].sum(axis=3)
    counts = _pool_patches(np.ones_like(x), ksize, strides, padding, 0.0)[0].sum(axis=3)
    return sums / counts


def np_max_pool_grad(x, dy, ksize, strides, padding):
    """d sum(max_pool(x) * dy) / dx: dy routed to each window's (unique) maximum."""
    patches, (pt, pl) = _pool_patches(x, ksize, strides, padding, -np.inf)
    best = patches.argmax(axis=3)
    n, ho, wo, c = best.shape
    nn, ii, jj, cc = np.meshgrid(np.arange(n), np.arange(ho), np.arange(wo), np.arange(c),
                                 indexing="ij")
    rows = ii * strides[0] + best // ksize[1] - pt
    cols = jj * strides[1] + best % ksize[1] - pl
    dx = np.zeros(x.shape, np.result_type(x, dy))
    np.add.at(dx, (nn, rows, cols, cc), dy)
    return dx


def np_avg_pool_grad(x_shape, dy, ksize, strides, padding):
    # avg_pool is linear: its adjoint by differentiating the reference (exact for linear maps).
    x = np.zeros(x_shape)
    dx = np.zeros(x_shape)
    flat = dx.reshape(-1)
    for i in range(flat.size):
        e = np.zeros(x.size)
        e[i] = 1
        flat[i] = np.sum(np_avg_pool(e.reshape(x_shape), ksize, strides, padding) * dy)
    return dx


@st.composite
def pool_case(draw, max_batch=2, max_side=6, max_depth=2):
    n = draw(st.integers(1, max_batch))
    h, wd, c = draw(st.integers(1, max_side)), draw(st.integers(1, max_side)), \
        draw(st.integers(1, max_depth))
    ksize = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    ho = _geometry(h, ksize[0], strides[0], 1, padding)[0]
    wo = _geometry(wd, ksize[1], strides[1], 1, padding)[0]
    assume(ho > 0 and wo > 0)
    kwargs = {"ksize": _attr_form(draw, ksize), "strides": _attr_form(draw, strides),
              "padding": padding}
    return (n, h, wd, c), (n, ho, wo, c), kwargs, (ksize, strides, padding)


def _distinct(shape, spacing=0.1):
    size = int(np.prod(shape))
    return st.permutations(range(size)).map(
        lambda p: (np.asarray(p, np.float64) * spacing - size * spacing / 2).reshape(shape))


POOLS = {"max_pool2d": (tf.nn.max_pool2d, np_max_pool), "avg_pool2d": (tf.nn.avg_pool2d,
                                                                       np_avg_pool)}


@pytest.mark.parametrize("name", sorted(POOLS))
@given(data=st.data())
def test_pooling_matches_naive_reference(name, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    fn, ref = POOLS[name]
    x_shape, y_shape, kwargs, geometry = data.draw(pool_case())
    x = data.draw(_values(x_shape, dtype=dtype))
    out = fn(tf.constant(x), **kwargs)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == y_shape
    np.testing.assert_allclose(out.numpy(), ref(x.astype(np.float64), *geometry), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("name", sorted(POOLS))
@given(data=st.data())
def test_pooling_gradients(name, data):
    fn, ref = POOLS[name]
    x_shape, _, kwargs, geometry = data.draw(pool_case(max_side=5))
    x = data.draw(_distinct(x_shape))  # a unique maximum in every window
    check_gradients(lambda t: fn(t, **kwargs), lambda a: ref(a, *geometry), [x])


@settings(max_examples=15)
@given(data=st.data())
def test_max_pool_second_order(data):
    x_shape, y_shape, kwargs, geometry = data.draw(pool_case(max_batch=1, max_side=4))
    x = data.draw(_distinct(x_shape))
    u = data.draw(_values(y_shape))

    def first_order(t, v):  # d sum(max_pool(t) * v) / dt
        with tf.GradientTape() as inner:
            inner.watch(t)
            total = tf.reduce_sum(tf.nn.max_pool2d(t, **kwargs) * v)
        return inner.gradient(total, t)

    # The first-order gradient is linear in v and piecewise constant in x: TF gives zeros for x.
    check_gradients(first_order, lambda a, v: np_max_pool_grad(a, v, *geometry), [x, u])


@settings(max_examples=15)
@given(data=st.data())
def test_avg_pool_second_order(data):
    x_shape, y_shape, kwargs, geometry = data.draw(pool_case(max_batch=1, max_side=4))
    x = tf.constant(data.draw(_values(x_shape)))
    u = data.draw(_values(y_shape))

    def first_order(v):  # d sum(avg_pool(x) * v) / dx
        with tf.GradientTape() as inner:
            inner.watch(x)
            total = tf.reduce_sum(tf.nn.avg_pool2d(x, **kwargs) * v)
        return inner.gradient(total, x)

    check_gradients(first_order, lambda v: np_avg_pool_grad(x_shape, v, *geometry), [u])


def test_pooling_errors():
    with pytest.raises(TypeError, match="avg_pool2d: input has dtype int32"):
        tf.nn.avg_pool2d(tf.zeros([1, 2, 2, 1], tf.int32), 2, 2, "VALID")
    with pytest.raises(IAE, match="max_pool2d: the window .* does not fit"):
        tf.nn.max_pool2d(tf.zeros([1, 2, 2, 1]), 3, 1, "VALID")
    with pytest.raises(IAE, match=r"max_pool2d: ksize \[1, 2, 2, 2\] may not stride or pool over"):
        tf.nn.max_pool2d(tf.zeros([1, 2, 2, 1]), [1, 2, 2, 2], 1, "VALID")
    with pytest.raises(IAE, match=r"avg_pool2d: ksize must be an int or a list of 1, 2 or 4"):
        tf.nn.avg_pool2d(tf.zeros([1, 2, 2, 1]), [1, 2, 2], 1, "VALID")


# ---- bias_add, l2_loss, dropout ------------------------------------------------------------------
@st.composite
def bias_case(draw):
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=3))
    data_format = draw(st.sampled_from([None, "NHWC", "NCHW"])) if len(shape) > 2 else None
    channel = 1 if data_format == "NCHW" else -1
    value = draw(_values(shape))
    bias = draw(_values((shape[channel],)))
    return value, bias, data_format


def _np_bias_add(value, bias, data_format):
    if data_format == "NCHW":
        return value + bias.reshape((-1,) + (1,) * (value.ndim - 2))
    return value + bias


@given(data=st.data())
def test_bias_add(data):
    value, bias, data_format = data.draw(bias_case())
    out = tf.nn.bias_add(tf.constant(value), tf.constant(bias), data_format=data_format)
    assert out.dtype == tf.float64
    np.testing.assert_array_equal(out.numpy(), _np_bias_add(value, bias, data_format))
    check_gradients(lambda v, b: tf.nn.bias_add(v, b, data_format=data_format),
                    lambda v, b: _np_bias_add(v, b, data_format), [value, bias])


def test_bias_add_dtypes_and_errors():
    out = tf.nn.bias_add(tf.constant([[1, 2]]), tf.constant([10, 20]))
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out.numpy(), [[11, 22]])
    with pytest.raises(IAE, match=r"bias_add: value has dtype float32 but bias has dtype float64"):
        tf.nn.bias_add(tf.zeros([2, 2]), tf.zeros([2], tf.float64))
    with pytest.raises(IAE, match=r"bias_add: bias must be 1-D .* value \[2\] and bias \[2\]"):
        tf.nn.bias_add(tf.zeros([2]), tf.zeros([2]))
    with pytest.raises(IAE, match=r"bias_add: bias must be 1-D with the size of value's channel "
                                  r"dimension .*value \[2, 3, 4\] and bias \[4\]"):
        tf.nn.bias_add(tf.zeros([2, 3, 4]), tf.zeros([4]), data_format="NCHW")


@given(data=st.data())
def test_l2_loss(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    x = data.draw(_values(shape, dtype=dtype))
    out = tf.nn.l2_loss(tf.constant(x))
    assert out.dtype == tf.as_dtype(dtype)
    assert out.shape == ()
    np.testing.assert_allclose(out.numpy(), np.sum(x.astype(np.float64) ** 2) / 2, rtol=1e-5,
                               atol=1e-6)
    check_gradients(tf.nn.l2_loss, lambda a: np.sum(a ** 2) / 2, [x.astype(np.float64)])


def test_dropout_rate_zero_is_identity():
    x = tf.constant([[1.0, -2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(tf.nn.dropout(x, 0.0).numpy(), x.numpy())
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.dropout(x, rate=0.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.ones((2, 2)))


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.8])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_dropout_keeps_and_scales(rate, dtype):
    tf.random.set_seed(7)
    x = tf.constant(np.linspace(1.0, 2.0, 20000), dtype)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.dropout(x, rate=rate)
    assert y.dtype == dtype and y.shape == x.shape
    kept = y.numpy() != 0
    # Binomial: 6 standard deviations is a bound the test fails only by a bug.
    sd = np.sqrt(rate * (1 - rate) / x.shape[0])
    assert abs(kept.mean() - (1 - rate)) < 6 * sd
    np.testing.assert_allclose(y.numpy()[kept], x.numpy()[kept] / (1 - rate), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), kept / (1 - rate), rtol=1e-6)


def test_dropout_noise_shape_broadcasts_the_mask():
    tf.random.set_seed(3)
    y = tf.nn.dropout(tf.ones([50, 4]), rate=0.5, noise_shape=[50, 1]).numpy()
    for row in y:
        assert np.all(row == row[0])
    assert 0 < np.count_nonzero(y[:, 0]) < 50


def test_dropout_is_reproducible_after_set_seed():
    x = tf.ones([100])
    tf.random.set_seed(11)
    a1, a2 = tf.nn.dropout(x, 0.5), tf.nn.dropout(x, 0.5, seed=4)
    tf.random.set_seed(11)
    b1, b2 = tf.nn.dropout(x, 0.5), tf.nn.dropout(x, 0.5, seed=4)
    np.testing.assert_array_equal(a1.numpy(), b1.numpy())
    np.testing.assert_array_equal(a2.numpy(), b2.numpy())
    assert not np.array_equal(a1.numpy(), a2.numpy())


def test_dropout_errors():
    with pytest.raises(ValueError, match=r"dropout: rate must be a scalar in \[0, 1\)"):
        tf.nn.dropout(tf.ones([2]), 1.0)
    with pytest.raises(ValueError, match="dropout: x must be a floating point tensor"):
        tf.nn.dropout(tf.ones([2], tf.int32), 0.5)
    with pytest.raises(IAE, match=r"dropout: Incompatible shapes: \[4,2\] vs. \[3,1\]"):
        tf.nn.dropout(tf.ones([4, 2]), 0.5, noise_shape=[3, 1])
    with pytest.raises(IAE, match=r"dropout: noise_shape \[2, 4, 2\] must broadcast to x's "
                                  r"shape \[4, 2\]"):
        tf.nn.dropout(tf.ones([4, 2]), 0.5, noise_shape=[2, 4, 2])


def test_cross_entropy_gradient_with_an_unknown_batch_size():
    @tf.function(input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([None], tf.int32)])
    def grad(logits, labels):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
        return tape.gradient(loss, logits)

    for batch in (2, 5):
        logits = np.random.default_rng(batch).normal(size=(batch, 3)).astype(np.float32)
        labels = np.arange(batch, dtype=np.int32) % 3
        probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        expected = (probs - np.eye(3)[labels]) / batch
        np.testing.assert_allclose(grad(logits, labels).numpy(), expected, rtol=1e-5, atol=1e-7)
    assert grad.experimental_get_tracing_count() == 1


def test_relu_propagates_nan_as_tf_does():
    with np.errstate(invalid="ignore"):
        out = tf.nn.relu(tf.constant([np.nan, -1.0, 2.0])).numpy()
    assert np.isnan(out[0]) and list(out[1:]) == [0.0, 2.0]
