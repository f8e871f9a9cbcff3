"""The disk cache of every hybridtf kernel: in hybridtf's cache directory, checked, healed, bounded.

Kernels are compiled by ``njit`` and ``vectorize`` from this module (the ``ops`` modules' own and
the generated ones that ``ops.codegen`` writes).  They give each dispatcher a cache object of
its own; Numba's global settings are left alone, so a user's own ``@njit(cache=True)``
functions still cache where Numba puts them.

* Where: ``<cache_dir()>/kernels/``, never beside a kernel's source (an installed package may
  be read-only).
* Checked: each index and data file starts with a tag and the SHA-256 of the rest, checked
  before anything is unpickled or handed to LLVM: a truncated or bit-flipped file cannot crash
  the process.
* Healed: a file that cannot be loaded, for any reason, is deleted with one warning naming it,
  and the kernel is compiled again (and saved again).
* Private: the files are pickles, and loading a pickle runs code, so the directory must be
  writable only by its user.  Directories are created with mode 0o700 and files with 0o600;
  a cache directory that other users can write to gets a warning.
* Bounded: ``kernels/`` and ``generated/`` together are kept under ``HYBRIDTF_CACHE_MAX_SIZE``
  (default 1 GiB) by deleting the entries used least recently.  The size is counted once per
  process and then only when this process writes; entries this process has loaded are never
  deleted by it.
"""
import contextlib
import inspect
import io
import hashlib
import os
import pickle
import re
import sys
import threading
import time
import uuid
import warnings

import numba
from numba.core.caching import (CompileResultCacheImpl, FunctionCache, IndexDataCacheFile,
                                NullCache, _CacheLocator, _SourceFileBackedLocatorMixin)

SIZE_VARIABLE = "HYBRIDTF_CACHE_MAX_SIZE"
DEFAULT_MAX_SIZE = 1 << 30
_MAGIC = b"hybridtf kernel cache 1\n"   # then the SHA-256 of the payload, then the payload
_DIGEST_SIZE = hashlib.sha256().digest_size
_TRIM_TO = 0.8    # a trim leaves this fraction of the limit, so that the next is some writes away


class KernelCacheWarning(UserWarning):
    """The kernel cache could not be used as it should: a damaged entry, a directory others can
    write to, or a directory that cannot be written."""


def cache_dir():
    """The directory for generated modules and compiled kernels.

    ``HYBRIDTF_CACHE_DIR`` overrides the default, ``$XDG_CACHE_HOME/hybridtf`` (``~/.cache``).
    """
    root = os.environ.get("HYBRIDTF_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "hybridtf")
    return os.path.abspath(root)


def max_size():
    """The size limit of the cache in bytes: ``HYBRIDTF_CACHE_MAX_SIZE``, a number of bytes with
    an optional K, M, G or T suffix (powers of 1024), or 1 GiB when unset."""
    text = os.environ.get(SIZE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_SIZE
    match = re.fullmatch(r"(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"{SIZE_VARIABLE} must be a size in bytes with an optional K, M, G or T "
                         f"suffix, such as 1G or 500M; got {text!r}")
    scale = 1024 ** " kmgt".index(match.group(2).lower() or " ")
    return int(float(match.group(1)) * scale)


# ---- the directory: private, and bounded in size ---------------------------------------------
_made_dirs = set()
_warned = set()   # one-time warnings already given (their keys)


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, KernelCacheWarning, stacklevel=3)


def make_private_dirs(path):
    """Creates ``path`` and its missing parents, each with mode 0o700 (only its user may enter,
    read or write it); existing directories are left as they are."""
    if path in _made_dirs:
        return
    if not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent != path:
            make_private_dirs(parent)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    _made_dirs.add(path)


def writable_by_others(path):
    """Why others than this user could write to directory ``path``, or None when they cannot."""
    st = os.stat(path)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to user id {st.st_uid}"
    if st.st_mode & 0o022:
        return f"its mode is {st.st_mode & 0o777:o}"
    return None


def _entry_key(path):
    """Files of one cache entry share a key: a kernel's index (``<base>.nbi``) and its data
    files (``<base>.<n>.nbc``); a generated module and its bytecode (``__pycache__/*.pyc``).
    Every other file is an entry of its own."""
    if path.endswith(".nbi"):
        return path[:-4]
    if path.endswith(".nbc"):
        return path[:-4].rpartition(".")[0]
    folder, name = os.path.split(path)
    if name.endswith(".pyc") and os.path.basename(folder) == "__pycache__":
        return os.path.join(os.path.dirname(folder), name.partition(".")[0] + ".py")
    return path


class CacheDirectory:
    """The bounded part of one cache directory (``kernels/`` and ``generated/``): what it holds,
    what this process uses, and when it must be trimmed."""

    def __init__(self, root):
        self.root = root
        self.parts = [os.path.join(root, "kernels"), os.path.join(root, "generated")]
        self._lock = threading.Lock()
        self._in_use = set()    # entry keys this process has loaded or written
        self._size = None       # bytes by the last count, plus what this process wrote since
        self._trim_above = 0
        self._checked = False

    def check_private(self):
        """Warns once if others can write to the directory (its pickles would run their code)."""
        if self._checked:
            return
        self._checked = True
        with contextlib.suppress(OSError):   # none yet (it is made private), or unreachable
            reason = writable_by_others(self.root)
            if reason:
                _warn_once(("open", self.root),
                           f"hybridtf's kernel cache directory {self.root} can be written by other "
                           f"users ({reason}). Its files are pickles, and loading them runs code: "
                           f"make it private (chmod 700) or set HYBRIDTF_CACHE_DIR to a directory "
                           f"only you can write to.")

    def use(self, path):
        """Marks the entry of ``path`` as in use by this process (never deleted by its trims)
        and as used now (its access time; the modification time stays, so that Python's
        bytecode cache of a generated module stays valid)."""
        self._in_use.add(_entry_key(path))
        with contextlib.suppress(OSError):
            os.utime(path, (time.time(), os.stat(path).st_mtime))

    def wrote(self, path, size):
        """Counts ``size`` bytes just written to ``path`` and trims if the limit is passed."""
        self._in_use.add(_entry_key(path))
        with self._lock:
            if self._size is None:
                self._size = self._count()
            else:
                self._size += size
            limit = max_size()
            if self._size > max(limit, self._trim_above):
                self._size = self.trim(limit)
                # Entries in use can keep the size above the limit: count again only once
                # a fifth of the limit more has been written.
                self._trim_above = self._size + limit // 5

    def _entries(self):
        """{key: [bytes, last use, paths]} of the files in the bounded part."""
        entries = {}
        for part in self.parts:
            for folder, _, names in os.walk(part):
                for name in names:
                    path = os.path.join(folder, name)
                    try:
                        st = os.stat(path)
                    except FileNotFoundError:   # deleted meanwhile (another process's trim)
                        continue
                    entry = entries.setdefault(_entry_key(path), [0, 0.0, []])
                    entry[0] += st.st_size
                    entry[1] = max(entry[1], st.st_atime, st.st_mtime)
                    entry[2].append(path)
        return entries

    def _count(self):
        return sum(size for size, _, _ in self._entries().values())

    def trim(self, limit):
        """Deletes the least recently used entries that this process does not use until the
        bounded part holds at most ``_TRIM_TO * limit`` bytes (or only entries in use).
        Returns the bytes left."""
        entries = self._entries()
        total = sum(size for size, _, _ in entries.values())
        target = int(limit * _TRIM_TO)
        for key, (size, _, paths) in sorted(entries.items(), key=lambda item: item[1][1]):
            if total <= target:
                break
            if key in self._in_use:
                continue
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            total -= size
        return total


_directories = {}


def directory(root=None):
    """The ``CacheDirectory`` of ``root`` (default: ``cache_dir()``), one per process."""
    root = cache_dir() if root is None else root
    found = _directories.get(root)
    if found is None:
        found = _directories.setdefault(root, CacheDirectory(root))
    found.check_private()
    return found


def write_file(path, data, cache=None):
    """Writes bytes ``data`` to ``path`` in the cache directory ``cache`` (a CacheDirectory;
    default: ``directory()``): readable and writable by this user only, replacing the old file
    in one step (a reader sees the old or the new file, never a part), counted against the size
    limit."""
    folder = os.path.dirname(path)
    make_private_dirs(folder)
    temporary = f"{path}.tmp.{uuid.uuid4().hex[:16]}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    (cache or directory()).wrote(path, len(data))


def use_file(path):
    """Marks the cache file ``path`` (a generated module: with its bytecode) as used now by
    this process."""
    directory().use(path)


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


class _Locator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Caches the kernels of a source file in ``<cache_dir>/kernels/<its folder>_<hash>/``."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self.root = cache_dir()
        self._cache_path = os.path.join(self.root, "kernels",
                                        self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        make_private_dirs(self._cache_path)


class _Impl(CompileResultCacheImpl):
    """Numba's CompileResult serialisation, with our locator (no search over Numba's)."""

    def __init__(self, py_func):
        source = inspect.getfile(py_func)
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = _Locator(py_func, source)
        qualname = getattr(py_func, "__qualname__", py_func.__name__)
        module = os.path.splitext(os.path.basename(source))[0]
        self._filename_base = self.get_filename_base(f"{module}.{qualname}",
                                                     getattr(sys, "abiflags", ""))


class _SealedFiles(IndexDataCacheFile):
    """Numba's index and data files, each sealed with a checksum checked before unpickling."""

    def __init__(self, cache_path, filename_base, source_stamp, root):
        super().__init__(cache_path, filename_base, source_stamp)
        self.directory = directory(root)
        self.base = os.path.join(cache_path, filename_base)

    def _read(self, path):
        """The payload of cache file ``path``, None if there is none; DamagedEntry if it
        cannot be read or fails its check."""
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:   # unreadable: treated as damaged (deleted, if it can be)
            raise DamagedEntry(path, f"{type(error).__name__}: {error}") from error
        return _unsealed(path, blob)

    def _write(self, path, payload):
        write_file(path, _sealed(payload), self.directory)

    def _load_index(self):
        payload = self._read(self._index_path)
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
        payload = self._read(path)
        if payload is None:
            return None
        try:
            return pickle.loads(payload)
        except Exception as error:  # noqa: BLE001 - any failure to decode means a bad entry
            raise DamagedEntry(path, f"{type(error).__name__}: {error}") from error

    def _save_data(self, name, data):
        self._write(self._data_path(name), self._dump(data))

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


class _HealingCache(FunctionCache):
    """Numba's function cache in hybridtf's directory, whose damaged entries heal."""

    _impl_class = _Impl

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = _SealedFiles(self._cache_path, self._impl.filename_base,
                                        self._impl.locator.get_source_stamp(),
                                        self._impl.locator.root)

    def _evict(self, damage):
        warnings.warn(
            f"hybridtf: the kernel cache file {damage.path} could not be loaded "
            f"({damage.reason}); it was deleted and {self._py_func.__qualname__} is compiled "
            f"again.",
            KernelCacheWarning, stacklevel=2)
        self._cache_file.evict(damage.path)

    def load_overload(self, sig, target_context):
        target_context.refresh()
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        try:
            found = self._cache_file.load(key)
            if found is None:
                return None
            path, data = found
            try:
                return self._impl.rebuild(target_context, data)
            except Exception as error:  # noqa: BLE001 - any failure to rebuild is a bad entry
                raise DamagedEntry(path, f"{type(error).__name__}: {error}") from error
        except DamagedEntry as damage:
            self._evict(damage)
            return None   # the dispatcher compiles, then saves a fresh entry

    def save_overload(self, sig, data):
        try:
            try:
                self._save_overload(sig, data)
            except DamagedEntry as damage:   # the index went bad since it was loaded
                self._evict(damage)
                self._save_overload(sig, data)
        except OSError as error:
            _warn_once(("write", self._cache_path),
                       f"hybridtf could not write its kernel cache in {self._cache_path} "
                       f"({error}); kernels compiled now will be compiled again by later "
                       f"processes. Set HYBRIDTF_CACHE_DIR to a directory you can write to.")


# ---- the decorators --------------------------------------------------------------------------
def _cached(dispatcher, attribute, py_func):
    """Gives ``dispatcher`` a healing cache in place of the NullCache a dispatcher without
    ``cache=True`` has.  Numba has no public way to choose a dispatcher's cache class:
    ``enable_caching`` sets this same attribute to a FunctionCache (``_cache`` on Numba's
    dispatchers, ``cache`` on the ones behind @vectorize) whose locator would look for the
    source's own ``__pycache__`` first."""
    if not isinstance(getattr(dispatcher, attribute, None), NullCache):
        _warn_once(("numba", attribute),
                   f"hybridtf cannot cache its kernels with Numba {numba.__version__} (its "
                   f"dispatchers have no {attribute!r} cache); kernels are compiled in every "
                   f"process.")
        return
    setattr(dispatcher, attribute, _HealingCache(py_func))


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
        return dispatcher

    return decorate if function is None else decorate(function)


def vectorize(function=None, **options):
    """``numba.vectorize(**options)`` without signatures -- a ufunc compiled on first call for
    each input type (add loops with its ``add``) -- whose compiled code is cached by this
    module.  Use as ``@vectorize`` or ``@vectorize(identity=0, ...)``."""
    _cache_option(options, "vectorize")
    _no_signatures(function, "vectorize")

    def decorate(py_func):
        dufunc = numba.vectorize(**options)(py_func)
        _cached(dufunc._dispatcher, "cache", py_func)
        return dufunc

    return decorate if function is None else decorate(function)
