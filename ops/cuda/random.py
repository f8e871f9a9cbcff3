"""CUDA kernels of the random ops: the counter-based Philox streams of ``ops.random`` on the GPU.

One thread computes one Philox block (one element of a truncated normal) with the very
functions the CPU kernels loop over -- ``ops.random.uniform_f32_block`` and the rest, which
Numba compiles as device functions when a kernel calls them -- so a seeded draw gives the CPU's
values: bit for bit for uniform floats and integers; for normal and truncated normal floats, as
far as CUDA's float64 log, sin and cos agree with the host's (libdevice is within 1-2 units in
the last place of float64; the float32 rounding of a float32 draw almost always hides that).

``scale`` and ``shift`` make ``draw * scale + shift`` rounded twice, as the CPU computes it: the
product is stored before the shift is added in a pass of its own, since the CUDA compiler would
fuse a multiply and an add in one kernel into one differently rounded fused multiply-add.
"""
import numpy as np
from numba import cuda

from ops import random as cpu
from ops.cuda.launch import THREADS, blocks_for, empty, jit


# ---- kernels ---------------------------------------------------------------------------------
# The CPU's stores of a block's elements, compiled for the GPU from the same source (Numba's
# simulator cannot hand a device array to a CPU-compiled function, as it can the scalars).
_store4 = cuda.jit(device=True, cache=True)(cpu.store4.py_func)
_store2 = cuda.jit(device=True, cache=True)(cpu.store2.py_func)


@jit(device=True, cache=True)
def _scale(out, start, count, scale):
    # out[start:start + count] *= scale, as far as out reaches
    stop = start + count
    if stop > out.shape[0]:
        stop = out.shape[0]
    for i in range(start, stop):
        out[i] = out[i] * scale


@jit(cache=True)
def _uniform_f32_kernel(out, scale, seed_lo, seed_hi, ctr_lo, ctr_hi):
    for b in range(cuda.grid(1), (out.shape[0] + 3) // 4, cuda.gridsize(1)):
        _store4(out, 4 * b, cpu.uniform_f32_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi))
        _scale(out, 4 * b, 4, scale)


@jit(cache=True)
def _uniform_f64_kernel(out, scale, seed_lo, seed_hi, ctr_lo, ctr_hi):
    for b in range(cuda.grid(1), (out.shape[0] + 1) // 2, cuda.gridsize(1)):
        _store2(out, 2 * b, cpu.uniform_f64_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi))
        _scale(out, 2 * b, 2, scale)


@jit(cache=True)
def _normal_4_kernel(out, scale, seed_lo, seed_hi, ctr_lo, ctr_hi):
    # float64 normals rounded to out's dtype on the store, as the CPU's astype rounds them
    for b in range(cuda.grid(1), (out.shape[0] + 3) // 4, cuda.gridsize(1)):
        _store4(out, 4 * b, cpu.normal_4_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi))
        _scale(out, 4 * b, 4, scale)


@jit(cache=True)
def _normal_2_kernel(out, scale, seed_lo, seed_hi, ctr_lo, ctr_hi):
    for b in range(cuda.grid(1), (out.shape[0] + 1) // 2, cuda.gridsize(1)):
        _store2(out, 2 * b, cpu.normal_2_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi))
        _scale(out, 2 * b, 2, scale)


@jit(cache=True)
def _truncated_normal_kernel(out, scale, seed_lo, seed_hi, ctr_lo, ctr_hi):
    n = out.shape[0]
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = cpu.truncated_normal_element(i, n, seed_lo, seed_hi, ctr_lo, ctr_hi)
        _scale(out, i, 1, scale)


@jit(cache=True)
def _uniform_int_kernel(out, mask, lo, span, seed_lo, seed_hi, ctr_lo, ctr_hi):
    # out: the unsigned view of the int32/int64 result; ``mask`` keeps the low bits of the
    # 64-bit two's complement value that fit it (an int32 result holds them as the CPU's cast)
    for b in range(cuda.grid(1), (out.shape[0] + 1) // 2, cuda.gridsize(1)):
        v0, v1 = cpu.uniform_int_block(b, lo, span, seed_lo, seed_hi, ctr_lo, ctr_hi)
        _store2(out, 2 * b, (v0 & mask, v1 & mask))


@jit(cache=True)
def _shift_kernel(out, shift):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = out[i] + shift


# ---- public API ------------------------------------------------------------------------------
def _draw(kernel, per_thread, shape, dtype, seed, counter, scale, shift, non_negative):
    """A new device array of ``shape``/``dtype`` filled by ``kernel`` (``per_thread`` elements
    per thread), times ``scale``, plus ``shift``; ``non_negative``: the draw is never -0.0."""
    dtype = np.dtype(dtype)
    out = empty(tuple(shape), dtype)
    if out.size:
        flat = out.reshape(out.size)
        scale, shift = dtype.type(scale), dtype.type(shift)
        threads = (out.size + per_thread - 1) // per_thread
        kernel[blocks_for(threads), THREADS](flat, scale, *cpu.key(seed, counter))
        # Adding zero changes nothing unless the product is -0.0, which a non-negative draw
        # times a scale without a sign bit never is.
        if not (shift == 0 and non_negative and not np.signbit(scale)):
            _shift_kernel[blocks_for(out.size), THREADS](flat, shift)
    return out


def uniform(shape, dtype, seed, counter, scale=1.0, shift=0.0):
    """Floats uniform in [0, 1) of ``shape`` and float32/float64 ``dtype`` from stream
    (seed, counter), times ``scale`` plus ``shift``: ``ops.random.uniform``'s values."""
    if np.dtype(dtype) == np.float32:
        return _draw(_uniform_f32_kernel, 4, shape, dtype, seed, counter, scale, shift, True)
    return _draw(_uniform_f64_kernel, 2, shape, dtype, seed, counter, scale, shift, True)


def normal(shape, dtype, seed, counter, scale=1.0, shift=0.0):
    """Standard normal floats times ``scale`` (the stddev) plus ``shift`` (the mean):
    ``ops.random.normal``'s values."""
    if np.dtype(dtype).itemsize <= 4:
        return _draw(_normal_4_kernel, 4, shape, dtype, seed, counter, scale, shift, False)
    return _draw(_normal_2_kernel, 2, shape, dtype, seed, counter, scale, shift, False)


def truncated_normal(shape, dtype, seed, counter, scale=1.0, shift=0.0):
    """Standard normals re-drawn until within 2 stddevs, times ``scale`` plus ``shift``:
    ``ops.random.truncated_normal``'s values."""
    return _draw(_truncated_normal_kernel, 1, shape, dtype, seed, counter, scale, shift, False)


def uniform_int(shape, dtype, minval, maxval, seed, counter):
    """Integers uniform in [minval, maxval) of ``shape`` and int32/int64 ``dtype``:
    ``ops.random.uniform_int``'s values (the caller ensures both bounds fit ``dtype``)."""
    dtype = np.dtype(dtype)
    lo, span = cpu.int_range(minval, maxval)
    out = empty(tuple(shape), dtype)
    if out.size:
        bits = out.reshape(out.size).view(np.dtype(f"u{dtype.itemsize}"))
        mask = np.uint64((1 << (8 * dtype.itemsize)) - 1)
        _uniform_int_kernel[blocks_for((out.size + 1) // 2), THREADS](
            bits, mask, lo, span, *cpu.key(seed, counter))
    return out
