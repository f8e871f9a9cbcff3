"""Random ops: counter-based, so (seed, counter) fixes the values (see api.random_ops)."""
import numpy as np

from ops import random as kernels
from ops import reference
from ops.cuda import random as cuda_kernels

from hybridtf.registry import Kernel, OpDef, Spec, checks, register

FLOATS = ("float32", "float64")


def _infer(name, allowed):
    def infer(specs, attrs):
        checks.allowed_dtype(name, np.dtype(attrs["dtype"]), allowed, "dtype")
        if any(d < 0 for d in attrs["shape"]):
            checks.fail(name, f"shape must have non-negative dimensions, got "
                              f"{list(attrs['shape'])}.")
        return [Spec(tuple(attrs["shape"]), np.dtype(attrs["dtype"]))]
    return infer


def _scaled(kernel):
    def eager(arrays, attrs):
        dtype = np.dtype(attrs["dtype"])
        out = kernel(tuple(attrs["shape"]), dtype, attrs["seed"], attrs["counter"])
        # in place: each new array would cost more than the draw (the first touch of its
        # memory), and a model's initial weights are the largest arrays it draws
        np.multiply(out, dtype.type(attrs["scale"]), out=out)
        np.add(out, dtype.type(attrs["shift"]), out=out)
        return out.astype(dtype, copy=False)
    return eager


def _scaled_cuda(kernel):
    # the CUDA kernels scale and shift as they draw (see ops.cuda.random)
    def run(arrays, attrs):
        return kernel(tuple(attrs["shape"]), np.dtype(attrs["dtype"]), attrs["seed"],
                      attrs["counter"], attrs["scale"], attrs["shift"])
    return run


def _uniform_int(kernel):
    def run(arrays, attrs):
        return kernel(tuple(attrs["shape"]), np.dtype(attrs["dtype"]), attrs["minval"],
                      attrs["maxval"], attrs["seed"], attrs["counter"])
    return run


def _random_op(name, cpu_kernel, cuda_kernel, allowed=FLOATS):
    return register(OpDef(name, "opaque", {"cpu": cpu_kernel, "cuda": cuda_kernel},
                          _infer(name, allowed), stateful=True, random_stream=True))


# (random ops read no inputs: their kernels may run again in the background)
RANDOM_UNIFORM = _random_op("random_uniform",
                            Kernel(_scaled(kernels.uniform),
                                   reference=_scaled(reference.random_uniform)),
                            _scaled_cuda(cuda_kernels.uniform))
RANDOM_NORMAL = _random_op("random_normal", _scaled(kernels.normal),
                           _scaled_cuda(cuda_kernels.normal))
TRUNCATED_NORMAL = _random_op("truncated_normal", _scaled(kernels.truncated_normal),
                              _scaled_cuda(cuda_kernels.truncated_normal))
RANDOM_UNIFORM_INT = _random_op("random_uniform_int",
                                Kernel(_uniform_int(kernels.uniform_int),
                                       reference=_uniform_int(reference.random_uniform_int)),
                                _uniform_int(cuda_kernels.uniform_int), ("int32", "int64"))
