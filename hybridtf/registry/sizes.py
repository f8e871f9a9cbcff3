"""Integer arguments of ops -- a count, a length, a shape -- that may be known only when a traced
graph runs (``num_segments=tf.reduce_max(ids) + 1`` inside a ``tf.function``).

An op takes such an argument as an attribute when its value is known (a Python int, a NumPy
value, an eager tensor or a variable), which keeps the output shape static while tracing, and
otherwise as one more input at the end of its inputs, with the attribute None.

A wrong value can ask such an op for a result larger than memory: it gets TF's
ResourceExhaustedError naming the op, never a bare MemoryError.
"""
import functools
import math
import os

import numpy as np

from hybridtf.framework.errors import ResourceExhaustedError
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import OpDef, checks, register


def split(value, op_name, what, rank=0):
    """``(static, tensor)``: the value as a Python int (``rank`` 0) or list of ints (rank 1)
    with tensor None, or (None, the symbolic tensor) when it is known only at run time."""
    if isinstance(value, Tensor) and type(value) is not Tensor:
        dtype = value._np_dtype
        if dtype.kind not in "iu":
            raise TypeError(f"{op_name}: {what} must be an integer tensor, got "
                            f"{checks.dtype_name(dtype)}.")
        shape = value._shape_tuple
        if shape is None or len(shape) != rank or (rank and shape[0] is None):
            kind = "a scalar" if rank == 0 else "a vector of known length"
            checks.fail(op_name, f"{what} must be {kind}, got a tensor of shape "
                        f"{checks.fmt_shape(shape or ())}.")
        return None, value
    if getattr(value, "_is_variable", False) or isinstance(value, Tensor):
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "iu" and not (array.dtype.kind == "f" and array.size == 0):
        kind = "an integer" if rank == 0 else "a list of integers"
        raise TypeError(f"{op_name}: {what} must be {kind}, got {value!r}.")
    if array.ndim != rank:
        kind = "a scalar" if rank == 0 else "a vector"
        checks.fail(op_name, f"{what} must be {kind}, got shape {list(array.shape)}.")
    return (int(array) if rank == 0 else [int(d) for d in array]), None


def inputs(tensor):
    """The inputs an op appends for a run-time argument: [tensor] or []."""
    return [] if tensor is None else [tensor]


def value(arrays, attrs, name, position=-1):
    """The argument ``name`` when the op runs: its attribute, or the input at ``position``."""
    static = attrs[name]
    if static is not None:
        return static
    array = np.asarray(arrays[position])
    return int(array) if array.ndim == 0 else [int(d) for d in array]


def check_scalar(op_name, spec, what):
    """The shape rule's check of a run-time scalar argument's input spec."""
    if len(spec.shape) != 0:
        checks.fail(op_name, f"{what} must be a scalar, got shape {checks.fmt_shape(spec.shape)}.")


def reporting_memory(op_name, kernel):
    """``kernel`` (a kernel's ``run``) raising TF's ResourceExhaustedError, naming the op, for a
    result too large to allocate: ops whose output size comes from values (segment ids, counts,
    shapes) can be asked for one by a wrong value."""
    @functools.wraps(kernel)
    def run(arrays, attrs):
        try:
            return kernel(arrays, attrs)
        except MemoryError as err:
            raise ResourceExhaustedError(
                None, op_name, f"{op_name}: out of memory for the result ({err}); check the "
                "values that set its size.") from None
    return run


def _memory_size():
    """This machine's memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


MEMORY_SIZE = _memory_size()


def _in_units(nbytes):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if nbytes < 1024:
            return f"{nbytes:.4g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.4g} TiB"


def check_allocation(op_name, shape, dtype, set_by):
    """ResourceExhaustedError naming the op, the shape, the dtype and the arguments ``set_by``
    that set the shape, for a result larger than this machine's memory: refused before anything
    is allocated (an allocation NumPy is granted may still be more than can be written)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if MEMORY_SIZE is not None and nbytes > MEMORY_SIZE:
        raise ResourceExhaustedError(
            None, op_name, f"{op_name}: OOM when allocating a tensor of shape {list(shape)} and "
            f"type {checks.dtype_name(dtype)}: {_in_units(nbytes)}, more than this machine's "
            f"{_in_units(MEMORY_SIZE)} of memory; check {set_by}.")


def register_opaque(name, cpu_kernel, infer, grad=None, cuda_kernel=None, **kw):
    """Registers an opaque op whose result size comes from its input values, its CPU kernel
    (and its CUDA kernel, where given) run ``reporting_memory``."""
    by_backend = {"cpu": reporting_memory(name, cpu_kernel)}
    if cuda_kernel is not None:
        by_backend["cuda"] = reporting_memory(name, cuda_kernel)
    return register(OpDef(name, "opaque", by_backend, infer, grad, **kw))
