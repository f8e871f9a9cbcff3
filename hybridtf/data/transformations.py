"""Element-wise and counting transformations: map, filter, flat_map, repeat, take, skip,
enumerate and cache."""
import itertools
import os
import pickle
import threading
import warnings

import numpy as np

from hybridtf.data import functions
from hybridtf.data.node import INFINITE, UNKNOWN, IndexSource, UnaryNode, close, new_pass
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor_spec import TensorSpec


class Map(UnaryNode):
    kind = "Map"

    def __init__(self, node, function):
        super().__init__(node, function.output_structure)
        self.function = function

    def iterate(self):
        with new_pass(self.input) as elements:
            for element in elements:
                yield tuple(self.function(element))


class _Predicated(UnaryNode):
    """The input's elements as ``predicate`` (a traced function returning one bool) judges
    them: how many is unknown."""

    def __init__(self, node, predicate):
        functions.check_predicate(predicate)
        super().__init__(node)
        self.predicate = predicate

    def cardinality(self):
        return UNKNOWN

    def _holds(self, element):
        result, = self.predicate(element)
        return functions.truth(result)


class Filter(_Predicated):
    kind = "Filter"

    def iterate(self):
        with new_pass(self.input) as elements:
            for element in elements:
                if self._holds(element):
                    yield element


class TakeWhile(_Predicated):
    kind = "TakeWhile"

    def iterate(self):
        with new_pass(self.input) as elements:
            for element in elements:
                if not self._holds(element):
                    return
                yield element


class FlatMap(UnaryNode):
    """The elements of the dataset ``func`` returns for each input element, one after another.

    ``func`` builds a dataset from the element's tensors (and the window datasets), so it runs
    for each element, as Python; ``structure`` is that of the datasets it returns.
    """

    kind = "FlatMap"

    def __init__(self, node, make_dataset, structure):
        super().__init__(node, structure)
        self.make_dataset = make_dataset   # flat element -> the node of its dataset

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        with new_pass(self.input) as elements:
            for element in elements:
                with new_pass(self.make_dataset(element)) as inner:
                    yield from inner


class Interleave(UnaryNode):
    """The datasets ``make_dataset`` returns for ``cycle_length`` input elements at a time,
    taken ``block_length`` elements from each in turn; a dataset that ends is replaced by the
    next input element's."""

    kind = "Interleave"

    def __init__(self, node, make_dataset, structure, cycle_length, block_length):
        super().__init__(node, structure)
        self.make_dataset = make_dataset
        self.cycle_length = cycle_length
        self.block_length = block_length

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        elements = self.input.iterate()
        slots = [None] * self.cycle_length    # the passes being interleaved, by cycle position
        open_count, end_of_input, position, taken = 0, False, 0, 0
        try:
            while not end_of_input or open_count:
                current = slots[position]
                if current is not None:
                    item = next(current, None)
                    if item is not None:
                        taken += 1
                        if taken == self.block_length:
                            position, taken = (position + 1) % self.cycle_length, 0
                        yield item
                        continue
                    slots[position] = None          # this element's dataset has ended
                    open_count -= 1
                    position, taken = (position + 1) % self.cycle_length, 0
                elif not end_of_input:
                    element = next(elements, None)
                    if element is None:
                        end_of_input = True
                    else:
                        slots[position] = self.make_dataset(element).iterate()
                        open_count += 1
                else:
                    position, taken = (position + 1) % self.cycle_length, 0
        finally:
            for inner in slots:
                if inner is not None:
                    close(inner)
            close(elements)


class Shard(UnaryNode):
    """Every ``num_shards``-th element, from the ``index``-th."""

    kind = "Shard"

    def __init__(self, node, num_shards, index):
        if num_shards < 1:
            raise InvalidArgumentError(None, "shard", f"shard: num_shards must be positive, "
                                       f"got {num_shards}.")
        if not 0 <= index < num_shards:
            raise InvalidArgumentError(None, "shard", f"shard: index must be in [0, "
                                       f"num_shards), got {index} for {num_shards} shards.")
        super().__init__(node)
        self.num_shards, self.index = num_shards, index

    def cardinality(self):
        n = self.input.cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        return max(0, -(-(n - self.index) // self.num_shards))

    def _elements(self):
        with new_pass(self.input) as elements:
            for i, element in enumerate(elements):
                if i % self.num_shards == self.index:
                    yield element

    def index_source(self):
        source = self.input.index_source()
        if source is None:
            return None
        shards, index = self.num_shards, self.index

        def chunks():
            seen = 0
            for chunk in source.chunks():
                first = (index - seen) % shards
                yield chunk[first::shards]
                seen += len(chunk)
        n = self.cardinality()
        return IndexSource(source.gather, chunks, None if n == INFINITE else n)


def _count(value, op_name):
    count = -1 if value is None else int(value)
    if count < -1:
        raise InvalidArgumentError(None, op_name, f"{op_name}: count must be -1 (all) or "
                                   f"non-negative, got {count}.")
    return count


class Repeat(UnaryNode):
    kind = "Repeat"

    def __init__(self, node, count):
        super().__init__(node)
        self.count = _count(count, "repeat")

    def cardinality(self):
        n = self.input.cardinality()
        if self.count == -1:
            return 0 if n == 0 else INFINITE   # unknown too: it repeats whatever it holds
        if self.count == 0:
            return 0
        return n if n in (INFINITE, UNKNOWN) else n * self.count

    def _passes(self):
        return itertools.count() if self.count == -1 else range(self.count)

    def _elements(self):
        for _ in self._passes():
            empty = True
            with new_pass(self.input) as elements:
                for element in elements:
                    empty = False
                    yield element
            if empty:
                return   # repeating nothing gives nothing (not a pass that never ends)

    def index_source(self):
        source = self.input.index_source()
        if source is None:
            return None

        def chunks():
            for _ in self._passes():
                empty = True
                for chunk in source.chunks():
                    empty = empty and not len(chunk)
                    yield chunk
                if empty:
                    return
        n = self.cardinality()
        return IndexSource(source.gather, chunks, None if n == INFINITE else n)


def _taken(chunks, count):
    left = count
    for chunk in chunks:
        if left <= 0:
            return
        yield chunk[:left]
        left -= len(chunk)


def _skipped(chunks, count):
    left = count
    for chunk in chunks:
        if left >= len(chunk):
            left -= len(chunk)
            continue
        yield chunk[left:]
        left = 0


class Take(UnaryNode):
    kind = "Take"

    def __init__(self, node, count):
        super().__init__(node)
        self.count = _count(count, "take")

    def cardinality(self):
        n = self.input.cardinality()
        if n == UNKNOWN:
            return UNKNOWN
        if self.count == -1:
            return n
        return self.count if n == INFINITE else min(n, self.count)

    def iterate(self):
        if self.count == -1:
            return self.input.iterate()
        return super().iterate()

    def _elements(self):
        if self.count == 0:
            return
        with new_pass(self.input) as elements:
            for i, element in enumerate(elements):
                yield element
                if i + 1 == self.count:
                    return

    def index_source(self):
        source = self.input.index_source()
        if source is None:
            return None
        if self.count == -1:
            return source
        n = self.cardinality()
        return IndexSource(source.gather, lambda: _taken(source.chunks(), self.count), n,
                           plain=source.plain)


class Skip(UnaryNode):
    kind = "Skip"

    def __init__(self, node, count):
        super().__init__(node)
        self.count = _count(count, "skip")

    def cardinality(self):
        n = self.input.cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        return 0 if self.count == -1 else max(0, n - self.count)

    def _elements(self):
        with new_pass(self.input) as elements:
            for i, element in enumerate(elements):
                if self.count != -1 and i >= self.count:
                    yield element

    def index_source(self):
        source = self.input.index_source()
        if source is None:
            return None
        count = self.count
        if count == -1:
            return IndexSource(source.gather, lambda: iter(()), 0)
        return IndexSource(source.gather, lambda: _skipped(source.chunks(), count),
                           self.cardinality())


class Enumerate(UnaryNode):
    kind = "Enumerate"

    def __init__(self, node, start):
        super().__init__(node, (TensorSpec([], "int64"), node.structure))
        self.start = int(start)

    def _elements(self):
        with new_pass(self.input) as elements:
            for i, element in enumerate(elements, self.start):
                yield (np.array(i, np.int64),) + tuple(element)

    def _plain_source(self):
        source = self.input.index_source()
        return source if source is not None and source.plain else None

    def index_source(self):
        source = self._plain_source()
        if source is None:
            return None
        start = self.start
        return IndexSource(lambda idx: (start + np.asarray(idx, np.int64),) + source.gather(idx),
                           source.chunks, source.length, plain=True)


class Cache(UnaryNode):
    """The first complete pass is kept (in memory, or in ``filename``) and replayed after.

    The file is a pickle of the elements: like any pickle, read only cache files you wrote.
    """

    kind = "Cache"

    def __init__(self, node, filename):
        super().__init__(node)
        self.filename = os.fspath(filename) if filename else ""
        self._kept = None
        self._lock = threading.Lock()

    def _path(self):
        return self.filename + ".cache"

    def _stored(self):
        if self._kept is None and self.filename and os.path.exists(self._path()):
            try:
                with open(self._path(), "rb") as f:
                    self._kept = pickle.load(f)
            except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                    IndexError, ImportError) as err:
                warnings.warn(f"Dataset.cache: the cache file {self._path()} is damaged "
                              f"({type(err).__name__}: {err}); the input is read again and the "
                              "file rewritten.", stacklevel=4)
                self._kept = None
        return self._kept

    def iterate(self):
        kept = self._stored()
        if kept is not None:
            return iter(kept)
        return self._recorded()

    def _recorded(self):
        record = []
        with new_pass(self.input) as elements:
            for element in elements:
                record.append(element)
                yield element
        with self._lock:   # a pass read to the end: later passes replay it
            if self._kept is None:
                self._kept = record
                if self.filename:
                    self._write(record)

    def _write(self, record):
        temporary = f"{self._path()}.tmp-{os.getpid()}"
        with open(temporary, "wb") as f:
            pickle.dump(record, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, self._path())   # readers see the old file or the whole new one

    def index_source(self):
        if self.filename:
            return None
        source = self.input.index_source()
        # Rows already in memory, visited in a fixed order: nothing to cache.
        return source if source is not None and source.plain else None
