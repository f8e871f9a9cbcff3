"""D0: one epoch of ``from_tensor_slices((X, y)).shuffle(10000).batch(50).map(normalise)
.prefetch(2)`` over 20,000 MNIST-sized uint8 images.

The pipeline is built once; a timed call runs one epoch (a new pass, reshuffled) and touches
every batch.  Eager variants iterate in Python (``for x, y in ds``); the decorated ones loop
over the dataset inside the decorated function.  The shuffle orders differ between frameworks,
so the agreement check compares what an epoch delivers, whatever its order: the sum of the
normalised images, the count of each label, the number of batches and of examples.
"""
from functools import partial

import numpy as np

from benchmarks import data
from benchmarks.frameworks import require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload

IMAGES = 20000
IMAGE_SHAPE = (28, 28)
CLASSES = 10
BUFFER = 10000
BATCH = 50
PREFETCH = 2


def inputs():
    images = data.rng("D0.images").integers(0, 256, (IMAGES,) + IMAGE_SHAPE, dtype=np.uint8)
    return images, data.labels("D0.labels", IMAGES, CLASSES)


def _summary(pixel_sum, label_counts, batches, examples):
    return {"pixel_sum": pixel_sum, "label_counts": label_counts,
            "batches": np.asarray(batches, np.float64), "examples": np.asarray(examples,
                                                                               np.float64)}


def build_numpy(np_module, profile):
    """The reference: a shuffled order, batches of 50, normalised."""
    images, labels = inputs()
    order_rng = data.rng("D0.order")

    def epoch():
        order = order_rng.permutation(IMAGES)
        pixel_sum = np.zeros(IMAGE_SHAPE, np.float64)
        counts = np.zeros(CLASSES, np.float64)
        batches = 0
        for start in range(0, IMAGES, BATCH):
            index = order[start:start + BATCH]
            x = images[index].astype(np.float32) / np.float32(255.0)
            pixel_sum += x.astype(np.float64).sum(axis=0)
            counts += np.bincount(labels[index], minlength=CLASSES)
            batches += 1
        return _summary(pixel_sum, counts, batches, IMAGES)
    return Prepared(epoch)


def build_tf(tf, profile, decorated):
    """TensorFlow and hybridtf: the same pipeline and loops under either module."""
    require(tf, "data.Dataset.from_tensor_slices", "data.Dataset.shuffle", "data.Dataset.batch",
            "data.Dataset.map", "data.Dataset.prefetch")
    images, labels = inputs()

    def normalise(x, y):
        return tf.cast(x, tf.float32) / 255.0, y
    dataset = (tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(BUFFER)
               .batch(BATCH).map(normalise).prefetch(PREFETCH))

    def epoch():
        examples = tf.constant(0)
        for x, y in dataset:
            examples += tf.shape(x)[0]
        return examples

    def summary():
        pixel_sum = tf.zeros(IMAGE_SHAPE, tf.float64)
        counts = tf.zeros([CLASSES], tf.float32)
        batches = tf.constant(0)
        examples = tf.constant(0)
        for x, y in dataset:
            pixel_sum += tf.reduce_sum(tf.cast(x, tf.float64), axis=0)
            counts += tf.reduce_sum(tf.one_hot(y, CLASSES), axis=0)
            batches += 1
            examples += tf.shape(x)[0]
        return pixel_sum, counts, batches, examples
    if decorated:
        require(tf, "function")
        epoch, summary = tf.function(epoch), tf.function(summary)
    return Prepared(epoch, check=lambda: _summary(*(np.asarray(v) for v in summary())))


WORKLOAD = Workload(
    id="D0",
    title="tf.data epoch: from_tensor_slices.shuffle(10000).batch(50).map(normalise).prefetch(2)",
    shapes="20,000 x 28x28 uint8 images, batches of 50",
    tolerance=1e-6,
    impls=(
        Impl("numpy", "eager", build_numpy),
        Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
        Impl("tensorflow", "function", partial(build_tf, decorated=True)),
        Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
        Impl("hybridtf", "function", partial(build_tf, decorated=True)),
    ),
    notes="Eager variants iterate the dataset in Python; decorated ones loop over it inside "
          "the decorated function. Each call is one epoch (400 batches), reshuffled.",
)
