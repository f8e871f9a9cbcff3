"""tf.nn's convolution variants: conv1d, conv1d/conv2d_transpose, depthwise_conv2d (and its
backprop ops), separable_conv2d, max_pool1d and avg_pool1d, against NumPy loops, with gradients
against float64 finite differences."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ops import threads
from ops.nn import depthwise as depthwise_kernels
from ops.nn import parts

import hybridtf as tf
from gradcheck import check_gradients

IAE = tf.errors.InvalidArgumentError


def _pads(size, k, stride, dilation, padding):
    """(out, pad_before) along one axis, TF's rule: 'SAME' puts the odd cell after."""
    effective = (k - 1) * dilation + 1
    if padding == "VALID":
        return max((size - effective) // stride + 1, 0), 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + effective - size, 0) // 2


def _tol(dtype):
    if dtype == np.float32:
        return {"rtol": 1e-5, "atol": 1e-5}
    return {"rtol": 1e-12, "atol": 1e-12}


# ---- NumPy references (plain loops) -------------------------------------------------------------
def np_depthwise(x, w, strides, padding, dilations):
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    ho, pt = _pads(h, kh, strides[0], dilations[0], padding)
    wo, pl = _pads(wd, kw, strides[1], dilations[1], padding)
    out = np.zeros((n, ho, wo, c * m))
    for oh in range(ho):
        for ow in range(wo):
            for i in range(kh):
                for j in range(kw):
                    ih = oh * strides[0] - pt + i * dilations[0]
                    iw = ow * strides[1] - pl + j * dilations[1]
                    if 0 <= ih < h and 0 <= iw < wd:
                        for ch in range(c):
                            for k in range(m):
                                out[:, oh, ow, ch * m + k] += x[:, ih, iw, ch] * w[i, j, ch, k]
    return out


def np_conv1d(x, w, stride, padding, dilation):
    n, width, c = x.shape
    k, _, o = w.shape
    wo, pl = _pads(width, k, stride, dilation, padding)
    out = np.zeros((n, wo, o))
    for t in range(wo):
        for j in range(k):
            i = t * stride - pl + j * dilation
            if 0 <= i < width:
                out[:, t] += x[:, i] @ w[j]
    return out


def np_conv2d_transpose(x, w, output_shape, strides, padding, dilations=(1, 1)):
    """Each input cell scatters filters [kh, kw, out, in] over the output."""
    n, h, wd, _ = x.shape
    kh, kw = w.shape[:2]
    _, pt = _pads(output_shape[1], kh, strides[0], dilations[0], padding)
    _, pl = _pads(output_shape[2], kw, strides[1], dilations[1], padding)
    out = np.zeros(output_shape)
    for ih in range(h):
        for iw in range(wd):
            for i in range(kh):
                for j in range(kw):
                    oh = ih * strides[0] - pt + i * dilations[0]
                    ow = iw * strides[1] - pl + j * dilations[1]
                    if 0 <= oh < output_shape[1] and 0 <= ow < output_shape[2]:
                        out[:, oh, ow] += x[:, ih, iw] @ w[i, j].T
    return out


def np_pool1d(x, k, stride, padding, reduce):
    width = x.shape[1]
    wo, pl = _pads(width, k, stride, 1, padding)
    out = np.zeros((x.shape[0], wo, x.shape[2]))
    for t in range(wo):
        lo = max(t * stride - pl, 0)
        out[:, t] = reduce(x[:, lo:min(t * stride - pl + k, width)], axis=1)
    return out


# ---- depthwise_conv2d ---------------------------------------------------------------------------
@st.composite
def depthwise_case(draw, max_side=5):
    n = draw(st.integers(1, 2))
    h, wd = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    c, m = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if draw(st.booleans()):
        strides, dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2))), (1, 1)
    else:
        strides, dilations = (1, 1), (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    assume(_pads(h, kh, strides[0], dilations[0], padding)[0] > 0)
    assume(_pads(wd, kw, strides[1], dilations[1], padding)[0] > 0)
    return (n, h, wd, c), (kh, kw, c, m), (strides, padding, dilations)


def _values(rng_seed, shape, dtype=np.float64):
    return np.random.default_rng(rng_seed).uniform(-2, 2, size=shape).astype(dtype)


@given(case=depthwise_case(), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 99))
def test_depthwise_conv2d_matches_loops(case, dtype, seed):
    x_shape, w_shape, (strides, padding, dilations) = case
    x, w = _values(seed, x_shape, dtype), _values(seed + 1, w_shape, dtype)
    out = tf.nn.depthwise_conv2d(x, w, [1, *strides, 1], padding, dilations=dilations)
    assert out.dtype == tf.as_dtype(dtype)
    np.testing.assert_allclose(out.numpy(), np_depthwise(x.astype(np.float64), w.astype(
        np.float64), strides, padding, dilations), **_tol(dtype))


@settings(max_examples=10)
@given(case=depthwise_case(max_side=4), seed=st.integers(0, 99))
def test_depthwise_conv2d_gradients(case, seed):
    x_shape, w_shape, (strides, padding, dilations) = case
    check_gradients(
        lambda a, b: tf.nn.depthwise_conv2d(a, b, strides, padding, dilations=dilations),
        lambda a, b: np_depthwise(a, b, strides, padding, dilations),
        [_values(seed, x_shape), _values(seed + 1, w_shape)])


@settings(max_examples=8)
@given(case=depthwise_case(max_side=4), seed=st.integers(0, 99))
def test_depthwise_backprop_ops_and_their_gradients(case, seed):
    x_shape, w_shape, (strides, padding, dilations) = case
    x, w = _values(seed, x_shape), _values(seed + 1, w_shape)
    y_shape = np_depthwise(x, w, strides, padding, dilations).shape
    dy = _values(seed + 2, y_shape)
    kw = {"strides": strides, "padding": padding, "dilations": dilations}
    # Each backprop op is the adjoint of the forward op in its argument: <conv(x, w), dy> equals
    # <x, backprop_input(dy)> and <w, backprop_filter(dy)>.
    forward = np.sum(np_depthwise(x, w, strides, padding, dilations) * dy)
    dx = tf.nn.depthwise_conv2d_backprop_input(x_shape, w, dy, **kw)
    dw = tf.nn.depthwise_conv2d_backprop_filter(x, w_shape, dy, **kw)
    assert tuple(dx.shape) == x_shape and tuple(dw.shape) == w_shape
    np.testing.assert_allclose(np.sum(dx.numpy() * x), forward, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.sum(dw.numpy() * w), forward, rtol=1e-10, atol=1e-10)
    check_gradients(lambda a, b: tf.nn.depthwise_conv2d_backprop_input(x_shape, a, b, **kw),
                    lambda a, b: _np_backprop_input(x_shape, a, b, kw), [w, dy])
    check_gradients(lambda a, b: tf.nn.depthwise_conv2d_backprop_filter(a, w_shape, b, **kw),
                    lambda a, b: _np_backprop_filter(a, w_shape, b, kw), [x, dy])


def _np_backprop_input(x_shape, w, dy, kw):
    """The input gradient by linearity: column k of the forward map's matrix, dotted with dy."""
    dx = np.zeros(x_shape)
    flat = dx.reshape(-1)
    for k in range(flat.size):
        basis = np.zeros(x_shape)
        basis.reshape(-1)[k] = 1
        flat[k] = np.sum(np_depthwise(basis, w, kw["strides"], kw["padding"],
                                      kw["dilations"]) * dy)
    return dx


def _np_backprop_filter(x, w_shape, dy, kw):
    dw = np.zeros(w_shape)
    flat = dw.reshape(-1)
    for k in range(flat.size):
        basis = np.zeros(w_shape)
        basis.reshape(-1)[k] = 1
        flat[k] = np.sum(np_depthwise(x, basis, kw["strides"], kw["padding"],
                                      kw["dilations"]) * dy)
    return dw


def test_depthwise_second_order_gradient_runs_through_the_backprop_ops():
    x, w = _values(0, (1, 3, 3, 2)), _values(1, (2, 2, 2, 1))
    xt, wt = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as outer:
        outer.watch(wt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            y = tf.reduce_sum(tf.nn.depthwise_conv2d(xt, wt, 1, "SAME") ** 2)
        gx = inner.gradient(y, xt)
        total = tf.reduce_sum(gx)
    gw = outer.gradient(total, wt)

    same = {"strides": (1, 1), "padding": "SAME", "dilations": (1, 1)}

    def total_of(w_):   # sum of d y / d x = 2 * backprop_input(conv(x, w), w)
        y_ = np_depthwise(x, w_, (1, 1), "SAME", (1, 1))
        return np.sum(2 * _np_backprop_input(x.shape, w_, y_, same))
    numeric = np.zeros_like(w)
    for k in range(w.size):
        plus, minus = w.copy(), w.copy()
        plus.reshape(-1)[k] += 1e-6
        minus.reshape(-1)[k] -= 1e-6
        numeric.reshape(-1)[k] = (total_of(plus) - total_of(minus)) / 2e-6
    np.testing.assert_allclose(gw.numpy(), numeric, rtol=1e-6, atol=1e-6)


def test_depthwise_in_a_function_matches_eager():
    x, w = _values(0, (2, 4, 4, 3)), _values(1, (3, 3, 3, 2))

    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            tape.watch(b)
            y = tf.nn.depthwise_conv2d(a, b, [1, 2, 2, 1], "SAME")
            total = tf.reduce_sum(y)
        return y, tape.gradient(total, b)

    y, g = step(tf.constant(x), tf.constant(w))
    np.testing.assert_allclose(y.numpy(), np_depthwise(x, w, (2, 2), "SAME", (1, 1)),
                               rtol=1e-12, atol=1e-12)
    expected = _np_backprop_filter(x, w.shape, np.ones(y.shape),
                                   {"strides": (2, 2), "padding": "SAME", "dilations": (1, 1)})
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_depthwise_kernels_split_over_threads_give_the_same_results(monkeypatch):
    """Each image's part on its own thread: the per-image zeroing of the input gradient and the
    sum of the filter gradient's parts."""
    monkeypatch.setattr(threads, "free_cores", lambda: 64)
    monkeypatch.setattr(parts, "_PART_WORK", 1)
    saved = threads.get_num_threads()
    x, w = _values(0, (5, 4, 3, 2)), _values(1, (2, 3, 2, 2))
    dy = _values(2, (5, 2, 1, 4))
    geometry = ((2, 1), "VALID", (1, 1))
    results = []
    try:
        for count in (1, 3):
            threads.set_num_threads(count)
            results.append([depthwise_kernels.depthwise_conv2d(x, w, *geometry),
                            depthwise_kernels.depthwise_conv2d_backprop_input(x.shape, w, dy,
                                                                              *geometry),
                            depthwise_kernels.depthwise_conv2d_backprop_filter(x, w.shape, dy,
                                                                               *geometry)])
    finally:
        threads.set_num_threads(saved)
    kw = {"strides": (2, 1), "padding": "VALID", "dilations": (1, 1)}
    expected = [np_depthwise(x, w, *geometry), _np_backprop_input(x.shape, w, dy, kw),
                _np_backprop_filter(x, w.shape, dy, kw)]
    for one, split, reference in zip(*results, expected):
        np.testing.assert_allclose(one, reference, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(split, reference, rtol=1e-12, atol=1e-12)


def test_depthwise_errors():
    x = np.zeros((1, 4, 4, 3), np.float32)
    with pytest.raises(IAE, match=r"depthwise_conv2d: input depth 3 .* in-depth 2"):
        tf.nn.depthwise_conv2d(x, np.zeros((2, 2, 2, 1), np.float32), 1, "SAME")
    with pytest.raises(IAE, match=r"depthwise_conv2d: strides \[2, 2\] > 1 are not supported "
                                  r"together with dilations \[2, 2\]"):
        tf.nn.depthwise_conv2d(x, np.zeros((2, 2, 3, 1), np.float32), 2, "SAME", dilations=2)
    with pytest.raises(IAE, match=r"depthwise_conv2d: the window .* does not fit"):
        tf.nn.depthwise_conv2d(x, np.zeros((5, 5, 3, 1), np.float32), 1, "VALID")
    with pytest.raises(IAE, match=r"depthwise_conv2d_backprop_input: out_backprop has shape"):
        tf.nn.depthwise_conv2d_backprop_input([1, 4, 4, 3], np.zeros((2, 2, 3, 2)),
                                              np.zeros((1, 4, 4, 3)), 1, "SAME")
    with pytest.raises(IAE, match=r"depthwise_conv2d: input has dtype float32 but filters"):
        tf.nn.depthwise_conv2d(tf.constant(x), tf.zeros((2, 2, 3, 1), tf.float64), 1, "SAME")


# ---- separable_conv2d ---------------------------------------------------------------------------
@settings(max_examples=10)
@given(case=depthwise_case(max_side=4), out=st.integers(1, 3), seed=st.integers(0, 99))
def test_separable_conv2d_matches_loops_and_gradients(case, out, seed):
    x_shape, w_shape, (strides, padding, dilations) = case
    x, dw = _values(seed, x_shape), _values(seed + 1, w_shape)
    pw = _values(seed + 2, (1, 1, w_shape[2] * w_shape[3], out))

    def reference(a, b, c):
        return np_depthwise(a, b, strides, padding, dilations) @ c[0, 0]
    y = tf.nn.separable_conv2d(x, dw, pw, [1, *strides, 1], padding, dilations=dilations)
    np.testing.assert_allclose(y.numpy(), reference(x, dw, pw), rtol=1e-12, atol=1e-12)
    check_gradients(lambda a, b, c: tf.nn.separable_conv2d(a, b, c, strides, padding,
                                                           dilations=dilations),
                    reference, [x, dw, pw])


def test_separable_conv2d_errors():
    x = np.zeros((1, 4, 4, 2))
    with pytest.raises(IAE, match=r"separable_conv2d: pointwise_filter must be 4-D \[1, 1"):
        tf.nn.separable_conv2d(x, np.zeros((2, 2, 2, 1)), np.zeros((2, 1, 2, 3)), 1, "SAME")
    with pytest.raises(IAE, match=r"separable_conv2d: pointwise_filter's in-depth 3 must be "
                                  r"in_channels \* channel_multiplier = 4"):
        tf.nn.separable_conv2d(x, np.zeros((2, 2, 2, 2)), np.zeros((1, 1, 3, 3)), 1, "SAME")


# ---- conv1d -------------------------------------------------------------------------------------
@st.composite
def conv1d_case(draw, max_width=7):
    n, width = draw(st.integers(1, 2)), draw(st.integers(1, max_width))
    c, o, k = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    assume(_pads(width, k, stride, dilation, padding)[0] > 0)
    return (n, width, c), (k, c, o), (stride, padding, dilation)


@given(case=conv1d_case(), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 99), form=st.sampled_from(["int", "list1", "list3"]))
def test_conv1d_matches_loops(case, dtype, seed, form):
    x_shape, w_shape, (stride, padding, dilation) = case
    x, w = _values(seed, x_shape, dtype), _values(seed + 1, w_shape, dtype)
    spelled = {"int": stride, "list1": [stride], "list3": [1, stride, 1]}[form]
    out = tf.nn.conv1d(x, w, spelled, padding, dilations=dilation)
    assert out.dtype == tf.as_dtype(dtype)
    np.testing.assert_allclose(out.numpy(), np_conv1d(x.astype(np.float64), w.astype(np.float64),
                                                      stride, padding, dilation), **_tol(dtype))


@settings(max_examples=10)
@given(case=conv1d_case(max_width=5), seed=st.integers(0, 99))
def test_conv1d_gradients(case, seed):
    x_shape, w_shape, (stride, padding, dilation) = case
    check_gradients(lambda a, b: tf.nn.conv1d(a, b, stride, padding, dilations=dilation),
                    lambda a, b: np_conv1d(a, b, stride, padding, dilation),
                    [_values(seed, x_shape), _values(seed + 1, w_shape)])


def test_conv1d_channels_first_and_errors():
    x, w = _values(0, (2, 6, 3)), _values(1, (3, 3, 4))
    ncw = tf.nn.conv1d(np.transpose(x, (0, 2, 1)), w, 1, "SAME", data_format="NCW")
    np.testing.assert_allclose(np.transpose(ncw.numpy(), (0, 2, 1)),
                               np_conv1d(x, w, 1, "SAME", 1), rtol=1e-12, atol=1e-12)
    with pytest.raises(IAE, match=r"conv1d: input must be 3-D \[batch, width, channels\], got "
                                  r"shape \[6, 3\]"):
        tf.nn.conv1d(x[0], w, 1, "SAME")
    with pytest.raises(IAE, match=r"conv1d: filters must be 3-D"):
        tf.nn.conv1d(x, w[0], 1, "SAME")
    with pytest.raises(IAE, match=r"conv1d: stride \[2, 2, 1\] may not stride"):
        tf.nn.conv1d(x, w, [2, 2, 1], "SAME")
    with pytest.raises(IAE, match=r"conv1d: data_format must be 'NWC' or 'NCW'"):
        tf.nn.conv1d(x, w, 1, "SAME", data_format="NHWC")


# ---- transposed convolution ---------------------------------------------------------------------
@st.composite
def transpose_case(draw, max_side=4):
    n, h, wd = draw(st.integers(1, 2)), draw(st.integers(1, max_side)), draw(
        st.integers(1, max_side))
    cin, cout = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    # Any output size whose convolution gives back the input's size is allowed.
    sizes = []
    for size, k, s in ((h, kh, strides[0]), (wd, kw, strides[1])):
        options = [o for o in range(1, size * s + k + 1) if _pads(o, k, s, 1, padding)[0] == size]
        assume(options)
        sizes.append(draw(st.sampled_from(options)))
    return (n, h, wd, cin), (kh, kw, cout, cin), (n, sizes[0], sizes[1], cout), strides, padding


@given(case=transpose_case(), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 99))
def test_conv2d_transpose_matches_loops(case, dtype, seed):
    x_shape, w_shape, out_shape, strides, padding = case
    x, w = _values(seed, x_shape, dtype), _values(seed + 1, w_shape, dtype)
    out = tf.nn.conv2d_transpose(x, w, out_shape, strides, padding)
    assert tuple(out.shape) == out_shape and out.dtype == tf.as_dtype(dtype)
    np.testing.assert_allclose(out.numpy(), np_conv2d_transpose(
        x.astype(np.float64), w.astype(np.float64), out_shape, strides, padding), **_tol(dtype))


@settings(max_examples=10)
@given(case=transpose_case(max_side=3), seed=st.integers(0, 99))
def test_conv2d_transpose_gradients(case, seed):
    x_shape, w_shape, out_shape, strides, padding = case
    check_gradients(lambda a, b: tf.nn.conv2d_transpose(a, b, out_shape, strides, padding),
                    lambda a, b: np_conv2d_transpose(a, b, out_shape, strides, padding),
                    [_values(seed, x_shape), _values(seed + 1, w_shape)])


def test_gradients_traced_with_an_unknown_batch_size():
    """The input gradients of conv2d and depthwise_conv2d, and conv2d_transpose, take the batch
    size from the data when the function is traced with it unknown."""
    x = _values(0, (3, 4, 4, 2))
    w, dw, wt = _values(1, (3, 3, 2, 2)), _values(2, (2, 2, 2, 2)), _values(3, (3, 3, 2, 2))

    @tf.function(input_signature=[tf.TensorSpec([None, 4, 4, 2], tf.float64)])
    def grads(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            total = (tf.reduce_sum(tf.nn.conv2d(a, w, 1, "SAME") ** 2)
                     + tf.reduce_sum(tf.nn.depthwise_conv2d(a, dw, 2, "VALID") ** 2))
        up = tf.nn.conv2d_transpose(a, wt, tf.TensorShape([None, 8, 8, 2]), 2, "SAME")
        return tape.gradient(total, a), up

    g, up = grads(x)
    conv = _np_conv2d_same(x, w)
    depth = np_depthwise(x, dw, (2, 2), "VALID", (1, 1))
    kw = {"strides": (2, 2), "padding": "VALID", "dilations": (1, 1)}
    # conv2d's input gradient is the transposed convolution with the same filters.
    expected = (2 * _np_backprop_input(x.shape, dw, depth, kw)
                + 2 * np_conv2d_transpose(conv, w, x.shape, (1, 1), "SAME"))
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(up.numpy(), np_conv2d_transpose(x, wt, (3, 8, 8, 2), (2, 2),
                                                               "SAME"), rtol=1e-12, atol=1e-12)


def _np_conv2d_same(x, w):
    """Stride-1 'SAME' conv2d (odd filters) by loops."""
    n, h, wd, _ = x.shape
    kh, kw = w.shape[:2]
    out = np.zeros((n, h, wd, w.shape[3]))
    for oh in range(h):
        for ow in range(wd):
            for i in range(kh):
                for j in range(kw):
                    ih, iw = oh - kh // 2 + i, ow - kw // 2 + j
                    if 0 <= ih < h and 0 <= iw < wd:
                        out[:, oh, ow] += x[:, ih, iw] @ w[i, j]
    return out


def test_conv1d_transpose_is_conv2d_transpose_over_a_row():
    x, w = _values(0, (2, 3, 2)), _values(1, (3, 4, 2))
    out = tf.nn.conv1d_transpose(x, w, [2, 7, 4], 2, "VALID")
    expected = np_conv2d_transpose(x[:, None], w[None], (2, 1, 7, 4), (1, 2), "VALID")[:, 0]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_conv2d_transpose_errors():
    x = np.zeros((1, 3, 3, 2))
    with pytest.raises(IAE, match=r"conv2d_transpose: input depth 2 .* filters' last dimension 3"):
        tf.nn.conv2d_transpose(x, np.zeros((3, 3, 4, 3)), [1, 6, 6, 4], 2)
    with pytest.raises(IAE, match=r"conv2d_transpose: output_shape \[1, 6, 6, 5\] must end in "
                                  r"the filters' third dimension 4"):
        tf.nn.conv2d_transpose(x, np.zeros((3, 3, 4, 2)), [1, 6, 6, 5], 2)
    with pytest.raises(IAE, match=r"conv2d_transpose: output_shape \[1, 9, 9, 4\] is not a size "
                                  r"whose convolution .* has the input's shape \[1, 3, 3, 2\]: "
                                  r"it gives \[1, 5, 5, 2\]"):
        tf.nn.conv2d_transpose(x, np.zeros((3, 3, 4, 2)), [1, 9, 9, 4], 2)


# ---- 1-D pooling --------------------------------------------------------------------------------
@given(n=st.integers(1, 2), width=st.integers(1, 7), c=st.integers(1, 3), k=st.integers(1, 3),
       stride=st.integers(1, 3), padding=st.sampled_from(["SAME", "VALID"]),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 99))
def test_pool1d_matches_loops(n, width, c, k, stride, padding, dtype, seed):
    assume(_pads(width, k, stride, 1, padding)[0] > 0)
    x = _values(seed, (n, width, c), dtype)
    for fn, reduce in ((tf.nn.max_pool1d, np.max), (tf.nn.avg_pool1d, np.mean)):
        out = fn(x, k, [1, stride, 1], padding)
        assert out.dtype == tf.as_dtype(dtype)
        np.testing.assert_allclose(out.numpy(), np_pool1d(x.astype(np.float64), k, stride,
                                                          padding, reduce), **_tol(dtype))


@settings(max_examples=10)
@given(width=st.integers(2, 6), k=st.integers(1, 3), stride=st.integers(1, 2),
       padding=st.sampled_from(["SAME", "VALID"]), seed=st.integers(0, 99))
def test_pool1d_gradients(width, k, stride, padding, seed):
    assume(_pads(width, k, stride, 1, padding)[0] > 0)
    x = _values(seed, (2, width, 2))
    for fn, reduce in ((tf.nn.max_pool1d, np.max), (tf.nn.avg_pool1d, np.mean)):
        check_gradients(lambda a: fn(a, k, stride, padding),
                        lambda a: np_pool1d(a, k, stride, padding, reduce), [x])


def test_pool1d_errors_and_channels_first():
    x = _values(0, (1, 5, 2))
    ncw = tf.nn.max_pool1d(np.transpose(x, (0, 2, 1)), 2, 2, "SAME", data_format="NCW")
    np.testing.assert_allclose(np.transpose(ncw.numpy(), (0, 2, 1)),
                               np_pool1d(x, 2, 2, "SAME", np.max))
    with pytest.raises(IAE, match=r"max_pool1d: input must be 3-D"):
        tf.nn.max_pool1d(x[0], 2, 2, "SAME")
    with pytest.raises(IAE, match=r"avg_pool1d: ksize must be >= 1, got 0"):
        tf.nn.avg_pool1d(x, 0, 1, "SAME")
