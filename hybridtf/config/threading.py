"""``tf.config.threading``: how many threads one op's kernel may use.

Convolutions, pooling, matrix products and the large fused loops of a decorated function split
their work over this many threads at most (``ops.threads``), fewer when other processes keep
cores busy; BLAS runs on one thread inside each part.
"""
import operator

from ops import threads as _threads


def set_intra_op_parallelism_threads(num_threads):
    """Sets how many threads one op may split its work over; 0 (the default) means one per
    core this process may run on.  An op uses fewer while other processes keep cores busy.
    Takes effect from the next op."""
    try:
        count = operator.index(num_threads)
    except TypeError:
        count = -1
    if isinstance(num_threads, bool) or count < 0:
        raise ValueError("set_intra_op_parallelism_threads: num_threads must be an int >= 0 "
                         f"(0: one per core), got {num_threads!r}")
    _threads.set_num_threads(count)


def get_intra_op_parallelism_threads():
    """The value last set (0: one thread per core, the default)."""
    return _threads.get_num_threads()
