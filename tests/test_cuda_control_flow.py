"""Loops and branches of decorated functions on the GPU (Numba's CUDA simulator stands in for
one): a pure ``while_loop`` or ``cond`` of small static shapes runs as one ``@cuda.jit`` kernel
of one block, with no host round trip between iterations, and gives the CPU's results; one
that does not qualify runs on the step path, node by node, with the same results."""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import hybridtf as tf
from hybridtf.compiler.cuda import loops
from hybridtf.graph import interpreter
from hybridtf.registry import OPS

# The seed's loop: tf.print showed x before each of its 17 iterations, from
SEED_X = np.array([0.207458138, 0.250728369, 0.0565127134, 0.900473475, 0.92794323],
                  np.float32)
# to its result
SEED_RESULT = np.array([0.17165123, 0.19379847, 0.05557368, 0.2870784, 0.28786382],
                       np.float32)


@pytest.fixture
def node_steps(monkeypatch):
    """The control-flow ops that ran node by node on the GPU (the step path)."""
    ran = []
    run_node = interpreter.run_node

    def spy(node, values, call_index, backend):
        if node.op.kind == "control_flow" and backend.name == "cuda":
            ran.append(node.op.name)
        return run_node(node, values, call_index, backend)

    monkeypatch.setattr(interpreter, "run_node", spy)
    return ran


def _on_both(fn, *host_args):
    """``fn`` decorated, run on the GPU and on the CPU: (GPU result, CPU result, the GPU's
    kernel source)."""
    function = tf.function(fn)
    with tf.device("/GPU:0"):
        args = [tf.constant(a) for a in host_args]
        on_gpu = function(*args)
        source = function.get_concrete_function(*args).kernel_source
    with tf.device("/CPU:0"):
        on_cpu = function(*[tf.constant(a) for a in host_args])
    return on_gpu, on_cpu, source


def _driver(source):
    return source.split("# ---- driver (Python) ----")[1]


def _assert_one_kernel(source, node_steps, op="while_loop"):
    driver = _driver(source)
    assert "= loop_" in driver and f"# {op}: one kernel" in driver, driver
    assert f"{op}(" not in driver.replace(f"# {op}:", "")
    assert node_steps == []
    assert "cuda.syncthreads()" in source and "def loop_" in source


def _assert_same(on_gpu, on_cpu, rtol=1e-6):
    on_gpu = on_gpu if isinstance(on_gpu, (list, tuple)) else [on_gpu]
    on_cpu = on_cpu if isinstance(on_cpu, (list, tuple)) else [on_cpu]
    assert len(on_gpu) == len(on_cpu)
    for a, b in zip(on_gpu, on_cpu):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.device.endswith("GPU:0")
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol)


def test_the_seed_loop_is_one_kernel(gpu, node_steps):
    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    on_gpu, on_cpu, source = _on_both(f, SEED_X)
    _assert_one_kernel(source, node_steps)
    _assert_same(on_gpu, on_cpu)
    # (the seed's start as printed, to 9 digits: its result to about 1e-6)
    np.testing.assert_allclose(on_gpu.numpy(), SEED_RESULT, rtol=1e-5)


def test_maximum_iterations_and_two_values_of_other_shapes_and_dtypes(gpu, node_steps):
    scale = tf.constant(np.array([0.5, 2.0, 1.0], np.float32))   # captured by the body

    def f(x, n):
        return tf.while_loop(lambda x, n: n < 100,
                             lambda x, n: (x * scale + 1.0, n + 2),
                             (x, n), maximum_iterations=5)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (x_gpu, n_gpu), on_cpu, source = _on_both(f, x, np.int32(1))
    _assert_one_kernel(source, node_steps)
    _assert_same([x_gpu, n_gpu], on_cpu)
    assert int(n_gpu) == 11 and n_gpu.shape == ()   # stopped by maximum_iterations
    expected = x.copy()
    for _ in range(5):
        expected = expected * np.array([0.5, 2.0, 1.0], np.float32) + 1.0
    np.testing.assert_allclose(x_gpu.numpy(), expected, rtol=1e-6)


def test_values_swapped_and_passed_through(gpu, node_steps):
    # The new value of a loop variable is another one's old value: each must be read before
    # it is overwritten.
    def f(a, b, c, d):
        return tf.while_loop(lambda a, b, c, d, i: i < 3,
                             lambda a, b, c, d, i: (b, a, c + a, d, i + 1), (a, b, c, d, 0))

    a, b, c = (np.float64(v) for v in (1.0, 10.0, 5.0))
    on_gpu, on_cpu, source = _on_both(lambda a, b, c: f(a, b, c, b), a, b, c)
    _assert_one_kernel(source, node_steps)
    _assert_same(on_gpu, on_cpu)
    assert [float(v) for v in on_gpu] == [10.0, 1.0, 17.0, 10.0, 3.0]


def test_a_loop_test_and_body_with_axis_reductions(gpu, node_steps):
    def f(x):
        def body(x):
            # (ones_like and the cast range are folded when compiled: constants of the kernel)
            centred = x - tf.reduce_mean(x, axis=0, keepdims=True) * tf.ones_like(x)
            ramp = tf.cast(tf.range(4), tf.float32) * 0.01
            return tf.reshape(tf.identity(centred * 0.9 + ramp), [3, 4])
        return tf.while_loop(
            lambda x: tf.reduce_min(tf.reduce_max(tf.abs(x), axis=1)) > 0.3, body, (x,))[0]

    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32) * 3
    on_gpu, on_cpu, source = _on_both(f, x)
    _assert_one_kernel(source, node_steps)
    _assert_same(on_gpu, on_cpu, rtol=1e-5)


def test_integer_and_bool_reductions_along_axes(gpu, node_steps):
    def f(k, flags):
        def body(k, flags):
            step = tf.reduce_prod(k % 5 + 1, axis=[0, 2], keepdims=True) % 4
            return k + step, tf.not_equal(flags, tf.reduce_all(k > 3, axis=0))
        return tf.while_loop(
            lambda k, flags: tf.logical_and(tf.reduce_sum(k) < 200, tf.reduce_any(flags)),
            body, (k, flags), maximum_iterations=20)

    k = np.arange(12, dtype=np.int32).reshape(2, 3, 2) % 4
    flags = np.array([[True, False], [False, False], [True, True]])
    on_gpu, on_cpu, source = _on_both(f, k, flags)
    _assert_one_kernel(source, node_steps)
    for a, b in zip(on_gpu, on_cpu):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("predicate", [True, False])
def test_a_cond_with_a_slice_keeps_the_step_path(gpu, node_steps, predicate):
    def f(p, x):
        return tf.cond(p, lambda: (tf.reduce_sum(x * x, axis=1), x[0, 0] * 0.0 + 1.0),
                       lambda: (tf.reduce_max(tf.exp(x), axis=1), tf.constant(2.0)))

    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    on_gpu, on_cpu, source = _on_both(f, np.bool_(predicate), x)
    _assert_same(on_gpu, on_cpu)
    expected = (x * x).sum(axis=1) if predicate else np.exp(x).max(axis=1)
    np.testing.assert_allclose(on_gpu[0].numpy(), expected, rtol=1e-6)
    assert float(on_gpu[1]) == (1.0 if predicate else 2.0)
    # (x[0, 0], a strided slice, is not native: the first branch makes it the step path)
    assert "one kernel" not in _driver(source) and node_steps == ["cond"]


@pytest.mark.parametrize("predicate", [True, False])
def test_cond_of_native_branches_is_one_kernel(gpu, node_steps, predicate):
    def f(p, x):
        return tf.cond(p, lambda: tf.reduce_sum(x * x, axis=1),
                       lambda: tf.reduce_max(tf.exp(x), axis=1) - 1.0)

    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    on_gpu, on_cpu, source = _on_both(f, np.bool_(predicate), x)
    _assert_one_kernel(source, node_steps, op="cond")
    _assert_same(on_gpu, on_cpu)
    expected = (x * x).sum(axis=1) if predicate else np.exp(x).max(axis=1) - 1.0
    np.testing.assert_allclose(on_gpu.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("start", [1.0, -1.0])
def test_a_while_nested_in_a_cond(gpu, node_steps, start):
    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0,
                       lambda: tf.while_loop(lambda y: tf.reduce_sum(y) < 50.0,
                                             lambda y: y * 2.0, (x,))[0],
                       lambda: -x)

    x = np.full(4, start, np.float32)
    on_gpu, on_cpu, source = _on_both(f, x)
    _assert_one_kernel(source, node_steps, op="cond")
    _assert_same(on_gpu, on_cpu)
    np.testing.assert_array_equal(on_gpu.numpy(), np.full(4, 16.0 if start > 0 else 1.0))


def test_a_cond_nested_in_a_while(gpu, node_steps):
    def f(x):
        def body(x, i):
            x = tf.cond(tf.reduce_sum(x) > 3.0, lambda: x * 0.5, lambda: x + 1.0)
            return x, i + 1
        return tf.while_loop(lambda x, i: i < 6, body, (x, tf.constant(0)))

    x = np.array([1.0, 2.0, 0.5], np.float32)
    on_gpu, on_cpu, source = _on_both(f, x)
    _assert_one_kernel(source, node_steps)
    _assert_same(on_gpu, on_cpu)
    expected = x.copy()
    for _ in range(6):
        expected = expected * 0.5 if expected.sum() > 3.0 else expected + 1.0
    np.testing.assert_allclose(on_gpu[0].numpy(), expected, rtol=1e-6)


def test_python_while_and_if_through_autograph(gpu, node_steps):
    def f(x, limit):
        steps = tf.constant(0)
        while tf.reduce_max(x) > limit:
            if tf.reduce_sum(x) > 10.0:
                x = x * 0.5
            else:
                x = x - 0.25
            steps += 1
        return x, steps

    x = np.array([[4.0, 3.0], [9.0, 0.5]], np.float32)
    on_gpu, on_cpu, source = _on_both(f, x, np.float32(1.0))
    _assert_one_kernel(source, node_steps)
    _assert_same(on_gpu, on_cpu)
    assert int(on_gpu[1]) > 3 and float(on_gpu[0].numpy().max()) <= 1.0


@st.composite
def _reductions(draw):
    name = draw(st.sampled_from(["sum", "mean", "max", "min", "prod", "any", "all"]))
    dtype = (np.bool_ if name in ("any", "all")
             else draw(st.sampled_from([np.float32, np.float64, np.int64, np.int32, np.int8])))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    axes = draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    # (integers up to 100: int8 sums and products wrap)
    values = np.random.default_rng(draw(st.integers(0, 99))).integers(-100, 101, shape)
    x = values > 0 if dtype is np.bool_ else values.astype(dtype)
    return name, x, axes if axes or draw(st.booleans()) else None, draw(st.booleans())


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # (the GPU made visible)
@given(case=_reductions())
@example(case=("sum", np.arange(-60, 60, 5, dtype=np.int8).reshape(2, 3, 4), [0, 2], False))
@example(case=("mean", np.arange(-7, 17, dtype=np.int32).reshape(2, 3, 4), [0, 2], True))
@example(case=("max", np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]]), [1], False))
def test_block_reductions_give_the_cpu_kernels_results(gpu, case):
    # Every reduction, along any axes (several passes where they are not adjacent), by the
    # whole block inside a branch's kernel.
    name, x, axis, keepdims = case
    reduce = getattr(tf, "reduce_" + name)
    function = tf.function(lambda p, x: tf.cond(p, lambda: reduce(x, axis, keepdims),
                                                lambda: reduce(x, axis, keepdims)))
    with tf.device("/GPU:0"):
        args = tf.constant(True), tf.constant(x)
        on_gpu = function(*args)
        assert "= loop_" in _driver(function.get_concrete_function(*args).kernel_source)
    attrs = {"axis": axis, "keepdims": keepdims}
    expected = OPS["reduce_" + name].kernels["cpu"].run([x], attrs)
    assert on_gpu.dtype == expected.dtype and on_gpu.shape == expected.shape
    np.testing.assert_allclose(on_gpu.numpy(), expected, rtol=1e-6)


def test_a_matmul_in_the_body_keeps_the_step_path(gpu, node_steps):
    w = tf.constant(np.array([[0.5, 0.1], [0.0, 0.6]], np.float32))

    def f(x):
        while tf.reduce_sum(tf.abs(x)) > 0.5:
            x = tf.matmul(x, w)
        return x

    on_gpu, on_cpu, source = _on_both(f, np.ones((2, 2), np.float32))
    assert "loop_" not in _driver(source) and node_steps == ["while_loop"]
    _assert_same(on_gpu, on_cpu)


def test_a_random_draw_in_the_body_keeps_the_step_path(gpu, node_steps):
    def f(x):
        while tf.reduce_sum(x) < 3.0:
            x = x + tf.random.uniform((3,), seed=7)
        return x

    results = []
    for device in ("/GPU:0", "/CPU:0"):
        tf.random.set_seed(11)   # the same stream in both traces
        function = tf.function(f)
        with tf.device(device):
            results.append(function(tf.zeros(3)))
            source = function.get_concrete_function(tf.zeros(3)).kernel_source
        if device == "/GPU:0":
            assert "loop_" not in _driver(source) and "stateful_while_loop" in node_steps
    np.testing.assert_allclose(results[0].numpy(), results[1].numpy(), rtol=1e-6)
    assert results[0].numpy().sum() >= 3.0


def test_large_values_keep_the_step_path(gpu, node_steps, monkeypatch):
    monkeypatch.setattr(loops, "MAX_ELEMENTS", 4)   # (a real size would be slow to simulate)

    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    on_gpu, on_cpu, source = _on_both(f, SEED_X)
    assert "loop_" not in _driver(source) and node_steps == ["while_loop"]
    _assert_same(on_gpu, on_cpu)
    np.testing.assert_allclose(on_gpu.numpy(), SEED_RESULT, rtol=1e-5)
