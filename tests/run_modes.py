"""Running a function of tensors eagerly and inside ``tf.function``, for op tests that check the
three agree: eagerly, traced for the inputs' shapes, and traced with every dimension unknown
(an input signature of Nones, as for ops whose output sizes depend on values)."""
import numpy as np

import hybridtf as tf
from hybridtf.framework import nest


def _arrays(result):
    return [np.asarray(t) for t in nest.flatten(result)]


def _lowered(function, tensors):
    source = function.get_concrete_function(*tensors).kernel_source
    assert "could not lower" not in source, source.splitlines()[0]


def _unknown_spec(array, keep_last):
    shape = [None] * np.ndim(array)
    if keep_last:
        shape[-1] = np.shape(array)[-1]
    return tf.TensorSpec(shape, tf.constant(array).dtype)


def in_all_modes(fn, *arrays, keep_last=()):
    """``fn``'s flattened results (NumPy arrays) for each way of running it, after checking that
    the traced runs agree with the eager one in value, dtype and shape, and that their graphs
    were compiled (not left to the graph interpreter).

    ``keep_last``: the positions of arguments whose last dimension stays known in the trace with
    unknown dimensions (index tuples, whose length an op needs while tracing).
    """
    tensors = [tf.constant(a) for a in arrays]
    eager = _arrays(fn(*tensors))
    static = tf.function(fn)
    unknown = tf.function(fn, input_signature=[
        _unknown_spec(a, n in keep_last) for n, a in enumerate(arrays)])
    for function in (static, unknown):
        traced = _arrays(function(*tensors))
        _lowered(function, tensors)
        assert len(traced) == len(eager)
        for t, e in zip(traced, eager):
            assert t.dtype == e.dtype and t.shape == e.shape, (t.dtype, t.shape, e.dtype, e.shape)
            np.testing.assert_array_equal(t, e)
    return eager
