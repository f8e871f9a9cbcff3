"""Random ops: counter-based, so (seed, counter) fixes the values (see api.random_ops)."""
import numpy as np

from ops import random as kernels

from hybridtf.registry import OpDef, Spec, checks, register

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
        base = kernel(tuple(attrs["shape"]), dtype, attrs["seed"], attrs["counter"])
        return (base * dtype.type(attrs["scale"]) + dtype.type(attrs["shift"])).astype(dtype)
    return eager


def _random_op(name, cpu_kernel, allowed=FLOATS):
    return register(OpDef(name, "opaque", {"cpu": cpu_kernel}, _infer(name, allowed),
                          stateful=True, random_stream=True))


RANDOM_UNIFORM = _random_op("random_uniform", _scaled(kernels.uniform))
RANDOM_NORMAL = _random_op("random_normal", _scaled(kernels.normal))
TRUNCATED_NORMAL = _random_op("truncated_normal", _scaled(kernels.truncated_normal))
RANDOM_UNIFORM_INT = _random_op(
    "random_uniform_int",
    lambda arrays, attrs: kernels.uniform_int(tuple(attrs["shape"]), np.dtype(attrs["dtype"]),
                                              attrs["minval"], attrs["maxval"], attrs["seed"],
                                              attrs["counter"]),
    ("int32", "int64"))
