"""How the nn entry points run their kernels: the operand guard they run first, and the split of
a kernel's index range into parts on the kernel threads (``ops.threads``).

The big kernels are compiled ``nogil=True`` so that their parts run at once.
"""
from ops import threads

# A thread's part of a kernel does at least this much work, in multiply-adds of a direct
# convolution (pooling counts a window's cell as a fixed number of them): handing a part to
# another thread costs 20-40 us on a virtual machine (GIL hand-offs), so smaller parts are not
# worth it.
_PART_WORK = 1 << 22


def split_summed(part, n, work_per_item):
    """part(lo, hi) over parts of range(n) (items of ``work_per_item`` work each) run on the
    kernel threads; the parts' results summed (each part returns an array of its own, or None)."""
    results = threads.split(part, n, -(-_PART_WORK // max(1, work_per_item)))
    total = results[0]
    if total is not None:
        for r in results[1:]:
            total += r
    return total


def check_operands(ok, op, a, b):
    """Raises ValueError naming ``op`` and the two operands' shapes and dtypes unless ``ok``."""
    # The framework validates and reports properly; this only keeps BLAS and the loops from
    # reading out of bounds when a caller gets it wrong.
    if not ok:
        raise ValueError("%s: incompatible operands %s%s and %s%s" % (
            op, a.shape, a.dtype, b.shape, b.dtype))
