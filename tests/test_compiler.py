"""hybridtf.compiler: compiled graphs agree with the interpreter and with eager execution."""
import tracemalloc
import warnings

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import compiler
from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler.cpu import parts as cpu_parts
from hybridtf.compiler.cpu import render as cpu_render
from hybridtf.graph import interpreter


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def _both(fn, *args):
    """(compiled outputs, interpreter outputs) of ``fn``'s graph for ``args``."""
    cf = fn.get_concrete_function(*args)
    arrays = [np.asarray(a._value if isinstance(a, tf.Tensor) else a) for a in args]
    compiled = compiler.compile_graph(cf.graph).run(arrays, 0)
    reference = interpreter.run(cf.graph, arrays, 0)
    return cf, compiled, reference


def _groups(cf):
    return [item for kind, item in plan_lib.lower(cf.graph).items if kind == "group"]


def test_elementwise_chain_with_broadcasting_and_constants():
    def chain(x, b, s):
        y = tf.tanh(x * 1.5 + b) - x * 0.5
        z = tf.maximum(y, s) / (1.0 + tf.exp(-y))
        return tf.where(z > 0.1, z, -z), y

    f = tf.function(chain)
    x, b, s = tf.constant(_rand(3, 4)), tf.constant(_rand(4, seed=1)), tf.constant(np.float32(0.2))
    cf, compiled, reference = _both(f, x, b, s)
    assert len(_groups(cf)) == 1
    for c, r in zip(compiled, reference):
        np.testing.assert_array_equal(c, r)
    for got, want in zip(f(x, b, s), chain(x, b, s)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.dtype == want.dtype and got.shape == want.shape


def test_broadcasting_both_ways_and_integer_and_bool_dtypes():
    @tf.function
    def f(col, row, k):
        s = col * 2.0 + row            # (3, 1) with (1, 4) -> (3, 4)
        n = k * 3 + 1                  # int32
        return s - 1.0, tf.logical_and(n > 4, n < 20), n
    col, row = tf.constant(_rand(3, 1)), tf.constant(_rand(1, 4, seed=2))
    k = tf.constant(np.arange(6, dtype=np.int32).reshape(2, 3))
    cf, compiled, reference = _both(f, col, row, k)
    for c, r in zip(compiled, reference):
        assert c.dtype == r.dtype
        np.testing.assert_array_equal(c, r)
    assert "from ops.kernel_cache import njit" in cf.kernel_source   # cached on disk


def test_fused_reduction_epilogue():
    def seed(x, y):
        return tf.reduce_mean(tf.multiply(x ** 2, 3) + y), tf.reduce_sum(x * y, keepdims=True)

    f = tf.function(seed)
    x, y = tf.constant(_rand(5, 7)), tf.constant(_rand(5, 7, seed=3))
    cf, compiled, reference = _both(f, x, y)
    groups = _groups(cf)
    assert sum(len(g.reductions) for g in groups) == 2
    for c, r in zip(compiled, reference):
        assert c.shape == r.shape and c.dtype == r.dtype
        np.testing.assert_allclose(c, r, rtol=1e-6)
    mean, total = f(x, y)
    np.testing.assert_allclose(mean.numpy(), seed(x, y)[0].numpy(), rtol=1e-6)
    assert total.shape == (1, 1)


def test_rank0_chain_and_call_overhead_path():
    @tf.function
    def f(x):
        return tf.sqrt(x * x + 1.0) + 2.0
    x = tf.constant(np.float32(3.0))
    cf, compiled, reference = _both(f, x)
    np.testing.assert_array_equal(compiled[0], reference[0])
    assert f(x).numpy() == np.float32(np.sqrt(np.float32(10.0)) + 2)


def _mlp(seed):
    rng = np.random.default_rng(seed)
    params = [rng.normal(0, 0.3, (6, 5)).astype(np.float32), np.zeros(5, np.float32),
              rng.normal(0, 0.3, (5, 3)).astype(np.float32), np.zeros(3, np.float32)]
    return [tf.Variable(p) for p in params]


def _train_step(params, lr=0.1):
    w1, b1, w2, b2 = params
    ms = [tf.Variable(tf.zeros_like(p)) for p in params]

    def step(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(h, w2) + b2
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        for p, m, g in zip(params, ms, grads):
            m.assign(m * 0.9 + g * 0.1)
            p.assign(p - lr * m / (tf.sqrt(m * m) + 1e-3))
        return loss
    return step


def test_mlp_train_step_matches_eager():
    x = tf.constant(_rand(4, 6, seed=5))
    y = tf.constant(np.array([0, 2, 1, 2], np.int32))
    eager_params, fn_params = _mlp(7), _mlp(7)
    eager_step = _train_step(eager_params)
    fn_step = tf.function(_train_step(fn_params))
    eager_losses = [eager_step(x, y).numpy() for _ in range(3)]
    fn_losses = [fn_step(x, y).numpy() for _ in range(3)]
    np.testing.assert_allclose(fn_losses, eager_losses, rtol=1e-5)
    for a, b in zip(fn_params, eager_params):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    source = fn_step.get_concrete_function(x, y).kernel_source
    assert "fused_" in source and "matmul" not in source.split("# ---- driver")[0]


def test_variable_updates_match_interpreter():
    v = tf.Variable(_rand(3, 2))

    @tf.function
    def f(x):
        v.assign(v * 0.5 + x)
        v.assign_add(tf.ones_like(x))
        return v * 2.0

    x = tf.constant(_rand(3, 2, seed=4))
    start = v.numpy().copy()
    out = f(x).numpy()
    expected_v = start * np.float32(0.5) + x.numpy() + np.float32(1)
    np.testing.assert_allclose(v.numpy(), expected_v, rtol=1e-6)
    np.testing.assert_allclose(out, expected_v * 2, rtol=1e-6)


def test_stateful_order_print_and_py_function(capsys):
    calls = []

    def record(x):
        calls.append(("py", float(x.numpy())))

    @tf.function
    def f(x):
        y = x * 2.0 + 1.0
        tf.print("first", y)
        tf.py_function(record, inp=[y], Tout=[])
        z = y * 3.0 - 1.0
        tf.print("second", z)
        return z

    for _ in range(2):
        f(tf.constant(np.float32(1.0)))
    err = capsys.readouterr().err
    assert err == "first 3\nsecond 8\n" * 2
    assert calls == [("py", 3.0)] * 2


def test_random_ops_draw_new_values_each_call():
    @tf.function
    def noise(x):
        return tf.random.uniform([4], seed=3) * 2.0 + x

    x = tf.constant(np.float32(1.0))
    a, b = noise(x).numpy(), noise(x).numpy()
    assert not np.array_equal(a, b)
    cf = noise.get_concrete_function(x)
    arrays = [np.float32(1.0)]
    for i in range(2):
        np.testing.assert_array_equal(compiler.compile_graph(cf.graph).run(arrays, i)[0],
                                      interpreter.run(cf.graph, arrays, i)[0])


def test_value_checks_still_raise():
    @tf.function
    def f(params, indices):
        return tf.gather(params * 2.0 + 1.0, indices) * 3.0

    params = tf.constant(_rand(5, 2))
    np.testing.assert_allclose(f(params, tf.constant([0, 4])).numpy(),
                               (params.numpy()[[0, 4]] * 2 + 1) * 3, rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(params, tf.constant([0, 5]))

    @tf.function
    def g(a, b):
        return (a // b) + 1
    with pytest.raises(tf.errors.InvalidArgumentError):
        g(tf.constant([4, 5]), tf.constant([2, 0]))


def test_unknown_shapes_fall_back_to_steps():
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def f(x):
        return tf.exp(x * 2.0) + 1.0
    for n in (1, 3):
        x = _rand(n, 2)
        np.testing.assert_allclose(f(tf.constant(x)).numpy(), np.exp(x * 2) + 1, rtol=1e-6)


def test_kernel_source_and_pretty_printed_graph():
    @tf.function
    def f(x):
        return tf.nn.relu(x * 2.0 - 1.0)
    x = tf.constant(_rand(2, 3))
    f(x)
    cf = f.get_concrete_function(x)
    source = cf.kernel_source
    assert "from ops.kernel_cache import njit" in source and "from ops.elementwise import" in source
    assert "def run(" in source
    assert "relu" in cf.pretty_printed_graph()


def test_a_run_drops_each_value_after_the_step_that_reads_it_last():
    """Eight products in a row, each 1 MiB: a run holds two or three of them at a time, not all
    eight, so that an allocator can reuse their memory within the run."""
    @tf.function
    def chain(x, w):
        for _ in range(8):
            x = tf.matmul(x, w)
        return x
    x, w = tf.constant(_rand(512, 512)), tf.constant(_rand(512, 512, seed=1) / 16)
    cf = chain.get_concrete_function(x, w)
    compiled = compiler.compile_graph(cf.graph)
    arrays = [x.numpy(), w.numpy()]
    compiled.run(arrays, 0)   # (the kernels' first calls allocate too)
    tracemalloc.start()
    try:
        result, = compiled.run(arrays, 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3.5 * 2 ** 20
    np.testing.assert_allclose(result, chain.python_function(x, w).numpy(), rtol=1e-5)


def test_equal_graphs_share_one_generated_module():
    def make():
        @tf.function
        def h(x):
            return tf.tanh(x * 1.25) + x
        return h
    x = tf.constant(_rand(4))
    f1, f2 = make(), make()
    np.testing.assert_array_equal(f1(x).numpy(), f2(x).numpy())
    c1, c2 = f1.get_concrete_function(x), f2.get_concrete_function(x)
    assert c1.graph is not c2.graph
    assert c1._compiled_graph().module is c2._compiled_graph().module
    assert c1._compiled_graph().module.__file__ == c2._compiled_graph().module.__file__


def test_graphs_compile_for_the_backend_of_their_device():
    f = tf.function(lambda x: x * 2.0)
    x = tf.constant(_rand(3))
    cf = f.get_concrete_function(x)
    assert compiler.backend_for_device(cf.graph.device) == "cpu"
    compiled = compiler.compile_graph(cf.graph, "cpu")
    np.testing.assert_array_equal(compiled.run([x.numpy()], 0)[0], x.numpy() * 2.0)
    with pytest.raises(ValueError, match=r"compile_graph: no compiler for backend 'tpu'.*'cpu'"):
        compiler.compile_graph(cf.graph, "tpu")
    with pytest.raises(ValueError, match=r"device '/device:TPU:0'.*'cpu'"):
        compiler.backend_for_device("/device:TPU:0")


def test_a_backend_renderer_changes_only_what_it_declares():
    """A renderer subclass with its own decorator and options renders the same loop nest."""
    from hybridtf.compiler.cpu.render import RENDERER
    from hybridtf.compiler.render import LoopRenderer

    class Other(LoopRenderer):
        backend = RENDERER.backend
        decorator = "@compiled_elsewhere{options}"
        reduction_options = "(reassociate=True)"

    f = tf.function(lambda x: tf.reduce_sum(tf.tanh(x * 2.0), axis=1))
    group, = _groups(f.get_concrete_function(tf.constant(_rand(3, 4))))
    cpu_kernel, other = RENDERER.render(group, {}), Other().render(group, {})
    cpu_lines, other_lines = cpu_kernel.source.splitlines(), other.source.splitlines()
    assert cpu_lines[0].startswith("@njit(") and other_lines[0] == \
        "@compiled_elsewhere(reassociate=True)"
    assert other_lines[1].startswith("def fused_") and other.name != cpu_kernel.name
    assert other_lines[2:] == cpu_lines[2:]
    assert [t is u for t, u in zip(other.args, cpu_kernel.args)] == [True] * len(other.args)


def test_gradient_through_a_compiled_call():
    @tf.function
    def f(x):
        return tf.reduce_sum(tf.tanh(x) * x)
    x = tf.constant(_rand(3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x).numpy()
    t = np.tanh(x.numpy())
    np.testing.assert_allclose(g, t + x.numpy() * (1 - t * t), rtol=1e-5)


def test_partial_reductions_join_the_loop_that_computes_their_input():
    def f(x, y):
        z = tf.nn.relu(x * y)
        return (tf.reduce_sum(z, axis=0, keepdims=True), tf.reduce_mean(z, axis=1),
                tf.reduce_sum(z * 2.0, axis=[0, 2]), tf.reduce_sum(z))

    fn = tf.function(f)
    x, y = tf.constant(_rand(4, 5, 3)), tf.constant(_rand(5, 3, seed=4))
    cf, compiled, reference = _both(fn, x, y)
    groups = _groups(cf)
    assert len(groups) == 1 and len(groups[0].reductions) == 4
    z = np.maximum(x.numpy() * y.numpy(), 0)
    expected = [z.sum(0, keepdims=True), z.mean(1), (z * 2).sum((0, 2)), z.sum()]
    for c, r, e in zip(compiled, reference, expected):
        assert c.shape == r.shape == e.shape and c.dtype == r.dtype
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)


def test_a_value_and_its_reduction_in_one_expression():
    @tf.function
    def f(x):
        y = x * 2.0
        return y - tf.reduce_mean(y, axis=0)

    x = tf.constant(_rand(3, 4))
    y = x.numpy() * 2
    np.testing.assert_allclose(f(x).numpy(), y - y.mean(0), rtol=1e-6)


def test_constants_known_at_compile_time_are_folded():
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(tf.nn.relu(x) * 3.0)
        return loss, tape.gradient(loss, x)

    x = tf.constant(_rand(4, 6))
    cf, compiled, reference = _both(f, x)
    steps = [item.op.name for kind, item in
             plan_lib.lower(cf.graph, skip=compiler.fold_lib.fold_constants(cf.graph)[1]).items
             if kind == "step"]
    assert "fill_like" not in steps and "broadcast_to" not in steps and "reshape" not in steps
    for c, r in zip(compiled, reference):
        np.testing.assert_allclose(c, r, rtol=1e-6)
    expected = np.where(x.numpy() > 0, 3.0 / x.numpy().size, 0.0)
    np.testing.assert_allclose(f(x)[1].numpy(), expected, rtol=1e-6)


def test_shapes_unknown_at_trace_are_checked_on_every_call():
    @tf.function(input_signature=[tf.TensorSpec([None, None]), tf.TensorSpec([None, None])])
    def f(a, b):
        return tf.matmul(a, b) * 2.0

    assert f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)).shape == (2, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="matmul.*inner dimensions 3 and 4"):
        f(np.ones((2, 3), np.float32), np.ones((4, 4), np.float32))


def test_a_tensor_read_before_an_update_keeps_its_value():
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    m = tf.Variable(np.zeros((2, 3), np.float32))

    @tf.function
    def step(g):
        m.assign(0.9 * m + g)
        v.assign_sub(0.5 * m)

    before, before_array = v.read_value(), v.numpy()
    kept = before_array.copy()
    step(tf.ones((2, 3)))
    step(tf.ones((2, 3)))
    np.testing.assert_array_equal(before.numpy(), kept)
    np.testing.assert_array_equal(before_array, kept)
    np.testing.assert_allclose(v.numpy(), kept - 0.5 * (1.0 + 1.9), rtol=1e-6)


def test_max_and_min_reductions_join_the_loop_with_nan_and_empty_semantics():
    def f(x):
        y = x * 2.0
        return (tf.reduce_max(y), tf.reduce_min(y, axis=1), tf.reduce_max(y, axis=0,
                                                                          keepdims=True))

    fn = tf.function(f)
    x = _rand(4, 5)
    x[2, 3] = np.nan
    cf, compiled, reference = _both(fn, tf.constant(x))
    assert sum(len(g.reductions) for g in _groups(cf)) == 3
    for c, r in zip(compiled, reference):
        np.testing.assert_array_equal(c, r)
    y = x * 2
    np.testing.assert_array_equal(compiled[1], y.min(axis=1))
    assert np.isnan(compiled[0])
    empty = tf.function(lambda x: tf.reduce_max(x * 2.0, axis=0))
    cf, compiled, reference = _both(empty, tf.constant(np.zeros((0, 3), np.float32)))
    np.testing.assert_array_equal(compiled[0], reference[0])


@pytest.fixture
def split_small_groups(monkeypatch):
    """Groups of 4 elements and more split over 3 threads, update variables in place and take
    in the products they alone read."""
    from ops import threads
    monkeypatch.setattr(cpu_parts, "PART_MIN_ELEMENTS", 4)
    monkeypatch.setattr(cpu_parts, "PART_FORM_MIN_ELEMENTS", 4)
    monkeypatch.setattr(cpu_parts, "PART_ELEMENTS", 1)
    monkeypatch.setattr(cpu_parts, "PRODUCT_MIN_ELEMENTS", 4)
    monkeypatch.setattr(cpu_parts, "PRODUCT_BLOCK_ELEMENTS", 8)   # blocks of 1-2 rows
    monkeypatch.setattr(threads, "free_cores", lambda: 64)   # split on a busy machine too
    saved = threads.get_num_threads()
    threads.set_num_threads(3)
    yield
    threads.set_num_threads(saved)


def test_large_groups_split_their_loop_over_threads(split_small_groups):
    def f(x, b):
        return tf.tanh(x * 2.0 + b) - x, x * b

    g = tf.function(f)
    x, b = tf.constant(_rand(7, 5)), tf.constant(_rand(5, seed=2))
    cf, compiled, reference = _both(g, x, b)
    assert "lo, hi):" in cf.kernel_source and "_split_call" in cf.kernel_source
    for c, r in zip(compiled, reference):
        np.testing.assert_allclose(c, r, rtol=1e-6)
    for got, want in zip(g(x, b), f(x, b)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_batch_size_across_the_split_threshold_renders_the_same_module(monkeypatch):
    """Below and above the size from which a loop splits over threads, a group is the same part
    kernel (called once, or split): a new batch size reuses the compiled module."""
    from ops import threads
    monkeypatch.setattr(cpu_parts, "PART_FORM_MIN_ELEMENTS", 8)
    monkeypatch.setattr(cpu_parts, "PART_MIN_ELEMENTS", 64)
    monkeypatch.setattr(cpu_parts, "PART_ELEMENTS", 16)
    monkeypatch.setattr(threads, "free_cores", lambda: 64)

    def f(x, b):
        return tf.tanh(x * 2.0 + b) - x

    g = tf.function(f)
    sources = {}
    for rows in (3, 20):   # 15 and 100 elements
        x, b = tf.constant(_rand(rows, 5)), tf.constant(_rand(5, seed=2))
        module, driver = g.get_concrete_function(x, b).kernel_source.split("# ---- driver")
        sources[rows] = module, driver
        np.testing.assert_allclose(g(x, b).numpy(), f(x, b).numpy(), rtol=1e-6)
    assert sources[3][0] == sources[20][0]
    assert "lo, hi):" in sources[3][0]
    assert "_split_call" not in sources[3][1] and "_split_call" in sources[20][1]


def test_variable_updates_write_in_place_while_nobody_else_holds_the_array(split_small_groups):
    v = tf.Variable(np.arange(30, dtype=np.float32).reshape(6, 5))
    m = tf.Variable(np.zeros((6, 5), np.float32))

    @tf.function
    def step(g):
        m.assign(0.9 * m + g)
        v.assign_sub(0.5 * m)

    g = tf.ones((6, 5))
    expected_v, expected_m = v.numpy().copy(), m.numpy().copy()

    def expect():
        nonlocal expected_v, expected_m
        expected_m = np.float32(0.9) * expected_m + np.float32(1)
        expected_v = expected_v - np.float32(0.5) * expected_m

    step(g)   # the first update: the arrays are the initial values', shared
    expect()
    assert "_claim_in_place" in step.get_concrete_function(g).kernel_source
    arrays = id(v._value), id(m._value)
    for _ in range(3):
        step(g)
        expect()
        assert (id(v._value), id(m._value)) == arrays   # written in place
    np.testing.assert_allclose(v.numpy(), expected_v, rtol=1e-6)
    np.testing.assert_allclose(m.numpy(), expected_m, rtol=1e-6)
    np.testing.assert_array_equal(v.initial_value.numpy(),
                                  np.arange(30, dtype=np.float32).reshape(6, 5))

    # Copy-on-write: a value read before a call keeps its numbers.
    for read in (lambda: v.read_value(), lambda: v.numpy(), lambda: np.asarray(v)[1:]):
        held = read()
        kept = np.array(held)
        step(g)
        expect()
        np.testing.assert_array_equal(np.asarray(held), kept)
        np.testing.assert_allclose(v.numpy(), expected_v, rtol=1e-6)


def test_in_place_updates_keep_the_old_value_where_the_graph_still_reads_it(split_small_groups):
    v = tf.Variable(_rand(6, 5))

    @tf.function
    def same_loop():          # old read by the updating loop itself
        old = v.read_value()
        v.assign(old * 2.0)
        return old + 1.0

    @tf.function
    def returned():           # old returned
        old = v.read_value()
        v.assign(old * 2.0)
        return old

    @tf.function
    def read_later():         # old read by a later step
        old = v.read_value()
        v.assign(old * 2.0)
        return tf.matmul(old, tf.ones((5, 1)))

    for fn, result in ((same_loop, lambda old: old + 1), (returned, lambda old: old),
                       (read_later, lambda old: old @ np.ones((5, 1), np.float32))):
        for _ in range(3):
            old = v.numpy().copy()
            got = fn().numpy()
            np.testing.assert_allclose(got, result(old), rtol=1e-6)
            np.testing.assert_allclose(v.numpy(), old * 2, rtol=1e-6)


def test_a_product_only_a_split_group_reads_is_computed_inside_its_parts(split_small_groups):
    x, dz = _rand(4, 6, seed=3), _rand(4, 5, seed=4)
    v = tf.Variable(_rand(6, 5, seed=5))
    m = tf.Variable(np.zeros((6, 5), np.float32))

    @tf.function
    def step(x, dz):
        g = tf.matmul(x, dz, transpose_a=True)      # (6, 5), read by the update loop only
        m.assign(0.9 * m + g)
        v.assign_sub(0.5 * m)

    @tf.function
    def returned(x, dz):
        g = tf.matmul(x, dz, transpose_a=True)      # returned too: computed whole
        v.assign_sub(0.5 * g)
        return g

    expected_v, expected_m = v.numpy().astype(np.float64), np.zeros((6, 5))
    g = x.T.astype(np.float64) @ dz
    for _ in range(3):
        step(tf.constant(x), tf.constant(dz))
        expected_m = 0.9 * expected_m + g
        expected_v = expected_v - 0.5 * expected_m
    assert "_split_call_with_product" in step.get_concrete_function(x, dz).kernel_source
    np.testing.assert_allclose(m.numpy(), expected_m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), expected_v, rtol=1e-5, atol=1e-6)

    before = v.numpy().astype(np.float64)
    got = returned(tf.constant(x), tf.constant(dz)).numpy()
    assert "_split_call_with_product" not in returned.get_concrete_function(x, dz).kernel_source
    np.testing.assert_allclose(got, g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), before - 0.5 * g, rtol=1e-5, atol=1e-6)


def test_a_product_of_a_variable_updated_in_place_is_computed_before_the_update(
        split_small_groups):
    w = tf.Variable(_rand(6, 6, seed=6))
    x = tf.constant(_rand(6, 6, seed=7))

    @tf.function
    def step():
        w.assign(w - 0.1 * tf.matmul(w, x))   # the product reads w, which the loop overwrites

    for _ in range(3):
        old = w.numpy().astype(np.float64)
        step()
        np.testing.assert_allclose(w.numpy(), old - 0.1 * old @ x.numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_an_in_place_update_in_a_loop_with_a_reduction(split_small_groups):
    v = tf.Variable(_rand(6, 5, seed=8))

    @tf.function
    def f():
        new = v * 0.5 + 1.0
        v.assign(new)
        return tf.reduce_sum(new)

    expected = v.numpy().astype(np.float64)
    for _ in range(3):
        expected = expected * 0.5 + 1.0
        np.testing.assert_allclose(f().numpy(), expected.sum(), rtol=1e-5)
        np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6)
    source = f.get_concrete_function().kernel_source
    assert "_claim_in_place" in source and "lo, hi" not in source


def test_an_old_value_assigned_to_another_variable_is_not_overwritten(split_small_groups):
    a = tf.Variable(np.ones((6, 5), np.float32))
    b = tf.Variable(np.zeros((6, 5), np.float32))

    @tf.function
    def f():
        old = a.read_value()
        b.assign(old)          # b takes a's old value, read after the loop that updates a
        a.assign(old * 2.0)

    for step in range(1, 4):
        f()
        np.testing.assert_array_equal(a.numpy(), np.full((6, 5), 2.0 ** step, np.float32))
        np.testing.assert_array_equal(b.numpy(), np.full((6, 5), 2.0 ** (step - 1), np.float32))


def test_a_graph_the_compiler_fails_on_warns_naming_its_ops_and_still_runs(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no loop for you")

    monkeypatch.setattr(cpu_render.RENDERER, "render", broken)
    f = tf.function(lambda x: tf.tanh(x * 2.0) + 1.0)
    x = tf.constant([0.5, -1.0])
    with pytest.warns(compiler.CompilationWarning,
                      match=r"compiling multiply, tanh, add failed: RuntimeError: no loop"):
        y = f(x)
    # float32 against float64, with a cancellation (tanh(-2) + 1): an absolute tolerance too
    np.testing.assert_allclose(y.numpy(), np.tanh(np.array([0.5, -1.0]) * 2) + 1, rtol=1e-6,
                               atol=1e-6)
    assert "could not lower" in f.get_concrete_function(x).kernel_source


def test_compilation_warnings_fail_the_test_suite():
    # setup.cfg turns the warning into an error, so a broken kernel cannot pass unnoticed.
    with pytest.raises(compiler.CompilationWarning):
        warnings.warn(compiler.CompilationWarning("a broken kernel"))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64,
                                   np.uint8, np.bool_, np.complex64])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 1, 4, 3)])
def test_kernels_are_warmed_up_for_the_types_numba_gives_the_arrays_of_a_call(dtype, shape):
    """The warm-up compiles for the types it writes down without making arrays: the same types
    ``numba.typeof`` gives the arrays and scalars a call passes."""
    import numba
    from types import SimpleNamespace
    from hybridtf.compiler import cpu
    tensor = SimpleNamespace(_static_shape=shape, _static_dtype=np.dtype(dtype))
    assert cpu._array_type(tensor) == numba.typeof(np.zeros(shape, dtype))
    assert cpu._scalar_type(tensor) == numba.typeof(np.zeros((), dtype)[()])


def test_a_compiled_plan_compiles_its_in_part_products_before_the_first_call(
        split_small_groups, monkeypatch):
    """The ``rows`` form of a product computed inside a part kernel is compiled with the plan
    (for the argument types the call passes), so that a plan loaded from the kernel cache by a
    new process compiles nothing on its first call."""
    import numba
    from hybridtf.registry.linalg import MATMUL
    kernel = MATMUL.kernels["cpu"]
    calls = []
    phase = ["compiling"]
    rows = kernel.rows

    class RecordingRows:
        def compile(self, signature):
            calls.append(("compiling", tuple(signature)))
            return rows.compile(signature)

        def __call__(self, *args):
            calls.append((phase[0], tuple(numba.typeof(a) for a in args)))
            return rows(*args)
    monkeypatch.setattr(kernel, "rows", RecordingRows())
    v = tf.Variable(_rand(6, 5, seed=5).astype(np.float64))

    @tf.function
    def step(x, dz):
        v.assign_sub(0.5 * tf.matmul(x, dz, transpose_a=True))

    x, dz = tf.constant(_rand(4, 6, seed=3).astype(np.float64)), tf.constant(
        _rand(4, 5, seed=4).astype(np.float64))
    assert "_split_call_with_product" in step.get_concrete_function(x, dz).kernel_source
    phase[0] = "calling"
    before = v.numpy()
    step(x, dz)
    compiled = {types for when, types in calls if when == "compiling"}
    called = {types for when, types in calls if when == "calling"}
    assert called and called <= compiled
    np.testing.assert_allclose(v.numpy(), before - 0.5 * (x.numpy().T @ dz.numpy()), rtol=1e-12)
