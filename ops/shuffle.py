"""Buffer shuffling of a stream of indices, as ``Dataset.shuffle`` defines it.

A buffer holds up to ``buffer_size`` items.  While it is not full, each incoming item is
appended.  Once it is full, each incoming item causes one draw: a uniformly chosen slot is
emitted and the incoming item takes its place.  At the end of the stream the remaining items are
emitted in random order (a draw among the items left; the last item fills the emptied slot).

Draw ``k`` (counted over the whole stream) picks slot ``(w * m) >> 32`` among ``m`` slots, where
``w`` is word ``k`` of the Philox stream (seed, counter) of ``ops.random`` (word ``4b + j`` is
word ``j`` of block ``b``).  ``draw_words`` gives those words to code that shuffles other items
than indices, so both produce the same order for the same stream.
"""
import numpy as np

from ops.kernel_cache import njit
from ops.random import key, philox4x32

_jit = njit()

_MASK32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)

# state[0]: items in the buffer; state[1]: draws made so far
FILL, DRAWS = 0, 1


@_jit
def _word(k, seed_lo, seed_hi, ctr_lo, ctr_hi):
    block = np.uint64(k >> 2)
    w = philox4x32(block & _MASK32, block >> _S32, ctr_lo, ctr_hi, seed_lo, seed_hi)
    return w[k & 3]


@_jit
def words_kernel(start, count, seed_lo, seed_hi, ctr_lo, ctr_hi):
    out = np.empty(count, np.uint64)
    for i in range(count):
        out[i] = _word(start + i, seed_lo, seed_hi, ctr_lo, ctr_hi)
    return out


@_jit
def shuffle_kernel(indices, buffer, state, out, finish, seed_lo, seed_hi, ctr_lo, ctr_hi):
    """Pushes ``indices`` through the buffer; writes the emitted items to ``out`` (which must
    hold ``len(indices) + len(buffer)`` items) and returns their count.  With ``finish`` the
    buffer is emptied at the end."""
    capacity = buffer.shape[0]
    fill = state[FILL]
    k = state[DRAWS]
    emitted = 0
    for i in range(indices.shape[0]):
        item = indices[i]
        if fill < capacity:
            buffer[fill] = item
            fill += 1
            continue
        slot = (_word(k, seed_lo, seed_hi, ctr_lo, ctr_hi) * np.uint64(capacity)) >> _S32
        k += 1
        out[emitted] = buffer[slot]
        emitted += 1
        buffer[slot] = item
    if finish:
        while fill > 0:
            slot = (_word(k, seed_lo, seed_hi, ctr_lo, ctr_hi) * np.uint64(fill)) >> _S32
            k += 1
            out[emitted] = buffer[slot]
            emitted += 1
            fill -= 1
            buffer[slot] = buffer[fill]
    state[FILL] = fill
    state[DRAWS] = k
    return emitted


class IndexShuffler:
    """One pass of a buffer shuffle over a stream of int64 indices fed in chunks."""

    def __init__(self, buffer_size, seed, counter):
        self._buffer = np.empty(int(buffer_size), np.int64)
        self._state = np.zeros(2, np.int64)
        self._key = key(seed, counter)

    def push(self, indices, finish=False):
        """The indices emitted after ``indices`` entered (and, with ``finish``, the rest)."""
        indices = np.ascontiguousarray(indices, dtype=np.int64)
        out = np.empty(indices.shape[0] + self._buffer.shape[0], np.int64)
        count = shuffle_kernel(indices, self._buffer, self._state, out, finish, *self._key)
        return out[:count]


def draw_words(start, count, seed, counter):
    """Words ``start .. start + count - 1`` of the draw stream (uint64 values below 2**32)."""
    return words_kernel(int(start), int(count), *key(seed, counter))


def slot(word, slots):
    """The slot a draw word picks among ``slots`` (the kernel's rule, for Python callers)."""
    return (int(word) * slots) >> 32
