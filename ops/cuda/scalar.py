"""The elementwise ops' scalar functions on the GPU: the same definitions as on the CPU.

A CUDA kernel may call a CPU kernel (an ``@njit`` dispatcher) directly: Numba's CUDA target
compiles the dispatcher's Python source as a device function (``CUDATypingContext`` does this
for every CPU dispatcher a kernel reads).  So the generated kernels of ``ops.cuda.elementwise``
call the scalar functions of ``ops.elementwise`` themselves (and the simulator, which runs a
kernel's Python, calls their compiled CPU code).

A few helpers those functions call cannot be compiled for a GPU, or have a better GPU form.
``EQUIVALENTS`` maps each to what the GPU calls instead, in one of two ways:

* a plain function or NumPy ufunc gets an overload for the "cuda" target, which Numba's typing
  prefers there to the generic one (and never uses on the CPU);
* a CPU kernel is replaced in the globals of every scalar function that calls it, directly or
  through other kernels (``device_function``), since Numba resolves a dispatcher itself, not
  through overloads.
"""
import dis
import math
import types

import numpy as np
from numba import cuda
from numba.cuda import libdevice
from numba import types as nbtypes
from numba.core.dispatcher import Dispatcher
from numba.extending import overload

from ops import elementwise, fast_tanh

# The size of _cot_derivative's polynomials: polygamma reflects orders n up to 170 (beyond, n!
# overflows float64 and it gives NaN before reflecting), and Q_n has degree n + 1.
_POLYNOMIAL_SIZE = int(elementwise._MAX_REFLECTED_ORDER) + 2


@cuda.jit(device=True, cache=True)
def _cot_derivative(n, c):
    """``ops.elementwise._cot_derivative`` with its scratch arrays local to the thread, of the
    largest size it needs: a GPU thread cannot allocate memory."""
    return elementwise.cot_derivative_in(n, c, cuda.local.array(_POLYNOMIAL_SIZE, np.float64),
                                         cuda.local.array(_POLYNOMIAL_SIZE, np.float64))


def _float_function(for_float64, for_float32=None):
    """The overload, for one float argument, of a function whose GPU form is ``for_float64``
    (``for_float32`` for a float32 argument, if it differs: libdevice names them apart)."""
    def on_gpu(x):
        if x == nbtypes.float32 and for_float32 is not None:
            return lambda x: for_float32(x)
        if isinstance(x, nbtypes.Float):
            return lambda x: for_float64(x)
    return on_gpu


def _scalars(*args):
    return all(isinstance(a, (nbtypes.Number, nbtypes.Boolean)) for a in args)


# Python's (and Numba's CPU) max and min of two values: the first unless the second compares
# greater (smaller), so max(nan, 0.0) is nan and max(0.0, nan) is 0.0; mixed types unify as
# there (float32 with float64 gives float64).
def _larger(a, b):
    if _scalars(a, b):
        return lambda a, b: b if b > a else a


def _smaller(a, b):
    if _scalars(a, b):
        return lambda a, b: b if b < a else a


# The CPU-only helpers of the scalar functions and what a GPU calls instead.  Why each:
# * np.sqrt, np.exp, np.expm1, np.log1p, np.floor, np.ceil, np.rint: Numba's CUDA target types
#   the math module's functions on scalars (float32 stays float32, and math.floor and math.ceil
#   keep the float type, as np.floor does), not NumPy's ufuncs.
# * max, min: Numba implements the builtins as *args overloads, which its CUDA target cannot
#   compile (a signature mismatch); two-argument forms with the same comparisons replace them.
# * fast_tanh.tanh: a float32 tanh made to vectorize on a CPU; the GPU's own tanhf is faster.
# * ops.elementwise._cot_derivative: it allocates with np.zeros (no allocation on a GPU).
# Each value is a "cuda" overload's implementation, or for a CPU kernel the device function
# that replaces it.
EQUIVALENTS = {
    np.sqrt: _float_function(math.sqrt),
    np.exp: _float_function(math.exp),
    np.expm1: _float_function(math.expm1),
    np.log1p: _float_function(math.log1p),
    np.floor: _float_function(math.floor),
    np.ceil: _float_function(math.ceil),
    np.rint: _float_function(libdevice.rint, libdevice.rintf),
    max: _larger,
    min: _smaller,
    fast_tanh.tanh: _float_function(math.tanh),
    elementwise._cot_derivative: _cot_derivative,
}

for _helper, _on_gpu in EQUIVALENTS.items():
    if not isinstance(_helper, Dispatcher):   # (kernels: device_function below)
        overload(_helper, target="cuda")(_on_gpu)


_DEVICE_FUNCTIONS = {}


def device_function(scalar):
    """What a CUDA kernel calls for the scalar function ``scalar`` (an ``@njit`` dispatcher of
    ``ops.elementwise``): ``scalar`` itself, or -- when it calls, directly or through other
    kernels, a CPU kernel of ``EQUIVALENTS`` -- a device function compiled from its Python
    source with those kernels replaced."""
    if scalar not in _DEVICE_FUNCTIONS:
        _DEVICE_FUNCTIONS[scalar] = scalar   # (a recursive call sees the kernel itself)
        _DEVICE_FUNCTIONS[scalar] = _rebuilt(scalar)
    return _DEVICE_FUNCTIONS[scalar]


def _called_kernels(py_func):
    """The CPU kernels that ``py_func`` reads as globals, by name."""
    names = {ins.argval for ins in dis.get_instructions(py_func)
             if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    found = {}
    for name in names:
        value = py_func.__globals__.get(name)
        if isinstance(value, Dispatcher):
            found[name] = value
    return found


def _rebuilt(scalar):
    """``scalar``, or its Python source compiled for the GPU with the kernels it calls that
    have equivalents (or call such kernels) replaced in its globals."""
    replaced = {}
    for name, kernel in _called_kernels(scalar.py_func).items():
        if kernel in EQUIVALENTS:
            replaced[name] = EQUIVALENTS[kernel]
        else:
            inner = device_function(kernel)
            if inner is not kernel:
                replaced[name] = inner
    if not replaced:
        return scalar
    py_func = scalar.py_func
    namespace = dict(py_func.__globals__, **replaced)
    rebound = types.FunctionType(py_func.__code__, namespace, py_func.__name__,
                                 py_func.__defaults__, py_func.__closure__)
    rebound.__qualname__ = py_func.__qualname__
    return cuda.jit(device=True)(rebound)
