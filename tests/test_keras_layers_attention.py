"""Attention, AdditiveAttention, MultiHeadAttention and EinsumDense: NumPy references
computed by hand, masks, gradients, configs, tf.function steps and .keras round trips."""
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


def np_softmax(scores, mask=None):
    if mask is not None:
        scores = np.where(mask, scores, scores - 1e9)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_causal(tq, tv):
    return np.arange(tq)[:, None] >= np.arange(tv)[None, :]


# ---- Attention and AdditiveAttention -------------------------------------------------------------
@settings(max_examples=8, deadline=None)
@given(batch=st.integers(1, 2), tq=st.integers(1, 4), tv=st.integers(1, 4),
       dim=st.integers(1, 3), causal=st.booleans())
def test_dot_attention_matches_numpy(batch, tq, tv, dim, causal):
    q, v, k = _x(batch, tq, dim, seed=1), _x(batch, tv, dim + 1, seed=2), _x(batch, tv, dim,
                                                                             seed=3)
    out, weights = layers.Attention()([q, v, k], return_attention_scores=True,
                                      use_causal_mask=causal)
    mask = np_causal(tq, tv)[None] if causal else None
    expected_weights = np_softmax(q @ k.transpose(0, 2, 1), mask)
    np.testing.assert_allclose(weights.numpy(), expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), expected_weights @ v, rtol=1e-5, atol=1e-5)


def test_attention_masks_scale_and_concat_scores():
    q, v = _x(2, 3, 4, seed=4), _x(2, 5, 4, seed=5)
    query_mask = np.array([[1, 1, 0], [1, 0, 1]], bool)
    value_mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)
    layer = layers.Attention(use_scale=True)
    layer([q, v])
    assert [w.name for w in layer.weights] == ["attention/scale:0"]
    layer.set_weights([np.float32(0.5)])
    out, weights = layer([q, v], mask=[query_mask, value_mask], return_attention_scores=True)
    expected_weights = np_softmax(0.5 * q @ v.transpose(0, 2, 1), value_mask[:, None, :])
    np.testing.assert_allclose(weights.numpy(), expected_weights, rtol=1e-5, atol=1e-6)
    assert np.all(weights.numpy()[0, :, 3:] < 1e-6)                 # padded values ignored
    expected = np.where(query_mask[..., None], expected_weights @ v, 0.0)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(layer.compute_mask([q, v], [query_mask, value_mask]).numpy(),
                                  query_mask)
    concat = layers.Attention(score_mode="concat", use_scale=True)
    concat([q, v])
    assert [w.name for w in concat.weights] == ["attention_1/scale:0",
                                                "attention_1/concat_score_weight:0"]
    concat.set_weights([np.float32(0.7), np.float32(1.5)])
    scores = 1.5 * np.tanh(0.7 * (q[:, :, None, :] + v[:, None, :, :])).sum(-1)
    np.testing.assert_allclose(concat([q, v]).numpy(), np_softmax(scores) @ v, rtol=1e-5,
                               atol=1e-6)


def test_additive_attention_matches_numpy_and_has_a_feature_scale():
    q, v, k = _x(2, 3, 4, seed=6), _x(2, 2, 3, seed=7), _x(2, 2, 4, seed=8)
    layer = layers.AdditiveAttention()
    layer([q, v, k])
    assert layer.scale.shape == (4,) and layer.get_config()["use_scale"] is True
    assert "score_mode" not in layer.get_config()
    scale = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    layer.set_weights([scale])
    scores = (scale * np.tanh(q[:, :, None, :] + k[:, None, :, :])).sum(-1)
    np.testing.assert_allclose(layer([q, v, k]).numpy(), np_softmax(scores) @ v, rtol=1e-5,
                               atol=1e-6)
    unscaled = layers.AdditiveAttention(use_scale=False)
    scores = np.tanh(q[:, :, None, :] + k[:, None, :, :]).sum(-1)
    np.testing.assert_allclose(unscaled([q, v, k]).numpy(), np_softmax(scores) @ v,
                               rtol=1e-5, atol=1e-6)
    assert unscaled.weights == []


def test_attention_dropout_only_in_training():
    q, v = np.ones((4, 6, 2), np.float32), _x(4, 8, 2, seed=9)
    layer = layers.Attention(dropout=0.5, seed=1)
    inference = layer([q, v]).numpy()
    np.testing.assert_allclose(inference, np_softmax(q @ v.transpose(0, 2, 1)) @ v, rtol=1e-5,
                               atol=1e-6)
    _, weights = layer([q, v], training=True, return_attention_scores=True)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, rtol=1e-5)   # scores pre-dropout
    assert not np.allclose(layer([q, v], training=True).numpy(), inference)


def test_attention_gradients_match_finite_differences():
    layer = layers.AdditiveAttention(dtype="float64")
    q, v = _x(1, 2, 3, seed=10).astype(np.float64), _x(1, 3, 3, seed=11).astype(np.float64)
    check_weight_and_input_gradients(layer, [q, v], call_kwargs={"use_causal_mask": True})
    dot = layers.Attention(use_scale=True, score_mode="concat", dtype="float64")
    check_weight_and_input_gradients(dot, [q, v])


# ---- MultiHeadAttention --------------------------------------------------------------------------
def np_multi_head_attention(weights, query, value, key, mask=None, use_bias=True):
    """The whole computation by hand: projections, scaled scores, softmax, combination,
    output projection (weights in Keras's order)."""
    if use_bias:
        wq, bq, wk, bk, wv, bv, wo, bo = weights
    else:
        (wq, wk, wv, wo), bq = weights, 0
        bk = bv = bo = 0
    q = np.einsum("btd,dnh->btnh", query, wq) + bq
    k = np.einsum("bsd,dnh->bsnh", key, wk) + bk
    v = np.einsum("bsd,dnh->bsnh", value, wv) + bv
    scores = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(wq.shape[-1])
    probs = np_softmax(scores, None if mask is None else mask[:, None])
    if mask is not None:
        probs = np.where(mask[:, None], probs, 0.0)
    heads = np.einsum("bnts,bsnh->btnh", probs, v)
    return np.einsum("btnh,nho->bto", heads, wo) + bo, probs


@settings(max_examples=6, deadline=None)
@given(heads=st.integers(1, 3), key_dim=st.integers(1, 3), value_dim=st.sampled_from([None, 2]),
       tq=st.integers(1, 3), tv=st.integers(1, 3), use_bias=st.booleans())
def test_multi_head_attention_matches_numpy(heads, key_dim, value_dim, tq, tv, use_bias):
    keras.backend.clear_session()
    query, value, key = _x(2, tq, 4, seed=12), _x(2, tv, 3, seed=13), _x(2, tv, 5, seed=14)
    layer = layers.MultiHeadAttention(heads, key_dim, value_dim=value_dim, use_bias=use_bias,
                                      bias_initializer="glorot_uniform")
    out, scores = layer(query, value, key, return_attention_scores=True)
    expected, probs = np_multi_head_attention(layer.get_weights(), query, value, key,
                                              use_bias=use_bias)
    np.testing.assert_allclose(scores.numpy(), probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
    vd = value_dim or key_dim
    shapes = [(4, heads, key_dim), (heads, key_dim), (5, heads, key_dim), (heads, key_dim),
              (3, heads, vd), (heads, vd), (heads, vd, 4), (4,)]
    names = ["query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel",
             "value/bias", "attention_output/kernel", "attention_output/bias"]
    if not use_bias:
        shapes, names = shapes[::2], names[::2]
    assert [tuple(w.shape) for w in layer.weights] == shapes
    assert [w.name for w in layer.weights] == [f"multi_head_attention/{n}:0" for n in names]


def test_multi_head_attention_masks_combine():
    query, value = _x(2, 3, 4, seed=15), _x(2, 3, 4, seed=16)
    attention_mask = np.random.RandomState(0).rand(2, 3, 3) > 0.3
    query_mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    value_mask = np.array([[1, 0, 1], [1, 1, 1]], bool)
    layer = layers.MultiHeadAttention(2, 2)
    out, scores = layer(query, value, attention_mask=attention_mask, query_mask=query_mask,
                        value_mask=value_mask, use_causal_mask=True,
                        return_attention_scores=True)
    mask = (attention_mask & query_mask[:, :, None] & value_mask[:, None, :]
            & np_causal(3, 3)[None])
    expected, probs = np_multi_head_attention(layer.get_weights(), query, value, value, mask)
    np.testing.assert_allclose(scores.numpy(), probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
    assert np.all(scores.numpy()[0, :, 2] == 0)       # a padded query attends nowhere
    causal_only = layer(query, value, use_causal_mask=True, return_attention_scores=True)[1]
    assert np.all(causal_only.numpy()[..., np.triu_indices(3, 1)[0],
                                      np.triu_indices(3, 1)[1]] < 1e-7)


def test_multi_head_attention_output_shape_axes_and_dropout():
    query = _x(2, 3, 4, 5, seed=17)
    layer = layers.MultiHeadAttention(2, 3, output_shape=(2, 6), attention_axes=2)
    out, scores = layer(query, query, return_attention_scores=True)
    assert out.shape == (2, 3, 4, 2, 6)
    assert scores.shape == (2, 3, 2, 4, 4)          # [batch, other axis, heads, T, S]
    assert layer.output_dense.kernel.shape == (2, 3, 2, 6)
    assert layer.compute_output_shape((None, 3, 4, 5)) == tf.TensorShape([None, 3, 4, 2, 6])
    # Attention along axis 2 only: each slice along axis 1 attends within itself.
    sliced = layers.MultiHeadAttention(2, 3, output_shape=(2, 6), attention_axes=(2,))
    sliced(query[:, :1], query[:, :1])
    sliced.set_weights(layer.get_weights())
    np.testing.assert_allclose(sliced(query[:, :1], query[:, :1]).numpy(), out.numpy()[:, :1],
                               rtol=1e-5, atol=1e-6)
    both = layers.MultiHeadAttention(1, 2)
    assert both(query, query, return_attention_scores=True)[1].shape == (2, 1, 3, 4, 3, 4)
    dropped = layers.MultiHeadAttention(2, 2, dropout=0.5, seed=3)
    seq = _x(2, 6, 4, seed=18)
    inference = dropped(seq, seq).numpy()
    np.testing.assert_array_equal(dropped(seq, seq, training=False).numpy(), inference)
    assert not np.allclose(dropped(seq, seq, training=True).numpy(), inference)


def test_multi_head_attention_config_and_errors():
    layer = layers.MultiHeadAttention(2, 3, value_dim=4, dropout=0.1, output_shape=5,
                                      attention_axes=[1], use_gate=True, sliding_window=2)
    config = layer.get_config()
    for key, value in {"num_heads": 2, "key_dim": 3, "value_dim": 4, "dropout": 0.1,
                       "use_bias": True, "output_shape": (5,), "attention_axes": [1],
                       "use_gate": True, "sliding_window": 2, "seed": None}.items():
        assert config[key] == value, key
    clone = layers.MultiHeadAttention.from_config(config)
    assert clone.get_config() == config
    with pytest.raises(ValueError, match="`num_heads`, expected a positive integer"):
        layers.MultiHeadAttention(0, 2)
    with pytest.raises(ValueError, match="`key_dim`, expected a positive integer"):
        layers.MultiHeadAttention(2, 1.5)
    with pytest.raises(ValueError, match="`attention_axes` must be an int"):
        layers.MultiHeadAttention(2, 2, attention_axes="time")
    with pytest.raises(ValueError, match="flash_attention=True is not available"):
        layers.MultiHeadAttention(2, 2, flash_attention=True)
    with pytest.raises(ValueError, match="except the last one, must be equal"):
        layers.MultiHeadAttention(2, 2)(_x(1, 2, 3), _x(1, 4, 3), _x(1, 5, 3))
    with pytest.raises(ValueError, match="attention_axes .* must be distinct axes between 1"):
        layers.MultiHeadAttention(2, 2, attention_axes=3)(_x(1, 2, 3), _x(1, 2, 3))
    with pytest.raises(ValueError, match="must be called on a list of inputs"):
        layers.Attention()(_x(1, 2, 3))
    with pytest.raises(ValueError, match="score_mode"):
        layers.Attention(score_mode="cosine")


def test_multi_head_attention_gate_and_sliding_window():
    query = _x(1, 4, 3, seed=19)
    layer = layers.MultiHeadAttention(1, 2, use_gate=True, sliding_window=2)
    out, scores = layer(query, query, return_attention_scores=True)
    assert [w.name.split("/")[1] for w in layer.weights] == [
        "query", "query", "key", "key", "gate", "gate", "value", "value", "attention_output",
        "attention_output"]
    band = np.abs(np.arange(4)[:, None] - np.arange(4)[None, :]) < 2
    assert np.all(scores.numpy()[0, 0][~band] < 1e-7)
    wq, bq, wk, bk, wg, bg, wv, bv, wo, bo = layer.get_weights()
    gate = 1 / (1 + np.exp(-(np.einsum("btd,dnh->btnh", query, wg) + bg)))
    _, probs = np_multi_head_attention([wq, bq, wk, bk, wv, bv, wo, bo], query, query, query,
                                       band[None])
    v = np.einsum("bsd,dnh->bsnh", query, wv) + bv
    heads = np.einsum("bnts,bsnh->btnh", probs, v) * gate
    np.testing.assert_allclose(out.numpy(), np.einsum("btnh,nho->bto", heads, wo) + bo,
                               rtol=1e-4, atol=1e-5)


def test_multi_head_attention_gradients_match_finite_differences():
    layer = layers.MultiHeadAttention(2, 1, dtype="float64", bias_initializer="glorot_uniform")
    query, value = _x(1, 2, 2, seed=20), _x(1, 2, 2, seed=21)
    check_weight_and_input_gradients(layer, [query, value], separate_inputs=True,
                                     call_kwargs={"use_causal_mask": True})


# ---- EinsumDense ---------------------------------------------------------------------------------
def test_einsum_dense_equations_bias_and_errors():
    x = _x(2, 3, seed=22)
    dense_like = layers.EinsumDense("ab,bc->ac", output_shape=4, bias_axes="c",
                                    activation="relu")
    out = dense_like(x)
    kernel, bias = dense_like.get_weights()
    assert kernel.shape == (3, 4) and bias.shape == (4,)
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ kernel + bias, 0), rtol=1e-5,
                               atol=1e-6)
    seq = _x(2, 5, 3, seed=23)
    elided = layers.EinsumDense("...b,bcd->...cd", output_shape=(2, 4), bias_axes="c")
    out = elided(seq)
    kernel, bias = elided.get_weights()
    assert bias.shape == (2, 1)                       # broadcast over the 'd' axis
    np.testing.assert_allclose(out.numpy(), np.einsum("xyb,bcd->xycd", seq, kernel) + bias,
                               rtol=1e-5, atol=1e-6)
    assert elided.compute_output_shape((None, 5, 3)) == tf.TensorShape([None, 5, 2, 4])
    config = elided.get_config()
    assert (config["equation"], config["output_shape"], config["bias_axes"]) == (
        "...b,bcd->...cd", (2, 4), "c")
    with pytest.raises(ValueError, match="invalid equation"):
        layers.EinsumDense("ab->b", output_shape=2)
    with pytest.raises(ValueError, match="bias_axes 'z'"):
        layers.EinsumDense("ab,bc->ac", output_shape=2, bias_axes="z")
    with pytest.raises(ValueError, match="expects inputs of rank 2"):
        layers.EinsumDense("ab,bc->ac", output_shape=2)(seq)
    with pytest.raises(ValueError, match="output_shape .* must have 1 entries"):
        layers.EinsumDense("ab,bc->ac", output_shape=(2, 3))(x)


# ---- in models and compiled steps ----------------------------------------------------------------
def test_attention_layers_train_in_a_tf_function_and_round_trip(tmp_path):
    tokens = keras.Input((4, 3))
    attended = layers.MultiHeadAttention(2, 2, dropout=0.1, seed=1)(
        tokens, tokens, use_causal_mask=True)
    mixed = layers.Attention(use_scale=True)([attended, tokens])
    added = layers.AdditiveAttention()([mixed, tokens])
    outputs = layers.EinsumDense("abc,cd->abd", output_shape=(None, 2), bias_axes="d")(added)
    model = keras.Model(tokens, outputs)
    optimizer = keras.optimizers.SGD(0.05)
    x, target = _x(2, 4, 3, seed=24), _x(2, 4, 2, seed=25)

    @tf.function
    def train_step(inputs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(inputs, training=True) - target))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    before = model.get_weights()
    first = float(train_step(x))
    assert all(not np.array_equal(a, b) for a, b in zip(model.get_weights(), before))
    for _ in range(3):
        last = float(train_step(x))
    assert last < first
    loaded = assert_model_round_trips(model, x, tmp_path)
    assert [type(layer).__name__ for layer in loaded.layers[1:]] == [
        "MultiHeadAttention", "Attention", "AdditiveAttention", "EinsumDense"]
