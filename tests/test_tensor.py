"""Tensors, constants, dtypes, shapes, variables and Python operators."""
import copy
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from hybridtf.framework import nest


# ---- dtypes ------------------------------------------------------------------------------------
def test_dtypes_compare_with_numpy_and_names():
    assert tf.float32 == np.float32 and tf.float32 == "float32" and tf.float32 != tf.float64
    assert tf.float32.as_numpy_dtype is np.float32
    assert tf.as_dtype(np.int64) is tf.int64 and tf.as_dtype("double") is tf.float64
    assert tf.float32.is_floating and tf.int32.is_integer and tf.bool.is_bool
    assert tf.int8.min == -128 and tf.uint8.max == 255
    assert repr(tf.float32) == "tf.float32" and tf.float32.name == "float32"
    assert {tf.float32: 1}[tf.as_dtype("float32")] == 1
    with pytest.raises(TypeError):
        tf.as_dtype("float33")


# ---- constant and convert_to_tensor -------------------------------------------------------------
@pytest.mark.parametrize("value, dtype", [
    (1.0, tf.float32), (1, tf.int32), (True, tf.bool), ([1, 2], tf.int32),
    ([1, 2.5], tf.float32), ([[True]], tf.bool), (2 ** 40, tf.int64),
    (np.float64(1.0), tf.float64), (np.array([1, 2], np.int64), tf.int64),
    (np.array([1.0]), tf.float64), ("a", tf.string)])
def test_constant_infers_dtype_like_tf(value, dtype):
    assert tf.constant(value).dtype == dtype


def test_constant_with_dtype_and_shape():
    t = tf.constant(0, shape=[2, 3], dtype=tf.float32)
    assert t.shape == (2, 3) and t.dtype == tf.float32 and not t.numpy().any()
    np.testing.assert_array_equal(tf.constant([1, 2, 3, 4], shape=[2, 2]).numpy(), [[1, 2], [3, 4]])
    with pytest.raises(TypeError):
        tf.constant([1, 2, 3], shape=[2, 2])
    with pytest.raises(TypeError):
        tf.constant(1.5, dtype=tf.int32)
    assert tf.constant(2.0, dtype=tf.int32).numpy() == 2


@pytest.mark.parametrize("value, pattern", [
    ([1, None], "mixed types"), ([1, "a"], "mixed types"), (["a", 1], "mixed types"),
    ([None], r"unsupported type \(<class 'NoneType'>\)"), (print, "unsupported type"),
    ({"a": 1}, "unsupported type"), (Ellipsis, "unsupported type"),
    ([[1, 2], [3]], "non-rectangular"), (np.array([1, 2], dtype=object), "Unsupported object"),
    (2 ** 63, "out of the range of int64"), ([1, 2 ** 64], "out of the range of int64"),
    (1e300, "out of the range of float32"), ([1.0, 1e39], "out of the range of float32"),
])
def test_values_tf_cannot_convert_are_value_errors(value, pattern):
    with pytest.raises(ValueError, match=pattern):
        tf.constant(value)
    with pytest.raises(ValueError, match=pattern):
        tf.convert_to_tensor(value)


def test_floats_beyond_an_explicit_dtype_become_inf_silently_like_tf():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tf.constant(1e300, tf.float32).numpy() == np.inf
        assert (tf.constant(-1.9) + 1e300).numpy() == np.inf
        assert tf.constant(1e300, tf.float64).numpy() == 1e300


def test_constant_copies_numpy_input():
    a = np.array([1.0, 2.0])
    t = tf.constant(a)
    a[0] = 100
    assert t.numpy()[0] == 1.0


def test_convert_to_tensor_checks_requested_dtype():
    t = tf.constant([1.0])
    assert tf.convert_to_tensor(t) is t
    with pytest.raises(ValueError, match="requested dtype int32"):
        tf.convert_to_tensor(t, dtype=tf.int32)
    assert tf.convert_to_tensor([1, 2], dtype_hint=tf.float32).dtype == tf.float32
    assert tf.convert_to_tensor(np.array([1, 2]), dtype=tf.float32).dtype == tf.float32
    with pytest.raises(ValueError):
        tf.convert_to_tensor(None)


def test_a_list_of_tensors_converts_to_their_dtype_as_tf_packs_it():
    c64 = tf.constant(0, tf.int64)
    cases = [([c64], tf.int64, [0]), ([c64, 1], tf.int64, [0, 1]), ((1, c64), tf.int64, [1, 0]),
             ([[c64], [2**40]], tf.int64, [[0], [2**40]]),
             ([tf.constant(2**60 + 1, tf.int64), 1], tf.int64, [2**60 + 1, 1]),
             ([tf.constant(1.0, tf.float64), 0.5], tf.float64, [1.0, 0.5]),
             ([tf.Variable(3, dtype=tf.int64), np.int32(4)], tf.int64, [3, 4]),
             ([tf.constant(0.0, tf.float16), 1e10], tf.float16, [0.0, np.inf]),
             ([tf.constant(True), False], tf.bool, [True, False]),
             ([tf.constant("x"), "yz"], tf.string, [b"x", b"yz"])]
    for value, dtype, expected in cases:
        t = tf.convert_to_tensor(value)
        assert t.dtype == dtype and t.numpy().tolist() == expected, (value, t)
    assert tf.constant([c64]).dtype == tf.int64
    # An explicit dtype or hint still decides, as in TF.
    assert tf.convert_to_tensor([c64], dtype=tf.int32).dtype == tf.int32
    assert tf.convert_to_tensor([c64], dtype_hint=tf.int32).dtype == tf.int32


def test_a_list_of_tensors_of_different_dtypes_is_tf_error():
    c64 = tf.constant(0, tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="element 1 has dtype int32, but the first tensor's dtype is int64"):
        tf.convert_to_tensor([c64, tf.constant(1)])
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int64"):
        tf.convert_to_tensor([c64, 1.5])


def test_string_tensors():
    t = tf.constant("a")
    assert t.numpy() == b"a"
    assert str(t) == "tf.Tensor(b'a', shape=(), dtype=string)"
    assert tf.constant(["x", "yz"]).numpy().tolist() == [b"x", b"yz"]


def test_empty_values_convert_to_empty_string_tensors():
    for value, shape in (([], (0,)), ([[]], (1, 0)), ((), (0,)), (np.zeros((0, 2)), (0, 2))):
        for t in (tf.constant(value, tf.string), tf.convert_to_tensor(value, tf.string)):
            assert t.dtype == tf.string and t.shape == shape and t.numpy().dtype == object
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.constant([1], tf.string)


# ---- tensor protocol ---------------------------------------------------------------------------
def test_repr_and_str_like_tf():
    t = tf.constant([1.0, 2.0])
    assert repr(t) == ("<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], "
                       "dtype=float32)>")
    assert str(t) == "tf.Tensor([1. 2.], shape=(2,), dtype=float32)"
    assert repr(tf.constant(6.0)) == "<tf.Tensor: shape=(), dtype=float32, numpy=6.0>"
    assert str(tf.constant(3)) == "tf.Tensor(3, shape=(), dtype=int32)"


def test_python_conversions():
    assert float(tf.constant(2.5)) == 2.5 and int(tf.constant(7)) == 7
    assert bool(tf.constant(True)) and not bool(tf.constant(0.0))
    assert [10, 20, 30][tf.constant(1)] == 20
    assert len(tf.constant([[1], [2], [3]])) == 3
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tf.constant([1, 2]))
    with pytest.raises(TypeError):
        len(tf.constant(1.0))
    with pytest.raises(TypeError, match="unhashable"):
        hash(tf.constant(1.0))
    assert np.asarray(tf.constant([1, 2])).tolist() == [1, 2]
    assert np.array(tf.constant([1, 2]), dtype=np.float64).dtype == np.float64
    assert f"{tf.constant(1.5):.2f}" == "1.50"


def test_ref_is_hashable_and_derefs():
    t = tf.constant(1.0)
    v = tf.Variable(1.0)
    d = {t.ref(): "t", v.ref(): "v"}
    assert d[t.ref()] == "t" and d[v.ref()] == "v" and t.ref().deref() is t


def test_iteration_yields_rows_with_gradient():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    rows = list(x)
    assert len(rows) == 2 and rows[1].numpy().tolist() == [3.0, 4.0]
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = sum(tf.reduce_sum(r) * (i + 1) for i, r in enumerate(x))
    np.testing.assert_array_equal(tape.gradient(total, x).numpy(), [[1, 1], [2, 2]])


# ---- operators ---------------------------------------------------------------------------------
def test_operators_both_ways():
    x = tf.constant([1.0, 2.0, 4.0])
    np.testing.assert_allclose((x + 1).numpy(), [2, 3, 5])
    np.testing.assert_allclose((1 + x).numpy(), [2, 3, 5])
    np.testing.assert_allclose((10 - x).numpy(), [9, 8, 6])
    np.testing.assert_allclose((2 * x).numpy(), [2, 4, 8])
    np.testing.assert_allclose((1 / x).numpy(), [1, 0.5, 0.25])
    np.testing.assert_allclose((x // 3).numpy(), [0, 0, 1])
    np.testing.assert_allclose((7 // x).numpy(), [7, 3, 1])
    np.testing.assert_allclose((x % 3).numpy(), [1, 2, 1])
    np.testing.assert_allclose((x ** 2).numpy(), [1, 4, 16])
    np.testing.assert_allclose((2 ** x).numpy(), [2, 4, 16])
    np.testing.assert_allclose((-x).numpy(), [-1, -2, -4])
    np.testing.assert_allclose(abs(-x).numpy(), [1, 2, 4])
    np.testing.assert_allclose((np.array([1.0, 1.0, 1.0], np.float32) + x).numpy(), [2, 3, 5])
    assert (x > 1.5).numpy().tolist() == [False, True, True]
    assert (x <= 2).numpy().tolist() == [True, True, False]
    assert (x == 2.0).numpy().tolist() == [False, True, False]
    assert (x != 2.0).numpy().tolist() == [True, False, True]
    assert (x == None) is False  # noqa: E711 - TF compares with None as plainly unequal
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose((m @ m).numpy(), np.array([[7, 10], [15, 22]]))


def test_operators_mixing_dtypes_follow_tf():
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32.*float64"):
        tf.constant([1.0]) + tf.constant([1.0], dtype=tf.float64)
    with pytest.raises(TypeError, match="1.5"):
        tf.constant([1]) + 1.5
    assert (tf.constant([1]) + 2.0).dtype == tf.int32  # an integral float converts
    assert (tf.constant([1.0], tf.float64) + 1).dtype == tf.float64


def test_operators_on_int_tensors():
    a = tf.constant([7, -7])
    np.testing.assert_array_equal((a // 2).numpy(), [3, -4])
    np.testing.assert_array_equal((a % 3).numpy(), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        a // tf.constant([0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative integer powers"):
        a ** -1


# ---- indexing ----------------------------------------------------------------------------------
@given(data=st.data())
def test_basic_indexing_matches_numpy(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    key = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    np.testing.assert_array_equal(tf.constant(x)[key].numpy(), x[key])


def test_indexing_gradient_and_tensor_index():
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[1, ::2] * 10.0 + x[tf.constant(0), -1]
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[0, 0, 2], [10, 0, 10]])


def test_index_errors():
    x = tf.constant([1, 2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        x[3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="too many indices"):
        x[0, 0]
    with pytest.raises(TypeError, match="valid indices"):
        x[[0, 1]]
    with pytest.raises(tf.errors.InvalidArgumentError):
        x[::0]


# ---- variables ---------------------------------------------------------------------------------
def test_variable_basics():
    v = tf.Variable([1.0, 2.0], name="w")
    assert v.name == "w:0" and v.trainable and v.dtype == tf.float32 and v.shape == (2,)
    assert repr(tf.Variable(2.0)) == "<tf.Variable 'Variable:0' shape=() dtype=float32, numpy=2.0>"
    assert v.assign([3.0, 4.0]) is v
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub(tf.constant([0.5, 0.5]))
    np.testing.assert_array_equal(v.read_value().numpy(), [3.5, 4.5])
    np.testing.assert_array_equal((v * 2).numpy(), [7.0, 9.0])
    np.testing.assert_array_equal(tf.add(v, v).numpy(), [7.0, 9.0])
    assert float(v[1]) == 4.5
    assert not tf.Variable(1, trainable=False).trainable
    assert tf.Variable(lambda: tf.zeros([2])).shape == (2,)
    assert tf.Variable(1.0, dtype=tf.float64).dtype == tf.float64


def test_variable_assign_checks_shape_and_dtype():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="dtype"):
        v.assign(tf.constant([1.0, 2.0], dtype=tf.float64))
    with pytest.raises(TypeError, match="unhashable"):
        hash(v)
    flexible = tf.Variable([1.0], shape=tf.TensorShape([None]))
    flexible.assign([1.0, 2.0, 3.0])
    assert flexible.numpy().shape == (3,)


def test_values_read_before_an_assign_do_not_change():
    v = tf.Variable([1.0])
    before = v.value()
    v.assign_add([1.0])
    assert before.numpy()[0] == 1.0 and v.numpy()[0] == 2.0


def test_variable_deepcopy_is_independent():
    v = tf.Variable([1.0])
    w = copy.deepcopy(v)
    w.assign([5.0])
    assert v.numpy()[0] == 1.0


# ---- TensorShape, TensorSpec, nest -------------------------------------------------------------
def test_tensor_shape():
    s = tf.TensorShape([2, None, 3])
    assert s.rank == 3 and s[0] == 2 and s[1] is None and s.as_list() == [2, None, 3]
    assert not s.is_fully_defined() and s.num_elements() is None
    assert s.is_compatible_with([2, 5, 3]) and not s.is_compatible_with([2, 5])
    assert s.merge_with([2, 4, 3]) == [2, 4, 3]
    assert str(s) == "(2, None, 3)" and repr(s) == "TensorShape([2, None, 3])"
    assert tf.TensorShape(None).rank is None
    assert tf.TensorShape([1, 2]) == (1, 2) and tf.TensorShape([4])[0:1] == [4]
    assert tf.TensorShape([2, 3]).most_specific_compatible_shape([2, 4]) == [2, None]
    assert tf.constant([[1, 2]]).shape.as_list() == [1, 2]


def test_tensor_spec():
    spec = tf.TensorSpec([None, 2], tf.float32)
    assert spec.is_compatible_with(tf.constant([[1.0, 2.0]]))
    assert not spec.is_compatible_with(tf.constant([[1, 2]]))
    assert not spec.is_compatible_with(tf.constant([1.0, 2.0]))
    assert spec == tf.TensorSpec([None, 2], tf.float32)
    assert "TensorSpec(shape=(None, 2), dtype=tf.float32" in repr(spec)


def test_nest_round_trip():
    structure = {"b": [1, (2, 3)], "a": None}
    flat = nest.flatten(structure)
    assert flat == [None, 1, 2, 3]
    assert nest.pack_sequence_as(structure, flat) == structure
    assert nest.map_structure(lambda v: v, [1, {"x": 2}]) == [1, {"x": 2}]
    with pytest.raises(ValueError):
        nest.assert_same_structure([1, 2], [1])
