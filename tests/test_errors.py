"""Bad input raises a clear error naming the op, shapes and dtypes -- before any kernel runs."""
import numpy as np
import pytest

import hybridtf as tf

IAE = tf.errors.InvalidArgumentError


def test_invalid_argument_error_is_a_value_error_and_op_error():
    assert issubclass(IAE, ValueError) and issubclass(IAE, tf.errors.OpError)


@pytest.mark.parametrize("fn, args, pattern", [
    (tf.add, ([1.0, 2.0], [1.0, 2.0, 3.0]), r"add: Incompatible shapes: \[2\] vs. \[3\]"),
    (tf.multiply, (np.ones((2, 3), np.float32), np.ones((4,), np.float32)), r"\[2,3\] vs. \[4\]"),
    (tf.matmul, (np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)),
     r"matmul: Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[2,3\]"),
    (tf.reshape, (np.ones(6, np.float32), [4, 2]), r"reshape: .*6 values.*\[4, 2\]"),
    (tf.reshape, (np.ones(6, np.float32), [-1, -1]), r"only one dimension"),
    (tf.reshape, (np.ones(7, np.float32), [-1, 2]), r"cannot hold"),
    (tf.reduce_sum, (np.ones((2, 2), np.float32), 2), r"reduce_sum: axis 2 is out of range"),
    (tf.gather, (np.ones((3, 2), np.float32), [0, 3]),
     r"gather: indices\[1\] = 3 is not in \[0, 3\)"),
    (tf.gather, (np.ones((3, 2), np.float32), [-1]), r"indices\[0\] = -1"),
    (tf.concat, ([np.ones((2, 2), np.float32), np.ones((3, 3), np.float32)], 0),
     r"concat: values\[1\] has shape \[3,3\]"),
    (tf.stack, ([np.ones(2, np.float32), np.ones(3, np.float32)],), r"Shapes of all inputs"),
    (tf.transpose, (np.ones((2, 2), np.float32), [0, 0]), r"not a permutation"),
    (tf.squeeze, (np.ones((2, 1), np.float32), 0), r"Can not squeeze dim\[0\]"),
    (tf.split, (np.ones(5, np.float32), 2), r"cannot split a dimension of size 5 into 2"),
    (tf.tile, (np.ones((2, 2), np.float32), [2]), r"multiples"),
    (tf.expand_dims, (np.ones(2, np.float32), 3), r"out of range"),
    (tf.argmax, (np.ones((2, 0), np.float32), 1), r"argmax: Reduction axis 1 is empty"),
])
def test_invalid_arguments(fn, args, pattern):
    with pytest.raises(IAE, match=pattern):
        fn(*[tf.constant(a) if isinstance(a, np.ndarray) else a for a in args])


@pytest.mark.parametrize("fn, args, pattern", [
    (tf.add, (tf.constant([1.0]), tf.constant([1], tf.int32)),
     r"add: x has dtype float32 but y has dtype int32"),
    (tf.matmul, (tf.constant([[1.0]]), tf.constant([[1.0]], tf.float64)),
     r"matmul: a has dtype float32 but b has dtype float64"),
    (tf.concat, ([tf.constant([1.0]), tf.constant([1])], 0),
     r"concat: values\[0\] has dtype float32"),
])
def test_mixed_dtypes_are_rejected(fn, args, pattern):
    with pytest.raises(IAE, match=pattern):
        fn(*args)


@pytest.mark.parametrize("call, pattern", [
    (lambda: tf.sqrt(tf.constant([4])), r"sqrt: x has dtype int32, which this op does not support"),
    (lambda: tf.math.log(tf.constant([True])), r"log: .*bool"),
    (lambda: tf.logical_and(tf.constant([1]), tf.constant([1])), r"logical_and.*int32"),
    (lambda: tf.gather(tf.constant([1.0]), tf.constant([0.0])), r"gather: indices must be int32"),
    (lambda: tf.where(tf.constant([1]), tf.constant([1.0]), tf.constant([2.0])),
     r"condition must be bool"),
])
def test_unsupported_dtypes_are_type_errors(call, pattern):
    with pytest.raises(TypeError, match=pattern):
        call()


def test_nn_shape_errors():
    images = tf.zeros([1, 8, 8, 3])
    with pytest.raises(IAE, match=r"conv2d: input depth 3 .* in-depth 4"):
        tf.nn.conv2d(images, tf.zeros([3, 3, 4, 2]), 1, "SAME")
    with pytest.raises(IAE, match="conv2d: input must be 4-D"):
        tf.nn.conv2d(tf.zeros([8, 8, 3]), tf.zeros([3, 3, 3, 2]), 1, "SAME")
    with pytest.raises(IAE, match="padding must be 'SAME' or 'VALID'"):
        tf.nn.conv2d(images, tf.zeros([3, 3, 3, 2]), 1, "FULL")
    with pytest.raises(IAE, match="does not fit"):
        tf.nn.conv2d(images, tf.zeros([9, 9, 3, 2]), 1, "VALID")
    with pytest.raises(IAE, match="max_pool2d: input must be 4-D"):
        tf.nn.max_pool2d(tf.zeros([8, 8]), 2, 2, "VALID")
    with pytest.raises(IAE, match=r"labels\[1\] = 5 is not in \[0, 3\)"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0, 5]),
                                                       logits=tf.zeros([2, 3]))
    with pytest.raises(IAE, match="bias must be 1-D"):
        tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([2]))


def test_random_and_creation_errors():
    with pytest.raises(IAE, match="non-negative"):
        tf.zeros([-1, 2])
    with pytest.raises(IAE, match="maxval must be given"):
        tf.random.uniform([2], dtype=tf.int32)
    with pytest.raises(IAE, match="delta must not be zero"):
        tf.range(0, 5, 0)


# ---- found by fuzzing (tests/test_fuzz.py): TF's errors where hybridtf used to compute -------
@pytest.mark.parametrize("perm", [[5, 0], [0, 2], [-3, 0], [0], [0, 1, 2], [1, 1]])
def test_transpose_rejects_a_perm_that_is_not_a_permutation(perm):
    with pytest.raises(IAE, match=r"transpose: perm .* is not a permutation of the 2 dim"):
        tf.transpose(tf.zeros([2, 3]), perm=perm)


def test_transpose_accepts_negative_perm_entries_like_tf():
    assert tf.transpose(tf.zeros([2, 3]), perm=[-1, 0]).shape == (3, 2)


@pytest.mark.parametrize("call", [
    lambda: tf.zeros([1.5]), lambda: tf.zeros([2.0]), lambda: tf.ones((2.0,)),
    lambda: tf.zeros([None]), lambda: tf.zeros(tf.constant([2.0])),
    lambda: tf.reshape(tf.zeros([2]), [2.9]), lambda: tf.reshape(tf.zeros([2]), [2.0]),
    lambda: tf.fill([2.5], 1.0), lambda: tf.tile(tf.zeros([2]), [2.0]),
    lambda: tf.broadcast_to(tf.zeros([2]), [2.0]), lambda: tf.random.uniform([2.0]),
    lambda: tf.slice(tf.zeros([2]), [0.0], [1]), lambda: tf.transpose(tf.zeros([2, 3]), [1.0, 0]),
    lambda: tf.eye(2.0), lambda: tf.one_hot([0], 2.5), lambda: tf.split(tf.zeros([2]), 2.0),
    lambda: tf.split(tf.zeros([2]), [1.0, 1.0]), lambda: tf.concat([tf.zeros([1])] * 2, 0.0),
    lambda: tf.gather(tf.zeros([2]), [0], axis=0.0), lambda: tf.pad(tf.zeros([2]), [[1.0, 1]]),
    lambda: tf.nn.max_pool2d(tf.zeros([1, 2, 2, 1]), 2.0, 1, "VALID"),
])
def test_non_integer_dimensions_are_rejected_not_truncated(call):
    with pytest.raises(TypeError, match="must be .*integer"):
        call()


def test_integer_arguments_may_be_numpy_integers_and_integer_tensors():
    assert tf.zeros([np.int64(2), tf.constant(3)]).shape == (2, 3)
    assert tf.reshape(tf.zeros([6]), tf.constant([2, 3], tf.int64)).shape == (2, 3)
    assert tf.one_hot([0], tf.constant(3)).shape == (1, 3)


@pytest.mark.parametrize("source, target", [(["a", ""], tf.bool), (["1.5"], tf.float32),
                                            ([1.0], tf.string), ([True], tf.string)])
def test_cast_between_strings_and_numbers_is_unimplemented_like_tf(source, target):
    with pytest.raises(tf.errors.UnimplementedError, match="Cast .* to .* is not supported"):
        tf.cast(tf.constant(source), target)
    with pytest.raises(tf.errors.UnimplementedError):
        tf.function(lambda x: tf.cast(x, target))(tf.constant(source))


def test_multiple_ellipses_in_an_index_are_an_invalid_argument():
    with pytest.raises(IAE, match="Multiple ellipses"):
        tf.zeros([2, 2])[..., ...]


@pytest.mark.parametrize("call, error, pattern", [
    (lambda: tf.pad(tf.zeros([2]), [[1, 1]], mode=Ellipsis), TypeError, "pad: mode must be"),
    (lambda: tf.pad(tf.zeros([2]), [[1, 1], [2]]), TypeError, "pad: paddings must be"),
    (lambda: tf.print(tf.zeros([2]), sep=(1, [2])), TypeError, "print: sep must be a string"),
    (lambda: tf.print(tf.zeros([2]), summarize=1.5), TypeError, "summarize must be an integer"),
    (lambda: tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3]), data_format=5), TypeError,
     "bias_add: data_format must be a string"),
    (lambda: tf.add_n("abc"), ValueError, "add_n: inputs must be a non-empty list"),
    (lambda: tf.add_n({"a": 1}), ValueError, "add_n: inputs must be a non-empty list"),
    (lambda: tf.add_n([tf.constant(["a"])]), TypeError, "add_n: inputs must be numeric"),
    (lambda: tf.range(3, dtype=tf.string), TypeError, "range: dtype must be an integer or"),
    (lambda: tf.ones([2], tf.string), TypeError, "ones: dtype string has no ones"),
    (lambda: tf.ones_like(tf.constant(["a"])), TypeError, "ones_like: dtype string has no"),
    (lambda: tf.eye(2, dtype=tf.string), TypeError, "eye: dtype string has no ones"),
    (lambda: tf.nn.l2_loss(tf.constant([9], tf.int8)), TypeError, "l2_loss: t has dtype int8"),
    (lambda: tf.zeros([2, 2**62]), IAE, "more elements than int64 can count"),
    (lambda: tf.random.normal([2**63]), ValueError, "out of the range of int64"),
    (lambda: tf.size(tf.zeros([2]), out_type=tf.string), TypeError, "out_type must be int32"),
    (lambda: tf.random.normal([2], seed=float("inf")), TypeError, "seed must be an integer"),
    (lambda: tf.gather(tf.zeros([1, 1]), [[0]], axis=5, batch_dims=5), IAE,
     r"gather: batch_dims=5 is out of range for indices of rank 2"),
    (lambda: tf.gather(tf.zeros([1, 1]), [[0]], axis=-5, batch_dims=-5), IAE,
     r"gather: batch_dims=-5 is out of range"),
    (lambda: tf.pad(tf.zeros([1]), [[1, 1]], constant_values="z"), TypeError,
     "pad: constant_values must be a scalar of the tensor's dtype float32"),
    (lambda: tf.range(tf.constant([1, 2])), IAE, "range: limit must be a scalar"),
])
def test_bad_arguments_raise_tf_error_types(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()
