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
from hybridtf.keras import functional, object_registration
from hybridtf.keras import layers as layers_module
from hybridtf.keras import export as model_export
from hybridtf.keras.layers.base_layer import Layer, _call_spec
from hybridtf.keras.layers.input_layer import InputLayer
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
        ordered_nodes, layers = functional.connect(self, inputs, outputs)
        state = self.__dict__
        state["_is_graph_network"] = True
        state["_functional_nodes"] = ordered_nodes
        state["_nested_inputs"] = inputs
        state["_nested_outputs"] = outputs
        state["inputs"] = nest.flatten(inputs)
        state["outputs"] = nest.flatten(outputs)
        self._functional_layers = layers
        state["built"] = True
        self.input_spec = None

    def _run_functional(self, inputs):
        return functional.run(self, inputs)

    # ---- the functional graph's tensors and names -----------------------------------------------
    @property
    def input(self):
        """The model's symbolic input(s), in the structure given to ``Model(inputs, ...)``
        (a Sequential model's input tensor once its input shape is known)."""
        if self.__dict__.get("_nested_inputs") is not None:
            return self._nested_inputs
        return super().input

    @property
    def output(self):
        """The model's symbolic output(s), in the structure given to ``Model(..., outputs)``."""
        if self.__dict__.get("_nested_outputs") is not None:
            return self._nested_outputs
        return super().output

    @property
    def input_names(self):
        """The names of the model's inputs (its ``keras.Input`` names), in ``inputs`` order:
        the keys a dict of input data is matched by."""
        if self.__dict__.get("inputs") is None:
            raise AttributeError(f"Model {self.name} has no symbolic inputs (it is subclassed "
                                 "or not built), so no input names.")
        return functional.input_names(self)

    @property
    def output_names(self):
        """The names of the layers that make the model's outputs, in ``outputs`` order."""
        if self.__dict__.get("outputs") is None:
            raise AttributeError(f"Model {self.name} has no symbolic outputs (it is subclassed "
                                 "or not built), so no output names.")
        return [t._keras_history[0].name for t in self.outputs]

    @property
    def input_shape(self):
        """The shape of the model's input (a list of shapes for several inputs)."""
        if self.__dict__.get("inputs") is not None:
            return _shapes_for_display(self.inputs)
        return super().input_shape

    @property
    def output_shape(self):
        """The shape of the model's output (a list of shapes for several outputs)."""
        if self.__dict__.get("outputs") is not None:
            return _shapes_for_display(self.outputs)
        return super().output_shape

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

    def export(self, filepath, format="tf_saved_model", verbose=True,  # noqa: A002
               input_signature=None, **kwargs):
        """Writes an inference SavedModel to the directory ``filepath`` (Keras 3's export):
        ``tf.saved_model.load(filepath).serve(x)`` gives the model's predictions, and the
        ``serving_default`` signature takes the inputs by their ``keras.Input`` names.
        ``input_signature``: a list of TensorSpecs when the model's input shape is not
        known."""
        model_export.export_model(self, filepath, format=format, verbose=verbose,
                                  input_signature=input_signature, **kwargs)

    def _default_save_signature(self):
        """The ``serving_default`` function of ``tf.saved_model.save(model, path)``."""
        return model_export.default_save_signature(self)

    def summary(self, line_length=None, positions=None, print_fn=None, show_trainable=False):
        """Prints the model's layers, output shapes and parameter counts (Keras's table)."""
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                      show_trainable=show_trainable)

    def get_config(self):
        """A functional model's layer graph in Keras 3's layout (``layers`` with their
        ``inbound_nodes``, ``input_layers``, ``output_layers``); a subclassed model's name."""
        if self._is_graph_network:
            return functional.get_config(self)
        return {"name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The model ``config`` describes, with new weights: a functional model's graph is
        rebuilt (custom layer classes through ``custom_objects`` or
        ``keras.saving.register_keras_serializable``) as an instance of ``cls`` when ``cls``
        takes ``inputs`` and ``outputs``; other configs are passed to ``cls(**config)``."""
        if functional.is_config(config) and functional.accepts_inputs_and_outputs(cls):
            with object_registration.CustomObjectScope(custom_objects):
                return functional.from_config(cls, config, custom_objects)
        try:
            return cls(**config)
        except TypeError as err:
            raise TypeError(f"Unable to revive model {cls.__name__} from config {config} "
                            f"({err}). Make get_config() return the arguments __init__ takes, "
                            "or define the classmethod from_config(cls, config).") from None


def _shapes_for_display(tensors):
    shapes = [tuple(t.shape.as_list()) if t.shape.rank is not None else None for t in tensors]
    return shapes[0] if len(shapes) == 1 else shapes


class Sequential(Model):
    """A linear stack of layers: ``Sequential([Dense(4, input_shape=(10,)), Dense(1)])``.

    Once the input shape is known (``input_shape=`` on the first layer, a ``keras.Input``, or
    the first call), every layer is built and called on the symbolic output of the one
    before: the model has ``inputs`` / ``outputs`` and each layer its ``input`` / ``output``
    (so that ``keras.Model(model.inputs, [layer.output for layer in model.layers])``
    extracts features).
    """

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._self_tracked_layers = []   # the InputLayer first, when there is one
        self.__dict__["_sequential_input_shape"] = None
        self.__dict__["_symbolic_chain"] = []   # the input tensor, then each layer's output
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
            if not self._symbolic_chain:
                self._start_chain(self._sequential_input_shape)
            self._connect(layer)
            self.built = True
        else:
            self.built = False

    def pop(self):
        """Removes and returns the last layer."""
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        layer = self._self_tracked_layers.pop()
        chain = self._symbolic_chain
        if not self.layers:
            self.built = False
            del chain[:]
        elif len(chain) > 1:
            chain.pop()
        self._set_graph_ends()
        return layer

    def _start_chain(self, input_shape):
        """Starts the model's symbolic graph at an input of ``input_shape``: the output of its
        InputLayer when it has one for that shape, else of a new (untracked) InputLayer."""
        shape = tuple(TensorShape(input_shape).as_list())
        first = self._self_tracked_layers[0] if self._self_tracked_layers else None
        if isinstance(first, InputLayer) and first._batch_input_shape == shape:
            tensor = first.output
        else:
            dtype = first.dtype if first is not None else self.dtype
            tensor = InputLayer(batch_input_shape=shape, dtype=dtype).output
        self.__dict__["_symbolic_chain"] = [tensor]
        self._set_graph_ends()

    def _connect(self, layer):
        """Calls ``layer`` on the symbolic output so far (building it): its output is the
        model's output now."""
        output = layer(self._symbolic_chain[-1])
        if not isinstance(output, KerasTensor):
            raise ValueError(f"All layers in a Sequential model should have a single output "
                             f"tensor; layer {layer.name!r} returned {len(nest.flatten(output))}."
                             " For multi-output layers, use the functional API.")
        self._symbolic_chain.append(output)
        self._set_graph_ends()

    def _set_graph_ends(self):
        chain = self._symbolic_chain
        state = self.__dict__
        state["_nested_inputs"] = chain[0] if chain else None
        state["_nested_outputs"] = chain[-1] if chain else None
        state["inputs"] = [chain[0]] if chain else None
        state["outputs"] = [chain[-1]] if chain else None

    def build(self, input_shape=None):
        """Builds every layer for inputs of ``input_shape`` (with the batch dimension)."""
        if input_shape is None:
            input_shape = self._sequential_input_shape
        if input_shape is None:
            raise ValueError(f"Sequential {self.name}: you must provide an `input_shape` "
                             "argument (with the batch dimension, e.g. (None, 784)).")
        self._start_chain(input_shape)
        for layer in self.layers:
            self._connect(layer)
        self.__dict__["_build_input_shape"] = input_shape
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
        return {"name": self.name,
                "layers": [layers_module.serialize(layer) for layer in self._self_tracked_layers]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
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
