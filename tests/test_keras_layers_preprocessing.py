"""Normalization and CategoryEncoding: NumPy references, adapt, errors, configs, models."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf import errors, keras
from hybridtf.keras import layers
from keras_layer_checks import assert_model_round_trips


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _data(*shape, seed=0):
    return (np.random.RandomState(seed).randn(*shape) * 3 + 1).astype(np.float32)


# ---- Normalization -------------------------------------------------------------------------------
@settings(max_examples=8, deadline=None)
@given(shape=st.sampled_from([(12, 3), (6, 2, 3), (5, 4)]),
       axis=st.sampled_from([-1, None, (1,)]), invert=st.booleans())
def test_normalization_adapt_on_arrays_matches_numpy(shape, axis, invert):
    x = _data(*shape, seed=len(shape))
    layer = layers.Normalization(axis=axis, invert=invert)
    layer.adapt(x)
    keep = () if axis is None else tuple(sorted(a % len(shape) for a in
                                                ((axis,) if isinstance(axis, int) else axis)))
    reduce = tuple(d for d in range(len(shape)) if d not in keep)
    mean = x.astype(np.float64).mean(axis=reduce, keepdims=True)
    std = x.astype(np.float64).std(axis=reduce, keepdims=True)
    expected = x * std + mean if invert else (x - mean) / std
    np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-4, atol=1e-4)
    assert layer.adapt_mean.shape == tuple(shape[d] for d in keep)
    assert int(layer.count.numpy()) == int(np.prod([shape[d] for d in reduce]))


def test_normalization_adapt_from_datasets_and_batches_pools_statistics():
    x = _data(23, 3, seed=1)
    expected_mean, expected_var = x.mean(0), x.var(0)
    sources = {
        "batched dataset": tf.data.Dataset.from_tensor_slices(x).batch(5),
        "unbatched dataset": tf.data.Dataset.from_tensor_slices(x),
        "(x, y) dataset": tf.data.Dataset.from_tensor_slices((x, np.zeros(23))).batch(7),
        "list of batches": [x[:4], x[4:15], x[15:]],
        "tensor": tf.constant(x)}
    for what, data in sources.items():
        layer = layers.Normalization()
        layer.adapt(data)
        np.testing.assert_allclose(layer.adapt_mean.numpy(), expected_mean, rtol=1e-5,
                                   atol=1e-5, err_msg=what)
        np.testing.assert_allclose(layer.adapt_variance.numpy(), expected_var, rtol=1e-5,
                                   err_msg=what)
    assert [v.name for v in layer.weights] == ["normalization_4/mean:0",
                                               "normalization_4/variance:0",
                                               "normalization_4/count:0"]
    assert layer.trainable_weights == []


def test_normalization_with_given_statistics():
    x = _data(4, 2, 3, seed=2)
    layer = layers.Normalization(axis=(1, 2), mean=[1.0, 2.0, 3.0], variance=[4.0, 1.0, 0.25])
    expected = (x - np.array([1.0, 2.0, 3.0])) / np.array([2.0, 1.0, 0.5])
    np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert layer.weights == []
    config = layer.get_config()
    assert (config["axis"], config["mean"], config["variance"], config["invert"]) == (
        (1, 2), [1.0, 2.0, 3.0], [4.0, 1.0, 0.25], False)
    inverse = layers.Normalization(mean=2.0, variance=9.0, invert=True)
    np.testing.assert_allclose(inverse(x).numpy(), x * 3 + 2, rtol=1e-5)
    # A zero variance is floored at epsilon instead of dividing by zero.
    flat = layers.Normalization(mean=1.0, variance=0.0)
    np.testing.assert_allclose(flat(np.array([[1.0, 3.0]], np.float32)).numpy(),
                               [[0.0, 2.0 / keras.backend.epsilon()]], rtol=1e-5)


@pytest.mark.parametrize("make,error,match", [
    (lambda: layers.Normalization(mean=1.0), ValueError, "both `mean` and `variance`"),
    (lambda: layers.Normalization(mean=[1.0, 2.0], variance=[1.0]), ValueError,
     "must have the same shape"),
    (lambda: layers.Normalization(mean=[[1.0]], variance=[[1.0]]), ValueError,
     "rank of `mean`"),
    (lambda: layers.Normalization(axis=3)(np.zeros((2, 3), np.float32)), ValueError,
     r"range \[-ndim, ndim\)"),
    (lambda: layers.Normalization(mean=1.0, variance=1.0).adapt(np.zeros((2, 3))), ValueError,
     "adapt\\(\\) cannot be used"),
    (lambda: layers.Normalization().adapt("data"), TypeError, "adapt\\(\\) supports"),
    (lambda: layers.Normalization().adapt([]), ValueError, "empty iterable"),
    (lambda: layers.CategoryEncoding(), ValueError, "num_tokens must be set"),
    (lambda: layers.CategoryEncoding(0), ValueError, "must be an integer >= 1"),
    (lambda: layers.CategoryEncoding(3, output_mode="tf_idf"), ValueError,
     "unknown output_mode"),
    (lambda: layers.CategoryEncoding(3, sparse=True), ValueError, "sparse=True"),
])
def test_bad_arguments_raise_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_normalization_adapt_checks_the_built_shape():
    layer = layers.Normalization()
    layer.adapt(np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"built with input shape \(4, 3\).*\(4, 2\)"):
        layer.adapt(np.zeros((4, 2)))


# ---- CategoryEncoding ----------------------------------------------------------------------------
@settings(max_examples=10, deadline=None)
@given(ids=st.lists(st.lists(st.integers(0, 4), min_size=3, max_size=3), min_size=1,
                    max_size=4))
def test_category_encoding_modes_match_numpy(ids):
    ids = np.array(ids, np.int32)
    eye = np.eye(5, dtype=np.float32)
    multi = layers.CategoryEncoding(5)(ids).numpy()
    np.testing.assert_array_equal(multi, eye[ids].max(axis=1))
    count = layers.CategoryEncoding(5, output_mode="count")(ids).numpy()
    np.testing.assert_array_equal(count, eye[ids].sum(axis=1))
    weights = np.random.RandomState(0).rand(*ids.shape).astype(np.float32)
    weighted = layers.CategoryEncoding(5, output_mode="count")(ids, count_weights=weights)
    np.testing.assert_allclose(weighted.numpy(), (eye[ids] * weights[..., None]).sum(1),
                               rtol=1e-6)
    one_hot = layers.CategoryEncoding(5, output_mode="one_hot")(ids).numpy()
    np.testing.assert_array_equal(one_hot, eye[ids])


def test_category_encoding_shapes_and_checks():
    one_hot = layers.CategoryEncoding(4, output_mode="one_hot")
    np.testing.assert_array_equal(one_hot(np.array([[3], [0]])).numpy(),
                                  [[0, 0, 0, 1], [1, 0, 0, 0]])       # [batch, 1] squeezed
    np.testing.assert_array_equal(one_hot(np.array([2, 1])).numpy(),
                                  [[0, 0, 1, 0], [0, 1, 0, 0]])
    assert one_hot.compute_output_shape((None, 1)) == tf.TensorShape([None, 4])
    assert one_hot.compute_output_shape((None, 3)) == tf.TensorShape([None, 3, 4])
    multi = layers.CategoryEncoding(4, output_mode="binary")
    assert multi.output_mode == "multi_hot"
    np.testing.assert_array_equal(multi(np.array([0, 3, 3])).numpy(), [1, 0, 0, 1])
    assert multi.compute_output_shape((None, 7)) == tf.TensorShape([None, 4])
    with pytest.raises(errors.InvalidArgumentError, match="0 <= values < num_tokens"):
        multi(np.array([[0, 4]]))
    with pytest.raises(errors.InvalidArgumentError, match="0 <= values < num_tokens"):
        multi(np.array([[-1, 2]]))
    with pytest.raises(ValueError, match="only used when output_mode is 'count'"):
        multi(np.array([[0, 1]]), count_weights=np.ones((1, 2)))
    with pytest.raises(ValueError, match="rank <= 2"):
        multi(np.zeros((2, 2, 2), np.int32))
    config = layers.CategoryEncoding(4, output_mode="count").get_config()
    assert (config["num_tokens"], config["output_mode"]) == (4, "count")


def test_category_encoding_checks_ids_inside_a_tf_function():
    layer = layers.CategoryEncoding(3, output_mode="count")

    @tf.function
    def encode(ids):
        return layer(ids)

    np.testing.assert_array_equal(encode(np.array([[0, 2, 2]], np.int32)).numpy(), [[1, 0, 2]])
    with pytest.raises(errors.InvalidArgumentError, match="0 <= values < num_tokens"):
        encode(np.array([[0, 3, 2]], np.int32))


# ---- in models -----------------------------------------------------------------------------------
def test_preprocessing_layers_in_a_trained_and_saved_model(tmp_path):
    x = _data(16, 3, seed=3)
    norm = layers.Normalization()
    norm.adapt(x)
    model = keras.Sequential([keras.Input((3,)), norm, layers.Dense(2)])
    model.compile("sgd", "mse")
    model.fit(x, np.zeros((16, 2), np.float32), epochs=1, verbose=0)
    np.testing.assert_allclose(norm.adapt_mean.numpy(), x.mean(0), rtol=1e-5, atol=1e-5)
    loaded = assert_model_round_trips(model, x, tmp_path / "norm")
    np.testing.assert_allclose(loaded.layers[0].adapt_variance.numpy(), x.var(0), rtol=1e-5)
    given = keras.Sequential([keras.Input((3,)),
                              layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[4.0, 1.0, 2.0])])
    assert_model_round_trips(given, x, tmp_path / "given")
    ids = keras.Input((2,), dtype="int32")
    encoded = layers.CategoryEncoding(5, output_mode="count")(ids)
    functional = keras.Model(ids, layers.Dense(1)(encoded))
    assert_model_round_trips(functional, np.array([[0, 4], [2, 2]], np.int32),
                             tmp_path / "encoding")
