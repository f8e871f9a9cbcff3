"""Checking tape gradients against float64 central finite differences, and hypothesis helpers."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf


def numeric_gradients(f, arrays, eps=1e-6):
    """d sum(f(*arrays) * weights) / d arrays by central differences (float64).

    ``f`` maps NumPy arrays to a NumPy array; a fixed random weighting of the outputs makes the
    check sensitive to every output element, not just their sum.
    """
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    out = np.asarray(f(*arrays), dtype=np.float64)
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=out.shape)
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        flat = a.reshape(-1)
        gflat = g.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            plus = np.sum(np.asarray(f(*arrays), dtype=np.float64) * weights)
            flat[j] = old - eps
            minus = np.sum(np.asarray(f(*arrays), dtype=np.float64) * weights)
            flat[j] = old
            gflat[j] = (plus - minus) / (2 * eps)
        grads.append(g)
    return grads, weights


def tape_gradients(f, arrays, weights):
    """Gradients of sum(f(*tensors) * weights) with a GradientTape (float64)."""
    tensors = [tf.constant(np.asarray(a, dtype=np.float64)) for a in arrays]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        out = f(*tensors)
        total = tf.reduce_sum(out * tf.constant(weights))
    return tape.gradient(total, tensors)


def check_gradients(tf_fn, np_fn, arrays, rtol=1e-5, atol=1e-6):
    """Asserts the tape's gradients of ``tf_fn`` match finite differences of ``np_fn``."""
    expected, weights = numeric_gradients(np_fn, arrays)
    actual = tape_gradients(tf_fn, arrays, weights)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a is not None, f"gradient {i} is None"
        assert a.shape == e.shape, f"gradient {i}: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a.numpy(), e, rtol=rtol, atol=atol,
                                   err_msg=f"gradient w.r.t. input {i}")


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def floats_array(shape, dtype=np.float64, low=-3.0, high=3.0):
    return hnp.arrays(dtype, shape, elements=st.floats(low, high, width=32 if dtype == np.float32
                                                       else 64))


def broadcastable_pair(max_dims=3, max_side=4, min_side=1):
    """Two shapes that broadcast together (including size-1 and, optionally, size-0 sides)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims,
                                             min_side=min_side, max_side=max_side)
