"""W8: one train step of a small Transformer encoder block, Adam.

Batch 32 of 64 tokens of width 128: 4-head self-attention (key width 32), residual and layer
normalization, a 128-512-128 relu feed-forward, residual and layer normalization, then the
tokens' mean through a 10-way classifier and sparse softmax cross-entropy from logits. Plain
variables, a GradientTape and the hand-written Adam of ``benchmarks.adam``, so that every
framework runs the same math from the same weights. The NumPy variant is the reference, with
hand-written gradients.
"""
from functools import partial

import numpy as np

from benchmarks import adam, data, numpy_nn
from benchmarks.agreement import Tolerance
from benchmarks.frameworks import require, to_numpy
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload

BATCH, TOKENS, WIDTH, HEADS, HIDDEN, CLASSES = 32, 64, 128, 4, 512, 10
KEY_WIDTH = WIDTH // HEADS
EPSILON = 1e-6


def initial_params():
    """wq, bq, wk, wv, bv, wo, bo, gamma1, beta1, w1, b1, w2, b2, gamma2, beta2, wc, bc.

    The keys have no bias: it would shift every score of a query alike, which softmax ignores,
    so its gradient is zero up to rounding, and Adam would turn the rounding into updates that
    differ between frameworks."""
    def dense(name, fan_in, fan_out):
        return [data.glorot_uniform(f"W8.{name}", (fan_in, fan_out)), data.zeros((fan_out,))]

    def norm():
        return [np.ones(WIDTH, np.float32), data.zeros((WIDTH,))]
    return (dense("wq", WIDTH, WIDTH) + dense("wk", WIDTH, WIDTH)[:1] + dense("wv", WIDTH, WIDTH)
            + dense("wo", WIDTH, WIDTH) + norm() + dense("w1", WIDTH, HIDDEN)
            + dense("w2", HIDDEN, WIDTH) + norm() + dense("wc", WIDTH, CLASSES))


def batch():
    return (data.uniform("W8.x", (BATCH, TOKENS, WIDTH), -1.0, 1.0),
            data.labels("W8.y", BATCH, CLASSES))


def _prepared(step, read_params, profile):
    def check():
        losses = [to_numpy(step()) for _ in range(profile.check_steps)]
        return {"loss": losses, "params": [to_numpy(p) for p in read_params()]}
    return Prepared(step, check=check)


def _numpy_layer_norm(h, gamma, beta):
    mean = h.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(np.square(h - mean).mean(-1, keepdims=True) + EPSILON)
    normal = (h - mean) * rstd
    return normal * gamma + beta, (normal, rstd, gamma)


def _numpy_layer_norm_backward(dy, saved):
    """(dx, dgamma, dbeta) of ``_numpy_layer_norm``."""
    normal, rstd, gamma = saved
    dnormal = dy * gamma
    dx = rstd * (dnormal - dnormal.mean(-1, keepdims=True)
                 - normal * (dnormal * normal).mean(-1, keepdims=True))
    return dx, (dy * normal).sum(0), dy.sum(0)


def _numpy_heads(h):
    return h.reshape(BATCH, TOKENS, HEADS, KEY_WIDTH).transpose(0, 2, 1, 3)


def _numpy_rows(h):
    return h.transpose(0, 2, 1, 3).reshape(BATCH * TOKENS, WIDTH)


def build_numpy(np_module, profile):
    params = [p.copy() for p in initial_params()]
    optimizer = adam.NumpyAdam(params)
    x, y = batch()
    rows = x.reshape(BATCH * TOKENS, WIDTH)
    scale = np.float32(1.0 / np.sqrt(KEY_WIDTH))

    def step():
        wq, bq, wk, wv, bv, wo, bo, g1, be1, w1, b1, w2, b2, g2, be2, wc, bc = params
        q = _numpy_heads(rows @ wq + bq)
        k, v = _numpy_heads(rows @ wk), _numpy_heads(rows @ wv + bv)
        scores = (q @ k.transpose(0, 1, 3, 2)) * scale
        e = np.exp(scores - scores.max(-1, keepdims=True))
        probs = e / e.sum(-1, keepdims=True)
        context = _numpy_rows(probs @ v)
        h1, saved1 = _numpy_layer_norm(rows + context @ wo + bo, g1, be1)
        z = h1 @ w1 + b1
        u = np.maximum(z, 0)
        h2, saved2 = _numpy_layer_norm(h1 + u @ w2 + b2, g2, be2)
        pooled = h2.reshape(BATCH, TOKENS, WIDTH).mean(1)
        losses, dlogits = numpy_nn.sparse_softmax_cross_entropy(y, pooled @ wc + bc)
        dlogits /= BATCH
        # backward, layer by layer
        dh2 = np.repeat(dlogits @ wc.T / TOKENS, TOKENS, axis=0)
        dr2, dg2, dbe2 = _numpy_layer_norm_backward(dh2, saved2)
        dz = (dr2 @ w2.T) * (z > 0)
        dr1, dg1, dbe1 = _numpy_layer_norm_backward(dr2 + dz @ w1.T, saved1)
        dcontext = _numpy_heads(dr1 @ wo.T)
        dprobs = dcontext @ v.transpose(0, 1, 3, 2)
        dv = probs.transpose(0, 1, 3, 2) @ dcontext
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True)) * scale
        dq, dk = _numpy_rows(dscores @ k), _numpy_rows(dscores.transpose(0, 1, 3, 2) @ q)
        dv = _numpy_rows(dv)
        grads = [rows.T @ dq, dq.sum(0), rows.T @ dk, rows.T @ dv, dv.sum(0),
                 context.T @ dr1, dr1.sum(0), dg1, dbe1, h1.T @ dz, dz.sum(0),
                 u.T @ dr2, dr2.sum(0), dg2, dbe2, pooled.T @ dlogits, dlogits.sum(0)]
        optimizer.apply(params, [g.astype(np.float32) for g in grads])
        return losses.mean()
    return _prepared(step, lambda: params, profile)


TF_REQUIRED = ("constant", "Variable", "GradientTape", "GradientTape.gradient", "matmul",
               "reshape", "transpose", "nn.softmax", "nn.relu", "math.rsqrt", "reduce_mean",
               "square", "nn.sparse_softmax_cross_entropy_with_logits", *adam.TFStyleAdam.REQUIRED)


def make_train_step(tf, params, optimizer):
    """The train step as TF 2 code; ``tf`` is ``tensorflow`` or ``hybridtf``."""
    (wq, bq, wk, wv, bv, wo, bo, gamma1, beta1, w1, b1, w2, b2, gamma2, beta2, wc,
     bc) = params

    def layer_norm(h, gamma, beta):
        mean = tf.reduce_mean(h, axis=-1, keepdims=True)
        variance = tf.reduce_mean(tf.square(h - mean), axis=-1, keepdims=True)
        return (h - mean) * tf.math.rsqrt(variance + EPSILON) * gamma + beta

    def heads(h):   # [batch * tokens, width] -> [batch, heads, tokens, key width]
        return tf.transpose(tf.reshape(h, [BATCH, TOKENS, HEADS, KEY_WIDTH]), [0, 2, 1, 3])

    def train_step(x, y):
        with tf.GradientTape() as tape:
            rows = tf.reshape(x, [BATCH * TOKENS, WIDTH])
            q = heads(tf.matmul(rows, wq) + bq)
            k = heads(tf.matmul(rows, wk))
            v = heads(tf.matmul(rows, wv) + bv)
            scores = tf.matmul(q, k, transpose_b=True) * (1.0 / np.sqrt(KEY_WIDTH))
            context = tf.matmul(tf.nn.softmax(scores), v)
            context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [BATCH * TOKENS, WIDTH])
            h = layer_norm(rows + tf.matmul(context, wo) + bo, gamma1, beta1)
            f = tf.matmul(tf.nn.relu(tf.matmul(h, w1) + b1), w2) + b2
            h = layer_norm(h + f, gamma2, beta2)
            pooled = tf.reduce_mean(tf.reshape(h, [BATCH, TOKENS, WIDTH]), axis=1)
            logits = tf.matmul(pooled, wc) + bc
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        optimizer.apply(params, grads)
        return loss
    return train_step


def build_tf(tf, profile, decorated):
    """TensorFlow and hybridtf: the same code under either module."""
    require(tf, *TF_REQUIRED)
    step, params = adam.tf_train_step(tf, make_train_step, initial_params(), batch(), decorated)
    return _prepared(step, lambda: params, profile)


def build_jax(jax, profile):
    jnp = jax.numpy

    def layer_norm(h, gamma, beta):
        mean = h.mean(-1, keepdims=True)
        variance = jnp.square(h - mean).mean(-1, keepdims=True)
        return (h - mean) * jax.lax.rsqrt(variance + EPSILON) * gamma + beta

    def heads(h):
        return h.reshape(BATCH, TOKENS, HEADS, KEY_WIDTH).transpose(0, 2, 1, 3)

    def loss_fn(params, x, y):
        (wq, bq, wk, wv, bv, wo, bo, gamma1, beta1, w1, b1, w2, b2, gamma2, beta2, wc,
         bc) = params
        rows = x.reshape(BATCH * TOKENS, WIDTH)
        q, k, v = heads(rows @ wq + bq), heads(rows @ wk), heads(rows @ wv + bv)
        scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / np.sqrt(KEY_WIDTH))
        context = jax.nn.softmax(scores) @ v
        context = context.transpose(0, 2, 1, 3).reshape(BATCH * TOKENS, WIDTH)
        h = layer_norm(rows + context @ wo + bo, gamma1, beta1)
        h = layer_norm(h + jax.nn.relu(h @ w1 + b1) @ w2 + b2, gamma2, beta2)
        logits = h.reshape(BATCH, TOKENS, WIDTH).mean(1) @ wc + bc
        log_probs = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))

    step, read_params = adam.jax_train_step(jax, loss_fn, initial_params(), batch())
    return _prepared(step, read_params, profile)


def build_torch(torch, profile):
    params = [torch.tensor(p, requires_grad=True) for p in initial_params()]
    optimizer = adam.TorchAdam(torch, params)
    x_np, y_np = batch()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np.astype(np.int64))
    functional = torch.nn.functional

    def heads(h):
        return h.reshape(BATCH, TOKENS, HEADS, KEY_WIDTH).permute(0, 2, 1, 3)

    def step():
        (wq, bq, wk, wv, bv, wo, bo, gamma1, beta1, w1, b1, w2, b2, gamma2, beta2, wc,
         bc) = params
        rows = x.reshape(BATCH * TOKENS, WIDTH)
        q, k, v = heads(rows @ wq + bq), heads(rows @ wk), heads(rows @ wv + bv)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / np.sqrt(KEY_WIDTH))
        context = torch.softmax(scores, -1) @ v
        context = context.permute(0, 2, 1, 3).reshape(BATCH * TOKENS, WIDTH)
        h = functional.layer_norm(rows + context @ wo + bo, (WIDTH,), gamma1, beta1, EPSILON)
        h = functional.layer_norm(h + torch.relu(h @ w1 + b1) @ w2 + b2, (WIDTH,), gamma2,
                                  beta2, EPSILON)
        logits = h.reshape(BATCH, TOKENS, WIDTH).mean(1) @ wc + bc
        loss = functional.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, params)
        optimizer.apply(params, grads)
        return loss.detach()
    return _prepared(step, lambda: params, profile)


IMPLS = (
    Impl("numpy", "eager", build_numpy),
    Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
    Impl("tensorflow", "function", partial(build_tf, decorated=True)),
    Impl("jax", "jit", build_jax),
    Impl("torch", "eager", build_torch),
    Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
    Impl("hybridtf", "function", partial(build_tf, decorated=True)),
)

WORKLOAD = Workload(
    id="W8",
    title="Transformer encoder block train step (4-head attention, layer norms, FFN 512), Adam",
    shapes="batch 32 x 64 tokens x width 128",
    tolerance={"loss": 1e-4, "params": Tolerance(1e-3, quantile=0.99), "*": 1e-4},
    impls=IMPLS,
    notes="NumPy: hand-written gradients (the reference).",
)
