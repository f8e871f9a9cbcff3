"""``tf.random``: uniform, normal and truncated normal values with TF's seeding rules.

TF's rules: with neither a global seed (``set_seed``) nor an op seed, values differ on every run;
with a global seed, every op gets a distinct seed from a counter, so a program's sequence of
random values repeats after ``set_seed``; an op-level seed fixes the stream of that op, and
successive calls with the same seeds still give new values.
"""
import os
import threading

import numpy as np

from hybridtf.api import math_ops
from hybridtf.api.array_ops import _creation_dims
from hybridtf.eager.execute import execute1
from hybridtf.framework import dtypes
from hybridtf.registry import checks
from hybridtf.registry import random as RND

DEFAULT_GRAPH_SEED = 87654321
_MASK63 = (1 << 63) - 1
_state = threading.local()


def _seed_state():
    if not hasattr(_state, "global_seed"):
        _state.global_seed = None
        _state.op_counter = 0
        _state.calls = {}
    return _state


def set_seed(seed):
    """Sets the global random seed; the sequence of random values restarts."""
    state = _seed_state()
    state.global_seed = None if seed is None else checks.integer("random.set_seed", seed, "seed")
    state.op_counter = 0
    state.calls = {}


def get_seed(op_seed):
    """The (global, op) seed pair an op would use, following TF's rules."""
    state = _seed_state()
    if state.global_seed is None and op_seed is None:
        return None, None
    global_seed = DEFAULT_GRAPH_SEED if state.global_seed is None else state.global_seed
    if op_seed is None:
        op_seed = state.op_counter
        state.op_counter += 1
    return global_seed, checks.integer("random", op_seed, "seed")


def seeded_stream(seed):
    """The (seed, counter) key of a random op's next draw, by TF's seeding rules: ``seed`` is
    the op seed (None: the global seed's counter picks one, or, with no global seed either, a
    fresh random key); successive draws of one (global, op) seed pair advance the counter, so
    they differ and the sequence repeats after ``set_seed``."""
    global_seed, op_seed = get_seed(seed)
    if global_seed is None:
        return int.from_bytes(os.urandom(8), "little") & _MASK63, 0
    state = _seed_state()
    key = (global_seed, op_seed)
    count = state.calls.get(key, 0)
    state.calls[key] = count + 1
    mixed = (global_seed * 0x9E3779B97F4A7C15 + op_seed * 0xBF58476D1CE4E5B9) & _MASK63
    return mixed, count


def _shape(shape, op_name):
    return tuple(_creation_dims(shape, op_name))


def _float(value):
    return float(np.asarray(value))


def _is_scalar(value):
    return np.ndim(np.asarray(value)) == 0


def _broadcast_affine(base, scale, shift, dtype):
    """base * scale + shift with tensor-valued (broadcasting) parameters, as TF computes it."""
    scale = math_ops.cast(scale, dtype)
    shift = math_ops.cast(shift, dtype)
    return math_ops.add(math_ops.multiply(base, scale), shift)


def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Values uniformly distributed in [minval, maxval) (maxval defaults to 1 for floats)."""
    dtype = dtypes.as_dtype(dtype)
    shape = _shape(shape, "random.uniform")
    seed_value, counter = seeded_stream(seed)
    if dtype.is_integer:
        if maxval is None:
            checks.fail("random.uniform", f"maxval must be given for integer dtype {dtype.name}.")
        low = checks.integer("random.uniform", minval, "minval")
        high = checks.integer("random.uniform", maxval, "maxval")
        if low >= high:
            checks.fail("random.uniform", f"Need minval < maxval, got {low} >= {high}.")
        return execute1(RND.RANDOM_UNIFORM_INT, [], {
            "shape": shape, "dtype": dtype.as_numpy_dtype, "minval": low, "maxval": high,
            "seed": seed_value, "counter": counter})
    if not (_is_scalar(minval) and _is_scalar(1.0 if maxval is None else maxval)):
        base = execute1(RND.RANDOM_UNIFORM, [], {
            "shape": shape, "dtype": dtype.as_numpy_dtype, "scale": 1.0, "shift": 0.0,
            "seed": seed_value, "counter": counter})
        high = math_ops.cast(1.0 if maxval is None else maxval, dtype)
        low = math_ops.cast(minval, dtype)
        return _broadcast_affine(base, math_ops.subtract(high, low), low, dtype)
    low = _float(minval)
    high = 1.0 if maxval is None else _float(maxval)
    return execute1(RND.RANDOM_UNIFORM, [], {
        "shape": shape, "dtype": dtype.as_numpy_dtype, "scale": high - low, "shift": low,
        "seed": seed_value, "counter": counter})


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Values from a normal distribution."""
    dtype = dtypes.as_dtype(dtype)
    seed_value, counter = seeded_stream(seed)
    if not (_is_scalar(mean) and _is_scalar(stddev)):
        base = execute1(RND.RANDOM_NORMAL, [], {
            "shape": _shape(shape, "random.normal"), "dtype": dtype.as_numpy_dtype, "scale": 1.0,
            "shift": 0.0, "seed": seed_value, "counter": counter})
        return _broadcast_affine(base, stddev, mean, dtype)
    return execute1(RND.RANDOM_NORMAL, [], {
        "shape": _shape(shape, "random.normal"), "dtype": dtype.as_numpy_dtype,
        "scale": _float(stddev), "shift": _float(mean), "seed": seed_value, "counter": counter})


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal values re-drawn when more than two standard deviations from the mean."""
    dtype = dtypes.as_dtype(dtype)
    seed_value, counter = seeded_stream(seed)
    if not (_is_scalar(mean) and _is_scalar(stddev)):
        base = execute1(RND.TRUNCATED_NORMAL, [], {
            "shape": _shape(shape, "random.truncated_normal"), "dtype": dtype.as_numpy_dtype,
            "scale": 1.0, "shift": 0.0, "seed": seed_value, "counter": counter})
        return _broadcast_affine(base, stddev, mean, dtype)
    return execute1(RND.TRUNCATED_NORMAL, [], {
        "shape": _shape(shape, "random.truncated_normal"), "dtype": dtype.as_numpy_dtype,
        "scale": _float(stddev), "shift": _float(mean), "seed": seed_value, "counter": counter})
