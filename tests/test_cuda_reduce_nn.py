"""The CUDA kernels of the reductions, arg-reductions, cumsum, softmax, log-softmax, the softmax
cross-entropies and the gradient helpers sum_to_like and unreduce (Numba's CUDA simulator stands
in for a GPU): each registry entry's "cuda" kernel on device arrays gives the "cpu" kernel's
result (and NumPy's where it is simple), for every dtype, axis sets, NaN and inf, size-0 axes,
rank 0, and runs long enough to be split over several blocks."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import cuda

import hybridtf as tf
from hybridtf.registry import OPS

FEW = settings(max_examples=6, deadline=None)
NUMERIC = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.float32, np.float64]
FLOATS = [np.float32, np.float64]


def on_gpu(name, arrays, attrs):
    """Op ``name``'s "cuda" kernel on ``arrays`` copied to the device, its results copied back
    (a list of arrays)."""
    result = OPS[name].kernels["cuda"].run([cuda.to_device(np.array(a, order="C"))
                                           for a in arrays], attrs)
    results = result if isinstance(result, tuple) else (result,)
    assert all(r.is_c_contiguous() for r in results)
    return [r.copy_to_host() for r in results]


def on_cpu(name, arrays, attrs):
    result = OPS[name].kernels["cpu"].run(list(arrays), attrs)
    return [np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))]


def assert_same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    elif want.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def check_against_cpu(name, arrays, attrs):
    """The cuda kernel's outputs equal the cpu kernel's; returns the cuda ones."""
    got = on_gpu(name, arrays, attrs)
    for g, w in zip(got, on_cpu(name, arrays, attrs)):
        assert_same(g, w)
    return got


def values(rng, shape, dtype, low=-3, high=4):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        low = max(low, 0) if dtype.kind == "u" else low
        return rng.integers(low, high, shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


shapes = st.lists(st.integers(1, 5), min_size=0, max_size=3)


@st.composite
def shape_and_axes(draw, shape_strategy=shapes):
    shape = draw(shape_strategy)
    rank = len(shape)
    listed = st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank,
                      max_size=rank) if rank else st.just([])
    axis = draw(st.one_of(st.none(), listed))
    return tuple(shape), axis


# ---- reductions ---------------------------------------------------------------------------------
REDUCTIONS = [("reduce_sum", np.sum), ("reduce_max", np.max), ("reduce_min", np.min),
              ("reduce_prod", np.prod), ("reduce_mean", np.mean)]


@pytest.mark.parametrize("dtype", NUMERIC)
def test_every_reduction_of_every_dtype(dtype):
    x = values(np.random.default_rng(1), (3, 5), dtype)
    for name, reference in REDUCTIONS:
        got, = check_against_cpu(name, [x], {"axis": [-1], "keepdims": True})
        if np.dtype(dtype).kind == "f" or name != "reduce_mean":   # (integer means truncate)
            want = reference(x.astype(np.float64), axis=1, keepdims=True)
            np.testing.assert_allclose(got, want.astype(dtype), rtol=2e-6)


@FEW
@given(dtype=st.sampled_from([np.float32, np.int32]), case=shape_and_axes(),
       keepdims=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_reductions_over_any_axes(dtype, case, keepdims, seed):
    shape, axis = case
    x = values(np.random.default_rng(seed), shape, dtype)
    attrs = {"axis": axis, "keepdims": keepdims}
    axes = tuple(range(len(shape))) if axis is None else tuple(a % len(shape) for a in axis)
    for name, reference in REDUCTIONS[:2] + REDUCTIONS[4:]:
        got, = check_against_cpu(name, [x], attrs)
        if np.dtype(dtype).kind == "f":
            want = reference(x.astype(np.float64), axis=axes, keepdims=keepdims)
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("axis", [None, [0, 2]])
def test_means_of_floats_and_integers(axis):
    x = np.arange(-30, 30).reshape(3, 4, 5)
    axes = (0, 1, 2) if axis is None else tuple(axis)
    for dtype in (np.float64, np.int16):
        got, = check_against_cpu("reduce_mean", [x.astype(dtype)],
                                 {"axis": axis, "keepdims": False})
        want = np.mean(x, axis=axes)
        if dtype == np.int16:
            want = np.trunc(want)   # TF's integer mean truncates toward zero
        np.testing.assert_array_equal(got, want.astype(dtype))


def test_integer_sums_and_products_wrap_as_tf():
    x = np.full((3, 40), 100, np.int8)
    got, = check_against_cpu("reduce_sum", [x], {"axis": [1], "keepdims": False})
    np.testing.assert_array_equal(got, np.full(3, np.asarray(4000).astype(np.int8)))
    u = np.full((2, 3), 200, np.uint8)
    got, = check_against_cpu("reduce_sum", [u], {"axis": None, "keepdims": False})
    assert got == np.uint8(1200 % 256)
    got, = check_against_cpu("reduce_prod", [np.full(11, -3, np.int16)],
                             {"axis": [0], "keepdims": True})
    assert got.tolist() == [np.asarray((-3) ** 11).astype(np.int16)]
    # the mean divides the wrapped sum, and truncates toward zero
    got, = check_against_cpu("reduce_mean", [np.asarray([100, 100, -8], np.int8)],
                             {"axis": None, "keepdims": False})
    assert got == -21   # 192 wraps to -64; -64 / 3 truncated


def test_nan_and_infinities():
    x = np.asarray([[1.0, np.nan, 3.0], [-np.inf, 2.0, np.inf], [np.nan, np.nan, 0.0]],
                   np.float32)
    for name, axis in [("reduce_max", [1]), ("reduce_min", [1]), ("reduce_max", [0]),
                       ("reduce_min", None), ("reduce_sum", [1]), ("reduce_prod", [0])]:
        got, = on_gpu(name, [x], {"axis": axis, "keepdims": False})
        want, = on_cpu(name, [x], {"axis": axis, "keepdims": False})
        np.testing.assert_array_equal(got, want)
    got, = on_gpu("reduce_max", [x], {"axis": [1], "keepdims": False})
    np.testing.assert_array_equal(got, [np.nan, np.inf, np.nan])


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_empty_reductions_give_the_identity(dtype):
    x = np.zeros((3, 0, 2), dtype)
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    lowest = -np.inf if np.dtype(dtype).kind == "f" else info.min
    highest = np.inf if np.dtype(dtype).kind == "f" else info.max
    mean = np.nan if np.dtype(dtype).kind == "f" else 0
    for name, value in [("reduce_sum", 0), ("reduce_prod", 1), ("reduce_max", lowest),
                        ("reduce_min", highest), ("reduce_mean", mean)]:
        got, = check_against_cpu(name, [x], {"axis": [1], "keepdims": True})
        assert got.shape == (3, 1, 2)
        np.testing.assert_array_equal(got, np.full((3, 1, 2), value, dtype))
        # kept axes of size 0: an empty result
        got, = check_against_cpu(name, [x], {"axis": [0], "keepdims": False})
        assert got.shape == (0, 2)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_mean"])
def test_rank_zero_and_no_axes_copy(name):
    x = np.asarray(-2.5, np.float32)
    for axis in ([], None):
        got, = check_against_cpu(name, [x], {"axis": axis, "keepdims": False})
        assert got.shape == () and got == x
    y = np.asarray([[-0.0, 1.5]], np.float64)
    got, = check_against_cpu(name, [y], {"axis": [], "keepdims": True})
    np.testing.assert_array_equal(np.signbit(got), np.signbit(y))


def test_long_reductions_run_over_several_blocks():
    rng = np.random.default_rng(5)
    # one long run: partial results of two parts, combined by a second pass
    x = rng.standard_normal(5000).astype(np.float32)
    x[4321] = 50.0
    for name, want in [("reduce_sum", np.sum(x, dtype=np.float64)), ("reduce_max", 50.0)]:
        got, = check_against_cpu(name, [x], {"axis": None, "keepdims": False})
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # a long reduced axis between kept ones, split in parts too
    y = rng.integers(-5, 6, (1, 2100, 3)).astype(np.int32)
    got, = check_against_cpu("reduce_sum", [y], {"axis": [1], "keepdims": False})
    np.testing.assert_array_equal(got, y.sum(axis=1))


@FEW
@given(case=shape_and_axes(st.lists(st.integers(0, 4), min_size=1, max_size=3)),
       keepdims=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_any_and_all(case, keepdims, seed):
    shape, axis = case
    x = np.random.default_rng(seed).random(shape) < 0.5
    attrs = {"axis": axis, "keepdims": keepdims}
    axes = tuple(range(len(shape))) if axis is None else tuple(a % len(shape) for a in axis)
    for name, reference in [("reduce_any", np.any), ("reduce_all", np.all)]:
        got, = check_against_cpu(name, [x], attrs)
        np.testing.assert_array_equal(got, reference(x, axis=axes, keepdims=keepdims))


# ---- argmax / argmin ----------------------------------------------------------------------------
@FEW
@given(dtype=st.sampled_from(NUMERIC), shape=st.lists(st.integers(1, 5), min_size=1,
                                                      max_size=3),
       data=st.data(), output_type=st.sampled_from([np.int32, np.int64]),
       with_nan=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_argmax_and_argmin(dtype, shape, data, output_type, with_nan, seed):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype, -2, 3)   # few values: ties are common
    if with_nan and x.dtype.kind == "f":
        x.reshape(-1)[rng.integers(0, x.size, 2)] = np.nan
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    attrs = {"axis": axis, "output_type": output_type}
    for name, reference in [("argmax", np.argmax), ("argmin", np.argmin)]:
        got, = check_against_cpu(name, [x], attrs)
        np.testing.assert_array_equal(got, reference(x, axis=axis))   # first extreme, NaN first


def test_argmax_over_a_long_axis_takes_the_first_of_equal_values():
    x = np.zeros(6000, np.float64)
    x[[4500, 5000]] = 3.0
    x[[700, 5500]] = -3.0
    assert on_gpu("argmax", [x], {"axis": 0, "output_type": np.int64})[0] == 4500
    assert on_gpu("argmin", [x], {"axis": 0, "output_type": np.int32})[0] == 700
    x[5999] = np.nan
    assert on_gpu("argmin", [x], {"axis": 0, "output_type": np.int64})[0] == 5999


# ---- cumsum -------------------------------------------------------------------------------------
@FEW
@given(dtype=st.sampled_from(NUMERIC), shape=st.lists(st.integers(0, 5), min_size=1,
                                                      max_size=3),
       data=st.data(), exclusive=st.booleans(), reverse=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_cumsum(dtype, shape, data, exclusive, reverse, seed):
    x = values(np.random.default_rng(seed), shape, dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    got, = check_against_cpu("cumsum", [x], {"axis": axis, "exclusive": exclusive,
                                             "reverse": reverse})
    if not exclusive and not reverse and x.dtype.kind == "f":
        np.testing.assert_allclose(got, np.cumsum(x.astype(np.float64), axis=axis), rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True)])
def test_cumsum_of_rows_longer_than_a_block(exclusive, reverse):
    x = np.arange(600, dtype=np.int64).reshape(1, 600) - 300
    got, = check_against_cpu("cumsum", [x], {"axis": 1, "exclusive": exclusive,
                                             "reverse": reverse})
    assert got[0, 0 if not reverse else 599] == (0 if exclusive else -300)
    wrapped, = check_against_cpu("cumsum", [np.full((2, 300), 7, np.int8)],
                                 {"axis": 1, "exclusive": False, "reverse": False})
    np.testing.assert_array_equal(wrapped[:, -1], np.asarray(2100).astype(np.int8))


# ---- softmax and cross-entropies ----------------------------------------------------------------
@FEW
@given(dtype=st.sampled_from(FLOATS), shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
       special=st.sampled_from([None, np.nan, np.inf, -np.inf]), seed=st.integers(0, 2 ** 16))
def test_softmax_and_log_softmax(dtype, shape, special, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    if special is not None:
        x.reshape(-1)[rng.integers(0, x.size)] = special
    for name in ("softmax", "log_softmax"):
        got, = on_gpu(name, [x], {})
        want, = on_cpu(name, [x], {})
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=4e-6, atol=1e-6, equal_nan=True)
        assert np.array_equal(np.isnan(got), np.isnan(want))
    if special is None:
        z = x.astype(np.float64)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(on_gpu("softmax", [x], {})[0],
                                   e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_softmax_rows_of_nan_inf_and_huge_logits():
    x = np.asarray([[1.0, np.nan, 2.0], [np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf],
                    [-np.inf, 0.0, 1.0], [1e30, 1e30, -1e30]], np.float64)
    for name in ("softmax", "log_softmax"):
        got, = on_gpu(name, [x], {})
        want, = on_cpu(name, [x], {})
        np.testing.assert_array_equal(got, want)
    got, = on_gpu("softmax", [x], {})
    assert np.isnan(got[0]).all() and got[3, 0] == 0.0
    np.testing.assert_allclose(got[4], [0.5, 0.5, 0.0])


@pytest.mark.parametrize("shape", [(2, 300), (3, 0), (0, 4), (7, 1)])
def test_softmax_wide_narrow_and_empty_rows(shape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    for name in ("softmax", "log_softmax"):
        check_against_cpu(name, [x], {})


@FEW
@given(dtype=st.sampled_from(FLOATS), label_dtype=st.sampled_from([np.int32, np.int64]),
       batch=st.integers(0, 5), classes=st.integers(1, 6), seed=st.integers(0, 2 ** 16))
def test_sparse_softmax_cross_entropy(dtype, label_dtype, batch, classes, seed):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((batch, classes)) * 3).astype(dtype)
    labels = rng.integers(0, classes, batch).astype(label_dtype)
    loss, probs = check_against_cpu("sparse_softmax_cross_entropy_with_logits", [logits, labels],
                                    {})
    z = logits.astype(np.float64)
    lse = np.log(np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1)) + z.max(axis=1) \
        if batch else np.zeros(0)
    np.testing.assert_allclose(loss, lse - z[np.arange(batch), labels], rtol=1e-5, atol=1e-6)


def test_sparse_cross_entropy_labels_out_of_range_give_nan_rows_on_a_gpu():
    logits = np.arange(12, dtype=np.float32).reshape(3, 4)
    labels = np.asarray([1, 4, -1], np.int32)
    check = OPS["sparse_softmax_cross_entropy_with_logits"].check_values
    check([cuda.to_device(logits), cuda.to_device(labels)], {})   # no error on the device ...
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"labels\[1\] = 4"):
        check([logits, labels], {})                                # ... as on the CPU
    loss, probs = on_gpu("sparse_softmax_cross_entropy_with_logits", [logits, labels], {})
    assert np.isfinite(loss[0]) and np.isnan(loss[1:]).all()
    assert np.isfinite(probs[0]).all() and np.isnan(probs[1:]).all()
    want, _ = on_cpu("sparse_softmax_cross_entropy_with_logits", [logits[:1], labels[:1]], {})
    np.testing.assert_allclose(loss[:1], want, rtol=1e-6)


@FEW
@given(dtype=st.sampled_from(FLOATS), batch=st.integers(0, 5), classes=st.integers(1, 6),
       label_form=st.sampled_from(["full", "row", "column", "scalar", "vector"]),
       seed=st.integers(0, 2 ** 16))
def test_softmax_cross_entropy_with_broadcast_labels(dtype, batch, classes, label_form, seed):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((batch, classes)) * 3).astype(dtype)
    label_shape = {"full": (batch, classes), "row": (1, classes), "column": (batch, 1),
                   "scalar": (), "vector": (classes,)}[label_form]
    labels = rng.random(label_shape).astype(dtype)
    labels.reshape(-1)[:1] = 0.0   # a label-0 term adds nothing, even against -inf
    loss, probs = check_against_cpu("softmax_cross_entropy_with_logits", [logits, labels], {})
    z = logits.astype(np.float64)
    log_softmax = z - z.max(axis=1, keepdims=True)
    log_softmax -= np.log(np.exp(log_softmax).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss, -(np.broadcast_to(labels, z.shape) * log_softmax).sum(1),
                               rtol=1e-5, atol=1e-6)


def test_cross_entropies_with_infinite_logits():
    logits = np.asarray([[0.0, -np.inf, 1.0], [np.inf, 0.0, 0.0]], np.float32)
    labels = np.asarray([[0.5, 0.0, 0.5], [1.0, 0.0, 0.0]], np.float32)
    for name, args in [("softmax_cross_entropy_with_logits", [logits, labels]),
                       ("sparse_softmax_cross_entropy_with_logits",
                        [logits, np.asarray([2, 0], np.int64)])]:
        for got, want in zip(on_gpu(name, args, {}), on_cpu(name, args, {})):
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


# ---- gradient helpers ---------------------------------------------------------------------------
@pytest.mark.parametrize("g_shape,like_shape", [((2, 3, 4), (3, 1)), ((2, 3), (2, 3)),
                                                ((4, 1, 5), (1, 1, 5)), ((3, 2), ()),
                                                ((0, 3), (3,))])
def test_sum_to_like(g_shape, like_shape):
    g = np.arange(int(np.prod(g_shape)), dtype=np.float32).reshape(g_shape)
    got, = check_against_cpu("sum_to_like", [g, np.zeros(like_shape, np.float32)], {})
    assert got.shape == like_shape


@pytest.mark.parametrize("x_shape,axes,keepdims", [((2, 3, 4), (1,), False),
                                                   ((2, 3, 4), (0, 2), True),
                                                   ((2, 3), (0, 1), False),
                                                   ((3, 0), (0,), False)])
def test_unreduce(x_shape, axes, keepdims):
    x = np.zeros(x_shape, np.int32)
    g, = on_cpu("reduce_sum", [np.ones(x_shape, np.int32)],
                {"axis": list(axes), "keepdims": keepdims})
    g = g + np.arange(g.size, dtype=np.int32).reshape(g.shape)
    got, = check_against_cpu("unreduce", [g, x], {"axes": axes, "keepdims": keepdims})
    assert got.shape == x_shape


# ---- through the public API on the GPU ----------------------------------------------------------
def test_a_training_loss_and_its_gradient_on_the_gpu(gpu):
    logits = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    labels = np.asarray([0, 4, 2, 2], np.int64)

    def loss_and_grad():
        x = tf.constant(logits)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.constant(labels), logits=x))
        return loss, tape.gradient(loss, x), tf.argmax(x, axis=1)

    with tf.device("/GPU:0"):
        loss, grad, best = loss_and_grad()
        assert "GPU" in loss.device and "GPU" in grad.device
    with tf.device("/CPU:0"):
        want_loss, want_grad, want_best = loss_and_grad()
    np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(best.numpy(), want_best.numpy())
