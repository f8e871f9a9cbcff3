"""W7: one train step of a 2-layer LSTM(128) classifier, Adam.

Batch 32 of sequences of 50 steps of 64 features: LSTM(128, return_sequences) - LSTM(128) -
Dense(10), sparse softmax cross-entropy from logits, the hand-written Adam of ``benchmarks.adam``.
TF and hybridtf run the same Keras code (``tf.keras.layers.LSTM``), PyTorch its ``nn.LSTM``
(CPU paths on both: no cuDNN), all from the same weights; the NumPy variant is the reference,
with hand-written backpropagation through time.
"""
from functools import partial

import numpy as np

from benchmarks import adam, data, numpy_nn
from benchmarks.agreement import Tolerance
from benchmarks.frameworks import decorate, require, to_numpy
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload

BATCH, STEPS, FEATURES, UNITS, CLASSES = 32, 50, 64, 128, 10


def initial_params():
    """[kernel, recurrent_kernel, bias] of each LSTM (Keras's layout: gates i, f, c, o; the
    forget gate's bias 1), then the Dense kernel and bias."""
    params = []
    for layer, fan_in in enumerate((FEATURES, UNITS)):
        bias = data.zeros((4 * UNITS,))
        bias[UNITS:2 * UNITS] = 1.0
        params += [data.glorot_uniform(f"W7.kernel{layer}", (fan_in, 4 * UNITS)),
                   data.uniform(f"W7.recurrent{layer}", (UNITS, 4 * UNITS), -0.1, 0.1), bias]
    return params + [data.glorot_uniform("W7.dense", (UNITS, CLASSES)), data.zeros((CLASSES,))]


def batch():
    return (data.uniform("W7.x", (BATCH, STEPS, FEATURES), -1.0, 1.0),
            data.labels("W7.y", BATCH, CLASSES))


def _prepared(step, read_params, profile):
    def check():
        losses = [to_numpy(step()) for _ in range(profile.check_steps)]
        return {"loss": losses, "params": [to_numpy(p) for p in read_params()]}
    return Prepared(step, check=check)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _lstm_forward(x, kernel, recurrent, bias):
    """Outputs [batch, steps, units] and what the backward pass needs."""
    h = np.zeros((x.shape[0], UNITS), np.float32)
    c = np.zeros_like(h)
    saved, outputs = [], []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f = _sigmoid(z[:, :UNITS]), _sigmoid(z[:, UNITS:2 * UNITS])
        g, o = np.tanh(z[:, 2 * UNITS:3 * UNITS]), _sigmoid(z[:, 3 * UNITS:])
        saved.append((h, c, i, f, g, o))
        c = f * c + i * g
        h = o * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1), saved


def _lstm_backward(x, kernel, recurrent, saved, doutputs):
    """Gradients (dx, dkernel, drecurrent, dbias) from those of the outputs."""
    dkernel, drecurrent = np.zeros_like(kernel), np.zeros_like(recurrent)
    dbias = np.zeros(4 * UNITS, np.float32)
    dx = np.zeros_like(x)
    dh_next = np.zeros((x.shape[0], UNITS), np.float32)
    dc_next = np.zeros_like(dh_next)
    for t in reversed(range(x.shape[1])):
        h_prev, c_prev, i, f, g, o = saved[t]
        c = f * c_prev + i * g
        tanh_c = np.tanh(c)
        dh = doutputs[:, t] + dh_next
        dc = dh * o * (1 - tanh_c ** 2) + dc_next
        dz = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * (1 - g ** 2), dh * tanh_c * o * (1 - o)], axis=1)
        dc_next = dc * f
        dkernel += x[:, t].T @ dz
        drecurrent += h_prev.T @ dz
        dbias += dz.sum(0)
        dx[:, t] = dz @ kernel.T
        dh_next = dz @ recurrent.T
    return dx, dkernel, drecurrent, dbias


def build_numpy(np_module, profile):
    params = [p.copy() for p in initial_params()]
    optimizer = adam.NumpyAdam(params)
    x, y = batch()

    def step():
        k0, r0, b0, k1, r1, b1, dense, dense_bias = params
        h0, saved0 = _lstm_forward(x, k0, r0, b0)
        h1, saved1 = _lstm_forward(h0, k1, r1, b1)
        last = h1[:, -1]
        losses, dlogits = numpy_nn.sparse_softmax_cross_entropy(y, last @ dense + dense_bias)
        dlogits /= BATCH
        dh1 = np.zeros_like(h1)
        dh1[:, -1] = dlogits @ dense.T
        dh0, dk1, dr1, db1 = _lstm_backward(h0, k1, r1, saved1, dh1)
        _, dk0, dr0, db0 = _lstm_backward(x, k0, r0, saved0, dh0)
        grads = [dk0, dr0, db0, dk1, dr1, db1, last.T @ dlogits, dlogits.sum(0)]
        optimizer.apply(params, grads)
        return losses.mean()
    return _prepared(step, lambda: params, profile)


TF_REQUIRED = ("constant", "GradientTape", "GradientTape.gradient", "reduce_mean",
               "keras.Sequential", "keras.Input", "keras.layers.LSTM", "keras.layers.Dense",
               "nn.sparse_softmax_cross_entropy_with_logits", *adam.TFStyleAdam.REQUIRED)


def build_tf(tf, profile, decorated):
    """TensorFlow and hybridtf: the same Keras code under either module."""
    require(tf, *TF_REQUIRED)
    init = initial_params()
    model = tf.keras.Sequential([tf.keras.Input((STEPS, FEATURES)),
                                 tf.keras.layers.LSTM(UNITS, return_sequences=True),
                                 tf.keras.layers.LSTM(UNITS), tf.keras.layers.Dense(CLASSES)])
    model.set_weights(init)
    params = model.trainable_variables
    optimizer = adam.TFStyleAdam(tf, init)

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=model(x, training=True)))
        grads = tape.gradient(loss, params)
        optimizer.apply(params, grads)
        return loss
    train_step = decorate(tf, train_step, decorated)
    x, y = (tf.constant(a) for a in batch())
    return _prepared(lambda: train_step(x, y), lambda: params, profile)


def build_torch(torch, profile):
    init = initial_params()
    lstm = torch.nn.LSTM(FEATURES, UNITS, num_layers=2, batch_first=True)
    params = []
    with torch.no_grad():
        for layer in range(2):
            kernel, recurrent, bias = init[3 * layer:3 * layer + 3]
            # PyTorch's gate order (i, f, g, o) is Keras's; its second bias stays zero.
            getattr(lstm, f"weight_ih_l{layer}").copy_(torch.from_numpy(kernel.T.copy()))
            getattr(lstm, f"weight_hh_l{layer}").copy_(torch.from_numpy(recurrent.T.copy()))
            getattr(lstm, f"bias_ih_l{layer}").copy_(torch.from_numpy(bias))
            getattr(lstm, f"bias_hh_l{layer}").zero_()
            getattr(lstm, f"bias_hh_l{layer}").requires_grad_(False)
            params += [getattr(lstm, f"weight_ih_l{layer}"), getattr(lstm, f"weight_hh_l{layer}"),
                       getattr(lstm, f"bias_ih_l{layer}")]
    dense = torch.tensor(init[6], requires_grad=True)
    dense_bias = torch.tensor(init[7], requires_grad=True)
    params += [dense, dense_bias]
    optimizer = adam.TorchAdam(torch, params)
    x_np, y_np = batch()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np.astype(np.int64))

    def step():
        outputs, _ = lstm(x)
        loss = torch.nn.functional.cross_entropy(outputs[:, -1] @ dense + dense_bias, y)
        grads = torch.autograd.grad(loss, params)
        optimizer.apply(params, grads)
        return loss.detach()

    def read_params():   # in Keras's layout, for the agreement check
        values = [p.detach().numpy() for p in params]
        return [v.T if index in (0, 1, 3, 4) else v for index, v in enumerate(values)]
    return _prepared(step, read_params, profile)


IMPLS = (
    Impl("numpy", "eager", build_numpy),
    Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
    Impl("tensorflow", "function", partial(build_tf, decorated=True)),
    Impl("torch", "eager", build_torch),
    Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
    Impl("hybridtf", "function", partial(build_tf, decorated=True)),
)

WORKLOAD = Workload(
    id="W7",
    title="2-layer LSTM(128) train step, Dense(10), sparse softmax CE, Adam",
    shapes="batch 32 x 50 steps x 64 features",
    tolerance={"loss": 1e-4, "params": Tolerance(1e-3, quantile=0.99), "*": 1e-4},
    impls=IMPLS,
    notes="NumPy: hand-written backpropagation through time (the reference).",
)
