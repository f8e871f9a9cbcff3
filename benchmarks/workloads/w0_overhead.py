"""W0: call overhead, ``x + 1.0`` on a float32 scalar, as an eager op and as a compiled function."""
from functools import partial

import numpy as np

from benchmarks.frameworks import decorate, require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload

X0 = 2.0


def add_one(x):
    """The workload, as written in every framework."""
    return x + 1.0


def build_numpy(np_module, profile):
    x = np.float32(X0)
    return Prepared(lambda: add_one(x))


def build_numba(numba_module, profile):
    from benchmarks.numba_kernels import w0_add_one
    x = np.float32(X0)
    w0_add_one(x)  # compile (or load from the cache) before anything is timed
    return Prepared(lambda: w0_add_one(x))


def build_tf(tf, profile, decorated):
    """TensorFlow and hybridtf: the same code under either module."""
    require(tf, "constant")
    x = tf.constant(X0)
    fn = decorate(tf, add_one, decorated)
    return Prepared(lambda: fn(x))


def build_jax(jax, profile):
    fn = jax.jit(add_one)
    x = jax.numpy.asarray(np.float32(X0))
    return Prepared(lambda: fn(x).block_until_ready())


def build_torch(torch, profile):
    x = torch.tensor(X0, dtype=torch.float32)
    return Prepared(lambda: add_one(x))


WORKLOAD = Workload(
    id="W0",
    title="call overhead: x + 1.0",
    shapes="scalar float32",
    tolerance=1e-6,
    impls=(
        Impl("numpy", "eager", build_numpy),
        Impl("numba", "fused", build_numba),
        Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
        Impl("tensorflow", "function", partial(build_tf, decorated=True)),
        Impl("jax", "jit", build_jax),
        Impl("torch", "eager", build_torch),
        Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
        Impl("hybridtf", "function", partial(build_tf, decorated=True)),
    ),
)
