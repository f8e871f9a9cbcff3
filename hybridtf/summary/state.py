"""The summary state of each thread, as TF keeps it: the default writer, the default step and
the recording condition (``tf.summary.record_if``)."""
import contextlib
import threading

import numpy as np

from hybridtf.eager.execute import as_tensor
from hybridtf.framework.tensor import Tensor


class _SummaryState(threading.local):
    def __init__(self):
        self.writer = None
        self.step = None
        self.is_recording = None    # None: record (when there is a writer)


STATE = _SummaryState()


def get_step():
    """Returns the default summary step for the current thread: the step set by
    ``tf.summary.experimental.set_step()`` (or a writer's ``as_default(step)``), else None."""
    return STATE.step


def set_step(step):
    """Sets the default summary step for the current thread.

    ``step``: an int64-castable value, a ``tf.Variable``, or None to unset.  Inside a
    ``tf.function`` the step is captured when the function is traced, so later changes are seen
    only through a ``tf.Variable`` step (read each time the function runs).
    """
    STATE.step = step


@contextlib.contextmanager
def record_if(condition):
    """Sets summary recording on or off for the code inside the context.

    ``condition``: True, False, a scalar bool tensor (or ``tf.Variable``), or a callable
    returning one of these; a callable is called each time a summary is written (each time a
    decorated function is traced), so ``lambda: step % 100 == 0`` with a variable ``step``
    decides each time the function runs.  The previous condition is restored on exit.
    """
    old = STATE.is_recording
    STATE.is_recording = condition
    try:
        yield
    finally:
        STATE.is_recording = old


def recording_condition():
    """Whether summaries are recorded now: True, False, or a symbolic bool tensor decided each
    time the function being traced runs."""
    if STATE.writer is None:
        return False
    condition = STATE.is_recording
    if callable(condition):
        condition = condition()
    if condition is None:
        return True
    if isinstance(condition, (bool, np.bool_)):
        return bool(condition)
    tensor = as_tensor(condition)
    if not tensor.dtype.is_bool or tensor.shape.rank != 0:
        raise TypeError(f"tf.summary.record_if: the condition must be a Python bool or a scalar "
                        f"bool tensor, got {condition!r}.")
    if type(tensor) is Tensor:     # a value known now (a symbolic one is decided at run time)
        return bool(np.asarray(tensor._value))
    return tensor


def should_record_summaries():
    """A scalar bool tensor: True when summaries will be recorded (a default writer is set and
    the ``record_if`` condition, if any, holds), else False."""
    condition = recording_condition()
    if isinstance(condition, bool):
        return as_tensor(condition)
    return condition
