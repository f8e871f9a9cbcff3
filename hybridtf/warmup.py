"""``python -m hybridtf.warmup``: compiles hybridtf's kernel library into the kernel cache now.

Numba compiles a kernel the first time it meets its argument types, and hybridtf keeps what it
compiled in its kernel cache (``HYBRIDTF_CACHE_DIR``), so only a fresh cache pays: the first
steps of the first program after an install wait for the kernels they use. This command pays
that once, up front, for the common dtypes: the elementwise kernels of every elementwise op, and
the matrix products, convolutions (each algorithm), pooling, softmax and cross-entropy,
reductions, shape and index ops, random ops and optimizer updates, forward and backward, and the
loops the kernel threads wait in.

    python -m hybridtf.warmup [--dtypes float32,int32,int64,bool] [--quiet]

It takes a few minutes on a fresh cache and seconds on a warm one. The fused kernels of your
own decorated functions are not made here: they depend on your graphs, and compile in the
background while a new trace runs on the interpreter (see the README).
"""
import argparse
import sys

import numpy as np
from tqdm.auto import tqdm

from hybridtf import keras
from hybridtf.api import array_ops, math_ops, nn_ops, random_ops, sort_ops
from hybridtf.eager.backprop import GradientTape
from hybridtf.framework.constant_op import constant
from hybridtf.framework.variables import Variable
from ops import compile_notice, deferred_compiles, elementwise, linalg, threads

DEFAULT_DTYPES = ("float32", "int32", "int64", "bool")


def elementwise_tasks(dtypes):
    """(description, callable) per elementwise op and dtype: its eager ufunc, and for binary
    ops on floats the array-with-scalar loops."""
    tasks = []
    for name, op in sorted(elementwise.SCALAR_OPS.items()):
        for dtype in dtypes:
            if dtype in op.dtypes:
                tasks.append((f"{name} {dtype}", lambda name=name, dtype=dtype:
                              elementwise.ufunc(name, dtype)))
    return tasks


def _images(batch, size, channels):
    return constant(np.random.default_rng(0).random((batch, size, size, channels), np.float32))


def _gradients(function, *variables):
    with GradientTape() as tape:
        loss = math_ops.reduce_sum(function())
    return tape.gradient(loss, list(variables))


# (kernel size, image size, stride, channels in, channels out): the algorithm a convolution
# takes depends on all of them (``ops.nn.conv``); these reach each one, forward and backward.
CONVOLUTIONS = (
    (1, 8, 1, 3, 4),     # im2col
    (3, 6, 1, 16, 16),   # Winograd 3x3
    (5, 6, 1, 8, 8),     # Winograd 5x5
    (3, 6, 1, 48, 4),    # shifted products (the filter's gradient: im2col)
    (3, 6, 1, 8, 4),     # the filter's gradient by shifted products
    (3, 9, 2, 3, 4),     # strided: im2col
    (7, 12, 1, 3, 4),
)


def _convolutions():
    for kernel, size, stride, channels_in, channels_out in CONVOLUTIONS:
        x = Variable(_images(2, size, channels_in))
        w = Variable(np.full((kernel, kernel, channels_in, channels_out), 0.1, np.float32))
        _gradients(lambda: nn_ops.conv2d(x, w, stride, "SAME"), x, w)
        _gradients(lambda: nn_ops.conv2d(x, w, stride, "VALID"), x, w)


def _pooling():
    x = Variable(_images(2, 8, 3))
    _gradients(lambda: nn_ops.max_pool2d(x, 2, 2, "VALID"), x)
    _gradients(lambda: nn_ops.avg_pool2d(x, 3, 1, "SAME"), x)


def _products():
    for shape_a, shape_b in (((8, 5), (5, 3)), ((2, 8, 5), (2, 5, 3))):
        a = Variable(np.ones(shape_a, np.float32))
        b = Variable(np.ones(shape_b, np.float32))
        _gradients(lambda: math_ops.matmul(a, b), a, b)
    math_ops.matmul(constant(np.ones((4, 3), np.int32)), constant(np.ones((3, 2), np.int32)))
    for dtype in (np.float32, np.float64):   # the form compiled plans call inside part kernels
        linalg.matmul_rows_kernel(np.ones((4, 3), dtype), np.ones((3, 2), dtype), False, False,
                                  0, 4, np.empty((4, 2), dtype))
        # the form of one product on the tiles, in parts the kernel threads run
        linalg.tiled_product(np.ones((1, 8, 32), dtype), np.ones((1, 32, 32), dtype), False,
                             False, np.empty((1, 8, 32), dtype), 32)


def _logits():
    logits = Variable(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5))
    labels = constant(np.array([0, 1, 2, 3], np.int32))
    _gradients(lambda: nn_ops.softmax(logits), logits)
    _gradients(lambda: nn_ops.log_softmax(logits), logits)
    _gradients(lambda: nn_ops.sparse_softmax_cross_entropy_with_logits(labels, logits), logits)
    _gradients(lambda: nn_ops.softmax_cross_entropy_with_logits(nn_ops.softmax(logits), logits),
               logits)
    _gradients(lambda: nn_ops.sigmoid_cross_entropy_with_logits(
        nn_ops.softmax(logits), logits), logits)


def _reductions():
    for dtype in (np.float32, np.int32, np.int64):
        x = constant(np.arange(24).reshape(2, 3, 4).astype(dtype))
        for reduce in (math_ops.reduce_sum, math_ops.reduce_max, math_ops.reduce_min,
                       math_ops.reduce_prod):
            for axis in (None, 0, -1, (0, 2)):
                reduce(x, axis=axis)
        math_ops.argmax(x, axis=-1)
        math_ops.argmin(x, axis=0)
        math_ops.cumsum(x, axis=1)
    x = Variable(np.ones((2, 3, 4), np.float32))
    _gradients(lambda: math_ops.reduce_mean(x, axis=-1) * math_ops.reduce_max(x, axis=-1), x)


def _shapes_and_indices():
    x = Variable(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    indices = constant(np.array([2, 0], np.int32))

    def shaped():
        parts = [array_ops.transpose(x, [2, 0, 1]), array_ops.reshape(x, [4, 6]),
                 array_ops.concat([x, x], axis=1), array_ops.gather(x, indices, axis=2),
                 array_ops.pad(x, [[0, 0], [1, 1], [0, 2]]), array_ops.tile(x, [1, 2, 1]),
                 array_ops.slice(x, [0, 1, 1], [2, 2, 2]), array_ops.stack([x, x]),
                 math_ops.where(x > 3.0, x, -x)]
        return math_ops.add_n([math_ops.reduce_sum(p) for p in parts])
    _gradients(shaped, x)
    array_ops.one_hot(indices, 5)
    for dtype in ("float32", "int32", "int64", "bool", "float64"):
        math_ops.cast(x, dtype)
    sort_ops.sort(x, axis=-1)
    sort_ops.argsort(x, axis=-1)


def _random():
    for dtype in ("float32", "float64"):
        random_ops.uniform([3, 4], dtype=dtype, seed=1)
        random_ops.normal([3, 4], dtype=dtype, seed=1)
        random_ops.truncated_normal([3, 4], dtype=dtype, seed=1)
    nn_ops.dropout(constant(np.ones((4, 4), np.float32)), 0.5, seed=1)


def _optimizers():
    for optimizer in (keras.optimizers.SGD(0.1, momentum=0.9), keras.optimizers.Adam(),
                      keras.optimizers.RMSprop(), keras.optimizers.Adagrad()):
        variable = Variable(np.ones((3, 2), np.float32))
        optimizer.apply_gradients([(constant(np.full((3, 2), 0.5, np.float32)), variable)])


LIBRARY_TASKS = (("kernel threads", threads.prepare), ("convolutions", _convolutions),
                 ("pooling", _pooling),
                 ("matrix products", _products), ("softmax and cross-entropy", _logits),
                 ("reductions", _reductions), ("shape and index ops", _shapes_and_indices),
                 ("random ops", _random), ("optimizer updates", _optimizers))


def warm_up(dtypes=DEFAULT_DTYPES, progress=True):
    """Compiles the kernel library for ``dtypes`` into the kernel cache; returns the number of
    tasks run."""
    tasks = elementwise_tasks(dtypes) + list(LIBRARY_TASKS)
    bar = tqdm(tasks, desc="hybridtf: compiling kernels", unit="kernel", disable=not progress)
    # the bar says what compiles, and each task compiles now, not in the background
    with compile_notice.silenced(), deferred_compiles.none_deferred():
        for description, task in bar:
            bar.set_postfix_str(description, refresh=False)
            task()
    return len(tasks)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hybridtf.warmup",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES),
                        help="comma-separated dtypes of the elementwise kernels "
                             f"(default: {','.join(DEFAULT_DTYPES)})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    known = set(elementwise.NUMERIC + elementwise.BOOL)
    unknown = [d for d in dtypes if d not in known]
    if unknown:
        parser.error(f"unknown dtypes {unknown}; choose from {sorted(known)}")
    count = warm_up(dtypes, progress=not args.quiet)
    if not args.quiet:
        print(f"hybridtf: {count} kernel groups compiled and cached.", file=sys.stderr)


if __name__ == "__main__":
    main()
