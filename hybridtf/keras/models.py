"""``tf.keras.Model`` and ``tf.keras.Sequential``: layers grouped into a model.

Three ways to make a model, as in Keras:

* subclassing: ``class MyModel(keras.Model)`` with layers as attributes and a ``call``;
* ``keras.Sequential([...])`` / ``model.add(layer)``: a stack of layers, built as soon as the
  input shape is known (``input_shape=`` on the first layer, or ``keras.Input``), so that
  ``summary()`` works before the model has seen data;
* the functional API: ``keras.Model(inputs, outputs)`` over ``keras.Input`` tensors.

A model is a Layer: it has ``weights``, ``trainable_variables``, ``get_weights`` / ``set_weights``,
``count_params``, ``save_weights`` / ``load_weights``, and is called like a layer.  Its weights
are grouped by layer, in the order the layers were assigned (or added), then the model's own.
"""
from hybridtf.autograph import operators as autograph_operators
from hybridtf.eager import tape as tape_lib
from hybridtf.framework import deferred_restoration, dtypes, nest
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.graph import func_graph
from hybridtf.keras.layers.base_layer import Layer, _call_spec
from hybridtf.keras.layers.input_layer import InputLayer
from hybridtf.keras.layers.input_spec import assert_input_compatibility
from hybridtf.keras.layers.keras_tensor import KerasTensor
from hybridtf.keras.layers.layer_utils import as_shape_structure, dedup
from hybridtf.keras.training import Trainer

_MODEL_KWARGS = frozenset(("name", "trainable", "dtype", "dynamic", "autocast"))


class Model(Trainer, Layer):
    """A Layer with training: ``compile``, ``fit``, ``evaluate``, ``predict`` (from ``Trainer``),
    ``save``, and the conveniences ``layers``, ``get_layer``, ``summary``.

    ``Model(inputs, outputs, name=None)`` builds a functional model; ``Model(name=None)``
    (from a subclass's ``__init__``) a subclassed one, whose ``call`` you write.
    """

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        if len(args) > 2:
            raise TypeError(f"Model takes at most two positional arguments (inputs, outputs), "
                            f"got {len(args)}.")
        if args:
            inputs = args[0]
        if len(args) == 2:
            outputs = args[1]
        unknown = sorted(set(kwargs) - _MODEL_KWARGS)
        if unknown:
            raise TypeError(f"Model: keyword argument not understood: {unknown[0]!r}. Accepted: "
                            f"inputs, outputs, {sorted(_MODEL_KWARGS)}.")
        super().__init__(name=kwargs.get("name"), trainable=kwargs.get("trainable", True),
                         dtype=kwargs.get("dtype"), dynamic=kwargs.get("dynamic", False))
        self.__dict__["_is_graph_network"] = False
        self._init_training()
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both `inputs` and `outputs` "
                                 "(KerasTensors from keras.Input and layers called on them).")
            self._init_functional(inputs, outputs)

    # ---- layers ---------------------------------------------------------------------------------
    @property
    def layers(self):
        """The model's direct layers: in assignment order (subclassed), topological order
        with the InputLayers first (functional)."""
        if self._is_graph_network:
            return list(self._functional_layers)
        return [child for child in self._direct_children() if isinstance(child, Layer)]

    def get_layer(self, name=None, index=None):
        """The layer called ``name``, or at position ``index`` of ``layers``."""
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(layers)} layers.")
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: "
                             f"{[layer.name for layer in layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    # ---- weights: grouped by layer --------------------------------------------------------------
    def _assert_weights_created(self):
        # A model whose own build() creates weights has none to list until it is built.
        user_build = type(self).build
        if not self.built and not user_build.__module__.startswith("hybridtf.keras"):
            raise ValueError(f"Weights for model '{self.name}' have not yet been created. "
                             "Weights are created when the model is first called on inputs or "
                             "`build()` is called with an `input_shape`.")

    @property
    def trainable_weights(self):
        self._assert_weights_created()
        if not self._trainable:
            return []
        return dedup(self._children_attribute("trainable_variables") + self._trainable_weights)

    @property
    def non_trainable_weights(self):
        self._assert_weights_created()
        if self._trainable:
            weights = (self._children_attribute("non_trainable_variables")
                       + self._non_trainable_weights)
        else:
            weights = (self._children_attribute("trainable_variables") + self._trainable_weights
                       + self._children_attribute("non_trainable_variables")
                       + self._non_trainable_weights)
        return dedup(weights)

    @property
    def weights(self):
        """Each layer's weights in turn (trainable then non-trainable), then the model's own."""
        self._assert_weights_created()
        return dedup(self._children_attribute("variables") + self._trainable_weights
                     + self._non_trainable_weights)

    # ---- building and calling ------------------------------------------------------------------
    def _maybe_build(self, inputs):
        # A subclassed model without its own build creates its weights in its first call.
        if type(self).build is Model.build:
            self.__dict__["built"] = True
            if self._build_input_shape is None:
                self.__dict__["_build_input_shape"] = nest.map_structure(
                    lambda t: TensorShape(t.shape), inputs)
            return
        super()._maybe_build(inputs)

    def build(self, input_shape):
        """Creates the model's weights by calling it on symbolic inputs of ``input_shape``
        (a shape with the batch dimension, e.g. ``(None, 784)``, or a list of them)."""
        if self._is_graph_network:
            self.built = True
            return
        if input_shape is None:
            raise ValueError(f"Model {self.name}: you must provide an `input_shape` argument.")
        if type(self).call is Model.call:
            raise ValueError(f"Model {self.name} has no `call` to build from: subclass Model "
                             "and define call(), or use keras.Sequential / keras.Model(inputs, "
                             "outputs).")
        shapes = as_shape_structure(input_shape)
        graph = func_graph.FuncGraph(f"{self.name}_build")
        np_dtype = dtypes.as_dtype(self.dtype).as_numpy_dtype
        spec = _call_spec(type(self))
        kwargs = {"training": False} if spec.accepts_training else {}
        with tape_lib.stop_recording(), func_graph.building(graph), \
                autograph_operators.status(True):
            inputs = nest.map_structure(
                lambda s: graph.placeholder(s.dims, np_dtype, "input"), shapes)
            self._call_function()(inputs, **kwargs)
        self.__dict__["_build_input_shape"] = input_shape
        self.built = True

    def call(self, inputs, training=None, mask=None):
        """The model's forward pass: write it in a subclass (functional models replay their
        layer graph)."""
        if self._is_graph_network:
            return self._run_functional(inputs)
        raise NotImplementedError(
            f"Model {self.name} has no call(): if you intend to create a Model with the "
            "functional API, pass `inputs` and `outputs`; otherwise subclass Model and override "
            "call().")

    # ---- the functional API ---------------------------------------------------------------------
    def _init_functional(self, inputs, outputs):
        flat_inputs = nest.flatten(inputs)
        flat_outputs = nest.flatten(outputs)
        for t in flat_inputs:
            if not isinstance(t, KerasTensor) or not isinstance(t._keras_history[0], InputLayer):
                raise ValueError(f"Model {self.name}: inputs must be tensors returned by "
                                 f"keras.Input, got {t!r}.")
        for t in flat_outputs:
            if not isinstance(t, KerasTensor):
                raise ValueError(f"Model {self.name}: outputs must be KerasTensors (the results "
                                 f"of layers called on keras.Input tensors), got {t!r}.")
        input_ids = {id(t) for t in flat_inputs}
        ordered_nodes = []
        done = set()

        def visit(tensor, path):
            node = tensor._node
            if node is None:
                if id(tensor) not in input_ids:
                    raise ValueError(
                        f"Graph disconnected: cannot obtain value for tensor {tensor!r} at "
                        f"layer {path}: it comes from a keras.Input that is not among the "
                        "model's inputs.")
                return
            if id(node) in done:
                return
            for t in node.input_tensors:
                visit(t, node.layer.name)
            done.add(id(node))
            ordered_nodes.append(node)

        for t in flat_outputs:
            visit(t, "(output)")
        layers = [t._keras_history[0] for t in flat_inputs]
        for node in ordered_nodes:
            if not any(node.layer is layer for layer in layers):
                layers.append(node.layer)
        state = self.__dict__
        state["_is_graph_network"] = True
        state["_functional_nodes"] = ordered_nodes
        state["_nested_inputs"] = inputs
        state["_nested_outputs"] = outputs
        state["inputs"] = flat_inputs
        state["outputs"] = flat_outputs
        self._functional_layers = layers
        state["built"] = True
        in_shapes = [t.shape for t in flat_inputs]
        out_shapes = [t.shape for t in flat_outputs]
        self._record_shapes(in_shapes[0] if len(in_shapes) == 1 else in_shapes,
                            out_shapes[0] if len(out_shapes) == 1 else out_shapes)
        self.input_spec = None

    def _run_functional(self, inputs):
        flat = nest.flatten(inputs)
        if len(flat) != len(self.inputs):
            raise ValueError(f"Model {self.name} expects {len(self.inputs)} input(s), but it "
                             f"received {len(flat)} input tensors.")
        values = {}
        for tensor, value in zip(self.inputs, flat):
            if tensor.shape.rank is not None and value.shape.rank != tensor.shape.rank:
                raise ValueError(f'Input of model "{self.name}" is incompatible: expected shape '
                                 f"{tuple(tensor.shape.as_list())}, found shape "
                                 f"{tuple(value.shape.as_list())}.")
            values[id(tensor)] = value

        def resolve(item):
            return values[id(item)] if isinstance(item, KerasTensor) else item

        for node in self._functional_nodes:
            node_inputs = nest.map_structure(resolve, node.inputs)
            args = [nest.map_structure(resolve, a) for a in node.args]
            kwargs = {k: nest.map_structure(resolve, v) for k, v in node.kwargs.items()}
            result = node.layer(node_inputs, *args, **kwargs)
            for tensor, value in zip(node.outputs, nest.flatten(result)):
                values[id(tensor)] = value
        return nest.pack_sequence_as(self._nested_outputs,
                                     [values[id(t)] for t in self.outputs])

    def compute_output_shape(self, input_shape):
        if self._is_graph_network and self.outputs:
            shapes = [t.shape for t in self.outputs]
            return shapes[0] if len(shapes) == 1 else shapes
        return super().compute_output_shape(input_shape)

    # ---- summary and config ---------------------------------------------------------------------
    def save(self, filepath, overwrite=True, save_format=None, **kwargs):
        """Saves the architecture (``get_config``), weights and compile settings to one
        ``.keras`` file; ``keras.models.load_model`` reads it back."""
        from hybridtf.keras import model_saving
        model_saving.save_model(self, filepath, overwrite=overwrite)

    def summary(self, line_length=None, positions=None, print_fn=None, show_trainable=False):
        """Prints the model's layers, output shapes and parameter counts (Keras's table)."""
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                      show_trainable=show_trainable)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable}


class Sequential(Model):
    """A linear stack of layers: ``Sequential([Dense(4, input_shape=(10,)), Dense(1)])``.

    Once the input shape is known (``input_shape=`` on the first layer, a ``keras.Input``, or
    the first call), every layer is built and its output shape recorded.
    """

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._self_tracked_layers = []   # the InputLayer first, when there is one
        self.__dict__["_sequential_input_shape"] = None
        if layers is not None:
            if not isinstance(layers, (list, tuple)):
                layers = [layers]
            for layer in layers:
                self.add(layer)

    @property
    def layers(self):
        """The layers added, without the InputLayer."""
        return [layer for layer in self._self_tracked_layers if not isinstance(layer, InputLayer)]

    def add(self, layer):
        """Adds a layer on top of the stack (a ``keras.Input`` tensor sets the input shape)."""
        if isinstance(layer, KerasTensor):
            origin = layer._keras_history[0]
            if not isinstance(origin, InputLayer):
                raise TypeError(f"Sequential.add: a tensor can only be added when it comes from "
                                f"keras.Input; this one was made by layer {origin.name!r}.")
            layer = origin
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Received: "
                            f"layer={layer!r} of type {type(layer)}.")
        for existing in self._self_tracked_layers:
            if existing.name == layer.name:
                raise ValueError(f"All layers added to a Sequential model should have unique "
                                 f'names. Name "{layer.name}" is already the name of a layer in '
                                 "this model. Update the `name` argument to pass a unique name.")
        if isinstance(layer, InputLayer):
            if self._self_tracked_layers:
                raise ValueError(f"Sequential {self.name}: an InputLayer (or keras.Input) can "
                                 "only be the first layer of the model.")
            self._self_tracked_layers.append(layer)
            self.__dict__["_sequential_input_shape"] = layer._batch_input_shape
            return
        if not self._self_tracked_layers and layer._batch_input_shape is not None:
            self._self_tracked_layers.append(InputLayer(
                batch_input_shape=layer._batch_input_shape, dtype=layer.dtype,
                name=layer.name + "_input"))
            self.__dict__["_sequential_input_shape"] = layer._batch_input_shape
        self._self_tracked_layers.append(layer)
        deferred_restoration.dependencies_added(self)    # checkpoint values waiting for it
        if self._sequential_input_shape is not None:
            previous = self.layers[:-1]
            shape = (previous[-1]._keras_output_shape if previous
                     else TensorShape(self._sequential_input_shape))
            self._record_shapes(TensorShape(self._sequential_input_shape),
                                self._place(layer, shape))
            self.built = True
        else:
            self.built = False

    def pop(self):
        """Removes and returns the last layer."""
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        layer = self._self_tracked_layers.pop()
        if not self.layers:
            self.built = False
            self._record_shapes(None, None)
        elif self.built:
            self._record_shapes(self._keras_input_shape, self.layers[-1]._keras_output_shape)
        return layer

    @staticmethod
    def _place(layer, input_shape):
        """Builds ``layer`` for ``input_shape`` and records its input and output shapes."""
        assert_input_compatibility(layer.input_spec, KerasTensor(input_shape, layer.dtype),
                                   layer.name)
        if not layer.built:
            layer._build_for_shapes(input_shape)
        output_shape = layer.compute_output_shape(input_shape)
        layer._record_shapes(input_shape, output_shape)
        return output_shape

    def build(self, input_shape=None):
        """Builds every layer for inputs of ``input_shape`` (with the batch dimension)."""
        if input_shape is None:
            input_shape = self._sequential_input_shape
        if input_shape is None:
            raise ValueError(f"Sequential {self.name}: you must provide an `input_shape` "
                             "argument (with the batch dimension, e.g. (None, 784)).")
        shape = TensorShape(input_shape)
        for layer in self.layers:
            shape = self._place(layer, shape)
        self.__dict__["_build_input_shape"] = input_shape
        self._record_shapes(TensorShape(input_shape), shape)
        self.built = True

    def _maybe_build(self, inputs):
        # Built from the first input's shape, outside the model's name scope (Keras names
        # these weights dense/kernel:0, not sequential/dense/kernel:0).
        self.build(TensorShape(inputs.shape) if hasattr(inputs, "shape") else None)

    def call(self, inputs, training=None, mask=None):
        outputs = inputs
        for layer in self.layers:
            outputs = layer(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        shape = input_shape
        for layer in self.layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def get_config(self):
        from hybridtf.keras import layers as layers_module
        return {"name": self.name,
                "layers": [layers_module.serialize(layer) for layer in self._self_tracked_layers]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from hybridtf.keras import layers as layers_module
        model = cls(name=config.get("name"))
        for layer_config in config["layers"]:
            model.add(layers_module.deserialize(layer_config, custom_objects=custom_objects))
        return model


# ---- summary -----------------------------------------------------------------------------------
def _is_sequential_like(model):
    """True unless the model is a functional graph with branches, merges or shared layers."""
    if not model._is_graph_network:
        return True
    seen_layers = set()
    for node in model._functional_nodes:
        if len(node.input_tensors) > 1 or id(node.layer) in seen_layers:
            return False
        seen_layers.add(id(node.layer))
    return len(model.inputs) == 1 and len(model.outputs) == 1


def _connections(model, layer):
    found = []
    for node in model._functional_nodes:
        if node.layer is not layer:
            continue
        for tensor in node.input_tensors:
            producer, producer_node, index = tensor._keras_history
            node_index = 0
            if producer_node is not None:
                node_index = next(i for i, n in enumerate(producer._inbound_nodes)
                                  if n is producer_node)
            found.append(f"{producer.name}[{node_index}][{index}]")
    return found


def _output_shape_text(layer):
    try:
        shape = layer.output_shape
    except AttributeError:
        return "multiple"
    if isinstance(layer, InputLayer):
        return str([shape])
    return str(shape)


def print_summary(model, line_length=None, positions=None, print_fn=None, show_trainable=False):
    """Prints Keras's summary table of ``model`` (one row per layer) with ``print_fn``."""
    print_fn = print_fn or print
    sequential_like = _is_sequential_like(model)
    if sequential_like:
        line_length = line_length or 65
        positions = list(positions or [.45, .85, 1.])
        headers = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = list(positions or [.33, .55, .67, 1.])
        headers = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    if show_trainable:
        line_length += 11
        positions.append(line_length)
        headers.append("Trainable")

    def print_row(fields):
        line = ""
        for i, field in enumerate(fields):
            if i > 0:
                line = line[:-1] + " "
            line += str(field)
            line = line[:positions[i]]
            line += " " * (positions[i] - len(line))
        print_fn(line)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_row(headers)
    print_fn("=" * line_length)
    layers = model.layers
    for i, layer in enumerate(layers):
        fields = [f"{layer.name} ({type(layer).__name__})", _output_shape_text(layer),
                  layer.count_params() if layer.built else 0]
        connections = [] if sequential_like else _connections(model, layer)
        if not sequential_like:
            fields.append(connections[0] if connections else "")
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        print_row(fields)
        for extra in connections[1:]:
            print_row(["", "", "", extra] + ([""] if show_trainable else []))
        print_fn("=" * line_length if i == len(layers) - 1 else "_" * line_length)
    trainable = sum(_weight_size(v) for v in model.trainable_weights)
    non_trainable = sum(_weight_size(v) for v in model.non_trainable_weights)
    print_fn(f"Total params: {trainable + non_trainable:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {non_trainable:,}")
    print_fn("_" * line_length)


def _weight_size(variable):
    """The number of scalars in a weight."""
    count = 1
    for d in variable.shape.as_list():
        count *= d
    return count


def save_model(model, filepath, overwrite=True, **kwargs):
    """``keras.models.save_model``: the same as ``model.save(filepath)``."""
    model.save(filepath, overwrite=overwrite)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """The model saved with ``model.save(filepath)`` (see ``keras.model_saving``).

    ``safe_mode=True`` (the default) refuses a ``Lambda`` layer's Python bytecode and
    classes or functions that are not Keras's, registered, or in ``custom_objects``; pass
    ``safe_mode=False`` only for files you trust."""
    from hybridtf.keras import model_saving
    return model_saving.load_model(filepath, custom_objects=custom_objects, compile=compile,
                                   safe_mode=safe_mode)
