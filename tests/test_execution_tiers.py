"""Tiered execution: a new trace runs on the interpreter while its kernels compile in the
background, and both tiers give the same results."""
import functools
import os
import threading
import warnings

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import compiler
from hybridtf.compiler.cpu import render as cpu_render


@pytest.fixture
def tiered():
    """Background compilation (the default outside the test suite), for one test."""
    before = tf.config.experimental.synchronous_compilation()
    tf.config.experimental.set_synchronous_compilation(False)
    yield
    tf.config.experimental.set_synchronous_compilation(before)


class _Held:
    """A rendered graph whose kernels count as never compiled before, and whose compiling
    (off the main thread) waits for ``release``."""

    def __init__(self, rendered, release):
        self._rendered = rendered
        self._release = release
        self.stored = False

    def finish(self, warm_up=True):
        if threading.current_thread() is not threading.main_thread():
            assert self._release.wait(60), "the test never released the compiler"
        return self._rendered.finish(warm_up)


@pytest.fixture
def slow_compiler(monkeypatch):
    """Holds every background compile until the test releases it, so that the interpreter tier
    is observable (synchronous compiles go through)."""
    release = threading.Event()
    real = compiler.prepare
    monkeypatch.setattr(compiler, "prepare",
                        lambda graph, backend="cpu": _Held(real(graph, backend), release))
    yield release
    release.set()


def _tiers(function, *args):
    return function.get_concrete_function(*args)._tiers


def test_the_first_calls_run_on_the_interpreter_until_the_kernels_are_ready(tiered,
                                                                            slow_compiler):
    f = tf.function(lambda x: tf.reduce_sum(tf.tanh(x * 1.5) + x, axis=1))
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
    expected = np.sum(np.tanh(x.numpy() * 1.5) + x.numpy(), axis=1)
    for _ in range(3):   # the compiler is held: every call is interpreted, and correct
        np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-6)
    tiers = _tiers(f, x)
    assert tiers.compiled is None and tiers._compiling.is_alive()
    slow_compiler.set()
    tiers._compiling.join(60)
    np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-6)
    assert tiers.compiled is not None and tiers.run() is tiers._final


def _case(name):
    """A fresh (variables, Python function) of one kind of graph."""
    v = tf.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    w = tf.Variable(np.ones((3, 2), np.float32) / 3)

    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(x @ w), tf.transpose(w))))
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss

    def while_loop(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) > 1.0, lambda x: (tf.tanh(x),), (x,))

    def cond(x):
        return tf.cond(tf.reduce_mean(x) > 0, lambda: x * 2.0, lambda: -x)

    def random(x):
        return x + tf.random.uniform([2, 3], seed=7)

    def assign(x):
        v.assign_add(x)
        return v.read_value() * 2.0
    return locals()[name]


@pytest.mark.parametrize("case", ["train_step", "while_loop", "cond", "random", "assign"])
def test_both_tiers_give_the_same_results(tiered, slow_compiler, case):
    x = tf.constant(np.full((2, 3), 0.4, np.float32))
    # the reference: the same function compiled before its first call (random draws depend on
    # the call's number, the same in both)
    tf.config.experimental.set_synchronous_compilation(True)
    tf.random.set_seed(3)
    reference = tf.function(_case(case))
    expected = [np.asarray(tf.nest.flatten(reference(x))[0]) for _ in range(6)]
    tf.config.experimental.set_synchronous_compilation(False)
    tf.random.set_seed(3)
    function = tf.function(_case(case))
    interpreted = [np.asarray(tf.nest.flatten(function(x))[0]) for _ in range(3)]
    assert _tiers(function, x).compiled is None
    slow_compiler.set()
    _tiers(function, x)._compiling.join(60)
    compiled = [np.asarray(tf.nest.flatten(function(x))[0]) for _ in range(3)]
    assert _tiers(function, x).compiled is not None
    for got, want in zip(interpreted + compiled, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_synchronous_compilation_compiles_on_the_first_call(monkeypatch):
    threads = []
    real = compiler.prepare

    def noted(graph, backend="cpu"):
        rendered = real(graph, backend)
        rendered.stored = False    # as if never compiled: the setting alone decides
        threads.append(threading.current_thread())
        return rendered
    monkeypatch.setattr(compiler, "prepare", noted)
    f = tf.function(lambda x: x * 3.0 + 1.0)
    x = tf.constant([1.0, 2.0])
    assert tf.config.experimental.synchronous_compilation()   # the suite's setting
    f(x)
    assert threads == [threading.current_thread()]
    assert _tiers(f, x).compiled is not None


def test_kernels_compiled_before_load_on_the_first_call_even_when_tiered(tiered):
    f = tf.function(lambda x: tf.cos(x) * 0.5 + x)
    g = tf.function(lambda x: tf.cos(x) * 0.5 + x)   # the same graph: the same kernels
    x = tf.constant([0.25, 0.5, 1.0])
    f(x)
    _tiers(f, x).wait()
    g(x)
    assert _tiers(g, x).compiled is not None and _tiers(g, x)._compiling is None


def test_a_failed_background_compile_warns_on_a_later_call_and_stays_interpreted(
        tiered, monkeypatch):
    from hybridtf.compiler import cpu

    def broken(kernels, module):
        raise RuntimeError("no loop for you")
    monkeypatch.setattr(cpu, "_warm_up", broken)
    monkeypatch.setattr(cpu, "was_compiled", lambda prefix, source: False)  # as if never compiled
    f = tf.function(lambda x: tf.exp(x) - 1.0)
    x = tf.constant([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(f(x).numpy(), [0.0, np.e - 1], rtol=1e-6)  # no warning yet
    _tiers(f, x)._compiling.join(60)
    with pytest.warns(compiler.CompilationWarning, match="no loop for you"):
        np.testing.assert_allclose(f(x).numpy(), [0.0, np.e - 1], rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # warned once
        np.testing.assert_allclose(f(x).numpy(), [0.0, np.e - 1], rtol=1e-6)


def test_a_graph_that_cannot_be_rendered_warns_on_its_first_call(tiered, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no loop for you")
    monkeypatch.setattr(cpu_render.RENDERER, "render", broken)
    f = tf.function(lambda x: tf.exp(x) - 1.0)
    x = tf.constant([0.0, 1.0])
    with pytest.warns(compiler.CompilationWarning, match="exp, subtract.*no loop for you"):
        np.testing.assert_allclose(f(x).numpy(), [0.0, np.e - 1], rtol=1e-6)


def test_kernel_source_waits_for_the_background_compile(tiered, slow_compiler):
    f = tf.function(lambda x: tf.sin(x) * 2.0)
    x = tf.constant([0.5])
    f(x)
    threading.Timer(0.2, slow_compiler.set).start()
    assert "def " in f.get_concrete_function(x).kernel_source


def test_calls_from_several_threads_while_compiling(tiered, slow_compiler):
    v = tf.Variable(0.0)
    f = tf.function(lambda: v.assign_add(1.0))
    errors = []

    def work():
        try:
            for _ in range(50):
                f()
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    slow_compiler.set()
    for t in threads:
        t.join()
    assert not errors and float(v.numpy()) == 200.0


def test_a_module_counts_as_compiled_only_after_its_warm_up_completed():
    # A process that exits while compiling in the background leaves the module's source but not
    # its compiled kernels: the next process must not take it for compiled.
    graph = tf.function(lambda x: tf.sin(x) * 1.75 - x * 0.375).get_concrete_function(
        tf.TensorSpec([5], tf.float64)).graph
    prepared = compiler.prepare(graph)
    from ops import codegen
    codegen_path = codegen._module_path(codegen._module_name("graph", prepared.source))
    for path in (codegen_path, codegen_path + ".compiled"):
        if os.path.exists(path):
            os.unlink(path)
    prepared.finish(warm_up=False)          # loaded, not compiled
    assert os.path.exists(codegen_path) and not compiler.prepare(graph).stored
    compiler.prepare(graph).finish()         # compiled
    assert compiler.prepare(graph).stored


def test_a_module_compiled_in_another_environment_is_compiled_again(monkeypatch):
    # A cache directory shared by two environments (another Numba, NumPy or Python): a module
    # the other one compiled is not loaded with the caller waiting for every kernel to compile;
    # its first call runs on the interpreter while it compiles in the background.
    graph = tf.function(lambda x: tf.cos(x) * 0.625 + x).get_concrete_function(
        tf.TensorSpec([3], tf.float64)).graph
    compiler.prepare(graph).finish()
    assert compiler.prepare(graph).stored
    from ops import codegen
    monkeypatch.setattr(codegen, "_MARK", b"python 3.11 numba 0.0 numpy 0.0")
    assert not compiler.prepare(graph).stored
    compiler.prepare(graph).finish()         # compiled here: marked for this environment
    assert compiler.prepare(graph).stored


def test_the_interpreter_frees_each_intermediate_after_its_last_reader():
    """A chain of ten elementwise steps on an 8 MB array holds a few arrays at a time, not
    all ten (each dead intermediate is freed, and the next one reuses its memory)."""
    import tracemalloc
    from hybridtf.graph import interpreter

    def chain(x, v):
        y = x
        for k in range(10):
            y = y * 1.5 + float(k)
        v.assign(y)          # a variable's new value outlives the nodes
        return y * 2.0, x    # as do the outputs, an input among them

    v = tf.Variable(np.zeros(1 << 20))
    x = np.linspace(0.0, 1.0, 1 << 20)
    graph = tf.function(chain).get_concrete_function(tf.constant(x), v).graph
    interpreter.run(graph, [x], 0)   # the ufuncs built, the releases computed
    tracemalloc.start()
    try:
        outputs = interpreter.run(graph, [x], 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expected = 2.0 * functools.reduce(lambda y, k: y * 1.5 + k, range(10), x)
    np.testing.assert_allclose(outputs[0], expected)
    assert outputs[1] is x
    np.testing.assert_allclose(v.numpy(), expected / 2.0)
    assert peak < 6 * x.nbytes   # all twenty intermediates alive: over 20 * 8 MB
