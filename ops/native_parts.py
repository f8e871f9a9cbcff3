"""Parts of a matrix product that a kernel thread runs without the GIL (``ops.threads``).

A part is a row of int64 words, ``PART_WORDS`` of them: the address of a compiled C function
with ``ops.tile_gemm``'s entry signature and its arguments, C = op(A) @ op(B) for a block of
rows or columns (alpha 1, beta 0; the operands given by address).  A thread waiting in nogil
code runs such a part as soon as it sees it, with no trip through the interpreter: handing a
Python callable to a thread costs it the GIL (about 19 us per split, measured), a third of a
4M multiply-add product on one core.

Who runs a part is settled by ``claim`` (an atomic compare-and-swap): the thread it was posted
to, or the caller if that thread has not started it by the time the caller's own part is done.
A thread that is slow to wake (its core taken, or asleep) then costs the caller no wait.
"""
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ops.kernel_cache import njit

PART_WORDS = 12
ENTRY, TRANSPOSE_A, TRANSPOSE_B, M, N, K, A, LDA, B, LDB, C, LDC = range(PART_WORDS)
PYTHON = 0   # an ENTRY of 0: the thread's job is a Python callable (``ops.threads``)

_ENTRY_ARGUMENTS = (types.boolean, types.boolean, types.intp, types.intp, types.intp,
                    types.float64, types.voidptr, types.intp, types.voidptr, types.intp,
                    types.float64, types.voidptr, types.intp)
_ADDRESS_ARGUMENTS = (6, 8, 11)   # a, b, c: addresses, passed as pointers


@intrinsic
def claim(typingctx, cells, i, job):
    """Whether this thread claimed job number ``job`` in cells[i] (an int64 array): raises
    cells[i] to ``job`` atomically unless it is there already (claimed by another thread)."""
    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        cell = builder.gep(array.data, [args[1]])
        taken = _false_slot(builder)
        retry = builder.append_basic_block("claim.retry")
        done = builder.append_basic_block("claim.done")
        builder.branch(retry)
        builder.position_at_end(retry)
        current = builder.load_atomic(cell, "seq_cst", 8)
        with builder.if_then(builder.icmp_signed(">=", current, args[2])):
            builder.branch(done)   # claimed already
        swapped = builder.extract_value(
            builder.cmpxchg(cell, current, args[2], "seq_cst", "seq_cst"), 1)
        with builder.if_then(swapped):
            builder.store(ir.Constant(ir.IntType(1), 1), taken)
            builder.branch(done)
        builder.branch(retry)     # another thread changed the cell meanwhile: look again
        builder.position_at_end(done)
        return builder.load(taken)
    return types.boolean(cells, types.intp, types.int64), codegen


@intrinsic
def load(typingctx, cells, i):
    """cells[i] of an int64 array, read from memory every time (an atomic load with acquire
    order: what its writer stored before it is seen too) -- for a loop that waits on it."""
    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.load_atomic(builder.gep(array.data, [args[1]]), "acquire", 8)
    return types.int64(cells, types.intp), codegen


def _false_slot(builder):
    """A stack slot for a flag, false, in the function's entry block."""
    with builder.goto_entry_block():
        slot = builder.alloca(ir.IntType(1))
    builder.store(ir.Constant(ir.IntType(1), 0), slot)
    return slot


@intrinsic
def _call_entry(typingctx, part):
    """Calls the C function at part[ENTRY] with the part's arguments (alpha 1, beta 0)."""
    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        words = [builder.load(builder.gep(array.data, [ir.Constant(ir.IntType(64), i)]))
                 for i in range(PART_WORDS)]
        argument_types = [context.get_value_type(t) for t in _ENTRY_ARGUMENTS]
        function = builder.inttoptr(words[ENTRY], ir.FunctionType(
            ir.VoidType(), argument_types).as_pointer())
        values = [builder.icmp_signed("!=", words[TRANSPOSE_A], ir.Constant(words[0].type, 0)),
                  builder.icmp_signed("!=", words[TRANSPOSE_B], ir.Constant(words[0].type, 0)),
                  words[M], words[N], words[K], ir.Constant(ir.DoubleType(), 1.0),
                  words[A], words[LDA], words[B], words[LDB], ir.Constant(ir.DoubleType(), 0.0),
                  words[C], words[LDC]]
        for at in _ADDRESS_ARGUMENTS:
            values[at] = builder.inttoptr(values[at], argument_types[at])
        builder.call(function, values)
        return context.get_dummy_value()
    return types.void(part), codegen


@njit(nogil=True)
def run(part):
    """Runs the product part ``part`` (a row of PART_WORDS int64 words) on this thread."""
    _call_entry(part)


@njit(nogil=True)
def describe(part, entry, transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c, ldc):
    """Writes C[m, n] = op(A) @ op(B) into ``part``: ``entry`` (the address of a C function with
    ``ops.tile_gemm``'s entry signature) called on the flat arrays a, b, c from their first
    elements (pass ``flat[offset:]`` for a block), rows lda, ldb, ldc apart.  The caller keeps
    the arrays alive until the part has run."""
    part[ENTRY] = entry
    part[TRANSPOSE_A] = transpose_a
    part[TRANSPOSE_B] = transpose_b
    part[M] = m
    part[N] = n
    part[K] = k
    part[A] = a.ctypes.data
    part[LDA] = lda
    part[B] = b.ctypes.data
    part[LDB] = ldb
    part[C] = c.ctypes.data
    part[LDC] = ldc
