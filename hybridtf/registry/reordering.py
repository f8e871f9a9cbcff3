"""Ops that move elements along axes without changing the shape: ``reverse`` and ``roll``."""
import numpy as np

from ops.cuda import array as cuda_kernels

from hybridtf.registry.public_ops import manip_ops as MA
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry import OpDef, Spec, checks, register


def normalized_axes(op_name, axes, rank, unique):
    """``axes`` (a list of ints) normalised to [0, rank); with ``unique``, a repeated axis is an
    error (as TF's reverse), else repeats are kept (roll adds their shifts)."""
    normalized = [checks.axis(op_name, a, rank) for a in axes]
    if unique:
        for i, a in enumerate(normalized):
            if a in normalized[:i]:
                checks.fail(op_name, f"axis {a} specified more than once (axis={list(axes)}).")
    return normalized


# ---- reverse ------------------------------------------------------------------------------------
def _reverse_infer(specs, attrs):
    x, = specs
    if x.shape is None:
        checks.fail("reverse", "the input's rank must be known; give the tensor a known rank.")
    normalized_axes("reverse", attrs["axis"], len(x.shape), unique=True)
    return [Spec(x.shape, x.dtype)]


def _reverse_eager(arrays, attrs):
    x, = arrays
    axes = normalized_axes("reverse", attrs["axis"], x.ndim, unique=True)
    return checks.contiguous(np.flip(x, axis=tuple(axes))) if axes else x


def _reverse_cuda(arrays, attrs):
    x, = arrays
    return cuda_kernels.reverse(x, normalized_axes("reverse", attrs["axis"], x.ndim, unique=True))


REVERSE = register(OpDef(
    "reverse", "opaque", {"cpu": _reverse_eager, "cuda": _reverse_cuda}, _reverse_infer,
    lambda record, grads: (MA.reverse(grads[0], record.attrs["axis"]),)))


# ---- roll ---------------------------------------------------------------------------------------
def _roll_infer(specs, attrs):
    x, shift = specs
    if shift.dtype.kind not in "iu":
        raise TypeError(f"roll: shift must be int32 or int64, got "
                        f"{checks.dtype_name(shift.dtype)}.")
    if x.shape is None:
        checks.fail("roll", "the input's rank must be known; give the tensor a known rank.")
    if len(x.shape) == 0:
        checks.fail("roll", "input must be 1-D or higher, got a scalar.")
    axes = attrs["axis"]
    normalized_axes("roll", axes, len(x.shape), unique=False)
    if shift.shape is not None:
        if len(shift.shape) > 1:
            checks.fail("roll", f"shift must be a scalar or a 1-D vector, got shape "
                        f"{checks.fmt_shape(shift.shape)}.")
        count = 1 if not shift.shape else shift.shape[0]
        if count is not None and (count != len(axes) or (not shift.shape) != attrs["scalar"]):
            checks.fail("roll", f"shift and axis must have the same size: shift has shape "
                        f"{checks.fmt_shape(shift.shape)} and axis is "
                        f"{axes[0] if attrs['scalar'] else axes}.")
    return [Spec(x.shape, x.dtype)]


def _roll_eager(arrays, attrs):
    x, shift = arrays
    axes = normalized_axes("roll", attrs["axis"], x.ndim, unique=False)
    shifts = [int(s) for s in np.reshape(shift, -1)]
    if len(shifts) != len(axes):   # a shift whose size was unknown while tracing
        checks.fail("roll", f"shift and axis must have the same size, got {len(shifts)} shifts "
                    f"for axis {attrs['axis']}.")
    if x.size == 0:
        return x.copy()
    return np.roll(x, shifts, axis=axes)   # shifts of a repeated axis add up, as in TF


def _roll_grad(record, grads):
    axis = record.attrs["axis"]
    return (MA.roll(grads[0], M.negative(record.inputs[1]),
                    axis[0] if record.attrs["scalar"] else axis), None)


ROLL = register(OpDef("roll", "opaque", {"cpu": _roll_eager}, _roll_infer, _roll_grad))
