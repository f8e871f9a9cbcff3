"""Activation, LayerNormalization, axis, noise and Rescaling layers: NumPy references,
gradients, configs, tf.function training steps and .keras round trips."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import layers
from keras_layer_checks import assert_model_round_trips, check_weight_and_input_gradients


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _x(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# ---- activation layers ---------------------------------------------------------------------------
def np_relu(x, max_value=None, negative_slope=0.0, threshold=0.0):
    out = np.where(x > threshold, x, 0.0)
    if max_value is not None:
        out = np.minimum(out, max_value)
    return np.where(x > threshold, out, negative_slope * (x - threshold))


@settings(max_examples=12, deadline=None)
@given(max_value=st.sampled_from([None, 0.5, 2.0]), slope=st.sampled_from([0.0, 0.1, 1.5]),
       threshold=st.sampled_from([0.0, 0.3]), shape=st.sampled_from([(3,), (2, 5), (2, 2, 3)]))
def test_relu_matches_numpy(max_value, slope, threshold, shape):
    x = _x(*shape, seed=len(shape)) * 2
    layer = layers.ReLU(max_value=max_value, negative_slope=slope, threshold=threshold)
    np.testing.assert_allclose(layer(x).numpy(), np_relu(x, max_value, slope, threshold),
                               rtol=1e-6, atol=1e-6)


def test_leaky_relu_elu_and_their_defaults():
    x = np.array([[-2.0, -0.5, 0.0, 0.5, 3.0]], np.float32)
    np.testing.assert_allclose(layers.LeakyReLU()(x).numpy(), np.where(x > 0, x, 0.3 * x),
                               rtol=1e-6)
    np.testing.assert_allclose(layers.LeakyReLU(negative_slope=2.0)(x).numpy(),
                               np.where(x > 0, x, 2.0 * x), rtol=1e-6)
    with pytest.warns(DeprecationWarning, match="negative_slope"):
        legacy = layers.LeakyReLU(alpha=0.1)
    assert legacy.negative_slope == 0.1
    np.testing.assert_allclose(layers.ELU()(x).numpy(), np.where(x > 0, x, np.expm1(x)),
                               rtol=1e-6)
    np.testing.assert_allclose(layers.ELU(alpha=0.5)(x).numpy(),
                               np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-6)
    assert layers.LeakyReLU().get_config()["negative_slope"] == 0.3
    relu_config = layers.ReLU().get_config()
    assert (relu_config["max_value"], relu_config["negative_slope"],
            relu_config["threshold"]) == (None, 0.0, 0.0)


@pytest.mark.parametrize("make,match", [
    (lambda: layers.ReLU(max_value=-1.0), "max_value of a ReLU layer"),
    (lambda: layers.ReLU(negative_slope=-0.1), "negative_slope of a ReLU layer"),
    (lambda: layers.ReLU(threshold=None), "threshold of a ReLU layer"),
    (lambda: layers.LeakyReLU(negative_slope=-1), "negative_slope of a LeakyReLU layer"),
    (lambda: layers.Softmax(axis="last"), "Softmax: expected an int"),
    (lambda: layers.LayerNormalization(axis=1.5), "expected an int"),
    (lambda: layers.Permute((1, 3)), "Invalid permutation argument `dims`"),
    (lambda: layers.RepeatVector(0), "positive integer"),
    (lambda: layers.GaussianNoise(1.5), "Expected a float value between 0 and 1"),
    (lambda: layers.SpatialDropout1D(2.0), "Invalid value 2.0 received for `rate`"),
    (lambda: layers.Rescaling("big"), "Rescaling: scale must be a number"),
])
def test_bad_arguments_raise_clear_errors(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(TypeError, match="integer value for `n`"):
        layers.RepeatVector(2.0)
    with pytest.raises(ValueError, match="expected ndim=2, found ndim=3"):
        layers.RepeatVector(2)(np.zeros((1, 2, 3), np.float32))
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
        layers.Permute((2, 1))(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="invalid axis 2 for inputs of rank 2"):
        layers.LayerNormalization(axis=2)(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="shared_axes entries must be axes 1 to 2"):
        layers.PReLU(shared_axes=[3])(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="mask must be broadcastable"):
        layers.Softmax()(np.zeros((2, 3), np.float32), mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        layers.SpatialDropout2D(0.5)(np.zeros((2, 3, 4), np.float32), training=True)


def test_prelu_weights_shared_axes_and_gradients():
    x = _x(2, 3, 4, seed=1)
    layer = layers.PReLU(shared_axes=[1])
    out = layer(x)
    assert [v.name for v in layer.weights] == ["p_re_lu/alpha:0"]
    assert layer.alpha.shape == (1, 4)
    np.testing.assert_array_equal(out.numpy(), np.maximum(x, 0))     # alpha starts at zero
    alpha = np.array([[0.1, -0.2, 0.5, 2.0]], np.float32)
    layer.set_weights([alpha])
    np.testing.assert_allclose(layer(x).numpy(), np.where(x >= 0, x, alpha * x), rtol=1e-6)
    assert layer.get_config()["shared_axes"] == [1]
    assert layers.PReLU(shared_axes=2).shared_axes == [2]
    full = layers.PReLU(alpha_initializer=keras.initializers.Constant(0.25), dtype="float64")
    full(np.zeros((1, 2, 3)))
    assert full.alpha.shape == (2, 3)
    check_weight_and_input_gradients(full, [_x(2, 2, 3, seed=2).astype(np.float64)])


@settings(max_examples=8, deadline=None)
@given(shape=st.sampled_from([(2, 5), (3, 2, 4), (1, 1)]), axis=st.sampled_from([-1, 0]))
def test_softmax_matches_numpy(shape, axis):
    x = _x(*shape, seed=3) * 3
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    np.testing.assert_allclose(layers.Softmax(axis=axis)(x).numpy(),
                               e / e.sum(axis=axis, keepdims=True), rtol=1e-5, atol=1e-6)


def test_softmax_masks_and_several_axes():
    x = _x(2, 3, 4, seed=4)
    mask = np.array([[1, 1, 0, 1], [0, 0, 0, 0]], bool)[:, None, :]       # [2, 1, 4]
    out = layers.Softmax()(x, mask=mask).numpy()
    e = np.where(mask, np.exp(x - x.max(-1, keepdims=True)), 0.0)
    expected = e / np.maximum(e.sum(-1, keepdims=True), 1e-30)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert np.all(out[1] == 0)                  # a fully masked row is all zeros, not uniform
    float_mask = np.where(mask, 0.9, 0.1).astype(np.float32)    # > 0.5 keeps
    np.testing.assert_allclose(layers.Softmax()(x, mask=float_mask).numpy(), out, rtol=1e-6)
    both = layers.Softmax(axis=[1, 2])(x).numpy()
    e = np.exp(x - x.max(axis=(1, 2), keepdims=True))
    np.testing.assert_allclose(both, e / e.sum(axis=(1, 2), keepdims=True), rtol=1e-5,
                               atol=1e-7)
    assert layers.Softmax(axis=(1, 2)).get_config()["axis"] == [1, 2]


# ---- LayerNormalization --------------------------------------------------------------------------
def np_layer_norm(x, axes, gamma=None, beta=None, epsilon=1e-3, rms=False):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    out = x / np.sqrt(var + epsilon) if rms else (x - mean) / np.sqrt(var + epsilon)
    if gamma is not None:
        out = out * gamma
    if beta is not None:
        out = out + beta
    return out


@settings(max_examples=8, deadline=None)
@given(shape=st.sampled_from([(2, 4), (2, 3, 4), (1, 2, 2, 3)]), center=st.booleans(),
       scale=st.booleans())
def test_layer_norm_matches_numpy(shape, center, scale):
    x = _x(*shape, seed=5) * 2 + 1
    layer = layers.LayerNormalization(center=center, scale=scale, epsilon=0.01)
    layer.build(shape)
    gamma = np.linspace(0.5, 2, shape[-1]).astype(np.float32)
    beta = np.linspace(-1, 1, shape[-1]).astype(np.float32)
    layer.set_weights([w for w, on in ((gamma, scale), (beta, center)) if on])
    expected = np_layer_norm(x, -1, gamma if scale else None, beta if center else None, 0.01)
    np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-4, atol=1e-5)
    # Training or not, the statistics are the example's own.
    np.testing.assert_allclose(layer(x, training=True).numpy(), expected, rtol=1e-4, atol=1e-5)


def test_layer_norm_weights_axes_and_rms_scaling():
    x = _x(2, 3, 4, seed=6)
    layer = layers.LayerNormalization(axis=[1, 2])
    out = layer(x)
    assert [v.name for v in layer.weights] == ["layer_normalization/gamma:0",
                                               "layer_normalization/beta:0"]
    assert layer.gamma.shape == (3, 4)
    np.testing.assert_allclose(out.numpy(), np_layer_norm(x, (1, 2)), rtol=1e-4, atol=1e-5)
    middle = layers.LayerNormalization(axis=1, gamma_initializer="zeros",
                                       beta_initializer="ones")
    np.testing.assert_allclose(middle(x).numpy(), np.ones_like(x))
    assert middle.gamma.shape == (3,)
    with pytest.warns(UserWarning, match="rms_scaling=True is deprecated"):
        rms = layers.LayerNormalization(rms_scaling=True, center=True)
    rms.build((2, 3, 4))
    assert [v.name.split("/")[-1] for v in rms.weights] == ["gamma:0"]   # no beta
    gamma = np.arange(1, 5, dtype=np.float32)
    rms.set_weights([gamma])
    np.testing.assert_allclose(rms(x).numpy(), np_layer_norm(x, -1, gamma, rms=True),
                               rtol=1e-4, atol=1e-5)
    config = rms.get_config()
    assert config["rms_scaling"] is True and config["epsilon"] == 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert layers.LayerNormalization().rms_scaling is False    # no warning by default


def test_layer_norm_gradients_match_finite_differences():
    layer = layers.LayerNormalization(axis=-1, dtype="float64",
                                      gamma_initializer=keras.initializers.Constant(1.5),
                                      beta_initializer=keras.initializers.Constant(0.2))
    check_weight_and_input_gradients(layer, [_x(3, 4, seed=7).astype(np.float64)])


# ---- Permute, RepeatVector, Rescaling ------------------------------------------------------------
def test_permute_repeat_vector_and_rescaling():
    x = _x(2, 3, 4, 5, seed=8)
    layer = layers.Permute((3, 1, 2))
    np.testing.assert_array_equal(layer(x).numpy(), x.transpose(0, 3, 1, 2))
    assert layer.compute_output_shape((None, 3, 4, 5)) == tf.TensorShape([None, 5, 3, 4])
    assert layer.get_config()["dims"] == (3, 1, 2)
    v = _x(2, 3, seed=9)
    out = layers.RepeatVector(4)(v).numpy()
    np.testing.assert_array_equal(out, np.repeat(v[:, None, :], 4, axis=1))
    assert layers.RepeatVector(4).compute_output_shape((None, 3)) == tf.TensorShape([None, 4, 3])
    pixels = np.array([[0, 128, 255]], np.uint8)
    scaled = layers.Rescaling(1 / 127.5, offset=-1)(pixels)
    assert scaled.dtype == tf.float32
    np.testing.assert_allclose(scaled.numpy(), pixels / 127.5 - 1, rtol=1e-6, atol=1e-6)
    per_channel = layers.Rescaling(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(per_channel(np.ones((1, 2, 3), np.float32)).numpy(),
                               np.ones((1, 2, 3)) * [1, 2, 3])
    config = per_channel.get_config()
    assert config["scale"] == {"class_name": "__numpy__",
                               "config": {"value": [1.0, 2.0, 3.0], "dtype": "float64"}}
    np.testing.assert_array_equal(layers.Rescaling.from_config(config).scale, [1.0, 2.0, 3.0])


# ---- training-only layers ------------------------------------------------------------------------
def test_gaussian_noise_only_in_training():
    x = np.zeros((200, 50), np.float32)
    layer = layers.GaussianNoise(0.5, seed=3)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    noise = layer(x, training=True).numpy()
    assert abs(noise.std() - 0.5) < 0.02 and abs(noise.mean()) < 0.02
    assert not np.array_equal(layer(x, training=True).numpy(), noise)
    assert layer.get_config()["stddev"] == 0.5 and layer.get_config()["seed"] == 3


@pytest.mark.parametrize("cls,shape,data_format,channel_axis", [
    (layers.SpatialDropout1D, (20, 6, 30), None, 2),
    (layers.SpatialDropout2D, (10, 3, 4, 30), "channels_last", 3),
    (layers.SpatialDropout2D, (10, 30, 3, 4), "channels_first", 1),
])
def test_spatial_dropout_drops_whole_channels(cls, shape, data_format, channel_axis):
    kwargs = {} if data_format is None else {"data_format": data_format}
    layer = cls(0.4, seed=5, **kwargs)
    x = np.ones(shape, np.float32)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    out = layer(x, training=True).numpy()
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.6)}
    spatial = tuple(a for a in range(1, len(shape)) if a != channel_axis)
    assert np.all(out == out.max(axis=spatial, keepdims=True))   # constant over a channel
    assert abs((out == 0).mean() - 0.4) < 0.1
    config = layer.get_config()
    assert "noise_shape" not in config and config["rate"] == 0.4
    if data_format:
        assert config["data_format"] == data_format


# ---- in models and compiled steps ----------------------------------------------------------------
def test_layers_train_inside_a_tf_function_step():
    model = keras.Sequential([
        keras.Input((3, 4)), layers.GaussianNoise(0.1, seed=1), layers.SpatialDropout1D(0.2),
        layers.Dense(5), layers.PReLU(), layers.LayerNormalization(), layers.Permute((2, 1)),
        layers.ReLU(max_value=6.0), layers.Flatten(), layers.RepeatVector(2),
        layers.LeakyReLU(), layers.ELU(), layers.Softmax()])
    optimizer = keras.optimizers.SGD(0.1)
    x = _x(4, 3, 4, seed=10)
    target = np.full((4, 2, 15), 1 / 15, np.float32)

    @tf.function
    def train_step(inputs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(inputs, training=True) - target))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    before = [w.copy() for w in model.get_weights()]
    train_step(x)
    assert all(g.shape == w.shape for g, w in zip(model.get_weights(), before))
    changed = [not np.array_equal(a, b) for a, b in zip(model.get_weights(), before)]
    assert all(changed), changed      # every trainable weight (Dense, PReLU, LayerNorm) moved
    out = model(x).numpy()
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)


def test_sequential_and_functional_models_save_and_reload(tmp_path):
    sequential = keras.Sequential([
        keras.Input((3, 4)), layers.Rescaling(0.5, offset=0.1), layers.GaussianNoise(0.1),
        layers.SpatialDropout1D(0.3), layers.PReLU(shared_axes=[1],
                                                   alpha_initializer="ones"),
        layers.LayerNormalization(axis=[1, 2], epsilon=0.01), layers.Permute((2, 1)),
        layers.ReLU(max_value=1.0, negative_slope=0.1), layers.LeakyReLU(0.2),
        layers.ELU(0.7), layers.Flatten(), layers.RepeatVector(2), layers.Softmax(axis=[1, 2])])
    x = _x(2, 3, 4, seed=11)
    sequential.layers[3].set_weights([np.array([[0.1, 0.2, 0.3, 0.4]], np.float32)])
    loaded = assert_model_round_trips(sequential, x, tmp_path / "seq")
    assert loaded.layers[4].get_config()["axis"] == [1, 2]
    assert loaded.layers[6].get_config()["max_value"] == 1.0
    inputs = keras.Input((3,))
    outputs = layers.Softmax()(layers.SpatialDropout2D(0.2)(layers.Reshape((1, 1, 3))(
        layers.LayerNormalization(rms_scaling=False)(inputs))))
    functional = keras.Model(inputs, outputs)
    assert_model_round_trips(functional, _x(2, 3, seed=12), tmp_path / "fn")
