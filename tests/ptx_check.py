"""Compiles hybridtf's generated CUDA kernels for a real GPU, without one: run by
tests/test_cuda_ptx.py in a process without the CUDA simulator.

Every elementwise op (each dtype it takes, broadcast against a second shape) is traced into a
decorated function; the CUDA compiler renders its fused kernel, which Numba's CUDA target then
compiles to PTX with libNVVM.  The simulator runs kernels as Python and cannot catch what only
the real target rejects (NumPy functions on scalars, allocation, builtins it cannot type).
Numba asks the current GPU for its compute capability when it compiles a device function; with
no GPU, that one call is answered here.  Prints one line per kernel; exits non-zero on the first
failure.
"""
import sys
from types import SimpleNamespace

import numba.cuda.dispatcher
import numpy as np
from numba import cuda, types
from numba.np.numpy_support import from_dtype

CAPABILITY = (8, 0)
numba.cuda.dispatcher.get_current_device = lambda: SimpleNamespace(
    compute_capability=CAPABILITY)

import hybridtf as tf  # noqa: E402
from hybridtf import compiler  # noqa: E402
from hybridtf.eager.execute import execute1  # noqa: E402
from hybridtf.registry import OPS  # noqa: E402
from ops.codegen import load_source  # noqa: E402
from ops.elementwise import WIDENED  # noqa: E402


def array_type(tensor):
    """The Numba type of a C-contiguous device array for ``tensor`` (rank-0 values travel as
    arrays of one element)."""
    rank = len(tensor._static_shape) or 1
    return types.Array(from_dtype(np.dtype(tensor._static_dtype)), rank, "C")


def compile_kernels(graph):
    rendered = compiler.prepare(graph, "cuda")
    module = load_source("cudagraph", rendered.source)
    for kernel in rendered.kernels.values():
        signature = [array_type(t) for t in kernel.args]
        signature += [types.Array(from_dtype(np.dtype(p[0]._static_dtype)), 1, "C")
                      for p in kernel.packs]
        signature += [array_type(t) for t in kernel.outputs]
        cuda.compile_ptx(getattr(module, kernel.name).py_func, tuple(signature),
                         cc=CAPABILITY)
    return len(rendered.kernels)


def main():
    count = 0
    for name, op in sorted(OPS.items()):
        if op.kind != "elementwise" or op.scalar is None:
            continue
        for dtype in op.scalar.dtypes:
            if dtype in WIDENED:   # float16: not fused (computed through float32 kernels)
                continue
            specs = [tf.TensorSpec((2, 3), dtype), tf.TensorSpec((3,), dtype),
                     tf.TensorSpec((), dtype)][:op.scalar.arity]
            if op.scalar.arity == 3:   # select: a bool condition first
                specs[0] = tf.TensorSpec((2, 3), "bool")

            def apply(*inputs, op=op):
                return execute1(op, list(inputs), None)
            graph = tf.function(apply).get_concrete_function(*specs).graph
            count += compile_kernels(graph)
            print(f"ok {name} {dtype}", flush=True)
    count += compile_kernels(_train_step_graph())
    print("ok a train step")
    print(f"compiled {count} fused kernels to PTX for compute capability {CAPABILITY}")


def _train_step_graph():
    """A dense layer's train step: the fused groups of a forward pass, a backward pass and the
    optimizer's update."""
    w = tf.Variable(np.ones((5, 4), np.float32))
    b = tf.Variable(np.zeros(4, np.float32))

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.nn.relu(tf.matmul(x, w) + b)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        for v, g in zip([w, b], tape.gradient(loss, [w, b])):
            v.assign_sub(0.1 * g)
        return loss
    return step.get_concrete_function(tf.TensorSpec((8, 5), tf.float32),
                                      tf.TensorSpec((8,), tf.int32)).graph


if __name__ == "__main__":
    sys.exit(main())
