"""The one Adam update of W3 and W4, written once per framework with the same math.

Keras' formulation (epsilon added to sqrt(v), bias correction folded into the step size):

    b1p *= beta1;  b2p *= beta2
    lr_t = lr * sqrt(1 - b2p) / (1 - b1p)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p -= lr_t * m / (sqrt(v) + epsilon)

The powers ``b1p``, ``b2p`` are carried as state (as TF 1's Adam did) so that the TF-style step
needs only multiplications, not ``pow`` with a tensor exponent.
"""
import math

import numpy as np

from benchmarks.devices import CPU, placement, tf_placement
from benchmarks.frameworks import decorate

LEARNING_RATE = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPSILON = 1e-7


class NumpyAdam:
    def __init__(self, params):
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.b1p = self.b2p = 1.0

    def apply(self, params, grads):
        """Update ``params`` (NumPy arrays) in place."""
        self.b1p *= BETA1
        self.b2p *= BETA2
        lr_t = np.float32(LEARNING_RATE * math.sqrt(1.0 - self.b2p) / (1.0 - self.b1p))
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= BETA1
            m += (1.0 - BETA1) * g
            v *= BETA2
            v += (1.0 - BETA2) * g * g
            p -= lr_t * m / (np.sqrt(v) + EPSILON)


class TFStyleAdam:
    """For TensorFlow and hybridtf: slots are ``tf.Variable``s, the update is TF ops, so it runs
    eagerly and inside a traced step alike."""

    def __init__(self, tf, initial_params):
        self.tf = tf
        self.m = [tf.Variable(np.zeros_like(p)) for p in initial_params]
        self.v = [tf.Variable(np.zeros_like(p)) for p in initial_params]
        self.b1p = tf.Variable(np.float32(1.0))
        self.b2p = tf.Variable(np.float32(1.0))

    def apply(self, params, grads):
        tf = self.tf
        b1p = self.b1p * BETA1
        b2p = self.b2p * BETA2
        self.b1p.assign(b1p)
        self.b2p.assign(b2p)
        lr_t = LEARNING_RATE * tf.sqrt(1.0 - b2p) / (1.0 - b1p)
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m_new = BETA1 * m + (1.0 - BETA1) * g
            v_new = BETA2 * v + (1.0 - BETA2) * g * g
            m.assign(m_new)
            v.assign(v_new)
            p.assign_sub(lr_t * m_new / (tf.sqrt(v_new) + EPSILON))

    REQUIRED = ("Variable", "Variable.assign", "Variable.assign_sub", "sqrt")


def jax_adam_init(jnp, params):
    zeros = tuple(jnp.zeros_like(p) for p in params)
    return zeros, tuple(jnp.zeros_like(p) for p in params), (jnp.float32(1.0), jnp.float32(1.0))


def jax_adam_apply(jnp, params, grads, m, v, powers):
    """Pure function: returns new (params, m, v, powers)."""
    b1p, b2p = powers[0] * BETA1, powers[1] * BETA2
    lr_t = LEARNING_RATE * jnp.sqrt(1.0 - b2p) / (1.0 - b1p)
    m = tuple(BETA1 * mi + (1.0 - BETA1) * g for mi, g in zip(m, grads))
    v = tuple(BETA2 * vi + (1.0 - BETA2) * g * g for vi, g in zip(v, grads))
    params = tuple(p - lr_t * mi / (jnp.sqrt(vi) + EPSILON) for p, mi, vi in zip(params, m, v))
    return params, m, v, (b1p, b2p)


def jax_train_step(jax, loss_fn, initial_params, batch, device=CPU):
    """A jitted JAX train step of ``loss_fn(params, x, y)`` with this Adam, from NumPy
    ``initial_params`` on the NumPy ``batch``, on ``device``: (step() -> the loss,
    read_params() -> params)."""
    jnp = jax.numpy

    def train_step(params, m, v, powers, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return (*jax_adam_apply(jnp, params, grads, m, v, powers), loss)

    jitted = jax.jit(train_step, donate_argnums=(0, 1, 2))
    place = placement("jax", jax, device)
    with place.scope():
        state = [tuple(place.put(p) for p in initial_params),
                 *jax_adam_init(jnp, initial_params)]
        x, y = (place.put(a) for a in batch)

    def step():
        *state[:], loss = jitted(*state, x, y)
        return loss.block_until_ready()
    return step, lambda: state[0]


def tf_train_step(tf, make_train_step, initial_params, batch, decorated, device=CPU):
    """A TensorFlow or hybridtf train step ``make_train_step(tf, params, optimizer)(x, y)``
    with this Adam, eager or decorated, from NumPy ``initial_params`` on the NumPy ``batch``,
    with the variables and the batch on ``device``: (step() -> the loss, the variables)."""
    place = tf_placement(tf, device)
    with place.scope():
        params = [tf.Variable(p) for p in initial_params]
        optimizer = TFStyleAdam(tf, initial_params)
        x, y = [tf.constant(a) for a in batch]
    train_step = decorate(tf, make_train_step(tf, params, optimizer), decorated)
    return place.timed(lambda: train_step(x, y)), params


class TorchAdam:
    """In-place tensor ops, as torch.optim.Adam's single-tensor path does, but Keras' epsilon."""

    def __init__(self, torch, params):
        self.torch = torch
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.b1p = self.b2p = 1.0

    def apply(self, params, grads):
        self.b1p *= BETA1
        self.b2p *= BETA2
        lr_t = LEARNING_RATE * math.sqrt(1.0 - self.b2p) / (1.0 - self.b1p)
        with self.torch.no_grad():
            for p, g, m, v in zip(params, grads, self.m, self.v):
                m.mul_(BETA1).add_(g, alpha=1.0 - BETA1)
                v.mul_(BETA2).addcmul_(g, g, value=1.0 - BETA2)
                p.addcdiv_(m, v.sqrt().add_(EPSILON), value=-lr_t)
