"""Deferred compiles: an op whose kernel is not compiled yet runs its reference form while the
kernel compiles in the background (ops.deferred_compiles, Kernel.run_now)."""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import threading
import uuid

import numba
import numpy as np
import pytest

from ops import codegen, deferred_compiles
from hybridtf.registry import Kernel

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def deferral():
    """Deferral allowed (the tests run with synchronous compilation), restored after."""
    previous = deferred_compiles.allowed()
    deferred_compiles.set_allowed(True)
    yield
    deferred_compiles.wait()
    deferred_compiles.set_allowed(previous)


def _fresh_kernel():
    """A kernel no cache holds: a generated module of its own (``twice(x)``: 2 * x + 0 * a
    constant unique to this call)."""
    source = ("from ops.kernel_cache import njit\n\n\n@njit\ndef twice(x):\n"
              f"    return x * 2.0 + 0.0 * {uuid.uuid4().int % 1000003}\n")
    return codegen.load_source("test_deferred_" + uuid.uuid4().hex[:8], source).twice


def _spied(kernel):
    """A Kernel running ``kernel`` with a NumPy reference that counts its calls."""
    calls = []

    def reference(arrays, attrs):
        calls.append(1)
        return arrays[0] * 2.0

    return Kernel(lambda arrays, attrs: kernel(arrays[0]), reference=reference), calls


def test_first_call_runs_the_reference_then_the_kernel(deferral):
    kernel, calls = _spied(_fresh_kernel())
    x = np.arange(6.0)
    np.testing.assert_array_equal(kernel.run_now([x], {}), 2 * x)
    assert calls == [1]                       # the kernel was not compiled: the reference ran
    deferred_compiles.wait()                  # ... while it compiled in the background
    np.testing.assert_array_equal(kernel.run_now([x], {}), 2 * x)
    assert calls == [1]                       # now the kernel runs


def test_a_kernel_that_fails_to_compile_raises_on_the_next_call(deferral):
    source = ("from ops.kernel_cache import njit\n\n\n@njit\ndef broken(x):\n"
              f"    return x.no_such_attribute + {uuid.uuid4().int % 1000003}\n")
    broken = codegen.load_source("test_deferred_" + uuid.uuid4().hex[:8], source).broken
    kernel, calls = _spied(broken)
    np.testing.assert_array_equal(kernel.run_now([np.ones(2)], {}), np.full(2, 2.0))
    deferred_compiles.wait()                  # the background compile failed ...
    with pytest.raises(numba.core.errors.TypingError, match="no_such_attribute"):
        kernel.run_now([np.ones(2)], {})      # ... and the caller sees why
    assert calls == [1]
    assert deferred_compiles.noteworthy()    # still failing: every call raises again


def test_synchronous_compilation_never_runs_the_reference(deferral):
    deferred_compiles.set_allowed(False)
    kernel, calls = _spied(_fresh_kernel())
    np.testing.assert_array_equal(kernel.run_now([np.ones(3)], {}), np.full(3, 2.0))
    assert calls == []


def test_a_reference_that_declines_compiles_the_kernel_now(deferral):
    fresh = _fresh_kernel()
    kernel = Kernel(lambda arrays, attrs: fresh(arrays[0]), reference=lambda arrays, attrs: None)
    np.testing.assert_array_equal(kernel.run_now([np.ones(2)], {}), np.full(2, 2.0))
    assert len(fresh.overloads) == 1


def test_kernels_in_the_cache_load_instead_of_deferring(deferral):
    fresh = _fresh_kernel()
    deferred_compiles.set_allowed(False)
    fresh(np.ones(3))                          # compiled now, and saved
    deferred_compiles.set_allowed(True)
    kernel, calls = _spied(_another_copy(fresh))
    np.testing.assert_array_equal(kernel.run_now([np.ones(3)], {}), np.full(3, 2.0))
    assert calls == []                        # loaded from the cache, not deferred


@pytest.mark.parametrize("tensor_first", [True, False])
def test_an_array_with_a_scalar_uses_the_ufunc_while_its_flat_loop_compiles(
        deferral, monkeypatch, tensor_first):
    """Eager ``x * 2.0`` on a large array runs a flat loop of its own: never compiled, the
    ufunc gives the result meanwhile, and the loop is compiled for the next calls (a cold
    process used to leave it to the next process, which compiled it while the user waited)."""
    import hybridtf as tf
    from hybridtf.eager.execute import LOOP_MIN_SIZE
    from hybridtf.framework import devices
    from hybridtf.registry import OPS

    variant = "as" if tensor_first else "sa"
    source = ("from ops.kernel_cache import njit\n\n\n@njit\n"
              f"def loop_{variant}(a, b, out):   # {uuid.uuid4().hex}\n"
              f"    for i in range(out.size):\n"
              f"        out[i] = {'a[i] * b' if tensor_first else 'a * b[i]'}\n")
    loop = getattr(codegen.load_source("test_deferred_" + uuid.uuid4().hex[:8], source),
                   "loop_" + variant)
    monkeypatch.setattr(OPS["multiply"].kernel(devices.CPU), "flat_loop", lambda v: loop)
    x = tf.constant(np.linspace(-3.0, 3.0, 2 * LOOP_MIN_SIZE, dtype=np.float32))
    deferred_compiles.set_allowed(False)   # the op's ufunc itself compiled, whatever the cache
    _ = x[:2] * 2.0
    deferred_compiles.set_allowed(True)

    def times_two():
        return x * 2.0 if tensor_first else 2.0 * x

    np.testing.assert_array_equal(times_two().numpy(), 2 * x.numpy())
    assert not loop.overloads                 # the ufunc ran; the loop compiles meanwhile
    deferred_compiles.wait()
    assert len(loop.overloads) == 1
    np.testing.assert_array_equal(times_two().numpy(), 2 * x.numpy())


def _holding_the_compiler(background):
    """A thread holding Numba's compiler lock until its event is set, as a background compile
    (``background``) or as another thread loading a kernel; returns (thread, event)."""
    from numba.core.compiler_lock import global_compiler_lock
    held, release = threading.Event(), threading.Event()

    def hold():
        with global_compiler_lock:
            if background:
                with deferred_compiles.handing_back_the_interpreter():
                    held.set()
                    release.wait(10)
            else:
                held.set()
                release.wait(0.3)   # a load: the caller waits for it
    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    return thread, release


@pytest.mark.parametrize("background", [True, False])
def test_a_cached_kernel_waits_for_a_load_but_not_for_a_background_compile(deferral,
                                                                           background):
    fresh = _fresh_kernel()
    deferred_compiles.set_allowed(False)
    fresh(np.ones(3))                          # in the cache now
    deferred_compiles.set_allowed(True)
    kernel, calls = _spied(_another_copy(fresh))
    thread, release = _holding_the_compiler(background)
    try:
        np.testing.assert_array_equal(kernel.run_now([np.ones(3)], {}), np.full(3, 2.0))
    finally:
        release.set()
        thread.join()
    assert calls == ([1] if background else [])


def _another_copy(dispatcher):
    """The dispatcher's module executed again: a new dispatcher, whose code is in the disk
    cache but not in memory."""
    module = sys.modules[dispatcher.py_func.__module__]
    spec = importlib.util.spec_from_file_location(module.__name__, module.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return getattr(copy, dispatcher.py_func.__name__)


@pytest.mark.parametrize("array", [
    np.zeros((3, 4)), np.zeros((3, 4), order="F"), np.zeros((4, 6))[:, ::2],
    np.zeros(5)[::2], np.zeros(()), np.zeros((0, 3)), np.broadcast_to(np.ones(3), (2, 3))])
def test_copies_for_the_background_are_typed_as_the_originals(array):
    copy = deferred_compiles.like(array)
    assert numba.typeof(copy) == numba.typeof(array)
    np.testing.assert_array_equal(copy, array)
    assert not np.shares_memory(copy, array)


def test_deferral_is_carried_to_pool_threads():
    seen = []

    def part():
        seen.append(deferred_compiles.active())

    with deferred_compiles.deferring():
        carried = deferred_compiles.carried(part)
    for target in (part, carried):
        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
    assert seen == [False, deferred_compiles.allowed()]


CHILD = '''
import json, sys
import numpy as np
import hybridtf as tf
from ops import reference

calls = {"n": 0}
for name in ("matmul", "sparse_softmax_cross_entropy", "reduce"):
    original = getattr(reference, name)
    def counted(*args, original=original):
        calls["n"] += 1
        return original(*args)
    setattr(reference, name, counted)

rng = np.random.default_rng(0)
w = tf.Variable(rng.standard_normal((6, 3)).astype(np.float32))
x = rng.standard_normal((5, 6)).astype(np.float32)
y = np.array([0, 2, 1, 1, 0], np.int32)

@tf.function
def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=tf.nn.relu(tf.matmul(x, w))))
    w.assign_sub(0.1 * tape.gradient(loss, w))
    return loss

losses = [float(step(x, y)) for _ in range(2)]
print(json.dumps({"losses": losses, "reference_calls": calls["n"]}))
'''


def _child(cache, synchronous):
    env = dict(os.environ, HYBRIDTF_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT),
               HYBRIDTF_SYNCHRONOUS_COMPILATION="1" if synchronous else "0")
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_cold_process_starts_on_references_and_leaves_the_kernels_cached(tmp_path):
    cold = _child(tmp_path / "cache", synchronous=False)
    assert cold["reference_calls"] > 0        # an empty cache: the first step ran on NumPy
    warm = _child(tmp_path / "cache", synchronous=False)
    assert warm["reference_calls"] == 0       # the exit waited for the kernels: all cached
    exact = _child(tmp_path / "other", synchronous=True)
    assert exact["reference_calls"] == 0
    np.testing.assert_allclose(cold["losses"], exact["losses"], rtol=1e-6)
    assert warm["losses"] == exact["losses"]
