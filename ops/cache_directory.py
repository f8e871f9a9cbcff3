"""hybridtf's cache directory: where generated modules and compiled kernels live, kept private
and bounded in size.

* Where: ``HYBRIDTF_CACHE_DIR``, or ``$XDG_CACHE_HOME/hybridtf`` (``~/.cache/hybridtf``); kernels
  in ``kernels/``, generated modules in ``generated/``, functions AutoGraph converted in
  ``autograph/``, the kernels each decorated function's first call asked for in
  ``working_sets/`` (``ops.kernel_prefetch``).
* Private: the kernel files are pickles, and loading a pickle runs code, so the directory must
  be writable only by its user.  Directories are created with mode 0o700 and files with 0o600;
  a cache directory that other users can write to gets a warning.
* Bounded: the four together are kept under ``HYBRIDTF_CACHE_MAX_SIZE`` (default 1 GiB) by
  deleting the entries used least recently.  The size is counted once per process and then only
  when this process writes; entries this process has loaded are never deleted by it.
"""
import contextlib
import os
import re
import threading
import time
import uuid
import warnings

SIZE_VARIABLE = "HYBRIDTF_CACHE_MAX_SIZE"
DEFAULT_MAX_SIZE = 1 << 30
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


def warn_once(key, message):
    """Warns ``message`` (a KernelCacheWarning) the first time ``key`` is given."""
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


COMPILED_MARK = ".compiled"   # see ops.codegen.mark_compiled


def _entry_key(path):
    """Files of one cache entry share a key: a kernel's index (``<base>.nbi``) and its data
    files (``<base>.<n>.nbc``); a generated module, its bytecode (``__pycache__/*.pyc``) and
    its mark of compiled kernels (``<module>.py.compiled``).  Every other file is an entry of
    its own."""
    if path.endswith(COMPILED_MARK):
        return path[:-len(COMPILED_MARK)]
    if path.endswith(".nbi"):
        return path[:-4]
    if path.endswith(".nbc"):
        return path[:-4].rpartition(".")[0]
    folder, name = os.path.split(path)
    if name.endswith(".pyc") and os.path.basename(folder) == "__pycache__":
        return os.path.join(os.path.dirname(folder), name.partition(".")[0] + ".py")
    return path


class CacheDirectory:
    """The bounded part of one cache directory (``kernels/``, ``generated/``, ``autograph/``,
    ``working_sets/``): what it holds, what this process uses, and when it must be trimmed."""

    def __init__(self, root):
        self.root = root
        self.parts = [os.path.join(root, part) for part in ("kernels", "generated", "autograph",
                                                           "working_sets")]
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
                warn_once(("open", self.root),
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
