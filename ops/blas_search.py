"""The BLAS that kernels call, found as threadpoolctl controllers without searching every library.

Kernels call BLAS through SciPy's ``cython_blas``: the BLAS of SciPy's install, which SciPy's
wheels bundle in ``scipy.libs/`` (``scipy/.dylibs/`` on macOS).  threadpoolctl's
``ThreadpoolController()`` reads the process's memory map and resolves the path of every library
mapped (some 120 with Numba's, LLVM's and NumPy's: about 1,000 ``lstat`` calls) to find a few BLAS
and OpenMP libraries: 4-5 ms on its own, and 10-20 ms inside the first train step of a process,
where the thread loading kernels ahead shares the GIL (measured).  So the libraries of those
directories are offered to threadpoolctl first, which tells their kind as in its own search (and
skips a file that is not loaded); only when no BLAS lies there (a SciPy built against a system
BLAS or one shared with NumPy), or with a warning when threadpoolctl's internals differ, does its
full search run.
"""
import os
import warnings

import scipy
import threadpoolctl
from threadpoolctl import ThreadpoolController

_LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")


def _scipy_root():
    return os.path.dirname(os.path.realpath(scipy.__file__))


def _scipy_roots():
    """The directories of SciPy's install (the package's, and the one beside it that its wheels
    bundle libraries in), each ending with a separator."""
    root = _scipy_root()
    return root + os.sep, root + ".libs" + os.sep


def _bundled_libraries():
    """The shared libraries SciPy's wheel bundles."""
    root = _scipy_root()
    found = []
    for directory in (root + ".libs", os.path.join(root, ".dylibs")):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        found += [os.path.join(directory, name) for name in names
                  if any(suffix in name for suffix in _LIBRARY_SUFFIXES)]
    return found


class _Controllers(ThreadpoolController):
    """threadpoolctl's controllers of the given library files only (those loaded)."""

    def __init__(self, paths):   # (threadpoolctl's own __init__ would search every library)
        self.lib_controllers = []
        for path in paths:
            self._make_controller_from_path(path)


def kernels_blas():
    """threadpoolctl's controllers of the BLAS libraries of SciPy's install, or of every BLAS
    loaded when none lies there.  SciPy's BLAS must be loaded already."""
    paths = _bundled_libraries()
    if paths:
        try:
            own = _Controllers(paths).select(user_api="blas").lib_controllers
        except (AttributeError, TypeError) as error:   # threadpoolctl's internals changed
            warnings.warn(
                f"hybridtf: threadpoolctl {threadpoolctl.__version__} has no per-file search "
                f"({type(error).__name__}: {error}); the BLAS that kernels call is found by its "
                "search of every loaded library instead, a few milliseconds once per process.",
                RuntimeWarning, stacklevel=2)
            own = []
        if own:
            return own
    return full_search()


def full_search():
    """threadpoolctl's search of every loaded library: the BLAS controllers of SciPy's install,
    or all BLAS controllers when none lies there (a BLAS shared with NumPy)."""
    found = ThreadpoolController().select(user_api="blas").lib_controllers
    roots = _scipy_roots()
    own = [c for c in found if os.path.realpath(c.filepath).startswith(roots)]
    return own or found
