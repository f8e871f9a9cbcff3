"""Keeping freed memory in the process, so that the next step's arrays do not fault it in again.

With its default settings the GNU C library hands a block of more than 128 KB (or, once it has
seen one freed, of more than the largest such block, up to 32 MB) back to the kernel when it is
freed, and gives back the free top of the heap past twice that; the next allocation of that size
gets new pages, and the kernel faults each of them in -- zeroes it and maps it -- at its first
write.  Every op and every step allocates its outputs and scratch anew, so a steady training step
paid for thousands of page faults (an LSTM step: about 6,000, a third of its time, on a machine
where one costs 2-3 us).  Where the C library is glibc, importing hybridtf sets it, once, to serve
blocks up to 32 MB (its largest setting) from the heap and to keep up to ``TRIM_THRESHOLD`` bytes
of free heap: a block freed by one step is reused by the next, as TensorFlow's and JAX's own
allocators do.  The cost is that the process's resident size stays at its peak.

``HYBRIDTF_KEEP_FREED_MEMORY=0`` leaves the C library's settings as they are.
"""
import ctypes
import os

# mallopt's parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20      # glibc refuses more (half its largest heap of a thread's arena)
TRIM_THRESHOLD = 1 << 30

ENVIRONMENT_VARIABLE = "HYBRIDTF_KEEP_FREED_MEMORY"


def _glibc():
    """The process's C library where it is glibc, else None."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version
        libc.mallopt
    except (OSError, AttributeError, TypeError):   # not glibc (TypeError: Windows)
        return None
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    return libc


def keep_freed_memory(environ=os.environ):
    """Sets glibc's thresholds (see the module's docstring) unless the environment says not to;
    True where they were set."""
    if environ.get(ENVIRONMENT_VARIABLE, "") == "0":
        return False
    libc = _glibc()
    if libc is None:
        return False
    # mallopt returns 1 on success; setting M_MMAP_THRESHOLD also stops glibc from moving it
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
