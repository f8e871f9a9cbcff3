"""K1: W3's MLP trained through Keras ``Model.fit``, per train step (batch 64,
``metrics=["accuracy"]``), next to the same model's hand-written decorated train step.

The model is W3's (784-256-128-10, relu, sparse softmax cross-entropy from logits, Adam with
Keras' defaults) built with ``keras.Sequential`` and loaded with W3's initial weights.  One
timed call is one epoch of ``fit`` over STEPS batches (no shuffling, ``verbose=0``); the figures
are per step.  ``hybridtf step`` is the loop a user would write by hand around a decorated
train step -- batch slicing, the loss mean and the accuracy metric included -- so that
``hybridtf function`` / ``hybridtf step`` is what ``fit``'s loop costs on top of its step.
``hybridtf eager`` is ``fit`` with ``run_eagerly=True``.  The NumPy reference is W3's
hand-written step over the same batches.
"""
from functools import partial

import numpy as np

from benchmarks import adam, data, numpy_nn
from benchmarks.agreement import Tolerance
from benchmarks.frameworks import require, to_numpy
from benchmarks.harness import Prepared
from benchmarks.workloads import w3_mlp
from benchmarks.workloads.base import Impl, Workload

STEPS = 20
BATCH = w3_mlp.BATCH
SIZES = w3_mlp.SIZES


def dataset(steps=STEPS):
    """STEPS batches of W3's shapes, one array each for the images and the labels."""
    rows = steps * BATCH
    return data.uniform("K1.x", (rows, SIZES[0])), data.labels("K1.y", rows, SIZES[-1])


def _check_steps(profile):
    return max(2, profile.check_steps)


def build_numpy(np_module, profile):
    params = [p.copy() for p in w3_mlp.initial_params()]
    optimizer = adam.NumpyAdam(params)
    x_all, y_all = dataset()

    def epoch(steps):
        losses, correct = [], 0
        for start in range(0, steps * BATCH, BATCH):
            x, y = x_all[start:start + BATCH], y_all[start:start + BATCH]
            w1, b1, w2, b2, w3, b3 = params
            z1 = x @ w1 + b1
            h1 = np.maximum(z1, 0)
            z2 = h1 @ w2 + b2
            h2 = np.maximum(z2, 0)
            logits = h2 @ w3 + b3
            step_losses, dlogits = numpy_nn.sparse_softmax_cross_entropy(y, logits)
            correct += int(np.sum(np.argmax(logits, 1) == y))
            dlogits /= BATCH
            dz2 = (dlogits @ w3.T) * (z2 > 0)
            dz1 = (dz2 @ w2.T) * (z1 > 0)
            grads = [x.T @ dz1, dz1.sum(0), h1.T @ dz2, dz2.sum(0), h2.T @ dlogits,
                     dlogits.sum(0)]
            optimizer.apply(params, grads)
            losses.append(step_losses.mean())
        return {"loss": np.mean(losses), "accuracy": correct / (steps * BATCH),
                "params": [p.copy() for p in params]}

    return Prepared(lambda: epoch(STEPS), check=lambda: epoch(_check_steps(profile)),
                    units=STEPS)


KERAS_REQUIRED = ("keras.Sequential", "keras.Input", "keras.layers.Dense",
                  "keras.optimizers.Adam", "keras.losses.SparseCategoricalCrossentropy")


def keras_model(tf):
    """W3's MLP as a Keras model with W3's initial weights (not compiled)."""
    layers = tf.keras.layers
    model = tf.keras.Sequential([tf.keras.Input((SIZES[0],)),
                                 layers.Dense(SIZES[1], activation="relu"),
                                 layers.Dense(SIZES[2], activation="relu"),
                                 layers.Dense(SIZES[3])])
    model.set_weights(w3_mlp.initial_params())
    return model


def _optimizer_and_loss(tf):
    return (tf.keras.optimizers.Adam(adam.LEARNING_RATE, beta_1=adam.BETA1, beta_2=adam.BETA2,
                                     epsilon=adam.EPSILON),
            tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))


def build_fit(tf, profile, run_eagerly=False):
    """TensorFlow and hybridtf: ``fit`` of the same Keras model."""
    require(tf, *KERAS_REQUIRED, "keras.Model.fit")
    model = keras_model(tf)
    optimizer, loss = _optimizer_and_loss(tf)
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"],
                  run_eagerly=run_eagerly)
    x_all, y_all = dataset()

    def epoch(steps):
        rows = steps * BATCH
        history = model.fit(x_all[:rows], y_all[:rows], batch_size=BATCH, epochs=1, verbose=0,
                            shuffle=False)
        return history.history

    def check():
        logs = epoch(_check_steps(profile))
        return {"loss": logs["loss"][-1], "accuracy": logs["accuracy"][-1],
                "params": [to_numpy(w) for w in model.get_weights()]}

    return Prepared(lambda: epoch(STEPS), check=check, units=STEPS)


def build_step(tf, profile):
    """hybridtf: the loop a user writes by hand around a decorated train step."""
    require(tf, *KERAS_REQUIRED, "keras.metrics.Mean", "keras.metrics.SparseCategoricalAccuracy",
            "function")
    model = keras_model(tf)
    optimizer, loss_fn = _optimizer_and_loss(tf)
    loss_mean = tf.keras.metrics.Mean()
    accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
    weights = model.trainable_variables

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights))
        loss_mean.update_state(loss)
        accuracy.update_state(y, logits)

    x_all, y_all = dataset()

    def epoch(steps):
        loss_mean.reset_state()
        accuracy.reset_state()
        for start in range(0, steps * BATCH, BATCH):
            train_step(x_all[start:start + BATCH], y_all[start:start + BATCH])
        return {"loss": float(loss_mean.result()), "accuracy": float(accuracy.result())}

    def check():
        logs = epoch(_check_steps(profile))
        return {**logs, "params": [to_numpy(w) for w in model.get_weights()]}

    return Prepared(lambda: epoch(STEPS), check=check, units=STEPS)


IMPLS = (
    Impl("numpy", "eager", build_numpy),
    Impl("tensorflow", "function", build_fit),
    Impl("hybridtf", "eager", partial(build_fit, run_eagerly=True)),
    Impl("hybridtf", "function", build_fit),
    Impl("hybridtf", "step", build_step),
)

WORKLOAD = Workload(
    id="K1",
    title="Keras fit of W3's MLP, per train step (batch 64, metrics=['accuracy'])",
    shapes=f"{STEPS} steps of batch {BATCH} per fit",
    tolerance={"loss": 1e-4, "accuracy": 0.02, "params": Tolerance(1e-3, quantile=0.99),
               "*": 1e-4},
    impls=IMPLS,
    notes="TF function / hybridtf function: model.fit (compiled step); hybridtf eager: fit "
          "with run_eagerly=True; hybridtf step: a hand-written loop around a decorated train "
          "step (slicing, loss mean and accuracy included); NumPy: W3's hand-written step.",
)
