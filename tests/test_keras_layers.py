"""Keras layers, initializers, activations and backend: math against NumPy, weights, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import activations, backend, initializers, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _rng(seed=0):
    return np.random.RandomState(seed)


# ---- NumPy references ---------------------------------------------------------------------------
def _same_padding(n, k, s, d=1):
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return out, total // 2, total - total // 2


def np_conv2d(x, w, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """NHWC x, HWIO w."""
    kh, kw, _, cout = w.shape
    (sh, sw), (dh, dw) = strides, dilation
    n, h, wd, _ = x.shape
    if padding == "same":
        oh, top, bottom = _same_padding(h, kh, sh, dh)
        ow, left, right = _same_padding(wd, kw, sw, dw)
        x = np.pad(x, [(0, 0), (top, bottom), (left, right), (0, 0)])
    else:
        oh = (h - (kh - 1) * dh - 1) // sh + 1
        ow = (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, oh, ow, cout), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            out += np.einsum("nhwc,co->nhwo", patch, w[i, j])
    return out


def np_pool(x, size, strides, padding, kind):
    n, h, w, c = x.shape
    (ph, pw), (sh, sw) = size, strides
    if padding == "same":
        oh, top, _ = _same_padding(h, ph, sh)
        ow, left, _ = _same_padding(w, pw, sw)
    else:
        oh, top = (h - ph) // sh + 1, 0
        ow, left = (w - pw) // sw + 1, 0
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * sh - top, j * sw - left
            window = x[:, max(r0, 0):r0 + ph, max(c0, 0):c0 + pw]
            out[:, i, j] = window.max(axis=(1, 2)) if kind == "max" else window.mean(axis=(1, 2))
    return out


# ---- Dense ---------------------------------------------------------------------------------------
@settings(max_examples=10)
@given(batch=st.integers(1, 4), features=st.integers(1, 5), units=st.integers(1, 4),
       activation=st.sampled_from([None, "relu", "tanh", "sigmoid"]))
def test_dense_matches_numpy(batch, features, units, activation):
    rng = _rng(batch * 100 + features * 10 + units)
    x = rng.randn(batch, features).astype(np.float32)
    kernel = rng.randn(features, units).astype(np.float32)
    bias = rng.randn(units).astype(np.float32)
    layer = layers.Dense(units, activation=activation)
    layer.build((None, features))
    layer.set_weights([kernel, bias])
    expected = x @ kernel + bias
    expected = {None: lambda v: v, "relu": lambda v: np.maximum(v, 0), "tanh": np.tanh,
                "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[activation](expected)
    np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_dense_on_rank3_inputs_multiplies_last_axis():
    rng = _rng(1)
    x = rng.randn(2, 3, 4).astype(np.float32)
    layer = layers.Dense(5, use_bias=False)
    out = layer(x)
    assert out.shape == (2, 3, 5)
    assert len(layer.weights) == 1
    np.testing.assert_allclose(out.numpy(), x @ layer.kernel.numpy(), rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape((None, 3, 4)) == tf.TensorShape([None, 3, 5])


def test_dense_builds_on_first_call_with_tensorshape_and_names_weights():
    seen = []

    class Probe(layers.Dense):
        def build(self, input_shape):
            seen.append(input_shape)
            super().build(input_shape)

    layer = Probe(3)
    assert not layer.built and layer.weights == []
    layer(np.zeros((2, 4), np.float32))
    assert layer.built
    assert isinstance(seen[0], tf.TensorShape) and seen[0] == tf.TensorShape([2, 4])
    assert [v.name for v in layer.weights] == ["probe/kernel:0", "probe/bias:0"]
    assert layer.kernel.shape == (4, 3) and layer.bias.shape == (3,)
    assert layer.count_params() == 15
    layer(np.zeros((1, 4), np.float32))
    assert len(seen) == 1  # built once


def test_dense_input_checks():
    with pytest.raises(ValueError, match=r'layer "dense".*expected min_ndim=2, found ndim=1'):
        layers.Dense(2)(np.zeros(3, np.float32))
    layer = layers.Dense(2, name="d")
    layer(np.zeros((1, 3), np.float32))
    with pytest.raises(ValueError, match=r'layer "d".*axis -1 of input shape to have value 3.*'
                                         r"\(2, 4\)"):
        layer(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="units"):
        layers.Dense(-1)
    with pytest.raises(TypeError, match="keyword argument not understood: 'foo'"):
        layers.Dense(2, foo=1)


def test_inputs_are_converted_and_cast_to_the_layer_dtype():
    layer = layers.Dense(2)
    assert layer.dtype == "float32"
    assert layer(np.ones((1, 3), np.float64)).dtype == tf.float32
    assert layer(np.ones((1, 3), np.int32)).dtype == tf.float32
    assert layer([[1.0, 2.0, 3.0]]).dtype == tf.float32
    wide = layers.Dense(2, dtype="float64")
    out = wide(np.ones((1, 3), np.float32))
    assert out.dtype == tf.float64 and wide.kernel.dtype == tf.float64


# ---- Conv2D --------------------------------------------------------------------------------------
@pytest.mark.parametrize("padding,strides,dilation", [
    ("valid", (1, 1), (1, 1)), ("same", (1, 1), (1, 1)), ("same", (2, 2), (1, 1)),
    ("valid", (2, 1), (1, 1)), ("same", (1, 1), (2, 2))])
def test_conv2d_matches_numpy(padding, strides, dilation):
    rng = _rng(2)
    x = rng.randn(2, 6, 5, 3).astype(np.float32)
    layer = layers.Conv2D(4, (3, 2), strides=strides, padding=padding, dilation_rate=dilation,
                          activation="relu")
    out = layer(x)
    kernel, bias = layer.get_weights()
    assert kernel.shape == (3, 2, 3, 4)  # HWIO
    bias = rng.randn(4).astype(np.float32)
    layer.set_weights([kernel, bias])
    expected = np.maximum(np_conv2d(x, kernel, strides, padding, dilation) + bias, 0)
    out = layer(x)
    assert out.shape == expected.shape
    assert layer.compute_output_shape((None, 6, 5, 3)) == tf.TensorShape([None]
                                                                         + list(expected.shape[1:]))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)


@settings(max_examples=15)
@given(size=st.tuples(st.integers(3, 7), st.integers(3, 7)), kernel=st.integers(1, 3),
       stride=st.integers(1, 3), padding=st.sampled_from(["valid", "same"]))
def test_conv2d_and_pool_output_shapes_match_compute_output_shape(size, kernel, stride, padding):
    x = _rng(sum(size)).randn(1, size[0], size[1], 2).astype(np.float32)
    conv = layers.Conv2D(3, kernel, strides=stride, padding=padding)
    out = conv(x)
    assert out.shape == conv.compute_output_shape(x.shape)
    np.testing.assert_allclose(out.numpy(), np_conv2d(x, conv.kernel.numpy(), (stride, stride),
                                                      padding), rtol=1e-4, atol=1e-5)
    pool = layers.MaxPool2D(kernel, strides=stride, padding=padding)
    assert pool(x).shape == pool.compute_output_shape(x.shape)


def test_conv2d_channels_first_and_groups_agree_with_channels_last():
    rng = _rng(3)
    x = rng.randn(1, 5, 5, 4).astype(np.float32)
    last = layers.Conv2D(2, 3, padding="same")
    y = last(x)
    first = layers.Conv2D(2, 3, padding="same", data_format="channels_first")
    y_first = first(np.transpose(x, [0, 3, 1, 2]))
    first.set_weights(last.get_weights())
    y_first = first(np.transpose(x, [0, 3, 1, 2]))
    np.testing.assert_allclose(np.transpose(y_first.numpy(), [0, 2, 3, 1]), y.numpy(), rtol=1e-5,
                               atol=1e-5)
    grouped = layers.Conv2D(4, 1, groups=2, use_bias=False)
    out = grouped(x)
    (kernel,) = grouped.get_weights()
    assert kernel.shape == (1, 1, 2, 4)
    expected = np.concatenate([x[..., :2] @ kernel[0, 0, :, :2], x[..., 2:] @ kernel[0, 0, :, 2:]],
                              axis=-1)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_conv2d_errors():
    with pytest.raises(ValueError, match=r'layer "conv2d".*expected min_ndim=4, found ndim=3'):
        layers.Conv2D(3, 2)(np.zeros((4, 3, 3), np.float32))
    with pytest.raises(ValueError, match="padding"):
        layers.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="filters"):
        layers.Conv2D(0, 3)
    with pytest.raises(ValueError, match="dilation_rate > 1"):
        layers.Conv2D(2, 3, strides=2, dilation_rate=2)
    conv = layers.Conv2D(2, 3, name="c")
    conv(np.zeros((1, 5, 5, 3), np.float32))
    with pytest.raises(ValueError, match=r'layer "c".*axis -1 of input shape to have value 3'):
        conv(np.zeros((1, 5, 5, 2), np.float32))


# ---- pooling -------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,kind", [(layers.MaxPool2D, "max"), (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("size,strides,padding", [
    ((2, 2), None, "valid"), ((3, 3), (2, 2), "same"), ((2, 3), (1, 2), "valid")])
def test_pooling_matches_numpy(cls, kind, size, strides, padding):
    x = _rng(4).randn(2, 5, 7, 3).astype(np.float32)
    layer = cls(pool_size=size, strides=strides, padding=padding)
    assert layer.strides == (size if strides is None else strides)
    expected = np_pool(x.astype(np.float64), size, layer.strides, padding, kind)
    out = layer(x)
    assert out.shape == expected.shape
    assert layer.compute_output_shape((None, 5, 7, 3)) == tf.TensorShape(
        [None] + list(expected.shape[1:]))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_pool_aliases_and_rank_check():
    assert layers.MaxPool2D is layers.MaxPooling2D and layers.AvgPool2D is layers.AveragePooling2D
    assert layers.MaxPool2D().name == "max_pooling2d"
    with pytest.raises(ValueError, match=r"expected ndim=4, found ndim=3"):
        layers.MaxPool2D()(np.zeros((4, 3, 3), np.float32))


def test_global_pooling():
    x = _rng(5).randn(2, 3, 4, 5).astype(np.float32)
    np.testing.assert_allclose(layers.GlobalAveragePooling2D()(x).numpy(), x.mean(axis=(1, 2)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling2D()(x).numpy(), x.max(axis=(1, 2)))
    kept = layers.GlobalAveragePooling2D(keepdims=True)
    assert kept(x).shape == (2, 1, 1, 5)
    assert kept.compute_output_shape((None, 3, 4, 5)) == tf.TensorShape([None, 1, 1, 5])


# ---- Flatten / Reshape ---------------------------------------------------------------------------
def test_flatten_and_reshape():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(layers.Flatten()(x).numpy(), x.reshape(2, 12))
    assert layers.Flatten()(np.zeros(4, np.float32)).shape == (4, 1)
    assert layers.Flatten().compute_output_shape((None, 3, 4)) == tf.TensorShape([None, 12])
    np.testing.assert_array_equal(layers.Reshape((4, 3))(x).numpy(), x.reshape(2, 4, 3))
    np.testing.assert_array_equal(layers.Reshape((-1, 2))(x).numpy(), x.reshape(2, 6, 2))
    assert layers.Reshape((-1, 2)).compute_output_shape((None, 3, 4)) == \
        tf.TensorShape([None, 6, 2])
    with pytest.raises(ValueError, match=r"total size.*\(2, 3, 4\).*\(5,\)"):
        layers.Reshape((5,))(x)
    with pytest.raises(ValueError, match="at most one unknown"):
        layers.Reshape((-1, -1))


# ---- BatchNormalization -------------------------------------------------------------------------
def test_batch_norm_training_matches_tf_and_updates_moving_stats():
    # Expected values computed with tf.keras (Keras 2) for these inputs.
    x = np.array([[1., 2.], [3., 5.], [0., -1.]], np.float32)
    bn = layers.BatchNormalization(momentum=0.5, epsilon=0.01,
                                   gamma_initializer=initializers.Constant(2.),
                                   beta_initializer=initializers.Constant(0.5))
    out = bn(x, training=True)
    np.testing.assert_allclose(out.numpy(), [[-0.0328126, 0.5], [3.164063, 2.9474509],
                                             [-1.6312504, -1.947451]], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [0.6666667, 1.0], rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [1.2777779, 3.5], rtol=1e-6)
    # Inference (training False or None) uses the moving statistics.
    expected = [[1.0874734, 1.567521], [4.612314, 4.770084], [-0.6749469, -1.635042]]
    np.testing.assert_allclose(bn(x, training=False).numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn(x).numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [0.6666667, 1.0], rtol=1e-6)


def test_batch_norm_4d_uses_unbiased_variance_for_the_moving_update():
    x = np.arange(24, dtype=np.float32).reshape(2, 2, 2, 3) ** 1.5 / 10
    bn = layers.BatchNormalization(momentum=0.9)
    out = bn(x, training=True)
    np.testing.assert_allclose(out.numpy()[0, 0], [[-1.2285502, -1.2714996, -1.3006939],
                                                   [-1.0685362, -1.0669043, -1.0675228]],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [0.39894834, 0.44502932, 0.49417734],
                               rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [2.105031, 2.2377021, 2.366157],
                               rtol=1e-5)
    np.testing.assert_allclose(bn(x, training=False).numpy()[0, 0],
                               [[-0.27490604, -0.23059922, -0.13735901],
                                [0.08314879, 0.23724352, 0.40548173]], rtol=1e-5, atol=1e-5)


def test_batch_norm_weights_axis_and_freezing():
    bn = layers.BatchNormalization(axis=1)
    x = _rng(6).randn(4, 3, 2, 2).astype(np.float32)
    out = bn(x, training=True)
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(out.numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4,
                               atol=1e-4)
    assert [v.name for v in bn.weights] == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    assert [v.name for v in bn.trainable_weights] == ["batch_normalization/gamma:0",
                                                      "batch_normalization/beta:0"]
    # A frozen BatchNormalization runs in inference mode even with training=True.
    bn.trainable = False
    before = bn.moving_mean.numpy().copy()
    frozen = bn(x, training=True).numpy()
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)
    np.testing.assert_allclose(frozen, bn(x, training=False).numpy())
    assert bn.trainable_weights == [] and len(bn.non_trainable_weights) == 4


def test_batch_norm_gradients_match_finite_differences():
    x = _rng(7).randn(5, 3).astype(np.float64)
    bn = layers.BatchNormalization(dtype="float64")
    bn(x, training=True)
    weights = np.array([[1.0, -2.0, 0.5]] * 5) * np.arange(1, 6)[:, None]

    def loss_of(xv):
        return float(np.sum(bn(xv, training=True).numpy() * weights))

    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(bn(xt, training=True) * weights)
    grad = tape.gradient(loss, xt).numpy()
    numeric = np.zeros_like(x)
    eps = 1e-6
    for idx in np.ndindex(*x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        numeric[idx] = (loss_of(plus) - loss_of(minus)) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


# ---- Dropout -------------------------------------------------------------------------------------
def test_dropout_statistics_and_inference_identity():
    x = np.ones((200, 50), np.float32)
    layer = layers.Dropout(0.3, seed=1)
    np.testing.assert_array_equal(layer(x).numpy(), x)                 # training=None
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    out = layer(x, training=True).numpy()
    kept = out != 0
    assert abs(1 - kept.mean() - 0.3) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert not np.array_equal(layer(x, training=True).numpy(), out)     # a new mask per call
    with pytest.raises(ValueError, match=r"Invalid value 1.5 received for `rate`"):
        layers.Dropout(1.5)


def test_dropout_noise_shape_drops_whole_features():
    x = np.ones((4, 6, 8), np.float32)
    out = layers.Dropout(0.5, noise_shape=(None, 1, 8), seed=3)(x, training=True).numpy()
    assert np.all(out == out[:, :1, :])   # the same mask along axis 1
    assert set(np.unique(out)) <= {0.0, 2.0}


def test_training_flag_reaches_nested_layers():
    class Block(layers.Layer):
        def __init__(self):
            super().__init__()
            self.dropout = layers.Dropout(0.5, seed=2)

        def call(self, inputs):       # no training argument: the flag passes through
            return self.dropout(inputs)

    block = Block()
    x = np.ones((20, 20), np.float32)
    np.testing.assert_array_equal(block(x).numpy(), x)
    assert (block(x, training=True).numpy() == 0).any()
    np.testing.assert_array_equal(block(x, training=False).numpy(), x)


# ---- Embedding -----------------------------------------------------------------------------------
def test_embedding_lookup_and_gradient():
    layer = layers.Embedding(6, 3)
    ids = np.array([[0, 5, 2], [2, 2, 1]])
    out = layer(ids)
    assert out.shape == (2, 3, 3)
    table = layer.embeddings.numpy()
    assert layer.embeddings.name == "embedding/embeddings:0"
    assert np.abs(table).max() <= 0.05          # 'uniform' initializer: [-0.05, 0.05)
    np.testing.assert_array_equal(out.numpy(), table[ids])
    np.testing.assert_array_equal(layer(ids.astype(np.float32)).numpy(), table[ids])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(ids))
    grad = np.asarray(tf.convert_to_tensor(tape.gradient(loss, layer.embeddings)))
    np.testing.assert_array_equal(grad[:, 0], np.bincount(ids.ravel(), minlength=6))
    with pytest.raises(ValueError, match="positive"):
        layers.Embedding(0, 3)


# ---- Activation, Lambda, merging -----------------------------------------------------------------
def test_activation_lambda_and_merge_layers():
    x = np.array([[-1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(layers.Activation("relu")(x).numpy(), [[0.0, 2.0]])
    assert layers.Activation("relu").get_config()["activation"] == "relu"
    np.testing.assert_array_equal(layers.Lambda(lambda v: v * 3)(x).numpy(), x * 3)
    a, b = np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)
    np.testing.assert_array_equal(layers.Add()([a, b]).numpy(), a + b)
    np.testing.assert_array_equal(layers.Subtract()([a, b]).numpy(), a - b)
    np.testing.assert_array_equal(layers.Multiply()([a, b]).numpy(), a * b)
    np.testing.assert_array_equal(layers.Average()([a, b]).numpy(), (a + b) / 2)
    np.testing.assert_array_equal(layers.Concatenate()([a, b]).numpy(), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(layers.concatenate([a, b], axis=0).numpy(),
                                  np.concatenate([a, b], 0))
    with pytest.raises(ValueError, match="should be called on a list of inputs"):
        layers.Add()(a)
    with pytest.raises(ValueError, match="matching shapes except for the concatenation axis"):
        layers.Concatenate(axis=0).compute_output_shape([(2, 3), (2, 4)])


# ---- weights, naming, freezing -------------------------------------------------------------------
def test_unique_names_and_clear_session():
    assert [layers.Dense(1).name for _ in range(3)] == ["dense", "dense_1", "dense_2"]
    assert layers.Conv2D(1, 1).name == "conv2d"
    assert layers.BatchNormalization().name == "batch_normalization"
    assert layers.GlobalAveragePooling2D().name == "global_average_pooling2d"
    assert layers.Dense(1, name="custom").name == "custom"
    keras.backend.clear_session()
    assert layers.Dense(1).name == "dense"


def test_weight_names_follow_name_scopes():
    with tf.name_scope("outer"):
        layer = layers.Dense(2)
        layer(np.zeros((1, 3), np.float32))
    assert [v.name for v in layer.weights] == ["outer/dense/kernel:0", "outer/dense/bias:0"]
    direct = layers.Dense(2)
    direct.build((None, 3))   # called directly, as in TF: no layer scope
    assert [v.name for v in direct.weights] == ["kernel:0", "bias:0"]
    assert direct.name_scope() == "dense_1"
    with direct.name_scope as scope:
        assert scope == "dense_1/"
        assert tf.Variable(1.0).name == "dense_1/Variable:0"


def test_custom_layer_weights_order_and_freezing():
    class Block(layers.Layer):
        def build(self, input_shape):
            self.inner = layers.Dense(2)
            self.stack = [layers.Dense(3), layers.BatchNormalization()]
            self.w = self.add_weight("w", shape=(2,), initializer="ones")
            self.steps = self.add_weight("steps", shape=(), dtype="int32", trainable=False)

        def call(self, inputs):
            return self.stack[1](self.stack[0](self.inner(inputs) * self.w))

    block = Block()
    block(np.ones((2, 4), np.float32))
    names = [v.name for v in block.weights]
    assert names == ["block/w:0", "block/dense/kernel:0", "block/dense/bias:0",
                     "block/dense_1/kernel:0", "block/dense_1/bias:0",
                     "block/batch_normalization/gamma:0", "block/batch_normalization/beta:0",
                     "block/steps:0", "block/batch_normalization/moving_mean:0",
                     "block/batch_normalization/moving_variance:0"]
    assert block.variables == block.weights
    assert block.steps.dtype == tf.int32 and int(block.steps) == 0
    assert list(block.submodules) == [block.inner, block.stack[0], block.stack[1]]
    block.stack[0].trainable = False
    assert [v.name for v in block.trainable_weights] == [
        "block/w:0", "block/dense/kernel:0", "block/dense/bias:0",
        "block/batch_normalization/gamma:0", "block/batch_normalization/beta:0"]
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 10
    assert not block.inner.trainable     # freezing reaches every nested layer
    block.trainable = True
    assert len(block.trainable_variables) == 7


def test_variables_assigned_as_attributes_are_tracked():
    class Scale(layers.Layer):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(2.0)
            self.offset = tf.Variable(1.0, trainable=False)

        def call(self, inputs):
            return inputs * self.scale + self.offset

    layer = Scale()
    assert layer.trainable_weights == [layer.scale]
    assert layer.non_trainable_weights == [layer.offset]


def test_get_set_weights_and_errors():
    layer = layers.Dense(3, name="d")
    with pytest.raises(ValueError, match="You tried to call `count_params` on layer d, but the "
                                         "layer isn't built"):
        layer.count_params()
    layer(np.zeros((2, 2), np.float32))
    kernel, bias = layer.get_weights()
    kernel[:] = 5.0                                   # a copy: the variable is unchanged
    assert not np.any(layer.kernel.numpy() == 5.0)
    with pytest.raises(ValueError, match=r'layer "d" with a weight list of length 1, but the layer '
                                         r"was expecting 2 weights"):
        layer.set_weights([kernel])
    with pytest.raises(ValueError, match=r"Layer d weight shape \(2, 3\) is not compatible with "
                                         r"provided weight shape \(3, 3\)"):
        layer.set_weights([np.zeros((3, 3)), np.zeros(3)])
    layer.set_weights([np.ones((2, 3)), np.arange(3)])
    np.testing.assert_array_equal(layer(np.ones((1, 2), np.float32)).numpy(), [[2, 3, 4]])
    assert layer.kernel.dtype == tf.float32


def test_add_weight_initializers_and_regularizer_losses():
    layer = layers.Dense(2, kernel_initializer="ones", bias_initializer=initializers.Constant(3.),
                         kernel_regularizer="l2")
    layer(np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(layer.bias.numpy(), [3.0, 3.0])
    (loss,) = layer.losses
    np.testing.assert_allclose(float(loss), 0.01 * 6.0, rtol=1e-6)
    layer.add_loss(lambda: tf.reduce_sum(layer.bias))
    assert [float(v) for v in layer.losses] == pytest.approx([0.06, 6.0])
    with pytest.raises(ValueError, match="regularizer"):
        layers.Dense(2, kernel_regularizer="l7")


@pytest.mark.parametrize("cls", [initializers.GlorotUniform, initializers.Zeros,
                                 initializers.Ones, initializers.HeNormal,
                                 initializers.RandomNormal, initializers.Orthogonal])
def test_a_weight_takes_its_initializers_new_array_as_its_own(cls, monkeypatch):
    """No copy of a built-in initializer's draw, and so no initial value kept (as TF's eager
    variables keep none)."""
    made = []
    call = cls.__call__

    def recording(self, shape, dtype=None, **kwargs):
        value = call(self, shape, dtype=dtype, **kwargs)
        made.append(value._value)
        return value
    monkeypatch.setattr(cls, "__call__", recording)
    layer = layers.Dense(4, kernel_initializer=cls())
    layer.build((None, 3))
    assert layer.kernel._value is made[0]
    expected = made[0].copy()
    with pytest.raises(RuntimeError, match="does not keep its initial value"):
        layer.kernel.initial_value
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(layer(x).numpy(), x @ expected, rtol=1e-6)


@pytest.mark.parametrize("make", [lambda a: initializers.Constant(a),
                                  lambda a: (lambda shape, dtype=None: tf.constant(a))],
                         ids=["Constant", "callable"])
def test_a_weight_copies_what_other_initializers_return(make):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    layer = layers.Dense(4, kernel_initializer=make(values))
    layer.build((None, 3))
    layer.kernel.assign_add(tf.ones((3, 4)))
    np.testing.assert_array_equal(values, np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(layer.kernel.initial_value.numpy(), values)
    np.testing.assert_array_equal(layer.kernel.numpy(), values + 1)


def test_weights_argument_sets_initial_values():
    layer = layers.Dense(1, weights=[np.full((2, 1), 2.0), np.array([1.0])])
    np.testing.assert_array_equal(layer(np.ones((1, 2), np.float32)).numpy(), [[5.0]])


def test_get_config_round_trip():
    layer = layers.Dense(3, activation="tanh", use_bias=False, name="head")
    config = layer.get_config()
    assert config["units"] == 3 and config["activation"] == "tanh" and config["name"] == "head"
    assert config["kernel_initializer"] == {"class_name": "GlorotUniform",
                                            "config": {"seed": None}}
    clone = layers.Dense.from_config(config)
    assert clone.units == 3 and clone.activation is activations.tanh and not clone.use_bias
    conv = layers.deserialize(layers.serialize(layers.Conv2D(4, 3, strides=2, padding="same")))
    assert (conv.filters, conv.kernel_size, conv.strides, conv.padding) == (4, (3, 3), (2, 2),
                                                                            "same")
    assert layers.Dropout(0.25).get_config()["rate"] == 0.25


def test_subclass_that_forgets_super_init():
    class Broken(layers.Layer):
        def __init__(self):
            pass

    with pytest.raises(RuntimeError, match="forgot to call `super\\(\\).__init__\\(\\)`"):
        Broken()(np.zeros((1, 1), np.float32))


# ---- tf.function and GradientTape ----------------------------------------------------------------
def test_layer_inside_tf_function_creates_weights_on_first_trace():
    layer = layers.Dense(3, activation="relu")
    x = _rng(8).randn(4, 5).astype(np.float32)

    @tf.function
    def apply(inputs):
        return layer(inputs)

    out = apply(x)
    assert layer.built and [v.name for v in layer.weights] == ["dense/kernel:0", "dense/bias:0"]
    np.testing.assert_allclose(out.numpy(), layer(x).numpy(), rtol=1e-5, atol=1e-6)
    layer.set_weights([np.ones((5, 3)), np.zeros(3)])
    np.testing.assert_allclose(apply(x).numpy(), np.maximum(x.sum(1, keepdims=True), 0)
                               * np.ones((1, 3)), rtol=1e-5, atol=1e-5)
    assert len(layer.weights) == 2


def test_gradients_with_respect_to_trainable_variables():
    layer = layers.Dense(2)
    x = _rng(9).randn(3, 4).astype(np.float32)
    layer(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(layer(x)))
    grad_kernel, grad_bias = tape.gradient(loss, layer.trainable_variables)
    y = x @ layer.kernel.numpy() + layer.bias.numpy()
    np.testing.assert_allclose(grad_kernel.numpy(), x.T @ (2 * y), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grad_bias.numpy(), (2 * y).sum(0), rtol=1e-4, atol=1e-5)


def test_autograph_converts_a_custom_call_while_tracing():
    class Clip(layers.Layer):
        def call(self, inputs):
            if tf.reduce_sum(inputs) > 0:
                return inputs
            return -inputs

    layer = Clip()
    fn = tf.function(lambda x: layer(x))
    np.testing.assert_array_equal(fn(np.array([1.0, 2.0], np.float32)).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(fn(np.array([-1.0, -2.0], np.float32)).numpy(), [1.0, 2.0])


# ---- initializers --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,fans", [((30, 20), (30, 20)), ((3, 3, 8, 16), (72, 144)),
                                        ((7,), (7, 7)), ((), (1, 1))])
def test_compute_fans(shape, fans):
    assert initializers.compute_fans(shape) == fans


@pytest.mark.parametrize("name,scale,mode,uniform", [
    ("glorot_uniform", 1.0, "fan_avg", True), ("glorot_normal", 1.0, "fan_avg", False),
    ("he_normal", 2.0, "fan_in", False), ("he_uniform", 2.0, "fan_in", True),
    ("lecun_normal", 1.0, "fan_in", False), ("lecun_uniform", 1.0, "fan_in", True)])
@pytest.mark.parametrize("shape", [(200, 100), (3, 3, 16, 32)])
def test_variance_scaling_family_statistics(name, scale, mode, uniform, shape):
    init = initializers.get(name)
    fan_in, fan_out = initializers.compute_fans(shape)
    n = {"fan_in": fan_in, "fan_avg": (fan_in + fan_out) / 2}[mode]
    std = math.sqrt(scale / n)
    values = init(shape).numpy()
    assert values.shape == shape and values.dtype == np.float32
    assert abs(values.mean()) < 0.1 * std
    assert values.std() == pytest.approx(std, rel=0.05)
    limit = math.sqrt(3 * scale / n) if uniform else 2 * std / 0.87962566103423978
    assert np.abs(values).max() <= limit * (1 + 1e-6)


def test_random_initializers_and_seeds():
    normal = initializers.RandomNormal(mean=1.0, stddev=0.5, seed=4)
    a = normal((100, 100)).numpy()
    np.testing.assert_array_equal(a, normal((100, 100)).numpy())   # seeded: repeatable
    assert a.mean() == pytest.approx(1.0, abs=0.02) and a.std() == pytest.approx(0.5, rel=0.03)
    assert not np.array_equal(a, initializers.RandomNormal(1.0, 0.5, seed=5)((100, 100)).numpy())
    uniform = initializers.RandomUniform(-2.0, 3.0, seed=1)((100, 100)).numpy()
    assert uniform.min() >= -2.0 and uniform.max() < 3.0
    assert uniform.mean() == pytest.approx(0.5, abs=0.05)
    trunc = initializers.TruncatedNormal(stddev=2.0, seed=2)((100, 100)).numpy()
    assert np.abs(trunc).max() <= 4.0 and trunc.std() == pytest.approx(2 * 0.8796, rel=0.05)
    tf.random.set_seed(7)
    first = initializers.GlorotUniform()((4, 4)).numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(initializers.GlorotUniform()((4, 4)).numpy(), first)


def test_deterministic_initializers():
    np.testing.assert_array_equal(initializers.Zeros()((2, 3)).numpy(), np.zeros((2, 3)))
    assert initializers.Zeros()((2,), dtype="int32").dtype == tf.int32
    np.testing.assert_array_equal(initializers.Ones()((2,)).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(initializers.Constant(4)((2, 2)).numpy(), np.full((2, 2), 4.0))
    np.testing.assert_array_equal(initializers.Identity(gain=2.0)((2, 3)).numpy(),
                                  2 * np.eye(2, 3))
    q = initializers.Orthogonal(seed=3)((6, 4)).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    wide = initializers.Orthogonal(gain=2.0, seed=3)((3, 5)).numpy()
    np.testing.assert_allclose(wide @ wide.T, 4 * np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="2-D"):
        initializers.Identity()((2, 2, 2))


def test_initializer_lookup():
    assert isinstance(initializers.get("glorot_uniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("HeNormal"), initializers.HeNormal)
    assert isinstance(initializers.get("uniform"), initializers.RandomUniform)
    assert isinstance(initializers.get(initializers.Ones), initializers.Ones)
    assert initializers.get(None) is None
    fn = lambda shape, dtype=None: tf.zeros(shape)  # noqa: E731
    assert initializers.get(fn) is fn
    config = initializers.serialize(initializers.VarianceScaling(2.0, "fan_out", "uniform"))
    restored = initializers.get(config)
    assert (restored.scale, restored.mode, restored.distribution) == (2.0, "fan_out", "uniform")
    with pytest.raises(ValueError, match="Unknown initializer: 'nope'"):
        initializers.get("nope")
    with pytest.raises(ValueError, match="mode"):
        initializers.VarianceScaling(mode="fan_max")


# ---- activations ---------------------------------------------------------------------------------
_X = np.linspace(-4, 4, 17).astype(np.float32)


def _erf(v):
    return np.vectorize(math.erf)(v)


@pytest.mark.parametrize("name,reference", [
    ("relu", lambda v: np.maximum(v, 0)),
    ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
    ("tanh", np.tanh),
    ("linear", lambda v: v),
    ("elu", lambda v: np.where(v > 0, v, np.expm1(v))),
    ("selu", lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * np.expm1(v))),
    ("softplus", lambda v: np.log1p(np.exp(v))),
    ("softsign", lambda v: v / (np.abs(v) + 1)),
    ("swish", lambda v: v / (1 + np.exp(-v))),
    ("silu", lambda v: v / (1 + np.exp(-v))),
    ("gelu", lambda v: 0.5 * v * (1 + _erf(v / np.sqrt(2)))),
    ("exponential", np.exp),
    ("hard_sigmoid", lambda v: np.clip(0.2 * v + 0.5, 0, 1)),
    ("leaky_relu", lambda v: np.where(v > 0, v, 0.3 * v)),
    ("mish", lambda v: v * np.tanh(np.log1p(np.exp(v)))),
])
def test_activations_match_numpy(name, reference):
    fn = activations.get(name)
    np.testing.assert_allclose(fn(tf.constant(_X)).numpy(), reference(_X.astype(np.float64)),
                               rtol=2e-6, atol=2e-6)


def test_activation_variants_and_lookup():
    x = tf.constant([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
    # Expected values from tf.keras.
    np.testing.assert_allclose(activations.relu(x, alpha=0.1, max_value=2.0, threshold=0.5).numpy(),
                               [-0.35, -0.15, -0.1, -0.05, 0.0, 1.0, 2.0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(activations.gelu(x, approximate=True).numpy(),
                               [-0.00363743, -0.158808, -0.154286, 0.0, 0.345714, 0.841192,
                                2.9963627], rtol=1e-5, atol=1e-6)
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(activations.softmax(logits).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(activations.softmax(logits, axis=0).numpy(),
                               np.exp(logits) / np.exp(logits).sum(0), rtol=1e-6)
    with pytest.raises(ValueError, match="rank 1"):
        activations.softmax(tf.constant([1.0, 2.0]))
    assert activations.get(None) is activations.linear
    assert activations.get(tf.nn.relu) is tf.nn.relu
    assert activations.serialize(activations.relu) == "relu"
    with pytest.raises(ValueError, match="Unknown activation function 'nope'"):
        activations.get("nope")
    with pytest.raises(TypeError, match="Could not interpret activation"):
        activations.get(3)


def test_gelu_gradient_matches_the_exact_derivative():
    x = tf.constant(_X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = activations.gelu(x)
    pdf = np.exp(-_X.astype(np.float64) ** 2 / 2) / np.sqrt(2 * np.pi)
    exact = 0.5 * (1 + _erf(_X / np.sqrt(2))) + _X * pdf
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), exact, rtol=1e-4, atol=1e-5)


# ---- backend -------------------------------------------------------------------------------------
def test_backend_settings_and_helpers():
    assert backend.floatx() == "float32" and backend.epsilon() == 1e-7
    assert backend.image_data_format() == "channels_last"
    with pytest.raises(ValueError, match="floatx"):
        backend.set_floatx("int8")
    v = tf.Variable(np.zeros((2, 3), np.float32))
    assert backend.int_shape(v) == (2, 3) and backend.count_params(v) == 6
    backend.set_value(v, np.ones((2, 3)))
    np.testing.assert_array_equal(backend.get_value(v), np.ones((2, 3)))
    assert backend.get_uid("x") == 1 and backend.get_uid("x") == 2
