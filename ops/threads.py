"""One kernel call split over the cores: disjoint parts of an index range run on a thread pool.

The kernels that split their work this way are ``nogil=True``, so their parts run at once.
Numba's own ``parallel=True`` is not used: its portable threading layer aborts the process when
two Python threads enter parallel code together, and the others need libraries (TBB, OpenMP)
that a plain install may lack.

* The caller runs the first part itself; pool threads run the others.  Work started on a pool
  thread is not split again, and a call that finds the pool busy (another thread splitting)
  runs unsplit, so no part ever waits for the pool that runs it.
* Pool threads spin for a moment (yielding the core) before they sleep, and so does a caller
  waiting for its parts: a train step splits a dozen kernels, and waking a sleeping thread costs
  20-700 us on a virtual machine, more the longer its core was idle (measured); likewise for
  the GIL (see "waiting" below).
* ``set_num_threads`` is ``tf.config.threading.set_intra_op_parallelism_threads``; 0 means one
  thread per core this process may use.
* While parts run, BLAS (every BLAS threadpoolctl finds loaded: SciPy's, which kernels call, and
  any other) runs on one thread: its own threads would compete with the parts (measured: a split
  convolution gained nothing while BLAS kept two threads).  Its setting is restored when the
  last split call ends.
* A forked child starts with no pool (the parent's threads do not exist there).
"""
import contextlib
import os
import sys
import threading
import time

import numpy as np
from numba import types
from numba.np.linalg import ensure_blas
from threadpoolctl import ThreadpoolController

from ops.kernel_cache import njit

_state = threading.local()   # .in_pool: True on the pool's own threads
_requested = 0               # set_num_threads' value; 0 = one per usable core


def usable_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def set_num_threads(n):
    """Threads one kernel call may use from now on (0: one per usable core)."""
    global _requested
    n = int(n)
    if n < 0:
        raise ValueError(f"set_num_threads: the thread count must be >= 0, got {n}")
    _requested = n


def get_num_threads():
    """The value last given to ``set_num_threads`` (0 if never: one per usable core)."""
    return _requested


def num_threads():
    """Threads a kernel call splits its work over now."""
    return _requested or usable_cores()


# ---- waiting: spin, then sleep ---------------------------------------------------------------
# A thread that wants the GIL while another holds it sleeps until woken, which costs 20-100 us
# on a virtual machine (measured): a worker asks for it only once the caller has had time to
# enter its own (nogil) part, and it publishes a finished part from nogil code, so that the
# caller, seeing it, finds the GIL free.
SPIN_S = 0.002     # how long a thread spins before it sleeps (a worker) or polls (a caller)
SETTLE_S = 5e-6    # how long a worker waits after seeing a job before it asks for the GIL
POLL_S = 2e-4      # a caller's poll interval once its spin is over (long parts)

if sys.platform != "win32":
    _sched_yield = types.ExternalFunction("sched_yield", types.intc())

    @njit(nogil=True)
    def _spin_while_equal(cells, i, value, spins):
        """Returns cells[i] once it differs from ``value``, or after ``spins`` looks.  The
        opaque call between looks makes every look a fresh load."""
        for _ in range(spins):
            current = cells[i]
            if current != value:
                return current
            _sched_yield()
        return cells[i]

    @njit(nogil=True)
    def _finish_and_wait(finished, posted, i, job, spins, settle):
        """finished[i] = job; then posted[i] once it differs from ``job`` (after ``settle``
        more looks), or ``job`` after ``spins`` looks."""
        finished[i] = job
        for _ in range(spins):
            current = posted[i]
            if current != job:
                for _ in range(settle):
                    _sched_yield()
                return current
            _sched_yield()
        return posted[i]
else:
    def _spin_while_equal(cells, i, value, spins):
        return cells[i]

    def _finish_and_wait(finished, posted, i, job, spins, settle):
        finished[i] = job
        return posted[i]

_looks = None   # (looks in SPIN_S, looks in SETTLE_S), measured once


def _looks_per_wait():
    global _looks
    if _looks is None:
        cells = np.zeros(1, np.int64)
        _spin_while_equal(cells, 0, 0, 10)   # compiled (or loaded) before it is timed
        _finish_and_wait(cells, cells, 0, 0, 1, 1)
        start = time.perf_counter()
        _spin_while_equal(cells, 0, 0, 1000)
        per_look = max(time.perf_counter() - start, 1e-6) / 1000
        _looks = max(1, int(SPIN_S / per_look)), max(1, int(SETTLE_S / per_look))
    return _looks


class _Pool:
    """``size`` threads, each running the parts posted to it in turn."""

    def __init__(self, size):
        self.size = size
        self.posted = np.zeros(size, np.int64)     # jobs posted to each thread so far
        self.finished = np.zeros(size, np.int64)   # jobs each thread has finished
        self.jobs = [None] * size
        self.results = [None] * size
        self.wake = [threading.Condition() for _ in range(size)]
        self.busy = threading.Lock()               # held by the split call using the pool
        looks = _looks_per_wait()
        for k in range(size):
            threading.Thread(target=self._serve, args=(k, *looks), daemon=True,
                             name=f"hybridtf-kernel-{k}").start()

    def _serve(self, k, spins, settle):
        _state.in_pool = True
        seen = 0
        while True:
            if _finish_and_wait(self.finished, self.posted, k, seen, spins, settle) == seen:
                with self.wake[k]:
                    while self.posted[k] == seen:
                        self.wake[k].wait()
            seen = int(self.posted[k])
            job, self.jobs[k] = self.jobs[k], None
            if job is None:
                return   # retired
            part, lo, hi = job
            try:
                self.results[k] = (True, part(lo, hi))
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                self.results[k] = (False, error)
            # The part's closure holds the caller's arrays: drop it now rather than keep them
            # alive while the thread waits for its next job.
            del job, part

    def post(self, k, job):
        self.jobs[k] = job
        with self.wake[k]:
            self.posted[k] += 1
            self.wake[k].notify()
        return int(self.posted[k])

    def collect(self, k, job_number):
        """(ok, result or error) of thread k's job ``job_number``, once it has finished."""
        while _spin_while_equal(self.finished, k, job_number - 1, _looks[0]) != job_number:
            time.sleep(POLL_S)
        result, self.results[k] = self.results[k], None
        return result

    def retire(self):
        for k in range(self.size):
            self.post(k, None)


_pool = None
_pool_lock = threading.Lock()


def _get_pool(size):
    global _pool
    with _pool_lock:
        if _pool is None or _pool.size < size:
            if _pool is not None:
                # once its split (if any) is done; a caller that finds it busy runs unsplit
                _pool.busy.acquire()
                _pool.retire()
            _pool = _Pool(size)
        return _pool


def _forget_pool():
    global _pool, _pool_lock, _blas_lock, _blas_users
    _pool, _pool_lock = None, threading.Lock()
    if _blas and _blas_users:
        _set_blas_threads(_blas, _blas_saved)   # forked mid-split: the parts that set it are gone
    _blas_lock, _blas_users = threading.Lock(), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


# ---- BLAS on one thread while parts run ------------------------------------------------------
# threadpoolctl's controller finds the BLAS libraries once (its search of the loaded libraries
# takes milliseconds); an outermost block then reads and sets each library's count through it
# (a few microseconds per library, measured).
_blas = None        # threadpoolctl's controllers of the loaded BLAS libraries, once found
_blas_lock = threading.Lock()
_blas_users = 0     # split calls running now
_blas_saved = []    # each library's thread count before the first of them


def blas_libraries():
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (OpenBLAS, MKL,
    BLIS, ...), among them the one SciPy's ``cython_blas`` -- which kernels call -- uses."""
    global _blas
    if _blas is None:
        with _blas_lock:
            if _blas is None:
                ensure_blas()   # SciPy's BLAS is loaded before the search, so that it is found
                _blas = ThreadpoolController().select(user_api="blas").lib_controllers
    return _blas


def _set_blas_threads(libraries, counts):
    for library, count in zip(libraries, counts):
        if count is None:   # a library that cannot tell its count: left as it is
            continue
        library.set_num_threads(count)
        # threadpoolctl lets only the thread that set a process-wide pool last set it again
        # until that thread lets go; splits come from any thread (one at a time, _blas_lock).
        let_go = getattr(library, "clear_controlling_thread", None)
        if let_go is not None:
            let_go()


@contextlib.contextmanager
def single_threaded_blas():
    """BLAS on one thread inside this block (nested blocks and threads allowed)."""
    global _blas_users, _blas_saved
    libraries = blas_libraries()
    if not libraries:
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            _blas_saved = [library.get_num_threads() for library in libraries]
            _set_blas_threads(libraries, [1] * len(libraries))
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _set_blas_threads(libraries, _blas_saved)


# ---- splitting -------------------------------------------------------------------------------
def split(part, n, min_part):
    """[part(lo, hi) for the parts (lo, hi) of range(n)]: as many parts as there are threads, each
    of at least ``min_part`` items, the first run on this thread and the others at once on the
    pool.  Every part has finished when this returns; the first error is raised.

    Work big enough to split (two parts or more) runs with BLAS on one thread, also when the
    thread count is 1 (then BLAS must not take a second core either)."""
    min_part = max(1, min_part)
    if n < 2 * min_part or getattr(_state, "in_pool", False):
        # small, or a part of a split already (BLAS is on one thread)
        return [part(0, n)]
    count = min(num_threads(), n // min_part)
    with single_threaded_blas():
        if count == 1:
            return [part(0, n)]
        pool = _get_pool(count - 1)
        if not pool.busy.acquire(blocking=False):
            return [part(0, n)]   # another thread is splitting its work
        try:
            bounds = [n * p // count for p in range(count + 1)]
            numbers = [pool.post(k, (part, bounds[k + 1], bounds[k + 2]))
                       for k in range(count - 1)]
            try:
                results = [(True, part(bounds[0], bounds[1]))]
            except BaseException as error:  # noqa: BLE001 - raised once the others are done
                results = [(False, error)]
            results += [pool.collect(k, number) for k, number in enumerate(numbers)]
        finally:
            pool.busy.release()
    for ok, value in results:
        if not ok:
            raise value
    return [value for _, value in results]
