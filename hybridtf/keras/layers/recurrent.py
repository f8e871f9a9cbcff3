"""Recurrent layers: ``RNN(cell)`` and ``SimpleRNN``, ``LSTM``, ``GRU``.

A recurrent layer runs its cell over the time axis of inputs [batch, time, features].  The
built-in cells with their default activations (tanh, and sigmoid gates) and no recurrent
dropout in training run the whole sequence as one fused op: the input projection of every step
is one matmul, and the recurrence over time one native loop (eagerly and in a compiled
``tf.function``).  Any other cell runs step by step in a ``tf.while_loop`` (a Python loop
eagerly), which is also differentiable.

Masks (``mask=`` or the mask of the inputs, e.g. from ``Embedding(mask_zero=True)`` or
``Masking``): at a masked step the states are kept and the output repeats the previous one
(zeros with ``zero_output_for_mask``).
"""
from hybridtf.api import array_ops, control_flow_ops, manip_ops, math_ops, tensor_array_ops
from hybridtf.eager.execute import as_tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.variables import Variable
from hybridtf.keras import backend
from hybridtf.keras.layers import nested_layers
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.core import _training_value
from hybridtf.keras.layers.input_spec import InputSpec
from hybridtf.keras.layers.layer_utils import serialize_regularizer
from hybridtf.keras.layers.recurrent_cells import (DropoutRNNCell, GRUCell, LSTMCell,
                                                   SimpleRNNCell)

_FUSED_CELLS = (SimpleRNNCell, LSTMCell, GRUCell)


def _sizes(size):
    return list(size) if isinstance(size, (list, tuple)) else [size]


def _as_list(states):
    return list(states) if isinstance(states, (list, tuple)) else [states]


class RNN(Layer):
    """Runs ``cell`` over the time axis of its inputs (``tf.keras.layers.RNN``).

    ``cell``: a layer with ``call(inputs, states, training=None) -> (output, new_states)`` and
    ``state_size`` (an int or a list of ints; ``output_size`` defaults to the first state's
    size).  ``return_sequences``: return the output of every step, [batch, time, units],
    instead of the last one; ``return_state``: also return the last states (a list
    ``[output, *states]``); ``go_backwards``: read the sequence from its end (the outputs come
    in that order); ``stateful``: the last states of a call are the initial states of the next
    (``reset_states()`` zeroes them); ``zero_output_for_mask``: zeros, not the previous output,
    at masked steps.  ``unroll`` is accepted for compatibility: the loop is never unrolled (it
    runs natively).

    Call arguments: ``initial_state`` (a tensor or list of tensors, one per state), ``mask``
    ([batch, time] bool), ``training``.
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        if isinstance(cell, (list, tuple)):
            raise TypeError(f"{type(self).__name__}: pass one cell; to stack cells, stack RNN "
                            "layers (each with return_sequences=True).")
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise ValueError(f"{type(self).__name__}: the cell must be a layer with a `call` "
                             f"method and a `state_size` attribute, got {cell!r}.")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.__dict__["_stateful"] = bool(stateful)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=3)
        self.__dict__["_state_variables"] = None

    # ---- shapes and building ------------------------------------------------------------------
    @property
    def state_sizes(self):
        return _sizes(self.cell.state_size)

    @property
    def output_size(self):
        return getattr(self.cell, "output_size", None) or self.state_sizes[0]

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        if shape.rank is None or shape.rank < 3:
            raise ValueError(f"{type(self).__name__} {self.name}: inputs must be [batch, time, "
                             f"features], got shape {shape}.")
        if not self.cell.built:
            self.cell._build_for_shapes(TensorShape([shape[0]] + shape.as_list()[2:]))
        self.built = True

    @property
    def stateful(self):
        return self._stateful

    @property
    def states(self):
        """The state variables of a stateful layer (None before its first call)."""
        return self._state_variables

    def reset_states(self, states=None):
        """Sets the states of a stateful layer to zeros, or to ``states`` (one array per
        state)."""
        if not self.stateful:
            raise AttributeError(f"{type(self).__name__} {self.name}: reset_states() needs a "
                                 "layer created with stateful=True.")
        variables = self._state_variables
        if variables is None:
            return
        values = [None] * len(variables) if states is None else _as_list(states)
        if len(values) != len(variables):
            raise ValueError(f"{type(self).__name__} {self.name}: expected {len(variables)} "
                             f"states, got {len(values)}.")
        for variable, value in zip(variables, values):
            variable.assign(array_ops.zeros_like(variable) if value is None else value)

    reset_state = reset_states

    def _zeros(self, sequences, size):
        batch = sequences.shape[0]
        if batch is not None:
            return array_ops.zeros((batch, size), dtype=self.dtype)
        # The batch size is known only when the function runs.
        return array_ops.zeros_like(sequences[:, 0, :1], dtype=self.dtype) + \
            array_ops.zeros((1, size), dtype=self.dtype)

    def _zero_states(self, sequences):
        return [self._zeros(sequences, size) for size in self.state_sizes]

    def _initial_states(self, sequences, initial_state):
        batch = sequences.shape[0]
        if initial_state is not None:
            states = [as_tensor(s) for s in _as_list(initial_state)]
            if len(states) != len(self.state_sizes):
                raise ValueError(f"{type(self).__name__} {self.name}: expected "
                                 f"{len(self.state_sizes)} initial states, got {len(states)}.")
            return states
        if not self.stateful:
            return self._zero_states(sequences)
        if batch is None:
            raise ValueError(f"{type(self).__name__} {self.name}: a stateful layer needs to "
                             "know its batch size; give the first layer batch_input_shape "
                             "(or batch_size), or call it on concrete inputs.")
        if self._state_variables is None:
            with backend.init_scope():
                self.__dict__["_state_variables"] = [
                    Variable(zeros, trainable=False, name=f"{self.name}/state_{i}")
                    for i, zeros in enumerate(self._zero_states(sequences))]
        return [v.value() for v in self._state_variables]

    # ---- calling ------------------------------------------------------------------------------
    def call(self, sequences, initial_state=None, mask=None, training=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        states = self._initial_states(sequences, initial_state)
        training = _training_value(training)
        if self._fusable(training):
            outputs, states = self._fused(sequences, states, mask, training)
        else:
            outputs, states = self._loop(sequences, states, mask, training)
        if self.stateful:
            for variable, state in zip(self._state_variables, states):
                variable.assign(state)
        if self.return_sequences:
            output = outputs
        else:
            output = states[0] if outputs is None else outputs[:, -1]
        return [output] + list(states) if self.return_state else output

    def _fusable(self, training):
        cell = self.cell
        return (type(cell) in _FUSED_CELLS and cell.uses_default_activations()
                and (not 0 < cell.recurrent_dropout < 1 or training is False))

    def _dropout_inputs(self, sequences, training):
        cell = self.cell
        if training is False or not 0 < cell.dropout < 1:
            return sequences
        # One mask for every step, as the step-by-step cell uses.
        mask = cell.get_dropout_mask(sequences[:, 0], training)
        cell.reset_dropout_mask()
        return sequences * array_ops.expand_dims(mask, 1)

    def _fused(self, sequences, states, mask, training):
        cell = self.cell
        x = self._dropout_inputs(sequences, training)
        projected = math_ops.matmul(x, cell.kernel)   # every step's projection: one matmul
        bias = cell.input_bias()
        if bias is not None:
            projected = projected + bias
        outputs, states = cell.fused_sequence(projected, states, mask, self.go_backwards,
                                              self.zero_output_for_mask)
        if mask is None and not self.return_sequences:
            outputs = None   # the last output is the last state
        return outputs, states

    def _loop(self, sequences, states, mask, training):
        """The cell step by step in a while loop; returns (outputs [batch, time, units],
        last states)."""
        cell = self.cell
        steps = sequences.shape[1]
        if steps is None:
            raise ValueError(f"{type(self).__name__} {self.name}: the number of time steps must "
                             "be known for this cell; trace with a fixed sequence length.")
        rank = sequences.ndim
        time_major = array_ops.transpose(sequences, [1, 0] + list(range(2, rank)))
        if mask is not None:
            mask = array_ops.transpose(math_ops.cast(mask, "bool"), [1, 0])
        if self.go_backwards:
            time_major = manip_ops.reverse(time_major, [0])
            if mask is not None:
                mask = manip_ops.reverse(mask, [0])
        dropout_cell = isinstance(cell, DropoutRNNCell) and training is not False
        if dropout_cell:     # one mask per sequence, made outside the loop
            cell.get_dropout_mask(time_major[0], training)
            cell.get_recurrent_dropout_mask(states[0], training)
        zeros = self._zeros(sequences, self.output_size)

        def step(t, previous, *old):
            x_t = array_ops.gather(time_major, t)
            output, new = cell(x_t, list(old), training=training)
            new = _as_list(new)
            if mask is not None:
                keep = array_ops.expand_dims(array_ops.gather(mask, t), -1)
                new = [math_ops.where(keep, n, o) for n, o in zip(new, old)]
                output = math_ops.where(keep, output,
                                        zeros if self.zero_output_for_mask else previous)
            return output, new

        def body(t, previous, written, *old):
            output, new = step(t, previous, *old)
            return (t + 1, output, written.write(t, output), *new)

        try:
            written = tensor_array_ops.TensorArray(self.dtype, size=steps,
                                                   element_shape=zeros.shape)
            result = control_flow_ops.while_loop(
                lambda t, *_: t < steps, body,
                (as_tensor(0), zeros, written, *states))
        finally:
            if dropout_cell:
                cell.reset_dropout_mask()
                cell.reset_recurrent_dropout_mask()
        outputs = result[2].stack()
        outputs = array_ops.transpose(outputs, [1, 0] + list(range(2, outputs.ndim)))
        return outputs, list(result[3:])

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape)
        batch, steps = shape[0], shape[1]
        output = TensorShape([batch, steps, self.output_size] if self.return_sequences
                             else [batch, self.output_size])
        if not self.return_state:
            return output
        return [output] + [TensorShape([batch, size]) for size in self.state_sizes]

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self.state_sizes)
        return output_mask

    # ---- config -------------------------------------------------------------------------------
    def _rnn_config(self):
        return {"return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful,
                "unroll": self.unroll, "zero_output_for_mask": self.zero_output_for_mask}

    def get_config(self):
        config = super().get_config()
        config.update(self._rnn_config())
        config["cell"] = nested_layers.serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config["cell"], dict):
            config["cell"] = nested_layers.deserialize(config["cell"], custom_objects)
        return cls(**config)


class _BuiltInRNN(RNN):
    """The recurrent layers that make their own cell from their arguments."""

    _cell_class = None
    _cell_name = None

    def __init__(self, units, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False,
                 activity_regularizer=None, use_cudnn="auto", **kwargs):
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs)
                        if k in ("name", "trainable", "dtype", "dynamic", "input_shape",
                                 "input_dim", "batch_input_shape", "batch_size", "weights",
                                 "autocast", "implementation")}
        cell = self._cell_class(units, name=self._cell_name, dtype=layer_kwargs.get("dtype"),
                                trainable=layer_kwargs.get("trainable", True), **kwargs)
        layer_kwargs.pop("implementation", None)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         zero_output_for_mask=zero_output_for_mask,
                         activity_regularizer=activity_regularizer, **layer_kwargs)
        self.use_cudnn = use_cudnn

    def __getattr__(self, name):
        # The cell's options read through the layer (layer.units, layer.dropout, ...).
        cell = self.__dict__.get("cell")
        if cell is not None and not name.startswith("_") and name in cell.__dict__:
            return cell.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_config(self):
        config = Layer.get_config(self)
        config.update(self._rnn_config())
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        config.update(cell_config)
        config["activity_regularizer"] = serialize_regularizer(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class SimpleRNN(_BuiltInRNN):
    """A fully connected RNN whose output is fed back: ``h = activation(x @ kernel + bias +
    h_prev @ recurrent_kernel)`` (see ``SimpleRNNCell`` for the cell's arguments and ``RNN``
    for the layer's)."""

    _cell_class = SimpleRNNCell
    _cell_name = "simple_rnn_cell"


class LSTM(_BuiltInRNN):
    """Long short-term memory (Hochreiter 1997), Keras's ``tf.keras.layers.LSTM``: see
    ``LSTMCell`` for the cell's arguments and ``RNN`` for the layer's.  With the default
    activations and no recurrent dropout in training, the sequence runs as one fused op."""

    _cell_class = LSTMCell
    _cell_name = "lstm_cell"


class GRU(_BuiltInRNN):
    """Gated recurrent unit (Cho et al. 2014), Keras's ``tf.keras.layers.GRU``; ``reset_after``
    (default True) applies the reset gate after the recurrent matmul.  See ``GRUCell`` for the
    cell's arguments and ``RNN`` for the layer's."""

    _cell_class = GRUCell
    _cell_name = "gru_cell"
