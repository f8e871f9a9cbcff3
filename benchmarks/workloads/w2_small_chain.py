"""W2: a chain of small ops, five times ``x = tanh(x * 1.01 + 0.1) - x * 0.5`` on (100,) float32."""
from functools import partial

import numpy as np

from benchmarks import data
from benchmarks.devices import CPU, placement, tf_placement
from benchmarks.frameworks import decorate, require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload, on_gpu

SHAPE = (100,)
STEPS = 5


def inputs():
    return data.uniform("W2.x", SHAPE, -1.0, 1.0)


def chain(tanh):
    """The workload, given the framework's tanh; operators do the rest."""
    def f(x):
        for _ in range(STEPS):
            x = tanh(x * 1.01 + 0.1) - x * 0.5
        return x
    return f


def build_numpy(np_module, profile):
    f, x = chain(np.tanh), inputs()
    return Prepared(lambda: f(x))


def build_numba(numba_module, profile):
    from benchmarks.numba_kernels import w2_fused
    x = inputs()
    w2_fused(x)
    return Prepared(lambda: w2_fused(x))


def build_tf(tf, profile, decorated, device=CPU):
    """TensorFlow and hybridtf: the same code under either module."""
    require(tf, "constant", "tanh")
    place = tf_placement(tf, device)
    with place.scope():
        x = tf.constant(inputs())
    fn = decorate(tf, chain(tf.tanh), decorated)
    return Prepared(place.timed(lambda: fn(x)))


def build_jax(jax, profile, device=CPU):
    f = jax.jit(chain(jax.numpy.tanh))
    x = placement("jax", jax, device).put(inputs())
    return Prepared(lambda: f(x).block_until_ready())


def build_torch(torch, profile, device=CPU):
    place = placement("torch", torch, device)
    f, x = chain(torch.tanh), place.put(inputs())
    return Prepared(place.timed(lambda: f(x)))


WORKLOAD = Workload(
    id="W2",
    title="5x x = tanh(x * 1.01 + 0.1) - x * 0.5",
    shapes="(100,) float32",
    tolerance=1e-4,
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

GPU_WORKLOAD = on_gpu(WORKLOAD)
