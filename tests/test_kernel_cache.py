"""ops.kernel_cache and ops.cache_directory: kernels cache in hybridtf's cache directory, damaged
entries heal, the directory is private and bounded.

Damaged caches are loaded in child processes: a crash there (LLVM aborting on bad object code)
fails the test instead of killing the test run.
"""
import importlib
import importlib.util
import io
import json
import os
import pathlib
import pickle
import shutil
import stat
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
from numba.core import types
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher, cpu_target

import ops
from ops import cache_directory, codegen, elementwise, kernel_cache, ufunc_loops
from ops.kernel_cache import KernelCacheWarning

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPS_DIR = pathlib.Path(ops.__file__).resolve().parent

# Small kernels, one of each kind of dispatcher, in a module file of their own: jitted
# functions, and ufuncs whose inner loops are compiled callbacks (ops.ufunc_loops).
KERNELS = '''
import numpy as np
from numba import carray, types

from ops.kernel_cache import njit
from ops.ufunc_loops import load_at, make_ufunc, store_at


@njit
def add_one(x):
    return x + 1.0


@njit(error_model="numpy")
def scale(x):
    return 3.0 * x


@njit
def total(x):
    s = 0.0
    for v in x:
        s += v
    return s


@njit
def negate(x):
    return -x


@njit(nogil=True)
def halve(x):
    return x / 2.0


@njit
def cubed(x):
    return x * x * x


@njit
def doubled_plus_one(x):
    return 2.0 * x + 1.0
''' + "".join(
    "\n\n" + ufunc_loops.loop_source(name, ["float64"], "float64", scalar)
    + f"\n\n{name} = make_ufunc({name!r}, {name}, ['float64'], 'float64')\n"
    for name, scalar in (("cube", "cubed"), ("double_plus_one", "doubled_plus_one")))
JITTED = ("add_one", "scale", "total", "negate", "halve")
NAMES = JITTED + ("cube", "double_plus_one")
X = np.arange(5.0)
EXPECTED = {"add_one": (X + 1).tolist(), "scale": (3 * X).tolist(), "total": float(X.sum()),
            "negate": (-X).tolist(), "halve": (X / 2).tolist(), "cube": (X ** 3).tolist(),
            "double_plus_one": (2 * X + 1).tolist()}

CHILD = '''
import json, sys, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
from ops.kernel_cache import KernelCacheWarning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import kernels_under_test as k
    x = np.arange(5.0)
    results = {name: getattr(k, name)(x) for name in %r}
print(json.dumps({
    "results": {name: np.asarray(value).tolist() for name, value in results.items()},
    "hits": {name: sum(getattr(k, name).stats.cache_hits.values()) for name in %r},
    "warnings": [str(w.message) for w in caught if issubclass(w.category, KernelCacheWarning)],
}))
''' % (NAMES, JITTED)


def _child_env(cache, **extra):
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env.update(HYBRIDTF_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **extra)
    return env


def _run_child(source_dir, cache, child=CHILD, **extra):
    """The child's report; fails the test if the child fails (or crashes)."""
    done = subprocess.run([sys.executable, "-c", child, str(source_dir)],
                          env=_child_env(cache, **extra), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _kernel_files(cache, name):
    """(index, data file) of kernel ``name`` of the test module."""
    index, = (cache / "kernels").glob(f"*/kernels_under_test.{name}-*.nbi")
    data, = index.parent.glob(index.name[:-len("nbi")] + "*.nbc")
    return index, data


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A cache holding the test module's compiled kernels: (source dir, cache dir)."""
    base = tmp_path_factory.mktemp("kernel_cache")
    source = base / "source"
    source.mkdir()
    (source / "kernels_under_test.py").write_text(KERNELS)
    cache = base / "cache"
    first = _run_child(source, cache)
    assert first["results"] == EXPECTED and first["warnings"] == []
    second = _run_child(source, cache)
    assert second["results"] == EXPECTED and second["warnings"] == []
    assert all(hits > 0 for hits in second["hits"].values()), second["hits"]
    return source, cache


# ---- damage: each case makes a file's new bytes from its old bytes ------------------------------
def _flip(fraction):
    def damage(blob):
        position = min(int(len(blob) * fraction), len(blob) - 1)
        flipped = bytearray(blob)
        flipped[position] ^= 1 << (position % 8)
        return bytes(flipped)
    return damage


DAMAGES = {
    "empty": lambda blob: b"",
    "one byte": lambda blob: blob[:1],
    "truncated to half": lambda blob: blob[:len(blob) // 2],
    "last byte missing": lambda blob: blob[:-1],
    "junk appended": lambda blob: blob + b"\0junk",
    **{f"bit flip at {fraction:.0%}": _flip(fraction)
       for fraction in (0.0, 0.02, 0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0)},
}
CASES = [(file, damage) for file in ("index", "data") for damage in DAMAGES]
# The cases run len(NAMES) at a time: each kernel of a child's cache gets one damaged file.
BATCHES = [CASES[i:i + len(NAMES)] for i in range(0, len(CASES), len(NAMES))]


@pytest.mark.parametrize("batch", BATCHES, ids=lambda batch: "; ".join(map(" ".join, batch)))
def test_a_damaged_cache_file_is_deleted_with_one_warning_and_recompiled(
        warm_cache, batch, tmp_path):
    source, pristine = warm_cache
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    damaged = []
    for name, (file, damage) in zip(NAMES, batch):
        path = _kernel_files(cache, name)[0 if file == "index" else 1]
        path.write_bytes(DAMAGES[damage](path.read_bytes()))
        damaged.append(str(path))

    report = _run_child(source, cache)
    assert report["results"] == EXPECTED
    assert len(report["warnings"]) == len(damaged), report["warnings"]
    for path in damaged:
        assert sum(path in message for message in report["warnings"]) == 1, (path, report)

    healed = _run_child(source, cache)   # the recompiled kernels were saved again
    assert healed["results"] == EXPECTED and healed["warnings"] == []
    assert all(hits > 0 for hits in healed["hits"].values()), healed["hits"]


def test_an_index_of_another_numba_version_is_recompiled_quietly(warm_cache, tmp_path):
    source, pristine = warm_cache
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    index, _ = _kernel_files(cache, "add_one")
    stream = io.BytesIO(index.read_bytes()[len(kernel_cache._MAGIC) + 32:])
    pickle.load(stream)   # the Numba version that wrote it
    index.write_bytes(kernel_cache._sealed(pickle.dumps("0.0.1", protocol=-1) + stream.read()))
    report = _run_child(source, cache)
    assert report["results"] == EXPECTED and report["warnings"] == []
    assert report["hits"]["add_one"] == 0 and report["hits"]["scale"] > 0
    assert _run_child(source, cache)["hits"]["add_one"] > 0


def test_a_changed_kernel_library_compiles_its_kernels_afresh(warm_cache, tmp_path):
    """A kernel inlines what it calls from other files of the library: when the library
    changes, its cached code is stale even though its own file did not change."""
    source, pristine = warm_cache
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    changed = "import ops.library_digest\nops.library_digest.LIBRARY_DIGEST = 'changed'\n"
    report = _run_child(source, cache, child=changed + CHILD)
    assert report["results"] == EXPECTED and report["warnings"] == []
    assert not any(report["hits"].values()), report["hits"]
    again = _run_child(source, cache, child=changed + CHILD)   # saved for the new library
    assert all(hits > 0 for hits in again["hits"].values()), again["hits"]


LINKING_CHILD = '''
import json, sys
import numba
import numpy as np
sys.path.insert(0, sys.argv[1])
from ops import cached_code
import kernels_under_test as k
x = np.arange(5.0)
loaded = k.total(x)
library = k.total.overloads[k.total.signatures[0]].library
parsed_at_load = library._shared_module is not None

@numba.njit
def caller(x):   # compiled now: links the loaded kernel's code into its own
    return k.total(x) + k.add_one(x)[0]

engine = library.codegen._engine
names = cached_code.defined_names(library)
print(json.dumps({"loaded": loaded, "called": caller(x),
                  "hits": sum(k.total.stats.cache_hits.values()),
                  "kind": type(library).__name__, "parsed_at_load": parsed_at_load,
                  "parsed_after_link": library._shared_module is not None,
                  "names": sorted(names), "unregistered": sorted(names - engine._defined_symbols)}))
'''


def test_a_loaded_kernel_parses_its_bitcode_only_when_a_new_kernel_links_it(warm_cache):
    """``ops.cached_code``: a load skips the bitcode, and registers the names Numba's own load
    would have read from it; a kernel compiled later still links the loaded one."""
    source, cache = warm_cache
    report = _run_child(source, cache, child=LINKING_CHILD)
    assert report["hits"] > 0 and report["kind"] == "_LinkedOnDemand"
    assert not report["parsed_at_load"] and report["parsed_after_link"]
    assert report["loaded"] == 10.0 and report["called"] == 11.0
    assert report["names"] and report["unregistered"] == []


RUNTIME_CHILD = '''
import json, os, sys
from numba.core.runtime import rtsys
import ops.kernel_cache as kernel_cache
pid = os.fork()   # waits for the set-up: the child must not inherit Numba's compiler lock held
if pid == 0:   # the child loads a kernel and runs it
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import kernels_under_test as k
    os._exit(0 if k.total(np.arange(5.0)) == 10.0 else 3)
_, status = os.waitpid(pid, 0)
print(json.dumps({"thread": kernel_cache._RUNTIME_SETUP.name, "set_up": rtsys._init,
                  "child_exit": os.waitstatus_to_exitcode(status)}))
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_numbas_runtime_is_set_up_during_the_import_and_a_fork_waits_for_it(warm_cache):
    """The first kernel load does not set up Numba's runtime (20 ms): a thread started by the
    import has, and a child forked meanwhile still loads and runs kernels."""
    source, cache = warm_cache
    report = _run_child(source, cache, child=RUNTIME_CHILD)
    assert report == {"thread": "hybridtf-runtime-setup", "set_up": True, "child_exit": 0}


def test_an_index_key_is_numbas_and_asks_llvm_for_the_machine_once(monkeypatch):
    """A kernel's index key is the one Numba's cache makes, but the codegen's description of
    the machine (LLVM works the host CPU's name out at every call) is asked for once."""
    def plus_one(x):
        return x + 1
    cache = kernel_cache.njit(plus_one)._cache
    codegen = cpu_target.target_context.codegen()
    signature = (types.float64,)
    expected = FunctionCache._index_key(cache, signature, codegen)
    asked = []
    real = type(codegen).magic_tuple
    monkeypatch.setattr(type(codegen), "magic_tuple",
                        lambda self: asked.append(1) or real(self))
    kernel_cache._MAGIC_TUPLES.pop(codegen, None)
    keys = [cache._index_key(signature, codegen) for _ in range(3)]
    assert keys == [expected] * 3
    assert len(asked) == 1


# ---- where the cache is, and who may write it --------------------------------------------------
def test_ops_kernels_cache_in_the_cache_directory_not_beside_their_sources(tmp_path):
    """A copy of ``ops`` as an installed package: its kernels cache under HYBRIDTF_CACHE_DIR, with
    private permissions, and nothing is written beside the sources or in Numba's own cache."""
    package = tmp_path / "site"
    shutil.copytree(OPS_DIR, package / "ops", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in (package / "ops", package):
        folder.chmod(0o555)
    cache, user_cache = tmp_path / "cache" / "hybridtf", tmp_path / "user_cache"
    script = textwrap.dedent('''
        import numpy as np
        from ops import elementwise, reduce
        x = np.arange(6.0).reshape(2, 3)
        print(reduce.reduce_sum(x, (1,)).tolist(),
              elementwise.ufunc("add", "float64")(x, x).tolist())
    ''')
    env = _child_env(cache, XDG_CACHE_HOME=str(user_cache), PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = str(package)
    try:
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=300, cwd=tmp_path)
    finally:
        for folder in (package, package / "ops"):
            folder.chmod(0o755)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["[3.0,", "12.0]", "[[0.0,", "2.0,", "4.0],", "[6.0,", "8.0,",
                                   "10.0]]"]
    written = [p for p in package.rglob("*") if p.is_file() and p.suffix != ".py"]
    assert written == [], written
    assert not user_cache.exists()
    indexes = list((cache / "kernels").glob("ops_*/reduce.*.nbi"))
    assert indexes and list((cache / "kernels").glob("generated_*/elementwise_add_*.nbi"))
    for path in [cache, *cache.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def test_every_ops_kernel_uses_the_healing_cache():
    names = [".".join(("ops", *p.relative_to(OPS_DIR).with_suffix("").parts))
             for p in OPS_DIR.rglob("*.py") if p.stem != "__init__"]
    assert "ops.reduce" in names and "ops.nn.conv_winograd5" in names  # subpackages too
    modules = [importlib.import_module(name) for name in names]
    dispatchers = [value for module in modules for value in vars(module).values()
                   if isinstance(value, CPUDispatcher)
                   and value.py_func.__module__ == module.__name__]
    assert len(dispatchers) > 50
    plain = [d.py_func.__qualname__ for d in dispatchers
             if not isinstance(d._cache, kernel_cache.HealingCache)]
    assert plain == []
    add = elementwise.kernels("add")
    assert isinstance(add.loop_as._cache, kernel_cache.HealingCache)
    loop = kernel_cache.cfunc(ufunc_loops.LOOP_SIGNATURE)(add.ufunc_loop_float64)
    assert isinstance(loop._cache, kernel_cache.HealingCache)


def test_a_cache_directory_that_cannot_be_written_warns_once_and_kernels_still_run(
        tmp_path, monkeypatch):
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("")
    monkeypatch.setenv("HYBRIDTF_CACHE_DIR", str(blocker / "cache"))
    path = tmp_path / "unwritable_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("unwritable_kernels", path)
    module = importlib.util.module_from_spec(spec)
    with pytest.warns(KernelCacheWarning, match="could not write its kernel cache") as caught:
        spec.loader.exec_module(module)   # (its ufuncs' loops compile now)
        assert module.add_one(X).tolist() == EXPECTED["add_one"]
        assert module.scale(X).tolist() == EXPECTED["scale"]
    assert len([w for w in caught if issubclass(w.category, KernelCacheWarning)]) == 1


def test_a_cache_directory_others_can_write_gets_a_warning(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.warns(KernelCacheWarning, match="chmod 700"):
        cache_directory.CacheDirectory(str(shared)).check_private()
    private = tmp_path / "private"
    cache_directory.make_private_dirs(str(private / "kernels" / "x"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert stat.S_IMODE((private / "kernels").stat().st_mode) == 0o700
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache_directory.CacheDirectory(str(private)).check_private()


def test_decorators_refuse_cache_options_and_signatures():
    with pytest.raises(TypeError, match="always caches"):
        kernel_cache.njit(cache=False)
    with pytest.raises(TypeError, match="takes no signatures"):
        kernel_cache.njit("float64(float64)")
    with pytest.raises(TypeError, match="always caches"):
        kernel_cache.cfunc(ufunc_loops.LOOP_SIGNATURE, cache=True)


def test_an_unknown_numba_dispatcher_layout_warns_and_runs_uncached():
    class Dispatcher:
        pass

    with pytest.warns(KernelCacheWarning, match="cannot cache its kernels"):
        kernel_cache._cached(Dispatcher(), "_no_such_cache", lambda: None)


# ---- the size bound ----------------------------------------------------------------------------
def _entry(paths, size, age):
    """Files of ``size`` bytes each, last used ``age`` seconds ago."""
    moment = time.time() - age
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
        os.utime(path, (moment, moment))


def test_trim_deletes_least_recently_used_entries_but_not_those_in_use(tmp_path):
    kernels, generated = tmp_path / "kernels" / "ops_1", tmp_path / "generated"
    _entry([kernels / "m.old-1.py311.nbi", kernels / "m.old-1.py311.1.nbc",
            kernels / "m.old-1.py311.2.nbc"], 1000, 500)               # 3000 bytes, oldest
    _entry([kernels / "m.used-9.py311.nbi", kernels / "m.used-9.py311.1.nbc"], 1000, 400)
    _entry([generated / "graph_ab.py",
            generated / "__pycache__" / "graph_ab.cpython-311.pyc"], 1000, 300)
    _entry([kernels / "m.new-5.py311.nbi", kernels / "m.new-5.py311.1.nbc"], 1000, 10)
    _entry([tmp_path / "not_ours.bin"], 50_000, 1000)   # outside kernels/ and generated/
    cache = cache_directory.CacheDirectory(str(tmp_path))
    cache.use(str(kernels / "m.used-9.py311.nbi"))   # loaded by this process: kept
    assert cache._count() == 9000

    left = cache.trim(5000)   # down to 4000 bytes: the three oldest not in use go
    assert left == 4000
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "m.new-5.py311.1.nbc", "m.new-5.py311.nbi", "m.used-9.py311.1.nbc", "m.used-9.py311.nbi",
        "not_ours.bin"]

    cache.trim(0)   # only entries in use (and files not the cache's) are left
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "m.used-9.py311.1.nbc", "m.used-9.py311.nbi", "not_ours.bin"]


def test_the_size_is_counted_once_and_trimmed_only_past_the_limit(tmp_path, monkeypatch):
    cache = cache_directory.CacheDirectory(str(tmp_path))
    counts = []
    entries = cache._entries
    monkeypatch.setattr(cache, "_entries", lambda: counts.append(1) or entries())
    monkeypatch.setenv(cache_directory.SIZE_VARIABLE, "10K")
    for i in range(8):
        cache_directory.write_file(str(tmp_path / "generated" / f"m{i}.py"), b"x" * 1000, cache)
    assert len(counts) == 1    # the first write counts the directory; later ones add
    for i in range(8, 11):
        cache_directory.write_file(str(tmp_path / "generated" / f"m{i}.py"), b"x" * 1000, cache)
    assert len(counts) == 2    # past 10 KiB: trimmed -- the files this process wrote are in use
    assert len(list((tmp_path / "generated").glob("*.py"))) == 11
    monkeypatch.setattr(cache, "_in_use", set())
    for i in range(11, 14):
        cache_directory.write_file(str(tmp_path / "generated" / f"m{i}.py"), b"x" * 1000, cache)
    assert cache._count() <= 10 * 1024


def test_a_tiny_limit_keeps_the_directory_small_and_the_running_kernels(warm_cache, tmp_path):
    source, pristine = warm_cache
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    stale = cache / "kernels" / "ops_stale"
    _entry([stale / f"old.k{i}-1.py311.nbi" for i in range(20)], 5000, 3600)
    _entry([cache / "generated" / f"graph_{i}.py" for i in range(20)], 5000, 3600)
    (_kernel_files(cache, "cube")[0]).unlink()   # one kernel is compiled and written again
    report = _run_child(source, cache, HYBRIDTF_CACHE_MAX_SIZE="20K")
    assert report["results"] == EXPECTED
    assert list(stale.glob("*")) == [] and list((cache / "generated").glob("graph_*")) == []
    for name in NAMES:   # what the child loaded or wrote is kept, and loads next time
        _kernel_files(cache, name)
    again = _run_child(source, cache, HYBRIDTF_CACHE_MAX_SIZE="20K")
    assert all(hits > 0 for hits in again["hits"].values())


@pytest.mark.parametrize("text, size", [("", 1 << 30), ("123", 123), ("64k", 64 << 10),
                                        ("500M", 500 << 20), ("1.5G", 3 << 29),
                                        ("2GiB", 2 << 30), (" 1 T ", 1 << 40)])
def test_size_limit_setting(text, size, monkeypatch):
    monkeypatch.setenv(cache_directory.SIZE_VARIABLE, text)
    assert cache_directory.max_size() == size


def test_a_bad_size_limit_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(cache_directory.SIZE_VARIABLE, "lots")
    with pytest.raises(ValueError, match="HYBRIDTF_CACHE_MAX_SIZE .* such as 1G"):
        cache_directory.max_size()


def test_generated_modules_are_written_privately_and_marked_in_use(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDTF_CACHE_DIR", str(tmp_path / "cache"))
    module = codegen.load_source("cache_test", "VALUE = %d\n" % time.time_ns())
    path = pathlib.Path(module.__file__)
    assert path.parent == tmp_path / "cache" / "generated"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    cache = cache_directory.directory(str(tmp_path / "cache"))
    cache.trim(0)
    assert path.exists()


@kernel_cache.njit
def _sum_from(x, start):
    s = 0.0
    for i in range(start, x.shape[0]):
        s += x[i]
    return s


@kernel_cache.njit
def _sums_from_constants(x, start):
    return _sum_from(x, 0) + _sum_from(x, 1) + _sum_from(x, start)


def test_a_helper_called_with_constants_compiles_once_for_their_plain_types():
    """Numba types a constant argument as a literal, one specialization per constant; the
    library's helpers compile once for the plain types instead."""
    from numba.core import types
    assert _sums_from_constants(np.arange(4.0), 2) == 6.0 + 6.0 + 5.0
    # What typing the caller asks of the helper (whether the caller compiled now or loaded
    # from the cache, with the helper's code inside it):
    array = types.Array(types.float64, 1, "C")
    for start in (types.IntegerLiteral(0), types.IntegerLiteral(1), types.int64):
        _sum_from.get_call_template((array, start), {})
    assert _sum_from.signatures == [(array, types.int64)]


def test_llvm_calls_are_untimed_only_while_a_kernel_is_rebuilt():
    """Numba's "numba:llvm_lock" event (4 us a call into LLVM) is not raised for the calls of a
    kernel's rebuild from the cache, whose times Numba discards; elsewhere it is."""
    from llvmlite import binding as llvm
    from numba.core import event

    def events(untimed):
        with event.install_recorder("numba:llvm_lock") as recorder:
            if untimed:
                with kernel_cache._untimed_llvm_calls():
                    llvm.get_process_triple()
            else:
                llvm.get_process_triple()
        return len(recorder.buffer)

    timed = events(untimed=False)
    assert timed > 0 and timed % 2 == 0   # each call's start and end
    assert events(untimed=True) == 0
    assert events(untimed=False) == timed


def test_each_version_of_the_library_keeps_its_own_kernels(warm_cache, tmp_path):
    """An index holds one library version's entries: after another version compiled its own,
    going back (two installs sharing one cache directory) still finds the first's kernels."""
    source, pristine = warm_cache
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    versioned = ("import sys, ops.library_digest\n"
                 "ops.library_digest.LIBRARY_DIGEST = sys.argv.pop() * 64\n")

    def run(version):
        done = subprocess.run([sys.executable, "-c", versioned + CHILD, str(source), version],
                              env=_child_env(cache), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    for version, cached in (("a", False), ("b", False), ("a", True), ("b", True)):
        report = run(version)
        assert report["results"] == EXPECTED and report["warnings"] == []
        assert all((hits > 0) == cached for hits in report["hits"].values()), (version, report)


# A library kernel's first call in a process whose ``ops`` is the copy at sys.argv[1].
INSTALL_CHILD = '''
import json, sys
sys.path.insert(0, sys.argv[1])
from ops import diagonals
assert diagonals.__file__.startswith(sys.argv[1]), diagonals.__file__
value = diagonals.diagonal_length(3, 4, 1)
stats = diagonals.diagonal_length.stats
print(json.dumps({"value": value, "hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values())}))
'''


def test_installs_of_one_library_share_its_kernels(tmp_path):
    """The kernel library's kernels are cached by what the library is, not where it lies or
    when its files were written: a second install of the same sources (another virtual
    environment, a reinstall) loads what the first compiled; changed sources compile anew."""
    installs = {}
    for name in ("first", "second", "changed"):
        installs[name] = tmp_path / name
        # shutil.copy: new modification times, as a fresh install has
        shutil.copytree(ROOT / "ops", installs[name] / "ops", copy_function=shutil.copy,
                        ignore=shutil.ignore_patterns("__pycache__"))
    with open(installs["changed"] / "ops" / "diagonals.py", "a") as f:
        f.write("\n# changed\n")
    cache = tmp_path / "cache"

    def run(name):
        done = subprocess.run([sys.executable, "-c", INSTALL_CHILD, str(installs[name])],
                              env=_child_env(cache), capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["value"] == 3
        return report["hits"], report["misses"]

    assert run("first") == (0, 1)
    assert run("second") == (1, 0)
    assert run("changed") == (0, 1)
