"""``keras.utils.set_random_seed``: one seed for Python, NumPy and hybridtf."""
import random

import numpy as np

from hybridtf.api import random_ops


def set_random_seed(seed):
    """Seeds Python's ``random``, NumPy's global generator and ``tf.random.set_seed`` with
    ``seed``, so that a program's random values (weight initializers, dropout, shuffling)
    repeat from run to run."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed!r} "
                         f"(of type {type(seed)})")
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"set_random_seed: seed must be non-negative, got {seed}.")
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    random_ops.set_seed(seed)
