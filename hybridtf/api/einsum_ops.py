"""``tf.einsum``: Einstein summation, lowered onto existing ops.

Each operand first takes the diagonals of its repeated labels (``ii->i``) and sums the labels
nobody else needs; then operands are contracted two at a time, the pair with the smallest result
first.  A contraction becomes a (batched, broadcast) ``matmul`` over the operands reshaped to
[batch..., M, K] and [batch..., K, N], so it runs on BLAS; a pair with nothing to contract is a
broadcasting multiply, and batched dot products (nothing but batch and contracted labels) are a
multiply and a sum, which the compiler fuses.  Gradients come from those ops.
"""
import string

from hybridtf.api import array_ops as A
from hybridtf.api import linalg_ops as LA
from hybridtf.api import math_ops as M
from hybridtf.eager.execute import as_tensor, binary_operands
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import checks

_LETTERS = frozenset(string.ascii_letters)
_ELLIPSIS = "..."
_DTYPES = ("int32", "int64", "float32", "float64")


def einsum(equation, *inputs, **kwargs):
    """Sums the product of the ``inputs`` over the indices that ``equation`` says.

    ``equation`` names each operand's dimensions with letters, comma-separated, and optionally
    the output's after ``->`` (otherwise: the letters used once, in alphabetical order).  A
    letter shared by operands and missing from the output is summed over; a letter repeated in
    one operand takes a diagonal (``'ii->i'``) or a trace (``'ii->'``); ``...`` stands for
    dimensions that broadcast between operands.  ``'ij,jk->ik'`` is a matrix product,
    ``'bij,bjk->bik'`` a batched one, ``'...i,...i->...'`` batched dot products.
    """
    unknown = set(kwargs) - {"name", "optimize"}
    if unknown:
        raise TypeError(f"einsum: unexpected keyword argument(s) {sorted(unknown)}; it takes "
                        "the equation, the operands, and optionally name and optimize.")
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a string, got {equation!r}.")
    operands = _operands(inputs)
    terms, output = _parse(equation, len(operands))
    labels = [_expand(equation, i, term, x) for i, (term, x) in enumerate(zip(terms, operands))]
    broadcast_rank = max((sum(not isinstance(label, str) for label in ls) for ls in labels),
                         default=0)
    output = _output_labels(equation, labels, output, broadcast_rank)
    sizes = _label_sizes(labels, operands)
    return _contract_all(list(operands), labels, output, sizes)


# ---- parsing ---------------------------------------------------------------------------------
def _operands(inputs):
    if not inputs:
        raise ValueError("einsum: no operands given; pass the tensors after the equation.")
    first = next((x for x in inputs if isinstance(x, Tensor) or
                  getattr(x, "_is_variable", False)), None)
    tensors = [as_tensor(x) if first is None else binary_operands("einsum", first, x)[1]
               for x in inputs]
    for i, t in enumerate(tensors):
        checks.allowed_dtype("einsum", t._np_dtype, _DTYPES, f"operand {i}")
        if t._np_dtype != tensors[0]._np_dtype:
            checks.fail("einsum", f"all operands must have one dtype: operand 0 is "
                        f"{tensors[0].dtype.name} but operand {i} is {t.dtype.name}. Cast them "
                        "with tf.cast.")
        if t._shape_tuple is None:
            checks.fail("einsum", f"operand {i} has an unknown rank.")
    return tensors


def _parse_term(equation, term):
    """A term's letters, with _ELLIPSIS where ``...`` stands."""
    items = []
    i = 0
    while i < len(term):
        if term.startswith(_ELLIPSIS, i):
            if _ELLIPSIS in items:
                raise ValueError(f"einsum: a term of {equation!r} has more than one ellipsis.")
            items.append(_ELLIPSIS)
            i += len(_ELLIPSIS)
        elif term[i] in _LETTERS:
            items.append(term[i])
            i += 1
        else:
            raise ValueError(f"einsum: subscripts have incorrect format: {equation!r} (labels are "
                             f"letters, '...' and ',' between operands; found {term[i]!r}).")
    return items


def _parse(equation, count):
    text = equation.replace(" ", "")
    if text.count("->") > 1:
        raise ValueError(f"einsum: subscripts have incorrect format: {equation!r} has more than "
                         "one '->'.")
    left, arrow, right = text.partition("->")
    terms = [_parse_term(equation, t) for t in left.split(",")]
    if len(terms) != count:
        raise ValueError(f"einsum: equation {equation!r} names {len(terms)} operand(s) but "
                         f"{count} were given.")
    return terms, (_parse_term(equation, right) if arrow else None)


def _expand(equation, index, term, x):
    """The operand's labels, one per dimension: its letters, and negative ints for the
    dimensions ``...`` stands for (-1 the last, so that they align from the right)."""
    rank = len(x._shape_tuple)
    named = [label for label in term if label != _ELLIPSIS]
    if _ELLIPSIS not in term:
        if rank != len(named):
            checks.fail("einsum", f"operand {index} has rank {rank} (shape "
                        f"{checks.fmt_shape(x._shape_tuple)}) but its subscripts "
                        f"{''.join(term)!r} in {equation!r} name {len(named)} dimensions.")
        return named
    extra = rank - len(named)
    if extra < 0:
        checks.fail("einsum", f"operand {index} has rank {rank} (shape "
                    f"{checks.fmt_shape(x._shape_tuple)}), fewer than the {len(named)} letters "
                    f"of its subscripts {''.join(term)!r} in {equation!r}.")
    at = term.index(_ELLIPSIS)
    return named[:at] + list(range(-extra, 0)) + named[at:]


def _output_labels(equation, labels, output, broadcast_rank):
    broadcast = list(range(-broadcast_rank, 0))
    if output is None:   # implicit: broadcast dims, then letters used once, alphabetically
        counts = {}
        for ls in labels:
            for label in ls:
                if isinstance(label, str):
                    counts[label] = counts.get(label, 0) + 1
        return broadcast + sorted(label for label, n in counts.items() if n == 1)
    used = {label for ls in labels for label in ls}
    letters = [label for label in output if label != _ELLIPSIS]
    for label in letters:
        if letters.count(label) > 1:
            raise ValueError(f"einsum: output subscripts contain the label {label!r} more than "
                             f"once: {equation!r}.")
        if label not in used:
            raise ValueError(f"einsum: output subscripts contain the label {label!r}, which no "
                             f"input has: {equation!r}.")
    if _ELLIPSIS not in output:
        if broadcast_rank:
            checks.fail("einsum", f"the inputs of {equation!r} have {broadcast_rank} "
                        "broadcasting dimension(s) ('...') but the output subscripts have no "
                        "ellipsis to put them.")
        return letters
    at = output.index(_ELLIPSIS)
    return letters[:at] + broadcast + letters[at:]


def _label_sizes(labels, operands):
    """The size of each label (None if unknown).  A letter must have one size everywhere;
    broadcast dimensions follow NumPy's rules."""
    sizes = {}
    for i, (ls, x) in enumerate(zip(labels, operands)):
        for label, d in zip(ls, x._shape_tuple):
            if label not in sizes:
                sizes[label] = d
                continue
            seen = sizes[label]
            if d is None or seen is None or d == seen:
                sizes[label] = seen if d is None else d
            elif not isinstance(label, str) and 1 in (d, seen):
                sizes[label] = max(d, seen)
            else:
                what = f"label {label!r}" if isinstance(label, str) else "a broadcasting dimension"
                checks.fail("einsum", f"{what} has size {seen} in one place but {d} in operand "
                            f"{i} (shape {checks.fmt_shape(x._shape_tuple)}); sizes must match "
                            "(only dimensions under '...' broadcast).")
    return sizes


# ---- lowering --------------------------------------------------------------------------------
def _contract_all(operands, labels, output, sizes):
    keep_out = set(output)
    for i in range(len(operands)):
        others = keep_out.union(*(labels[j] for j in range(len(operands)) if j != i))
        operands[i], labels[i] = _reduce_alone(operands[i], labels[i], others)
    while len(operands) > 1:
        i, j = _cheapest_pair(labels, keep_out, sizes)
        rest = [k for k in range(len(operands)) if k not in (i, j)]
        keep = keep_out.union(*(labels[k] for k in rest))
        x, ls = _contract_pair(operands[i], labels[i], operands[j], labels[j], keep, sizes)
        operands = [operands[k] for k in rest] + [x]
        labels = [labels[k] for k in rest] + [ls]
    x, ls = operands[0], labels[0]
    return _arrange(x, ls, output)


def _reduce_alone(x, ls, keep):
    """Takes the diagonal of each repeated label, then sums the labels not in ``keep``."""
    ls = list(ls)
    while True:
        repeated = next((label for label in ls if ls.count(label) > 1), None)
        if repeated is None:
            break
        first = ls.index(repeated)
        second = ls.index(repeated, first + 1)
        others = [i for i in range(len(ls)) if i not in (first, second)]
        x = LA.diag_part(A.transpose(x, others + [first, second]))
        ls = [ls[i] for i in others] + [repeated]
    summed = [i for i, label in enumerate(ls) if label not in keep]
    if summed:
        x = M.reduce_sum(x, axis=summed)
        ls = [label for label in ls if label in keep]
    return x, ls


def _roles(la, lb, keep):
    """The labels of a pair of operands by role: (batch: in both and kept, contracted: in both
    and summed, a's own, b's own)."""
    batch = [label for label in la if label in lb and label in keep]
    contracted = [label for label in la if label in lb and label not in keep]
    a_free = [label for label in la if label not in lb]
    b_free = [label for label in lb if label not in la]
    return batch, contracted, a_free, b_free


def _cheapest_pair(labels, keep_out, sizes):
    """The pair of operands whose contraction has the fewest elements (unknown sizes count as
    large)."""
    best = None
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            keep = keep_out.union(*(labels[k] for k in range(len(labels)) if k not in (i, j)))
            count = 1
            batch, _, a_free, b_free = _roles(labels[i], labels[j], keep)
            for label in batch + a_free + b_free:
                count *= sizes[label] if sizes[label] is not None else 1 << 20
            if best is None or count < best[0]:
                best = (count, i, j)
    return best[1], best[2]


def _contract_pair(a, la, b, lb, keep, sizes):
    a, la = _reduce_alone(a, la, keep.union(lb))
    b, lb = _reduce_alone(b, lb, keep.union(la))
    batch, contracted, a_free, b_free = _roles(la, lb, keep)
    if not contracted:   # an outer product over the free labels: broadcasting multiply
        out = batch + a_free + b_free
        return _spread(a, la, out) * _spread(b, lb, out), out
    if batch and not a_free and not b_free:   # batched dot products: multiply, then sum
        out = batch + contracted
        product = _spread(a, la, out) * _spread(b, lb, out)
        return M.reduce_sum(product, axis=list(range(len(batch), len(out)))), batch
    return _matrix_product(a, la, b, lb, batch, contracted, a_free, b_free, sizes)


def _matrix_product(a, la, b, lb, batch, contracted, a_free, b_free, sizes):
    """The contraction as one product [batch.., M, K] @ [batch.., K, N], the groups of free and
    contracted labels merged into M, K and N, each side used as stored when it can be."""
    transpose_a = la == batch + contracted + a_free and la != batch + a_free + contracted
    transpose_b = lb == batch + b_free + contracted and lb != batch + contracted + b_free
    a_order = batch + (contracted + a_free if transpose_a else a_free + contracted)
    b_order = batch + (b_free + contracted if transpose_b else contracted + b_free)
    a_dims = [_size_in(a, la, label) for label in batch]
    b_dims = [_size_in(b, lb, label) for label in batch]
    # Each side's own sizes: a dimension under '...' may be 1 here and broadcast later.
    free_a = [_size_in(a, la, label) for label in a_free]
    free_b = [_size_in(b, lb, label) for label in b_free]
    m = checks.num_elements(free_a)
    k = checks.num_elements([sizes[label] for label in contracted])
    n = checks.num_elements(free_b)
    a_target = a_dims + ([k, m] if transpose_a else [m, k])
    b_target = b_dims + ([n, k] if transpose_b else [k, n])
    batch_dims = [_broadcast_size(x, y) for x, y in zip(a_dims, b_dims)]
    out_target = batch_dims + free_a + free_b
    a_shape = [a._shape_tuple[la.index(label)] for label in a_order]
    b_shape = [b._shape_tuple[lb.index(label)] for label in b_order]
    if not all(_regroupable(shape, target) for shape, target in (
            (a_shape, a_target), (b_shape, b_target), (batch_dims + [m, n], out_target))):
        return _unmerged_product(a, la, b, lb, batch, contracted, a_free, b_free)
    a2 = _reshape(_arrange(a, la, a_order), a_target)
    b2 = _reshape(_arrange(b, lb, b_order), b_target)
    product = M.matmul(a2, b2, transpose_a=transpose_a, transpose_b=transpose_b)
    return _reshape(product, out_target), batch + a_free + b_free


def _unmerged_product(a, la, b, lb, batch, contracted, a_free, b_free):
    """The contraction as a product without regrouping dimensions, for sizes unknown while
    tracing: the free and contracted labels beyond one of each kind become batch dimensions
    of the product (of size 1 on the side that lacks them), and the extra contracted ones are
    summed afterwards."""
    extra = batch + a_free[:-1] + b_free[:-1] + contracted[:-1]
    a2 = _spread(a, la, extra + a_free[-1:] + contracted[-1:])
    b2 = _spread(b, lb, extra + contracted[-1:] + b_free[-1:])
    if not a_free:
        a2 = A.expand_dims(a2, -2)
    if not b_free:
        b2 = A.expand_dims(b2, -1)
    product = M.matmul(a2, b2)   # [extra.., M or 1, N or 1]
    rank = len(extra) + 2
    summed = [extra.index(label) for label in contracted[:-1]]
    summed += ([rank - 2] if not a_free else []) + ([rank - 1] if not b_free else [])
    if summed:   # the extra contracted labels, and the size-1 stand-ins for M or N
        product = M.reduce_sum(product, axis=summed)
    labels = [label for label in extra if label not in contracted] + a_free[-1:] + b_free[-1:]
    return product, labels


def _regroupable(shape, target):
    """Whether a tensor of ``shape`` can be reshaped to ``target`` while tracing: the same
    shape, or at most one size unknown."""
    return list(shape) == list(target) or sum(d is None for d in target) <= 1


def _size_in(x, ls, label):
    return x._shape_tuple[ls.index(label)]


def _broadcast_size(x, y):
    if x == 1:
        return y
    if y == 1 or y is None:
        return x
    return y


def _arrange(x, ls, order):
    """x transposed from labels ``ls`` to ``order`` (the same labels)."""
    perm = [ls.index(label) for label in order]
    return x if perm == list(range(len(perm))) else A.transpose(x, perm)


def _spread(x, ls, out):
    """x with its labels in ``out``'s order and a dimension of size 1 for each label of ``out``
    it lacks, ready to broadcast."""
    present = [label for label in out if label in ls]
    x = _arrange(x, ls, present)
    for position, label in enumerate(out):
        if label not in ls:
            x = A.expand_dims(x, position)
    return x


def _reshape(x, dims):
    """reshape to ``dims``, of which at most one is unknown (None) while tracing."""
    if list(x._shape_tuple) == list(dims):
        return x
    return A.reshape(x, [-1 if d is None else d for d in dims])
