"""Launch shapes shared by the CUDA kernels."""
from numba import cuda

from ops.library_digest import LIBRARY_DIGEST

# Whether numba.cuda is Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 when it was imported),
# which runs kernels in Python on the host, rather than a GPU's driver.
SIMULATED = "simulator" in cuda.is_available.__module__
if SIMULATED:   # without the simulator's race between its threads (see ops.cuda.simulator)
    from ops.cuda import simulator
    simulator.install()

# Threads per block of the one-dimensional kernels: a multiple of the warp size that keeps
# enough blocks per multiprocessor resident on every architecture Numba supports.
THREADS = 256
# A grid never needs more blocks than this: the kernels loop over their elements with a stride
# of the whole grid, so a larger array just gives each thread more elements.
MAX_BLOCKS = 4096


def blocks_for(n, threads=THREADS):
    """The number of blocks of ``threads`` threads for a grid-strided loop over ``n`` items."""
    return max(1, min(MAX_BLOCKS, (n + threads - 1) // threads))


def empty(shape, dtype):
    """A new device array (C order); its contents are undefined until a kernel writes them."""
    return cuda.device_array(shape, dtype)


def jit(function=None, **options):
    """``numba.cuda.jit(**options)`` for the kernel library: with ``cache=True``, Numba's cache
    entries of the kernel are stamped with the digest of the whole library
    (``ops.library_digest``) besides its own file.  A kernel compiles into itself the device
    functions it calls from other modules (the scalar functions of ``ops.elementwise``, the
    Philox rounds of ``ops.random``), so a change there must compile it again, which a stamp
    of its own file alone would miss.  Use as ``@jit`` or ``@jit(cache=True, ...)``."""
    def decorate(py_func):
        dispatcher = cuda.jit(**options)(py_func)
        # (the simulator's kernels have no cache: nothing to stamp)
        cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
        if cache_file is not None and hasattr(cache_file, "_source_stamp"):
            cache_file._source_stamp = (cache_file._source_stamp, LIBRARY_DIGEST)
        return dispatcher

    return decorate if function is None else decorate(function)
