"""``Dataset.shuffle``: a buffer of ``buffer_size`` elements, sampled uniformly and refilled.

Seeds follow TF's rules (``tf.random.set_seed`` and the op seed, see ``random_ops.get_seed``):
with neither, every pass is random; otherwise pass ``k`` of the dataset is fixed by the seeds and
``k`` (with ``reshuffle_each_iteration=False`` every pass repeats pass 0).  A pass over
in-memory rows shuffles their indices in a compiled kernel (``ops.shuffle``); any other input is
shuffled element by element with the same draws, so both give the same order.
"""
import itertools
import os

import numpy as np

from ops import shuffle as kernels

from hybridtf.api import random_ops
from hybridtf.data.node import IndexSource, UnaryNode, new_pass, positive_size

_MASK63 = (1 << 63) - 1
# Draw words fetched at a time by the element-by-element shuffle.
WORDS_PER_FETCH = 1024


def _seed_value(seed):
    """The 63-bit key of a shuffle from its op seed and the global seed."""
    global_seed, op_seed = random_ops.get_seed(seed)
    if global_seed is None:
        return int.from_bytes(os.urandom(8), "little") & _MASK63
    return (global_seed * 0x2545F4914F6CDD1D + op_seed * 0x9E3779B97F4A7C15 + 1) & _MASK63


class Shuffle(UnaryNode):
    kind = "Shuffle"

    def __init__(self, node, buffer_size, seed, reshuffle_each_iteration):
        super().__init__(node)
        self.buffer_size = positive_size(buffer_size, "buffer_size", "shuffle")
        self.seed = _seed_value(seed)
        self.reshuffle = True if reshuffle_each_iteration is None else \
            bool(reshuffle_each_iteration)
        self._passes = itertools.count()   # next() is atomic: passes may start on any thread

    def _next_counter(self):
        return next(self._passes) if self.reshuffle else 0

    def index_source(self):
        source = self.input.index_source()
        if source is None:
            return None

        def chunks():
            shuffler = kernels.IndexShuffler(self.buffer_size, self.seed, self._next_counter())
            for chunk in source.chunks():
                out = shuffler.push(chunk)
                if len(out):
                    yield out
            out = shuffler.push(np.empty(0, np.int64), finish=True)
            if len(out):
                yield out
        return IndexSource(source.gather, chunks, source.length)

    def _elements(self):
        return self._shuffled(self._next_counter())   # the pass's counter is taken now

    def _shuffled(self, counter):
        """The element-by-element shuffle: ``ops.shuffle``'s algorithm over Python items."""
        words = _Draws(self.seed, counter)
        buffer = []
        with new_pass(self.input) as elements:
            for element in elements:
                if len(buffer) < self.buffer_size:
                    buffer.append(element)
                    continue
                slot = words.slot(self.buffer_size)
                yield buffer[slot]
                buffer[slot] = element
        while buffer:
            slot = words.slot(len(buffer))
            last = buffer.pop()
            if slot < len(buffer):
                chosen, buffer[slot] = buffer[slot], last
            else:
                chosen = last
            yield chosen


class _Draws:
    """The draw stream of one pass, fetched from the kernel in blocks."""

    def __init__(self, seed, counter):
        self.seed, self.counter = seed, counter
        self.start = 0
        self.block = []
        self.position = 0

    def slot(self, slots):
        if self.position == len(self.block):
            self.block = kernels.draw_words(self.start, WORDS_PER_FETCH, self.seed,
                                            self.counter).tolist()
            self.start += WORDS_PER_FETCH
            self.position = 0
        word = self.block[self.position]
        self.position += 1
        return kernels.slot(word, slots)
