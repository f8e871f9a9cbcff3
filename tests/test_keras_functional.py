"""The functional API as the Keras guide "The Functional API" uses it: layers' symbolic inputs
and outputs once connected, models nested in models, several inputs and outputs by name, and
``Model.get_config`` / ``Model.from_config``.  Numbers marked TF 2.21 were recorded with
TensorFlow 2.21 (Keras 3.15) on the same weights and data."""
import json

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import layers


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def dense_np(x, layer, activation=None):
    kernel, bias = layer.get_weights()
    out = x @ kernel + bias
    return np.tanh(out) if activation == "tanh" else np.maximum(out, 0) \
        if activation == "relu" else out


# ---- layers' symbolic tensors and shapes ---------------------------------------------------------
def test_layers_know_their_input_and_output_once_connected():
    inputs = keras.Input((4,), name="x")
    hidden_layer = layers.Dense(3, name="hidden")
    hidden = hidden_layer(inputs)
    other = keras.Input((2,), name="other")
    merge = layers.Concatenate(name="merge")
    merged = merge([hidden, other])
    model = keras.Model([inputs, other], layers.Dense(1, name="out")(merged))
    assert hidden_layer.input is inputs and hidden_layer.output is hidden
    assert merge.input == [hidden, other] and merge.output is merged
    assert hidden_layer.input_shape == (None, 4) and hidden_layer.output_shape == (None, 3)
    assert merge.input_shape == [(None, 3), (None, 2)] and merge.output_shape == (None, 5)
    input_layer = model.get_layer("x")
    assert input_layer.output is inputs and input_layer.input == []     # as Keras 3
    assert input_layer.output_shape == (None, 4)
    assert model.get_layer("out").input is merged

    never_called = layers.Dense(2, name="lonely")
    for attribute in ("input", "output", "input_shape", "output_shape"):
        with pytest.raises(AttributeError, match="lonely.*never been called"):
            getattr(never_called, attribute)


def test_shared_layer_reports_its_first_call_and_no_ambiguous_shape():
    shared = layers.Dense(3, name="shared")
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    first, second = shared(a), shared(b)
    assert shared.input is a and shared.output is first and second is not first
    assert shared.input_shape == (None, 4)          # every call has the same shapes
    flat = layers.Flatten(name="flat")
    flat(keras.Input((2, 3)))
    flat(keras.Input((4, 5)))
    assert flat.output.shape.as_list() == [None, 6]
    with pytest.raises(AttributeError, match="multiple inbound nodes, with different input"):
        flat.input_shape


def test_a_built_layer_checks_symbolic_inputs_against_its_input_spec():
    dense = layers.Dense(2, name="d")
    dense(keras.Input((4,)))
    with pytest.raises(ValueError, match='"d" is incompatible.*expected axis -1.*value 4'):
        dense(keras.Input((3,)))


def test_sequential_layers_are_connected_for_feature_extraction():
    # The Sequential guide: Model(inputs=model.inputs, outputs=[layer.output ...]).
    model = keras.Sequential([keras.Input((5,)), layers.Dense(4, activation="relu", name="l1"),
                              layers.Dense(3, activation="relu", name="l2"),
                              layers.Dense(1, name="l3")])
    assert len(model.inputs) == 1 and model.inputs[0].shape.as_list() == [None, 5]
    assert model.outputs[0] is model.get_layer("l3").output
    assert model.get_layer("l2").input is model.get_layer("l1").output
    extractor = keras.Model(inputs=model.inputs,
                            outputs=[layer.output for layer in model.layers])
    x = np.random.RandomState(0).randn(6, 5).astype(np.float32)
    features = extractor(x)
    h1 = dense_np(x, model.get_layer("l1"), "relu")
    h2 = dense_np(h1, model.get_layer("l2"), "relu")
    expected = [h1, h2, dense_np(h2, model.get_layer("l3"))]
    assert len(features) == 3
    for got, want in zip(features, expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    # A Sequential model built by its first call is connected too (with that batch size,
    # as in Keras 3).
    lazy = keras.Sequential([layers.Dense(2, name="s1"), layers.Dense(1, name="s2")])
    lazy(x[:3])
    assert lazy.get_layer("s1").output.shape.as_list() == [3, 2]
    assert lazy.input_shape == (3, 5) and lazy.output_shape == (3, 1)
    assert lazy.get_layer("s2").input is lazy.get_layer("s1").output
    lazy.pop()
    assert lazy.outputs[0] is lazy.get_layer("s1").output


def test_model_inputs_outputs_structures_and_names():
    a, b = keras.Input((2,), name="a"), keras.Input((3,), name="b")
    merged = layers.Concatenate(name="merge")([a, b])
    first, second = layers.Dense(1, name="first")(merged), layers.Dense(2, name="second")(merged)
    as_lists = keras.Model([a, b], [first, second])
    assert as_lists.input == [a, b] and as_lists.output == [first, second]
    assert as_lists.input_names == ["a", "b"] and as_lists.output_names == ["first", "second"]
    assert as_lists.input_shape == [(None, 2), (None, 3)]
    assert as_lists.output_shape == [(None, 1), (None, 2)]
    as_dicts = keras.Model({"a": a, "b": b}, {"y2": second, "y1": first})
    assert as_dicts.input == {"a": a, "b": b} and set(as_dicts.output) == {"y1", "y2"}
    assert as_dicts.output_names == ["first", "second"]       # layers, in flattened order
    c = keras.Input((2,), name="c")
    third = layers.Dense(1, name="third")(c)
    single = keras.Model([c], third)
    assert single.input == [c] and single.output is third and single.input_names == ["c"]


def test_inputs_given_as_a_dict_are_matched_by_name():
    a, b = keras.Input((2,), name="a"), keras.Input((3,), name="b")
    out = layers.Dense(1, name="out")(layers.Concatenate()([a, b]))
    model = keras.Model([a, b], out)
    rng = np.random.RandomState(1)
    xa, xb = rng.randn(4, 2).astype(np.float32), rng.randn(4, 3).astype(np.float32)
    expected = model([xa, xb]).numpy()
    # Keys in any order; keys the model does not use are ignored (as Keras 3).
    np.testing.assert_allclose(model({"b": xb, "a": xa, "unused": xa}).numpy(), expected)
    np.testing.assert_allclose(model.predict({"b": xb, "a": xa}, verbose=0), expected,
                               rtol=1e-6)
    with pytest.raises(ValueError, match='Missing data for input "b".*Expected the following '
                                         r"keys: \['a', 'b'\]"):
        model({"a": xa})


# ---- several inputs and outputs by name (the guide's ticket classifier) -------------------------
def ticket_model():
    inputs = [keras.Input((5,), name="title", dtype="int32"),
              keras.Input((6,), name="body", dtype="int32"), keras.Input((3,), name="tags")]
    title = layers.Flatten(name="title_flat")(layers.Embedding(20, 4, name="title_emb")(inputs[0]))
    body = layers.Flatten(name="body_flat")(layers.Embedding(20, 4, name="body_emb")(inputs[1]))
    x = layers.Concatenate(name="merge")([title, body, inputs[2]])
    priority = layers.Dense(1, name="priority")(x)
    department = layers.Dense(4, name="department")(x)
    return keras.Model(inputs=inputs, outputs={"priority": priority, "department": department})


def ticket_data():
    rs = np.random.RandomState(7)
    weights = {"title_emb": [rs.randn(20, 4).astype("f") * 0.3],
               "body_emb": [rs.randn(20, 4).astype("f") * 0.3],
               "priority": [rs.randn(47, 1).astype("f") * 0.2, np.array([0.1], "f")],
               "department": [rs.randn(47, 4).astype("f") * 0.2, np.zeros(4, "f")]}
    x = {"title": rs.randint(0, 20, (8, 5)).astype("int32"),
         "body": rs.randint(0, 20, (8, 6)).astype("int32"),
         "tags": rs.randint(0, 2, (8, 3)).astype("f")}
    y = {"priority": rs.randint(0, 2, (8, 1)).astype("f"),
         "department": np.eye(4, dtype="f")[rs.randint(0, 4, 8)]}
    return weights, x, y


def test_multi_input_multi_output_model_trained_by_name_matches_tensorflow():
    model = ticket_model()
    weights, x, y = ticket_data()
    for name, values in weights.items():
        model.get_layer(name).set_weights(values)
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss={"priority": keras.losses.BinaryCrossentropy(from_logits=True),
                        "department": keras.losses.CategoricalCrossentropy(from_logits=True)},
                  loss_weights={"priority": 1.0, "department": 0.2})
    # Before training, the total is the weighted sum of the outputs' losses (by hand).
    out = model.predict(x, verbose=0)
    logits = out["priority"]
    bce = np.mean(np.maximum(logits, 0) - logits * y["priority"]
                  + np.log1p(np.exp(-np.abs(logits))))
    dep = out["department"] - out["department"].max(axis=1, keepdims=True)
    cce = np.mean(-np.sum(y["department"] * (dep - np.log(np.exp(dep).sum(1, keepdims=True))),
                          axis=1))
    before = model.evaluate(x, y, verbose=0, return_dict=True)
    assert before["priority_loss"] == pytest.approx(bce, rel=1e-5)
    assert before["department_loss"] == pytest.approx(cce, rel=1e-5)
    assert before["loss"] == pytest.approx(bce + 0.2 * cce, rel=1e-5)

    history = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
    tf_history = {"department_loss": [1.308026, 1.284118], "loss": [0.936744, 0.90166],
                  "priority_loss": [0.675138, 0.644837]}                       # TF 2.21
    assert list(history.history) == list(tf_history)
    for key, values in tf_history.items():
        np.testing.assert_allclose(history.history[key], values, rtol=2e-5)
    np.testing.assert_allclose(model.predict(x, verbose=0)["priority"][:2].ravel(),
                               [-0.461234, 0.215485], atol=2e-6)              # TF 2.21
    # evaluate's list: the loss, then the outputs' losses in the loss dict's order (TF 2.21).
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), [0.868083, 0.615947, 1.26068],
                               rtol=2e-5)
    with pytest.raises(ValueError, match="y has keys \\['priorty'\\] that are not output"):
        model.evaluate(x, {"priorty": y["priority"], "department": y["department"]},
                       verbose=0)


# ---- models inside models ------------------------------------------------------------------------
def siamese():
    enc_in = keras.Input((4,), name="enc_in")
    encoder = keras.Model(enc_in, layers.Dense(3, activation="tanh", name="enc_dense")(enc_in),
                          name="encoder")
    head = keras.Sequential([layers.Dense(2, activation="relu", name="head_hidden"),
                             layers.Dense(1, name="head_out")], name="head")
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    merged = layers.Concatenate(name="merge")([encoder(a), encoder(b)])   # shared encoder
    return keras.Model([a, b], head(merged), name="siamese")


def siamese_data():
    rs = np.random.RandomState(3)
    weights = {"enc_dense": [rs.randn(4, 3).astype("f") * 0.5, rs.randn(3).astype("f") * 0.1],
               "head_hidden": [rs.randn(6, 2).astype("f") * 0.5, np.array([0.2, 0.1], "f")],
               "head_out": [rs.randn(2, 1).astype("f"), np.array([0.05], "f")]}
    xa, xb, y = (rs.randn(10, n).astype("f") for n in (4, 4, 1))
    return weights, xa, xb, y


def test_nested_models_run_and_train_as_in_tensorflow():
    model = siamese()
    weights, xa, xb, y = siamese_data()
    encoder, head = model.get_layer("encoder"), model.get_layer("head")
    encoder.get_layer("enc_dense").set_weights(weights["enc_dense"])
    head.get_layer("head_hidden").set_weights(weights["head_hidden"])
    head.get_layer("head_out").set_weights(weights["head_out"])
    assert [layer.name for layer in model.layers] == ["a", "b", "encoder", "merge", "head"]
    assert model.count_params() == 32 and len(model.trainable_weights) == 6
    assert encoder.output_shape == (None, 3) and head.output_shape == (None, 1)
    enc = encoder.get_layer("enc_dense")
    hidden = np.concatenate([dense_np(xa, enc, "tanh"), dense_np(xb, enc, "tanh")], axis=1)
    expected = dense_np(dense_np(hidden, head.get_layer("head_hidden"), "relu"),
                        head.get_layer("head_out"))
    np.testing.assert_allclose(model.predict([xa, xb], verbose=0), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(expected[:3].ravel(), [-0.977882, -0.928615, -1.062668],
                               atol=2e-6)                                    # TF 2.21
    model.compile(keras.optimizers.SGD(0.05), "mse", metrics=["mae"])
    history = model.fit([xa, xb], y, batch_size=5, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [0.666424, 0.450584, 0.382999],
                               rtol=2e-5)                                    # TF 2.21
    np.testing.assert_allclose(history.history["mae"], [0.761932, 0.623395, 0.570803],
                               rtol=2e-5)
    np.testing.assert_allclose(enc.get_weights()[0][0], [0.89129, 0.246818, 0.009496],
                               atol=2e-6)                                    # the shared one


def test_functional_model_inside_a_sequential_model():
    inner_in = keras.Input((3,), name="inner_in")
    inner = keras.Model(inner_in, layers.Dense(2, name="inner_dense")(inner_in), name="inner")
    outer = keras.Sequential([keras.Input((3,)), inner, layers.Dense(1, name="top")])
    assert outer.output_shape == (None, 1) and inner.output_shape == (None, 2)
    x = np.random.RandomState(4).randn(5, 3).astype(np.float32)
    expected = dense_np(dense_np(x, inner.get_layer("inner_dense")), outer.get_layer("top"))
    np.testing.assert_allclose(outer(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert outer.count_params() == 8 + 3


# ---- get_config / from_config --------------------------------------------------------------------
def histories(config):
    """``{layer: [[keras_history of each tensor argument] per call]}`` of a config."""
    def refs(value):
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            return [value["config"]["keras_history"]]
        if isinstance(value, list):
            return [r for v in value for r in refs(v)]
        return []
    return {entry["name"]: [refs(call["args"]) for call in entry["inbound_nodes"]]
            for entry in config["layers"]}


def shared_graph():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    shared = layers.Dense(4, name="sh")
    x = layers.Concatenate(name="cat")([shared(a), b])
    y = shared(layers.Dense(3, name="p")(x))
    inner_in = keras.Input((4,), name="ii")
    inner = keras.Model(inner_in, layers.Dense(1, name="io")(inner_in), name="inner")
    return keras.Model({"a": a, "b": b}, {"out": inner(y), "y": y}, name="outer")


def test_get_config_writes_the_graph_as_keras_3_does():
    model = shared_graph()
    config = model.get_config()
    json.dumps(config)                                      # plain JSON values
    assert config["name"] == "outer" and config["trainable"] is True
    # The layers' calls, and the inputs and outputs, as TF 2.21 writes them for this graph
    # (a nested functional model's calls count from 1 in output_layers).
    assert histories(config) == {
        "a": [], "b": [], "sh": [[["a", 0, 0]], [["p", 0, 0]]],
        "cat": [[["sh", 0, 0], ["b", 0, 0]]], "p": [[["cat", 0, 0]]],
        "inner": [[["sh", 1, 0]]]}
    assert config["input_layers"] == {"a": ["a", 0, 0], "b": ["b", 0, 0]}
    assert config["output_layers"] == {"out": ["inner", 1, 0], "y": ["sh", 1, 0]}
    by_name = {entry["name"]: entry for entry in config["layers"]}
    assert by_name["inner"]["class_name"] == "Functional"
    assert by_name["inner"]["config"]["input_layers"] == ["ii", 0, 0]
    assert by_name["inner"]["config"]["output_layers"] == ["io", 0, 0]
    assert by_name["a"]["config"]["batch_shape"] == [None, 3]
    assert by_name["sh"]["config"]["units"] == 4
    # The siamese model's shared nested model: its two calls (TF 2.21).
    siamese_config = siamese().get_config()
    assert histories(siamese_config)["merge"] == [[["encoder", 0, 0], ["encoder", 1, 0]]]
    assert siamese_config["output_layers"] == ["head", 0, 0]
    assert [e["class_name"] for e in siamese_config["layers"]] == [
        "InputLayer", "InputLayer", "Functional", "Concatenate", "Sequential"]


def test_from_config_rebuilds_the_same_graph():
    model = shared_graph()
    rebuilt = keras.Model.from_config(model.get_config())
    assert type(rebuilt) is keras.Model and rebuilt is not model
    assert rebuilt.get_config() == model.get_config()
    assert [layer.name for layer in rebuilt.layers] == [layer.name for layer in model.layers]
    rebuilt.set_weights(model.get_weights())
    rng = np.random.RandomState(5)
    x = {"a": rng.randn(3, 3).astype("f"), "b": rng.randn(3, 2).astype("f")}
    want, got = model(x), rebuilt(x)
    for key in ("out", "y"):
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=1e-6)
    # Through JSON, as Keras users store it; new weights (not shared with the original).
    again = keras.Model.from_config(json.loads(json.dumps(siamese().get_config())))
    assert [layer.name for layer in again.layers] == ["a", "b", "encoder", "merge", "head"]
    assert again.get_layer("head").get_layer("head_out").output_shape == (None, 1)


def test_from_config_with_an_edited_input_shape():
    # A common Keras 3 recipe: change the input's batch_shape in the config, rebuild.
    inputs = keras.Input((4,), name="x")
    model = keras.Model(inputs, layers.Dense(2, name="d")(inputs))
    config = model.get_config()
    config["layers"][0]["config"]["batch_shape"] = [None, 6]
    wider = keras.Model.from_config(config)
    assert wider.input_shape == (None, 6)
    assert wider.get_layer("d").get_weights()[0].shape == (6, 2)


class Scale(layers.Layer):
    """A custom layer: multiplies by a learned scalar."""

    def __init__(self, initial=2.0, **kwargs):
        super().__init__(**kwargs)
        self.initial = initial

    def build(self, input_shape):
        self.scale = self.add_weight(name="scale", shape=(),
                                     initializer=keras.initializers.Constant(self.initial))

    def call(self, x):
        return x * self.scale

    def get_config(self):
        return {**super().get_config(), "initial": self.initial}


def test_from_config_finds_custom_layers_through_custom_objects():
    inputs = keras.Input((3,), name="x")
    model = keras.Model(inputs, Scale(3.0, name="scale")(layers.Dense(2, name="d")(inputs)))
    frozen = model.get_layer("d")
    frozen.trainable = False
    config = model.get_config()
    with pytest.raises(ValueError, match="Unknown layer: 'Scale'.*custom_objects"):
        keras.Model.from_config(config)
    rebuilt = keras.Model.from_config(config, custom_objects={"Scale": Scale})
    assert isinstance(rebuilt.get_layer("scale"), Scale)
    assert float(rebuilt.get_layer("scale").scale.numpy()) == 3.0
    assert rebuilt.get_layer("d").trainable is False          # each layer's own flag kept
    assert len(rebuilt.trainable_weights) == 1
    rebuilt.set_weights(model.get_weights())
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(rebuilt(x).numpy(), model(x).numpy(), rtol=1e-6)


class StepCounter(keras.Model):
    """A functional model with a custom train_step, built by keras.Model(*args, **kwargs)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps = keras.metrics.Sum(name="steps")

    def train_step(self, data):
        self.steps.update_state(1.0)
        return super().train_step(data)


def test_from_config_revives_a_functional_subclass_as_its_class():
    inputs = keras.Input((2,))
    model = StepCounter(inputs, layers.Dense(1)(inputs))
    rebuilt = StepCounter.from_config(model.get_config())
    assert type(rebuilt) is StepCounter and rebuilt.output_shape == (None, 1)
    rebuilt.compile("sgd", "mse")
    history = rebuilt.fit(np.ones((4, 2), "f"), np.ones((4, 1), "f"), batch_size=2, epochs=1,
                          verbose=0)
    assert history.history["steps"] == [2.0]

    class Fixed(keras.Model):
        def __init__(self, units):
            super().__init__()
            self.dense = layers.Dense(units)

        def call(self, x):
            return self.dense(x)
    with pytest.raises(TypeError, match="Unable to revive model Fixed"):
        Fixed.from_config(model.get_config())


def test_from_config_rejects_a_disconnected_graph():
    config = keras.Model(*_linear()).get_config()
    config["layers"][1]["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = ["d", 0, 0]
    with pytest.raises(ValueError, match=r"calls of layers \['d'\] take tensors that no call"):
        keras.Model.from_config(config)


def _linear():
    inputs = keras.Input((2,), name="x")
    return inputs, layers.Dense(1, name="d")(inputs)


def test_functional_model_trains_inside_tf_function_with_dict_inputs():
    z, a = keras.Input((2,), name="z"), keras.Input((2,), name="a")   # not in sorted order
    model = keras.Model([z, a], layers.Dense(1, name="out")(layers.Subtract()([z, a])))
    optimizer = keras.optimizers.SGD(0.1)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    x = {"a": np.zeros((4, 2), "f"), "z": np.ones((4, 2), "f")}
    kernel, bias = model.get_layer("out").get_weights()
    np.testing.assert_allclose(model(x).numpy(), np.ones((4, 2)) @ kernel + bias, rtol=1e-6)
    first = float(step(x, np.zeros((4, 1), "f")))
    for _ in range(20):
        last = float(step(x, np.zeros((4, 1), "f")))
    assert last < 0.05 * first
