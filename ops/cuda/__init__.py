"""CUDA kernels: ``@cuda.jit`` kernels and device functions over Numba device arrays.

Like the rest of ``ops`` they know nothing of tensors.  Each module's entry points take device
arrays (C-contiguous) and return new device arrays; the registry entries call them as their
"cuda" kernels.  They run unchanged on Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which
is how they are tested where no GPU is present.
"""
