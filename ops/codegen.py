"""Generated kernel modules, written as real files so that Numba's ``cache=True`` works.

Numba cannot cache functions built with ``exec``; it can cache functions defined in a module
file.  Kernels that are generated from templates (elementwise loops here, fused graph kernels in
the compiler) are therefore rendered to source, written once to a cache directory under a name
derived from a hash of the source, and imported from there.  Equal sources share one file, one
module and one compiled kernel.
"""
import collections
import hashlib
import importlib.util
import os
import sys
import threading
import weakref

from ops import cache_directory
from ops.cache_directory import cache_dir
from ops.library_digest import COMPILED_FOR, LIBRARY_DIGEST

_LOCK = threading.Lock()
_MODULES = {}

# Modules leased by compiled graphs (``lease_source``) stay loaded while a lease lives; when the
# last one ends the module goes idle, and past IDLE_MODULES idle ones the least recently used
# leaves _MODULES and sys.modules, so that its objects can be freed (its file stays on disk).
# Idle modules are kept because loading one again costs tens of milliseconds (Numba reloads
# every kernel from its disk cache) and some memory that Numba never returns: a decorated
# function created in a loop would pay both on every iteration.  A module still leased is
# never dropped: Numba imports it by name to load a new specialisation of its kernels.
# Modules only ever loaded by ``load_source`` (the kernel library's own) stay for good.
IDLE_MODULES = 64
_LEASES = {}                      # module name -> number of live leases
_IDLE = collections.OrderedDict()  # names of loaded modules without a lease, oldest first
_ENDED = []                       # names whose lease ended, released under _LOCK


def _module_name(prefix, source):
    digest = hashlib.sha256((LIBRARY_DIGEST + source).encode()).hexdigest()[:16]
    return f"{prefix}_{digest}"


def _module_path(name):
    return os.path.join(cache_dir(), "generated", name + ".py")


# A mark holds the environment its kernels were compiled for (``COMPILED_FOR``): a module
# another Python, Numba or NumPy compiled (a cache directory shared by two environments) is one
# to compile again, with its first call on the graph interpreter meanwhile, not one to load
# while the caller waits for every kernel to compile.
_MARK = COMPILED_FOR.encode()


def _read_mark(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def mark_compiled(prefix, source):
    """Records that the kernels of module ``source`` were compiled into the cache (after its
    first complete warm-up), so that a later process finds them with ``was_compiled``."""
    path = _module_path(_module_name(prefix, source)) + cache_directory.COMPILED_MARK
    if _read_mark(path) != _MARK:
        cache_directory.write_file(path, _MARK)


def was_compiled(prefix, source):
    """Whether the kernels of module ``source`` were compiled into the cache before, in this
    environment (by this process or an earlier one: ``mark_compiled``), so that loading them
    is quick."""
    path = _module_path(_module_name(prefix, source))
    return os.path.exists(path) and _read_mark(path + cache_directory.COMPILED_MARK) == _MARK


def load_source(prefix, source):
    """Import ``source`` as a module stored at ``<cache_dir>/generated/<prefix>_<hash>.py``.

    The same source (with the same kernel library) always maps to the same file and module
    object, so Numba's on-disk cache (which is keyed by file and function) is reused across
    processes.
    """
    name = _module_name(prefix, source)
    module = _MODULES.get(name)
    if module is not None:
        return module
    with _LOCK:
        module = _MODULES.get(name)
        if module is not None:
            return module
        path = _module_path(name)
        try:
            with open(path) as f:
                current = f.read()
        except OSError:
            current = None
        if current != source:
            cache_directory.write_file(path, source.encode())
        cache_directory.use_file(path)
        module_name = "hybridtf_generated." + name
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        _MODULES[name] = module
        return module


class ModuleLease:
    """Keeps a generated module loaded while this object lives (see ``lease_source``)."""

    __slots__ = ("module", "__weakref__")

    def __init__(self, module):
        self.module = module


def lease_source(prefix, source):
    """``load_source`` for a module needed only while the returned ``ModuleLease`` lives (see
    IDLE_MODULES); its ``module`` attribute is the module."""
    while True:
        module = load_source(prefix, source)
        with _LOCK:
            if not vars(module):
                continue   # dropped since load_source returned it: load it again
            name = module.__name__.rpartition(".")[2]
            _LEASES[name] = _LEASES.get(name, 0) + 1
            _IDLE.pop(name, None)
            lease = ModuleLease(module)
            ending = weakref.finalize(lease, _lease_ended, name)
            ending.atexit = False
            _release_ended()
            return lease


def lease_stored(name):
    """``lease_source`` of the generated module ``name`` (``<prefix>_<hash>``) as an earlier
    process wrote it to the cache directory and compiled its kernels (``mark_compiled``);
    None if there is no such module."""
    prefix = name.rpartition("_")[0]
    try:
        with open(_module_path(name)) as f:
            source = f.read()
    except OSError:
        return None
    if _module_name(prefix, source) != name or not was_compiled(prefix, source):
        return None
    return lease_source(prefix, source)


def leased_modules():
    """The names of the generated modules now leased, each with its number of leases."""
    with _LOCK:
        _release_ended()
        return dict(_LEASES)


def _lease_ended(name):
    _ENDED.append(name)
    # Not when the lock is held (a collection inside a locked section of this thread, or
    # another thread): the next lease_source releases it.
    if _LOCK.acquire(blocking=False):
        try:
            _release_ended()
        finally:
            _LOCK.release()


def _release_ended():
    """Counts the ended leases down, and drops idle modules past IDLE_MODULES (_LOCK held)."""
    while _ENDED:
        name = _ENDED.pop()
        count = _LEASES[name] - 1
        if count:
            _LEASES[name] = count
            continue
        del _LEASES[name]
        _IDLE[name] = None
    while len(_IDLE) > max(IDLE_MODULES, 0):
        name, _ = _IDLE.popitem(last=False)
        module = _MODULES.pop(name, None)
        if module is not None:
            sys.modules.pop(module.__name__, None)
            # A kernel Numba compiled here is otherwise immortal: its dispatcher's finalizer
            # holds its compile results, whose type annotations hold this module, whose
            # namespace holds the dispatcher.  Nobody holds a lease, so nobody calls them.
            module.__dict__.clear()
