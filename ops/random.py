"""Counter-based random numbers: Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC'11), the generator TF's stateless random ops use too.

A stream is named by (seed, counter), two integers in [0, 2**63).  The seed is the 64-bit Philox
key; the 128-bit Philox counter of block b is (b low word, b high word, counter low word, counter
high word), and each block gives four 32-bit words.  Element i of an output takes its bits from
a fixed place in that stream (below), so equal (seed, counter) give equal arrays on any machine,
element order never depends on threading, and a GPU kernel computing block b on thread b gives
the same values: the functions below that turn block b into elements (``*_block``,
``truncated_normal_element``) serve the CPU kernels here and the CUDA kernels of
``ops.cuda.random`` alike.  Different counters (or seeds) give unrelated streams.

How words become values:
* uniform float32: word i -> (w >> 8) * 2**-24, in [0, 1).
* uniform float64: words 2i, 2i+1 -> 53 bits * 2**-53, in [0, 1).
* normal: Box-Muller on uniforms in (0, 1]; float32 uses 32-bit uniforms (block i -> elements
  4i..4i+3), float64 53-bit ones (block i -> elements 2i, 2i+1); computed in float64.
* truncated normal: element i tries blocks j*n + i for j = 0, 1, ... (n = element count); each
  block gives two float64 Box-Muller normals, taken in order, first one in [-2, 2] wins.
* uniform int in [minval, maxval): words 2i, 2i+1 as a 64-bit integer, reduced modulo the range
  (bias below range / 2**64).
"""
import math

import numpy as np

from ops import threads
from ops.kernel_cache import njit

_jit = njit(error_model="numpy")
_part = njit(error_model="numpy", nogil=True)   # a part of a draw, run beside the others

MASK32 = np.uint64(0xFFFFFFFF)
M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint64(0x9E3779B9)
W1 = np.uint64(0xBB67AE85)
S32 = np.uint64(32)
_TWO_PI = 2.0 * math.pi


@_jit
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 of counter (c0..c3) under key (k0, k1); all uint64 holding 32-bit words.

    Returns the four output words (uint64, each < 2**32).
    """
    for _ in range(10):
        p0 = M0 * c0
        p1 = M1 * c2
        hi0 = p0 >> S32
        lo0 = p0 & MASK32
        hi1 = p1 >> S32
        lo1 = p1 & MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + W0) & MASK32
        k1 = (k1 + W1) & MASK32
    return c0, c1, c2, c3


@_jit
def block_words(b, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """The four words of block ``b`` (an integer >= 0) of stream (seed, counter): Philox of
    counter (b low word, b high word, counter low word, counter high word) under the seed."""
    ub = np.uint64(b)
    return philox4x32(ub & MASK32, ub >> S32, ctr_lo, ctr_hi, seed_lo, seed_hi)


@_jit
def random_words(nblocks, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Words 0 .. 4*nblocks-1 of stream (seed, counter) as a uint64 array (values < 2**32)."""
    out = np.empty(4 * nblocks, np.uint64)
    for b in range(nblocks):
        store4(out, 4 * b, block_words(b, seed_lo, seed_hi, ctr_lo, ctr_hi))
    return out


# ---- how block b becomes elements (shared with the CUDA kernels of ops.cuda.random) -----------
# Each ``*_block`` function gives the elements that block b of the stream yields (a tuple), and
# ``store4``/``store2`` put them in place; the CPU loops here and the GPU threads of
# ops.cuda.random call the same functions, so both give the same values.
@_jit
def store4(out, i, values):
    """out[i:i + 4] = values (four), as far as ``out`` (1-D) reaches."""
    n = out.shape[0]
    out[i] = values[0]
    if i + 1 < n:
        out[i + 1] = values[1]
    if i + 2 < n:
        out[i + 2] = values[2]
    if i + 3 < n:
        out[i + 3] = values[3]


@_jit
def store2(out, i, values):
    """out[i:i + 2] = values (two), as far as ``out`` (1-D) reaches."""
    out[i] = values[0]
    if i + 1 < out.shape[0]:
        out[i + 1] = values[1]


@_jit
def _u24(w):
    # the top 24 bits of a word -> float32 in [0, 1) (exact)
    # (through int32: a conversion of uint64 to float has no vector instruction)
    return np.float32(np.int32(w >> np.uint64(8))) * np.float32(1.0 / 16777216.0)


@_jit
def _u53(a, b):
    # 53 random bits from two words -> [0, 1)
    return (np.float64(np.int64(a >> np.uint64(5))) * 67108864.0
            + np.float64(np.int64(b >> np.uint64(6)))) * (1.0 / 9007199254740992.0)


@_jit
def _box_muller(u1, u2):
    # u1 in (0, 1] so the log is finite
    r = math.sqrt(-2.0 * math.log(u1))
    t = _TWO_PI * u2
    return r * math.cos(t), r * math.sin(t)


@_jit
def uniform_f32_values(w0, w1, w2, w3):
    """A block's four float32 uniforms: word j -> its top 24 bits * 2**-24."""
    return _u24(w0), _u24(w1), _u24(w2), _u24(w3)


@_jit
def uniform_f32_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Elements 4b .. 4b+3 of a float32 uniform draw."""
    return uniform_f32_values(*block_words(b, seed_lo, seed_hi, ctr_lo, ctr_hi))


@_jit
def uniform_f64_values(w0, w1, w2, w3):
    """A block's two float64 uniforms: 53 bits of words (0, 1), then (2, 3)."""
    return _u53(w0, w1), _u53(w2, w3)


@_jit
def uniform_f64_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Elements 2b, 2b+1 of a float64 uniform draw."""
    return uniform_f64_values(*block_words(b, seed_lo, seed_hi, ctr_lo, ctr_hi))


@_jit
def normal_4_values(w0, w1, w2, w3):
    """A block's four normals from 32-bit uniforms (float32 draws), in float64."""
    s = 1.0 / 4294967296.0
    z0, z1 = _box_muller((w0 + 1.0) * s, w1 * s)
    z2, z3 = _box_muller((w2 + 1.0) * s, w3 * s)
    return z0, z1, z2, z3


@_jit
def normal_4_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Elements 4b .. 4b+3 of a normal draw from 32-bit uniforms."""
    return normal_4_values(*block_words(b, seed_lo, seed_hi, ctr_lo, ctr_hi))


@_jit
def normal_2_values(w0, w1, w2, w3):
    """A block's two normals from 53-bit uniforms (float64 draws)."""
    return _box_muller(1.0 - _u53(w0, w1), _u53(w2, w3))


@_jit
def normal_2_block(b, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Elements 2b, 2b+1 of a normal draw from 53-bit uniforms."""
    return normal_2_values(*block_words(b, seed_lo, seed_hi, ctr_lo, ctr_hi))


@_jit
def truncated_normal_element(i, n, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Element i of n of a truncated normal draw (float64): blocks j*n + i for j = 0, 1, ...
    each give two normals, taken in order; the first in [-2, 2] is the element."""
    j = np.uint64(0)
    while True:
        z0, z1 = normal_2_block(j * np.uint64(n) + np.uint64(i), seed_lo, seed_hi, ctr_lo,
                                ctr_hi)
        if -2.0 <= z0 <= 2.0:
            return z0
        if -2.0 <= z1 <= 2.0:
            return z1
        j += np.uint64(1)


@_jit
def uniform_int_values(lo, span, w0, w1, w2, w3):
    """A block's two integers in [lo, lo + span): words (0, 1), then (2, 3), as 64-bit
    integers reduced modulo span, plus lo; uint64 (two's complement of the int64)."""
    return lo + ((w0 << S32) | w1) % span, lo + ((w2 << S32) | w3) % span


@_jit
def uniform_int_block(b, lo, span, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Elements 2b, 2b+1 of an integer draw in [lo, lo + span)."""
    return uniform_int_values(lo, span, *block_words(b, seed_lo, seed_hi, ctr_lo, ctr_hi))


# ---- CPU kernels ------------------------------------------------------------------------------
# Each fills blocks [b_lo, b_hi) of its output (elements as far as the output reaches), so that a
# large draw -- a model's initial weights -- splits over the kernel threads with the same values
# (``_fill``).  A kernel computes the words of _CHUNK blocks at a time into the rows of a small
# buffer, one row per word: that loop runs 8 or 16 blocks at once in vector registers (3 to 5
# times the speed of one block at a time; stored side by side in the output, a block's words
# keep LLVM from vectorizing), then makes the chunk's elements from the buffer.
_CHUNK = 512   # blocks: 16 KB of words, in the L1 cache


@_jit
def _words_buffer():
    # rows a little over 4 KB apart: rows exactly 4 KB apart slow their stores down fourfold
    return np.empty((4, _CHUNK + 8), np.uint64)


# Philox inlined into the loop below: called as a function, it keeps the loop from vectorizing
_philox_inlined = njit(error_model="numpy", inline="always")(philox4x32.py_func)


@_jit
def _chunk_words(words, start, b_hi, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """words[j, k] = word j of block start + k (``block_words``), for the blocks of the chunk
    from ``start`` (at most _CHUNK, none from b_hi on); returns how many."""
    count = min(_CHUNK, b_hi - start)
    w0, w1, w2, w3 = words[0], words[1], words[2], words[3]
    for k in range(count):
        b = np.uint64(start + k)
        v0, v1, v2, v3 = _philox_inlined(b & MASK32, b >> S32, ctr_lo, ctr_hi, seed_lo, seed_hi)
        w0[k] = v0
        w1[k] = v1
        w2[k] = v2
        w3[k] = v3
    return count


@_jit
def _block_of(words, k):
    """The four words of the chunk's block k."""
    return words[0, k], words[1, k], words[2, k], words[3, k]


@_part
def uniform_f32_kernel(out, b_lo, b_hi, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Float32 uniforms in [0, 1) into out[4*b_lo:4*b_hi].  Key/counter words are uint64
    values < 2**32."""
    words = _words_buffer()
    for start in range(b_lo, b_hi, _CHUNK):
        for k in range(_chunk_words(words, start, b_hi, seed_lo, seed_hi, ctr_lo, ctr_hi)):
            store4(out, 4 * (start + k), uniform_f32_values(*_block_of(words, k)))


@_part
def uniform_f64_kernel(out, b_lo, b_hi, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Float64 uniforms in [0, 1) into out[2*b_lo:2*b_hi]."""
    words = _words_buffer()
    for start in range(b_lo, b_hi, _CHUNK):
        for k in range(_chunk_words(words, start, b_hi, seed_lo, seed_hi, ctr_lo, ctr_hi)):
            store2(out, 2 * (start + k), uniform_f64_values(*_block_of(words, k)))


@_part
def normal_kernel(out, b_lo, b_hi, per_block4, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Standard normals (float64) of blocks [b_lo, b_hi); per_block4: 4 per block from 32-bit
    uniforms, else 2."""
    words = _words_buffer()
    for start in range(b_lo, b_hi, _CHUNK):
        for k in range(_chunk_words(words, start, b_hi, seed_lo, seed_hi, ctr_lo, ctr_hi)):
            if per_block4:
                store4(out, 4 * (start + k), normal_4_values(*_block_of(words, k)))
            else:
                store2(out, 2 * (start + k), normal_2_values(*_block_of(words, k)))


@_part
def truncated_normal_kernel(out, i_lo, i_hi, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Standard normals (float64) conditioned on [-2, 2] by re-drawing (see module doc), into
    out[i_lo:i_hi] of the draw ``out``."""
    n = out.shape[0]
    for i in range(i_lo, i_hi):
        out[i] = truncated_normal_element(i, n, seed_lo, seed_hi, ctr_lo, ctr_hi)


@_part
def uniform_int_kernel(out, b_lo, b_hi, lo, span, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Integers lo + (64 random bits mod span), as uint64 (two's complement of the int64), into
    out[2*b_lo:2*b_hi]."""
    words = _words_buffer()
    for start in range(b_lo, b_hi, _CHUNK):
        for k in range(_chunk_words(words, start, b_hi, seed_lo, seed_hi, ctr_lo, ctr_hi)):
            store2(out, 2 * (start + k), uniform_int_values(lo, span, *_block_of(words, k)))


# A part draws at least this many blocks (0.2 ms of float32 uniforms, 4 ms of normals): a
# smaller draw runs on the caller.
_BLOCKS_PER_PART = 1 << 16


def _fill(kernel, out, blocks, *args):
    """out, its ``blocks`` blocks filled by ``kernel`` over the kernel threads."""
    threads.split(lambda lo, hi: kernel(out, lo, hi, *args), blocks, _BLOCKS_PER_PART)
    return out


# ---- public API ------------------------------------------------------------------------------
def _split(value, name):
    value = int(value)
    if not 0 <= value < 2 ** 63:
        raise ValueError("%s must be in [0, 2**63), got %d" % (name, value))
    return np.uint64(value & 0xFFFFFFFF), np.uint64(value >> 32)


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def key(seed, counter):
    """The Philox key and counter words (uint64 values < 2**32) of stream (seed, counter)."""
    s_lo, s_hi = _split(seed, "seed")
    c_lo, c_hi = _split(counter, "counter")
    return s_lo, s_hi, c_lo, c_hi


def int_range(minval, maxval):
    """(lo, span): the uint64 arguments of ``uniform_int_block`` for integers in
    [minval, maxval); ValueError unless minval < maxval."""
    minval, maxval = int(minval), int(maxval)
    if not minval < maxval:
        raise ValueError("uniform_int needs minval < maxval, got [%d, %d)" % (minval, maxval))
    return np.uint64(minval & 0xFFFFFFFFFFFFFFFF), np.uint64(maxval - minval)


def uniform(shape, dtype, seed, counter):
    """Uniform floats in [0, 1) of ``shape`` and float32/float64 ``dtype`` from (seed, counter)."""
    dtype = np.dtype(dtype)
    n = _size(shape)
    words = key(seed, counter)
    if dtype == np.float32:
        out = _fill(uniform_f32_kernel, np.empty(n, np.float32), (n + 3) // 4, *words)
    else:
        out = _fill(uniform_f64_kernel, np.empty(n, np.float64), (n + 1) // 2,
                    *words).astype(dtype, copy=False)
    return out.reshape(tuple(shape))


def normal(shape, dtype, seed, counter):
    """Standard normal floats (mean 0, stddev 1) of ``shape``/``dtype`` from (seed, counter)."""
    dtype = np.dtype(dtype)
    n = _size(shape)
    per_block4 = dtype.itemsize <= 4
    blocks = (n + 3) // 4 if per_block4 else (n + 1) // 2
    out = _fill(normal_kernel, np.empty(n, np.float64), blocks, per_block4, *key(seed, counter))
    return out.astype(dtype, copy=False).reshape(tuple(shape))


def truncated_normal(shape, dtype, seed, counter):
    """Standard normals re-drawn until within 2 stddevs, like tf.random.truncated_normal."""
    dtype = np.dtype(dtype)
    n = _size(shape)
    out = _fill(truncated_normal_kernel, np.empty(n, np.float64), n, *key(seed, counter))
    return out.astype(dtype, copy=False).reshape(tuple(shape))


def uniform_int(shape, dtype, minval, maxval, seed, counter):
    """Integers uniform in [minval, maxval) of ``shape`` and int32/int64 ``dtype``.

    The caller ensures minval < maxval and that both fit ``dtype``.
    """
    dtype = np.dtype(dtype)
    n = _size(shape)
    bits = _fill(uniform_int_kernel, np.empty(n, np.uint64), (n + 1) // 2,
                 *int_range(minval, maxval), *key(seed, counter))
    return bits.view(np.int64).astype(dtype).reshape(tuple(shape))
