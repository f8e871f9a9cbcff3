"""One rank of the data-parallel tests: ``mpiexec -n 2 python tests/distributed_worker.py
SCENARIO OUT_DIR``.  Each rank writes what it saw to ``OUT_DIR/rank<r>.json``; the test
(tests/test_distribute.py) compares the ranks with each other and with one process trained on
the global batches, computed in the test's own process with the same functions (they take any
strategy, or none).

Scenarios: ``training`` (a decorated step under MultiWorkerMirroredStrategy, Keras fit /
evaluate / predict, checkpoints and saves), ``horovod`` (hybridtf.distribute.mpi), ``misuse``
(mismatched shapes, variables created outside the scope), and the faults ``exit_early``,
``raise``, ``kill``.
"""
import json
import os
import signal
import sys

import numpy as np

import hybridtf as tf
from hybridtf.distribute import distribute_lib
import hybridtf.distribute.mpi as hvd

GLOBAL_BATCH = 8
STEPS = 3
FIT_SAMPLES = 48


def data(samples=GLOBAL_BATCH * STEPS, features=5, classes=3, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.rand(samples, features).astype("float32")
    return x, rng.randint(0, classes, samples).astype("int32")


def make_model(seed, width=4):
    tf.random.set_seed(seed)
    return tf.keras.Sequential([tf.keras.layers.Dense(width, activation="tanh",
                                                      input_shape=(5,)),
                                tf.keras.layers.Dense(3)])


def weights_of(model):
    return [w.numpy().tolist() for w in model.weights]


def train_custom(strategy, seed):
    """A decorated train step run through ``strategy.run`` on a distributed dataset; returns
    the initial weights, the weights after STEPS steps and the losses."""
    x, y = data()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
    with strategy.scope():
        model = make_model(seed)
        model.build((None, 5))
        optimizer = tf.keras.optimizers.SGD(0.5, momentum=0.5)
    initial = weights_of(model)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                            reduction="none")

    def step_fn(inputs):
        xb, yb = inputs
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_fn(yb, model(xb, training=True)),
                                              global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def train_step(inputs):
        per_replica = strategy.run(step_fn, args=(inputs,))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    batches = list(strategy.experimental_distribute_dataset(dataset))
    losses = [float(train_step(batch)) for batch in batches]
    graph = train_step.get_concrete_function(batches[0]).pretty_printed_graph()
    return {"initial": initial, "final": weights_of(model), "losses": losses,
            "all_reduces_in_graph": graph.count("= collective_all_reduce(")}


def train_fit(strategy, seed, shuffle=False):
    """Keras compile / fit / evaluate / predict under ``strategy.scope()``."""
    x, y = data(FIT_SAMPLES)
    with strategy.scope():
        model = make_model(seed)
        model.compile(optimizer=tf.keras.optimizers.Adam(0.05), metrics=["accuracy"],
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=shuffle)
    evaluated = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    predicted = model.predict(x[:10], batch_size=4, verbose=0)
    return {"history": history.history, "final": weights_of(model), "evaluate": evaluated,
            "predict": predicted.tolist()}


def train_horovod(seed):
    """The Horovod-style API: collectives, broadcast_variables, DistributedGradientTape."""
    x, y = data()
    size, rank = hvd.size(), hvd.rank()
    out = {
        "rank": rank, "size": size,
        "allreduce": hvd.allreduce(tf.constant([1.0, 2.0]) * (rank + 1)).numpy().tolist(),
        "allreduce_sum": hvd.allreduce(tf.constant([rank + 1]), op=hvd.Sum).numpy().tolist(),
        "allgather": hvd.allgather(tf.fill([rank + 1, 2], float(rank))).numpy().tolist(),
        "broadcast": hvd.broadcast(tf.constant([float(rank)] * 3), root_rank=1).numpy().tolist(),
    }
    model = make_model(seed + rank)          # different on every rank
    model.build((None, 5))
    out["before_broadcast"] = weights_of(model)
    hvd.broadcast_variables(model.variables, root_rank=0)
    out["initial"] = weights_of(model)
    optimizer = tf.keras.optimizers.SGD(0.5)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    part = GLOBAL_BATCH // size

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for step in range(STEPS):
        start = step * GLOBAL_BATCH + rank * part
        train_step(x[start:start + part], y[start:start + part])
    out["final"] = weights_of(model)
    return out


def save_and_restore(strategy, directory):
    """Checkpoints and saves, called by every rank; then every rank restores them."""
    with strategy.scope():
        model = make_model(7)
        model.build((None, 5))
        model.compile(optimizer="sgd", loss="mse")
    saved = weights_of(model)
    checkpoint = tf.train.Checkpoint(model=model)
    manager = tf.train.CheckpointManager(checkpoint, os.path.join(directory, "managed"),
                                         max_to_keep=1)
    prefix = checkpoint.save(os.path.join(directory, "ckpt", "ckpt"))
    manager.save()
    managed = manager.save()
    model.save(os.path.join(directory, "model.keras"))
    model.save_weights(os.path.join(directory, "model.weights.h5"))
    for weight in model.weights:
        weight.assign(tf.zeros_like(weight))
    checkpoint.restore(prefix)
    from_checkpoint = weights_of(model)
    for weight in model.weights:
        weight.assign(tf.zeros_like(weight))
    checkpoint.restore(manager.latest_checkpoint)
    from_manager = weights_of(model)
    loaded = tf.keras.models.load_model(os.path.join(directory, "model.keras"))
    return {"saved": saved, "from_checkpoint": from_checkpoint, "from_manager": from_manager,
            "loaded": weights_of(loaded), "managed": managed,
            "managed_list": manager.checkpoints, "latest": manager.latest_checkpoint,
            "writes_files": distribute_lib.writes_files()}


def error_text(fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - the test reads the error each rank got
        return f"{type(err).__name__}: {err}"
    return None


def misuse(strategy):
    """Bad use that must raise the same clear error on every rank (and hang none)."""
    rank = strategy.cluster_resolver.task_id
    x, y = data()

    def mismatched_shapes():
        with strategy.scope():
            model = make_model(0, width=4 + rank)     # rank 1's layer is wider
        model.compile(optimizer="sgd",
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=1, verbose=0)

    def outside_scope():
        model = make_model(0)                         # not under strategy.scope()
        model.build((None, 5))
        with strategy.scope():
            optimizer = tf.keras.optimizers.SGD(0.1)

        def step_fn(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(xb)))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        strategy.run(step_fn, args=(x[:4], y[:4]))

    def mismatched_reduce():
        strategy.reduce(tf.distribute.ReduceOp.SUM, tf.zeros([2 + rank]), axis=None)

    return {"mismatched_shapes": error_text(mismatched_shapes),
            "outside_scope": error_text(outside_scope),
            "mismatched_reduce": error_text(mismatched_reduce)}


def fault(scenario, strategy):
    """Rank 1 stops taking part after two steps: it exits, raises, or is killed."""
    x, y = data()
    with strategy.scope():
        model = make_model(0)
        model.compile(optimizer="sgd",
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    for step in range(1000):
        if step == 2:
            # The short limit only once the steps are compiled (a cold cache compiles for long).
            tf.distribute.MultiWorkerMirroredStrategy(
                communication_options=tf.distribute.experimental.CommunicationOptions(
                    timeout_seconds=float(os.environ["WORKER_TIMEOUT"])))
        if step == 2 and strategy.cluster_resolver.task_id == 1:
            sys.stdout.flush()
            if scenario == "exit_early":
                sys.exit(0)
            if scenario == "raise":
                raise RuntimeError("rank 1 failed on purpose")
            os.kill(os.getpid(), signal.SIGKILL)
        model.train_on_batch(x[:GLOBAL_BATCH], y[:GLOBAL_BATCH])
    return {"finished": True}


def main():
    scenario, directory = sys.argv[1], sys.argv[2]
    if scenario == "horovod":
        hvd.init()
        result = train_horovod(seed=3)
        rank = hvd.rank()
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                timeout_seconds=120))
        rank = strategy.cluster_resolver.task_id
        if scenario == "training":
            result = {"replicas": strategy.num_replicas_in_sync,
                      "threads": tf.config.threading.get_intra_op_parallelism_threads(),
                      "custom": train_custom(strategy, seed=11 + rank),
                      "fit": train_fit(strategy, seed=5 + rank),
                      "fit_shuffled": train_fit(strategy, seed=5, shuffle=True),
                      "saves": save_and_restore(strategy, directory)}
        elif scenario == "misuse":
            result = misuse(strategy)
        else:
            result = fault(scenario, strategy)
    with open(os.path.join(directory, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
