"""W3: one MLP train step, 784-256-128-10, relu, sparse softmax cross-entropy from logits, Adam.

Plain variables, a GradientTape inside the (decorated) step and the hand-written Adam of
``benchmarks.adam``, so that the TF-style code runs before hybridtf.keras exists. The NumPy
variant is the reference, with hand-written gradients. C1 and M1 reuse ``build``.
"""
from functools import partial

import numpy as np

from benchmarks import adam, data, numpy_nn
from benchmarks.agreement import Tolerance
from benchmarks.devices import CPU, placement
from benchmarks.frameworks import require, to_numpy
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload, on_gpu

SIZES = (784, 256, 128, 10)
BATCH = 64


def initial_params():
    """[kernel0, bias0, kernel1, bias1, kernel2, bias2]: Glorot-uniform kernels, zero biases."""
    params = []
    for index, (fan_in, fan_out) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        params += [data.glorot_uniform(f"W3.kernel{index}", (fan_in, fan_out)),
                   data.zeros((fan_out,))]
    return params


def batch():
    return data.uniform("W3.x", (BATCH, SIZES[0])), data.labels("W3.y", BATCH, SIZES[-1])


def check_steps(step, read_params, steps):
    """What the frameworks must agree on: the losses of the first steps and the weights after."""
    losses = [to_numpy(step()) for _ in range(steps)]
    return {"loss": losses, "params": [to_numpy(p) for p in read_params()]}


def _prepared(step, read_params, profile):
    return Prepared(step, check=lambda: check_steps(step, read_params, profile.check_steps))


def build_numpy(np_module, profile):
    params = [p.copy() for p in initial_params()]
    optimizer = adam.NumpyAdam(params)
    x, y = batch()

    def step():
        w1, b1, w2, b2, w3, b3 = params
        z1 = x @ w1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2 + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3 + b3
        losses, dlogits = numpy_nn.sparse_softmax_cross_entropy(y, logits)
        dlogits /= BATCH
        dz2 = (dlogits @ w3.T) * (z2 > 0)
        dz1 = (dz2 @ w2.T) * (z1 > 0)
        grads = [x.T @ dz1, dz1.sum(0), h1.T @ dz2, dz2.sum(0), h2.T @ dlogits, dlogits.sum(0)]
        optimizer.apply(params, grads)
        return losses.mean()
    return _prepared(step, lambda: params, profile)


TF_REQUIRED = ("constant", "Variable", "GradientTape", "GradientTape.gradient", "matmul",
               "nn.relu", "nn.sparse_softmax_cross_entropy_with_logits", "reduce_mean",
               *adam.TFStyleAdam.REQUIRED)


def make_train_step(tf, params, optimizer):
    """The train step as TF 2 code; ``tf`` is ``tensorflow`` or ``hybridtf``."""
    w1, b1, w2, b2, w3, b3 = params

    def train_step(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            h = tf.nn.relu(tf.matmul(h, w2) + b2)
            logits = tf.matmul(h, w3) + b3
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        optimizer.apply(params, grads)
        return loss
    return train_step


def build_tf(tf, profile, decorated, device=CPU):
    """TensorFlow and hybridtf: the same code under either module."""
    require(tf, *TF_REQUIRED)
    step, params = adam.tf_train_step(tf, make_train_step, initial_params(), batch(), decorated,
                                      device)
    return _prepared(step, lambda: params, profile)


def build_jax(jax, profile, device=CPU):
    jnp = jax.numpy

    def loss_fn(params, x, y):
        w1, b1, w2, b2, w3, b3 = params
        h = jax.nn.relu(x @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        log_probs = jax.nn.log_softmax(h @ w3 + b3)
        return -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))

    step, read_params = adam.jax_train_step(jax, loss_fn, initial_params(), batch(), device)
    return _prepared(step, read_params, profile)


def torch_params_and_batch(torch, device=CPU):
    """The initial parameters (requiring gradients) and the batch, as PyTorch tensors on
    ``device``."""
    place = placement("torch", torch, device)
    params = [torch.tensor(p, requires_grad=True, device=place.device) for p in initial_params()]
    x, y = batch()
    return params, place.put(x), place.put(y.astype(np.int64))


def torch_loss(torch, params, x, y):
    """The step's loss in PyTorch (also D1's DistributedDataParallel module)."""
    w1, b1, w2, b2, w3, b3 = params
    h = torch.relu(x @ w1 + b1)
    h = torch.relu(h @ w2 + b2)
    return torch.nn.functional.cross_entropy(h @ w3 + b3, y)


def build_torch(torch, profile, device=CPU):
    params, x, y = torch_params_and_batch(torch, device)
    optimizer = adam.TorchAdam(torch, params)

    def step():
        loss = torch_loss(torch, params, x, y)
        grads = torch.autograd.grad(loss, params)
        optimizer.apply(params, grads)
        return loss.detach()
    return _prepared(placement("torch", torch, device).timed(step), lambda: params, profile)


IMPLS = (
    Impl("numpy", "eager", build_numpy),
    Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
    Impl("tensorflow", "function", partial(build_tf, decorated=True)),
    Impl("jax", "jit", build_jax),
    Impl("torch", "eager", build_torch),
    Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
    Impl("hybridtf", "function", partial(build_tf, decorated=True)),
)


def build(framework, mode, profile):
    """Build one variant by name (used by the C1 and M1 child processes)."""
    from benchmarks.frameworks import load
    for impl in IMPLS:
        if (impl.framework, impl.mode) == (framework, mode):
            return impl.build(load(framework), profile)
    raise KeyError(f"W3 has no variant {framework}/{mode}")


WORKLOAD = Workload(
    id="W3",
    title="MLP train step 784-256-128-10, relu, sparse softmax CE, Adam",
    shapes="batch 64",
    tolerance={"loss": 1e-4, "params": Tolerance(1e-3, quantile=0.99), "*": 1e-4},
    impls=IMPLS,
    notes="NumPy: hand-written gradients (the reference).",
)

GPU_WORKLOAD = on_gpu(WORKLOAD)
