"""SimpleRNN, LSTM, GRU, RNN(cell), Bidirectional, TimeDistributed and Masking: NumPy
references from the layers' own weights, TF's numbers, masks, states, dropout, gradients,
compiled train steps, configs and .keras round trips."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf import keras
from hybridtf.api import recurrent_ops
from hybridtf.keras import layers
from hybridtf.keras.layers import keras_masks
from keras_layer_checks import assert_model_round_trips, check_weight_and_input_gradients
from recurrent_references import gru_reference, lstm_reference, simple_rnn_reference


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _x(*shape, seed=0, dtype=np.float32):
    return np.random.RandomState(seed).randn(*shape).astype(dtype)


MASK = np.array([[True, True, True, True], [True, False, True, False]])


def reference(layer, x, mask=None, initial_state=None):
    """(outputs by step, last states) of a built-in recurrent layer, from its weights."""
    cell = layer.cell
    kernel, recurrent = cell.kernel.numpy(), cell.recurrent_kernel.numpy()
    xp = x.astype(np.float64) @ kernel
    rb = None
    if cell.use_bias:
        bias = cell.bias.numpy()
        if isinstance(cell, layers.GRUCell) and cell.reset_after:
            bias, rb = bias
        xp = xp + bias
    batch, steps = x.shape[:2]
    mask = np.ones((batch, steps), bool) if mask is None else mask
    states = initial_state or [np.zeros((batch, cell.units))] * (
        2 if isinstance(cell, layers.LSTMCell) else 1)
    args = (mask, layer.go_backwards, layer.zero_output_for_mask)
    if isinstance(cell, layers.LSTMCell):
        out, *last = lstm_reference(xp, states[0], states[1], recurrent, *args)
    elif isinstance(cell, layers.GRUCell):
        rb = np.zeros(3 * cell.units) if rb is None else rb
        out, *last = gru_reference(xp, states[0], recurrent, rb, *args,
                                   reset_after=cell.reset_after)
    else:
        out, *last = simple_rnn_reference(xp, states[0], recurrent, *args)
    return out, last


def _make(kind, units, **kwargs):
    if kind == "lstm":
        return layers.LSTM(units, **kwargs)
    if kind == "simple":
        return layers.SimpleRNN(units, **kwargs)
    return layers.GRU(units, reset_after=kind == "gru", **kwargs)


KINDS = ["simple", "lstm", "gru", "gru_reset_before"]


def _randomize(layer, seed=1):
    rng = np.random.RandomState(seed)
    layer.set_weights([rng.uniform(-0.8, 0.8, w.shape).astype(w.dtype)
                       for w in layer.get_weights()])


# ---- outputs against NumPy ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=6, deadline=None)
@given(batch=st.integers(1, 3), steps=st.integers(1, 4), units=st.integers(1, 3),
       return_sequences=st.booleans(), go_backwards=st.booleans(), masked=st.booleans(),
       seed=st.integers(0, 100))
def test_layer_matches_numpy(kind, batch, steps, units, return_sequences, go_backwards, masked,
                             seed):
    keras.backend.clear_session()
    x = _x(batch, steps, 2, seed=seed)
    mask = np.random.RandomState(seed).rand(batch, steps) > 0.3 if masked else None
    layer = _make(kind, units, return_sequences=return_sequences, go_backwards=go_backwards,
                  return_state=True)
    layer(x)
    _randomize(layer, seed)
    got = layer(x, mask=mask)
    out, states = reference(layer, x, mask)
    expected = [out if return_sequences else out[:, -1]] + states
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-6)


# TF 2.21 / Keras 3's outputs for these weights and inputs (computed once with Keras).
TF_X = [[[0.0012302, 0.2987455, -0.2741379], [-0.8905919, -0.4546708, -0.9916465],
         [0.0601436, 1.3402152, -0.4922065], [-0.6204749, 0.4898421, 0.356887]],
        [[0.1054142, -0.930468, -0.0292518], [0.6953032, -1.3442146, -0.4576158],
         [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]
TF_MASK = [[True, True, True, True], [True, True, False, False]]
TF_LSTM_WEIGHTS = [
    [[-0.0195719, -0.7281042, -0.4127346, 0.5394098, -0.2058823, 0.2973171, 0.3299643, 0.0949981],
     [-0.5235834, -0.4707237, -0.4198519, 0.4464596, 0.4438329, -0.4448271, 0.3902952, 0.4305559],
     [-0.2693357, -0.1066262, -0.1385961, 0.4621736, -0.1517467, -0.0568731, -0.0258251,
      0.625537]],
    [[0.5898243, -0.2293836, -0.2631946, -0.2827685, 0.2527747, -0.1094122, -0.5935639,
      -0.1485823],
     [-0.0217334, 0.1511045, 0.3049375, 0.4330671, -0.5443031, -0.0560141, -0.6263872,
      -0.0663067]],
    [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]]
TF_LSTM_BACKWARDS_MASKED = [
    [[0.0578956, -0.1270982], [0.1905192, -0.1877813], [0.1594984, -0.0452502],
     [0.2048641, -0.084065]],
    [[0.0, 0.0], [0.0, 0.0], [-0.1652312, 0.1098754], [-0.2340605, 0.1889187]]]
TF_GRU_WEIGHTS = [
    [[0.1987971, -0.1121453, 0.4433024, -0.3911496, -0.794283, -0.6685996],
     [-0.1498375, 0.7447246, -0.0069345, 0.3324656, 0.5863761, -0.288159],
     [-0.3693636, -0.5431436, -0.679032, 0.4539688, -0.6563554, -0.0395608]],
    [[-0.0390455, -0.3955416, 0.3979665, -0.5627987, 0.4974828, -0.3455622],
     [-0.8530313, 0.2204132, -0.2696952, -0.3311357, 0.0794788, 0.1872222]],
    [[0.1, -0.2, 0.3, -0.4, 0.5, -0.6], [0.25, 0.5, -0.75, 1.0, -0.5, 0.2]]]
TF_GRU_MASKED = [
    [[0.2249998, -0.1688055], [0.4375218, -0.0219485], [0.6244155, -0.1686855],
     [0.6837091, -0.2509802]],
    [[-0.1131425, -0.1678527], [-0.2679012, -0.384313], [-0.2679012, -0.384313],
     [-0.2679012, -0.384313]]]
TF_GRU_MASKED_STATE = [[0.6837091, -0.2509802], [-0.2679012, -0.384313]]


def test_lstm_matches_tensorflow():
    layer = layers.LSTM(2, return_sequences=True, go_backwards=True)
    layer(np.array(TF_X, np.float32))
    layer.set_weights([np.array(w, np.float32) for w in TF_LSTM_WEIGHTS])
    out = layer(np.array(TF_X, np.float32), mask=np.array(TF_MASK))
    np.testing.assert_allclose(out.numpy(), TF_LSTM_BACKWARDS_MASKED, atol=2e-6)


def test_gru_matches_tensorflow():
    layer = layers.GRU(2, return_sequences=True, return_state=True)
    layer(np.array(TF_X, np.float32))
    layer.set_weights([np.array(w, np.float32) for w in TF_GRU_WEIGHTS])
    out, state = layer(np.array(TF_X, np.float32), mask=np.array(TF_MASK))
    np.testing.assert_allclose(out.numpy(), TF_GRU_MASKED, atol=2e-6)
    np.testing.assert_allclose(state.numpy(), TF_GRU_MASKED_STATE, atol=2e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_weights_have_keras_names_order_and_shapes(kind):
    layer = _make(kind, 3)
    layer(_x(2, 4, 5))
    cell_name = {"simple": "simple_rnn_cell", "lstm": "lstm_cell"}.get(kind, "gru_cell")
    assert [w.name.split("/", 1)[1] for w in layer.weights] == [
        f"{cell_name}/kernel:0", f"{cell_name}/recurrent_kernel:0", f"{cell_name}/bias:0"]
    width = 3 * {"simple": 1, "lstm": 4}.get(kind, 3)
    bias = (2, width) if kind == "gru" else (width,)   # GRU's reset_after: two biases
    assert [tuple(w.shape) for w in layer.weights] == [(5, width), (3, width), bias]


def test_lstm_forget_bias_starts_at_one():
    layer = layers.LSTM(2)
    layer(_x(1, 2, 3))
    np.testing.assert_array_equal(layer.cell.bias.numpy(), [0, 0, 1, 1, 0, 0, 0, 0])


# ---- states --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_initial_state_and_return_state(kind):
    x = _x(2, 3, 2)
    layer = _make(kind, 2, return_state=True)
    layer(x)
    n = 2 if kind == "lstm" else 1
    initial = [_x(2, 2, seed=5 + i) for i in range(n)]
    out, *states = layer(x, initial_state=initial)
    ref_out, ref_states = reference(layer, x, initial_state=initial)
    np.testing.assert_allclose(out.numpy(), ref_out[:, -1], rtol=1e-5, atol=1e-6)
    for s, r in zip(states, ref_states):
        np.testing.assert_allclose(s.numpy(), r, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="initial states"):
        layer(x, initial_state=initial + [initial[0]])


def test_stateful_layer_carries_states_across_calls_until_reset():
    x = _x(2, 3, 2)
    layer = layers.LSTM(2, stateful=True, return_state=True)
    _, h1, c1 = layer(x)
    out2, h2, _ = layer(x)
    _, ref_states = reference(layer, x, initial_state=[h1.numpy(), c1.numpy()])
    np.testing.assert_allclose(h2.numpy(), ref_states[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(h1.numpy(), h2.numpy())
    layer.reset_states()
    _, h3, _ = layer(x)
    np.testing.assert_allclose(h3.numpy(), h1.numpy(), rtol=1e-6)
    assert len(layer.weights) == 3   # the states are not weights


def test_stateful_layer_in_tf_function():
    layer = layers.GRU(2, stateful=True)
    x = _x(2, 3, 2)
    step = tf.function(lambda v: layer(v))
    first = step(x).numpy()
    second = step(x).numpy()
    assert not np.allclose(first, second)
    layer.reset_states()
    np.testing.assert_allclose(step(x).numpy(), first, rtol=1e-6)


# ---- dropout -------------------------------------------------------------------------------------
@pytest.mark.parametrize("options", [{"dropout": 0.5}, {"recurrent_dropout": 0.5},
                                     {"dropout": 0.3, "recurrent_dropout": 0.3}])
def test_dropout_only_in_training(options):
    x = _x(4, 5, 3)
    plain = layers.LSTM(3, return_sequences=True)
    layer = layers.LSTM(3, return_sequences=True, **options)
    plain(x)
    layer(x)
    plain.set_weights(layer.get_weights())
    np.testing.assert_allclose(layer(x, training=False).numpy(), plain(x).numpy(), rtol=1e-6)
    trained = layer(x, training=True).numpy()
    assert not np.allclose(trained, plain(x).numpy())
    assert np.all(np.isfinite(trained))


def test_input_dropout_keeps_one_mask_for_all_steps():
    # With every recurrent weight zero, each step sees only its own (dropped) inputs: a
    # feature dropped at one step is dropped at every step.
    x = np.ones((3, 4, 6), np.float32)
    layer = layers.SimpleRNN(6, dropout=0.5, use_bias=False, kernel_initializer="identity",
                             recurrent_initializer="zeros", return_sequences=True)
    out = layer(x, training=True).numpy()
    dropped = out == 0
    assert dropped.any() and not dropped.all()
    assert (dropped == dropped[:, :1]).all()


# ---- the generic path: user cells and other activations ------------------------------------------
class MinimalRNNCell(layers.Layer):
    """h = tanh(x @ kernel + h_prev @ recurrent_kernel) * scale, written by a user."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=(input_shape[-1], self.units))
        self.recurrent_kernel = self.add_weight("recurrent_kernel",
                                                shape=(self.units, self.units))
        self.scale = self.add_weight("scale", shape=(self.units,), initializer="ones")

    def call(self, inputs, states):
        h = tf.tanh(tf.matmul(inputs, self.kernel) + tf.matmul(states[0], self.recurrent_kernel))
        h = h * self.scale
        return h, [h]

    def get_config(self):
        return dict(super().get_config(), units=self.units)


def _user_cell_reference(cell, x, mask, go_backwards=False):
    k, r, s = (w.numpy().astype(np.float64) for w in cell.weights)
    batch, steps = x.shape[:2]
    h, prev, outs = np.zeros((batch, cell.units)), np.zeros((batch, cell.units)), []
    for t in (range(steps - 1, -1, -1) if go_backwards else range(steps)):
        new = np.tanh(x[:, t] @ k + h @ r) * s
        keep = mask[:, t][:, None]
        h = np.where(keep, new, h)
        prev = np.where(keep, new, prev)
        outs.append(prev)
    return np.stack(outs, 1), h


@pytest.mark.parametrize("go_backwards", [False, True])
def test_rnn_with_user_cell_matches_numpy_eagerly_and_traced(go_backwards):
    x = _x(2, 4, 3)
    layer = layers.RNN(MinimalRNNCell(2), return_sequences=True, return_state=True,
                       go_backwards=go_backwards)
    layer(x)
    _randomize(layer)
    ref_out, ref_h = _user_cell_reference(layer.cell, x, MASK, go_backwards)
    for call in (layer, tf.function(lambda v, m: layer(v, mask=m))):
        out, h = call(x, MASK) if call is not layer else call(x, mask=MASK)
        np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h.numpy(), ref_h, rtol=1e-5, atol=1e-6)


def test_rnn_with_user_cell_gradients():
    layer = layers.RNN(MinimalRNNCell(2, dtype="float64"), return_sequences=True,
                       dtype="float64")
    check_weight_and_input_gradients(layer, [_x(2, 3, 2, dtype=np.float64)],
                                     call_kwargs={"mask": MASK[:, :3]})


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("masked", [False, True])
def test_fused_layer_gradients(kind, masked):
    layer = _make(kind, 2, return_sequences=True, dtype="float64", go_backwards=masked)
    layer(_x(2, 4, 2, dtype=np.float64))
    _randomize(layer)
    check_weight_and_input_gradients(layer, [_x(2, 4, 2, dtype=np.float64)],
                                     call_kwargs={"mask": MASK} if masked else None)


@pytest.mark.parametrize("kind", KINDS)
def test_step_by_step_path_matches_fused_path_in_values_and_gradients(kind):
    # A tanh given as a Python function takes the step-by-step path; tf.tanh is the same
    # function, so both paths must agree, eagerly and inside a tf.function.
    x = _x(2, 4, 3, dtype=np.float64)
    fused = _make(kind, 2, return_sequences=True, dtype="float64", go_backwards=True)
    looped = _make(kind, 2, return_sequences=True, dtype="float64", go_backwards=True,
                   activation=lambda v: tf.tanh(v))
    assert looped._fusable(False) is False
    fused(x)
    looped(x)
    _randomize(fused)
    looped.set_weights(fused.get_weights())

    def loss_and_grads(layer):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, mask=MASK) ** 2)
        return [loss] + tape.gradient(loss, layer.trainable_weights)

    for run in (loss_and_grads, tf.function(loss_and_grads)):
        for a, b in zip(run(fused), run(looped)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)


# ---- wrappers and masks --------------------------------------------------------------------------
@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_merge_modes(merge_mode):
    x = _x(2, 4, 3)
    layer = layers.Bidirectional(layers.LSTM(2, return_sequences=True), merge_mode=merge_mode)
    out = layer(x, mask=MASK)
    assert [w.name for w in layer.weights][0] == \
        "bidirectional/forward_lstm/lstm_cell/kernel:0"
    assert len(layer.weights) == 6
    fwd, _ = reference(layer.forward_layer, x, MASK)
    bwd, _ = reference(layer.backward_layer, x, MASK)
    bwd = bwd[:, ::-1]
    expected = {"concat": np.concatenate([fwd, bwd], -1), "sum": fwd + bwd, "mul": fwd * bwd,
                "ave": (fwd + bwd) / 2, None: [fwd, bwd]}[merge_mode]
    # Masked steps output zeros with return_sequences (Keras's Bidirectional).
    assert layer.forward_layer.zero_output_for_mask
    for got, want in zip(out if merge_mode is None else [out],
                         expected if merge_mode is None else [expected]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_bidirectional_return_state_and_config():
    x = _x(2, 4, 3)
    layer = layers.Bidirectional(layers.GRU(2, return_state=True))
    out, fh, bh = layer(x)
    assert out.shape == (2, 4) and fh.shape == (2, 2) and bh.shape == (2, 2)
    np.testing.assert_allclose(out.numpy(), np.concatenate([fh.numpy(), bh.numpy()], -1))
    clone = layers.Bidirectional.from_config(layer.get_config())
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x)[0].numpy(), out.numpy(), rtol=1e-6)
    assert clone.backward_layer.go_backwards and not clone.forward_layer.go_backwards
    with pytest.raises(ValueError, match="recurrent layer"):
        layers.Bidirectional(layers.Dense(2))
    with pytest.raises(ValueError, match="merge mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")


def test_time_distributed_dense():
    x = _x(2, 3, 4)
    layer = layers.TimeDistributed(layers.Dense(5))
    out = layer(x)
    dense = layer.layer
    expected = x @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    assert out.shape == (2, 3, 5) and len(layer.weights) == 2
    clone = layers.TimeDistributed.from_config(layer.get_config())
    assert isinstance(clone.layer, layers.Dense) and clone.layer.units == 5


def test_masking_layer_masks_steps_for_the_next_rnn():
    x = _x(2, 4, 3)
    x[1, 1] = 0.0
    x[1, 3] = 0.0
    masking = layers.Masking(0.0)
    lstm = layers.LSTM(2, return_sequences=True)
    out = lstm(masking(x))
    ref, _ = reference(lstm, x, MASK)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(masking.compute_mask(tf.constant(x)).numpy(), MASK)
    # Without the mask the zero steps would change the result.
    assert not np.allclose(lstm(x).numpy(), out.numpy())


def test_embedding_mask_zero_flows_through_a_sequential_model():
    ids = np.array([[3, 1, 2, 0, 0], [4, 0, 0, 0, 0]])
    model = keras.Sequential([layers.Embedding(6, 3, mask_zero=True), layers.LSTM(2)])
    out = model(ids).numpy()
    embedding, lstm = model.layers
    for row, length in ((0, 3), (1, 1)):
        short = lstm(embedding(ids[row:row + 1, :length])).numpy()
        np.testing.assert_allclose(out[row:row + 1], short, rtol=1e-5, atol=1e-6)
    unmasked = keras.Sequential([layers.Embedding(6, 3), layers.LSTM(2)])
    unmasked(ids)
    unmasked.set_weights(model.get_weights())
    assert not np.allclose(unmasked(ids).numpy(), out)


def test_mask_flows_through_the_functional_api_and_return_sequences():
    ids = np.array([[3, 1, 0], [2, 0, 0]])
    inputs = keras.Input(shape=(3,), dtype="int32")
    h = layers.Embedding(5, 2, mask_zero=True)(inputs)
    h = layers.Bidirectional(layers.GRU(2, return_sequences=True))(h)
    outputs = layers.SimpleRNN(2)(h)
    model = keras.Model(inputs, outputs)
    out = model(ids).numpy()
    short = model(ids[1:, :1]).numpy()
    np.testing.assert_allclose(out[1:], short, rtol=1e-5, atol=1e-6)


# ---- compiled training, configs, saving ----------------------------------------------------------
def test_train_step_in_tf_function_updates_every_weight_and_uses_the_fused_op():
    model = keras.Sequential([layers.LSTM(3, return_sequences=True), layers.LSTM(2),
                              layers.Dense(1)])
    x, y = _x(4, 5, 3), _x(4, 1, seed=1)
    model(x)
    optimizer = keras.optimizers.Adam(0.05)
    before = model.get_weights()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        return loss

    losses = [float(train_step(x, y)) for _ in range(5)]
    assert losses[-1] < losses[0]
    for old, new in zip(before, model.get_weights()):
        assert not np.allclose(old, new)
    ops = {node.op.name for node in
           train_step.get_concrete_function(x, y).graph.nodes}
    assert {"lstm_sequence", "lstm_sequence_grad"} <= ops
    assert not any(name.startswith("while") for name in ops)


@pytest.mark.parametrize("kind", KINDS)
def test_config_round_trip(kind):
    layer = _make(kind, 3, return_sequences=True, go_backwards=True, dropout=0.25,
                  recurrent_dropout=0.1, activation="relu", name="rec")
    config = layer.get_config()
    assert config["units"] == 3 and config["go_backwards"] and config["dropout"] == 0.25
    assert "cell" not in config
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    assert clone.units == 3 and clone.cell.activation is layer.cell.activation


def test_rnn_with_user_cell_config_round_trip():
    layer = layers.RNN(MinimalRNNCell(2), return_sequences=True)
    clone = keras.layers.deserialize(keras.layers.serialize(layer),
                                     custom_objects={"MinimalRNNCell": MinimalRNNCell})
    assert isinstance(clone.cell, MinimalRNNCell) and clone.cell.units == 2
    assert clone.return_sequences
    both = layers.Bidirectional(layer)   # copies the user's cell without a registry
    assert isinstance(both.backward_layer.cell, MinimalRNNCell)
    assert both.backward_layer.cell is not both.forward_layer.cell
    assert both(_x(2, 3, 2)).shape == (2, 3, 4)


def test_keras_file_round_trip(tmp_path):
    ids = np.array([[3, 1, 2, 0], [4, 2, 0, 0]])
    model = keras.Sequential([
        layers.Embedding(6, 3, mask_zero=True),
        layers.Bidirectional(layers.LSTM(2, return_sequences=True)),
        layers.GRU(2, return_sequences=True, reset_after=False),
        layers.TimeDistributed(layers.Dense(2)),
        layers.SimpleRNN(2)])
    model(ids)
    loaded = assert_model_round_trips(model, ids, tmp_path)
    assert loaded.layers[1].forward_layer.return_sequences


def test_bad_inputs_get_clear_errors():
    with pytest.raises(ValueError, match="min_ndim|ndim|rank"):
        layers.LSTM(2)(_x(2, 3))
    with pytest.raises(ValueError, match="units"):
        layers.GRU(0)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"lstm_sequence.*recurrent_kernel"):
        recurrent_ops.lstm_sequence(_x(2, 3, 8), _x(2, 2), _x(2, 2), _x(3, 8))


def test_op_errors_name_the_op_and_the_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"gru_sequence.*3 \* units"):
        recurrent_ops.gru_sequence(_x(2, 3, 7), _x(2, 2), _x(2, 6), _x(6))
    # Integer masks are read as bools, as Keras does.
    args = (_x(2, 4, 2), _x(2, 2), _x(2, 2))
    np.testing.assert_array_equal(
        recurrent_ops.simple_rnn_sequence(*args, mask=MASK.astype(np.int32))[0].numpy(),
        recurrent_ops.simple_rnn_sequence(*args, mask=MASK)[0].numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        recurrent_ops.simple_rnn_sequence(_x(2, 3, 2), _x(2, 2, dtype=np.float64), _x(2, 2))


# ---- the mask protocol ---------------------------------------------------------------------------
def test_masks_pass_through_layers_that_support_them_and_stop_at_others():
    ids = np.array([[3, 1, 0, 0]])
    embedding = layers.Embedding(5, 3, mask_zero=True)
    dense = layers.Dense(3)
    h = dense(embedding(ids))
    np.testing.assert_array_equal(keras_masks.get_keras_mask(h).numpy(), [[1, 1, 0, 0]])
    lstm = layers.LSTM(2)
    np.testing.assert_allclose(lstm(h).numpy(), lstm(h[:, :2]).numpy(), rtol=1e-5, atol=1e-6)
    flat = layers.Flatten()(h)
    assert keras_masks.get_keras_mask(flat) is None


def test_an_explicit_mask_wins_over_the_inputs_mask():
    x = _x(1, 4, 2)
    masked = layers.Masking(0.0)(np.concatenate([x[:, :2], np.zeros((1, 2, 2), np.float32)], 1))
    lstm = layers.LSTM(2)
    every_step = np.ones((1, 4), bool)
    explicit = lstm(masked, mask=every_step).numpy()
    np.testing.assert_allclose(explicit, lstm(masked.numpy()).numpy(), rtol=1e-6)
    assert not np.allclose(explicit, lstm(masked).numpy())


def test_rnn_wrapping_a_built_in_cell_is_the_built_in_layer():
    x = _x(2, 3, 2)
    wrapped = layers.RNN(layers.LSTMCell(2), return_sequences=True)
    plain = layers.LSTM(2, return_sequences=True)
    wrapped(x)
    plain(x)
    plain.set_weights(wrapped.get_weights())
    np.testing.assert_allclose(wrapped(x, mask=MASK[:, :3]).numpy(),
                               plain(x, mask=MASK[:, :3]).numpy(), rtol=1e-6)
    cell = layers.GRUCell(3, reset_after=False, dropout=0.2, name="c")
    assert layers.GRUCell.from_config(cell.get_config()).get_config() == cell.get_config()


def test_fit_with_masked_sequences():
    ids = np.array([[1, 2, 3, 0], [2, 3, 0, 0], [3, 1, 1, 2], [1, 0, 0, 0]])
    y = np.array([[1.0], [0.0], [1.0], [0.0]], np.float32)
    model = keras.Sequential([layers.Embedding(4, 3, mask_zero=True), layers.GRU(4),
                              layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    history = model.fit(ids, y, epochs=8, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    np.testing.assert_allclose(model.predict(ids[3:], verbose=0),
                               model.predict(ids[3:, :1], verbose=0), rtol=1e-5, atol=1e-6)
