"""IEEE floating-point results without NumPy's warnings, as TF computes them.

TF's kernels follow IEEE arithmetic silently: 1 / 0 is inf, 0 / 0 is NaN, exp(1000) is inf, a
float too large for float32 becomes inf.  NumPy computes the same values but by default warns
("divide by zero encountered in ...") when a ufunc or a cast raises a floating-point flag.
hybridtf silences those warnings around its own kernel calls only, never globally: the caller's
NumPy settings stay as they were, outside and after every call.

``np.errstate`` costs about 1 us per use, as much as a whole eager op.  NumPy 2 keeps the state
in a context variable (``numpy._core._ufunc_config._extobj_contextvar``, private), which
np.errstate itself sets; setting that variable to the value ``np.errstate(all="ignore")`` gives
it, and resetting it after the call, costs about 0.2 us.  Where the variable is missing or does
not behave so (another NumPy version), np.errstate does the same job, only slower.

A call that runs no Python code of ours (a ufunc) is cheaper still in a context of its own:
``QUIET.run(fn, *args)`` runs it in a ``contextvars.Context`` made once per thread with the
error state "ignore all" (0.02 us, where setting and resetting the variable also slows the
ufunc's own read of it).  ``fn`` sees that context's copy of every other context variable, and
must not call ``QUIET.run`` itself.
"""
import contextvars
import functools
import threading
import warnings

import numpy as np


class ContextVarSilencer:
    """Sets NumPy's error-state context variable to "ignore all" (NumPy 2).

    ``ignore()`` silences floating-point warnings and returns the token that ``restore(token)``
    takes.  Both are the context variable's own (C) methods, bound here, so that a call costs
    no Python frame: every kernel call makes two.
    """

    def __init__(self, variable):
        with np.errstate(all="ignore"):
            ignore_all = variable.get()
        self.ignore = functools.partial(variable.set, ignore_all)
        self.restore = variable.reset

    @staticmethod
    def quiet_run():
        """A ``run(fn, *args)`` for the calling thread: ``Context.run`` of a context whose
        NumPy error state is "ignore all"."""
        with np.errstate(all="ignore"):
            return contextvars.copy_context().run


class ErrstateSilencer:
    """The same through np.errstate, for NumPy versions without that context variable."""

    @staticmethod
    def ignore():
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    @staticmethod
    def restore(state):
        state.__exit__(None, None, None)

    @staticmethod
    def quiet_run():
        return _run_quietly


def silences(silencer):
    """Whether ``silencer`` really silences a division by zero and then restores the state."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(divide="warn"):
            token = silencer.ignore()
            try:
                np.divide(np.ones(1), 0.0)
            except RuntimeWarning:
                return False
            finally:
                silencer.restore(token)
            try:
                np.divide(np.ones(1), 0.0)
            except RuntimeWarning:
                return True
    return False


def _choose():
    try:
        from numpy._core._ufunc_config import _extobj_contextvar
        fast = ContextVarSilencer(_extobj_contextvar)
    except (ImportError, AttributeError, TypeError, LookupError):
        return ErrstateSilencer()
    return fast if silences(fast) else ErrstateSilencer()


SILENCER = _choose()
ignore = SILENCER.ignore
restore = SILENCER.restore


def _run_quietly(fn, *args):
    token = ignore()
    try:
        return fn(*args)
    finally:
        restore(token)


class _Quiet(threading.local):
    """``QUIET.run(fn, *args)``: ``fn(*args)`` with NumPy's floating-point warnings silenced, for
    a ``fn`` that runs no ``QUIET.run`` itself (see the module's docstring).  Per thread: a
    context can be entered by one thread at a time."""

    def __init__(self):
        self.run = SILENCER.quiet_run()


QUIET = _Quiet()


def quietly(fn):
    """``fn`` with NumPy's floating-point warnings silenced while it runs."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        token = ignore()
        try:
            return fn(*args, **kwargs)
        finally:
            restore(token)
    return run
