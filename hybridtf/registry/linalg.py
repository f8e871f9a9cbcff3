"""Matrix multiplication (2-D and batched, with broadcast batch dimensions)."""
from ops import linalg as kernels
from ops import reference
from ops.cuda import linalg as cuda_kernels

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


def _grad_a(g, b, ta, tb):
    """The gradient of a in op(a) @ op(b), before summing over broadcast batch dimensions."""
    if not ta:
        return M.matmul(g, b, transpose_b=not tb)
    return M.matmul(b, g, transpose_a=tb, transpose_b=True)


def _grad_b(g, a, ta, tb):
    """The gradient of b in op(a) @ op(b), before summing over broadcast batch dimensions."""
    if not tb:
        return M.matmul(a, g, transpose_a=not ta)
    return M.matmul(g, a, transpose_a=True, transpose_b=ta)


def _grad(record, grads):
    # Only the products the gradient needs: no matmul for a constant operand.
    g, = grads
    a, b = record.inputs
    ta, tb = record.attrs["transpose_a"], record.attrs["transpose_b"]
    a_shape, b_shape, g_shape = a._shape_tuple, b._shape_tuple, g._shape_tuple
    shared = (not ta and b_shape is not None and len(b_shape) == 2 and a_shape is not None
              and len(a_shape) > 2 and a_shape[-1] and g_shape is not None and g_shape[-1])
    ga = gb = None
    if record.needs(0):
        ga = _grad_a(g, b, ta, tb)
        ga = ga if shared else unbroadcast(ga, a)   # shared: ga has a's shape already
    if record.needs(1):
        gb = _shared_matrix_grad(g, a, tb) if shared else unbroadcast(_grad_b(g, a, ta, tb), b)
    return ga, gb


def _transposes(attrs):
    return bool(attrs["transpose_a"]), bool(attrs["transpose_b"])


# On the CPU a compiled graph calls BLAS directly, and may compute a product by blocks of rows
# inside the loop that consumes it (the Kernel's ``direct`` and ``rows`` forms).  On the GPU:
# cuBLAS when CuPy is installed, else a tiled kernel.
MATMUL = register(OpDef(
    "matmul", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.matmul(arrays[0], arrays[1],
                                                        *_transposes(attrs)),
                   direct=kernels.matmul, direct_args=_transposes,
                   rows=kernels.matmul_rows_kernel,
                   reference=lambda arrays, attrs: reference.matmul(
                       *arrays, *_transposes(attrs))),
     "cuda": lambda arrays, attrs: cuda_kernels.matmul(arrays[0], arrays[1],
                                                       *_transposes(attrs))},
    _infer, _grad))
