"""``tf.data.Iterator``: one pass over a dataset, consumed with ``next``.

Eagerly ``next(it)`` returns the next element (StopIteration at the end; ``get_next`` raises
``tf.errors.OutOfRangeError``).  Inside a decorated function ``next(it)`` on an iterator made
outside becomes a node that takes the next element each time the function runs, and
``for x in it`` a loop over the rest of the pass.
"""
import threading

from hybridtf.data import in_function
from hybridtf.data.node import close
from hybridtf.framework.errors import OutOfRangeError
from hybridtf.graph import func_graph


class OwnedIterator:
    """An iterator over a new pass of ``dataset``; the pass starts when it is created."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._elements = dataset._node.iterate()
        self._lock = threading.Lock()   # a decorated function may run on several threads

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def _next_flat(self):
        """The next element as flat arrays, or None at the end."""
        with self._lock:
            if self._elements is None:
                return None
            element = next(self._elements, None)
            if element is None:
                self._elements = None
            return element

    def _remaining(self):
        """The rest of the pass (what ``for x in iterator`` visits)."""
        while True:
            element = self._next_flat()
            if element is None:
                return
            yield element

    def __iter__(self):
        return self

    def __next__(self):
        if func_graph.current() is not None:
            return in_function.next_element(self._next_flat, self._dataset._loop_structure())
        element = self._next_flat()
        if element is None:
            raise StopIteration
        return self._dataset._element(element)

    def get_next(self):
        """The next element; ``tf.errors.OutOfRangeError`` at the end of the pass."""
        try:
            return self.__next__()
        except StopIteration:
            raise OutOfRangeError(None, "iterator_get_next", "End of sequence") from None

    def _graph_for_loop(self, body, state, extra_test):
        """``for x in iterator`` in a function being traced (called by AutoGraph)."""
        return in_function.loop(self._remaining, self._dataset._loop_structure(), body, state,
                                extra_test, "for loop over an iterator")

    def __del__(self):
        elements = getattr(self, "_elements", None)
        if elements is not None:
            close(elements)   # stops a prefetching thread still running the pass

    def __repr__(self):
        return f"<OwnedIterator element_spec={self.element_spec!r}>"


Iterator = OwnedIterator
