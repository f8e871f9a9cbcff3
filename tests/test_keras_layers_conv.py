"""Keras convolution, pooling and spatial layers beyond Conv2D: Conv1D, Conv2DTranspose,
DepthwiseConv2D, SeparableConv2D, the 1-D pools, UpSampling, ZeroPadding and Cropping."""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import layers
from keras_layer_checks import assert_model_round_trips, check_weight_and_input_gradients
from test_conv_variants import (np_conv1d, np_conv2d_transpose, np_depthwise, np_pool1d)


def _rng(seed):
    return np.random.default_rng(seed)


def _set_random_weights(layer, seed):
    rng = _rng(seed)
    layer.set_weights([rng.uniform(-1, 1, w.shape).astype(w.dtype) for w in layer.get_weights()])
    return layer.get_weights()


# ---- Conv1D -------------------------------------------------------------------------------------
def np_causal_conv1d(x, w, stride, dilation):
    left = (w.shape[0] - 1) * dilation
    return np_conv1d(np.pad(x, [(0, 0), (left, 0), (0, 0)]), w, stride, "VALID", dilation)


@pytest.mark.parametrize("padding,strides,dilation,groups", [
    ("valid", 1, 1, 1), ("same", 2, 1, 1), ("causal", 1, 2, 1), ("causal", 2, 1, 2),
    ("same", 1, 2, 2)])
def test_conv1d_matches_numpy(padding, strides, dilation, groups):
    x = _rng(0).normal(size=(2, 7, 4))
    layer = layers.Conv1D(6, 3, strides=strides, padding=padding, dilation_rate=dilation,
                          groups=groups, activation="tanh", dtype="float64")
    layer.build(x.shape)
    kernel, bias = _set_random_weights(layer, 1)
    assert kernel.shape == (3, 4 // groups, 6)
    per = 6 // groups
    cin = 4 // groups
    parts = []
    for g in range(groups):
        xg, wg = x[..., g * cin:(g + 1) * cin], kernel[..., g * per:(g + 1) * per]
        parts.append(np_causal_conv1d(xg, wg, strides, dilation) if padding == "causal"
                     else np_conv1d(xg, wg, strides, padding.upper(), dilation))
    expected = np.tanh(np.concatenate(parts, axis=-1) + bias)
    out = layer(x)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    assert layer.compute_output_shape((None, 7, 4)) == tf.TensorShape([None, 7 if padding in (
        "same", "causal") and strides == 1 else expected.shape[1], 6])
    assert out.shape[1] == layer.compute_output_shape(x.shape)[1]


def test_conv1d_causal_output_ignores_the_future():
    layer = layers.Conv1D(2, 3, padding="causal", dtype="float64")
    x = _rng(2).normal(size=(1, 6, 3))
    before = layer(x).numpy()
    x[:, 4:] += 10.0
    after = layer(x).numpy()
    np.testing.assert_array_equal(before[:, :4], after[:, :4])
    assert not np.allclose(before[:, 4:], after[:, 4:])


def test_conv1d_channels_first_and_errors():
    x = _rng(3).normal(size=(2, 5, 3))
    last = layers.Conv1D(2, 2, padding="same", dtype="float64")
    y = last(x)
    first = layers.Conv1D(2, 2, padding="same", data_format="channels_first", dtype="float64")
    first.build((None, 3, 5))
    first.set_weights(last.get_weights())
    np.testing.assert_allclose(np.transpose(first(np.transpose(x, (0, 2, 1))).numpy(),
                                            (0, 2, 1)), y.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match=r'must be one of "valid", "same", "causal"'):
        layers.Conv1D(2, 3, padding="full")
    with pytest.raises(ValueError, match=r"Conv2D .*must be one of \"valid\", \"same\"|"
                                         r"must be one of \"valid\", \"same\". Received"):
        layers.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="dilation_rate > 1"):
        layers.Conv1D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match=r"expected min_ndim=3, found ndim=2"):
        layers.Conv1D(2, 3)(np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"evenly divisible by the number of groups"):
        layers.Conv1D(3, 3, groups=2)


# ---- Conv2DTranspose ----------------------------------------------------------------------------
@pytest.mark.parametrize("padding,strides,output_padding,dilation", [
    ("valid", (1, 1), None, (1, 1)), ("same", (2, 2), None, (1, 1)),
    ("valid", (2, 3), (1, 2), (1, 1)), ("same", (2, 2), (1, 1), (1, 1)),
    ("valid", (1, 1), None, (2, 1))])
def test_conv2d_transpose_matches_numpy(padding, strides, output_padding, dilation):
    x = _rng(4).normal(size=(2, 3, 4, 3))
    layer = layers.Conv2DTranspose(2, (3, 2), strides=strides, padding=padding,
                                   output_padding=output_padding, dilation_rate=dilation,
                                   dtype="float64")
    layer.build(x.shape)
    kernel, bias = _set_random_weights(layer, 5)
    assert kernel.shape == (3, 2, 2, 3)   # [height, width, filters, in_channels]
    out_shape = tuple(layer.compute_output_shape(x.shape).as_list())
    out = layer(x)
    assert out.shape == out_shape
    expected = np_conv2d_transpose(x, kernel, out_shape, strides, padding.upper(),
                                   dilation) + bias
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_conv2d_transpose_output_sizes_follow_keras():
    # (input, kernel, stride, padding, output_padding) -> size, by Keras's formula.
    layer = layers.Conv2DTranspose(1, (3, 4), strides=(2, 2), padding="valid")
    assert layer.compute_output_shape((None, 5, 5, 1)).as_list() == [None, 11, 12, 1]
    layer = layers.Conv2DTranspose(1, 3, strides=2, padding="same")
    assert layer.compute_output_shape((None, 5, 6, 1)).as_list() == [None, 10, 12, 1]
    layer = layers.Conv2DTranspose(1, 3, strides=2, padding="same", output_padding=1)
    assert layer.compute_output_shape((None, 5, 6, 1)).as_list() == [None, 10, 12, 1]
    layer = layers.Conv2DTranspose(1, 3, strides=2, padding="same", output_padding=0)
    assert layer.compute_output_shape((None, 5, 6, 1)).as_list() == [None, 9, 11, 1]
    with pytest.raises(ValueError, match=r"strides must be greater than output padding"):
        layers.Conv2DTranspose(1, 3, strides=2, output_padding=2)


# ---- depthwise and separable --------------------------------------------------------------------
@pytest.mark.parametrize("padding,strides,dilation,multiplier", [
    ("valid", (1, 1), (1, 1), 1), ("same", (2, 2), (1, 1), 2), ("same", (1, 1), (2, 2), 1)])
def test_depthwise_conv2d_matches_numpy(padding, strides, dilation, multiplier):
    x = _rng(6).normal(size=(2, 5, 5, 3))
    layer = layers.DepthwiseConv2D(3, strides=strides, padding=padding,
                                   depth_multiplier=multiplier, dilation_rate=dilation,
                                   activation="relu", dtype="float64")
    layer.build(x.shape)
    kernel, bias = _set_random_weights(layer, 7)
    assert [w.name.split("/")[-1] for w in layer.weights] == ["kernel:0", "bias:0"]
    assert kernel.shape == (3, 3, 3, multiplier) and bias.shape == (3 * multiplier,)
    expected = np.maximum(np_depthwise(x, kernel, strides, padding.upper(), dilation) + bias, 0)
    out = layer(x)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    assert tuple(layer.compute_output_shape(x.shape).as_list()) == expected.shape


def test_separable_conv2d_matches_numpy_and_channels_first():
    x = _rng(8).normal(size=(2, 6, 5, 2))
    layer = layers.SeparableConv2D(4, (3, 2), strides=2, padding="same", depth_multiplier=2,
                                   dtype="float64")
    layer.build(x.shape)
    depthwise, pointwise, bias = _set_random_weights(layer, 9)
    assert [w.name.split("/")[-1] for w in layer.weights] == [
        "depthwise_kernel:0", "pointwise_kernel:0", "bias:0"]
    assert depthwise.shape == (3, 2, 2, 2) and pointwise.shape == (1, 1, 4, 4)
    expected = np_depthwise(x, depthwise, (2, 2), "SAME", (1, 1)) @ pointwise[0, 0] + bias
    np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-12, atol=1e-12)
    first = layers.SeparableConv2D(4, (3, 2), strides=2, padding="same", depth_multiplier=2,
                                   data_format="channels_first", dtype="float64")
    first.build((None, 2, 6, 5))
    first.set_weights(layer.get_weights())
    y = first(np.transpose(x, (0, 3, 1, 2))).numpy()
    np.testing.assert_allclose(np.transpose(y, (0, 2, 3, 1)), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="depth_multiplier"):
        layers.DepthwiseConv2D(3, depth_multiplier=0)
    with pytest.raises(ValueError, match="dilation_rate > 1"):
        layers.SeparableConv2D(2, 3, strides=2, dilation_rate=2)


@pytest.mark.parametrize("layer,shape", [
    (layers.Conv1D(2, 2, padding="causal", dilation_rate=2, dtype="float64"), (1, 4, 2)),
    (layers.Conv2DTranspose(2, 2, strides=2, output_padding=1, dtype="float64"), (1, 2, 2, 2)),
    (layers.DepthwiseConv2D(2, depth_multiplier=2, padding="same", dtype="float64"),
     (1, 3, 3, 2)),
    (layers.SeparableConv2D(2, 2, padding="same", dtype="float64"), (1, 3, 3, 2))])
def test_conv_layer_gradients_match_finite_differences(layer, shape):
    check_weight_and_input_gradients(layer, [_rng(10).normal(size=shape)])


# ---- pooling ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,reduce", [(layers.MaxPooling1D, np.max),
                                        (layers.AveragePooling1D, np.mean)])
@pytest.mark.parametrize("pool,strides,padding", [(2, None, "valid"), (3, 2, "same"),
                                                  (3, 1, "valid")])
def test_pooling1d_matches_numpy(cls, reduce, pool, strides, padding):
    x = _rng(11).normal(size=(2, 7, 3))
    layer = cls(pool, strides=strides, padding=padding)
    expected = np_pool1d(x, pool, strides or pool, padding.upper(), reduce)
    out = layer(x.astype(np.float32))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape((None, 7, 3)).as_list() == [None, expected.shape[1], 3]
    first = cls(pool, strides=strides, padding=padding, data_format="channels_first")
    y = first(np.transpose(x, (0, 2, 1)).astype(np.float32)).numpy()
    np.testing.assert_allclose(np.transpose(y, (0, 2, 1)), expected, rtol=1e-5, atol=1e-6)
    assert first.compute_output_shape((None, 3, 7)).as_list() == [None, 3, expected.shape[1]]


def test_global_pooling1d_keepdims_channels_first_and_mask():
    x = _rng(12).normal(size=(2, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(layers.GlobalAveragePooling1D()(x).numpy(), x.mean(1),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling1D()(x).numpy(), x.max(1))
    kept = layers.GlobalMaxPooling1D(keepdims=True)
    assert kept(x).shape == (2, 1, 3)
    assert kept.compute_output_shape((None, 5, 3)).as_list() == [None, 1, 3]
    first = layers.GlobalAveragePooling1D(data_format="channels_first", keepdims=True)
    np.testing.assert_allclose(first(x).numpy(), x.mean(2, keepdims=True), rtol=1e-5, atol=1e-6)
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], bool)
    masked = layers.GlobalAveragePooling1D()(x, mask=mask).numpy()
    np.testing.assert_allclose(masked, [x[0, :2].mean(0), x[1, :4].mean(0)], rtol=1e-5, atol=1e-6)
    # The mask of an Embedding with mask_zero reaches the pool.
    ids = np.array([[3, 1, 0, 0]])
    embedding = layers.Embedding(5, 2, mask_zero=True)
    pooled = layers.GlobalAveragePooling1D()(embedding(ids)).numpy()
    table = embedding.get_weights()[0]
    np.testing.assert_allclose(pooled, table[[3, 1]].mean(0, keepdims=True), rtol=1e-5, atol=1e-6)
    assert layers.MaxPool1D is layers.MaxPooling1D and layers.GlobalAvgPool1D is \
        layers.GlobalAveragePooling1D
    with pytest.raises(ValueError, match=r"expected ndim=3, found ndim=4"):
        layers.MaxPooling1D()(np.zeros((1, 2, 2, 2), np.float32))


# ---- up-sampling, padding, cropping -------------------------------------------------------------
def np_bilinear_upsample(x, sh, sw):
    """TF's bilinear resize (half-pixel centres) of NHWC x by integer factors."""
    def taps(size, scale):
        pos = np.clip((np.arange(size * scale) + 0.5) / scale - 0.5, 0, size - 1)
        lo = np.floor(pos).astype(int)
        return lo, np.minimum(lo + 1, size - 1), pos - lo
    (t, b, fy), (lft, r, fx) = taps(x.shape[1], sh), taps(x.shape[2], sw)
    rows = x[:, t] * (1 - fy)[None, :, None, None] + x[:, b] * fy[None, :, None, None]
    return rows[:, :, lft] * (1 - fx)[None, None, :, None] + rows[:, :, r] * fx[None, None, :, None]


def test_upsampling_matches_numpy():
    x = _rng(13).normal(size=(2, 3, 4, 2))
    seq = x[:, 0]
    np.testing.assert_array_equal(layers.UpSampling1D(3)(seq).numpy(),
                                  np.repeat(seq, 3, axis=1).astype(np.float32))
    up = layers.UpSampling2D((2, 3))
    np.testing.assert_array_equal(up(x).numpy(), np.repeat(np.repeat(x, 2, 1), 3, 2).astype(
        np.float32))
    assert up.compute_output_shape((None, 3, 4, 2)).as_list() == [None, 6, 12, 2]
    first = layers.UpSampling2D(2, data_format="channels_first")
    np.testing.assert_array_equal(first(x).numpy(), np.repeat(np.repeat(x, 2, 2), 2, 3).astype(
        np.float32))
    bilinear = layers.UpSampling2D((2, 3), interpolation="bilinear", dtype="float64")
    out = bilinear(x)
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out.numpy(), np_bilinear_upsample(x, 2, 3), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="interpolation"):
        layers.UpSampling2D(interpolation="linear")


def test_zero_padding_and_cropping_match_numpy():
    x = _rng(14).normal(size=(2, 5, 6, 3)).astype(np.float32)
    seq = x[:, :, 0]
    np.testing.assert_array_equal(layers.ZeroPadding1D((1, 2))(seq).numpy(),
                                  np.pad(seq, [(0, 0), (1, 2), (0, 0)]))
    pad = layers.ZeroPadding2D(((1, 0), (2, 3)))
    np.testing.assert_array_equal(pad(x).numpy(), np.pad(x, [(0, 0), (1, 0), (2, 3), (0, 0)]))
    assert pad.compute_output_shape((None, 5, 6, 3)).as_list() == [None, 6, 11, 3]
    assert layers.ZeroPadding2D(2).padding == ((2, 2), (2, 2))
    assert layers.ZeroPadding2D((1, 2)).padding == ((1, 1), (2, 2))
    np.testing.assert_array_equal(
        layers.ZeroPadding2D(1, data_format="channels_first")(x).numpy(),
        np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]))
    np.testing.assert_array_equal(layers.Cropping1D((1, 2))(seq).numpy(), seq[:, 1:3])
    np.testing.assert_array_equal(layers.Cropping1D(0)(seq).numpy(), seq)
    crop = layers.Cropping2D(((1, 2), (0, 3)))
    np.testing.assert_array_equal(crop(x).numpy(), x[:, 1:3, :3])
    assert crop.compute_output_shape((None, 5, 6, 3)).as_list() == [None, 2, 3, 3]
    np.testing.assert_array_equal(
        layers.Cropping2D(1, data_format="channels_first")(x).numpy(), x[:, :, 1:5, 1:2])
    with pytest.raises(ValueError, match=r"Cropping1D .*leaves nothing"):
        layers.Cropping1D((3, 3))(seq)
    with pytest.raises(ValueError, match=r"`padding` should be an int"):
        layers.ZeroPadding2D((1, 2, 3))
    with pytest.raises(ValueError, match=r"`cropping` should be an int"):
        layers.Cropping2D(-1)


# ---- training, configs, saving ------------------------------------------------------------------
def _models():
    seq_in = keras.Input((8, 3))
    h = layers.ZeroPadding1D(1)(seq_in)
    h = layers.Conv1D(4, 3, padding="causal", dilation_rate=2, groups=1, activation="tanh")(h)
    h = layers.MaxPooling1D(2)(h)
    h = layers.UpSampling1D(2)(h)
    h = layers.Cropping1D((1, 1))(h)
    h = layers.AveragePooling1D(2, strides=1, padding="same")(h)
    h = layers.Conv1D(4, 2, groups=2)(h)
    h = layers.GlobalMaxPooling1D(keepdims=True)(h)
    seq_out = layers.Dense(1)(layers.GlobalAveragePooling1D()(h))
    img_in = keras.Input((5, 5, 2))
    g = layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu")(img_in)
    g = layers.SeparableConv2D(3, 2, activation="tanh")(g)
    g = layers.Conv2DTranspose(2, 3, strides=2, output_padding=1, padding="same")(g)
    g = layers.UpSampling2D(2, interpolation="bilinear")(g)
    g = layers.ZeroPadding2D(1)(g)
    g = layers.Cropping2D(((2, 1), (0, 3)))(g)
    img_out = layers.Dense(1)(layers.Flatten()(g))
    return keras.Model(seq_in, seq_out), keras.Model(img_in, img_out)


def test_train_step_in_a_function_changes_every_weight():
    optimizer = keras.optimizers.SGD(0.1)
    seq_model, img_model = _models()
    variables = seq_model.trainable_variables + img_model.trainable_variables
    assert len(variables) == 6 + 9   # kernels and biases of the weighted layers
    seq_x = _rng(15).normal(size=(2, 8, 3)).astype(np.float32)
    img_x = _rng(16).normal(size=(2, 5, 5, 2)).astype(np.float32)

    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(seq_model(a) ** 2) + tf.reduce_mean(img_model(b) ** 2)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    before = [v.numpy().copy() for v in variables]
    step(seq_x, img_x)
    for v, old in zip(variables, before):
        assert not np.allclose(v.numpy(), old), f"{v.name} did not change"


def test_models_round_trip_through_keras_files(tmp_path):
    seq_model, img_model = _models()
    assert_model_round_trips(seq_model, _rng(17).normal(size=(2, 8, 3)).astype(np.float32),
                             tmp_path / "seq")
    loaded = assert_model_round_trips(
        img_model, _rng(18).normal(size=(2, 5, 5, 2)).astype(np.float32), tmp_path / "img")
    conv_t = [layer for layer in loaded.layers if isinstance(layer, layers.Conv2DTranspose)][0]
    assert conv_t.output_padding == (1, 1) and conv_t.strides == (2, 2)


@pytest.mark.parametrize("layer", [
    layers.Conv1D(3, 2, strides=2, padding="same", groups=1, kernel_regularizer="l2"),
    layers.Conv2DTranspose(3, (2, 3), strides=(2, 1), output_padding=(1, 0), use_bias=False),
    layers.DepthwiseConv2D(3, depth_multiplier=2, depthwise_initializer="ones"),
    layers.SeparableConv2D(4, 3, depth_multiplier=3, pointwise_initializer="zeros"),
    layers.MaxPooling1D(3, strides=2, padding="same"), layers.AveragePooling1D(),
    layers.GlobalAveragePooling1D(keepdims=True), layers.GlobalMaxPooling1D(),
    layers.UpSampling1D(3), layers.UpSampling2D((2, 1), interpolation="bilinear"),
    layers.ZeroPadding1D((1, 2)), layers.ZeroPadding2D(((1, 2), (3, 4))),
    layers.Cropping1D(2), layers.Cropping2D(((1, 0), (0, 1)), data_format="channels_first")])
def test_get_config_round_trips(layer):
    config = layer.get_config()
    clone = layers.deserialize(layers.serialize(layer))
    assert type(clone) is type(layer) and clone.get_config() == config


def test_configs_use_keras_names():
    config = layers.DepthwiseConv2D(3).get_config()
    assert {"depthwise_initializer", "depthwise_regularizer", "depthwise_constraint",
            "depth_multiplier", "kernel_size", "strides", "padding", "dilation_rate",
            "bias_initializer"} <= set(config)
    assert "kernel_initializer" not in config
    config = layers.SeparableConv2D(2, 3).get_config()
    assert {"pointwise_initializer", "depthwise_initializer", "filters"} <= set(config)
    assert layers.Conv2DTranspose(2, 3).get_config()["output_padding"] is None
    assert layers.ZeroPadding1D(2).get_config()["padding"] == (2, 2)
    assert layers.Cropping2D(1).get_config()["cropping"] == ((1, 1), (1, 1))
    keras.backend.clear_session()
    assert layers.Conv1D(2, 3).name == "conv1d"
    assert layers.Conv2DTranspose(2, 3).name == "conv2d_transpose"


def test_transposed_and_depthwise_layers_trace_with_an_unknown_batch_size():
    model = keras.Sequential([keras.Input((3, 3, 2)),
                              layers.Conv2DTranspose(2, 3, strides=2, padding="same"),
                              layers.DepthwiseConv2D(2)])
    x = _rng(19).normal(size=(4, 3, 3, 2)).astype(np.float32)

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 3, 2], tf.float32)])
    def step(a):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(a) ** 2)
        return model(a), tape.gradient(loss, model.trainable_variables)

    out, grads = step(x)
    np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert all(g is not None and g.shape == v.shape
               for g, v in zip(grads, model.trainable_variables))
