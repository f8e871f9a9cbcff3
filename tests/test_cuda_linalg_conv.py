"""The CUDA kernels of matmul, conv2d, pooling and their gradients (Numba's CUDA simulator stands
in for a GPU): each registry entry's "cuda" kernel on device arrays gives the "cpu" kernel's
result (and the NumPy reference's), for every dtype, transposes, broadcast batches, strides,
dilations and both paddings; and matmul's choice between cuBLAS and the tiled kernel."""
import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import cuda

import hybridtf as tf
from hybridtf.registry import OPS
from ops.cuda import conv as cuda_conv
from ops.cuda import launch, linalg as cuda_linalg
from ops.cuda import tiles
from kernel_helpers import conv2d_ref, max_pool_grad_ref, max_pool_ref, avg_pool_ref, tol

FEW = settings(max_examples=6, deadline=None)
ON_SIMULATOR = launch.SIMULATED


def on_both(name, arrays, attrs):
    """(the "cuda" kernel's result copied to the host, the "cpu" kernel's) of op ``name``."""
    kernels = OPS[name].kernels
    on_gpu = kernels["cuda"].run([cuda.to_device(np.ascontiguousarray(a)) for a in arrays],
                                 attrs)
    assert on_gpu.is_c_contiguous()
    return on_gpu.copy_to_host(), kernels["cpu"].run(list(arrays), attrs)


def assert_same(on_gpu, on_cpu, exact=False):
    assert on_gpu.shape == on_cpu.shape and on_gpu.dtype == on_cpu.dtype
    if exact or on_cpu.dtype.kind in "iub":
        np.testing.assert_array_equal(on_gpu, on_cpu)
    else:
        np.testing.assert_allclose(on_gpu, on_cpu, **tol(on_cpu.dtype))


def values(rng, shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---- matmul -------------------------------------------------------------------------------------
# Batch shapes of the two operands: none, equal, broadcast both ways, of different ranks, empty.
BATCHES = [((), ()), ((2,), ()), ((), (3,)), ((2, 1), (3,)), ((1, 2), (2, 1)), ((0,), (1,))]


@FEW
@given(dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64]),
       batches=st.sampled_from(BATCHES), m=st.integers(0, 5), n=st.integers(1, 5),
       k=st.integers(0, 5), transpose_a=st.booleans(), transpose_b=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_matmul_matches_the_cpu_and_numpy(dtype, batches, m, n, k, transpose_a, transpose_b,
                                          seed):
    rng = np.random.default_rng(seed)
    a = values(rng, batches[0] + (m, k), dtype)
    b = values(rng, batches[1] + (k, n), dtype)
    stored_a = np.swapaxes(a, -1, -2) if transpose_a else a
    stored_b = np.swapaxes(b, -1, -2) if transpose_b else b
    on_gpu, on_cpu = on_both("matmul", [stored_a, stored_b],
                             {"transpose_a": transpose_a, "transpose_b": transpose_b})
    assert_same(on_gpu, on_cpu)
    assert_same(on_gpu, np.matmul(a, b).astype(dtype))


@pytest.mark.parametrize("transpose_a,transpose_b", [(False, False), (True, True)])
def test_matmul_over_several_tiles_and_slabs(transpose_a, transpose_b):
    # 70 rows and 67 columns: two tiles each way; 20 inner: two slabs, the second partial
    rng = np.random.default_rng(0)
    a, b = values(rng, (70, 20), np.int64), values(rng, (20, 67), np.int64)
    on_gpu, _ = on_both("matmul", [a.T.copy() if transpose_a else a,
                                   b.T.copy() if transpose_b else b],
                        {"transpose_a": transpose_a, "transpose_b": transpose_b})
    np.testing.assert_array_equal(on_gpu, a @ b)


def test_matmul_grid_strides_over_tiles_and_batches_beyond_the_grid(monkeypatch):
    # the largest grid a launch may use, made 1 block in y and z: each block loops over the
    # row tiles and the batch elements
    monkeypatch.setattr(tiles, "MAX_GRID_YZ", 1)
    rng = np.random.default_rng(1)
    a, b = values(rng, (3, 66, 2), np.int32), values(rng, (1, 2, 3), np.int32)
    on_gpu, _ = on_both("matmul", [a, b.swapaxes(-1, -2).copy()],
                        {"transpose_a": False, "transpose_b": True})
    np.testing.assert_array_equal(on_gpu, a @ b)


def test_matmul_of_a_batch_with_one_matrix_is_one_product():
    # a sequence through a Dense kernel: a (2, 3, 4) @ b (4, 5) and b (1, 4, 5)
    rng = np.random.default_rng(2)
    a = values(rng, (2, 3, 4), np.float32)
    for b in (values(rng, (4, 5), np.float32), values(rng, (1, 4, 5), np.float32)):
        on_gpu, on_cpu = on_both("matmul", [a, b], {"transpose_a": False, "transpose_b": False})
        assert_same(on_gpu, on_cpu)


def test_batch_layout_merges_dimensions_that_step_alike():
    assert cuda_linalg.batch_layout((), ()) == ((1,), (0,), (0,))
    assert cuda_linalg.batch_layout((2, 3), (2, 3)) == ((6,), (1,), (1,))
    assert cuda_linalg.batch_layout((2, 1, 3), (1, 4, 3)) == ((2, 4, 3), (3, 0, 1), (0, 3, 1))
    assert cuda_linalg.batch_layout((5,), ()) == ((5,), (1,), (0,))


# ---- matmul: cuBLAS or the tiled kernel ---------------------------------------------------------
class FakeCupy:
    """Stands in for CuPy: its arrays are host copies, and it records the products asked."""
    __version__ = "0.fake"

    def __init__(self):
        self.products = []

    def asarray(self, device_array):
        return device_array.copy_to_host()

    def matmul(self, x, y):
        self.products.append((x.shape, y.shape, x.dtype))
        return np.matmul(x, y)


@pytest.fixture
def fake_cupy(monkeypatch):
    # A real CuPy array comes back through numba.cuda.as_cuda_array (not in the simulator).
    monkeypatch.setattr(cuda, "as_cuda_array", lambda array: cuda.to_device(array),
                        raising=False)
    return FakeCupy()


def test_float_products_go_to_cublas_when_cupy_is_there(fake_cupy, caplog):
    library = cuda_linalg.GemmLibrary(fake_cupy)
    rng = np.random.default_rng(3)
    a, b = values(rng, (2, 4, 3), np.float32), values(rng, (5, 3), np.float32)
    with caplog.at_level(logging.INFO, logger="hybridtf.cuda"):
        out = library.matmul(cuda.to_device(a), cuda.to_device(b), False, True)
        library.matmul(cuda.to_device(b), cuda.to_device(b), True, False)
    np.testing.assert_allclose(out.copy_to_host(), a @ b.T, rtol=1e-6)
    # the operands as cuBLAS sees them: transposes as swapped axes, not copies
    assert fake_cupy.products == [((2, 4, 3), (3, 5), np.float32), ((3, 5), (5, 3), np.float32)]
    records = [r for r in caplog.records if r.name == "hybridtf.cuda"]
    assert len(records) == 1 and "cuBLAS through CuPy 0.fake" in records[0].getMessage()


def test_integer_products_stay_on_the_tiled_kernel(fake_cupy):
    library = cuda_linalg.GemmLibrary(fake_cupy)
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = library.matmul(cuda.to_device(a), cuda.to_device(a), False, True)
    np.testing.assert_array_equal(out.copy_to_host(), a @ a.T)
    assert fake_cupy.products == []


def test_without_cupy_every_product_is_tiled_and_said_so(caplog):
    library = cuda_linalg.GemmLibrary(None)
    a = np.ones((2, 2), np.float64)
    with caplog.at_level(logging.INFO, logger="hybridtf.cuda"):
        out = library.matmul(cuda.to_device(a), cuda.to_device(a))
    np.testing.assert_array_equal(out.copy_to_host(), a @ a)
    messages = [r.getMessage() for r in caplog.records if r.name == "hybridtf.cuda"]
    assert len(messages) == 1 and "tiled CUDA kernel" in messages[0]
    if ON_SIMULATOR:   # there is no GPU for cuBLAS under the simulator, installed or not
        assert cuda_linalg.GEMMS.cupy is None


@pytest.mark.skipif(ON_SIMULATOR or cuda_linalg.cupy is None,
                    reason="cuBLAS needs a real GPU and CuPy (the 'cuda' extra)")
def test_cublas_and_the_tiled_kernel_agree_on_a_real_gpu():
    rng = np.random.default_rng(4)
    a, b = values(rng, (3, 130, 70), np.float32), values(rng, (90, 70), np.float32)
    da, db = cuda.to_device(a), cuda.to_device(b)
    by_cublas = cuda_linalg.cublas_matmul(cuda_linalg.cupy, da, db, False, True).copy_to_host()
    tiled = cuda_linalg.tiled_matmul(da, db, False, True).copy_to_host()
    np.testing.assert_allclose(by_cublas, a @ b.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tiled, a @ b.T, rtol=1e-4, atol=1e-4)


# ---- conv2d and its gradients -------------------------------------------------------------------
def conv_attrs(strides, padding, dilations):
    return {"strides": strides, "padding": padding, "dilations": dilations}


def check_conv(x, w, strides, padding, dilations, seed=0):
    """conv2d, conv2d_backprop_input and conv2d_backprop_filter on the GPU against the CPU, and
    the forward pass against the NumPy reference."""
    attrs = conv_attrs(strides, padding, dilations)
    y, y_cpu = on_both("conv2d", [x, w], attrs)
    assert_same(y, y_cpu)
    np.testing.assert_allclose(y, conv2d_ref(x, w, strides, padding, dilations), **tol(x.dtype))
    dy = values(np.random.default_rng(seed), y.shape, x.dtype)
    dx, dx_cpu = on_both("conv2d_backprop_input", [w, dy],
                         dict(attrs, input_shape=x.shape))
    assert_same(dx, dx_cpu)
    dw, dw_cpu = on_both("conv2d_backprop_filter", [x, dy], dict(attrs, filter_shape=w.shape))
    assert_same(dw, dw_cpu)


@settings(max_examples=4, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]), n=st.integers(1, 2),
       size=st.tuples(st.integers(1, 4), st.integers(1, 4)), cin=st.integers(1, 3),
       cout=st.integers(1, 3), window=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       dilations=st.sampled_from([(1, 1), (2, 1), (1, 2)]),
       padding=st.sampled_from(["SAME", "VALID"]), seed=st.integers(0, 2 ** 16))
def test_conv2d_and_its_gradients_match_the_cpu(dtype, n, size, cin, cout, window, strides,
                                                dilations, padding, seed):
    reach = [(k - 1) * d + 1 for k, d in zip(window, dilations)]
    if padding == "VALID" and any(r > s for r, s in zip(reach, size)):
        padding = "SAME"      # the window must fit a VALID input
    rng = np.random.default_rng(seed)
    check_conv(values(rng, (n, *size, cin), dtype), values(rng, (*window, cin, cout), dtype),
               strides, padding, dilations, seed)


@pytest.mark.parametrize("x_shape,w_shape,strides,padding,dilations", [
    # SAME with odd sizes and a stride: the odd padding cell goes after
    ((1, 5, 3, 2), (2, 2, 2, 1), (2, 2), "SAME", (1, 1)),
    # dilation under SAME padding
    ((2, 4, 4, 1), (3, 2, 1, 2), (1, 1), "SAME", (2, 2)),
    # strides and dilation together, VALID
    ((1, 5, 5, 3), (2, 2, 3, 1), (2, 1), "VALID", (2, 1)),
])
def test_conv2d_padding_strides_and_dilations(x_shape, w_shape, strides, padding, dilations):
    rng = np.random.default_rng(5)
    check_conv(values(rng, x_shape, np.float64), values(rng, w_shape, np.float64), strides,
               padding, dilations)


def test_conv2d_over_several_tiles_and_slabs():
    # 2*6*6 = 72 output (and input) rows: two tiles; 3*3*3 = 27 taps: two slabs (the filter
    # gradient: 27 rows, the 72 outputs in five slabs)
    rng = np.random.default_rng(6)
    check_conv(values(rng, (2, 6, 6, 3), np.float32), values(rng, (3, 3, 3, 2), np.float32),
               (1, 1), "SAME", (1, 1))


def test_the_filter_gradient_adds_its_parts_in_order(monkeypatch):
    # parts of 16 outputs: 2*4*5 = 40 outputs in 3 parts, added up by a second kernel
    monkeypatch.setattr(cuda_conv, "_MIN_PART_OUTPUTS", 16)
    rng = np.random.default_rng(7)
    x, dy = values(rng, (2, 4, 5, 2), np.float64), values(rng, (2, 4, 5, 3), np.float64)
    attrs = dict(conv_attrs((1, 1), "SAME", (1, 1)), filter_shape=(3, 2, 2, 3))
    dw, dw_cpu = on_both("conv2d_backprop_filter", [x, dy], attrs)
    assert_same(dw, dw_cpu)


@pytest.mark.parametrize("x_shape,w_shape", [
    ((0, 4, 4, 2), (2, 2, 2, 3)),     # no images
    ((1, 4, 4, 0), (2, 2, 0, 3)),     # no input channels: zeros
    ((1, 3, 3, 2), (2, 2, 2, 0)),     # no filters
])
def test_conv2d_with_empty_dimensions(x_shape, w_shape):
    rng = np.random.default_rng(8)
    check_conv(values(rng, x_shape, np.float32), values(rng, w_shape, np.float32), (1, 1),
               "SAME", (1, 1))


# ---- pooling ------------------------------------------------------------------------------------
@st.composite
def pool_cases(draw):
    n = draw(st.integers(0, 2))
    size = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    ksize = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if padding == "VALID" and (ksize[0] > size[0] or ksize[1] > size[1]):
        padding = "SAME"
    return ((n, *size, draw(st.integers(1, 3))), ksize,
            (draw(st.integers(1, 2)), draw(st.integers(1, 2))), padding,
            draw(st.sampled_from([np.float32, np.float64])), draw(st.integers(0, 2 ** 16)))


def check_pooling(x, ksize, strides, padding, seed=0):
    """The five pooling ops on the GPU: the CPU's results exactly (the same sums in the same
    order), and the NumPy references."""
    rng = np.random.default_rng(seed)
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    y, y_cpu = on_both("max_pool2d", [x], attrs)
    assert_same(y, y_cpu, exact=True)
    np.testing.assert_array_equal(y, max_pool_ref(x, ksize, strides, padding))
    dy = values(rng, y.shape, x.dtype)
    dx, dx_cpu = on_both("max_pool2d_grad", [x, y, dy], attrs)
    assert_same(dx, dx_cpu, exact=True)
    np.testing.assert_allclose(dx, max_pool_grad_ref(x, dy, ksize, strides, padding),
                               **tol(x.dtype))
    ddx = values(rng, x.shape, x.dtype)
    gg, gg_cpu = on_both("max_pool2d_grad_grad", [x, y, ddx], attrs)
    assert_same(gg, gg_cpu, exact=True)
    a, a_cpu = on_both("avg_pool2d", [x], attrs)
    assert_same(a, a_cpu, exact=True)
    np.testing.assert_allclose(a, avg_pool_ref(x, ksize, strides, padding), **tol(x.dtype))
    da, da_cpu = on_both("avg_pool2d_grad", [dy], dict(attrs, input_shape=x.shape))
    assert_same(da, da_cpu, exact=True)


@FEW
@given(pool_cases())
def test_pooling_and_its_gradients_match_the_cpu(case):
    shape, ksize, strides, padding, dtype, seed = case
    # small integers: many ties, which the gradient must route to the first maximum
    x = np.random.default_rng(seed).integers(-2, 3, shape).astype(dtype)
    check_pooling(x, ksize, strides, padding, seed)


def test_max_pooling_lets_the_first_nan_win():
    x = np.arange(2 * 4 * 4, dtype=np.float32).reshape(1, 4, 4, 2)
    x[0, 1, 1, 0] = x[0, 2, 2, 0] = np.nan
    x[0, 0, 3, 1] = -np.inf
    check_pooling(x, (3, 3), (1, 1), "SAME")
    y, _ = on_both("max_pool2d", [x], {"ksize": (3, 3), "strides": (1, 1), "padding": "SAME"})
    assert np.isnan(y[0, 0, 0, 0]) and not np.isnan(y[0, 0, 0, 1])


# ---- through the public API on the (simulated) GPU --------------------------------------------
def test_a_small_cnn_and_its_gradients_run_on_the_gpu(gpu):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4, 4, 1)).astype(np.float32)
    w = rng.standard_normal((3, 3, 1, 2)).astype(np.float32)
    dense = rng.standard_normal((8, 3)).astype(np.float32)
    upstream = rng.standard_normal((2, 3)).astype(np.float32)

    def logits_and_grads():
        xs, ws, ds = tf.constant(x), tf.Variable(w), tf.Variable(dense)
        with tf.GradientTape() as tape:
            h = tf.nn.conv2d(xs, ws, strides=1, padding="SAME")
            h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="SAME")
            h = tf.nn.avg_pool2d(h, ksize=2, strides=1, padding="SAME")
            logits = tf.matmul(tf.reshape(h, [2, 8]), ds)
        grads = tape.gradient(logits, [ws, ds], output_gradients=tf.constant(upstream))
        return (h, logits) + tuple(grads)

    on_gpu = logits_and_grads()
    assert all(t.device.endswith("GPU:0") for t in on_gpu)
    with tf.device("/CPU:0"):
        on_cpu = logits_and_grads()
    for g, c in zip(on_gpu, on_cpu):
        np.testing.assert_allclose(g.numpy(), c.numpy(), rtol=1e-4, atol=1e-4)
