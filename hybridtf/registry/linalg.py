"""Matrix multiplication (2-D and batched, with broadcast batch dimensions)."""
from ops import linalg as kernels

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry import Kernel, OpDef, Spec, checks, register
from hybridtf.registry.elementwise import unbroadcast

MATMUL_DTYPES = ("int32", "int64", "float32", "float64")


def _infer(specs, attrs):
    a, b = specs
    checks.same_dtype("matmul", specs, names=("a", "b"))
    checks.allowed_dtype("matmul", a.dtype, MATMUL_DTYPES, "a")
    if len(a.shape) < 2 or len(b.shape) < 2:
        checks.fail("matmul", f"inputs must be tensors of rank >= 2, got shapes "
                    f"{checks.fmt_shape(a.shape)} and {checks.fmt_shape(b.shape)}.")
    m, k = a.shape[-2:][::-1] if attrs["transpose_a"] else a.shape[-2:]
    k2, n = b.shape[-2:][::-1] if attrs["transpose_b"] else b.shape[-2:]
    if k is not None and k2 is not None and k != k2:
        checks.fail("matmul", f"Matrix size-incompatible: In[0]: {checks.fmt_shape(a.shape)}, "
                    f"In[1]: {checks.fmt_shape(b.shape)} (transpose_a={attrs['transpose_a']}, "
                    f"transpose_b={attrs['transpose_b']}); the inner dimensions {k} and {k2} "
                    "must match.")
    batch = checks.broadcast("matmul", [a.shape[:-2], b.shape[:-2]])
    return [Spec(batch + (m, n), a.dtype)]


def _as_rows(x):
    """x [..., rows, columns] as one matrix of all its rows (the last dimension known and not
    0: -1 stands for the rows)."""
    return A.reshape(x, [-1, x._shape_tuple[-1]])


def _shared_matrix_grad(g, a, tb):
    """The gradient of b in op(a) @ op(b) for a 2-D b shared by every matrix of a batched a
    (not transposed): one product over all of a's rows, rather than a product per matrix and
    a sum over the batch."""
    if tb:
        return M.matmul(_as_rows(g), _as_rows(a), transpose_a=True)
    return M.matmul(_as_rows(a), _as_rows(g), transpose_a=True)


def _grad(record, grads):
    g, = grads
    a, b = record.inputs
    ta, tb = record.attrs["transpose_a"], record.attrs["transpose_b"]
    a_shape, b_shape, g_shape = a._shape_tuple, b._shape_tuple, g._shape_tuple
    if (not ta and b_shape is not None and len(b_shape) == 2 and a_shape is not None
            and len(a_shape) > 2 and a_shape[-1] and g_shape is not None and g_shape[-1]):
        ga = M.matmul(g, b) if tb else M.matmul(g, b, transpose_b=True)
        return ga, _shared_matrix_grad(g, a, tb)
    if not ta and not tb:
        ga, gb = M.matmul(g, b, transpose_b=True), M.matmul(a, g, transpose_a=True)
    elif not ta and tb:
        ga, gb = M.matmul(g, b), M.matmul(g, a, transpose_a=True)
    elif ta and not tb:
        ga, gb = M.matmul(b, g, transpose_b=True), M.matmul(a, g)
    else:
        ga, gb = (M.matmul(b, g, transpose_a=True, transpose_b=True),
                  M.matmul(g, a, transpose_a=True, transpose_b=True))
    return unbroadcast(ga, a), unbroadcast(gb, b)


def _transposes(attrs):
    return bool(attrs["transpose_a"]), bool(attrs["transpose_b"])


# On the CPU a compiled graph calls BLAS directly, and may compute a product by blocks of rows
# inside the loop that consumes it (the Kernel's ``direct`` and ``rows`` forms).
MATMUL = register(OpDef(
    "matmul", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.matmul(arrays[0], arrays[1],
                                                        *_transposes(attrs)),
                   direct=kernels.matmul, direct_args=_transposes,
                   rows=kernels.matmul_rows_kernel)},
    _infer, _grad))
