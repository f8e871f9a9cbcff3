"""Reductions and scans: sum, mean, max, min, prod, any, all, argmax/argmin, cumsum/cumprod."""
import numpy as np

from ops import reduce as kernels
from ops import reference
from ops.cuda import reduce as cuda_kernels

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry import Kernel, OpDef, Spec, checks, register

NUMERIC = ("int8", "int16", "int32", "int64", "uint8", "float32", "float64")


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_infer(name, allowed):
    def infer(specs, attrs):
        x, = specs
        checks.allowed_dtype(name, x.dtype, allowed, "input_tensor")
        axes = checks.axes(name, attrs["axis"], len(x.shape))
        return [Spec(_reduced_shape(x.shape, axes, attrs["keepdims"]), x.dtype)]
    return infer


def _reduce_eager(name, kernel):
    def eager(arrays, attrs):
        x, = arrays
        return kernel(x, checks.axes(name, attrs["axis"], x.ndim), attrs["keepdims"])
    return eager


def _reduce_reference(name):
    def run(arrays, attrs):
        x, = arrays
        return reference.reduce(name, x, checks.axes(name, attrs["axis"], x.ndim),
                                attrs["keepdims"])
    return run


def _kept_shape(x, attrs):
    """The output shape with reduced axes kept as 1s, to broadcast a gradient back to x."""
    axes = checks.axes("reduce", attrs["axis"], x.ndim)
    return axes, [1 if i in axes else d for i, d in enumerate(x.shape)]


def _unreduce(value, x, attrs):
    """A reduction's output (or its gradient) broadcast back to the shape of its input x."""
    shape = x._shape_tuple
    if None in shape:
        axes, _ = _kept_shape(x, attrs)
        return A.unreduce(value, x, axes, attrs["keepdims"])
    if value._shape_tuple != ():   # a scalar broadcasts to any shape as it is
        value = A.reshape(value, _kept_shape(x, attrs)[1])
    return A.broadcast_to(value, shape)


def _sum_grad(record, grads):
    return (_unreduce(grads[0], record.inputs[0], record.attrs),)


def _mean_grad(record, grads):
    x, y = record.inputs[0], record.outputs[0]
    axes, _ = _kept_shape(x, record.attrs)
    if None in x._shape_tuple:
        count = M.cast(A.size(x), x.dtype) / M.maximum(M.cast(A.size(y), x.dtype), 1.0)
    else:
        count = max(int(np.prod([x.shape[i] for i in axes])) if axes else 1, 1)
    return (_unreduce(grads[0], x, record.attrs) / count,)


def _extremum_grad(record, grads):
    # Ties share the gradient equally, as TF.
    x, y = record.inputs[0], record.outputs[0]
    axes, _ = _kept_shape(x, record.attrs)
    hits = M.cast(M.equal(x, _unreduce(y, x, record.attrs)), x.dtype)
    count = M.reduce_sum(hits, axis=list(axes), keepdims=True)
    return (hits / count * _unreduce(grads[0], x, record.attrs),)


def _prod_grad(record, grads):
    # Product of all other elements = exclusive cumprod from the left times from the right,
    # which stays exact when x contains zeros.
    x = record.inputs[0]
    axes, kept = _kept_shape(x, record.attrs)
    rank = x.ndim
    others = [i for i in range(rank) if i not in axes]
    perm = others + list(axes)
    moved = A.transpose(x, perm)
    # Explicit sizes, not -1: either side may be empty.
    outer = int(np.prod([x.shape[i] for i in others]))
    inner = int(np.prod([x.shape[i] for i in axes]))
    flat = A.reshape(moved, [outer, inner])
    left = M.cumprod(flat, axis=1, exclusive=True)
    right = M.cumprod(flat, axis=1, exclusive=True, reverse=True)
    g_moved = A.transpose(A.broadcast_to(A.reshape(grads[0], kept), x.shape), perm)
    result = A.reshape(left * right, moved.shape) * g_moved
    inverse = list(np.argsort(perm))
    return (A.transpose(result, inverse),)


def _define(name, grad, allowed=NUMERIC, fusable=False):
    """Registers ``reduce_<name>`` with the ``reduce_<name>`` kernels of ``ops.reduce`` and
    ``ops.cuda.reduce``; a ``fusable`` one is a "reduction" whose accumulator a fused loop knows,
    the others are opaque; each names its reduction (``OpDef.reduction``)."""
    kernel = "reduce_" + name
    return register(OpDef(kernel, "reduction" if fusable else "opaque",
                          {"cpu": Kernel(_reduce_eager(name, getattr(kernels, kernel)),
                                         reference=_reduce_reference(name)),
                           "cuda": _reduce_eager(name, getattr(cuda_kernels, kernel))},
                          _reduce_infer(kernel, allowed), grad,
                          reduction=name))


SUM = _define("sum", _sum_grad, fusable=True)
MEAN = _define("mean", _mean_grad, fusable=True)
MAX = _define("max", _extremum_grad, fusable=True)
MIN = _define("min", _extremum_grad, fusable=True)
PROD = _define("prod", _prod_grad)
ANY = _define("any", None, ("bool",))
ALL = _define("all", None, ("bool",))


def _arg_infer(name):
    def infer(specs, attrs):
        x, = specs
        checks.allowed_dtype(name, x.dtype, NUMERIC, "input")
        if len(x.shape) == 0:
            checks.fail(name, "input must have rank >= 1, got a scalar.")
        axis = checks.axis(name, attrs["axis"], len(x.shape))
        if x.shape[axis] == 0:
            checks.fail(name, f"Reduction axis {axis} is empty in shape "
                              f"{checks.fmt_shape(x.shape)}.")
        if np.dtype(attrs["output_type"]) not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise TypeError(f"{name}: output_type must be int32 or int64.")
        return [Spec(tuple(d for i, d in enumerate(x.shape) if i != axis), attrs["output_type"])]
    return infer


def _arg_eager(kernel):
    def eager(arrays, attrs):
        x, = arrays
        return kernel(x, checks.axis("arg", attrs["axis"], x.ndim), attrs["output_type"])
    return eager


ARGMAX = register(OpDef("argmax", "opaque",
                        {"cpu": _arg_eager(kernels.argmax),
                         "cuda": _arg_eager(cuda_kernels.argmax)},
                        _arg_infer("argmax")))
ARGMIN = register(OpDef("argmin", "opaque",
                        {"cpu": _arg_eager(kernels.argmin),
                         "cuda": _arg_eager(cuda_kernels.argmin)},
                        _arg_infer("argmin")))


def _scan_infer(name, allowed=NUMERIC):
    def infer(specs, attrs):
        x, = specs
        checks.allowed_dtype(name, x.dtype, allowed)
        if len(x.shape) == 0:
            checks.fail(name, "x must have rank >= 1, got a scalar.")
        checks.axis(name, attrs["axis"], len(x.shape))
        return [Spec(x.shape, x.dtype)]
    return infer


def _scan_eager(name, kernel):
    def eager(arrays, attrs):
        x, = arrays
        return kernel(x, checks.axis(name, attrs["axis"], x.ndim), attrs["exclusive"],
                      attrs["reverse"])
    return eager


def _cumsum_grad(record, grads):
    a = record.attrs
    return (M.cumsum(grads[0], axis=a["axis"], exclusive=a["exclusive"],
                     reverse=not a["reverse"]),)


def _cumprod_grad(record, grads):
    # TF's rule: valid where x has no zeros.
    a = record.attrs
    x, y = record.inputs[0], record.outputs[0]
    summed = M.cumsum(y * grads[0], axis=a["axis"], exclusive=a["exclusive"],
                      reverse=not a["reverse"])
    return (summed / x,)


CUMSUM = register(OpDef("cumsum", "opaque",
                        {"cpu": _scan_eager("cumsum", kernels.cumsum),
                         "cuda": _scan_eager("cumsum", cuda_kernels.cumsum)},
                        _scan_infer("cumsum"), _cumsum_grad))
CUMPROD = register(OpDef("cumprod", "opaque", {"cpu": _scan_eager("cumprod", kernels.cumprod)},
                         _scan_infer("cumprod"), _cumprod_grad))


def _log_of_part(g, sign):
    """log(sign * g) where sign * g > 0, else -inf (that part of g is empty there)."""
    part = g if sign > 0 else -g
    positive = part > 0
    return M.where(positive, M.log(M.where(positive, part, A.ones_like(part))), -np.inf)


def _cumulative_logsumexp_grad(record, grads):
    # d y_j / d x_i = exp(x_i - y_j) for every j whose sum holds x_i, so the gradient is
    # exp(x) times the opposite-direction scan of g * exp(-y): taken in log space for the
    # positive and negative parts of g, so that nothing overflows.
    a = record.attrs
    x, y = record.inputs[0], record.outputs[0]
    g = grads[0]
    empty = M.equal(y, -np.inf)   # an empty (exclusive) sum: no x_i flows into it

    def part(sign):
        terms = M.where(empty, -np.inf, _log_of_part(g, sign) - y)
        scanned = M.cumulative_logsumexp(terms, axis=a["axis"], exclusive=a["exclusive"],
                                         reverse=not a["reverse"])
        return M.exp(x + scanned)
    return (part(1) - part(-1),)


CUMULATIVE_LOGSUMEXP = register(OpDef(
    "cumulative_logsumexp", "opaque",
    {"cpu": _scan_eager("cumulative_logsumexp", kernels.cumulative_logsumexp)},
    _scan_infer("cumulative_logsumexp", ("float32", "float64")), _cumulative_logsumexp_grad))
