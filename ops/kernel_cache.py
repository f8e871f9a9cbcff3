"""The disk cache of every hybridtf kernel: in hybridtf's cache directory, checked and healed.

Kernels are compiled by ``njit`` and ``cfunc`` from this module (the ``ops``
modules' own and the generated ones that ``ops.codegen`` writes).  They give each dispatcher a
cache object of its own; Numba's global settings are left alone, so a user's own
``@njit(cache=True)`` functions still cache where Numba puts them.

* Where: ``<cache_dir()>/kernels/`` (``ops.cache_directory``, which also keeps the directory
  private and bounded), never beside a kernel's source (an installed package may be read-only).
* Checked: each index and data file starts with a tag and the SHA-256 of the rest, checked
  before anything is unpickled or handed to LLVM: a truncated or bit-flipped file cannot crash
  the process.
* Healed: a file that cannot be loaded, for any reason, is deleted with one warning naming it,
  and the kernel is compiled again (and saved again).
* Announced: a compile after a cache miss that keeps its caller waiting longer than about a
  second gets one line naming the kernel (``ops.compile_notice``).
* Deferred where the caller can do without: inside ``deferred_compiles.deferring()`` a kernel
  that would compile (not load from the cache) raises ``KernelNotReady`` instead.
"""
import atexit
import contextlib
import functools
import hashlib
import inspect
import io
import os
import pickle
import re
import sys
import threading
import warnings
import weakref

import numba
from llvmlite.binding import ffi as llvm_ffi
from numba.core import sigutils, types
from numba.core.caching import (CompileResultCacheImpl, FunctionCache, IndexDataCacheFile,
                                NullCache, _CacheLocator, _SourceFileBackedLocatorMixin)
from numba.core.ccallback import CFunc
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys

from ops import cached_code, compile_notice, deferred_compiles
from ops.library_digest import COMPILED_FOR, LIBRARY_DIGEST
from ops.cache_directory import (KernelCacheWarning, cache_dir, directory, make_private_dirs,
                                 warn_once, write_file)

_MAGIC = b"hybridtf kernel cache 1\n"   # then the SHA-256 of the payload, then the payload
_DIGEST_SIZE = hashlib.sha256().digest_size


# ---- Numba's cache, checked and healed -------------------------------------------------------
class DamagedEntry(Exception):
    """A cache file that could not be loaded: which, and why."""

    def __init__(self, path, reason):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def _sealed(payload):
    return _MAGIC + hashlib.sha256(payload).digest() + payload


def _unsealed(path, blob):
    """The payload of a sealed file's bytes, or DamagedEntry."""
    header = len(_MAGIC) + _DIGEST_SIZE
    if len(blob) < header or not blob.startswith(_MAGIC):
        raise DamagedEntry(path, f"not a hybridtf kernel cache file ({len(blob)} bytes)")
    payload = blob[header:]
    if hashlib.sha256(payload).digest() != blob[len(_MAGIC):header]:
        raise DamagedEntry(path, "its checksum does not match its contents")
    return payload


def read_sealed(path):
    """The payload of the sealed cache file ``path``, None if there is none; DamagedEntry if it
    cannot be read or fails its check."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:   # unreadable: treated as damaged (deleted, if it can be)
        raise DamagedEntry(path, f"{type(error).__name__}: {error}") from error
    return _unsealed(path, blob)


def write_sealed(path, payload, cache=None):
    """Writes ``payload`` to ``path`` with its tag and checksum (``write_file``: private, in one
    step, counted against the size limit of ``cache``, by default the cache directory's)."""
    write_file(path, _sealed(payload), cache)


_LIBRARY_ROOT = os.path.dirname(os.path.abspath(__file__))   # the kernel library: ops/


class _Locator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Caches the kernels of a source file in ``<cache_dir>/kernels/<its folder>_<hash>/``.

    Numba's own locator names a file's folder by its full path and stamps its entries with the
    file's modification time.  For the kernel library's files, both are taken from what the
    library is instead of where it lies: the folder's place inside the library (and
    ``COMPILED_FOR``: an index holds one Numba's entries), and the library's hash
    (``ops.library_digest``).  So installs of one version that share a cache directory (two
    virtual environments, a reinstall, a copied environment) share its kernels, where each
    used to compile them all again -- and a generated module that another install compiled, its
    kernels found but the library's not, kept its first call waiting for them (the seed CNN's:
    17.6 s, measured)."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self.root = cache_dir()
        folder = os.path.dirname(os.path.abspath(py_file))
        self._in_library = (folder + os.sep).startswith(_LIBRARY_ROOT + os.sep)
        if self._in_library:
            place = os.path.relpath(folder, os.path.dirname(_LIBRARY_ROOT))
            where = hashlib.sha1(f"{place}\0{COMPILED_FOR}".encode())
            subpath = os.path.basename(folder) + "_" + where.hexdigest()
        else:
            subpath = self.get_suitable_cache_subpath(py_file)
        self._cache_path = os.path.join(self.root, "kernels", subpath)

    def get_source_stamp(self):
        return LIBRARY_DIGEST if self._in_library else super().get_source_stamp()

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        make_private_dirs(self._cache_path)


class _Impl(CompileResultCacheImpl):
    """Numba's CompileResult serialisation (with the names the code defines: see
    ``ops.cached_code``), with our locator (no search over Numba's)."""

    def __init__(self, py_func):
        source = inspect.getfile(py_func)
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = _Locator(py_func, source)
        qualname = getattr(py_func, "__qualname__", py_func.__name__)
        module = os.path.splitext(os.path.basename(source))[0]
        # The library's hash in the files' names as well as in their stamp: an index holds the
        # entries of one version of the library, and each version keeps its own, so that going
        # back to a version (two installs sharing the directory) finds its kernels compiled.
        self._filename_base = self.get_filename_base(
            f"{module}.{qualname}", getattr(sys, "abiflags", "")) + "." + LIBRARY_DIGEST[:12]

    def reduce(self, cres):
        # the names the code defines, kept so that a load need not parse its bitcode, and the
        # run-time symbols it calls, so that a load need not search its bytes for them
        reduced = super().reduce(cres)
        return reduced, cached_code.defined_names(cres.library), _symbols_called(reduced)

    def rebuild(self, target_context, payload):
        reduced, names = payload[:2]
        return cached_code.rebuild(target_context, reduced, names)


class _SealedFiles(IndexDataCacheFile):
    """Numba's index and data files, each sealed with a checksum checked before unpickling."""

    def __init__(self, cache_path, filename_base, source_stamp, root):
        super().__init__(cache_path, filename_base, source_stamp)
        self.directory = directory(root)
        self.base = os.path.join(cache_path, filename_base)

    def _write(self, path, payload):
        write_sealed(path, payload, self.directory)

    def _load_index(self):
        payload = read_sealed(self._index_path)
        if payload is None:
            return {}
        try:
            stream = io.BytesIO(payload)
            if pickle.load(stream) != self._version:
                return {}   # written by another Numba: compiled afresh, then overwritten
            stamp, overloads = pickle.loads(stream.read())
        except Exception as error:  # noqa: BLE001 - any failure to decode means a bad entry
            raise DamagedEntry(self._index_path, f"{type(error).__name__}: {error}") from error
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads):
        self._write(self._index_path, pickle.dumps(self._version, protocol=-1)
                    + self._dump((self._source_stamp, overloads)))

    def _load_data(self, name):
        path = self._data_path(name)
        payload = read_sealed(path)
        if payload is None:
            return None
        try:
            return pickle.loads(payload)
        except Exception as error:  # noqa: BLE001 - any failure to decode means a bad entry
            raise DamagedEntry(path, f"{type(error).__name__}: {error}") from error

    def _save_data(self, name, data):
        self._write(self._data_path(name), self._dump(data))

    def has(self, key):
        """Whether the index names ``key`` (DamagedEntry if unreadable)."""
        return key in self._load_index()

    def load(self, key):
        """(data file path, its contents) of ``key``, or None; DamagedEntry if unreadable."""
        name = self._load_index().get(key)
        if name is None:
            return None
        data = self._load_data(name)
        if data is None:   # deleted while the index still names it
            return None
        self.directory.use(self._index_path)
        return self._data_path(name), data

    def evict(self, path):
        """Deletes a damaged file: a data file alone (the index entry naming it is rewritten
        when the kernel is saved again), or an index with every data file of its kernel."""
        doomed = [path]
        if path == self._index_path:
            folder = os.path.dirname(path)
            prefix = os.path.basename(self.base) + "."
            with contextlib.suppress(OSError):
                doomed += [os.path.join(folder, name) for name in os.listdir(folder)
                           if name.startswith(prefix) and name.endswith(".nbc")]
        for doomed_path in doomed:
            with contextlib.suppress(OSError):   # gone already, or not ours to delete
                os.unlink(doomed_path)


_COMPILER_LOCK = global_compiler_lock._lock   # (re-entrant: free to the thread holding it)


_MAGIC_TUPLES = weakref.WeakKeyDictionary()   # codegen -> its magic_tuple()


class _CodegenAskedOnce:
    """What an index key asks of a codegen: its ``magic_tuple`` (the target, the host CPU's
    name and features), which LLVM works out again at every call (about 80 us, and every
    kernel load asks), asked once per codegen."""

    def __init__(self, codegen):
        self._codegen = codegen

    def magic_tuple(self):
        magic = _MAGIC_TUPLES.get(self._codegen)
        if magic is None:
            magic = _MAGIC_TUPLES[self._codegen] = self._codegen.magic_tuple()
        return magic


class HealingCache(FunctionCache):
    """Numba's function cache in hybridtf's directory, whose damaged entries heal."""

    _impl_class = _Impl

    def __init__(self, py_func):
        super().__init__(py_func)
        # the kernel's own file and the library it calls (see ops.library_digest)
        stamp = (self._impl.locator.get_source_stamp(), LIBRARY_DIGEST)
        self._cache_file = _SealedFiles(self._cache_path, self._impl.filename_base, stamp,
                                        self._impl.locator.root)
        self._ahead = {}   # argument types -> CompileResult loaded ahead (load_ahead)

    def _evict(self, damage):
        warnings.warn(
            f"hybridtf: the kernel cache file {damage.path} could not be loaded "
            f"({damage.reason}); it was deleted and {self._py_func.__qualname__} is compiled "
            f"again.",
            KernelCacheWarning, stacklevel=2)
        self._cache_file.evict(damage.path)

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, _CodegenAskedOnce(codegen))

    def load_overload(self, sig, target_context):
        compiled = self._ahead.pop(_arg_types(sig), None) if self._ahead else None
        if compiled is None:
            compiled = self._load_overload(sig, target_context)
        if compiled is None:   # the dispatcher compiles now: said if it keeps the caller waiting
            compile_notice.compiling(
                f"hybridtf: compiling kernels on their first use (now {_kernel_name(self._py_func)}"
                f"{_signature_text(sig)}); they are cached for the next runs, and "
                f"`python -m hybridtf.warmup` compiles the kernel library ahead of time")
        return compiled

    def _load_overload(self, sig, target_context):
        # Numba's own load refreshes the context: its first refresh imports and registers
        # Numba's whole library (0.1 s, a third of a warm first step), later ones take 0.5-4 ms
        # each.  Cached code needs only Numba's runtime, whose functions it calls; a compile
        # refreshes the context itself.
        rtsys.initialize(target_context)
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        try:
            found = self._cache_file.load(key)
            if found is None:
                return None
            path, data = found
            _define_symbols(data)
            try:
                with _untimed_llvm_calls():
                    return self._impl.rebuild(target_context, data)
            except Exception as error:  # noqa: BLE001 - any failure to rebuild is a bad entry
                raise DamagedEntry(path, f"{type(error).__name__}: {error}") from error
        except DamagedEntry as damage:
            self._evict(damage)
            return None   # the dispatcher compiles, then saves a fresh entry

    def load_ahead(self, sig, target_context, installed=()):
        """Loads the code for ``sig`` from the cache now and keeps it for the dispatcher's next
        compile of ``sig``, which takes it instead of reading the cache (``ops.kernel_prefetch``
        calls this on a thread of its own); never compiles, and loads nothing for argument
        types in ``installed`` (the dispatcher's overloads).  Whether the code was loaded."""
        arg_types = _arg_types(sig)
        with global_compiler_lock:   # as the dispatcher's own load
            if arg_types in installed:
                return False
            if arg_types not in self._ahead:
                compiled = self._load_overload(sig, target_context)
                if compiled is None:
                    return False
                self._ahead[arg_types] = compiled
        return True

    def holds(self, sig, target_context):
        """Whether the cache has code for ``sig`` (a damaged entry counts as none)."""
        if not self._enabled:
            return False
        if _arg_types(sig) in self._ahead:
            return True
        try:
            return self._cache_file.has(self._index_key(sig, target_context.codegen()))
        except DamagedEntry:
            return False

    def save_overload(self, sig, data):
        try:
            try:
                self._save_overload(sig, data)
            except DamagedEntry as damage:   # the index went bad since it was loaded
                self._evict(damage)
                self._save_overload(sig, data)
        except OSError as error:
            warn_once(("write", self._cache_path),
                      f"hybridtf could not write its kernel cache in {self._cache_path} "
                      f"({error}); kernels compiled now will be compiled again by later "
                      f"processes. Set HYBRIDTF_CACHE_DIR to a directory you can write to.")


def _arg_types(sig):
    """The argument types of a signature (a Numba signature, or a tuple of types)."""
    return tuple(sigutils.normalize_signature(sig)[0])


# ---- which kernels a piece of work asks of the cache (ops.kernel_prefetch) --------------------
_ASKED = []   # open records: lists of (Python function, signature), one per kernel asked for


def start_recording():
    """A list to which every kernel a dispatcher is asked to compile from now on (that is, to
    load from the cache, compile, or defer: ``_announced``) is appended, as (its Python
    function, its signature), until ``stop_recording`` (on any thread: a split op's parts load
    their kernels where they run)."""
    record = []
    _ASKED.append(record)
    return record


def stop_recording(record):
    with contextlib.suppress(ValueError):
        _ASKED.remove(record)


def _note_asked(py_func, sig):
    for record in list(_ASKED):
        if len(record) < _MAX_RECORDED:
            record.append((py_func, sig))


_MAX_RECORDED = 4096   # a record nobody stops (its work never ended) stays bounded


# ---- symbols that kernels call by name ------------------------------------------------------
# A kernel may call compiled code by a symbol name defined at run time (llvmlite's add_symbol)
# rather than linking a copy of it into its own code: ``ops.tile_gemm``'s products, compiled
# once instead of into every kernel that multiplies.  LLVM cannot load code that calls an
# undefined symbol, so a kernel's cached code is searched for the names first.
_SYMBOL_DEFINERS = {}   # the symbol's name as bytes -> the function that defines it


def defines_symbol(name, define):
    """Registers ``define()``, which defines the symbol ``name``: it is called before any
    kernel whose cached code mentions ``name`` is loaded (and must be cheap once done)."""
    _SYMBOL_DEFINERS[name.encode()] = define


def _mentions(value, name):
    """Whether ``name`` (bytes) occurs in the bytes within ``value`` (a cache entry: nested
    tuples holding the object code)."""
    if isinstance(value, (bytes, bytearray)):
        return name in value
    if isinstance(value, (tuple, list)):
        return any(_mentions(item, name) for item in value)
    return False


def _symbols_called(reduced):
    """The registered symbols whose names the code of a cache entry mentions."""
    return tuple(name for name in _SYMBOL_DEFINERS if _mentions(reduced, name))


def _define_symbols(data):
    """Defines the symbols the code of a cache entry (``_Impl.reduce``'s payload) calls: those
    it lists, or those its bytes mention (an entry written without the list)."""
    listed = data[2] if isinstance(data, tuple) and len(data) == 3 else _symbols_called(data)
    for name in listed:
        define = _SYMBOL_DEFINERS.get(name)
        if define is not None:
            define()


def _kernel_name(py_func):
    """``nn.pooling.max_pool2d_kernel``, ``elementwise_add.ufunc_float32``: the kernel's module
    (without its package, or the hash of a generated one) and name."""
    module = py_func.__module__.split(".", 1)[-1]
    return re.sub(r"_[0-9a-f]{16}$", "", module) + "." + py_func.__qualname__


def _signature_text(sig):
    """`` for float32, float32``: the dtypes of a signature's arguments (a tuple of types, or
    a Numba signature), each once."""
    args = getattr(sig, "args", sig)
    if not isinstance(args, tuple):
        return ""
    dtypes = dict.fromkeys(str(getattr(t, "dtype", t)) for t in args)
    return " for " + ", ".join(dtypes) if dtypes else ""


def _announced(dispatcher, compile_method, cache):
    """A dispatcher's ``compile`` inside a ``compile_notice.compile_scope``, so that a compile
    after a cache miss is announced should it keep its caller waiting.  (Numba's own
    ``numba:compile`` event is not raised by the dispatchers behind @vectorize.)  Inside
    ``deferred_compiles.deferring()``, a compile that is not a load from the cache is
    deferred instead."""
    @functools.wraps(compile_method)
    def compile(*args, **kwargs):
        if _ASKED and args:   # asked for, whether it loads, compiles or is deferred
            _note_asked(cache._py_func, args[0])
        if deferred_compiles.active():
            _defer_unless_ready(dispatcher, cache, args)
        with deferred_compiles.not_deferring(), compile_notice.compile_scope():
            return compile_method(*args, **kwargs)
    return compile


def _defer_unless_ready(dispatcher, cache, args):
    """Returns if the dispatcher's ``compile(*args)`` would find the code compiled, or in the
    cache and Numba's compiler free to load it; otherwise raises ``KernelNotReady`` (the caller
    queues what compiles it).  A compile in the background holds the compiler for up to
    seconds: the caller does not wait for it (but does for a load on another thread: the
    parts of a split op load their kernel at once)."""
    if args:   # a dispatcher's compile(signature)
        sig = args[0]
        arg_types, _ = sigutils.normalize_signature(sig)
        if dispatcher.overloads.get(tuple(arg_types)) is not None:
            return
        context = dispatcher.targetctx
    else:      # a C callback's compile() of its one signature
        sig = dispatcher._sig
        context = dispatcher._targetdescr.target_context
    if cache.holds(sig, context):
        if not deferred_compiles.compiling_in_background():
            return
        if _COMPILER_LOCK.acquire(blocking=False):
            _COMPILER_LOCK.release()
            return
    raise deferred_compiles.KernelNotReady(_kernel_name(cache._py_func) + _signature_text(sig))


# ---- LLVM calls left untimed while a kernel loads --------------------------------------------
# Numba times every call into LLVM, raising its "numba:llvm_lock" event on entry and exit (for a
# compile's statistics): about 4 us a call.  Rebuilding a kernel from the cache makes 35-40 such
# calls, timed for nothing (a loaded kernel has no compile statistics).  Numba's two callbacks on
# llvmlite's lock are wrapped so that they do nothing on a thread that is rebuilding a kernel.
_rebuilding = threading.local()


@contextlib.contextmanager
def _untimed_llvm_calls():
    outer = getattr(_rebuilding, "active", False)
    _rebuilding.active = True
    try:
        yield
    finally:
        _rebuilding.active = outer


def _skipped_while_rebuilding(callback):
    def unless_rebuilding():
        if not getattr(_rebuilding, "active", False):
            callback()
    unless_rebuilding.wraps_numba_timer = True
    return unless_rebuilding


def _wrap_numba_llvm_timers():
    callbacks = getattr(getattr(getattr(llvm_ffi, "lib", None), "_lock", None), "_cblist", None)
    if not isinstance(callbacks, list):
        return   # another llvmlite: Numba's timing stays as it is
    for i, (acquire, release) in enumerate(callbacks):
        if ("_initialize_llvm_lock_event" in getattr(acquire, "__qualname__", "")
                and not getattr(acquire, "wraps_numba_timer", False)):
            callbacks[i] = (_skipped_while_rebuilding(acquire),
                            _skipped_while_rebuilding(release))


_wrap_numba_llvm_timers()


# ---- Numba's runtime, set up while the import goes on ----------------------------------------
def _set_up_runtime():
    """Sets up Numba's runtime (NRT), which every kernel loaded from the cache needs: about
    20 ms at the first load otherwise, most of it LLVM compiling the runtime's own functions,
    which here overlaps the rest of the import on another core."""
    try:
        rtsys.initialize(cpu_target.target_context)
    except Exception:  # noqa: BLE001 - the first load sets it up again and raises there
        pass


_RUNTIME_SETUP = threading.Thread(target=_set_up_runtime, name="hybridtf-runtime-setup",
                                  daemon=True)
_RUNTIME_SETUP.start()
# A child forked meanwhile would inherit Numba's compiler lock held, and the interpreter's exit
# must not cut LLVM off mid-compile: both wait for the set-up (at most its 20 ms).
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_RUNTIME_SETUP.join)
atexit.register(_RUNTIME_SETUP.join)


# ---- the decorators --------------------------------------------------------------------------
def _cached(dispatcher, attribute, py_func):
    """Gives ``dispatcher`` a healing cache in place of the NullCache a dispatcher without
    ``cache=True`` has.  Numba has no public way to choose a dispatcher's cache class:
    ``enable_caching`` sets this same attribute to a FunctionCache (``_cache`` on Numba's
    dispatchers, ``cache`` on the ones behind @vectorize) whose locator would look for the
    source's own ``__pycache__`` first."""
    if not isinstance(getattr(dispatcher, attribute, None), NullCache):
        warn_once(("numba", attribute),
                  f"hybridtf cannot cache its kernels with Numba {numba.__version__} (its "
                  f"dispatchers have no {attribute!r} cache); kernels are compiled in every "
                  f"process.")
        return
    cache = HealingCache(py_func)
    setattr(dispatcher, attribute, cache)
    dispatcher.compile = _announced(dispatcher, dispatcher.compile, cache)


def _cache_option(options, name):
    if "cache" in options:
        raise TypeError(f"ops.kernel_cache.{name} always caches in hybridtf's cache directory; "
                        f"do not pass cache=")


def _no_signatures(function, name):
    if function is not None and not callable(function):
        raise TypeError(f"ops.kernel_cache.{name} compiles on first call; it takes no "
                        f"signatures (got {function!r})")


def njit(function=None, **options):
    """``numba.njit(**options)`` whose compiled code is cached by this module (``cache=True``
    is implied and must not be passed).  Use as ``@njit`` or ``@njit(nogil=True, ...)``."""
    _cache_option(options, "njit")
    _no_signatures(function, "njit")

    def decorate(py_func):
        dispatcher = numba.njit(**options)(py_func)
        _cached(dispatcher, "_cache", py_func)
        _typed_without_literals(dispatcher)
        return dispatcher

    return decorate if function is None else decorate(function)


def _typed_without_literals(dispatcher):
    """Calls from compiled code compile ``dispatcher`` for its arguments' plain types.  Numba
    types a constant argument (``helper(dst, 0, ...)``) as a literal and compiles a separate
    specialization for each constant (0.1 to 0.5 s each); LLVM still folds the constant once
    the helper is inlined into its caller."""
    template = dispatcher.get_call_template

    def get_call_template(args, kws):
        return template(tuple(types.unliteral(a) for a in args),
                        {k: types.unliteral(v) for k, v in kws.items()})
    dispatcher.get_call_template = get_call_template


def cfunc(signature, **options):
    """``numba.cfunc(signature, **options)``, compiled now (as Numba's), whose compiled code is
    cached by this module: a C callback (a NumPy ufunc's inner loop, ``ops.ufunc_loops``) loads
    from the cache in about a millisecond."""
    _cache_option(options, "cfunc")

    def decorate(py_func):
        callback = CFunc(py_func, sigutils.normalize_signature(signature), locals={},
                         options=options)
        _cached(callback, "_cache", py_func)
        callback.compile()
        return callback

    return decorate
