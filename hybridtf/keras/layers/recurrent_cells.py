"""The recurrent cells: ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell`` -- one time step each.

A cell's ``call(inputs, states, training=False)`` takes one step's inputs [batch, features]
and the list of states, and returns ``(output, new_states)``.  ``state_size`` and
``output_size`` give the sizes.  Weights are Keras's: ``kernel`` [features, gates * units],
``recurrent_kernel`` [units, gates * units], ``bias``; gates in Keras's order (LSTM: i, f, c,
o; GRU: z, r, h).  The recurrent layers (``keras.layers.RNN`` and its subclasses) run a cell
over a sequence; ``LSTM``, ``GRU`` and ``SimpleRNN`` run the whole sequence in one fused op when
the cell has its default activations.

Dropout: ``dropout`` drops inputs and ``recurrent_dropout`` drops the previous state, with one
mask per sequence (made by the layer before the loop, see ``DropoutRNNCell``), in training only.
"""
from hybridtf.api import array_ops, math_ops, nn_ops, recurrent_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import activations, initializers
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.core import _training_value, smart_cond
from hybridtf.keras.layers.layer_utils import (get_constraint, get_regularizer,
                                               serialize_constraint, serialize_initializer,
                                               serialize_regularizer)


class DropoutRNNCell:
    """Dropout masks kept for the length of one sequence: ``get_dropout_mask(step_inputs)``
    and ``get_recurrent_dropout_mask(state)`` make them on first use (scaled by 1 / (1 -
    rate)); the layer resets them after the sequence."""

    def _make_mask(self, like, rate, training):
        def dropped():
            return nn_ops.dropout(array_ops.ones_like(like), rate=rate, seed=self.seed)
        return smart_cond(_training_value(training), dropped,
                          lambda: array_ops.ones_like(like))

    def get_dropout_mask(self, step_inputs, training=True):
        if not 0 < self.dropout < 1:
            return None
        if self.__dict__.get("_dropout_mask") is None:
            self.__dict__["_dropout_mask"] = self._make_mask(step_inputs, self.dropout, training)
        return self.__dict__["_dropout_mask"]

    def get_recurrent_dropout_mask(self, state, training=True):
        if not 0 < self.recurrent_dropout < 1:
            return None
        if self.__dict__.get("_recurrent_dropout_mask") is None:
            self.__dict__["_recurrent_dropout_mask"] = self._make_mask(
                state, self.recurrent_dropout, training)
        return self.__dict__["_recurrent_dropout_mask"]

    def reset_dropout_mask(self):
        self.__dict__["_dropout_mask"] = None

    def reset_recurrent_dropout_mask(self):
        self.__dict__["_recurrent_dropout_mask"] = None

    def _dropped_inputs(self, inputs, training):
        if training is None or training is False or not 0 < self.dropout < 1:
            return inputs
        return inputs * self.get_dropout_mask(inputs, training)

    def _dropped_state(self, state, training):
        if training is None or training is False or not 0 < self.recurrent_dropout < 1:
            return state
        return state * self.get_recurrent_dropout_mask(state, training)


def _rate(value, who, what):
    value = float(value)
    if not 0 <= value <= 1:
        raise ValueError(f"{who}: `{what}` must be in [0, 1], got {value}.")
    return value


class _Cell(DropoutRNNCell, Layer):
    """What the three cells share: options, weights and config."""

    _gates = 1
    _default_recurrent_activation = None

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        who = type(self).__name__
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"{who}: received an invalid value for argument `units`, expected "
                             f"a positive integer, got {units!r}.")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer, who)
        self.recurrent_regularizer = get_regularizer(recurrent_regularizer, who)
        self.bias_regularizer = get_regularizer(bias_regularizer, who)
        self.kernel_constraint = get_constraint(kernel_constraint, who)
        self.recurrent_constraint = get_constraint(recurrent_constraint, who)
        self.bias_constraint = get_constraint(bias_constraint, who)
        self.dropout = _rate(dropout, who, "dropout")
        self.recurrent_dropout = _rate(recurrent_dropout, who, "recurrent_dropout")
        self.seed = seed
        self.kernel = self.recurrent_kernel = self.bias = None

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def _bias_shape(self):
        return (self._gates * self.units,)

    def input_bias(self):
        """The bias added to ``inputs @ kernel`` (None without one)."""
        return self.bias if self.use_bias else None

    def _bias_initializer(self):
        return self.bias_initializer

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        features = input_shape[-1]
        if features is None:
            raise ValueError(f"{type(self).__name__} {self.name}: the last dimension of the "
                             f"inputs must be known, got shape {input_shape}.")
        width = self._gates * self.units
        self.kernel = self.add_weight(
            "kernel", shape=(features, width), initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", shape=(self.units, width),
            initializer=self.recurrent_initializer, regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", shape=self._bias_shape(), initializer=self._bias_initializer(),
                regularizer=self.bias_regularizer, constraint=self.bias_constraint)
        self.built = True

    def uses_default_activations(self):
        """Whether the cell computes exactly what the fused recurrence computes."""
        recurrent = getattr(self, "recurrent_activation", None)
        return self.activation is activations.tanh and (
            self._default_recurrent_activation is None or recurrent is activations.sigmoid)

    def get_initial_state(self, batch_size=None):
        return [array_ops.zeros((batch_size, self.units), dtype=self.dtype)
                for _ in range(len(self._state_list()))]

    def _state_list(self):
        return self.state_size if isinstance(self.state_size, (list, tuple)) \
            else [self.state_size]

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": serialize_initializer(self.kernel_initializer),
            "recurrent_initializer": serialize_initializer(self.recurrent_initializer),
            "bias_initializer": serialize_initializer(self.bias_initializer),
            "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
            "recurrent_regularizer": serialize_regularizer(self.recurrent_regularizer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "kernel_constraint": serialize_constraint(self.kernel_constraint),
            "recurrent_constraint": serialize_constraint(self.recurrent_constraint),
            "bias_constraint": serialize_constraint(self.bias_constraint),
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed})
        if self._default_recurrent_activation is not None:
            config["recurrent_activation"] = activations.serialize(self.recurrent_activation)
        return config


def _first(states):
    return states[0] if isinstance(states, (list, tuple)) else states


class SimpleRNNCell(_Cell):
    """One step of a fully connected RNN: ``h = activation(inputs @ kernel + bias +
    h_prev @ recurrent_kernel)``; the output is h."""

    def call(self, inputs, states, training=False):
        h_prev = self._dropped_state(_first(states), training)
        z = math_ops.matmul(self._dropped_inputs(inputs, training), self.kernel)
        if self.use_bias:
            z = z + self.bias
        h = self.activation(z + math_ops.matmul(h_prev, self.recurrent_kernel))
        return h, [h]

    def fused_sequence(self, projected, states, mask, go_backwards, zero_output_for_mask):
        """The whole sequence in one op, from ``inputs @ kernel + bias`` of every step."""
        out, h = recurrent_ops.simple_rnn_sequence(
            projected, states[0], self.recurrent_kernel, mask, go_backwards,
            zero_output_for_mask)
        return out, [h]


class LSTMCell(_Cell):
    """One step of a long short-term memory: gates ``i, f, o = recurrent_activation(.)``,
    candidate ``activation(.)``, ``c = f * c_prev + i * candidate``, ``h = o *
    activation(c)``; states ``[h, c]``, output h.  ``unit_forget_bias`` starts the forget
    gate's bias at 1."""

    _gates = 4
    _default_recurrent_activation = "sigmoid"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, units = self.bias_initializer, self.units

        def initializer(shape, dtype=None):
            parts = [base((units,), dtype=dtype), initializers.get("ones")((units,), dtype=dtype),
                     base((2 * units,), dtype=dtype)]
            return array_ops.concat(parts, 0)
        return initializer

    def call(self, inputs, states, training=False):
        h_prev, c_prev = states
        h_prev = self._dropped_state(h_prev, training)
        z = math_ops.matmul(self._dropped_inputs(inputs, training), self.kernel) + \
            math_ops.matmul(h_prev, self.recurrent_kernel)
        if self.use_bias:
            z = z + self.bias
        zi, zf, zc, zo = array_ops.split(z, 4, axis=-1)
        act, gate = self.activation, self.recurrent_activation
        c = gate(zf) * c_prev + gate(zi) * act(zc)
        h = gate(zo) * act(c)
        return h, [h, c]

    def fused_sequence(self, projected, states, mask, go_backwards, zero_output_for_mask):
        """The whole sequence in one op, from ``inputs @ kernel + bias`` of every step."""
        out, h, c = recurrent_ops.lstm_sequence(
            projected, states[0], states[1], self.recurrent_kernel, mask, go_backwards,
            zero_output_for_mask)
        return out, [h, c]

    def get_config(self):
        config = super().get_config()
        config["unit_forget_bias"] = self.unit_forget_bias
        return config


class GRUCell(_Cell):
    """One step of a gated recurrent unit: update and reset gates ``z, r =
    recurrent_activation(.)``, candidate ``hh = activation(x_h + r * (h_prev @ rk_h + b_h))``
    (``reset_after=True``, Keras's default; the bias then has shape (2, 3 * units): input and
    recurrent biases) or ``activation(x_h + (r * h_prev) @ rk_h)``, and ``h = z * h_prev +
    (1 - z) * hh``."""

    _gates = 3
    _default_recurrent_activation = "sigmoid"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 reset_after=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def input_bias(self):
        return self.input_and_recurrent_bias()[0]

    def input_and_recurrent_bias(self):
        """(input bias, recurrent bias): the latter is None unless ``reset_after``; both None
        without a bias."""
        if not self.use_bias:
            return None, None
        if self.reset_after:
            return self.bias[0], self.bias[1]
        return self.bias, None

    def call(self, inputs, states, training=False):
        h_prev = _first(states)
        dropped = self._dropped_state(h_prev, training)
        x = math_ops.matmul(self._dropped_inputs(inputs, training), self.kernel)
        input_bias, recurrent_bias = self.input_and_recurrent_bias()
        if input_bias is not None:
            x = x + input_bias
        xz, xr, xh = array_ops.split(x, 3, axis=-1)
        gate, units = self.recurrent_activation, self.units
        if self.reset_after:
            inner = math_ops.matmul(dropped, self.recurrent_kernel)
            if recurrent_bias is not None:
                inner = inner + recurrent_bias
            iz, ir, ih = array_ops.split(inner, 3, axis=-1)
            z, r = gate(xz + iz), gate(xr + ir)
            hh = self.activation(xh + r * ih)
        else:
            inner = math_ops.matmul(dropped, self.recurrent_kernel[:, :2 * units])
            iz, ir = array_ops.split(inner, 2, axis=-1)
            z, r = gate(xz + iz), gate(xr + ir)
            hh = self.activation(xh + math_ops.matmul(r * dropped,
                                                      self.recurrent_kernel[:, 2 * units:]))
        h = z * h_prev + (1.0 - z) * hh
        return h, [h]

    def fused_sequence(self, projected, states, mask, go_backwards, zero_output_for_mask):
        """The whole sequence in one op, from ``inputs @ kernel + input bias`` of every step."""
        recurrent_bias = self.input_and_recurrent_bias()[1]
        if self.reset_after and recurrent_bias is None:
            recurrent_bias = array_ops.zeros((3 * self.units,), dtype=self.dtype)
        out, h = recurrent_ops.gru_sequence(
            projected, states[0], self.recurrent_kernel, recurrent_bias, mask, go_backwards,
            zero_output_for_mask, reset_after=self.reset_after)
        return out, [h]

    def get_config(self):
        config = super().get_config()
        config["reset_after"] = self.reset_after
        return config
