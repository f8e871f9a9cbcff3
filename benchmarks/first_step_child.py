"""One process of C2: ``python -m benchmarks.first_step_child FRAMEWORK [--batch-size 50]
[--conv2-filters 64] [--dense-units 1024] [--eager-steps N]``.

It runs the seed CNN of ``examples/mnist_cnn.py`` (the example's own ``CNN`` and
``make_train_step``) as the example does: import the framework, build the model and the Adam
optimizer, seed, then call the decorated train step on a batch of NumPy arrays.  It times the
first call (trace, the layers' and the optimizer's variables, compiling or interpreting, the
step itself) and the second; with ``--eager-steps N``, also N calls of the same step
undecorated (after one untimed call): the steady eager step.

FRAMEWORK is ``hybridtf``, or ``tensorflow``: the example then runs with ``tf`` bound to
TensorFlow (the suite's TF-style code is written once).  The batch comes from
``benchmarks.data``.  Prints one line ``BENCHMARK-RESULT <json>`` (see
``benchmarks.subprocesses``).
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

from benchmarks.subprocesses import MARKER, REPO_ROOT

EXAMPLE = os.path.join(REPO_ROOT, "examples", "mnist_cnn.py")
CLASSES = 10


def load_example(tf):
    """The example's module, its ``import hybridtf as tf`` bound to ``tf``."""
    spec = importlib.util.spec_from_file_location("mnist_cnn", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("hybridtf")
    sys.modules["hybridtf"] = tf
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["hybridtf"]
        else:
            sys.modules["hybridtf"] = saved
    return module


def batch(size):
    from benchmarks import data
    return (data.uniform("C2.x", (size, 28, 28, 1)),
            data.labels("C2.y", size, CLASSES))


def measure(framework, batch_size, conv2_filters, dense_units, eager_steps):
    from benchmarks import frameworks
    import numpy as np
    start = time.perf_counter()
    tf = frameworks.load(framework)
    example = load_example(tf)
    imported = time.perf_counter()
    np.random.seed(0)
    tf.random.set_seed(0)
    model = example.CNN(conv2_filters=conv2_filters, dense_units=dense_units)
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
    train_one_step = example.make_train_step(model, optimizer)
    x, y = batch(batch_size)
    built = time.perf_counter()
    first_loss = float(train_one_step(x, y))
    first = time.perf_counter()
    float(train_one_step(x, y))
    second = time.perf_counter()
    result = {"import_s": imported - start, "first_step_s": first - built,
              "second_step_s": second - first, "first_loss": first_loss}
    if eager_steps:
        eager = train_one_step.python_function
        float(eager(x, y))
        if framework == "hybridtf":   # a steady step: the kernels its first call deferred, ready
            from ops import deferred_compiles
            deferred_compiles.wait()
        times = []
        for _ in range(eager_steps):
            begin = time.perf_counter()
            float(eager(x, y))
            times.append(time.perf_counter() - begin)
        result["eager_step_s"] = statistics.median(times)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_step_child")
    parser.add_argument("framework", choices=("hybridtf", "tensorflow"))
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--conv2-filters", type=int, default=64)
    parser.add_argument("--dense-units", type=int, default=1024)
    parser.add_argument("--eager-steps", type=int, default=0)
    args = parser.parse_args(argv)

    from benchmarks.records import child_result
    result = child_result(args.framework, "function", lambda: measure(
        args.framework, args.batch_size, args.conv2_filters, args.dense_units, args.eager_steps))
    sys.stdout.flush()
    print(MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
