"""W1: the seed's ``f(x, y) = reduce_mean(multiply(x ** 2, 3) + y)`` on 1000x1000 float32."""
from functools import partial

import numpy as np

from benchmarks import data
from benchmarks.devices import CPU, placement, tf_placement
from benchmarks.frameworks import decorate, require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload, on_gpu

SHAPE = (1000, 1000)


def bytes_moved():
    """What the computation must move at the least: x and y read once, the float32 mean
    written."""
    return 2 * SHAPE[0] * SHAPE[1] * 4 + 4


def inputs():
    return data.uniform("W1.x", SHAPE, -1.0, 1.0), data.uniform("W1.y", SHAPE, -1.0, 1.0)


def build_numpy(np_module, profile):
    x, y = inputs()

    def f(x, y):
        return np.mean(np.multiply(x ** 2, 3) + y)
    return Prepared(lambda: f(x, y))


def build_numba(numba_module, profile):
    from benchmarks.numba_kernels import w1_fused
    x, y = inputs()
    w1_fused(x, y)
    return Prepared(lambda: w1_fused(x, y))


def build_tf(tf, profile, decorated, device=CPU):
    """TensorFlow and hybridtf: the seed's code, verbatim, under either module."""
    require(tf, "constant", "multiply", "reduce_mean")

    def f(x, y):
        return tf.reduce_mean(tf.multiply(x ** 2, 3) + y)
    place = tf_placement(tf, device)
    with place.scope():
        x, y = [tf.constant(a) for a in inputs()]
    fn = decorate(tf, f, decorated)
    return Prepared(place.timed(lambda: fn(x, y)))


def build_jax(jax, profile, device=CPU):
    jnp = jax.numpy

    @jax.jit
    def f(x, y):
        return jnp.mean(jnp.multiply(x ** 2, 3) + y)
    put = placement("jax", jax, device).put
    x, y = (put(a) for a in inputs())
    return Prepared(lambda: f(x, y).block_until_ready())


def build_torch(torch, profile, device=CPU):
    def f(x, y):
        return torch.mean(torch.multiply(x ** 2, 3) + y)
    place = placement("torch", torch, device)
    x, y = (place.put(a) for a in inputs())
    return Prepared(place.timed(lambda: f(x, y)))


WORKLOAD = Workload(
    id="W1",
    title="reduce_mean(multiply(x ** 2, 3) + y)",
    shapes="x, y: 1000x1000 float32",
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

GPU_WORKLOAD = on_gpu(
    WORKLOAD, metrics=("time_s", "bandwidth_bytes_s", "bandwidth_share"),
    extra={"bytes_moved": bytes_moved},
    notes="bandwidth: the bytes of x and y (read once) and of the mean (written) per median "
          "time; of peak: that share of the GPU's peak memory bandwidth.")
