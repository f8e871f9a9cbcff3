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
"""
import functools
import warnings

import numpy as np


class ContextVarSilencer:
    """Sets NumPy's error-state context variable to "ignore all" (NumPy 2)."""

    def __init__(self, variable):
        self._variable = variable
        with np.errstate(all="ignore"):
            self._ignore_all = variable.get()

    def ignore(self):
        """Silences floating-point warnings; returns the token ``restore`` takes."""
        return self._variable.set(self._ignore_all)

    def restore(self, token):
        self._variable.reset(token)


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
