"""Trace-cache keys: which calls share a trace (the seed notebook's retracing rules)."""
import collections
import inspect

import numpy as np
import pytest

import hybridtf as tf
from hybridtf.graph import trace_key as tk


def _key(fn, *args, **kwargs):
    return tk.call_key(tk.canonical_arguments(inspect.signature(fn), args, kwargs))


def double(a):
    return a + a


def test_tensors_share_a_key_by_dtype_and_shape():
    # Seed: double(tf.constant(1)) and double(tf.constant(2)) reuse one trace; 1.1 and "a" do not.
    assert _key(double, tf.constant(1)) == _key(double, tf.constant(2))
    assert _key(double, tf.constant(1)) != _key(double, tf.constant(1.1))
    assert _key(double, tf.constant(1)) != _key(double, tf.constant("a"))
    assert _key(double, tf.constant([1, 2])) != _key(double, tf.constant([1, 2, 3]))


def test_numpy_arrays_are_keyed_like_tensors():
    # Seed: f(np.array(2, dtype=np.int32)) reuses the trace made for tf.constant(1, tf.int32).
    assert _key(double, np.array(2, dtype=np.int32)) == _key(double, tf.constant(1))
    assert _key(double, np.ones((2, 3), np.float32)) == _key(double, tf.zeros([2, 3]))
    v = tf.Variable([1.0])
    assert _key(double, v) == _key(double, v) != _key(double, tf.Variable([1.0]))


def test_python_scalars_are_keyed_by_type_and_value():
    # Seed: f(1), f(2), f(1), f(0.1), f(0.2), f(0.1) -> traces for 1, 2, 0.1 and 0.2 only.
    keys = [_key(double, v) for v in (1, 2, 1, 0.1, 0.2, 0.1)]
    assert len(set(keys)) == 4
    assert _key(double, 1) != _key(double, 1.0) != _key(double, True)
    assert _key(double, "relu") == _key(double, "relu")


def test_keyword_arguments_and_defaults_are_canonical():
    def f(x, training=True, *rest, **options):
        return x

    assert _key(f, 1) == _key(f, 1, True) == _key(f, x=1, training=True)
    assert _key(f, 1, training=False) != _key(f, 1)
    assert _key(f, 1, True, 5, b=2, a=1) == _key(f, 1, True, 5, a=1, b=2)
    with pytest.raises(TypeError):
        _key(f)


def test_structures_and_identity():
    point = collections.namedtuple("Point", "x y")
    assert _key(double, [tf.constant(1.0), 2]) == _key(double, [tf.constant(3.0), 2])
    assert _key(double, [1, 2]) != _key(double, (1, 2))
    assert _key(double, {"a": 1, "b": tf.constant(1.0)}) == \
        _key(double, {"b": tf.constant(2.0), "a": 1})
    assert _key(double, point(1, 2)) != _key(double, (1, 2))

    class Opaque:
        __hash__ = None

    one, two = Opaque(), Opaque()
    assert _key(double, one) == _key(double, one) != _key(double, two)


def test_specs_and_relaxing():
    spec_key = tk.key_of(tf.TensorSpec([None], tf.int32))
    assert tk.covers(spec_key, tk.key_of(tf.constant([1, 2])))
    assert not tk.covers(spec_key, tk.key_of(tf.constant([[1, 2]])))
    assert not tk.covers(spec_key, tk.key_of(tf.constant([1.0])))
    relaxed = tk.relax_call(_key(double, tf.zeros([2, 3])), _key(double, tf.zeros([4, 3])))
    assert relaxed == (("a", tk.TensorKey("float32", (None, 3))),)
    assert tk.covers_call(relaxed, _key(double, tf.zeros([7, 3])))
    assert tk.relax_call(_key(double, tf.zeros([2])), _key(double, tf.zeros([2], tf.int32))) \
        is None
    assert tk.relax_call(_key(double, 1), _key(double, 2)) is None
    assert tk.relax(tk.key_of(tf.zeros([2])), tk.key_of(tf.zeros([2, 2]))) == \
        tk.TensorKey("float32", None)


def test_differences_name_the_changed_argument_and_advise():
    def train(num_steps, x):
        return x

    old = _key(train, 10, tf.zeros([2]))
    new = _key(train, 20, tf.zeros([3]))
    lines = tk.differences(old, new)
    assert lines == ["argument 'num_steps': Python int 10 -> Python int 20",
                     "argument 'x': tensor of dtype float32 and shape (2,) -> tensor of dtype "
                     "float32 and shape (3,)"]
    tips = " ".join(tk.advice(old, new))
    assert "tensor instead of a Python number" in tips and "input_signature" in tips
