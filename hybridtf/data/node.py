"""Pipeline nodes: what each dataset is made of.

A ``Node`` knows its element structure, its cardinality, and how to produce its elements: each
call of ``iterate()`` starts a new pass (an iterator of its own: a shuffle reshuffles, a
generator restarts) that yields elements as flat tuples of NumPy arrays.

Nodes whose elements are rows of in-memory arrays also offer an ``IndexSource``: the rows a pass
visits, as chunks of int64 indices, and ``gather`` to fetch many rows at once.  ``shuffle``,
``take``, ``skip`` and ``repeat`` transform the index stream without touching the data, and
``batch`` fetches a whole batch with one gather per component -- so
``from_tensor_slices(arrays).shuffle(n).batch(b)`` costs a few vectorised gathers per batch, not
Python work per element.
"""
import abc
import contextlib

from hybridtf.framework.errors import InvalidArgumentError

INFINITE = -1
UNKNOWN = -2

# Rows gathered at a time when an index source is iterated element by element.
ROWS_PER_GATHER = 256


class Node(abc.ABC):
    """One stage of an input pipeline (the user-facing ``Dataset`` wraps one)."""

    kind = "Dataset"      # the name shown in the dataset's repr, as ``_<kind>Dataset``
    inputs = ()

    def __init__(self, structure):
        self.structure = structure

    @abc.abstractmethod
    def cardinality(self):
        """The number of elements, or INFINITE / UNKNOWN."""

    def iterate(self):
        """A new pass over the elements, as flat tuples of NumPy arrays: gathered from the
        node's index source when it has one, else its ``_elements()`` pass, element by element
        (nodes that never have an index source override ``iterate`` instead)."""
        source = self.index_source()
        if source is None:
            return self._elements()
        return iterate_rows(source)

    def index_source(self):
        """The node's ``IndexSource`` when its elements are rows of in-memory arrays."""
        return None


class UnaryNode(Node):
    """A node made from one input node (``self.input``): by default its elements have the
    input's structure and number."""

    def __init__(self, node, structure=None):
        super().__init__(node.structure if structure is None else structure)
        self.input = node
        self.inputs = (node,)

    def cardinality(self):
        return self.input.cardinality()


class IndexSource:
    """Elements that are rows of arrays: ``gather(indices)`` returns one array per component
    holding those rows; ``chunks()`` yields the indices of one pass, in order, as int64 arrays.
    ``plain``: a pass visits rows 0, 1, ..., length - 1 (zip may pair such sources row by row).
    """

    def __init__(self, gather, chunks, length, plain=False):
        self.gather = gather
        self.chunks = chunks
        self.length = length
        self.plain = plain


def iterate_rows(source):
    """The elements of an index source one by one (gathered a few hundred rows at a time)."""
    for chunk in source.chunks():
        for start in range(0, len(chunk), ROWS_PER_GATHER):
            block = source.gather(chunk[start:start + ROWS_PER_GATHER])
            for i in range(len(block[0]) if block else 0):
                yield tuple(component[i, ...] for component in block)


def add_cardinalities(a, b):
    if INFINITE in (a, b):
        return INFINITE
    if UNKNOWN in (a, b):
        return UNKNOWN
    return a + b


def close(elements):
    """Ends a pass early (a generator's ``close``: its ``finally`` blocks run now)."""
    closer = getattr(elements, "close", None)
    if closer is not None:
        closer()


@contextlib.contextmanager
def new_pass(node):
    """A new pass over ``node``'s elements, ended when the block exits: a consumer that stops
    early (a ``break``, ``take``) stops the input's work too (files, prefetching threads)."""
    elements = node.iterate()
    try:
        yield elements
    finally:
        close(elements)


def positive_size(value, what, op_name):
    """``value`` as an int, or TF's error when it is not greater than zero."""
    size = int(value)
    if size < 1:
        raise InvalidArgumentError(None, op_name, f"{op_name}: {what} must be greater than "
                                   f"zero, got {size}.")
    return size
