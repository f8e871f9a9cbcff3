"""keras.Model, keras.Sequential and the functional API: structure, summary, weights, tracing."""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.keras import layers, models

# The seed's printed summary, trailing spaces included (as Keras pads its columns).
SEED_SUMMARY = "\n".join([
    'Model: "sequential"',
    "_" * 65,
    "Layer (type)                 Output Shape              Param #   ",
    "=" * 65,
    "dense (Dense)                (None, 4)                 44        ",
    "_" * 65,
    "dense_1 (Dense)              (None, 2)                 10        ",
    "_" * 65,
    "dense_2 (Dense)              (None, 1)                 3         ",
    "=" * 65,
    "Total params: 57",
    "Trainable params: 57",
    "Non-trainable params: 0",
    "_" * 65])


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _summary(model, **kwargs):
    lines = []
    model.summary(print_fn=lines.append, **kwargs)
    return "\n".join(lines)


def _seed_model():
    model = models.Sequential()
    model.add(layers.Dense(4, input_shape=(10,)))
    model.add(layers.Dense(2))
    model.add(layers.Dense(1))
    return model


# ---- the seed notebook's Sequential model --------------------------------------------------------
def test_keras_classes_are_modules():
    assert issubclass(tf.keras.Model, tf.Module)
    assert issubclass(tf.keras.layers.Layer, tf.Module)
    assert issubclass(tf.keras.Model, tf.keras.layers.Layer)
    assert tf.keras.Sequential is models.Sequential and tf.keras.models.Model is tf.keras.Model


def test_seed_sequential_summary_and_structure():
    model = _seed_model()
    assert model.built and model.name == "sequential" and model.name_scope() == "sequential"
    assert _summary(model) == SEED_SUMMARY
    assert model.count_params() == 57
    assert [v.name for v in model.variables] == [
        "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0",
        "dense_2/kernel:0", "dense_2/bias:0"]
    assert [v.shape for v in model.variables] == [(10, 4), (4,), (4, 2), (2,), (2, 1), (1,)]
    np.testing.assert_array_equal(model.variables[1].numpy(), np.zeros(4))
    assert [type(m).__name__ for m in model.submodules] == ["InputLayer", "Dense", "Dense",
                                                            "Dense"]
    assert model.submodules[0].name == "dense_input"
    assert [layer.name for layer in model.layers] == ["dense", "dense_1", "dense_2"]
    assert model.layers[0].output_shape == (None, 4)
    assert model.layers[0].input_shape == (None, 10)
    assert model.input_shape == (None, 10) and model.output_shape == (None, 1)


def test_freezing_the_first_layer():
    model = _seed_model()
    model.layers[0].trainable = False
    assert [v.name for v in model.trainable_variables] == [
        "dense_1/kernel:0", "dense_1/bias:0", "dense_2/kernel:0", "dense_2/bias:0"]
    assert [v.name for v in model.non_trainable_variables] == ["dense/kernel:0", "dense/bias:0"]
    summary = _summary(model)
    assert "Trainable params: 13" in summary and "Non-trainable params: 44" in summary
    assert "Total params: 57" in summary
    model.trainable = False
    assert model.trainable_variables == [] and len(model.non_trainable_variables) == 6
    assert not any(layer.trainable for layer in model.layers)


def test_summary_line_length_and_show_trainable():
    model = _seed_model()
    model.layers[1].trainable = False
    lines = _summary(model, line_length=80, show_trainable=True).splitlines()
    assert lines[1] == "_" * 91
    assert lines[2].startswith("Layer (type)") and lines[2].rstrip().endswith("Trainable")
    rows = [line for line in lines if line.startswith("dense")]
    assert [row.split()[-1] for row in rows] == ["Y", "N", "Y"]


# ---- Sequential --------------------------------------------------------------------------------
def test_sequential_forward_pass_matches_numpy():
    model = models.Sequential([layers.Dense(3, activation="relu", input_shape=(2,)),
                               layers.Dense(1)])
    weights = [np.array([[1., -1., 2.], [0.5, 1., -1.]]), np.array([0.1, 0.2, 0.3]),
               np.array([[1.], [2.], [3.]]), np.array([-1.])]
    model.set_weights(weights)
    x = np.array([[1., 2.], [-1., 0.5]], np.float32)
    hidden = np.maximum(x @ weights[0] + weights[1], 0)
    np.testing.assert_allclose(model(x).numpy(), hidden @ weights[2] + weights[3], rtol=1e-6)
    for got, want in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(got, want.astype(np.float32))


def test_sequential_built_from_its_first_call():
    model = models.Sequential([layers.Dense(2), layers.Dense(3)], name="foo")
    assert not model.built
    with pytest.raises(ValueError, match="This model has not yet been built"):
        model.summary()
    with pytest.raises(ValueError, match="count_params` on layer foo"):
        model.count_params()
    out = model(np.zeros((4, 5), np.float32))
    assert out.shape == (4, 3) and model.built
    assert [v.name for v in model.weights] == ["dense/kernel:0", "dense/bias:0",
                                               "dense_1/kernel:0", "dense_1/bias:0"]
    summary = _summary(model)
    assert "dense (Dense)                (4, 2)                    12" in summary
    assert "Total params: 21" in summary


def test_sequential_with_keras_input_and_input_layer():
    inputs = keras.Input(shape=(3,))
    assert inputs.shape == tf.TensorShape([None, 3]) and inputs.dtype == tf.float32
    model = models.Sequential([inputs, layers.Dense(2)])
    assert model.built and model.layers[0].output_shape == (None, 2)
    assert [m.name for m in model.submodules] == ["input_1", "dense"]
    other = models.Sequential([layers.InputLayer(input_shape=(4,)), layers.Dense(5)])
    assert other.count_params() == 25


def test_sequential_add_pop_and_get_layer():
    model = _seed_model()
    assert model.get_layer("dense_1") is model.layers[1]
    assert model.get_layer(index=-1) is model.layers[2]
    with pytest.raises(ValueError, match=r"No such layer: nope. Existing layers are: "
                                         r"\['dense', 'dense_1', 'dense_2'\]"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="retrieve layer at index 5 but model only has 3"):
        model.get_layer(index=5)
    with pytest.raises(ValueError, match="Provide either a layer name or layer index"):
        model.get_layer()
    with pytest.raises(TypeError, match="The added layer must be an instance of class Layer"):
        model.add(3)
    with pytest.raises(ValueError, match='Name "dense" is already the name of a layer'):
        model.add(layers.Dense(1, name="dense"))
    popped = model.pop()
    assert popped.name == "dense_2" and len(model.layers) == 2 and model.count_params() == 54
    assert model.output_shape == (None, 2)
    model.add(layers.Dense(7))
    assert model.layers[-1].output_shape == (None, 7) and model.count_params() == 54 + 21
    with pytest.raises(ValueError, match=r'layer "conv2d".*expected min_ndim=4, found ndim=2'):
        model.add(layers.Conv2D(2, 3))
    empty = models.Sequential()
    with pytest.raises(TypeError, match="There are no layers in the model"):
        empty.pop()


def test_sequential_infers_custom_layer_shapes_symbolically():
    class Twice(layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight("scale", shape=(input_shape[-1],), initializer="ones")

        def call(self, inputs):
            return tf.concat([inputs * self.scale, inputs], -1)

    model = models.Sequential([layers.Dense(3, input_shape=(2,)), Twice(),
                               layers.Lambda(lambda v: v[:, :2]), layers.Dense(1)])
    assert [layer.output_shape for layer in model.layers] == [(None, 3), (None, 6), (None, 2),
                                                              (None, 1)]
    assert [v.name for v in model.weights] == ["dense/kernel:0", "dense/bias:0", "twice/scale:0",
                                               "dense_1/kernel:0", "dense_1/bias:0"]
    assert model(np.ones((4, 2), np.float32)).shape == (4, 1)


def test_sequential_config_round_trip():
    model = _seed_model()
    clone = models.Sequential.from_config(model.get_config())
    assert [type(layer).__name__ for layer in clone.layers] == ["Dense"] * 3
    assert clone.count_params() == 57 and clone.layers[0].output_shape == (None, 4)


def test_sequential_passes_training_to_its_layers():
    model = models.Sequential([layers.Dropout(0.5, seed=1, input_shape=(50,))])
    x = np.ones((10, 50), np.float32)
    np.testing.assert_array_equal(model(x).numpy(), x)
    assert (model(x, training=True).numpy() == 0).any()


# ---- subclassed models ---------------------------------------------------------------------------
class TwoTower(keras.Model):
    def __init__(self):
        super().__init__()
        self.norm = layers.BatchNormalization()
        self.hidden = [layers.Dense(4, activation="relu"), layers.Dense(3)]
        self.head = layers.Dense(1)
        self.scale = tf.Variable(1.5, name="scale")

    def call(self, inputs, training=None):
        x = self.norm(inputs, training=training)
        for layer in self.hidden:
            x = layer(x)
        return self.head(x) * self.scale


def test_subclassed_model_tracks_nested_layers_in_order():
    model = TwoTower()
    assert model.name == "two_tower" and not model.built
    model(np.ones((2, 5), np.float32))
    assert model.built
    assert [layer.name for layer in model.layers] == ["batch_normalization", "dense", "dense_1",
                                                      "dense_2"]
    assert list(model.submodules) == model.layers
    assert [v.name for v in model.weights] == [
        "two_tower/batch_normalization/gamma:0", "two_tower/batch_normalization/beta:0",
        "two_tower/batch_normalization/moving_mean:0",
        "two_tower/batch_normalization/moving_variance:0",
        "two_tower/dense/kernel:0", "two_tower/dense/bias:0",
        "two_tower/dense_1/kernel:0", "two_tower/dense_1/bias:0",
        "two_tower/dense_2/kernel:0", "two_tower/dense_2/bias:0", "scale:0"]
    assert len(model.trainable_variables) == 9 and len(model.non_trainable_variables) == 2
    assert model.count_params() == 20 + 24 + 15 + 4 + 1
    summary = _summary(model)
    assert 'Model: "two_tower"' in summary
    assert "batch_normalization (BatchNo multiple                  20" in summary
    assert "Total params: 64" in summary and "Non-trainable params: 10" in summary


def test_subclassed_model_build_from_input_shape():
    model = TwoTower()
    model.build((None, 5))
    assert model.built and model.count_params() == 64
    assert [v.shape for v in model.layers[1].weights] == [(5, 4), (4,)]
    with pytest.raises(ValueError, match="input_shape"):
        TwoTower().build(None)


def test_weights_of_unbuilt_models():
    assert models.Sequential([layers.Dense(2)]).weights == []
    assert [v.name for v in TwoTower().weights] == ["scale:0"]

    class WithBuild(keras.Model):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=(input_shape[-1],), initializer="ones")

        def call(self, inputs):
            return inputs * self.w

    model = WithBuild()
    with pytest.raises(ValueError, match="Weights for model 'with_build' have not yet been "
                                         "created"):
        model.weights
    np.testing.assert_array_equal(model(np.full((1, 3), 2.0, np.float32)).numpy(), [[2, 2, 2]])
    assert [v.name for v in model.weights] == ["with_build/w:0"]


def test_model_without_call_and_bad_arguments():
    with pytest.raises(NotImplementedError, match="subclass Model and override call"):
        keras.Model()(np.zeros((1, 2), np.float32))
    with pytest.raises(TypeError, match="keyword argument not understood: 'units'"):
        keras.Model(units=3)


class TinyCNN(keras.Model):
    """The seed notebook's CNN."""

    def __init__(self):
        super().__init__()
        self.conv1 = layers.Conv2D(filters=32, kernel_size=[5, 5], padding="same",
                                   activation=tf.nn.relu)
        self.pool1 = layers.MaxPool2D(pool_size=[2, 2], strides=2)
        self.conv2 = layers.Conv2D(filters=64, kernel_size=[5, 5], padding="same",
                                   activation=tf.nn.relu)
        self.pool2 = layers.MaxPool2D(pool_size=[2, 2], strides=2)
        self.flatten = layers.Reshape(target_shape=(7 * 7 * 64,))
        self.dense1 = layers.Dense(units=1024, activation=tf.nn.relu)
        self.dense2 = layers.Dense(units=10)

    def call(self, inputs):
        x = self.conv1(inputs)
        x = self.pool1(x)
        x = self.conv2(x)
        x = self.pool2(x)
        x = self.flatten(x)
        x = self.dense1(x)
        x = self.dense2(x)
        return tf.nn.softmax(x)


def test_seed_cnn_structure():
    model = TinyCNN()
    x = np.random.RandomState(0).rand(2, 28, 28, 1).astype(np.float32)
    probabilities = model(x)
    assert probabilities.shape == (2, 10)
    np.testing.assert_allclose(probabilities.numpy().sum(axis=1), [1.0, 1.0], rtol=1e-5)
    assert model.count_params() == 3274634
    assert [tuple(v.shape) for v in model.trainable_variables] == [
        (5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (3136, 1024), (1024,), (1024, 10), (10,)]
    assert [layer.name for layer in model.layers] == [
        "conv2d", "max_pooling2d", "conv2d_1", "max_pooling2d_1", "reshape", "dense", "dense_1"]
    assert "Total params: 3,274,634" in _summary(model)


# ---- models in tf.function -----------------------------------------------------------------------
class Regressor(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = layers.Dense(8, activation="tanh")
        self.out = layers.Dense(1)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def test_model_called_inside_tf_function_and_trained():
    model = Regressor()
    rng = np.random.RandomState(1)
    x = rng.randn(16, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]])).astype(np.float32)

    @tf.function
    def train_step(inputs, targets):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(inputs) - targets))
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(0.1 * grad)
        return loss

    losses = [float(train_step(x, y)) for _ in range(30)]
    assert model.built and [v.name for v in model.weights][:2] == ["regressor/dense/kernel:0",
                                                                   "regressor/dense/bias:0"]
    assert losses[-1] < 0.5 * losses[0]
    eager_loss = float(tf.reduce_mean(tf.square(model(x) - y)))
    assert train_step.experimental_get_tracing_count() <= 2
    assert eager_loss == pytest.approx(float(train_step(x, y)), rel=1e-4)


def test_decorated_call_method():
    class Decorated(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2, kernel_initializer="ones")

        @tf.function
        def call(self, inputs):
            return self.dense(inputs) * 2.0

    model = Decorated()
    np.testing.assert_allclose(model(np.ones((1, 3), np.float32)).numpy(), [[6.0, 6.0]])
    assert [v.name for v in model.weights] == ["decorated/dense/kernel:0",
                                               "decorated/dense/bias:0"]


# ---- the functional API -------------------------------------------------------------------------
def test_functional_model_two_inputs():
    a = keras.Input(shape=(4,), name="a")
    b = keras.Input(shape=(4,), name="b")
    merged = layers.Concatenate()([layers.Dense(3, name="da")(a), layers.Dense(3, name="db")(b)])
    output = layers.Dense(1, name="out")(merged)
    model = keras.Model(inputs=[a, b], outputs=output, name="fm")
    assert [layer.name for layer in model.layers] == ["a", "b", "da", "db", "concatenate", "out"]
    assert model.count_params() == 37
    xa = np.random.RandomState(2).randn(2, 4).astype(np.float32)
    xb = np.random.RandomState(3).randn(2, 4).astype(np.float32)
    da, db, out = (model.get_layer(n).get_weights() for n in ("da", "db", "out"))
    hidden = np.concatenate([xa @ da[0] + da[1], xb @ db[0] + db[1]], axis=1)
    np.testing.assert_allclose(model([xa, xb]).numpy(), hidden @ out[0] + out[1], rtol=1e-5,
                               atol=1e-6)
    lines = _summary(model).splitlines()
    assert lines[2].split() == ["Layer", "(type)", "Output", "Shape", "Param", "#", "Connected",
                                "to"]
    assert lines[4].split() == ["a", "(InputLayer)", "[(None,", "4)]", "0"]
    concat_rows = [line for line in lines if "concatenate (Concatenate)" in line]
    assert concat_rows[0].split()[-1] == "da[0][0]"
    assert lines[lines.index(concat_rows[0]) + 1].split() == ["db[0][0]"]
    with pytest.raises(ValueError, match="expects 2 input"):
        model(xa)


def test_functional_linear_model_summary_and_errors():
    inputs = keras.Input((5,))
    hidden = layers.Dense(4, activation="relu")(inputs)
    outputs = layers.Dense(2)(layers.Dropout(0.5)(hidden))
    model = keras.Model(inputs, outputs)
    assert model.name == "model" and model.output_shape == (None, 2)
    summary = _summary(model)
    assert "input_1 (InputLayer)         [(None, 5)]               0" in summary
    assert "Connected to" not in summary and "Total params: 34" in summary
    assert model(np.ones((3, 5), np.float32)).shape == (3, 2)
    stray = keras.Input((5,))
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(inputs, layers.Add()([hidden, layers.Dense(4)(stray)]))


# ---- weights I/O delegates to keras.saving -------------------------------------------------------
def test_save_and_load_weights_delegate_to_saving(monkeypatch):
    from hybridtf.keras import saving
    calls = []
    monkeypatch.setattr(saving, "save_weights",
                        lambda layer, path, overwrite=True: calls.append(("save", layer, path,
                                                                          overwrite)))
    monkeypatch.setattr(saving, "load_weights",
                        lambda layer, path: calls.append(("load", layer, path)))
    model = _seed_model()
    model.save_weights("weights.h5", overwrite=False)
    model.load_weights("weights.h5")
    assert calls == [("save", model, "weights.h5", False), ("load", model, "weights.h5")]


def test_building_from_input_leaves_no_symbolic_losses():
    class AddsLoss(tf.keras.layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x))
            return x

    model = tf.keras.Sequential([tf.keras.Input((3,)), AddsLoss()])
    assert model.losses == []
    model(tf.ones([2, 3]))
    assert [float(loss) for loss in model.losses] == [6.0]
