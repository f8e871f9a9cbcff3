"""tf.debugging: value assertions (eagerly, at trace time on constants, and on every call of a
traced function), static shape/dtype/rank assertions, check_numerics and its gradient."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf

InvalidArgumentError = tf.errors.InvalidArgumentError

# name: (assertion, NumPy condition, its text in the message)
BINARY = {
    "assert_equal": (tf.debugging.assert_equal, np.equal, "x == y"),
    "assert_none_equal": (tf.debugging.assert_none_equal, np.not_equal, "x != y"),
    "assert_less": (tf.debugging.assert_less, np.less, "x < y"),
    "assert_less_equal": (tf.debugging.assert_less_equal, np.less_equal, "x <= y"),
    "assert_greater": (tf.debugging.assert_greater, np.greater, "x > y"),
    "assert_greater_equal": (tf.debugging.assert_greater_equal, np.greater_equal, "x >= y"),
}
UNARY = {
    "assert_positive": (tf.debugging.assert_positive, lambda x: x > 0, "x > 0"),
    "assert_negative": (tf.debugging.assert_negative, lambda x: x < 0, "x < 0"),
    "assert_non_negative": (tf.debugging.assert_non_negative, lambda x: x >= 0, "x >= 0"),
    "assert_non_positive": (tf.debugging.assert_non_positive, lambda x: x <= 0, "x <= 0"),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_assertions_hold_exactly_when_numpy_says(name, data):
    fn, ref, text = BINARY[name]
    (sx, sy), _ = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                              max_side=3))
    x = data.draw(hnp.arrays(np.int32, sx, elements=st.integers(-2, 2)))
    y = data.draw(hnp.arrays(np.int32, sy, elements=st.integers(-2, 2)))
    if ref(x, y).all():
        assert fn(tf.constant(x), tf.constant(y)) is None
    else:
        with pytest.raises(InvalidArgumentError, match=f"Condition {text} did not hold"):
            fn(tf.constant(x), tf.constant(y))


@pytest.mark.parametrize("name", sorted(UNARY))
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0),
                    elements=st.sampled_from([-1.5, 0.0, 2.0])))
def test_sign_assertions_hold_exactly_when_numpy_says(name, x):
    fn, ref, text = UNARY[name]
    if ref(x).all():
        assert fn(tf.constant(x)) is None
    else:
        with pytest.raises(InvalidArgumentError, match=f"Condition {text} did not hold"):
            fn(tf.constant(x))


def test_failed_assertion_message_has_tfs_shape():
    with pytest.raises(InvalidArgumentError) as info:
        tf.debugging.assert_equal(tf.constant([1, 2, 3]), tf.constant([1, 5, 3]), message="hi")
    assert str(info.value) == ("hi\nCondition x == y did not hold.\n"
                               "Indices of first 1 different values:\n[[1]]\n"
                               "Corresponding x values:\n[2]\nCorresponding y values:\n[5]\n"
                               "First 3 elements of x:\n[1 2 3]\nFirst 3 elements of y:\n[1 5 3]")
    with pytest.raises(InvalidArgumentError) as info:
        tf.debugging.assert_less(tf.range(10), 5, summarize=2)
    assert "First 2 elements of x:\n[0 1]\nFirst 1 elements of y:\n[5]" in str(info.value)
    with pytest.raises(InvalidArgumentError, match=r"First 5 elements of x:\n\[0 1 2 3 4\]"):
        tf.debugging.assert_equal(tf.range(5), tf.range(5) * 2, summarize=-1)
    with pytest.raises(InvalidArgumentError,
                       match=r"Indices of first 1 failing values:\n\[\[1\]\]"):
        tf.debugging.assert_positive(tf.constant([1.0, -2.0, 3.0]))


def test_assertions_on_empty_tensors_hold():
    assert tf.debugging.assert_equal(tf.zeros([0]), tf.zeros([0])) is None
    assert tf.debugging.assert_positive(tf.zeros([0])) is None


def test_assertion_operands_are_checked_like_ops():
    with pytest.raises(InvalidArgumentError, match=r"equal: Incompatible shapes: \[2\] vs. \[3\]"):
        tf.debugging.assert_equal(tf.zeros([2]), tf.zeros([3]))
    with pytest.raises(InvalidArgumentError, match="x has dtype int32 but y has dtype float32"):
        tf.debugging.assert_equal(tf.constant([1]), tf.constant([1.0]))


def test_assert_near():
    tf.debugging.assert_near(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0 + 1e-7]))
    with pytest.raises(InvalidArgumentError, match=r"\|x - y\| <= atol \+ rtol \* \|y\|"):
        tf.debugging.assert_near(tf.constant([1., 2., 3.]), tf.constant([1., 2.1, 3.]))
    with pytest.raises(InvalidArgumentError):   # the default tolerance is 10 float32 epsilons
        tf.debugging.assert_near(tf.constant([1.]), tf.constant([1.00001]))
    tf.debugging.assert_near(tf.constant([1.]), tf.constant([1.00001]), rtol=1e-4)
    tf.debugging.assert_near(tf.constant([1.], tf.float64), tf.constant([1.5], tf.float64),
                             atol=0.6)
    with pytest.raises(InvalidArgumentError):
        tf.debugging.assert_near(tf.constant([np.nan]), tf.constant([np.nan]))
    with pytest.raises(TypeError, match="floating point"):
        tf.debugging.assert_near(tf.constant([1]), tf.constant([2]))


def test_assert_with_data():
    assert tf.debugging.Assert(tf.constant(True), ["never shown"]) is None
    with pytest.raises(InvalidArgumentError, match="Summarized data: 1, 2, 3\ntext"):
        tf.debugging.Assert(tf.constant(False), [tf.constant([1, 2, 3, 4]), "text"])
    with pytest.raises(InvalidArgumentError, match="Summarized data: 1, 2\n"):
        tf.debugging.Assert(False, [tf.constant([1, 2, 3, 4]), "text"], summarize=2)
    with pytest.raises(InvalidArgumentError, match="condition must be a bool scalar"):
        tf.debugging.Assert(tf.constant([True, False]), [])
    assert tf.Assert is tf.debugging.Assert


# ---- inside tf.function -------------------------------------------------------------------------
def test_value_assertions_run_on_every_call_of_a_compiled_function():
    @tf.function
    def checked(x, y):
        tf.debugging.assert_equal(x, y, message="inputs differ")
        tf.debugging.assert_less(x, 10)
        tf.debugging.assert_positive(y)
        return x + 1

    same = tf.constant([1, 2])
    assert checked(same, same).numpy().tolist() == [2, 3]
    assert "could not lower" not in checked.get_concrete_function(same, same).kernel_source
    with pytest.raises(InvalidArgumentError, match="inputs differ\nCondition x == y did not"):
        checked(tf.constant([1, 2]), tf.constant([1, 3]))
    with pytest.raises(InvalidArgumentError, match="Condition x < y did not hold"):
        checked(tf.constant([11, 2]), tf.constant([11, 2]))
    with pytest.raises(InvalidArgumentError, match="Condition x > 0 did not hold"):
        checked(tf.constant([-1, 2]), tf.constant([-1, 2]))
    assert checked(same, same).numpy().tolist() == [2, 3]   # the same trace, passing again
    assert checked.experimental_get_tracing_count() == 1


def test_assertion_on_constants_raises_while_tracing():
    traced = []

    @tf.function
    def bad(x):
        traced.append(True)
        tf.debugging.assert_equal(tf.constant(1), tf.constant(2))
        return x

    with pytest.raises(InvalidArgumentError, match="Condition x == y did not hold"):
        bad(tf.constant(1.0))
    assert traced


def test_assert_with_data_in_a_function():
    @tf.function
    def checked(x):
        tf.debugging.Assert(tf.reduce_all(x > 0), ["x must be positive:", x])
        return x

    assert checked(tf.constant([1.0, 2.0])).numpy().tolist() == [1.0, 2.0]
    with pytest.raises(InvalidArgumentError, match="x must be positive:\n1.0, -2.0"):
        checked(tf.constant([1.0, -2.0]))


def test_static_assertions_raise_while_tracing():
    @tf.function
    def ranked(x):
        tf.debugging.assert_rank(x, 1)
        tf.debugging.assert_type(x, tf.float32)
        return x

    assert ranked(tf.zeros([2])).shape == (2,)
    with pytest.raises(ValueError, match="must have rank 1.  Received rank 2, shape \\(2, 2\\)"):
        ranked(tf.zeros([2, 2]))
    with pytest.raises(TypeError, match="tensor must be of type tf.float32; got tf.int32"):
        ranked(tf.constant([1]))


# ---- static assertions --------------------------------------------------------------------------
def test_rank_type_and_integer_assertions():
    x = tf.zeros([2, 3])
    assert tf.debugging.assert_rank(x, 2) is None
    assert tf.debugging.assert_rank(x, tf.constant(2)) is None
    with pytest.raises(ValueError, match="^mm.  Tensor x must have rank 1.  Received rank 2"):
        tf.debugging.assert_rank(x, 1, message="mm")
    tf.debugging.assert_rank_at_least(x, 2)
    with pytest.raises(ValueError, match="must have rank at least 3"):
        tf.debugging.assert_rank_at_least(x, 3)
    tf.debugging.assert_rank_in(x, [0, 2])
    with pytest.raises(ValueError, match="must have rank in \\(0, 1\\)"):
        tf.debugging.assert_rank_in(x, [0, 1])
    tf.debugging.assert_scalar(tf.constant(1.0))
    with pytest.raises(ValueError, match="Expected scalar shape, saw shape: \\(2, 3\\)"):
        tf.debugging.assert_scalar(x)
    tf.debugging.assert_type(tf.Variable(1.0), tf.float32)
    with pytest.raises(TypeError, match="^mm.  tensor must be of type tf.int32; got tf.float32"):
        tf.debugging.assert_type(x, tf.int32, message="mm")
    tf.debugging.assert_integer(tf.constant([1]))
    with pytest.raises(TypeError, match='Expected "x" to be integer type'):
        tf.debugging.assert_integer(x)
    assert tf.assert_rank is tf.debugging.assert_rank


def test_rank_known_only_when_the_function_runs():
    @tf.function
    def ranked(x, rank):
        tf.debugging.assert_rank(x, rank)
        return x

    ranked(tf.zeros([2]), tf.constant(1))
    with pytest.raises(InvalidArgumentError, match="rank\\(x\\) == rank"):
        ranked(tf.zeros([2]), tf.constant(3))


def test_assert_shapes():
    x, y, s = tf.zeros([2, 3]), tf.zeros([3]), tf.zeros([])
    tf.debugging.assert_shapes([(x, ("N", "Q")), (y, ("Q",)), (s, ())])
    tf.debugging.assert_shapes([(x, (2, None)), (x, (".", 3))])
    v = tf.Variable(tf.zeros([3, 2]))
    tf.debugging.assert_shapes({v.ref(): ("Q", 2), x.ref(): (2, "Q")})   # the dict form
    tf.debugging.assert_shapes([(tf.zeros([5, 2, 3]), (..., "N", 3)), (tf.zeros([2]), ("N",))])
    tf.debugging.assert_shapes([(tf.zeros([1]), ()), (s, (1,))])   # scalars count as [1]
    with pytest.raises(ValueError, match=(r"Specified by tensor shape=\(2, 3\) dtype=float32 "
                                          r"dimension 0.  Tensor shape=\(3,\) dtype=float32 "
                                          r"dimension 0 must have size 2.  Received size 3")):
        tf.debugging.assert_shapes([(x, ("N", "Q")), (y, ("N",))])
    with pytest.raises(ValueError, match="mm.  Specified explicitly.  .* must have size 4"):
        tf.debugging.assert_shapes([(x, (2, 4))], message="mm")
    with pytest.raises(ValueError, match="must have rank 1.  Received rank 2"):
        tf.debugging.assert_shapes([(x, ("N",))])
    with pytest.raises(ValueError, match="must have rank at least 3"):
        tf.debugging.assert_shapes([(x, ("*", 1, 2, 3))])


def test_assert_shapes_with_dimensions_known_only_when_the_function_runs():
    @tf.function(input_signature=[tf.TensorSpec([None, None])])
    def square(x):
        tf.debugging.assert_shapes([(x, ("N", "N"))], data=[x])
        return x

    assert square(tf.zeros([2, 2])).shape == (2, 2)
    with pytest.raises(InvalidArgumentError, match="First 1 elements of size:\n\\[2\\]"):
        square(tf.zeros([3, 2]))


# ---- check_numerics -----------------------------------------------------------------------------
def test_check_numerics_returns_its_input_or_raises_like_tf():
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(tf.debugging.check_numerics(x, "m").numpy(), [1.0, 2.0])
    for values, found in (([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"),
                          ([np.nan, -np.inf], "Inf and NaN")):
        with pytest.raises(InvalidArgumentError, match=f"^bad : Tensor had {found} values$"):
            tf.debugging.check_numerics(tf.constant(values), "bad")
        with pytest.raises(InvalidArgumentError, match=f"^bad : Tensor had {found} values$"):
            tf.debugging.assert_all_finite(tf.constant(values), "bad")
    with pytest.raises(TypeError, match="check_numerics: tensor has dtype int32"):
        tf.debugging.check_numerics(tf.constant([1, 2]), "bad")


def test_check_numerics_gradient_passes_through_and_is_checked():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.debugging.check_numerics(x * 2.0, "m")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.debugging.check_numerics(x * 2.0, "m")
    with pytest.raises(InvalidArgumentError, match="detected in gradient. m : Tensor had NaN"):
        tape.gradient(y, x, output_gradients=tf.constant([np.nan, 1.0]))


def test_check_numerics_in_a_function_checks_every_call_and_differentiates():
    @tf.function
    def safe_log(x):
        return tf.debugging.check_numerics(tf.math.log(x), "log of x")

    np.testing.assert_allclose(safe_log(tf.constant([1.0, np.e])).numpy(), [0.0, 1.0])
    with pytest.raises(InvalidArgumentError, match="log of x : Tensor had Inf values"):
        safe_log(tf.constant([0.0, 1.0]))
    with pytest.raises(InvalidArgumentError, match="log of x : Tensor had NaN values"):
        safe_log(tf.constant([-1.0, 1.0]))
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = safe_log(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0, 0.5])


def test_unused_check_is_kept_in_a_function():
    @tf.function
    def f(x):
        tf.debugging.check_numerics(x, "unused result")
        return x * 2.0

    with pytest.raises(InvalidArgumentError, match="unused result : Tensor had NaN values"):
        f(tf.constant([np.nan]))


def test_is_numeric_tensor():
    assert tf.debugging.is_numeric_tensor(tf.constant(1))
    assert tf.debugging.is_numeric_tensor(tf.constant(1.5))
    assert not tf.debugging.is_numeric_tensor(tf.constant(True))
    assert not tf.debugging.is_numeric_tensor(tf.constant("a"))
    assert not tf.debugging.is_numeric_tensor(np.float32(1))
    assert not tf.debugging.is_numeric_tensor(tf.Variable(1.0))   # as TF
