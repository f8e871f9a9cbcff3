"""Summary writers: ``tf.summary.create_file_writer``, ``create_noop_writer``, ``SummaryWriter``
and ``tf.summary.flush``."""
import abc
import importlib
import os
import threading
import weakref

import numpy as np

from hybridtf.eager.execute import execute
from hybridtf.framework.errors import NotFoundError
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph
from hybridtf.registry import checks
from hybridtf.registry.summary import CLOSE_SUMMARY_WRITER, FLUSH_SUMMARY_WRITER
from hybridtf.summary.state import STATE

INSTALL_COMMAND = 'pip install "hybridtf[tensorboard]"'


def load_records(who):
    """The module that builds TensorBoard records, imported on first use: ``tensorboard`` is
    an optional dependency, and importing it costs a program that writes no summaries about
    0.2 s."""
    try:
        return importlib.import_module("hybridtf.summary.records")
    except ImportError as err:
        raise ImportError(
            f"{who} writes TensorBoard event files with the `tensorboard` package, which could "
            f"not be imported ({err}). Install it with: {INSTALL_COMMAND}") from err


class SummaryWriter(abc.ABC):
    """Interface of a stateful summary writer (``tf.summary.SummaryWriter``)."""

    def set_as_default(self, step=None):
        """Makes this writer the default for the current thread (and sets the default step
        when ``step`` is not None), until another writer is made the default."""
        self.as_default(step).__enter__()

    def as_default(self, step=None):
        """A context manager that makes this writer the default for the current thread.

        ``step``, when not None, becomes the default step inside the context (a ``tf.Variable``
        step is read each time a decorated function runs; any other value is fixed when it is
        traced).  The writer is flushed on exit.
        """
        return _DefaultWriter(self, step)

    @abc.abstractmethod
    def init(self):
        """Initializes the writer (file writers are ready when created)."""

    @abc.abstractmethod
    def flush(self):
        """Writes out any buffered summaries."""

    @abc.abstractmethod
    def close(self):
        """Flushes and closes the writer."""


class _DefaultWriter:
    """``as_default``'s context manager: a class, so that ``set_as_default`` can enter it
    without ever leaving it."""

    def __init__(self, writer, step):
        self._writer = writer
        self._step = step
        self._old_writer = None
        self._old_step = None

    def __enter__(self):
        self._old_writer = STATE.writer
        STATE.writer = self._writer
        if self._step is not None:
            self._old_step = STATE.step
            STATE.step = self._step
        return self._writer

    def __exit__(self, *exc):
        self._writer.flush()
        STATE.writer = self._old_writer
        if self._step is not None:
            STATE.step = self._old_step
        return False


class FileWriter(SummaryWriter):
    """Writes summaries to a TensorBoard event file (``create_file_writer`` makes these)."""

    def __init__(self, logdir, max_queue, flush_millis, filename_suffix):
        self._records = load_records("tf.summary.create_file_writer")
        self.logdir = logdir
        self._events = self._records.event_file_writer(logdir, max_queue, flush_millis / 1000,
                                                       filename_suffix)
        self._lock = threading.Lock()
        self._closed = False
        # Summaries still queued are written out when the writer is collected or at exit.
        weakref.finalize(self, self._events.close)

    def __repr__(self):
        return f"<SummaryWriter logdir={self.logdir!r}>"

    @property
    def records(self):
        """The module that builds this writer's records (tensorboard's protocol buffers)."""
        return self._records

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"SummaryWriter {self!r} is already closed.")

    def set_as_default(self, step=None):
        self._check_open()
        super().set_as_default(step)

    def as_default(self, step=None):
        self._check_open()
        return super().as_default(step)

    def init(self):
        self._check_open()

    def write_summary(self, tag, tensor, metadata, step):
        """Appends one summary event (called by the ``write_summary`` op when it runs)."""
        event = self._records.summary_event(tag, tensor, metadata, step)
        with self._lock:
            if self._closed:
                raise NotFoundError(None, "write_summary",
                                    f"write_summary: {self!r} is closed; the summary {tag!r} "
                                    "cannot be written. Create a new writer for more summaries.")
            self._events.add_event(event)

    def flush(self):
        """Writes the queued summaries to the event file (inside a decorated function: each
        time it runs)."""
        if func_graph.current() is not None:
            execute(FLUSH_SUMMARY_WRITER, [], {"writer": self})
            return
        with self._lock:
            if not self._closed:
                self._events.flush()

    def close(self):
        """Flushes and closes the event file; later summaries to this writer fail."""
        if func_graph.current() is not None:
            execute(CLOSE_SUMMARY_WRITER, [], {"writer": self})
            return
        with self._lock:
            if not self._closed:
                self._closed = True
                self._events.close()


class _NoopWriter(SummaryWriter):
    """A writer that writes nothing: entering ``as_default`` leaves the default unchanged."""

    def set_as_default(self, step=None):
        pass

    def as_default(self, step=None):
        return _NoopContext(self)

    def init(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass


class _NoopContext:
    def __init__(self, writer):
        self._writer = writer

    def __enter__(self):
        return self._writer

    def __exit__(self, *exc):
        return False


def _logdir_path(logdir):
    if logdir is None:
        raise ValueError("Argument `logdir` cannot be None")
    if isinstance(logdir, Tensor):
        if type(logdir) is not Tensor:
            raise ValueError(f"Invalid graph Tensor argument 'logdir={logdir}' to "
                             "create_file_writer() inside a tf.function; pass a Python string.")
        logdir = np.asarray(logdir._value)[()]
    if isinstance(logdir, bytes):
        logdir = logdir.decode("utf-8")
    if not isinstance(logdir, (str, os.PathLike)):
        raise TypeError(f"create_file_writer: logdir must be a path (a string), got "
                        f"{type(logdir).__name__}.")
    return os.fspath(logdir)


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None):
    """Creates a summary writer for the log directory ``logdir`` (created if needed), which
    TensorBoard reads (``tensorboard --logdir DIR``).

    A new event file ``events.out.tfevents.<time>.<host>.<pid>.<n><filename_suffix>`` is
    created at once.  Summaries are queued and written by a background thread: at most
    ``max_queue`` (default 10) wait at a time, and the file is flushed at least every
    ``flush_millis`` milliseconds (default 120,000) as well as by ``flush()``, ``close()`` and
    on leaving ``as_default()``.  ``filename_suffix`` defaults to ``".v2"``; ``name`` is
    accepted for TF compatibility.  Needs the ``tensorboard`` package
    (``pip install "hybridtf[tensorboard]"``).
    """
    del name    # TF's op name: there is no op here
    path = _logdir_path(logdir)
    if max_queue is None:
        max_queue = 10
    max_queue = checks.integer("create_file_writer", max_queue, "max_queue")
    if max_queue < 0:
        raise ValueError(f"create_file_writer: max_queue must be >= 0, got {max_queue}.")
    if flush_millis is None:
        flush_millis = 120_000
    if isinstance(flush_millis, bool) or not isinstance(flush_millis, (int, float, np.number)) \
            or not flush_millis >= 0:
        raise ValueError(f"create_file_writer: flush_millis must be a number of milliseconds "
                         f">= 0, got {flush_millis!r}.")
    if filename_suffix is None:
        filename_suffix = ".v2"
    if not isinstance(filename_suffix, str):
        raise TypeError(f"create_file_writer: filename_suffix must be a string, got "
                        f"{type(filename_suffix).__name__}.")
    return FileWriter(path, max_queue, float(flush_millis), filename_suffix)


def create_noop_writer():
    """A summary writer that does nothing: a placeholder where code expects a writer."""
    return _NoopWriter()


def flush(writer=None, name=None):
    """Flushes ``writer`` (by default the current default writer; nothing when there is
    none)."""
    del name
    if writer is None:
        writer = STATE.writer
        if writer is None:
            return None
    if isinstance(writer, SummaryWriter):
        return writer.flush()
    raise ValueError(f"Invalid argument to flush(): {writer!r}")
