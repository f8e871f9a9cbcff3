"""ops.kernel_prefetch: a first call writes down the kernels it asked the cache for, and the next
process's first call of the same function loads them on a thread while it traces.

Loading happens once per process, so each case runs in child processes with a cache directory
of its own.
"""
import json
import os
import pathlib
import pickle
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from hybridtf.graph import trace_key as tk
from ops import kernel_cache, kernel_prefetch

ROOT = pathlib.Path(__file__).resolve().parent.parent

KERNELS = '''
from ops.kernel_cache import njit


@njit
def add_one(x):
    return x + 1.0


@njit
def total(x):
    s = 0.0
    for v in x:
        s += v
    return s


@njit
def never_called(x):
    return x * 7.0
'''

# Records the kernels asked for by one piece of work (a first call), or loads them ahead first.
KERNELS_CHILD = '''
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from ops import kernel_prefetch
import prefetch_kernels as k

first = kernel_prefetch.FirstCall("work")
first.wait()
kept_aside = [len(getattr(k, name).overloads) for name in ("add_one", "total")]
x = np.arange(4.0)
results = [k.add_one(x).tolist(), float(k.total(x))]
first.finish()
print(json.dumps({
    "results": results,
    "loaded_ahead": [[m, q] for m, q, _ in first.loaded_ahead],
    "installed_before_asked": kept_aside,
    "hits": [sum(getattr(k, n).stats.cache_hits.values()) for n in ("add_one", "total")],
    "never_called_compiled": len(k.never_called.overloads),
    "working_set": [[m, q] for m, q, _ in kernel_prefetch.read_working_set("work")],
}))
'''


def _run(child, *args, cache, extra_env=None):
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env.update(HYBRIDTF_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **(extra_env or {}))
    done = subprocess.run([sys.executable, "-c", child, *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def kernels_module(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    (source / "prefetch_kernels.py").write_text(KERNELS)
    return source, tmp_path / "cache"


def test_the_kernels_asked_for_are_written_down_and_load_ahead_in_the_next_process(
        kernels_module):
    source, cache = kernels_module
    first = _run(KERNELS_CHILD, source, cache=cache)
    assert first["results"] == [[1.0, 2.0, 3.0, 4.0], 6.0]
    assert first["loaded_ahead"] == []   # nothing was written down yet
    kernels = [["prefetch_kernels", "add_one"], ["prefetch_kernels", "total"]]
    assert first["working_set"] == kernels   # in the order asked for; never_called is not

    second = _run(KERNELS_CHILD, source, cache=cache)
    assert second["results"] == first["results"]
    assert second["loaded_ahead"] == kernels
    # kept aside until asked for, then served as a load from the cache
    assert second["installed_before_asked"] == [0, 0]
    assert second["hits"] == [1, 1]
    assert second["working_set"] == kernels


def test_a_kernel_not_in_the_cache_is_not_compiled_ahead(kernels_module):
    source, cache = kernels_module
    _run(KERNELS_CHILD, source, cache=cache)
    # A working set naming a kernel never compiled, a module never imported and a name that
    # does not exist: only what the cache holds loads.
    report = _run(textwrap.dedent('''
        import json, pickle, sys
        import numpy as np
        from numba.core import types
        sys.path.insert(0, sys.argv[1])
        from ops import kernel_prefetch
        import prefetch_kernels as k
        array = types.Array(types.float64, 1, "C")
        kernel_prefetch.write_working_set("stale", [
            ("prefetch_kernels", "never_called", (array,)),
            ("module_never_imported", "f", (array,)),
            ("prefetch_kernels", "no_such_kernel", (array,)),
            ("prefetch_kernels", "add_one", (array,))])
        first = kernel_prefetch.FirstCall("stale")
        first.wait()
        first.finish()
        print(json.dumps({
            "loaded_ahead": [q for _, q, _ in first.loaded_ahead],
            "never_called_compiled": len(k.never_called.overloads),
            "working_set": kernel_prefetch.read_working_set("stale") != [],
        }))'''), source, cache=cache)
    assert report["loaded_ahead"] == ["add_one"]
    assert report["never_called_compiled"] == 0
    assert not list((cache / "kernels").glob("*/prefetch_kernels.never_called-*"))
    assert report["working_set"]   # nothing asked for: the last working set stays


@pytest.mark.parametrize("damage", [b"", b"junk", None])
def test_a_damaged_working_set_is_deleted_and_ignored(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("HYBRIDTF_CACHE_DIR", str(tmp_path))
    path = tmp_path / "working_sets" / "damaged.pkl"
    path.parent.mkdir()
    if damage is None:   # sealed, but not a list of kernels
        kernel_cache.write_sealed(str(path), pickle.dumps({"not": "kernels"}))
    else:
        path.write_bytes(damage)
    assert kernel_prefetch.read_working_set("damaged") == []
    assert not path.exists()
    first = kernel_prefetch.FirstCall("damaged")
    first.finish()   # nothing asked for: nothing written
    assert not path.exists()


def test_a_working_set_is_written_again_only_when_its_kernels_change(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDTF_CACHE_DIR", str(tmp_path))
    a, b = (("module_never_imported", name, ()) for name in "ab")
    written = []
    write = kernel_prefetch.write_working_set
    monkeypatch.setattr(kernel_prefetch, "write_working_set",
                        lambda name, entries: (written.append(entries), write(name, entries)))

    def first_call(*asked):
        first = kernel_prefetch.FirstCall("order")
        first._record.extend((types.SimpleNamespace(__module__=m, __qualname__=q), sig)
                             for m, q, sig in asked)
        first.finish()
        return kernel_prefetch.read_working_set("order")

    assert first_call(a, b) == [a, b] and written == [[a, b]]
    assert first_call(b, a) == [a, b] and len(written) == 1   # the same kernels: kept as is
    assert first_call(b) == [b] and written[-1] == [b]        # one fewer: written again
    assert first_call(b, a) == [b, a] and written[-1] == [b, a]


def test_working_sets_are_keyed_without_sizes():
    def key(*args):
        return tk.without_sizes(tk.call_key(list(zip("abcd", args))))

    float32 = np.zeros((50, 28, 28, 1), np.float32)
    assert key(float32, np.zeros(50, np.int32)) == key(np.zeros((64, 28, 28, 1), np.float32),
                                                       np.zeros(64, np.int32))
    assert key(float32) != key(float32.astype(np.float64))
    assert key(float32) != key(np.zeros((50, 784), np.float32))   # ranks differ
    assert key(float32, 0.5) != key(float32, 1.5)                   # Python values differ
    assert key([float32, float32]) == key([np.zeros((2, 3, 4, 5), np.float32)] * 2)
    assert key(bytearray(1)) == key(bytearray(2))   # unhashable: their types, not identities


# A decorated function's first call, in a process of its own: what it loaded ahead.
FUNCTION_CHILD = '''
import json, sys
import numpy as np
import hybridtf as tf
from ops import kernel_prefetch

started = []
class Recorded(kernel_prefetch.FirstCall):
    # The call waits for the loading to end: which thread gets a kernel first is otherwise
    # a race (on a busy machine the call can load them all itself, or finish first).
    def __init__(self, name):
        super().__init__(name)
        started.append(self)
        self.wait()
kernel_prefetch.FirstCall = Recorded

class Model:
    def __init__(self):
        self.w = tf.Variable(np.linspace(-1, 1, 24).reshape(8, 3).astype(np.float32))

    @tf.function
    def loss(self, x):
        return tf.reduce_sum(tf.tanh(tf.matmul(x, self.w)) * 2.0 + 1.0)

batch = int(sys.argv[1])
x = np.linspace(0, 1, batch * 8).reshape(batch, 8).astype(np.float32)
model = Model()
value = float(model.loss(x))
expected = float(np.sum(np.tanh(x.astype(np.float64) @ model.w.numpy()) * 2 + 1))
first, = started
print(json.dumps({"value": value, "expected": expected,
                  "loaded_ahead": [[m, q] for m, q, _ in first.loaded_ahead]}))
'''


def test_a_decorated_functions_kernels_load_ahead_for_another_batch_size(tmp_path):
    # The suite's kernel cache, so that the library's kernels are not compiled again; the
    # working set is the function's alone (its file is new).
    script = tmp_path / "model_under_test.py"
    script.write_text(FUNCTION_CHILD)
    run = [sys.executable, str(script)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), HYBRIDTF_SYNCHRONOUS_COMPILATION="1")
    reports = []
    for batch in (3, 5):
        done = subprocess.run(run + [str(batch)], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = reports
    for report in reports:
        assert report["value"] == pytest.approx(report["expected"], rel=1e-5)
    assert first["loaded_ahead"] == []
    generated = [q for m, q in second["loaded_ahead"] if m.startswith("hybridtf_generated.")]
    assert generated, second   # the compiled plan's fused kernels
    assert any(m.startswith("ops.") for m, _ in second["loaded_ahead"]), second


def test_loading_stops_at_exit_and_before_a_fork(kernels_module):
    """No loading thread is left inside LLVM, or holding Numba's compiler lock, when the
    interpreter exits or the process forks (a child would inherit the lock held)."""
    source, cache = kernels_module
    _run(KERNELS_CHILD, source, cache=cache)
    report = _run(textwrap.dedent('''
        import json, os, sys
        sys.path.insert(0, sys.argv[1])
        from numba.core.compiler_lock import global_compiler_lock
        from ops import kernel_prefetch
        import prefetch_kernels
        first = kernel_prefetch.FirstCall("work")
        pid = os.fork()
        if pid == 0:   # the child can take the compiler lock: nobody holds it
            acquired = global_compiler_lock._lock.acquire(timeout=10)
            os._exit(0 if acquired else 3)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"child": os.waitstatus_to_exitcode(status),
                          "loading": len(kernel_prefetch._LOADING),
                          "alive": first._thread.is_alive()}))'''), source, cache=cache)
    assert report == {"child": 0, "loading": 0, "alive": False}
