"""Hand-fused Numba kernels: the practical limit on this hardware for W0, W1 and W2.

Each is one ``@njit`` loop with ``cache=True`` (the compiled code lands in ``NUMBA_CACHE_DIR``),
reading every input once and writing every output once. ``fastmath`` lets LLVM vectorise the
reduction, as a person writing the fastest kernel by hand would.
"""
import numpy as np
from numba import njit

ONE = np.float32(1.0)
W2_SCALE = np.float32(1.01)
W2_SHIFT = np.float32(0.1)
W2_DECAY = np.float32(0.5)
W2_STEPS = 5


@njit(cache=True)
def w0_add_one(x):
    """W0: ``x + 1.0`` on a float32 scalar."""
    return x + ONE


@njit(cache=True, fastmath=True)
def w1_fused(x, y):
    """W1: ``mean(x**2 * 3 + y)`` over 2-D float32 arrays, one pass, float64 accumulator."""
    total = 0.0
    rows, cols = x.shape
    for i in range(rows):
        for j in range(cols):
            v = x[i, j]
            total += v * v * 3.0 + y[i, j]
    return np.float32(total / (rows * cols))


@njit(cache=True, fastmath=True)
def w2_fused(x):
    """W2: five times ``x = tanh(x * 1.01 + 0.1) - x * 0.5``, each element kept in a register."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(W2_STEPS):
            v = np.tanh(v * W2_SCALE + W2_SHIFT) - v * W2_DECAY
        out[i] = v
    return out
