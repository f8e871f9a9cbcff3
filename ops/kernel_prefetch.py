"""Kernels loaded ahead: a decorated function's kernels load on another thread while it traces.

The first call of a decorated function in a new process traces it (the seed CNN's train step:
40-60 ms, most of it building the Keras layers and the optimizer's slots), then asks the kernel
cache for its kernels as its compiled plan and its first run need them (35 for that step, 1-2 ms
each to load).  Which kernels a first call asks for depends on the function, the dtypes and ranks
of its arguments and the kernel library, not on sizes: a new batch size or layer width asks for
the same ones.  So a first call writes down the kernels it asked for (its working set, in
``working_sets/`` of the cache directory), and the next first call of the same function with
arguments of the same dtypes and ranks loads them, in the order they were asked for, on a thread
of its own while it traces (``FirstCall``).

* Loading holds Python's GIL much of the time, and so does tracing; what overlaps is the loads'
  LLVM and file work and the trace's work outside the GIL (its random draws, the fills of the
  optimizer's slots, their page faults).  (Cutting the interpreter's switch interval meanwhile
  made the overlap larger, but a process-wide setting exposes other threads' races -- Numba's
  CUDA simulator swaps module globals per simulated thread -- so it is left alone.)
* A kernel loaded ahead is kept aside (``kernel_cache.HealingCache.load_ahead``) until its
  dispatcher asks the cache for it: a working set that names kernels the function no longer
  needs costs background work only, and the next working set names only what was asked for.
* Nothing compiles here: a kernel that is not in the cache is left to the call that needs it.
* A working set that cannot be read is deleted and ignored.
"""
import atexit
import contextlib
import hashlib
import os
import pickle
import re
import sys
import threading
import weakref

from ops import codegen, kernel_cache
from ops.cache_directory import cache_dir

_PART = "working_sets"
_GENERATED = "hybridtf_generated."
_GENERATED_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*_[0-9a-f]{16}")


def working_set_name(*identity):
    """The name of the working set of the work ``identity`` names (reprs of plain values)."""
    return hashlib.sha256(repr(identity).encode()).hexdigest()[:32]


def _path(name):
    return os.path.join(cache_dir(), _PART, name + ".pkl")


def read_working_set(name):
    """The kernels recorded for ``name``: a list of (module name, qualified name, signature),
    empty if none was recorded or the file is damaged (then deleted)."""
    path = _path(name)
    try:
        payload = kernel_cache.read_sealed(path)
        entries = [] if payload is None else pickle.loads(payload)
        if not (isinstance(entries, list) and all(
                isinstance(e, tuple) and len(e) == 3 and isinstance(e[0], str)
                and isinstance(e[1], str) for e in entries)):
            raise ValueError("not a list of kernels")
    except Exception:  # noqa: BLE001 - a working set only saves time: never fatal
        with contextlib.suppress(OSError):
            os.unlink(path)
        return []
    return entries


def write_working_set(name, entries):
    with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError):
        kernel_cache.write_sealed(_path(name), pickle.dumps(entries, protocol=4))


_LOADING = weakref.WeakSet()   # the FirstCalls whose thread may still be loading


def _stop_loading():
    # At exit or before a fork no loading thread may be left inside LLVM, or holding Numba's
    # compiler lock (a child would inherit it held): each stops after its current kernel.
    for first in list(_LOADING):
        first.stop()


atexit.register(_stop_loading)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_stop_loading)


class FirstCall:
    """The kernels of one first call, named ``name`` (``working_set_name``): those recorded
    last time load ahead on a thread from now on, and those this call asks for are recorded
    until ``finish()``, which writes them down for the next process."""

    def __init__(self, name):
        self._name = name
        self._previous = read_working_set(name)
        self._record = kernel_cache.start_recording()
        self._finished = False
        self._stopping = threading.Event()
        self.loaded_ahead = []   # (module name, qualified name, signature) of each one loaded
        self._thread = None
        if self._previous:
            self._thread = threading.Thread(target=self._load_ahead, args=(self._previous,),
                                            daemon=True, name="hybridtf-kernels-ahead")
            _LOADING.add(self)
            try:
                self._thread.start()
            except RuntimeError:   # no thread to be had: the call loads its kernels itself
                self._thread = None
                _LOADING.discard(self)

    def finish(self):
        """Stops loading ahead and recording; writes the kernels asked for down if they
        differ from the last ones (in more than their order).  Idempotent."""
        if self._finished:
            return
        self._finished = True
        self._stopping.set()
        kernel_cache.stop_recording(self._record)
        asked = list(dict.fromkeys(
            (f.__module__, f.__qualname__, sig) for f, sig in self._record
            if isinstance(getattr(f, "__module__", None), str)))
        # The same kernels in another order (the kernel threads ask for theirs as they run)
        # are not written again: each write also counts the cache directory's size.
        if asked and set(asked) != set(self._previous):
            write_working_set(self._name, asked)

    def stop(self):
        """Stops loading ahead after the kernel loading now, and waits for that."""
        self._stopping.set()
        self.wait()

    def wait(self):
        """Waits until the loading thread has ended."""
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _load_ahead(self, entries):
        leases = []   # generated modules stay loaded while their kernels load
        try:
            for module_name, qualname, sig in entries:
                if self._stopping.is_set():
                    break
                dispatcher = _dispatcher(module_name, qualname, leases)
                if dispatcher is None:
                    continue
                try:
                    if dispatcher._cache.load_ahead(sig, dispatcher.targetctx,
                                                   dispatcher.overloads):
                        self.loaded_ahead.append((module_name, qualname, sig))
                except Exception:  # noqa: BLE001 - the call loads (or compiles) it itself
                    continue
        finally:
            _LOADING.discard(self)
            del leases


def _dispatcher(module_name, qualname, leases):
    """The Numba dispatcher ``qualname`` of module ``module_name`` whose code the kernel cache
    holds, or None: a library module must be imported already; a generated one is loaded from
    the cache directory if an earlier process compiled its kernels (its lease goes to
    ``leases``)."""
    module = sys.modules.get(module_name)
    if module is None and module_name.startswith(_GENERATED):
        name = module_name[len(_GENERATED):]
        lease = codegen.lease_stored(name) if _GENERATED_NAME.fullmatch(name) else None
        if lease is None:
            return None
        leases.append(lease)
        module = lease.module
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not isinstance(getattr(found, "_cache", None), kernel_cache.HealingCache):
        return None
    if not hasattr(found, "targetctx"):   # a C callback: compiled when its module loads
        return None
    return found
