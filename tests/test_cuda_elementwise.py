"""The CUDA kernels of the elementwise ops, cast, fill_like, broadcast_to, broadcast_like and range
(Numba's CUDA simulator stands in for a GPU): each registry entry's "cuda" kernel on device
arrays gives the "cpu" kernel's result -- same shape and dtype, the same values (exactly for
integers and bools) -- for every dtype the op supports, with broadcasting, rank 0 and size 0;
and the value checks that guard some of them work on device arrays."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from numba import cuda
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

import hybridtf as tf
from hybridtf.framework import cuda_device
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.registry import OPS
from ops import elementwise
from ops.cuda import elementwise as cuda_elementwise
from ops.cuda import scalar

FEW = settings(max_examples=6, deadline=None)
ELEMENTWISE = sorted(name for name, op in OPS.items() if op.kind == "elementwise")
# Every (op, dtype) the CPU kernels support.
OP_DTYPES = [(name, dtype) for name in ELEMENTWISE for dtype in OPS[name].scalar.dtypes]
ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"]


def on_both(name, arrays, attrs=None):
    """(the "cuda" kernel's result copied to the host, the "cpu" kernel's) of op ``name``."""
    kernels = OPS[name].kernels
    on_gpu = kernels["cuda"].run([cuda.to_device(np.asarray(a)) for a in arrays], attrs)
    assert isinstance(on_gpu, cuda_device.BACKEND.array_types) and on_gpu.is_c_contiguous()
    return on_gpu.copy_to_host(), np.asarray(kernels["cpu"].run(list(arrays), attrs))


def assert_same(on_gpu, on_cpu):
    assert on_gpu.shape == on_cpu.shape and on_gpu.dtype == on_cpu.dtype
    if on_cpu.dtype.kind in "iub":
        np.testing.assert_array_equal(on_gpu, on_cpu)
    else:   # the GPU's math library may differ in the last place (NaNs compare equal)
        rtol = {2: 1e-3, 4: 2e-6, 8: 1e-14, 16: 1e-14}[on_cpu.dtype.itemsize]
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=rtol, atol=rtol)


def values(name, position, shape, dtype, rng):
    """Random values of ``dtype`` in op ``name``'s domain for input ``position``: the whole
    range for integers (small exponents and nonzero divisors where the op needs them), and for
    floats normal values mixed with 0, -0, +-inf and NaN."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if name == "power" and position == 1:
            return rng.integers(0, 4, shape).astype(dtype)
        x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
        if name in ("floordiv", "floormod") and position == 1:
            x[x == 0] = 1
        return x
    if name == "polygamma" and position == 0:
        return rng.integers(0, 4, shape).astype(dtype)   # orders
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = x.reshape(-1)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)
    chosen = rng.random(flat.size) < 0.2
    flat[chosen] = rng.choice(specials, chosen.sum())
    return x


def op_inputs(name, dtype, shapes, rng):
    arrays = [values(name, j, shape, dtype, rng) for j, shape in enumerate(shapes)]
    if name == "select":
        arrays[0] = rng.integers(0, 2, shapes[0]).astype(bool)
    return arrays


def test_every_elementwise_op_has_a_cuda_kernel():
    assert len(ELEMENTWISE) == 53
    assert all("cuda" in OPS[name].kernels for name in ELEMENTWISE)


@pytest.mark.parametrize("name, dtype", OP_DTYPES)
def test_each_op_and_dtype_matches_the_cpu(name, dtype):
    # A column against a row (the strided kernel) for a binary op, and a 3x5 matrix (the flat
    # kernel) for a unary one.
    arity = OPS[name].scalar.arity
    shapes = [(3, 5)] if arity == 1 else [(3, 1), (1, 5), (5,)][:arity]
    rng = np.random.default_rng(sum(map(ord, name + dtype)))
    on_gpu, on_cpu = on_both(name, op_inputs(name, dtype, shapes, rng))
    assert_same(on_gpu, on_cpu)


# Every way an input is read: the output's shape (flat), one element (a scalar, read once), or
# by its strides (broadcast), in every position.
FORMS = {"f": (2, 3), "s": (), "b": (3,)}


@pytest.mark.parametrize("name, dtype", [("subtract", "int16"), ("select", "float32"),
                                         ("floordiv", "float16"), ("greater", "uint8")])
def test_every_form_of_input(name, dtype):
    arity = OPS[name].scalar.arity
    rng = np.random.default_rng(3)
    for forms in itertools.product("fsb", repeat=arity):
        shapes = [FORMS[form] for form in forms]
        on_gpu, on_cpu = on_both(name, op_inputs(name, dtype, shapes, rng))
        assert_same(on_gpu, on_cpu)


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                                min_side=0, max_side=4),
       name=st.sampled_from(["add", "floordiv", "squared_difference", "less", "select"]),
       dtype=st.sampled_from(["int8", "uint16", "float16", "float32", "float64"]),
       seed=st.integers(0, 2 ** 16))
def test_broadcasting_as_numpy(shapes, name, dtype, seed):
    arity = OPS[name].scalar.arity
    arrays = op_inputs(name, dtype, shapes.input_shapes[:arity], np.random.default_rng(seed))
    on_gpu, on_cpu = on_both(name, arrays)
    assert on_gpu.shape == np.broadcast_shapes(*shapes.input_shapes[:arity])
    assert_same(on_gpu, on_cpu)


def test_rank_0_and_size_0():
    for shapes in [((), ()), ((0, 3), (3,)), ((2, 0), ()), ((0,), (1,))]:
        arrays = [np.ones(s, np.float32) for s in shapes]
        on_gpu, on_cpu = on_both("multiply", arrays)
        assert_same(on_gpu, on_cpu)
    on_gpu, on_cpu = on_both("is_nan", [np.float64(np.nan)])
    assert on_gpu.shape == () and on_gpu.dtype == bool and on_gpu[()]


def test_integer_results_wrap_in_the_inputs_dtype():
    x = np.array([100, -128, 127], np.int8)
    on_gpu, _ = on_both("add", [x, x])
    np.testing.assert_array_equal(on_gpu, np.array([-56, 0, -2], np.int8))
    on_gpu, _ = on_both("multiply", [np.array([2 ** 63 - 1], np.uint64), np.uint64(3)])
    assert on_gpu.dtype == np.uint64 and on_gpu[0] == np.uint64(2 ** 63 - 3)


def test_float16_is_computed_in_float32_and_rounded_like_the_cpu():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(64) * 20).astype(np.float16)
    y = (rng.standard_normal(64) + 0.5).astype(np.float16)
    for name in ("divide", "floordiv", "squared_difference", "exp"):
        args = [x, y][:OPS[name].scalar.arity]
        on_gpu, on_cpu = on_both(name, args)
        assert on_gpu.dtype == np.float16
        np.testing.assert_array_equal(on_gpu, on_cpu)
    # floor(x / y) of the rounded quotient, as the CPU: here it differs from the exact one.
    on_gpu, _ = on_both("floordiv", [np.float16([2049.0]), np.float16([2049.0 / 2048])])
    assert on_gpu[0] == np.floor(np.float16(2049.0 / np.float16(2049.0 / 2048)))


def test_the_broadcast_dimensions_are_merged():
    assert cuda_elementwise._merged_strides((2, 3, 4), [(2, 3, 4), (4,)]) == \
        ((6, 4), [(4, 1), (0, 1)])
    assert cuda_elementwise._merged_strides((5, 1, 6), [(5, 1, 1), (1, 6)]) == \
        ((5, 6), [(1, 0), (0, 1)])


# ---- the scalar functions on the GPU ------------------------------------------------------------
def test_scalar_functions_run_as_defined_unless_they_call_a_cpu_only_kernel():
    assert scalar.device_function(elementwise.add) is elementwise.add
    assert scalar.device_function(elementwise.digamma) is elementwise.digamma
    rebuilt = scalar.device_function(elementwise.polygamma)
    assert rebuilt is not elementwise.polygamma
    assert rebuilt.py_func.__globals__["_cot_derivative"] is scalar._cot_derivative


def test_polygamma_reflects_far_negative_arguments_without_allocating():
    # x <= -1e5 takes the reflection, whose polynomial lives in local arrays on a GPU.
    n = np.array([1.0, 2.0, 3.0, 6.0, 0.0, 4.0])
    x = np.array([-1e5 - 0.5, -2e5 - 0.25, -1e5 - 0.75, -3e5 - 0.1, -1e5 - 0.3, 2.5])
    on_gpu, on_cpu = on_both("polygamma", [n, x])
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-12)


# ---- the value checks on device arrays ---------------------------------------------------------
class DeviceOnlyArray(FakeCUDAArray):
    """A simulated device array that, like a GPU's, has no elementwise host operations."""

    def __eq__(self, other):
        return NotImplemented

    __lt__ = __le__ = __gt__ = __ge__ = __ne__ = __eq__
    __hash__ = None


def device_only(array):
    array = np.ascontiguousarray(array)
    return DeviceOnlyArray(array) if cuda_device.SIMULATED else cuda.to_device(array)


@pytest.mark.parametrize("name", ["floordiv", "floormod"])
def test_integer_division_by_zero_is_rejected_on_device_arrays(name):
    x = device_only(np.arange(4, dtype=np.int32))
    OPS[name].check_values([x, device_only(np.array([1, 2, -3, 4], np.int32))], None)
    with pytest.raises(InvalidArgumentError, match="division by zero"):
        OPS[name].check_values([x, device_only(np.array([1, 0, 2, 3], np.int32))], None)
    OPS[name].check_values([device_only(np.ones(2, np.float32)),
                            device_only(np.zeros(2, np.float32))], None)


def test_negative_integer_exponents_are_rejected_on_device_arrays():
    x = device_only(np.arange(3, dtype=np.int64))
    OPS["power"].check_values([x, device_only(np.array([0, 2, 5], np.int64))], None)
    OPS["power"].check_values([device_only(np.ones(2, np.uint8)),
                               device_only(np.array([0, 255], np.uint8))], None)
    with pytest.raises(InvalidArgumentError, match="negative integer powers"):
        OPS["power"].check_values([x, device_only(np.array([1, -1, 2], np.int64))], None)


def test_an_empty_divisor_passes_the_check():
    assert not cuda_elementwise.any_in_range(cuda.to_device(np.zeros(0, np.int8)), 0, 0)


# ---- cast, fill_like, broadcast_to, broadcast_like, range ----------------------------------------
def cast_source(src, dst):
    """Values of dtype ``src`` that ``dst`` holds after NumPy's conversion, defined behaviour:
    small magnitudes, fractions where ``src`` has them, negatives where both are signed."""
    src, dst = np.dtype(src), np.dtype(dst)
    base = np.array([0.0, 1.0, 2.5, 7.75, 100.0, 0.0078125, 126.5])
    if src.kind in "ifc" and dst.kind in "ifcb":
        base = np.concatenate([base, -base[1:]])
    if src.kind == "b":
        base = np.array([0.0, 1.0, 1.0, 0.0])
    x = base.astype(src) if src.kind != "c" else (base + 1j * base[::-1]).astype(src)
    return x.reshape(2, -1) if x.size % 2 == 0 else x


@pytest.mark.parametrize("src", ALL_DTYPES)
def test_cast_between_every_pair_of_dtypes(src):
    for dst in ALL_DTYPES:
        on_gpu, on_cpu = on_both("cast", [cast_source(src, dst)], {"dtype": np.dtype(dst)})
        assert on_gpu.dtype == np.dtype(dst)
        np.testing.assert_array_equal(on_gpu, on_cpu)


def test_cast_rounds_to_float16_and_keeps_special_values():
    x = np.array([0.1, 65504.0, 70000.0, np.nan, -np.inf, -0.0, 1e-8], np.float64)
    on_gpu, on_cpu = on_both("cast", [x], {"dtype": np.dtype(np.float16)})
    np.testing.assert_array_equal(on_gpu, on_cpu)
    assert np.signbit(on_gpu[5])
    on_gpu, on_cpu = on_both("cast", [np.array([np.nan, 0.0, -0.0, 2.0], np.float16)],
                             {"dtype": np.dtype(bool)})
    np.testing.assert_array_equal(on_gpu, [True, False, False, True])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_fill_like(dtype):
    value = {"b": True, "c": 1.5 - 2j}.get(np.dtype(dtype).kind, 0.1 if dtype[0] == "f" else 7)
    for shape in [(2, 3), (), (0, 4)]:
        on_gpu, on_cpu = on_both("fill_like", [np.zeros(shape, np.float32)],
                                 {"value": value, "dtype": np.dtype(dtype)})
        assert on_gpu.shape == shape
        np.testing.assert_array_equal(on_gpu, on_cpu)


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                min_side=0, max_side=4),
       dtype=st.sampled_from(["bool", "int16", "float16", "float64", "complex64"]),
       seed=st.integers(0, 2 ** 16))
def test_broadcast_to_and_broadcast_like(shapes, dtype, seed):
    x = np.random.default_rng(seed).integers(-5, 5, shapes.input_shapes[0]).astype(dtype)
    target = shapes.result_shape
    on_gpu, on_cpu = on_both("broadcast_to", [x], {"shape": target})
    assert on_gpu.shape == target
    np.testing.assert_array_equal(on_gpu, on_cpu)
    on_gpu, on_cpu = on_both("broadcast_like", [x, np.zeros(target, np.int8)])
    np.testing.assert_array_equal(on_gpu, on_cpu)


def test_broadcast_to_from_one_element():
    for shape, target in [((), (4,)), ((1,), (2, 3)), ((1, 1), (3, 1, 2))]:
        on_gpu, on_cpu = on_both("broadcast_to", [np.full(shape, 2.5)], {"shape": target})
        np.testing.assert_array_equal(on_gpu, on_cpu)
        assert on_gpu.shape == target


@pytest.mark.parametrize("bounds, dtype", [
    ((0, 10, 1), "int32"), ((5, -7, -3), "int64"), ((3, 3, 1), "int32"), ((0, 1, 0.1), "float32"),
    ((-2.5, 2, 0.3), "float64"), ((1, 0.0, -0.125), "float16"), ((0, 7, 2), "float64"),
    ((0.5, 6, 1), "int16"), ((250, 260, 3), "uint8")])
def test_range(bounds, dtype):
    attrs = {"dtype": np.dtype(dtype)}
    on_gpu, on_cpu = on_both("range", [np.asarray(b) for b in bounds], attrs)
    assert on_gpu.shape == on_cpu.shape and on_gpu.dtype == on_cpu.dtype
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-15)


def test_range_rejects_a_zero_delta_before_any_kernel():
    with pytest.raises(InvalidArgumentError, match="delta must not be zero"):
        on_both("range", [np.asarray(0), np.asarray(5), np.asarray(0)], {"dtype": np.int32})


def test_tensors_on_the_gpu_use_these_kernels(gpu):
    # Eagerly, through the public API, with the ops placed on the simulated GPU.
    with tf.device("/GPU:0"):
        x = tf.constant([[1.0, -2.0, 3.0]])
        y = tf.constant([[0.5], [2.0]])
        z = tf.cast(tf.maximum(x * y, 0.0), tf.int32) + tf.range(3)
    assert "GPU" in z.device
    np.testing.assert_array_equal(z.numpy(), [[0, 1, 3], [2, 1, 8]])
