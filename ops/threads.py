"""One kernel call split over the cores: disjoint parts of an index range run on a thread pool.

The kernels that split their work this way are ``nogil=True``, so their parts run at once.

* The caller runs the first part itself; pool threads run the others.  Work started on a pool
  thread is not split again, and a call that finds the pool busy (another thread splitting)
  runs unsplit, so no part ever waits for the pool that runs it.
* A call splits over ``num_threads()`` threads: the count set
  (``set_num_threads`` is ``tf.config.threading.set_intra_op_parallelism_threads``; 0 means one
  per core this process may use), at most the cores free now (``free_cores``: the cores that no
  other process's runnable thread needs).  A part whose thread waits for a core stalls the
  whole call, so on a busy machine a call runs on fewer threads, down to the caller's alone.
* Pool threads spin for at most SPIN_S (yielding the core at every look) before they block,
  and so does a caller waiting for its parts, then it polls with sleeps: a train step splits a
  dozen kernels, and waking a blocked thread costs 20-700 us on a virtual machine, more the
  longer its core was idle (measured); likewise for the GIL (see "waiting" below).
* A product on ``ops.tile_gemm``'s tiles is split into product parts (``split_product``): each is
  a compiled call with its operands' addresses (``ops.native_parts``) that a pool thread runs in
  its nogil wait, with no trip through the interpreter, and that the caller runs itself if the
  thread has not started it by the time the caller's own part is done.
* BLAS has one owner (see "BLAS" below): the BLAS that kernels call runs on one thread, but for
  a large product on the free cores, and never on more than one while parts of a split run.
* A forked child starts with no pool (the parent's threads do not exist there).

Why a pool of our own rather than Numba's ``parallel=True`` (measured on 2 cores, a 1M-element
float32 loop ``tanh(2x + b) - x`` split in two, medians of 9 interleaved samples; other work
ran on the machine at times):

============================  ============  ===================  ==================
                              idle          one busy process     fork / 4 threads
============================  ============  ===================  ==================
this pool                     6.0 ms        11.7 ms (adapts: 1)  both work
one thread                    11.9 ms       11.7 ms              --
``omp`` (GNU OpenMP)          5.0 ms        12.5 ms              child killed
``workqueue``                 10.1 ms       14.9 ms              aborts the process
``tbb``                       not installed (an extra package)
============================  ============  ===================  ==================

(The ``workqueue`` row comes from a separate, busier run: pool 12.0 ms idle, 23.4 ms loaded
there.)  OpenMP's team is about 15% faster on an idle machine, but a process forked after it
ran is terminated ("fork() called from a process already using GNU OpenMP"), and its threads
do not shrink to the free cores: under load it falls behind one thread.  ``workqueue`` aborts
when two Python threads enter parallel code together.  The pool works in forked children and
from any number of Python threads, follows the free cores from call to call, and its waits are
bounded.
"""
import contextlib
import os
import sys
import threading
import time

import numpy as np
from numba import types
from numba.np.linalg import ensure_blas

from ops import blas_search, deferred_compiles, native_parts
from ops.kernel_cache import njit

_state = threading.local()   # .in_pool: True on the pool's own threads
_requested = 0               # set_num_threads' value; 0 = one per usable core


CORES_SAMPLE_S = 1.0
_cores_sample = (-CORES_SAMPLE_S, 1)   # (when asked, the cores then): asking costs ~1-30 us


def usable_cores():
    """The cores this process may run on (asked again after CORES_SAMPLE_S)."""
    global _cores_sample
    now = time.monotonic()
    if now - _cores_sample[0] < CORES_SAMPLE_S:
        return _cores_sample[1]
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    _cores_sample = (now, cores)
    return cores


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
    """Threads a kernel call splits its work over now: the count set (0: one per usable core),
    at most the cores free now (``free_cores``), at least one."""
    return max(1, min(_requested or usable_cores(), free_cores()))


# ---- free cores ------------------------------------------------------------------------------
# Threads that wait for a core held by another process stall every part of a split (the caller
# waits for the slowest part), so a call uses only the cores that nobody else is running on.
# The kernel reports how many threads are runnable now (/proc/loadavg, ~10-40 us to read); a
# sample is taken at most every LOAD_SAMPLE_S, and the busiest of the samples of the last
# LOAD_WINDOW_S counts: a core wrongly thought free costs a stall, one wrongly thought busy
# at most that core's share.
LOAD_SAMPLE_S = 0.02
LOAD_WINDOW_S = 0.1
_busy_samples = []   # [(when, cores other processes' threads need then)], the last window's
_busiest = 0         # the most of them


def _runnable_threads():
    """Threads runnable now on the whole machine (this one included), or None where the
    system does not say."""
    try:
        with open("/proc/loadavg", "rb") as loadavg:
            return int(loadavg.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


def _blas_spinners(now):
    """BLAS's threads still spinning after this process's last threaded product."""
    until, spinning = _blas_spinning
    return spinning if now < until else 0


def _pool_awake():
    pool = _pool
    return pool.awake_threads() if pool is not None else 0


def busy_cores():
    """The usable cores that threads of other processes need now: the most of the samples of
    the last LOAD_WINDOW_S (this process's threads -- the caller, the kernel threads awake, BLAS's
    threads -- left out)."""
    global _busy_samples, _busiest
    now = time.perf_counter()
    samples = _busy_samples
    if not samples or now - samples[-1][0] >= LOAD_SAMPLE_S:
        running = _runnable_threads()
        if running is None:
            others = 0
        else:
            own = 1 + _pool_awake() + max(_blas_threaded - 1, 0) + _blas_spinners(now)
            others = max(0, running - own)
            cores, total = usable_cores(), os.cpu_count() or 1
            if total > cores:   # others run on every core, this process on some
                others = -(-others * cores // total)
        samples = [s for s in samples if now - s[0] < LOAD_WINDOW_S] + [(now, others)]
        _busy_samples = samples
        _busiest = max(others for _, others in samples)
    return _busiest


def free_cores():
    """The usable cores free for kernel threads now (at least one: the caller's): none that
    other processes need, nor those BLAS's threads still spin on after a threaded product."""
    cores = usable_cores() - busy_cores() - _blas_spinners(time.perf_counter())
    return max(1, cores)


def _free_cores_for_blas():
    """The usable cores free for BLAS's threads now: none that other processes need, nor those
    of kernel threads still awake."""
    return max(1, usable_cores() - busy_cores() - _pool_awake())


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
else:
    @njit(nogil=True)
    def _sched_yield():   # a plain spin: the looks are atomic loads, so they still look
        return 0


@njit(nogil=True)
def _spin_while_equal(cells, i, value, spins):
    """Returns cells[i] once it differs from ``value``, or after ``spins`` looks."""
    for _ in range(spins):
        current = native_parts.load(cells, i)
        if current != value:
            return current
        _sched_yield()
    return native_parts.load(cells, i)


@njit(nogil=True)
def _serve_parts(finished, posted, parts, claimed, i, seen, done, spins, settle):
    """A kernel thread's wait: finished[i] = done (a Python job just run, or 0); then runs the
    product parts posted to thread i as they come (``ops.native_parts``), and returns (the
    number of the last job seen, whether it is a Python job) once a Python job is posted
    (after ``settle`` more looks) or ``spins`` looks have seen no new job."""
    if done:
        finished[i] = done
    looks = 0
    while looks < spins:
        current = native_parts.load(posted, i)
        if current == seen:
            _sched_yield()
            looks += 1
            continue
        looks = 0
        seen = current
        # The caller never claims a Python job; claiming first orders the reads below after it.
        if not native_parts.claim(claimed, i, current):
            continue   # a product part the caller ran itself
        if parts[i, native_parts.ENTRY] == native_parts.PYTHON:
            for _ in range(settle):
                _sched_yield()
            return seen, True
        native_parts.run(parts[i])
        finished[i] = current
    return seen, False


@njit(nogil=True)
def _take_back_or_wait(finished, parts, claimed, i, job, spins):
    """Runs product part ``job`` of thread i on this thread if that thread has not claimed it;
    then whether it has finished (after at most ``spins`` looks)."""
    if native_parts.claim(claimed, i, job):
        native_parts.run(parts[i])
        finished[i] = job
        return True
    return _spin_while_equal(finished, i, job - 1, spins) == job


_looks = None   # (looks in SPIN_S, looks in SETTLE_S), measured once


def _looks_per_wait():
    global _looks
    if _looks is None:
        cells = np.zeros(1, np.int64)
        _spin_while_equal(cells, 0, 0, 10)   # compiled (or loaded) before it is timed
        parts = np.zeros((1, native_parts.PART_WORDS), np.int64)
        _serve_parts(cells, cells, parts, cells, 0, 0, 0, 1, 1)
        _take_back_or_wait(cells, parts, cells, 0, 0, 1)
        start = time.perf_counter()
        _spin_while_equal(cells, 0, 0, 1000)
        per_look = max(time.perf_counter() - start, 1e-6) / 1000
        _looks = max(1, int(SPIN_S / per_look)), max(1, int(SETTLE_S / per_look))
    return _looks


def prepare():
    """Compiles (or loads from the cache) the loops the pool's threads wait in, which its first
    split would otherwise compile (``python -m hybridtf.warmup`` calls this)."""
    _looks_per_wait()


class _Pool:
    """``size`` threads, each running the jobs posted to it in turn: Python parts (``split``)
    and product parts (``split_product``)."""

    def __init__(self, size):
        self.size = size
        self.posted = np.zeros(size, np.int64)     # jobs posted to each thread so far
        self.finished = np.zeros(size, np.int64)   # the last job each thread has finished
        self.claimed = np.zeros(size, np.int64)    # the last job claimed (native_parts.claim)
        # each thread's product part, and the caller's own (the last row)
        self.parts = np.zeros((size + 1, native_parts.PART_WORDS), np.int64)
        self.jobs = [None] * size                  # Python parts
        self.results = [None] * size
        self.wake = [threading.Condition() for _ in range(size)]
        self.awake = [True] * size                 # running or spinning (else: blocked)
        self.busy = threading.Lock()               # held by the split call using the pool
        looks = _looks_per_wait()
        for k in range(size):
            threading.Thread(target=self._serve, args=(k, *looks), daemon=True,
                             name=f"hybridtf-kernel-{k}").start()

    def _serve(self, k, spins, settle):
        _state.in_pool = True
        seen = done = 0
        while True:
            seen, python = _serve_parts(self.finished, self.posted, self.parts, self.claimed, k,
                                        seen, done, spins, settle)
            done = 0
            if not python:   # nothing posted for a while: sleep until something is
                with self.wake[k]:
                    self.awake[k] = False
                    while self.posted[k] == seen:
                        self.wake[k].wait()
                    self.awake[k] = True
                continue
            job, self.jobs[k] = self.jobs[k], None
            if job is None:
                return   # retired
            part, lo, hi = job
            try:
                self.results[k] = (True, part(lo, hi))
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                self.results[k] = (False, error)
            done = seen
            # The part's closure holds the caller's arrays: drop it now rather than keep them
            # alive while the thread waits for its next job.
            del job, part

    def awake_threads(self):
        """How many of the pool's threads are running or spinning now."""
        return sum(self.awake)

    def post(self, k, job):
        """Posts Python part ``job`` to thread k; its job number."""
        self.jobs[k] = job
        self.parts[k, native_parts.ENTRY] = native_parts.PYTHON
        return self.post_part(k)

    def post_part(self, k):
        """Posts thread k's next job (its Python part or its row of ``parts``, set already) and
        wakes the thread; the job's number."""
        with self.wake[k]:
            self.posted[k] += 1
            self.wake[k].notify()
        return int(self.posted[k])

    def post_product_part(self, k):
        """Posts thread k's row of ``parts`` (described); its job number.  The thread is woken
        only if it sleeps: one that falls asleep just now misses the post, and the caller runs
        the part itself (``collect_part``)."""
        if not self.awake[k]:
            return self.post_part(k)
        number = self.posted[k] + 1
        self.posted[k] = number
        return int(number)

    def collect(self, k, job_number):
        """(ok, result or error) of thread k's job ``job_number``, once it has finished."""
        while _spin_while_equal(self.finished, k, job_number - 1, _looks[0]) != job_number:
            time.sleep(POLL_S)
        result, self.results[k] = self.results[k], None
        return result

    def collect_part(self, k, job_number):
        """Returns once product part ``job_number`` of thread k has run, here if that thread
        has not started it."""
        while not _take_back_or_wait(self.finished, self.parts, self.claimed, k, job_number,
                                     _looks[0]):
            time.sleep(POLL_S)

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
    global _pool, _pool_lock, _blas_lock, _blas_single, _blas_threaded, _blas_spinning
    global _busy_samples
    _pool, _pool_lock = None, threading.Lock()
    if _blas and _blas_threaded:
        _set_blas_threads(_blas, 1)   # forked mid-product: the block that set it is gone
    _blas_lock, _blas_single, _blas_threaded = threading.Lock(), 0, 0
    _blas_spinning = (0.0, 0)
    _busy_samples = []   # the parent's threads are not here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


# ---- BLAS: one owner of its threads ----------------------------------------------------------
# The BLAS that kernels call (SciPy's, through ``cython_blas``) runs on one thread, except for a
# product big enough to gain from more (``threaded_blas``), and then on as many threads as there
# are free cores.  OpenBLAS's threads busy-wait for work: a product of 64x784 by 784x256 took
# 1.5 ms on one thread and 16 ms on two while other processes kept the two cores busy
# (measured), and for ~0.1 s after a threaded call its threads keep spinning.  The libraries are
# found once (``ops.blas_search``); setting a count through threadpoolctl's controllers then costs
# a few microseconds per library (measured).
BLAS_SPIN_S = 0.15  # how long OpenBLAS's threads keep a core after a threaded call (measured)

_blas = None        # threadpoolctl's controllers of the kernels' BLAS, once found
_blas_lock = threading.Lock()
_blas_single = 0    # blocks running now that need BLAS on one thread (split calls)
_blas_threaded = 0  # BLAS's thread count inside the one threaded block running now (0: none)
_blas_spinning = (0.0, 0)   # (until when, how many) of BLAS's threads spin after a threaded call


def blas_libraries():
    """threadpoolctl's controllers of the BLAS libraries the kernels call (OpenBLAS, MKL, BLIS,
    ...: SciPy's, through ``cython_blas``).  Found once; from then on they run on one thread
    outside ``threaded_blas`` blocks."""
    global _blas
    if _blas is None:
        with _blas_lock:
            if _blas is None:
                ensure_blas()   # SciPy's BLAS is loaded before the search, so that it is found
                libraries = blas_search.kernels_blas()
                _set_blas_threads(libraries, 1)
                _blas = libraries
    return _blas


def _set_blas_threads(libraries, count):
    for library in libraries:
        library.set_num_threads(count)
        # threadpoolctl lets only the thread that set a process-wide pool last set it again
        # until that thread lets go; blocks come from any thread (one at a time, _blas_lock).
        let_go = getattr(library, "clear_controlling_thread", None)
        if let_go is not None:
            let_go()


@contextlib.contextmanager
def single_threaded_blas():
    """BLAS on one thread inside this block (nested blocks and threads allowed): while kernel
    threads run parts, BLAS's threads would compete with them for the cores."""
    global _blas_single
    libraries = blas_libraries()
    with _blas_lock:
        _blas_single += 1
        if _blas_threaded:   # a threaded product of another Python thread: its next call
            _set_blas_threads(libraries, 1)   # takes one thread
    try:
        yield
    finally:
        with _blas_lock:
            _blas_single -= 1


@contextlib.contextmanager
def threaded_blas():
    """BLAS on as many threads as there are cores free for them (at most the thread count set)
    inside this block -- for one large product -- unless parts of a split or another threaded
    product run now, or this runs on a kernel thread: then on one."""
    global _blas_threaded, _blas_spinning
    libraries = blas_libraries()
    in_pool = getattr(_state, "in_pool", False)
    count = 1 if in_pool else min(_requested or usable_cores(), _free_cores_for_blas())
    granted = 0
    if count > 1 and libraries:
        with _blas_lock:
            if not _blas_single and not _blas_threaded:
                _set_blas_threads(libraries, count)
                _blas_threaded = granted = count
    try:
        yield
    finally:
        if granted:
            with _blas_lock:
                _set_blas_threads(libraries, 1)
                _blas_threaded = 0
                _blas_spinning = (time.perf_counter() + BLAS_SPIN_S, granted - 1)


# ---- splitting -------------------------------------------------------------------------------
def _part_count(n, min_part):
    """How many parts of at least ``min_part`` items a split of range(n) makes now: 0 for work
    too small to split or started on a pool thread (a part of a split already), else as many
    as there are threads (1 possible)."""
    min_part = max(1, min_part)
    if n < 2 * min_part or getattr(_state, "in_pool", False):
        return 0
    return min(num_threads(), n // min_part)


def _bounds(n, count):
    """The bounds of ``count`` near-equal parts of range(n)."""
    return [n * p // count for p in range(count + 1)]


def split(part, n, min_part):
    """[part(lo, hi) for the parts (lo, hi) of range(n)]: as many parts as there are threads, each
    of at least ``min_part`` items, the first run on this thread and the others at once on the
    pool.  Every part has finished when this returns; the first error is raised.

    Work big enough to split (two parts or more) runs with BLAS on one thread, also when the
    thread count is 1 (then BLAS must not take a second core either)."""
    count = _part_count(n, min_part)
    if not count:   # small, or a part of a split already (BLAS is on one thread)
        return [part(0, n)]
    with single_threaded_blas():
        if count == 1:
            return [part(0, n)]
        pool = _get_pool(count - 1)
        if not pool.busy.acquire(blocking=False):
            return [part(0, n)]   # another thread is splitting its work
        try:
            bounds = _bounds(n, count)
            posted = deferred_compiles.carried(part)   # the parts defer as this thread does
            numbers = [pool.post(k, (posted, bounds[k + 1], bounds[k + 2]))
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


def split_product(describe, n, min_part):
    """Runs a matrix product whose part (lo, hi) of range(n) ``describe(part, lo, hi)`` writes
    into ``part`` (an ``ops.native_parts`` row): as many parts as there are threads, each of at
    least ``min_part`` items, the first run on this thread and the others on the pool's threads
    without the GIL; a part a thread has not started by the time this thread's own is done runs
    here.  Every part has run when this returns."""
    count = _part_count(n, min_part)
    pool = _get_pool(count - 1) if count > 1 else None
    if pool is None or not pool.busy.acquire(blocking=False):
        whole = np.empty(native_parts.PART_WORDS, np.int64)
        describe(whole, 0, n)
        native_parts.run(whole)
        return
    try:
        bounds = _bounds(n, count)
        numbers = []
        try:
            for k in range(count - 1):
                describe(pool.parts[k], bounds[k + 1], bounds[k + 2])
                numbers.append(pool.post_product_part(k))
            own = pool.parts[pool.size]
            describe(own, bounds[0], bounds[1])
            native_parts.run(own)
        finally:   # no part may outlive the call: its operands are the caller's
            for k, number in enumerate(numbers):
                pool.collect_part(k, number)
    finally:
        pool.busy.release()
