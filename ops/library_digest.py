"""A hash of the kernel library's sources (every ``.py`` file under ``ops/``), and what else
compiled kernels depend on.

Numba's cache notices a change to the file of the function it compiled, not to the functions
it calls from other files (``ops.fast_exp``'s exp inlined into a softmax kernel, the scalar
functions a generated module calls): the library's hash, part of every cached kernel's stamp and
of every generated module's name, makes a changed library compile afresh instead of running
stale code.
"""
import hashlib
import os
import sys

import numba
import numpy


def _digest():
    digest = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(__file__))
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    digest.update(os.path.relpath(path, root).encode() + b"\0" + f.read())
    return digest.hexdigest()


LIBRARY_DIGEST = _digest()


# What compiled kernels depend on besides the library: Numba's cache files hold the code of one
# Python, Numba and NumPy (its index is dropped under another Numba).  Cache directories
# shared by environments that differ in these keep their kernels apart by it.
COMPILED_FOR = (f"python {sys.version_info[0]}.{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
                f" numba {numba.__version__} numpy {numpy.__version__}")
