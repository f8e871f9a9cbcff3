"""Compiles hybridtf's generated CUDA kernels for a real GPU, without one: run by
tests/test_cuda_ptx.py in a process without the CUDA simulator.

Every elementwise op (each dtype it takes, broadcast against a second shape) is traced into a
decorated function; the CUDA compiler renders its fused kernel, which Numba's CUDA target then
compiles to PTX with libNVVM; so are a train step's kernels and a few loops and branches that
run as one kernel each, and the random ops' kernels (their Philox functions are the CPU's,
inlined).  The simulator runs kernels as Python and cannot catch what only
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


def compile_kernels(graph, loops=0):
    """Compiles the graph's fused kernels, and its loops and branches rendered as one kernel
    each (``loops``: how many the graph must have)."""
    rendered = compiler.prepare(graph, "cuda")
    module = load_source("cudagraph", rendered.source)
    for kernel in rendered.kernels.values():
        signature = [array_type(t) for t in kernel.args]
        signature += [types.Array(from_dtype(np.dtype(p[0]._static_dtype)), 1, "C")
                      for p in kernel.packs]
        signature += [array_type(t) for t in kernel.outputs]
        cuda.compile_ptx(getattr(module, kernel.name).py_func, tuple(signature),
                         cc=CAPABILITY)
    if len(rendered.loops) != loops:
        raise AssertionError(f"{graph.name}: {len(rendered.loops)} loop kernels, not {loops}")
    for loop in rendered.loops.values():
        cuda.compile_ptx(getattr(module, loop.kernel.name).py_func, loop.signature(),
                         cc=CAPABILITY)
    return len(rendered.kernels) + len(rendered.loops)


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
    for name, graph in _loop_graphs():
        count += compile_kernels(graph, loops=1)
        print(f"ok loop: {name}", flush=True)
    for name in _random_kernels():
        print(f"ok random: {name}", flush=True)
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


def _loop_graphs():
    """(name, graph) of loops and branches that each run as one kernel: the W5 loop, a loop of
    two values of different dtypes with maximum_iterations, integer and bool reductions along
    axes, a cond, and control flow nested both ways."""
    f32 = tf.float32

    def w5(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    def two_values(x, n):
        return tf.while_loop(lambda x, n: tf.reduce_max(x) > 0.1,
                             lambda x, n: (x * 0.5 - tf.reduce_mean(x, axis=0), n + 1),
                             (x, n), maximum_iterations=7)

    def integer_axes(k, flags):
        def body(k, flags):
            return k + tf.reduce_prod(k, axis=1, keepdims=True) % 3, tf.logical_not(flags)
        return tf.while_loop(
            lambda k, flags: tf.logical_and(tf.reduce_sum(k) < 50, tf.reduce_any(flags)),
            body, (k, flags))

    def branches(p, x):
        return tf.cond(p, lambda: tf.reduce_min(x, axis=1), lambda: tf.reduce_sum(tf.exp(x), 1))

    def nested(x):
        def body(x):
            inner = tf.while_loop(lambda y: tf.reduce_sum(y) > 2.0, lambda y: y * 0.5, (x,))[0]
            return tf.cond(tf.reduce_all(inner > 0), lambda: inner - 1.0, lambda: -inner)
        return tf.while_loop(lambda x: tf.reduce_mean(x) > -3.0, body, (x,),
                             maximum_iterations=4)

    specs = {w5: [tf.TensorSpec((5,), f32)],
             two_values: [tf.TensorSpec((3, 4), tf.float64), tf.TensorSpec((), tf.int32)],
             integer_axes: [tf.TensorSpec((2, 3), tf.int32), tf.TensorSpec((4,), tf.bool)],
             branches: [tf.TensorSpec((), tf.bool), tf.TensorSpec((2, 3), f32)],
             nested: [tf.TensorSpec((6,), f32)]}
    for fn, signature in specs.items():
        yield fn.__name__, tf.function(fn).get_concrete_function(*signature).graph


def _random_kernels():
    """Compiles the random ops' kernels, which call the CPU's Philox functions (inlined where
    they are called) as device functions; yields each one's name."""
    from ops.cuda import random as cuda_random
    u64, f32, f64 = types.uint64, types.float32, types.float64
    for name, dtype in [("_uniform_f32_kernel", f32), ("_uniform_f64_kernel", f64),
                        ("_normal_4_kernel", f32), ("_normal_2_kernel", f64),
                        ("_truncated_normal_kernel", f32)]:
        cuda.compile_ptx(getattr(cuda_random, name).py_func,
                         (dtype[::1], dtype, u64, u64, u64, u64), cc=CAPABILITY)
        yield name
    cuda.compile_ptx(cuda_random._uniform_int_kernel.py_func,
                     (u64[::1], u64, u64, u64, u64, u64, u64, u64), cc=CAPABILITY)
    yield "_uniform_int_kernel"


if __name__ == "__main__":
    sys.exit(main())
