"""The CPU's choices for large groups: loops split over the kernel threads, variables updated in
place, and matrix products computed in parts of the loop that reads them.

Groups of at least PART_MIN_ELEMENTS elements (without reductions) split their loop over the
kernel threads (``ops.threads``) by rows of the first axis, in parts of at least PART_ELEMENTS
(handing out a part costs 20-40 us).  Groups that large also write the variables they update in
place while nobody else holds their arrays: a memory-bound update then reads and writes each
array once (measured 2x faster).

Every group of at least PART_FORM_MIN_ELEMENTS is rendered as a part kernel (its loop over rows
lo..hi, its outputs passed in), also those too small to split, which the driver calls once over
all rows: so a new batch size or layer width that crosses PART_MIN_ELEMENTS renders the same
module, and reuses its compiled kernels, rather than a module that differs by a kernel's form.

A matrix product of at least PRODUCT_MIN_ELEMENTS (too big for the caches) consumed only by a
split group is computed inside the group's parts, a block of rows at a time just before the loop
reads it (a block of PRODUCT_BLOCK_ELEMENTS stays in L2), so that the product never goes out to
memory and back.  Smaller products stay whole: BLAS threads them better.
"""
import numpy as np

from ops import threads

from hybridtf.compiler import plan as plan_lib
from hybridtf.framework import devices

PART_MIN_ELEMENTS = 1 << 16
PART_FORM_MIN_ELEMENTS = 1 << 12
PART_ELEMENTS = 1 << 18
PRODUCT_MIN_ELEMENTS = 1 << 20
PRODUCT_BLOCK_ELEMENTS = 1 << 17


class Choices:
    """The choices for one plan: ``in_place`` (step index -> {id(new value): placeholder}, see
    ``plan.in_place_updates``), ``products`` (step index of a split group -> the matrix product
    node computed in its parts) and ``deferred`` (the ids of those product nodes: no step of
    their own)."""

    def __init__(self, plan, graph):
        self.in_place = plan_lib.in_place_updates(graph, plan, PART_MIN_ELEMENTS)
        self.products = products_in_parts(plan, self.in_place)
        self.deferred = {id(node) for node in self.products.values()}

    @staticmethod
    def part_form(group):
        """Whether a group's loop is rendered as a part kernel (see the module's docstring)."""
        shape = group.shape
        return (not group.reductions and len(shape) >= 1 and shape[0] >= 2
                and int(np.prod(shape)) >= PART_FORM_MIN_ELEMENTS)

    @staticmethod
    def large(shape):
        """Whether a part kernel's loop over ``shape`` splits over the kernel threads."""
        return int(np.prod(shape)) >= PART_MIN_ELEMENTS

    @staticmethod
    def splits(group):
        """Whether a group's loop splits over the kernel threads (a part kernel, large)."""
        return Choices.part_form(group) and Choices.large(group.shape)

    @staticmethod
    def rows_per_part(shape):
        """The least number of rows of a part of a split loop over ``shape``."""
        per_row = int(np.prod(shape[1:]))
        return -(-PART_ELEMENTS // max(per_row, 1))


def products_in_parts(plan, in_place):
    """group index -> the matrix product node (an op whose CPU kernel has the ``rows`` form)
    whose output only that group reads, when the group is a part kernel of the product's shape:
    the product is then computed inside its parts.  Its operands must be 2-D floats that no
    group overwrites in place, nor views of such (they are read later than planned)."""
    readers = plan.readers()
    overwritten = {id(t) for targets in in_place.values() for t in targets.values()}
    overwritten.update(id(view) for targets in in_place.values() for t in targets.values()
                       for _, view in plan_lib.possible_views(plan, t))
    products = {}
    for kind, node in plan.items:
        if kind != "step" or node.op.kernel(devices.CPU).rows is None:
            continue
        product = node.outputs[0]
        operands = list(node.inputs) + [product]
        if not all(plan_lib.known(t._static_shape) and len(t._static_shape) == 2
                   and t._static_dtype in (np.float32, np.float64) for t in operands):
            continue
        if any(id(t) in overwritten for t in node.inputs):
            continue
        read_by = set(readers.get(id(product), ()))
        if len(read_by) != 1 or None in read_by:
            continue
        index, = read_by
        kind_g, group = plan.items[index]
        if (kind_g == "group" and group.outputs and Choices.splits(group)
                and tuple(group.shape) == tuple(product._static_shape)
                and int(np.prod(group.shape)) >= PRODUCT_MIN_ELEMENTS):
            products[index] = node
    return products


def split_call(kernel, args, rows, min_rows):
    """Runs the part kernel ``kernel(*args, lo, hi)`` over ``rows`` rows, split over the kernel
    threads in parts of at least ``min_rows``."""
    threads.split(lambda lo, hi: kernel(*args, lo, hi), rows, min_rows)


def split_call_with_product(kernel, args, row_args, product_at, product_rows, operands,
                            static_args, columns, rows, min_rows):
    """``split_call`` where args[product_at] is a matrix product of ``columns`` columns, computed
    by blocks of rows within each part: ``product_rows(*operands, *static_args, start, stop,
    out)`` is the product's kernel's ``rows`` form; ``row_args``: whether each argument is
    indexed by the loop's row (and sliced)."""
    operands = [np.ascontiguousarray(x) for x in operands]
    block_rows = max(1, PRODUCT_BLOCK_ELEMENTS // max(columns, 1))

    def part(lo, hi):
        block = np.empty((min(block_rows, hi - lo), columns), operands[0].dtype)
        for start in range(lo, hi, block_rows):
            stop = min(start + block_rows, hi)
            product_rows(*operands, *static_args, start, stop, block)
            call = [x[start:stop] if by_row and x is not None else x
                    for x, by_row in zip(args, row_args)]
            call[product_at] = block[:stop - start]
            kernel(*call, 0, stop - start)

    with threads.single_threaded_blas():
        threads.split(part, rows, min_rows)
