"""Inputs and initial weights: made once with NumPy from fixed seeds, loaded into every framework.

Each array has its own named stream, so adding an array to one workload never changes another.
"""
import zlib

import numpy as np

SEED = 20261122


def rng(name):
    """A NumPy generator private to ``name``."""
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def uniform(name, shape, low=0.0, high=1.0, dtype=np.float32):
    return rng(name).uniform(low, high, size=shape).astype(dtype)


def labels(name, count, classes):
    return rng(name).integers(0, classes, size=count).astype(np.int32)


def glorot_uniform(name, shape):
    """Keras' default kernel initializer; fans from the last two axes, receptive field in front."""
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return uniform(name, shape, -limit, limit)


def zeros(shape):
    return np.zeros(shape, dtype=np.float32)
