"""The CUDA kernels of the array ops and the random ops (Numba's CUDA simulator stands in for a
GPU): each registry entry's "cuda" kernel on device arrays gives the "cpu" kernel's result --
exactly, as these ops move elements or draw the same Philox streams -- for every dtype, with
broadcasts, empty and rank-0 arrays; value checks read indices held on the device; and seeded
draws placed on the GPU equal those on the CPU."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numba import cuda

import hybridtf as tf
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.registry import OPS
from ops import random as cpu_random
from ops.cuda import array as cuda_array
from ops.cuda import random as cuda_random
from ops.cuda.launch import SIMULATED

FEW = settings(max_examples=6, deadline=None)
DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.uint16,
          np.bool_, np.complex64, np.complex128]
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@pytest.fixture(autouse=True, scope="module")
def few_threads_per_block():
    # Blocks of 32 threads, while ``blocks_for`` counts blocks of 256: every kernel's
    # grid-strided loop then takes several elements per thread (and the simulator, which runs
    # each thread as a Python thread, is faster).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuda_array, "THREADS", 32)
        patch.setattr(cuda_random, "THREADS", 32)
        yield


def device(a):
    # (np.ascontiguousarray would make a 0-d array 1-d)
    return cuda.to_device(np.require(a, requirements="C"))


def on_both(name, arrays, attrs):
    """(the "cuda" kernel's results copied to the host, the "cpu" kernel's) of op ``name``,
    each a list of arrays."""
    kernels = OPS[name].kernels
    on_gpu = kernels["cuda"].run([device(a) for a in arrays], attrs)
    on_cpu = kernels["cpu"].run([np.asarray(a) for a in arrays], attrs)
    on_gpu = list(on_gpu) if isinstance(on_gpu, tuple) else [on_gpu]
    on_cpu = list(on_cpu) if isinstance(on_cpu, tuple) else [on_cpu]
    for a in on_gpu:
        assert a.is_c_contiguous()
    return [a.copy_to_host() for a in on_gpu], [np.asarray(a) for a in on_cpu]


def assert_same(name, arrays, attrs, want=None):
    """The op's CUDA and CPU kernels agree exactly (and with ``want``, a list, if given)."""
    on_gpu, on_cpu = on_both(name, arrays, attrs)
    assert len(on_gpu) == len(on_cpu)
    for g, c in zip(on_gpu, on_cpu):
        assert g.shape == c.shape and g.dtype == c.dtype
        np.testing.assert_array_equal(g, c)
    if want is not None:
        for g, w in zip(on_gpu, want):
            assert g.shape == np.shape(w)
            np.testing.assert_array_equal(g, w)
    return on_gpu


def values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ---- shapes: reshape, squeeze -----------------------------------------------------------------
@FEW
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_reshape_is_a_contiguous_view(shape, dtype, seed, data):
    x = values(np.random.default_rng(seed), shape, dtype)
    target = list(data.draw(st.permutations(list(shape) + [1])))
    if target and data.draw(st.booleans()) and x.size:
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    assert_same("reshape", [x], {"shape": target}, [x.reshape(target)])
    stored = device(x)
    out = OPS["reshape"].kernels["cuda"].run([stored], {"shape": target})
    if x.size:   # a view: writing it writes the input
        out.reshape(out.size)[0:1] = np.ones(1, dtype)
        assert stored.copy_to_host().reshape(-1)[0] == 1


@pytest.mark.parametrize("shape,axes", [((1, 3, 1), None), ((1, 3, 1), (0,)), ((1, 3, 1), (2,)),
                                        ((1,), None), ((), None), ((0, 1), (1,)), ((2, 3), ())])
def test_squeeze(shape, axes):
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    want = np.squeeze(x, axes)
    assert_same("squeeze", [x], {"axes": axes}, [want])


# ---- copies: transpose, reverse, tile, pad, concat, split ---------------------------------
@FEW
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_transpose(shape, dtype, seed, data):
    x = values(np.random.default_rng(seed), shape, dtype)
    perm = data.draw(st.permutations(range(len(shape))))
    perm = [p - len(shape) if data.draw(st.booleans()) else p for p in perm]  # TF's negatives
    assert_same("transpose", [x], {"perm": perm}, [np.transpose(x, perm)])
    assert_same("transpose", [x], {"perm": None}, [x.T])


@pytest.mark.parametrize("shape,perm", [
    ((40, 33), (1, 0)), ((2, 20, 35), (0, 2, 1)), ((17, 3, 18), (2, 1, 0)),
    ((3, 18, 2, 20), (3, 1, 0, 2)), ((33, 16), (1, 0))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_transposes_through_shared_memory_tiles(shape, perm, dtype):
    # Both moved axes are long: the tiled kernel, with partial tiles and batch dimensions.
    x = values(np.random.default_rng(0), shape, dtype)
    assert_same("transpose", [x], {"perm": list(perm)}, [np.transpose(x, perm)])


def test_copies_stride_over_a_grid_smaller_than_the_work(monkeypatch):
    monkeypatch.setattr(cuda_array, "blocks_for", lambda n, threads=None: 1)
    x = values(np.random.default_rng(1), (5, 40, 36), np.float32)
    assert_same("transpose", [x], {"perm": [0, 2, 1]}, [x.transpose(0, 2, 1)])
    assert_same("tile", [x[:2, :3]], {"multiples": [3, 40, 1]}, [np.tile(x[:2, :3], [3, 40, 1])])
    ids = np.arange(200) % 7 - 1
    assert_same("unsorted_segment_sum", [np.ones((200, 3), np.int32), ids],
                {"num_segments": 6}, [np.bincount(ids[ids >= 0], minlength=6)[:, None] *
                                      np.ones(3, np.int32)])


@FEW
@given(shape=nonempty_shapes | shapes, dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2 ** 16), data=st.data())
def test_reverse(shape, dtype, seed, data):
    x = values(np.random.default_rng(seed), shape, dtype)
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a: a %
                              len(shape), max_size=len(shape))) if shape else []
    assert_same("reverse", [x], {"axis": axes}, [np.flip(x, tuple(axes)) if axes else x])


@FEW
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_tile(shape, dtype, seed, data):
    x = values(np.random.default_rng(seed), shape, dtype)
    multiples = data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape)))
    assert_same("tile", [x], {"multiples": multiples}, [np.tile(x, multiples)])


@FEW
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_pad(shape, dtype, seed, data):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    paddings = [[data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))] for _ in shape]
    constant = values(rng, (), dtype).item()
    want = np.pad(x, paddings, constant_values=constant) if shape else x
    assert_same("pad", [x], {"paddings": paddings, "constant_values": constant}, [want])


@FEW
@given(shape=nonempty_shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_concat_and_split(shape, dtype, seed, data):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    widths = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    parts = []
    for w in widths:
        part_shape = list(shape)
        part_shape[axis] = w
        parts.append(values(rng, part_shape, dtype))
    joined, = assert_same("concat", parts, {"axis": axis}, [np.concatenate(parts, axis)])
    sizes = list(widths)
    if data.draw(st.booleans()):
        sizes[data.draw(st.integers(0, len(sizes) - 1))] = -1
    assert_same("split", [joined], {"axis": axis, "sizes": sizes}, parts)
    if joined.shape[axis] % 2 == 0:
        assert_same("split", [joined], {"axis": axis, "sizes": 2},
                    np.split(joined, 2, axis))


# ---- strided slices -------------------------------------------------------------------------
def slice_specs(shape, data):
    """A normalised index (ints, slices and None over as many dimensions as it reaches)."""
    spec = []
    for d in shape[:data.draw(st.integers(0, len(shape)))]:
        if d and data.draw(st.booleans()):
            spec.append(data.draw(st.integers(-d, d - 1)))
        else:
            bound = st.none() | st.integers(-d - 2, d + 2)
            spec.append(slice(data.draw(bound), data.draw(bound),
                              data.draw(st.sampled_from([None, 1, 2, 3, -1, -2]))))
        if data.draw(st.integers(0, 3)) == 0:
            spec.append(None)
    return tuple(spec)


@FEW
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_strided_slice_and_its_gradient(shape, dtype, seed, data):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    spec = slice_specs(shape, data)
    sliced, = assert_same("strided_slice", [x], {"spec": spec}, [x[spec]])
    g = values(rng, sliced.shape, dtype)
    want = np.zeros(shape, dtype)
    want[spec] = g
    assert_same("strided_slice_grad", [g, x], {"spec": spec}, [want])


# ---- gathers and one_hot ------------------------------------------------------------------------
@FEW
@given(shape=nonempty_shapes | shapes.filter(len),
       dtype=st.sampled_from([d for d in DTYPES if d != np.float16]),   # (not on the CPU)
       index_shape=st.lists(st.integers(0, 3), max_size=2).map(tuple),
       index_dtype=st.sampled_from([np.int32, np.int64]), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_gather(shape, dtype, index_shape, index_dtype, seed, data):
    rng = np.random.default_rng(seed)
    params = values(rng, shape, dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    indices = rng.integers(0, max(size, 1), index_shape).astype(index_dtype)
    if size == 0:
        indices = indices[..., :0] if index_shape else np.zeros((0,), index_dtype)
    assert_same("gather", [params, indices], {"axis": axis},
                [np.take(params, indices, axis=axis)])


def test_gather_of_float16():
    # (the CPU kernel has no float16: the reference is NumPy's)
    params = values(np.random.default_rng(0), (3, 4), np.float16)
    indices = np.array([[3, 0], [1, 1]])
    got = OPS["gather"].kernels["cuda"].run([device(params), device(indices)], {"axis": 1})
    np.testing.assert_array_equal(got.copy_to_host(), np.take(params, indices, axis=1))


def test_gather_with_batch_dims_on_the_gpu(gpu):
    params = np.arange(24.0).reshape(2, 3, 4)
    indices = np.array([[2, 0], [1, 1]])
    with tf.device("/GPU:0"):
        got = tf.gather(tf.constant(params), tf.constant(indices), axis=1, batch_dims=1)
    assert got.device.endswith("GPU:0")
    np.testing.assert_array_equal(got.numpy(), np.stack([params[b, indices[b]]
                                                         for b in range(2)]))


@FEW
@given(shape=nonempty_shapes, dtype=st.sampled_from(DTYPES), batch_dims=st.integers(0, 1),
       seed=st.integers(0, 2 ** 16), data=st.data())
def test_gather_nd(shape, dtype, batch_dims, seed, data):
    rng = np.random.default_rng(seed)
    params = values(rng, shape, dtype)
    batch_dims = min(batch_dims, len(shape) - 1)
    K = data.draw(st.integers(0, len(shape) - batch_dims))
    middle = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    dims = shape[batch_dims:batch_dims + K]
    indices = np.stack([rng.integers(0, d, shape[:batch_dims] + middle) for d in dims], -1) \
        if K else np.zeros(shape[:batch_dims] + middle + (0,), np.int64)
    T, M = int(np.prod(shape[:batch_dims])), int(np.prod(middle))
    rows = params.reshape((T,) + shape[batch_dims:])
    tuples = indices.reshape(T, M, K)
    want = np.empty((T, M) + shape[batch_dims + K:], dtype)
    for t, m in np.ndindex(T, M):
        want[t, m] = rows[t][tuple(tuples[t, m])]
    want = want.reshape(shape[:batch_dims] + middle + shape[batch_dims + K:])
    assert_same("gather_nd", [params, indices], {"batch_dims": batch_dims}, [want])


@FEW
@given(index_shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
       depth=st.integers(0, 4), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_one_hot(index_shape, depth, dtype, seed, data):
    rng = np.random.default_rng(seed)
    indices = rng.integers(-1, depth + 2, index_shape)   # some outside [0, depth): all off
    axis = data.draw(st.integers(-1, len(index_shape)))
    on, off = values(rng, (2,), dtype).tolist()
    want = np.moveaxis(np.where(indices[..., None] == np.arange(depth), on, off).astype(dtype),
                       -1, axis if axis >= 0 else len(index_shape))
    assert_same("one_hot", [indices], {"depth": depth, "on_value": on, "off_value": off,
                                       "axis": axis, "dtype": np.dtype(dtype)}, [want])


# ---- the segment sum (gather's gradient) -----------------------------------------------------
SEGMENT_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                  np.uint8, np.uint16, np.uint32, np.uint64]


@FEW
@given(dtype=st.sampled_from(SEGMENT_DTYPES), ids_shape=st.lists(st.integers(0, 4), min_size=1,
                                                                 max_size=2).map(tuple),
       tail=st.lists(st.integers(0, 3), max_size=2).map(tuple), num_segments=st.integers(0, 4),
       seed=st.integers(0, 2 ** 16))
def test_unsorted_segment_sum(dtype, ids_shape, tail, num_segments, seed):
    rng = np.random.default_rng(seed)
    data = values(rng, ids_shape + tail, dtype)
    ids = rng.integers(-1, num_segments, ids_shape)   # -1: dropped
    attrs = {"num_segments": num_segments}
    on_gpu, on_cpu = on_both("unsorted_segment_sum", [data, ids], attrs)
    want = np.zeros((num_segments,) + tail, np.float64)
    for index in np.ndindex(*ids_shape):
        if ids[index] >= 0:
            want[ids[index]] += data[index]
    got, = on_gpu
    assert got.shape == on_cpu[0].shape and got.dtype == on_cpu[0].dtype
    if np.dtype(dtype).kind in "iu":   # integers wrap as they do on the CPU
        np.testing.assert_array_equal(got, on_cpu[0])
    else:   # atomic additions: any order
        rtol = 1e-2 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=rtol)


def test_segment_ids_known_only_when_run_come_as_a_device_scalar():
    data, ids = np.ones((3, 2), np.float32), np.array([1, 0, 1])
    got = OPS["unsorted_segment_sum"].kernels["cuda"].run(
        [device(data), device(ids), device(np.array(3))], {"num_segments": None})
    np.testing.assert_array_equal(got.copy_to_host(), [[1, 1], [2, 2], [0, 0]])


# ---- value checks read indices on the device ------------------------------------------------
@pytest.mark.parametrize("name,arrays,attrs,message", [
    ("gather", [np.zeros((3, 2)), np.array([[0, 3]])], {"axis": 0},
     r"gather: indices\[0,1\] = 3 is not in \[0, 3\)"),
    ("gather", [np.zeros((3, 2)), np.array([-1])], {"axis": 1},
     r"indices\[0\] = -1 is not in \[0, 2\)"),
    ("gather_nd", [np.zeros((3, 2)), np.array([[0, 1], [2, 2]])], {"batch_dims": 0},
     r"gather_nd: indices\[1\] = \[2, 2\] does not index into params"),
    ("unsorted_segment_sum", [np.zeros((3, 2)), np.array([0, 4, -1])], {"num_segments": 4},
     r"segment_ids\[1\] = 4 is not in \[0, 4\)"),
])
def test_indices_out_of_range_are_refused_before_a_kernel_runs(name, arrays, attrs, message):
    on_device = [device(a) for a in arrays]
    with pytest.raises(InvalidArgumentError, match=message):
        OPS[name].check_values(on_device, attrs)
    OPS[name].check_values([device(arrays[0]), device(np.zeros_like(arrays[1]))], attrs)


def test_gather_out_of_range_on_the_gpu_is_an_error(gpu):
    with tf.device("/GPU:0"):
        params = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = 2 is not in \[0, 2\)"):
            tf.gather(params, tf.constant([0, 2]))


# ---- random ----------------------------------------------------------------------------------
def assert_draws_equal(on_gpu, on_cpu, name):
    assert on_gpu.shape == on_cpu.shape and on_gpu.dtype == on_cpu.dtype
    if SIMULATED or name in ("random_uniform", "random_uniform_int"):
        np.testing.assert_array_equal(on_gpu, on_cpu)   # and so bit for bit (+0.0 vs -0.0)
        np.testing.assert_array_equal(np.signbit(on_gpu), np.signbit(on_cpu))
    else:   # CUDA's log, sin and cos may differ from the host's in the last place
        np.testing.assert_array_max_ulp(on_gpu, on_cpu, maxulp=4)


@pytest.mark.parametrize("name", ["random_uniform", "random_normal", "truncated_normal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=4, deadline=None)
@given(shape=st.lists(st.integers(0, 5), max_size=3).map(tuple),
       seed=st.integers(0, 2 ** 63 - 1), counter=st.integers(0, 2 ** 63 - 1),
       scale=st.sampled_from([1.0, 2.5, -0.5, 1e-3]), shift=st.sampled_from([0.0, -1.25, 3.0]))
def test_float_draws_equal_the_cpu_draws(name, dtype, shape, seed, counter, scale, shift):
    attrs = {"shape": shape, "dtype": np.dtype(dtype), "seed": seed, "counter": counter,
             "scale": scale, "shift": shift}
    (on_gpu,), (on_cpu,) = on_both(name, [], attrs)
    assert_draws_equal(on_gpu, on_cpu, name)


@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(0, 5), max_size=3).map(tuple),
       dtype=st.sampled_from([np.int32, np.int64]), seed=st.integers(0, 2 ** 63 - 1),
       counter=st.integers(0, 2 ** 63 - 1), data=st.data())
def test_integer_draws_equal_the_cpu_draws(shape, dtype, seed, counter, data):
    info = np.iinfo(dtype)
    minval = data.draw(st.integers(int(info.min), int(info.max) - 1))
    maxval = data.draw(st.integers(minval + 1, int(info.max)))
    attrs = {"shape": shape, "dtype": np.dtype(dtype), "minval": minval, "maxval": maxval,
             "seed": seed, "counter": counter}
    (on_gpu,), (on_cpu,) = on_both("random_uniform_int", [], attrs)
    assert_draws_equal(on_gpu, on_cpu, "random_uniform_int")
    assert ((on_gpu >= minval) & (on_gpu < maxval)).all()


@pytest.mark.parametrize("name", ["random_uniform", "random_normal", "truncated_normal"])
def test_a_zero_scale_gives_positive_zeros_as_on_the_cpu(name):
    # draw * -0.0 or a negative draw * 0.0 is -0.0; adding the shift 0.0 makes it +0.0
    for scale in (0.0, -0.0):
        attrs = {"shape": (9,), "dtype": np.dtype(np.float32), "seed": 3, "counter": 4,
                 "scale": scale, "shift": 0.0}
        (on_gpu,), (on_cpu,) = on_both(name, [], attrs)
        assert not np.signbit(on_cpu).any()
        assert_draws_equal(on_gpu, on_cpu, name)


def test_truncated_normals_redraw_as_on_the_cpu():
    # A stream in which some element's first block gives two normals outside [-2, 2], so
    # that the element comes from a later block.
    n = 64

    def redraws(seed):
        key = cpu_random.key(seed, 0)
        return any(all(abs(z) > 2 for z in cpu_random.normal_2_block(i, *key)) for i in range(n))
    seed = next(s for s in range(1000) if redraws(s))
    attrs = {"shape": (n,), "dtype": np.dtype(np.float64), "seed": seed, "counter": 0,
             "scale": 1.0, "shift": 0.0}
    (on_gpu,), (on_cpu,) = on_both("truncated_normal", [], attrs)
    assert_draws_equal(on_gpu, on_cpu, "truncated_normal")
    assert (np.abs(on_gpu) <= 2).all()


def test_draws_use_the_whole_grid_and_more(monkeypatch):
    # More Philox blocks than threads: each thread takes several blocks in turn.
    monkeypatch.setattr(cuda_random, "blocks_for", lambda n, threads=None: 1)
    for name, dtype in [("random_uniform", np.float32), ("random_normal", np.float64),
                        ("truncated_normal", np.float32)]:
        attrs = {"shape": (7, 37), "dtype": np.dtype(dtype), "seed": 5, "counter": 11,
                 "scale": 2.0, "shift": 1.0}
        (on_gpu,), (on_cpu,) = on_both(name, [], attrs)
        assert_draws_equal(on_gpu, on_cpu, name)
    attrs = {"shape": (259,), "dtype": np.dtype(np.int64), "minval": -7, "maxval": 2 ** 40,
             "seed": 5, "counter": 11}
    (on_gpu,), (on_cpu,) = on_both("random_uniform_int", [], attrs)
    np.testing.assert_array_equal(on_gpu, on_cpu)


def test_seeded_draws_on_the_gpu_equal_those_on_the_cpu(gpu):
    def draws():
        tf.random.set_seed(7)
        return [tf.random.uniform((3, 5), -2.0, 3.0, seed=1),
                tf.random.normal((6,), 1.0, 2.0, dtype=tf.float64, seed=2),
                tf.random.truncated_normal((2, 3), seed=3),
                tf.random.uniform((9,), 0, 10, dtype=tf.int32, seed=4)]
    with tf.device("/GPU:0"):
        on_gpu = draws()
    with tf.device("/CPU:0"):
        on_cpu = draws()
    for g, c, name in zip(on_gpu, on_cpu, ["random_uniform", "random_normal",
                                           "truncated_normal", "random_uniform_int"]):
        assert g.device.endswith("GPU:0") and c.device.endswith("CPU:0")
        assert_draws_equal(g.numpy(), c.numpy(), name)
