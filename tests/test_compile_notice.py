"""ops.compile_notice: a compile that keeps its caller waiting gets one line naming it; a quick
one, a silenced one and a background one get nothing; the switches silence it.

The "compiles" here are fakes that wait for the line itself (with the threshold lowered), so
that what is checked is what gets said, not how fast anything runs.
"""
import importlib.util
import logging
import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import compiler, execution_tiers
from hybridtf import warmup as warmup_command
from ops import compile_notice

ROOT = pathlib.Path(__file__).resolve().parent.parent
PATIENCE_S = 30.0   # how long a fake compile waits for its line before giving up


class Lines:
    """The lines said, in order; ``said`` is set by the first."""

    def __init__(self):
        self.lines = []
        self.said = threading.Event()

    def __call__(self, message):
        self.lines.append(message)
        self.said.set()

    def wait(self):
        """A fake compile that lasts until something is said (or PATIENCE_S)."""
        self.said.wait(PATIENCE_S)


@pytest.fixture
def said(monkeypatch):
    """The lines written, with a threshold of 50 ms."""
    lines = Lines()
    monkeypatch.setattr(compile_notice, "tell", lines)
    monkeypatch.setattr(compile_notice, "THRESHOLD_S", 0.05)
    monkeypatch.setattr(compile_notice, "_ENABLED", [True])
    _new_wait(monkeypatch)
    return lines


def _new_wait(monkeypatch):
    """This thread starts afresh: no wait of an earlier test goes on."""
    monkeypatch.setattr(compile_notice._LOCAL, "waits", compile_notice._Waits(), raising=False)


@pytest.fixture
def logged(caplog):
    caplog.set_level(logging.INFO, logger="hybridtf.compile")
    return caplog


def test_a_slow_compile_is_announced_once_with_its_name(said):
    with compile_notice.announce("hybridtf: compiling tf.function 'slow_fake'"):
        said.wait()
        time.sleep(0.2)   # well past the threshold again: still one line
    assert said.lines == ["hybridtf: compiling tf.function 'slow_fake'"]


def test_a_quick_compile_is_not_announced(said, monkeypatch):
    monkeypatch.setattr(compile_notice, "THRESHOLD_S", 1.0)
    with compile_notice.announce("hybridtf: compiling tf.function 'quick_fake'"):
        pass
    time.sleep(0.05)
    assert said.lines == []


def test_the_line_is_an_info_record_of_the_hybridtf_compile_logger(logged, monkeypatch):
    monkeypatch.setattr(compile_notice, "THRESHOLD_S", 0.05)
    monkeypatch.setattr(compile_notice, "_ENABLED", [True])
    _new_wait(monkeypatch)
    with compile_notice.announce("hybridtf: compiling tf.function 'logged_fake'"):
        deadline = time.perf_counter() + PATIENCE_S
        while not logged.records and time.perf_counter() < deadline:
            time.sleep(0.01)
    assert [(r.name, r.levelno, r.getMessage()) for r in logged.records] == [
        ("hybridtf.compile", logging.INFO, "hybridtf: compiling tf.function 'logged_fake'")]


def test_tf_get_logger_is_the_parent_of_the_notices_logger():
    logger = tf.get_logger()
    assert isinstance(logger, logging.Logger) and logger.name == "hybridtf"
    assert compile_notice.LOGGER.parent is logger
    saved = logger.level
    logger.setLevel(logging.WARNING)   # what a user silencing it does
    try:
        assert not compile_notice.LOGGER.isEnabledFor(logging.INFO)
    finally:
        logger.setLevel(saved)


def test_many_quick_compiles_in_a_row_are_one_wait_announced_once(said, monkeypatch):
    monkeypatch.setattr(compile_notice, "THRESHOLD_S", 0.2)
    for i in range(8):   # 8 x 0.1 s, each under the threshold, together past it
        with compile_notice.compile_scope():
            compile_notice.compiling(f"hybridtf: compiling kernels (now kernel {i})")
            time.sleep(0.1)
    assert len(said.lines) == 1 and said.lines[0].startswith("hybridtf: compiling kernels")


def test_a_wait_after_a_pause_is_announced_again(said):
    for name in ("first", "second"):
        with compile_notice.announce(f"hybridtf: compiling tf.function '{name}'"):
            said.wait()
        said.said.clear()
        time.sleep(0.2)   # a pause longer than the threshold: the next compile is a new wait
    assert said.lines == ["hybridtf: compiling tf.function 'first'",
                          "hybridtf: compiling tf.function 'second'"]


def test_nested_compiles_are_announced_by_the_outermost_only(said):
    with compile_notice.announce("hybridtf: compiling tf.function 'outer'"):
        with compile_notice.compile_scope():
            compile_notice.compiling("hybridtf: compiling kernels (now inner)")
            with compile_notice.announce("hybridtf: compiling tf.function 'inner'"):
                said.wait()
                time.sleep(0.1)
    assert said.lines == ["hybridtf: compiling tf.function 'outer'"]


def test_a_miss_outside_a_compile_scope_says_nothing(said):
    compile_notice.compiling("hybridtf: compiling kernels (now unscoped)")
    time.sleep(0.2)
    assert said.lines == []


class _Collect(logging.Handler):
    """The messages of the records it handles."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("switch", [None, "set_enabled", "tf.config", "logger level"])
def test_the_switches_silence_it(switch, monkeypatch):
    monkeypatch.setattr(compile_notice, "THRESHOLD_S", 0.05)
    monkeypatch.setattr(compile_notice, "_ENABLED", [True])
    _new_wait(monkeypatch)
    collected = _Collect()
    compile_notice.LOGGER.addHandler(collected)
    logger = logging.getLogger("hybridtf")
    level = logger.level
    if switch == "set_enabled":
        compile_notice.set_enabled(False)
        assert not compile_notice.enabled()
    elif switch == "tf.config":
        tf.config.experimental.set_compile_notices(False)
        assert not tf.config.experimental.compile_notices()
    elif switch == "logger level":
        logger.setLevel(logging.WARNING)
    try:
        with compile_notice.announce("hybridtf: compiling tf.function 'switched'"):
            deadline = time.perf_counter() + (PATIENCE_S if switch is None else 0.3)
            while not collected.messages and time.perf_counter() < deadline:
                time.sleep(0.01)
    finally:
        compile_notice.LOGGER.removeHandler(collected)
        logger.setLevel(level)
    expected = ["hybridtf: compiling tf.function 'switched'"] if switch is None else []
    assert collected.messages == expected


def test_silenced_compiles_are_not_announced(said):
    with compile_notice.silenced():
        with compile_notice.announce("hybridtf: compiling tf.function 'background'"):
            time.sleep(0.3)
        with compile_notice.compile_scope():
            compile_notice.compiling("hybridtf: compiling kernels (now background)")
            time.sleep(0.3)
    assert said.lines == []


def test_joining_a_slow_compile_is_announced_a_quick_one_not(said):
    quick = threading.Thread(target=lambda: None)
    quick.start()
    compile_notice.join([quick], "hybridtf: waiting for 'quick'")
    slow = threading.Thread(target=said.wait)
    slow.start()
    compile_notice.join([slow], "hybridtf: waiting for 'slow'")
    assert not slow.is_alive() and said.lines == ["hybridtf: waiting for 'slow'"]


# ---- without logging handlers the line goes to stderr --------------------------------------------
CHILD = textwrap.dedent('''
    import time
    from ops import compile_notice
    compile_notice.THRESHOLD_S = 0.05
    with compile_notice.announce("hybridtf: compiling tf.function 'in_a_script'"):
        time.sleep(1.0)
    with compile_notice.announce("hybridtf: compiling tf.function 'quick_in_a_script'"):
        pass
    print("done")
''')


@pytest.mark.parametrize("environment, lines", [
    ({}, ["hybridtf: compiling tf.function 'in_a_script'"]),
    ({"HYBRIDTF_COMPILE_NOTICES": "0"}, []),
])
def test_a_script_without_logging_gets_one_line_on_stderr(environment, lines):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **environment)
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["done"]
    assert done.stderr.splitlines() == lines


# ---- where hybridtf uses it ----------------------------------------------------------------------
KERNEL_MODULE = '''
from ops.kernel_cache import njit


@njit
def kernel_under_notice(x):
    return x * 2.0 + 1.0
'''


def _import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_kernel_compiled_on_a_cache_miss_is_announced_and_a_cached_one_not(
        said, tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDTF_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "kernels_under_notice.py"
    source.write_text(KERNEL_MODULE)
    first = _import_file(source, "kernels_under_notice")
    real = first.kernel_under_notice._compiler.compile

    def compile_after_the_line(*args, **kwargs):   # a compile that takes long
        said.wait()
        return real(*args, **kwargs)
    monkeypatch.setattr(first.kernel_under_notice._compiler, "compile", compile_after_the_line)
    assert first.kernel_under_notice(np.float64(1.5)) == 4.0
    assert len(said.lines) == 1
    assert "kernels_under_notice.kernel_under_notice for float64" in said.lines[0]
    assert "python -m hybridtf.warmup" in said.lines[0]

    misses = []
    monkeypatch.setattr(compile_notice, "compiling", misses.append)
    again = _import_file(source, "kernels_under_notice_again")   # a new dispatcher: from disk
    assert again.kernel_under_notice(np.float64(1.5)) == 4.0
    assert sum(again.kernel_under_notice.stats.cache_hits.values()) == 1
    assert misses == []


class _HeldCompile:
    """A rendered graph whose compile takes until ``until()`` returns, and that compiles a
    kernel on the way (as the kernel cache does on a miss)."""

    def __init__(self, rendered, until):
        self._rendered = rendered
        self._until = until
        self.stored = False

    def finish(self, warm_up=True):
        with compile_notice.compile_scope():
            compile_notice.compiling("hybridtf: compiling kernels (now a fused loop)")
            self._until()
        return self._rendered.finish(warm_up)


def _hold_compiles(monkeypatch, until):
    real = compiler.prepare
    monkeypatch.setattr(compiler, "prepare", lambda graph, backend="cpu": _HeldCompile(
        real(graph, backend), until))


def test_a_synchronous_compile_is_announced_with_the_function_name(said, monkeypatch):
    _hold_compiles(monkeypatch, said.wait)
    monkeypatch.setattr(execution_tiers, "_SYNCHRONOUS", [True])

    def noticed_function(x):
        return tf.reduce_sum(tf.tanh(x * 1.25))
    f = tf.function(noticed_function)
    x = tf.constant(np.linspace(-1, 1, 6, dtype=np.float32))
    np.testing.assert_allclose(f(x).numpy(), np.sum(np.tanh(x.numpy() * 1.25)), rtol=1e-6)
    assert said.lines == ["hybridtf: compiling tf.function 'noticed_function'; its kernels "
                          "are cached for the next runs"]


def test_a_background_compile_is_not_announced_but_waiting_for_it_is(said, monkeypatch, request):
    release = threading.Event()
    request.addfinalizer(release.set)   # a failing test leaves no compile held
    _hold_compiles(monkeypatch, lambda: release.wait(PATIENCE_S))
    monkeypatch.setattr(execution_tiers, "_SYNCHRONOUS", [False])

    def background_function(x):
        return tf.reduce_sum(tf.tanh(x * 1.25))
    f = tf.function(background_function)
    x = tf.constant(np.linspace(-1, 1, 6, dtype=np.float32))
    f(x)   # on the interpreter; the compile starts in the background and is held
    thread = f.get_concrete_function(x)._tiers._compiling
    time.sleep(0.3)   # six thresholds: the held compile's kernel would have been announced
    assert said.lines == [] and thread.is_alive()

    # the wait at exit: one line naming the function, then the compile finishes
    monkeypatch.setattr(compile_notice, "tell", lambda message: (said(message), release.set()))
    execution_tiers._finish_compiling()
    assert not thread.is_alive()
    assert said.lines == ["hybridtf: finishing compiling tf.function 'background_function' "
                          "before exiting, so that the next runs load it from the cache"]


def test_waiting_for_a_background_compile_is_announced(said, monkeypatch, request):
    release = threading.Event()
    request.addfinalizer(release.set)
    _hold_compiles(monkeypatch, lambda: release.wait(PATIENCE_S))
    monkeypatch.setattr(execution_tiers, "_SYNCHRONOUS", [False])

    def waited_function(x):
        return tf.reduce_sum(tf.tanh(x * 1.25))
    f = tf.function(waited_function)
    x = tf.constant(np.linspace(-1, 1, 6, dtype=np.float32))
    f(x)
    monkeypatch.setattr(compile_notice, "tell", lambda message: (said(message), release.set()))
    assert "def " in f.get_concrete_function(x).kernel_source   # waits for the compile
    assert said.lines == ["hybridtf: waiting for tf.function 'waited_function' to finish "
                          "compiling (cached for the next runs)"]


def test_compiling_a_loop_over_a_dataset_is_announced(said, monkeypatch):
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32))
    f = tf.function(lambda: dataset.reduce(np.float32(0), lambda s, x: s + x * 2.0))
    part, = [node.attrs["run_body"] for node in f.get_concrete_function().graph.nodes
             if "run_body" in (node.attrs or {})]
    real = compiler.compile_graph

    def compile_after_the_line(graph):
        said.wait()
        return real(graph)
    monkeypatch.setattr(compiler, "compile_graph", compile_after_the_line)
    part._build()   # what its first run does
    assert said.lines == ["hybridtf: compiling the reduce_body of a loop over a dataset; its "
                          "kernels are cached for the next runs"]


def test_the_warmup_command_says_nothing_beyond_its_progress_bar(said, monkeypatch):
    def slow_kernel_compile():
        with compile_notice.compile_scope():
            compile_notice.compiling("hybridtf: compiling kernels (now a library kernel)")
            time.sleep(0.3)
    monkeypatch.setattr(warmup_command, "elementwise_tasks", lambda dtypes: [])
    monkeypatch.setattr(warmup_command, "LIBRARY_TASKS", (("slow", slow_kernel_compile),))
    assert warmup_command.warm_up(progress=False) == 1
    assert said.lines == []
