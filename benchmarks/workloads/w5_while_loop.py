"""W5: the seed's data-dependent loop, ``while reduce_sum(x) > 1: x = tanh(x)``."""
from functools import partial

import numpy as np

from benchmarks.devices import CPU, placement, tf_placement
from benchmarks.frameworks import decorate, require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload, on_gpu

X0 = np.array([0.2, 0.25, 0.06, 0.9, 0.93], dtype=np.float32)


def build_numpy(np_module, profile):
    def f(x):
        while np.sum(x) > 1:
            x = np.tanh(x)
        return x
    return Prepared(lambda: f(X0))


def build_tf(tf, profile, decorated, device=CPU):
    """TensorFlow and hybridtf: the seed's code; under tf.function autograph turns the loop
    into a while_loop."""
    require(tf, "constant", "reduce_sum", "tanh")
    if decorated:
        require(tf, "autograph.to_code")  # the Python while on a tensor needs autograph

    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x
    place = tf_placement(tf, device)
    with place.scope():
        x = tf.constant(X0)
    fn = decorate(tf, f, decorated)
    return Prepared(place.timed(lambda: fn(x)))


def build_jax(jax, profile, device=CPU):
    jnp = jax.numpy

    @jax.jit
    def f(x):
        return jax.lax.while_loop(lambda x: jnp.sum(x) > 1, jnp.tanh, x)
    x = placement("jax", jax, device).put(X0)
    return Prepared(lambda: f(x).block_until_ready())


def build_torch(torch, profile, device=CPU):
    def f(x):
        while torch.sum(x) > 1:
            x = torch.tanh(x)
        return x
    place = placement("torch", torch, device)
    x = place.put(X0.copy())
    return Prepared(place.timed(lambda: f(x)))


WORKLOAD = Workload(
    id="W5",
    title="while reduce_sum(x) > 1: x = tanh(x)",
    shapes="x = [0.2, 0.25, 0.06, 0.9, 0.93]",
    tolerance=1e-4,
    impls=(
        Impl("numpy", "eager", build_numpy),
        Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
        Impl("tensorflow", "function", partial(build_tf, decorated=True)),
        Impl("jax", "jit", build_jax),
        Impl("torch", "eager", build_torch),
        Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
        Impl("hybridtf", "function", partial(build_tf, decorated=True)),
    ),
)

GPU_WORKLOAD = on_gpu(WORKLOAD)
