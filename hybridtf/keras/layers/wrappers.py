"""Layer wrappers: ``Bidirectional`` (a recurrent layer run both ways) and ``TimeDistributed``
(a layer applied to every time step)."""
from hybridtf.api import array_ops, manip_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers import nested_layers
from hybridtf.keras.layers.base_layer import Layer

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


def _renamed_copy(layer, name, **overrides):
    """A new layer from ``layer``'s config, named ``name`` (its weights are not copied).  An
    RNN's cell is copied from its own config, so a user's cell class needs no registration."""
    config = dict(layer.get_config(), name=name, **overrides)
    cell = getattr(layer, "cell", None)
    if isinstance(config.get("cell"), dict) and cell is not None:
        config["cell"] = type(cell).from_config(cell.get_config())
    return type(layer).from_config(config)


def _strip(name, prefix):
    return name[len(prefix):] if name.startswith(prefix) else name


class Bidirectional(Layer):
    """Runs a recurrent ``layer`` forwards and a copy of it backwards over the sequence and
    merges their outputs (``tf.keras.layers.Bidirectional``).

    ``merge_mode``: "concat" (default), "sum", "mul", "ave", or None (a list of the two
    outputs).  ``backward_layer``: the backward layer to use (its ``go_backwards`` must differ
    from ``layer``'s), instead of a copy of ``layer``.  Both layers are new layers made from
    the configs (named ``forward_<name>`` and ``backward_<name>``).  With ``return_sequences``
    the backward outputs are put back in time order before merging, and masked steps output
    zeros.  With ``return_state`` the call returns the merged output, then the forward states,
    then the backward ones; ``initial_state`` takes them in that order.
    """

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 **kwargs):
        if not isinstance(layer, Layer) or not hasattr(layer, "go_backwards"):
            raise ValueError(f"Bidirectional: please initialize `Bidirectional` layer with a "
                             f"recurrent layer (RNN, LSTM, GRU, SimpleRNN); received: {layer!r}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Bidirectional: invalid merge mode {merge_mode!r}; merge mode "
                             f"should be one of {list(_MERGE_MODES)}.")
        if backward_layer is not None and backward_layer.go_backwards == layer.go_backwards:
            raise ValueError("Bidirectional: `backward_layer.go_backwards` must differ from "
                             "`layer.go_backwards`.")
        super().__init__(weights=weights, **kwargs)
        self.forward_layer = _renamed_copy(layer, "forward_" + _strip(layer.name, "forward_"))
        if backward_layer is None:
            backward_layer = _renamed_copy(layer, "backward_" + _strip(layer.name, "backward_"),
                                           go_backwards=not layer.go_backwards)
        self.backward_layer = backward_layer
        for part in (self.forward_layer, self.backward_layer):
            part.zero_output_for_mask = part.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.__dict__["_stateful"] = layer.stateful
        self.supports_masking = True

    @property
    def stateful(self):
        return self._stateful

    def build(self, input_shape):
        for part in (self.forward_layer, self.backward_layer):
            if not part.built:
                part._build_for_shapes(TensorShape(input_shape))
        self.built = True

    def call(self, sequences, initial_state=None, mask=None, training=None):
        forward_state = backward_state = None
        if initial_state is not None:
            states = list(initial_state)
            half = len(states) // 2
            forward_state, backward_state = states[:half], states[half:]
        y = self.forward_layer(sequences, initial_state=forward_state, mask=mask,
                               training=training)
        y_rev = self.backward_layer(sequences, initial_state=backward_state, mask=mask,
                                    training=training)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = manip_ops.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            output = array_ops.concat([y, y_rev], -1)
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            output = y * y_rev
        else:
            output = [y, y_rev]
        if not self.return_state:
            return output
        return (output if isinstance(output, list) else [output]) + states

    def reset_states(self, states=None):
        """Resets the states of both stateful layers (``states``: forward then backward)."""
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        states = list(states)
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    reset_state = reset_states

    def compute_output_shape(self, input_shape):
        shapes = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            shapes, states = shapes[0], list(shapes[1:])
        output = TensorShape(shapes)
        if self.merge_mode == "concat":
            output = TensorShape(output.as_list()[:-1] + [2 * output[-1]])
        outputs = [output, output] if self.merge_mode is None else [output]
        if not self.return_state:
            return outputs if self.merge_mode is None else output
        return outputs + states + states

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        masks = [output_mask, output_mask] if self.merge_mode is None else [output_mask]
        if self.return_state:
            masks += [None] * (len(self.forward_layer.state_sizes) * 2)
        return masks if len(masks) > 1 else masks[0]

    def get_config(self):
        config = super().get_config()
        config["merge_mode"] = self.merge_mode
        config["layer"] = nested_layers.serialize(self.forward_layer)
        config["backward_layer"] = nested_layers.serialize(self.backward_layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["layer"] = nested_layers.deserialize(config["layer"], custom_objects)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = nested_layers.deserialize(config["backward_layer"],
                                                                 custom_objects)
        return cls(**config)


class TimeDistributed(Layer):
    """Applies ``layer`` to every time step of inputs [batch, time, ...]: the time axis is
    folded into the batch for one call of ``layer`` (``tf.keras.layers.TimeDistributed``)."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"TimeDistributed: please initialize `TimeDistributed` layer with "
                             f"a `keras.layers.Layer` instance. Received: {layer!r}")
        super().__init__(**kwargs)
        self.layer = layer
        self.supports_masking = True

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        if shape.rank is None or shape.rank < 3:
            raise ValueError(f"TimeDistributed {self.name}: inputs must have at least 3 "
                             f"dimensions [batch, time, ...], got shape {shape}.")
        if not self.layer.built:
            self.layer._build_for_shapes(TensorShape([None] + shape.as_list()[2:]))
        self.built = True

    def call(self, inputs, training=None):
        shape = inputs.shape.as_list()
        batch, steps = shape[0], shape[1]
        if steps is None:
            raise ValueError(f"TimeDistributed {self.name}: the number of time steps must be "
                             f"known, got input shape {inputs.shape}.")
        flat = array_ops.reshape(inputs, [-1] + shape[2:])
        outputs = self.layer(flat, training=training)
        out_shape = outputs.shape.as_list()[1:]
        return array_ops.reshape(outputs, [-1 if batch is None else batch, steps] + out_shape)

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape)
        inner = TensorShape(self.layer.compute_output_shape(
            TensorShape([shape[0]] + shape.as_list()[2:])))
        return TensorShape([shape[0], shape[1]] + inner.as_list()[1:])

    def get_config(self):
        config = super().get_config()
        config["layer"] = nested_layers.serialize(self.layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["layer"] = nested_layers.deserialize(config["layer"], custom_objects)
        return cls(**config)
