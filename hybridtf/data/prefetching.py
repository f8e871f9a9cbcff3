"""``Dataset.prefetch``: elements produced on a background thread, ahead of the consumer.

The pass starts when the iterator is created, so a training step and the production of the
next batches overlap.  An error raised while producing an element is raised to the consumer
at that element's place; ending the pass early (a ``break``, a dropped iterator) stops the
thread and ends the pass it was running.

Each handover between threads costs a wake-up (tens of microseconds on a busy machine), so a
consumer that finds the buffer empty waits until it is full again (or the pass has ended) and
then takes the buffered elements without waiting: when production is the bottleneck it pays
one wake-up per ``buffer_size`` elements instead of one per element.
"""
import collections
import threading

import numpy as np

from hybridtf.data.node import UnaryNode, close
from hybridtf.framework.errors import InvalidArgumentError

AUTOTUNE = -1
# With AUTOTUNE: up to AUTOTUNE_BUFFER elements, as long as they hold at most AUTOTUNE_BYTES.
AUTOTUNE_BUFFER = 8
AUTOTUNE_BYTES = 64 << 20
_POLL_S = 0.1      # how often a blocked producer looks whether the consumer has gone

_ELEMENT, _END, _ERROR = range(3)


class Prefetch(UnaryNode):
    kind = "Prefetch"

    def __init__(self, node, buffer_size):
        buffer_size = int(buffer_size)
        if buffer_size < 0 and buffer_size != AUTOTUNE:
            raise InvalidArgumentError(None, "prefetch", f"prefetch: buffer_size must be "
                                       f"non-negative or tf.data.AUTOTUNE, got {buffer_size}.")
        super().__init__(node)
        self.buffer_size = buffer_size

    def iterate(self):
        if self.buffer_size == 0:
            return self.input.iterate()
        return Background(self.input.iterate(), self.buffer_size)


class _Channel:
    """The buffer between the producer thread and the consumer."""

    def __init__(self, capacity):
        self.autotune = capacity == AUTOTUNE
        self.capacity = AUTOTUNE_BUFFER if self.autotune else capacity
        self.items = collections.deque()
        self.ready = threading.Condition()
        self.stop = threading.Event()

    def put(self, item):
        """Adds an item; False when the consumer has gone."""
        with self.ready:
            while len(self.items) >= self.capacity:
                if self.stop.is_set():
                    return False
                self.ready.wait(_POLL_S)
            if self.stop.is_set():
                return False
            if self.autotune and item[0] == _ELEMENT and not self.items:
                size = sum(np.asarray(c).nbytes for c in item[1])
                self.capacity = max(1, min(self.capacity, AUTOTUNE_BYTES // max(size, 1)))
            self.items.append(item)
            if len(self.items) >= self.capacity or item[0] != _ELEMENT:
                self.ready.notify_all()
            return True

    def take(self):
        with self.ready:
            while not self.items:
                self.ready.wait()
            if len(self.items) >= self.capacity:
                self.ready.notify_all()   # the producer may be waiting for room
            return self.items.popleft()


class Background:
    """An iterator over ``elements``, which a daemon thread runs up to ``ahead`` items ahead
    (``ahead`` may be AUTOTUNE)."""

    def __init__(self, elements, ahead):
        self._channel = _Channel(ahead)
        self._done = False
        thread = threading.Thread(target=_produce, args=(elements, self._channel),
                                  name="hybridtf-data-prefetch", daemon=True)
        thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        kind, value = self._channel.take()
        if kind == _ELEMENT:
            return value
        self._done = True
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self):
        """Stops the producer (it ends its pass) and drops what it had buffered."""
        self._done = True
        channel = self._channel
        channel.stop.set()
        with channel.ready:
            channel.items.clear()
            channel.ready.notify_all()

    def __del__(self):
        self._channel.stop.set()


def _produce(elements, channel):
    try:
        for element in elements:
            if not channel.put((_ELEMENT, element)):
                return
        channel.put((_END, None))
    except BaseException as err:  # noqa: BLE001 - handed to the consumer, raised there
        channel.put((_ERROR, err))
    finally:
        close(elements)
