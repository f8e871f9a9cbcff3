"""Numba's CUDA simulator, safe for device functions that many simulated threads call at once.

The simulator (``NUMBA_ENABLE_CUDASIM=1``) runs each GPU thread as a Python thread.  Around every
call of a device function it binds the ``cuda`` name of the function's module to the launch's
fake module (which has ``threadIdx``, ``syncthreads``, ...) and binds it back afterwards -- once
per call, without counting: when two threads run device functions of one module
(``ops.cuda.tiles`` from a product kernel elsewhere), the first to return binds the real module
back while the other still runs, which then fails with "module 'numba.cuda' has no attribute
'threadIdx'".  Numba 0.68's simulator has this race (NVIDIA/numba-cuda fixed it in its own
simulator, pull request 690).  ``install`` (``ops.cuda.launch`` runs it when the simulator is
on) replaces the swap with one that counts the calls inside each module and binds the real
module back when the last one returns; a user's own simulated kernels in the process get it too.
"""
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_swaps = {}                    # id of a module's globals -> [calls inside, names rebound]


@contextmanager
def counted_swap(fn, fake_cuda_module):
    """The simulator's ``swapped_cuda_module``, counted per module."""
    from numba import cuda
    namespace = fn.__globals__
    key = id(namespace)
    with _lock:
        swap = _swaps.get(key)
        if swap is None:
            names = [name for name, value in namespace.items() if value is cuda]
            swap = _swaps[key] = [0, names]
            for name in names:
                namespace[name] = fake_cuda_module
        swap[0] += 1
    try:
        yield
    finally:
        with _lock:
            swap[0] -= 1
            if swap[0] == 0:
                del _swaps[key]
                for name in swap[1]:
                    namespace[name] = cuda


def install():
    """Makes the simulator use ``counted_swap`` (numba.cuda must be the simulator)."""
    from numba.cuda.simulator import kernel
    kernel.swapped_cuda_module = counted_swap
