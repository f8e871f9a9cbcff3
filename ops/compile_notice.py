"""One line that says what compiles when compiling keeps the caller waiting.

Numba compiles slowly: the first step of a new model can wait seconds for its kernels.  A wait
that lasts longer than ``THRESHOLD_S`` (about a second) gets one line, written while the wait
goes on, that names what compiles and says that the result is cached for the next runs; a
quicker one gets nothing.

* ``announce(message)`` brackets work its caller waits for (a decorated function compiling
  on its first call); ``join(threads, message)`` waits for compiles running elsewhere.
* ``compile_scope()`` and ``compiling(message)`` are the kernel cache's pair: the scope
  brackets a dispatcher's compile, and a cache miss inside it starts the notice, which ends
  with the scope.
* Compiles that follow each other with less than ``THRESHOLD_S`` between them are one wait (a
  first step that compiles forty kernels of 0.2 s each waits 8 s): a thread's compiles add up,
  and the line comes once per wait.  Nested compiles belong to the outermost.
* ``silenced()``: compiles inside it, on the current thread, are never announced (a compile in
  the background, which nobody waits for).

The line is an INFO record of the logger ``hybridtf.compile`` (the ``hybridtf`` logger is set
to INFO unless it was configured before); without logging handlers it goes to stderr, above
any progress bar.  ``set_enabled(False)``, ``HYBRIDTF_COMPILE_NOTICES=0`` in the environment, or
``logging.getLogger("hybridtf").setLevel(logging.WARNING)`` silences it.
"""
import contextlib
import heapq
import itertools
import logging
import os
import sys
import threading
import time

from tqdm.auto import tqdm

THRESHOLD_S = 1.0
LOGGER = logging.getLogger("hybridtf.compile")
if logging.getLogger("hybridtf").level == logging.NOTSET:
    logging.getLogger("hybridtf").setLevel(logging.INFO)

_ENABLED = [os.environ.get("HYBRIDTF_COMPILE_NOTICES", "1").strip() not in ("0", "")]
_TOLD = threading.Lock()   # a timer's line against its notice stopping


def set_enabled(enabled):
    """With False, compiles are never announced; with True (the default unless
    ``HYBRIDTF_COMPILE_NOTICES=0``), a compile that keeps its caller waiting longer than about
    a second is announced with one line."""
    _ENABLED[0] = bool(enabled)


def enabled():
    """Whether compiles that keep their caller waiting are announced (``set_enabled``)."""
    return _ENABLED[0]


class _Waits:
    """One thread's waits (a plain object: its timers, on other threads, update it too)."""

    def __init__(self):
        self.silenced = 0
        self.notice = None      # the _Notice timing now (the outermost)
        self.scopes = []        # open compile scopes: the notice each started, or None
        self.spent = 0.0        # seconds waited in the current wait ...
        self.last_end = -float("inf")   # ... which ended here, unless more follows soon
        self.told = False       # the current wait's line is out


_LOCAL = threading.local()


def _waits():
    """The current thread's ``_Waits``."""
    waits = getattr(_LOCAL, "waits", None)
    if waits is None:
        waits = _LOCAL.waits = _Waits()
    return waits


class _Notice:
    """One compile being timed: its line is written when the wait it belongs to passes the
    threshold before it stops."""

    def __init__(self, state, message):
        self.state = state
        self.message = message
        self.stopped = False
        self.started = time.perf_counter()
        if self.started - state.last_end > THRESHOLD_S:   # a new wait
            state.spent, state.told = 0.0, False
        if not state.told:
            _WATCHER.add(max(THRESHOLD_S - state.spent, 0.0), self)
        state.notice = self

    def _tell(self):
        with _TOLD:
            if self.stopped or self.state.told:
                return
            self.state.told = True
        tell(self.message)

    def stop(self):
        with _TOLD:
            self.stopped = True
        state = self.state
        state.last_end = time.perf_counter()
        state.spent += state.last_end - self.started
        state.notice = None


class _Watcher:
    """One thread that tells each notice whose wait has passed its delay (a timer thread per
    compile would cost about 0.1 ms to start, more than a quick compile: a loop that retraces
    loads a module from the cache at every call).  A stopped notice stays queued until its
    time and is then skipped."""

    def __init__(self):
        self.condition = threading.Condition()
        self.queue = []        # heap of (when, number, notice)
        self.numbers = itertools.count()
        self.thread = None

    def add(self, delay, notice):
        with self.condition:
            heapq.heappush(self.queue, (time.monotonic() + delay, next(self.numbers), notice))
            if self.thread is None:
                thread = threading.Thread(target=self._run, name="hybridtf-compile-notice",
                                          daemon=True)
                try:
                    thread.start()
                except RuntimeError:   # the interpreter is exiting and starts no threads
                    return
                self.thread = thread
            self.condition.notify()

    def _run(self):
        while True:
            with self.condition:
                if not self.queue:
                    self.condition.wait()
                    continue
                when, _, notice = self.queue[0]
                now = time.monotonic()
                if now < when:
                    self.condition.wait(when - now)
                    continue
                heapq.heappop(self.queue)
            notice._tell()


_WATCHER = _Watcher()
# a forked child has none of the parent's threads: it starts a watcher of its own
os.register_at_fork(after_in_child=lambda: globals().__setitem__("_WATCHER", _Watcher()))


def _quiet(state):
    return state.silenced or state.notice is not None or not _ENABLED[0]


@contextlib.contextmanager
def announce(message):
    """Runs the body; if the caller waits longer than about a second for it (the current
    wait, see the module's notes), ``message`` is written once, while the body runs."""
    state = _waits()
    if _quiet(state):
        yield
        return
    notice = _Notice(state, message)
    try:
        yield
    finally:
        notice.stop()


@contextlib.contextmanager
def compile_scope():
    """Brackets a call that may compile: a ``compiling`` inside it (and not inside an inner
    scope) is announced until the scope ends."""
    scopes = _waits().scopes
    scopes.append(None)
    try:
        yield
    finally:
        notice = scopes.pop()
        if notice is not None:
            notice.stop()


def compiling(message):
    """Says that the innermost ``compile_scope`` compiles now (a cache miss): it is announced
    with ``message`` should the wait pass the threshold.  Nothing outside a scope, or when a
    compile is timed already on this thread."""
    state = _waits()
    if state.scopes and state.scopes[-1] is None and not _quiet(state):
        state.scopes[-1] = _Notice(state, message)


@contextlib.contextmanager
def silenced():
    """Nothing compiled inside the body, on the current thread, is announced."""
    _waits().silenced += 1
    try:
        yield
    finally:
        _waits().silenced -= 1


def join(threads, message):
    """Waits for ``threads`` (compiles running elsewhere); ``message`` is written once if that
    takes longer than about a second."""
    threads = [t for t in threads if t.ident is not None]
    deadline = time.perf_counter() + THRESHOLD_S
    for thread in threads:
        thread.join(max(deadline - time.perf_counter(), 0.0))
    if any(t.is_alive() for t in threads) and not _quiet(_waits()):
        tell(message)
    for thread in threads:
        thread.join()


def tell(message):
    """Writes ``message`` as an INFO record of ``LOGGER``, or on stderr when logging has no
    handlers (above tqdm's progress bars, which it redraws)."""
    if not _ENABLED[0] or not LOGGER.isEnabledFor(logging.INFO):
        return
    if LOGGER.hasHandlers():
        LOGGER.info(message)
    else:
        tqdm.write(message, file=sys.stderr)
