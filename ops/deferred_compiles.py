"""Compiles deferred to a background thread, for the ops that can run without their kernel.

With an empty kernel cache, every kernel an op calls compiles on its first call: seconds, for a
new model's first step.  An op whose CPU kernel has a reference form (the op in NumPy,
``hybridtf.registry.Kernel.reference``) runs its kernel inside ``deferring()``: a kernel that
would compile there raises ``KernelNotReady`` instead, before doing anything.  The op computes
its result with its reference form and queues its kernel, run on copies of its inputs, on this
module's background thread: that run compiles every kernel the op calls, and the op's calls
after it use them.  A kernel already compiled, or in the disk cache (it loads in milliseconds),
runs as always, unless a background compile holds Numba's compiler, which the caller does not
wait for: deferral changes nothing once the cache is warm.

The reference forms give the kernels' results up to rounding (bit for bit where they say so:
the random draws, so that a model's initial weights never depend on the cache, and pooling and
the exact elementwise ops).  Deferral is off with synchronous compilation
(``HYBRIDTF_SYNCHRONOUS_COMPILATION=1``, or ``set_allowed(False)``), which benchmarks and tests
that time or compare kernels use.  A process waits at exit for the compiles still queued, so
that they reach the cache.  A compile that fails in the background is not retried there: the
op's next call runs its kernel itself, which raises the error to the caller.
"""
import atexit
import contextlib
import os
import queue
import sys
import threading

import numpy as np

from ops import compile_notice

_ALLOWED = [os.environ.get("HYBRIDTF_SYNCHRONOUS_COMPILATION", "") in ("", "0")]
_STATE = threading.local()   # .on: kernels called on this thread now defer their compiles


class KernelNotReady(BaseException):
    """A kernel called inside ``deferring()`` would have compiled; it compiles in the
    background instead.  (A BaseException: a kernel's own ``except Exception`` must not take
    it for the kernel's error.)"""


def set_allowed(allowed):
    """With False, ``deferring()`` defers nothing: every kernel compiles when first called."""
    _ALLOWED[0] = bool(allowed)


def allowed():
    return _ALLOWED[0]


def active():
    """Whether a kernel called now on this thread would defer its compile."""
    return getattr(_STATE, "on", False)


@contextlib.contextmanager
def _set(on):
    previous = getattr(_STATE, "on", False)
    _STATE.on = on
    try:
        yield
    finally:
        _STATE.on = previous


@contextlib.contextmanager
def none_deferred():
    """Inside it, in every thread, kernels compile when called."""
    previous = _ALLOWED[0]
    _ALLOWED[0] = False
    try:
        yield
    finally:
        _ALLOWED[0] = previous


def deferring():
    """Inside it, a kernel that would compile raises ``KernelNotReady`` (if deferral is
    allowed)."""
    return _set(_ALLOWED[0])


def begin():
    """``deferring()`` without a context manager: returns what ``end`` restores."""
    previous = getattr(_STATE, "on", False)
    _STATE.on = _ALLOWED[0]
    return previous


def end(previous):
    _STATE.on = previous


def not_deferring():
    """Inside it, kernels compile when called (a compile started inside ``deferring()`` runs
    its callees' compiles inside this)."""
    return _set(False)


def carried(part):
    """``part`` for another thread: it defers there as it would on this one."""
    if not active():
        return part

    def deferring_part(*args):
        with _set(True):
            return part(*args)
    return deferring_part


# A compile holds the interpreter lock between its LLVM calls; the thread waiting for it gets it
# after the switch interval (5 ms by default) -- after every NumPy call of an op's reference form
# that released it.  While compiles run in the background the interval is shorter.
_SWITCH_INTERVAL_S = 0.0005
_background = [0, None]   # background compiles running, the interval before the first
_background_lock = threading.Lock()


@contextlib.contextmanager
def handing_back_the_interpreter():
    """Around a compile on a background thread: the threads waiting for the interpreter lock
    get it sooner (see above)."""
    with _background_lock:
        if _background[0] == 0:
            _background[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_background[1], _SWITCH_INTERVAL_S))
        _background[0] += 1
    try:
        yield
    finally:
        with _background_lock:
            _background[0] -= 1
            if _background[0] == 0:
                sys.setswitchinterval(_background[1])


def compiling_in_background():
    """Whether a background compile (this module's or a traced function's) is running."""
    return _background[0] > 0


class _Compiler:
    """One daemon thread running queued compiles in order, each key once."""

    def __init__(self):
        self._jobs = queue.Queue()
        self._keys = set()        # queued or running
        self._failed = set()      # raised: the caller's next call runs the kernel itself
        self._lock = threading.Lock()
        self.thread = None

    def submit(self, key, compile_now):
        with self._lock:
            if key in self._keys:
                return
            self._keys.add(key)
            self._jobs.put((key, compile_now))
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="hybridtf-compile-kernels",
                                               daemon=True)
                self.thread.start()

    def _run(self):
        while True:
            key, compile_now = self._jobs.get()
            try:
                with compile_notice.silenced(), handing_back_the_interpreter():
                    compile_now()   # nobody waits for it
            except BaseException:  # noqa: BLE001 - raised again by the caller's next call
                with self._lock:
                    self._failed.add(key)
            finally:
                with self._lock:
                    self._keys.discard(key)
                self._jobs.task_done()

    def queued(self, key):
        return key in self._keys

    def failed(self, key):
        return key in self._failed

    def forget(self, key):
        with self._lock:
            self._failed.discard(key)

    def wait(self):
        """Until every queued compile has finished."""
        self._jobs.join()


_COMPILER = _Compiler()


def like(array):
    """A copy of ``array`` that Numba types as it types ``array``: the same dtype, shape,
    layout (C, F or neither) and writeability."""
    if array.flags.c_contiguous or array.flags.f_contiguous:
        copy = np.array(array, order="F" if not array.flags.c_contiguous else "C")
    else:
        copy = np.empty(array.shape + (2,), array.dtype)[..., 0]   # strided, as the original
        copy[...] = array
    copy.flags.writeable = array.flags.writeable
    return copy


def compile_later(key, compile_now):
    """Queues ``compile_now()``, a call that compiles what raised ``KernelNotReady`` (the op's
    kernel run on copies of its inputs, say), on the background thread: once per ``key`` while
    queued."""
    _COMPILER.submit(key, compile_now)


def busy():
    """Whether compiles are queued or running."""
    return bool(_COMPILER._keys)


def noteworthy():
    """Whether ``queued`` or ``failed`` may say yes for some key (a cheap test first)."""
    return bool(_COMPILER._keys or _COMPILER._failed)


def failed(key):
    """Whether the compile queued as ``key`` raised: the caller then runs the kernel itself,
    which compiles now and raises the error where the caller sees it."""
    return _COMPILER.failed(key)


def forget(key):
    """The caller ran the kernel of ``key``'s failed compile itself, without an error: it is
    ready, and ``noteworthy`` need not count it any more (every op's call would compute its
    key while it does)."""
    _COMPILER.forget(key)


def queued(key):
    """Whether the compile queued as ``key`` has yet to finish (a call that would try the
    kernel again may go straight to its reference form)."""
    return _COMPILER.queued(key)


def run_or_substitute(run, key_of, substitute, *args):
    """``run(*args)`` with deferral on; where it would compile, ``substitute(*args, key)``,
    which computes the result another way and queues what compiles it under ``key``
    (``compile_later``).  ``key_of(*args)`` is computed only when needed.  A queued key goes
    straight to ``substitute``; a failed one runs ``run`` itself, which raises the error (or,
    not raising, shows the kernel ready)."""
    key = None
    if noteworthy():   # (a cheap test before the key)
        key = key_of(*args)
        if failed(key):
            result = run(*args)
            forget(key)
            return result
        if queued(key):
            return substitute(*args, key)
    previous = begin()   # (not a context manager: this is a hot path)
    try:
        return run(*args)
    except KernelNotReady:
        pass
    finally:
        end(previous)
    return substitute(*args, key_of(*args) if key is None else key)


def wait():
    """Until the compiles deferred so far have finished (tests, and the exit)."""
    _COMPILER.wait()


@atexit.register
def _finish_compiling():
    # A compile cut short at exit is lost, and the next process would compile again.
    if not busy():
        return
    waiter = threading.Thread(target=_COMPILER.wait, daemon=True)
    waiter.start()
    compile_notice.join([waiter], "hybridtf: finishing compiling kernels before exiting, so "
                                  "that the next runs load them from the cache")


def _after_fork_in_child():
    # the parent's threads and queue are not the child's
    global _COMPILER
    _COMPILER = _Compiler()
    if _background[0]:
        sys.setswitchinterval(_background[1])
        _background[0] = 0


os.register_at_fork(after_in_child=_after_fork_in_child)
