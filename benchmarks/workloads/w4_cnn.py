"""W4: the seed notebook's CNN train step on a batch of 50 28x28x1 images.

Conv2D(32, 5x5, same, relu), MaxPool 2, Conv2D(64, 5x5, same, relu), MaxPool 2, Reshape(7*7*64),
Dense(1024, relu), Dense(10), softmax, Keras' sparse categorical cross-entropy on the
probabilities (clip to [1e-7, 1 - 1e-7], log, then sparse softmax cross-entropy), hand-written
Adam. Plain variables and tf.nn ops, so it runs before hybridtf.keras exists.
"""
from functools import partial

import numpy as np

from benchmarks import adam, data, numpy_nn
from benchmarks.agreement import Tolerance
from benchmarks.devices import CPU, placement
from benchmarks.frameworks import require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload, on_gpu
from benchmarks.workloads.w3_mlp import check_steps

BATCH = 50
CLASSES = 10
KERAS_EPSILON = 1e-7
SHAPES = ((5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (7 * 7 * 64, 1024), (1024,),
          (1024, CLASSES), (CLASSES,))


def initial_params():
    """[k1, c1, k2, c2, w3, b3, w4, b4] in TF layout: Glorot-uniform kernels, zero biases."""
    return [data.glorot_uniform(f"W4.param{i}", shape) if len(shape) > 1 else data.zeros(shape)
            for i, shape in enumerate(SHAPES)]


def batch():
    return data.uniform("W4.x", (BATCH, 28, 28, 1)), data.labels("W4.y", BATCH, CLASSES)


def _prepared(step, read_params, profile):
    return Prepared(step, check=lambda: check_steps(step, read_params, profile.check_steps))


def build_numpy(np_module, profile):
    params = [p.copy() for p in initial_params()]
    optimizer = adam.NumpyAdam(params)
    x, y = batch()
    lo, hi = np.float32(KERAS_EPSILON), np.float32(1.0 - KERAS_EPSILON)

    def step():
        k1, c1, k2, c2, w3, b3, w4, b4 = params
        a1 = numpy_nn.conv2d(x, k1, "SAME") + c1
        r1 = np.maximum(a1, 0)
        p1, i1 = numpy_nn.max_pool2(r1)
        a2 = numpy_nn.conv2d(p1, k2, "SAME") + c2
        r2 = np.maximum(a2, 0)
        p2, i2 = numpy_nn.max_pool2(r2)
        flat = p2.reshape(BATCH, -1)
        z3 = flat @ w3 + b3
        r3 = np.maximum(z3, 0)
        probs = numpy_nn.softmax(r3 @ w4 + b4)
        clipped = np.clip(probs, lo, hi)
        losses, dlog = numpy_nn.sparse_softmax_cross_entropy(y, np.log(clipped))
        dlog /= BATCH
        dprobs = dlog / clipped * ((probs >= lo) & (probs <= hi))
        dlogits = numpy_nn.softmax_backward(probs, dprobs)
        dz3 = (dlogits @ w4.T) * (z3 > 0)
        dp2 = (dz3 @ w3.T).reshape(p2.shape)
        da2 = numpy_nn.max_pool2_backward(dp2, i2, r2.shape) * (a2 > 0)
        dk2, dp1 = numpy_nn.conv2d_backward(p1, k2, da2, "SAME")
        da1 = numpy_nn.max_pool2_backward(dp1, i1, r1.shape) * (a1 > 0)
        dk1, _ = numpy_nn.conv2d_backward(x, k1, da1, "SAME", need_dx=False)
        grads = [dk1, da1.sum((0, 1, 2)), dk2, da2.sum((0, 1, 2)), flat.T @ dz3, dz3.sum(0),
                 r3.T @ dlogits, dlogits.sum(0)]
        optimizer.apply(params, grads)
        return losses.mean()
    return _prepared(step, lambda: params, profile)


TF_REQUIRED = ("constant", "Variable", "GradientTape", "GradientTape.gradient", "matmul",
               "reshape", "nn.conv2d", "nn.max_pool2d", "nn.relu", "nn.softmax", "math.log",
               "clip_by_value", "nn.sparse_softmax_cross_entropy_with_logits", "reduce_mean",
               *adam.TFStyleAdam.REQUIRED)


def make_train_step(tf, params, optimizer):
    """The train step as TF 2 code; ``tf`` is ``tensorflow`` or ``hybridtf``."""
    k1, c1, k2, c2, w3, b3, w4, b4 = params

    def model(x):
        h = tf.nn.relu(tf.nn.conv2d(x, k1, strides=1, padding="SAME") + c1)
        h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
        h = tf.nn.relu(tf.nn.conv2d(h, k2, strides=1, padding="SAME") + c2)
        h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
        h = tf.reshape(h, [-1, 7 * 7 * 64])
        h = tf.nn.relu(tf.matmul(h, w3) + b3)
        return tf.nn.softmax(tf.matmul(h, w4) + b4)

    def train_step(x, y):
        with tf.GradientTape() as tape:
            probs = model(x)
            log_probs = tf.math.log(tf.clip_by_value(probs, KERAS_EPSILON, 1.0 - KERAS_EPSILON))
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=log_probs))
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
    jnp, lax = jax.numpy, jax.lax
    dims = ("NHWC", "HWIO", "NHWC")

    def conv(x, k):
        return lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=dims)

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def loss_fn(params, x, y):
        k1, c1, k2, c2, w3, b3, w4, b4 = params
        h = pool(jax.nn.relu(conv(x, k1) + c1))
        h = pool(jax.nn.relu(conv(h, k2) + c2))
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ w3 + b3)
        probs = jax.nn.softmax(h @ w4 + b4)
        log_probs = jax.nn.log_softmax(jnp.log(jnp.clip(probs, KERAS_EPSILON, 1.0 - KERAS_EPSILON)))
        return -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))

    step, read_params = adam.jax_train_step(jax, loss_fn, initial_params(), batch(), device)
    return _prepared(step, read_params, profile)


def to_torch_layout(params):
    """TF layout -> PyTorch's: OIHW conv kernels, dense1 rows in CHW flatten order."""
    k1, c1, k2, c2, w3, b3, w4, b4 = params
    w3 = w3.reshape(7, 7, 64, -1).transpose(2, 0, 1, 3).reshape(7 * 7 * 64, -1)
    return [k1.transpose(3, 2, 0, 1), c1, k2.transpose(3, 2, 0, 1), c2, w3, b3, w4, b4]


def from_torch_layout(params):
    k1, c1, k2, c2, w3, b3, w4, b4 = params
    w3 = w3.reshape(64, 7, 7, -1).transpose(1, 2, 0, 3).reshape(7 * 7 * 64, -1)
    return [k1.transpose(2, 3, 1, 0), c1, k2.transpose(2, 3, 1, 0), c2, w3, b3, w4, b4]


def torch_params_and_batch(torch, device=CPU):
    """The initial parameters (requiring gradients, PyTorch's layout) and the batch (NCHW), as
    PyTorch tensors on ``device``."""
    place = placement("torch", torch, device)
    params = [torch.tensor(np.ascontiguousarray(p), requires_grad=True, device=place.device)
              for p in to_torch_layout(initial_params())]
    x, y = batch()
    x = place.put(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))  # NCHW, PyTorch's layout
    return params, x, place.put(y.astype(np.int64))


def torch_loss(torch, params, x, y):
    """The step's loss in PyTorch (also D1's DistributedDataParallel module)."""
    functional = torch.nn.functional
    k1, c1, k2, c2, w3, b3, w4, b4 = params
    h = functional.max_pool2d(torch.relu(functional.conv2d(x, k1, c1, padding="same")), 2)
    h = functional.max_pool2d(torch.relu(functional.conv2d(h, k2, c2, padding="same")), 2)
    h = torch.relu(h.reshape(h.shape[0], -1) @ w3 + b3)
    probs = torch.softmax(h @ w4 + b4, dim=1)
    log_probs = torch.log(torch.clamp(probs, KERAS_EPSILON, 1.0 - KERAS_EPSILON))
    return functional.cross_entropy(log_probs, y)


def build_torch(torch, profile, device=CPU):
    params, x, y = torch_params_and_batch(torch, device)
    optimizer = adam.TorchAdam(torch, params)

    def step():
        loss = torch_loss(torch, params, x, y)
        grads = torch.autograd.grad(loss, params)
        optimizer.apply(params, grads)
        return loss.detach()

    def read_params():
        return from_torch_layout([p.detach().cpu().numpy().copy() for p in params])
    return _prepared(placement("torch", torch, device).timed(step), read_params, profile)


WORKLOAD = Workload(
    id="W4",
    title="CNN train step (seed notebook), Adam",
    shapes="batch 50 of 28x28x1",
    tolerance={"loss": 2e-4, "params": Tolerance(1e-3, quantile=0.99), "*": 2e-4},
    impls=(
        Impl("numpy", "eager", build_numpy),
        Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
        Impl("tensorflow", "function", partial(build_tf, decorated=True)),
        Impl("jax", "jit", build_jax),
        Impl("torch", "eager", build_torch),
        Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
        Impl("hybridtf", "function", partial(build_tf, decorated=True)),
    ),
    notes="NumPy: hand-written gradients (the reference). PyTorch runs NCHW, its own layout.",
)

GPU_WORKLOAD = on_gpu(WORKLOAD)
