"""E1: an eager tape over a small layer: ``y = reduce_sum(tanh(x @ w))`` and ``dy/dw``.

x [64, 256], w [256, 256] float32, w a variable. The matmuls are BLAS in every framework, so what
the variants differ in is the per-op cost around them: dispatch, checks, recording on the tape,
the backward walk. The NumPy variant (hand-written gradient) is the reference.
"""
from functools import partial

import numpy as np

from benchmarks import data
from benchmarks.frameworks import decorate, require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload

BATCH, UNITS = 64, 256


def inputs():
    """(x, w): the batch and the weights."""
    return (data.uniform("E1.x", (BATCH, UNITS), -1.0, 1.0),
            data.glorot_uniform("E1.w", (UNITS, UNITS)))


def build_numpy(np_module, profile):
    x, w = inputs()

    def step():
        h = np.tanh(x @ w)
        return x.T @ (1.0 - h * h)
    return Prepared(step)


def build_tf(tf, profile, decorated):
    """TensorFlow and hybridtf: the same code under either module."""
    require(tf, "constant", "Variable", "GradientTape", "GradientTape.gradient", "matmul", "tanh",
            "reduce_sum")
    x_value, w_value = inputs()
    x, w = tf.constant(x_value), tf.Variable(w_value)

    def step(x):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.tanh(tf.matmul(x, w)))
        return tape.gradient(y, w)
    fn = decorate(tf, step, decorated)
    return Prepared(lambda: fn(x))


def build_jax(jax, profile):
    """JAX without jit: ``jax.grad`` traced and run op by op on every call."""
    jnp = jax.numpy
    x_value, w_value = inputs()
    x, w = jnp.asarray(x_value), jnp.asarray(w_value)
    grad = jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w)))
    return Prepared(lambda: grad(w, x).block_until_ready())


def build_torch(torch, profile):
    x_value, w_value = inputs()
    x, w = torch.from_numpy(x_value), torch.tensor(w_value, requires_grad=True)

    def step():
        y = torch.tanh(x @ w).sum()
        return torch.autograd.grad(y, w)[0]
    return Prepared(step)


WORKLOAD = Workload(
    id="E1",
    title="eager tape: reduce_sum(tanh(x @ w)) and its gradient w.r.t. w",
    shapes="x [64,256], w [256,256] float32",
    tolerance=1e-4,
    impls=(
        Impl("numpy", "eager", build_numpy),
        Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
        Impl("tensorflow", "function", partial(build_tf, decorated=True)),
        Impl("jax", "eager", build_jax),
        Impl("torch", "eager", build_torch),
        Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
        Impl("hybridtf", "function", partial(build_tf, decorated=True)),
    ),
    notes="NumPy: hand-written gradient (the reference); JAX: jax.grad without jit.",
)
