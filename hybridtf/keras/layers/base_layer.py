"""``tf.keras.layers.Layer``: a ``tf.Module`` that builds its weights on first call.

What a layer does when called (``layer(inputs, training=...)``):

1. converts NumPy and Python inputs to tensors and casts float inputs to the layer's dtype;
2. resolves ``training``: the value passed, else the one of the enclosing layer call, else the
   default of ``call``'s signature -- and passes it on only if ``call`` accepts it;
3. checks the inputs against ``input_spec`` (rank, feature sizes), naming the layer;
4. on the first call, runs ``build(input_shape)`` inside the layer's name scope, so weights
   get TF's names (``dense/kernel:0``; ``my_model/dense/kernel:0`` when built inside a model);
5. runs ``call`` inside the layer's name scope.

Weights: a layer's own weights in creation order, then those of the layers (and modules) held
in its attributes, in the order the attributes were first assigned -- the order Keras uses.
Setting ``trainable = False`` freezes the layer and every layer inside it: their weights move
to ``non_trainable_weights``.

Inside a traced ``tf.function`` weights are created on the first trace with concrete initial
values (computed outside the graph), and ``call`` is converted by AutoGraph.
"""
import inspect
import threading

import numpy as np

from hybridtf.api import math_ops
from hybridtf.autograph import operators as autograph_operators
from hybridtf.eager import tape as tape_lib
from hybridtf.framework import deferred_restoration, dtypes, nest
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.name_scope import name_scope as _name_scope
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.framework.variables import (FreshArray, Variable, VariableAggregation,
                                          VariableSynchronization)
from hybridtf.graph import func_graph
from hybridtf.keras import backend, initializers
from hybridtf.keras import metrics as metrics_lib
from hybridtf.keras.layers import keras_masks, keras_tensor
from hybridtf.keras.layers.input_spec import assert_input_compatibility
from hybridtf.keras.layers.layer_utils import (
    as_shape_structure, dedup, dtype_name, get_constraint, get_regularizer, leaves,
    shape_for_display, to_snake_case)
from hybridtf.module import Module

_ALLOWED_KWARGS = frozenset(("input_dim", "input_shape", "batch_input_shape", "batch_size",
                             "weights", "activity_regularizer", "autocast", "implementation"))

# Attributes that hold the layer's own bookkeeping, or objects that are not part of the model
# (an optimizer, compiled losses and metrics): never searched for sublayers or weights.
_NOT_TRACKED = frozenset((
    "_trainable_weights", "_non_trainable_weights", "_call_losses", "_regularizer_losses",
    "_input_spec", "_batch_input_shape", "_build_input_shape", "_initial_weights",
    "_keras_output_shape", "_keras_input_shape", "_inbound_nodes", "_outbound_nodes",
    "_call_name_scope", "_module_name_scope", "_layer_name_scope", "_functional_nodes",
    "_nested_inputs", "_nested_outputs", "inputs", "outputs", "output",
    "optimizer", "compiled_loss", "compiled_metrics", "loss", "history", "_loss_tracker",
    "_metric_specs", "_loss_spec", "train_function", "test_function", "predict_function",
))


def _is_trackable(value):
    return isinstance(value, (Module, list, tuple, dict)) or getattr(value, "_is_variable", False)


def _drawn(value, weight, layer):
    """A weight's first value from an initializer that made a new array: the variable takes the
    array as its own instead of copying it and keeping the draw as ``initial_value`` (twice the
    weights' memory, and a copy of each in the first step).  As for TensorFlow's eager variables
    and Keras 3's weights, the initial value is then not kept."""
    array = value._value if type(value) is Tensor else None
    if type(array) is not np.ndarray or not (array.flags.c_contiguous and array.flags.writeable):
        return value

    def not_kept():
        raise RuntimeError(f"initial_value: weight {weight!r} of layer {layer} does not keep its "
                           "initial value (nor do TensorFlow's eager variables); read the "
                           "weight (weight.numpy()) before it changes to keep a copy.")
    return FreshArray(array, not_kept)


# ---- call context: the `training` value of the enclosing layer calls ----------------------------
class _CallContext(threading.local):
    def __init__(self):
        self.training = []   # one entry per active layer call, innermost last
        self.losses_added = False  # whether any call added a loss tensor (to be cleared)


_CALL_CONTEXT = _CallContext()


class _CallSpec:
    """What ``call``'s signature accepts, worked out once per class."""

    __slots__ = ("accepts_training", "training_index", "training_default", "accepts_mask",
                 "mask_index", "function")

    def __init__(self, layer_class):
        call = layer_class.call
        function = getattr(call, "python_function", call)  # a tf.function-decorated call
        params = list(inspect.signature(function).parameters.values())[1:]  # without self
        names = [p.name for p in params]
        self.accepts_training = "training" in names or any(
            p.kind is p.VAR_KEYWORD for p in params)
        self.training_index = None
        self.training_default = None
        if "training" in names:
            param = params[names.index("training")]
            if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                self.training_index = names.index("training") - 1  # after `inputs`
            if param.default is not param.empty:
                self.training_default = param.default
        self.accepts_mask = "mask" in names
        self.mask_index = None   # its position after `inputs`, when it can be positional
        if self.accepts_mask:
            param = params[names.index("mask")]
            if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                self.mask_index = names.index("mask") - 1
        self.function = call


_CALL_SPECS = {}


def _call_spec(layer_class):
    spec = _CALL_SPECS.get(layer_class)
    if spec is None or spec.function is not layer_class.call:
        spec = _CALL_SPECS[layer_class] = _CallSpec(layer_class)
    return spec


class _LayerNameScope(_name_scope):
    """The layer's name scope: ``with layer.name_scope:`` enters it, and calling it
    (``layer.name_scope()``) returns the layer's name, as Keras's method did."""

    def __init__(self, scope, layer_name):
        super().__init__(scope)
        self._layer_name = layer_name

    def __call__(self):
        return self._layer_name

    def __repr__(self):
        return repr(self._layer_name)


class Layer(Module):
    """The base class of Keras layers (``tf.keras.layers.Layer``).

    Subclasses create weights in ``build(input_shape)`` with ``add_weight`` and compute in
    ``call(inputs, training=None)``.  Arguments: ``trainable``, ``name`` (default: the class
    name in snake case, made unique: ``dense``, ``dense_1``, ...), ``dtype`` (default
    ``"float32"``), and ``input_shape`` / ``input_dim`` / ``batch_input_shape`` /
    ``batch_size`` for the first layer of a Sequential model.
    """

    _autocast_default = True

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
        unknown = sorted(set(kwargs) - _ALLOWED_KWARGS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: keyword argument not understood: "
                            f"{unknown[0]!r}. Layers accept trainable, name, dtype, dynamic and "
                            f"{sorted(_ALLOWED_KWARGS)}.")
        if name is None:
            name = backend.unique_object_name(to_snake_case(type(self).__name__))
        elif not isinstance(name, str) or not name:
            raise TypeError(f"{type(self).__name__}: name must be a non-empty string, got "
                            f"{name!r}.")
        state = self.__dict__
        state["_name"] = name
        with _name_scope(name) as scope:
            state["_scope_name"] = scope
        state["_layer_name_scope"] = _LayerNameScope(scope, name)
        state["_module_name_scope"] = state["_layer_name_scope"]
        state["_call_name_scope"] = _name_scope(name)
        state["_trainable"] = bool(trainable)
        state["_dtype"] = dtype_name(dtype)
        state["_dtype_object"] = dtypes.as_dtype(state["_dtype"])
        state["_dynamic"] = bool(dynamic)
        state["_autocast"] = kwargs.get("autocast", self._autocast_default)
        state["built"] = False
        state["supports_masking"] = state.get("supports_masking", False)
        state["_input_spec"] = None
        state["_build_input_shape"] = None
        state["_keras_output_shape"] = None
        state["_keras_input_shape"] = None
        state["_inbound_nodes"] = []
        state.setdefault("_trainable_weights", [])
        state.setdefault("_non_trainable_weights", [])
        state["_call_losses"] = []
        state["_regularizer_losses"] = []
        state["_activity_regularizer"] = get_regularizer(kwargs.get("activity_regularizer"),
                                                         type(self).__name__)
        state["_initial_weights"] = kwargs.get("weights")
        batch_input_shape = None
        if "input_shape" in kwargs or "input_dim" in kwargs:
            input_shape = kwargs.get("input_shape")
            if input_shape is None:
                input_shape = (kwargs["input_dim"],)
            elif isinstance(input_shape, int):
                input_shape = (input_shape,)
            batch_input_shape = (kwargs.get("batch_size"),) + tuple(input_shape)
        elif kwargs.get("batch_input_shape") is not None:
            batch_input_shape = tuple(kwargs["batch_input_shape"])
        state["_batch_input_shape"] = batch_input_shape
        state["_keras_initialized"] = True

    # ---- attribute tracking ------------------------------------------------------------------
    def __setattr__(self, name, value):
        if name not in _NOT_TRACKED and _is_trackable(value):
            state = self.__dict__
            if name in state:
                # A reassigned attribute moves to the end of the tracking order, as in Keras.
                del state[name]
            for leaf in leaves(value):
                if getattr(leaf, "_is_variable", False):
                    self._track_variable(leaf)
        object.__setattr__(self, name, value)
        deferred_restoration.dependencies_added(self)    # checkpoint values waiting for it

    def __delattr__(self, name):
        value = self.__dict__.get(name)
        object.__delattr__(self, name)
        if getattr(value, "_is_variable", False):
            for weights in (self._trainable_weights, self._non_trainable_weights):
                for i, v in enumerate(weights):
                    if v is value:
                        del weights[i]
                        break

    def _track_variable(self, variable):
        state = self.__dict__
        trainable = state.setdefault("_trainable_weights", [])
        non_trainable = state.setdefault("_non_trainable_weights", [])
        if any(v is variable for v in trainable) or any(v is variable for v in non_trainable):
            return
        (trainable if variable.trainable else non_trainable).append(variable)

    def _attribute_modules(self):
        """The tf.Modules held in attributes (directly or in lists, tuples and dicts), in the
        order the attributes were assigned, each once."""
        out = []
        seen = {id(self)}
        for key, value in self.__dict__.items():
            if key in _NOT_TRACKED or not isinstance(value, (Module, list, tuple, dict)):
                continue
            for leaf in leaves(value):
                if isinstance(leaf, Module) and id(leaf) not in seen:
                    seen.add(id(leaf))
                    out.append(leaf)
        return out

    def _direct_children(self):
        """The layers and other tf.Modules held in attributes, in the order the attributes
        were assigned -- without metrics: their state is not part of the weights."""
        return [m for m in self._attribute_modules() if not isinstance(m, metrics_lib.Metric)]

    @property
    def metrics(self):
        """The ``Metric`` objects held in this layer's attributes (created in ``__init__``,
        say), then those of the layers inside it."""
        found = [m for m in self._attribute_modules() if isinstance(m, metrics_lib.Metric)]
        for layer in self._flatten_layers(include_self=False):
            found.extend(m for m in layer._attribute_modules()
                         if isinstance(m, metrics_lib.Metric))
        return dedup(found)

    @property
    def metrics_variables(self):
        """The state variables of ``metrics``."""
        return dedup([v for metric in self.metrics for v in metric.variables])

    def _flatten_modules(self, include_self=True, recursive=True):
        """This layer (optionally) and the modules inside it, depth first, each once."""
        seen = set()
        stack = [self] if include_self else list(reversed(self._direct_children()))
        while stack:
            module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield module
            if recursive and isinstance(module, Layer):
                stack.extend(reversed(module._direct_children()))
            elif recursive:
                stack.extend(reversed(module.submodules))

    def _flatten_layers(self, include_self=True, recursive=True):
        for module in self._flatten_modules(include_self, recursive):
            if isinstance(module, Layer):
                yield module

    @property
    def submodules(self):
        """The layers and modules inside this layer, depth first (``tf.Module.submodules``)."""
        return tuple(self._flatten_modules(include_self=False))

    # ---- properties ---------------------------------------------------------------------------
    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """The layer's name scope (``with layer.name_scope:``); ``layer.name_scope()`` returns
        the layer's name."""
        return self._layer_name_scope

    @property
    def dtype(self):
        """The dtype of the layer's weights, as a string (``"float32"``)."""
        return self._dtype

    @property
    def compute_dtype(self):
        return self._dtype

    @property
    def variable_dtype(self):
        return self._dtype

    @property
    def dynamic(self):
        return self._dynamic

    @property
    def stateful(self):
        return False

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        # Freezing (or unfreezing) a layer does the same to every layer inside it.
        for layer in self._flatten_layers():
            layer.__dict__["_trainable"] = bool(value)

    @property
    def input_spec(self):
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value):
        self.__dict__["_input_spec"] = value

    @property
    def activity_regularizer(self):
        return self._activity_regularizer

    @activity_regularizer.setter
    def activity_regularizer(self, value):
        self.__dict__["_activity_regularizer"] = get_regularizer(value, self.name)

    # ---- weights ------------------------------------------------------------------------------
    def _children_attribute(self, attribute):
        out = []
        for child in self._direct_children():
            out.extend(getattr(child, attribute))
        return out

    @property
    def trainable_weights(self):
        """The weights a GradientTape-based update should change: empty when frozen."""
        if not self._trainable:
            return []
        return dedup(self._trainable_weights + self._children_attribute("trainable_variables"))

    @property
    def non_trainable_weights(self):
        """Weights that training does not change (all of them when the layer is frozen)."""
        if self._trainable:
            weights = self._non_trainable_weights + self._children_attribute(
                "non_trainable_variables")
        else:
            weights = (self._trainable_weights + self._non_trainable_weights
                       + self._children_attribute("variables"))
        return dedup(weights)

    @property
    def weights(self):
        """All weights: trainable ones first, then non-trainable ones."""
        return self.trainable_weights + self.non_trainable_weights

    @property
    def variables(self):
        return self.weights

    @property
    def trainable_variables(self):
        return self.trainable_weights

    @property
    def non_trainable_variables(self):
        return self.non_trainable_weights

    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, use_resource=None,
                   synchronization=VariableSynchronization.AUTO,
                   aggregation=VariableAggregation.NONE, **kwargs):
        """Creates a weight variable of this layer, named in the current name scope
        (``dense/kernel:0`` when created in ``build``).

        ``initializer``: a name ("glorot_uniform"), an Initializer or a callable
        ``f(shape, dtype)``; floating weights default to glorot_uniform, integer and bool ones
        to zeros.  ``regularizer``: a regularizer (object, name or callable) whose penalty of
        the weight is added to ``layer.losses``.  ``constraint``: a constraint (object, name or
        callable) the optimizer applies to the weight after each update.
        """
        for key in kwargs:
            if key not in ("getter", "collections", "experimental_autocast", "caching_device",
                           "partitioner", "layout"):
                raise TypeError(f"add_weight: unknown keyword argument {key!r} (layer "
                                f"{self.name}).")
        shape = () if shape is None else tuple(TensorShape(shape).as_list())
        if any(d is None for d in shape):
            raise ValueError(f"add_weight: the shape of weight {name!r} of layer {self.name} "
                             f"must be fully defined, got {shape}.")
        dtype = dtypes.as_dtype(dtype or self._dtype)
        if synchronization == VariableSynchronization.ON_READ:
            if trainable:
                raise ValueError(f"add_weight: weight {name!r} of layer {self.name}: "
                                 "synchronization=ON_READ requires trainable=False.")
            trainable = False
        elif trainable is None:
            trainable = True
        if initializer is None:
            if dtype.is_floating:
                initializer = initializers.GlorotUniform()
            elif dtype.is_integer or dtype.is_unsigned or dtype.is_bool:
                initializer = initializers.Zeros()
            else:
                raise ValueError(f"add_weight: an initializer for weight {name!r} of dtype "
                                 f"{dtype.name} is required for layer {self.name}.")
        else:
            initializer = initializers.get(initializer)
        with backend.init_scope():
            value = initializer(shape, dtype=dtype)
            value = convert_to_tensor(value, dtype=dtype) if not isinstance(value, Tensor) \
                else value
        if tuple(value.shape.as_list()) != shape:
            raise ValueError(f"add_weight: the initializer of weight {name!r} of layer "
                             f"{self.name} returned shape {tuple(value.shape.as_list())}, "
                             f"expected {shape}.")
        if value.dtype != dtype:
            value = math_ops.cast(value, dtype)
        if initializers.returns_new_arrays(initializer):
            value = _drawn(value, name, self.name)
        variable = Variable(value, trainable=trainable, name=name, dtype=dtype,
                            constraint=get_constraint(constraint, self.name),
                            synchronization=synchronization, aggregation=aggregation)
        self._track_variable(variable)
        deferred_restoration.dependencies_added(self)
        regularizer = get_regularizer(regularizer, self.name)
        if regularizer is not None:
            self._regularizer_losses.append(lambda: regularizer(variable))
        return variable

    def get_weights(self):
        """The values of ``weights``, as a list of NumPy arrays (copies)."""
        return [np.array(v.numpy()) for v in self.weights]

    def set_weights(self, weights):
        """Assigns a list of NumPy arrays to ``weights`` (same number, same shapes)."""
        params = self.weights
        weights = list(weights)
        if len(params) != len(weights):
            raise ValueError(
                f'You called `set_weights(weights)` on layer "{self.name}" with a weight list of '
                f"length {len(weights)}, but the layer was expecting {len(params)} weights. "
                f"Weights expected: {[v.name for v in params]}.")
        arrays = []
        for param, value in zip(params, weights):
            array = np.asarray(value)
            expected = tuple(param.shape.as_list())
            if array.shape != expected:
                raise ValueError(f"Layer {self.name} weight shape {expected} is not compatible "
                                 f"with provided weight shape {array.shape} (weight "
                                 f"{param.name}).")
            arrays.append(array.astype(param.dtype.as_numpy_dtype, copy=False))
        for param, array in zip(params, arrays):
            param.assign(array)

    def count_params(self):
        """The number of scalars in the layer's weights; the layer must be built."""
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the "
                             f"layer isn't built. You can build it manually via: "
                             f"`{self.name}.build(batch_input_shape)`.")
        return int(sum(int(np.prod(v.shape.as_list(), dtype=np.int64)) for v in self.weights))

    # ---- losses -------------------------------------------------------------------------------
    @property
    def losses(self):
        """Losses added by ``add_loss`` during the last call, and the weight regularization
        losses, of this layer and the layers inside it."""
        collected = []
        for layer in self._flatten_layers():
            collected.extend(layer._call_losses)
            for make_loss in layer._regularizer_losses:
                loss = make_loss()
                if loss is not None:
                    collected.append(loss)
        return collected

    def add_loss(self, losses, **kwargs):
        """Adds loss tensors (kept until the next outermost call) or zero-argument callables
        (evaluated each time ``losses`` is read)."""
        for loss in nest.flatten(losses):
            if loss is None:
                continue
            if callable(loss):
                self._regularizer_losses.append(loss)
            else:
                _CALL_CONTEXT.losses_added = True
                self._call_losses.append(loss if isinstance(loss, Tensor)
                                         else convert_to_tensor(loss, dtype_hint=self._dtype))

    def _clear_call_losses(self):
        for layer in self._flatten_layers():
            del layer._call_losses[:]

    # ---- building and calling -----------------------------------------------------------------
    def build(self, input_shape):
        """Creates the layer's weights for inputs of ``input_shape``; called once, before the
        first ``call``."""
        self.__dict__["_build_input_shape"] = input_shape
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The layer's computation (the identity for the base class)."""
        return inputs

    def _convert_input(self, x):
        if isinstance(x, Tensor):
            if self._autocast and x.dtype.is_floating and x.dtype is not self._dtype_object:
                return math_ops.cast(x, self._dtype_object)
            return x
        if isinstance(x, (np.ndarray, np.generic, float, int)) and not isinstance(x, bool):
            return self._convert_input(convert_to_tensor(x))
        return x

    def _convert_inputs(self, inputs):
        if isinstance(inputs, Tensor):
            return self._convert_input(inputs)
        if isinstance(inputs, list) and inputs and all(
                isinstance(v, (float, int)) and not isinstance(v, bool)
                for v in leaves(inputs)):
            return self._convert_input(convert_to_tensor(inputs))  # a nested list of numbers
        if isinstance(inputs, (list, tuple, dict)):
            return nest.map_structure(self._convert_input, inputs)
        return self._convert_input(inputs)

    def _build_for_shapes(self, input_shapes):
        """Runs ``build`` inside the layer's name scope and sets the weights given at
        construction (``weights=``)."""
        with self._call_name_scope:
            self.build(input_shapes)
        self.__dict__["built"] = True
        if self._build_input_shape is None:
            self.__dict__["_build_input_shape"] = input_shapes
        initial = self._initial_weights
        if initial is not None:
            self.__dict__["_initial_weights"] = None
            self.set_weights(initial)

    def _maybe_build(self, inputs):
        shapes = inputs.shape if isinstance(inputs, Tensor) else nest.map_structure(
            lambda t: TensorShape(t.shape) if hasattr(t, "shape") else None, inputs)
        self._build_for_shapes(shapes)

    def _resolve_training(self, spec, args, kwargs):
        """The training mode of this call; puts it into args/kwargs if ``call`` takes it."""
        training = kwargs.get("training")
        positional = spec.training_index is not None and len(args) > spec.training_index
        if training is None and positional:
            training = args[spec.training_index]
        if training is None:
            stack = _CALL_CONTEXT.training
            if stack and stack[-1] is not None:
                training = stack[-1]
            elif spec.accepts_training:
                training = spec.training_default
        if spec.accepts_training:
            if positional:
                args = args[:spec.training_index] + (training,) + args[spec.training_index + 1:]
            else:
                kwargs["training"] = training
        else:
            kwargs.pop("training", None)
        return training, args

    def __call__(self, *args, **kwargs):
        if "_keras_initialized" not in self.__dict__:
            raise RuntimeError(f"It looks like you are subclassing `{type(self).__name__}` and "
                               "forgot to call `super().__init__()`. Always start your "
                               "`__init__` with `super().__init__(**kwargs)`.")
        if args:
            inputs, args = args[0], args[1:]
        elif "inputs" in kwargs:
            inputs = kwargs.pop("inputs")
        else:
            raise TypeError(f"Layer {self.name}: __call__ needs the inputs as its first "
                            "argument.")
        if keras_tensor.contains_keras_tensor(inputs):
            return self._functional_call(inputs, args, kwargs)
        input_mask = keras_masks.masks_of(inputs)   # before a cast makes new tensors
        inputs = self._convert_inputs(inputs)
        spec = _call_spec(type(self))
        training, args = self._resolve_training(spec, args, kwargs)
        if spec.accepts_mask:
            if spec.mask_index is not None and len(args) > spec.mask_index:
                input_mask = args[spec.mask_index]
            elif kwargs.get("mask") is None and input_mask is not None:
                kwargs["mask"] = input_mask
            else:
                input_mask = kwargs.get("mask")
        stack = _CALL_CONTEXT.training
        if not stack and _CALL_CONTEXT.losses_added:
            self._clear_call_losses()
        stack.append(training)
        try:
            assert_input_compatibility(self._input_spec, inputs, self._name)
            if not self.built:
                self._maybe_build(inputs)
            call = self._call_function()
            with self._call_name_scope:
                outputs = call(inputs, *args, **kwargs)
        finally:
            stack.pop()
        if self._activity_regularizer is not None:
            self._add_activity_loss(outputs)
        if self.supports_masking or type(self).compute_mask is not Layer.compute_mask:
            keras_masks.attach(outputs, self.compute_mask(inputs, input_mask))
        return outputs

    def _call_function(self):
        """``self.call``, converted by AutoGraph while a function with autograph on is being
        traced (so that Python control flow on tensors in a user's ``call`` works)."""
        return autograph_operators.convert_in_context(self.call)

    def _add_activity_loss(self, outputs):
        for output in nest.flatten(outputs):
            if not isinstance(output, Tensor):
                continue
            loss = self._activity_regularizer(output)
            batch = output.shape[0] if output.ndim else None
            if batch:
                loss = loss / float(batch)
            _CALL_CONTEXT.losses_added = True
            self._call_losses.append(loss)

    # ---- shapes -------------------------------------------------------------------------------
    def _symbolic_call(self, input_shapes, dtype=None, **kwargs):
        """Calls the layer on placeholders of ``input_shapes`` in a scratch graph (nothing is
        computed) and returns the output shapes; weights are created if needed."""
        graph = func_graph.FuncGraph(f"{self._name}_shape_inference")
        np_dtype = dtypes.as_dtype(dtype or self._dtype).as_numpy_dtype

        def placeholder(shape):
            shape = TensorShape(shape)
            return graph.placeholder(shape.dims, np_dtype, "input")

        with tape_lib.stop_recording(), func_graph.building(graph), \
                autograph_operators.status(True):
            inputs = nest.map_structure(placeholder, as_shape_structure(input_shapes))
            outputs = self(inputs, **kwargs)
        self._clear_call_losses()   # losses of the scratch graph are not losses of a real call
        return nest.map_structure(lambda t: TensorShape(t.shape), outputs)

    def _call_on_placeholders(self, inputs, args, kwargs):
        """``(output shapes, output dtypes)`` of a call on KerasTensors (in ``inputs`` and in
        the other arguments): the call runs on placeholders of their shapes and dtypes in a
        scratch graph, so nothing is computed."""
        graph = func_graph.FuncGraph(f"{self._name}_shape_inference")

        def placeholder(value):
            if isinstance(value, keras_tensor.KerasTensor):
                return graph.placeholder(value.shape.dims, value.dtype.as_numpy_dtype, "input")
            return value

        def placeholders(structure):
            return nest.map_structure(placeholder, structure)
        with tape_lib.stop_recording(), func_graph.building(graph), \
                autograph_operators.status(True):
            outputs = self(placeholders(inputs), *[placeholders(a) for a in args],
                           **{key: placeholders(value) for key, value in kwargs.items()})
        self._clear_call_losses()   # losses of the scratch graph are not losses of a real call
        return (nest.map_structure(lambda t: TensorShape(t.shape), outputs),
                [t.dtype for t in nest.flatten(outputs)])

    def compute_output_shape(self, input_shape):
        """The output shape for inputs of ``input_shape`` (builds the layer if needed).

        The default runs ``call`` on symbolic inputs; layers with a closed form override it.
        """
        if not self.built:
            self._build_for_shapes(as_shape_structure(input_shape))
        return self._symbolic_call(input_shape, training=False)

    def compute_output_signature(self, input_signature):
        shapes = self.compute_output_shape(nest.map_structure(lambda s: s.shape, input_signature))
        return nest.map_structure(lambda s: TensorSpec(s, self._dtype), shapes)

    def compute_mask(self, inputs, mask=None):
        """The mask of the outputs for ``inputs`` with mask ``mask``: the input's mask when
        the layer ``supports_masking`` (it keeps the time axis), else None."""
        return mask if self.supports_masking else None

    @property
    def output_shape(self):
        """The shape of the layer's output in the models it is connected in (the functional
        API, or a Sequential model with a known input shape): a tuple, or a list of them.
        A layer called on inputs of different shapes has none (AttributeError)."""
        return self._shape_of_calls("output")

    @property
    def input_shape(self):
        """The shape of the layer's input in the models it is connected in (see
        ``output_shape``)."""
        return self._shape_of_calls("input")

    def _shape_of_calls(self, which):
        nodes = self._inbound_nodes
        if nodes:
            shapes = [shape_for_display(node.shapes(which)) for node in nodes]
            if any(shape != shapes[0] for shape in shapes[1:]):
                raise AttributeError(
                    f'The layer "{self.name}" has multiple inbound nodes, with different '
                    f'{which} shapes {shapes}. Hence the notion of "{which} shape" is '
                    f"ill-defined for the layer; read the {which} shape of each call from "
                    f"its tensors instead.")
            return shapes[0]
        recorded = self._keras_input_shape if which == "input" else self._keras_output_shape
        if recorded is None:
            raise AttributeError(f'The layer "{self.name}" has never been called and thus has '
                                 f"no defined {which} shape.")
        return shape_for_display(recorded)

    @property
    def input(self):
        """The symbolic input of the layer's first call in a model (the ``keras.Input`` or
        layer output it was called on); a list when the call took several tensors."""
        return self._tensors_of_first_call("input")

    @property
    def output(self):
        """The symbolic output of the layer's first call in a model (what ``layer(x)``
        returned for a ``keras.Input``-derived ``x``); a list when there are several."""
        return self._tensors_of_first_call("output")

    def _tensors_of_first_call(self, which):
        if not self._inbound_nodes:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no "
                                 f"defined {which}.")
        node = self._inbound_nodes[0]
        tensors = node.input_tensors if which == "input" else node.outputs
        return tensors[0] if len(tensors) == 1 else list(tensors)

    def _record_shapes(self, input_shape, output_shape):
        self.__dict__["_keras_input_shape"] = input_shape
        self.__dict__["_keras_output_shape"] = output_shape

    # ---- the functional API: calls on KerasTensors ----------------------------------------------
    def _functional_call(self, inputs, args, kwargs):
        shapes = nest.map_structure(lambda t: t.shape if isinstance(t, keras_tensor.KerasTensor)
                                    else TensorShape(np.shape(t)), inputs)
        assert_input_compatibility(self._input_spec, inputs, self._name)
        if not self.built:
            self._build_for_shapes(shapes)
        spec = _call_spec(type(self))
        symbolic_kwargs = dict(kwargs)
        if spec.accepts_training:
            symbolic_kwargs.setdefault("training", False)
        out_dtypes = None
        if _closed_form(self) and not keras_tensor.contains_keras_tensor([list(args), kwargs]):
            out_shapes = self.compute_output_shape(shapes)
        else:
            out_shapes, out_dtypes = self._call_on_placeholders(inputs, args, symbolic_kwargs)
        node = keras_tensor.Node(self, inputs, args, kwargs)
        flat_shapes = nest.flatten(as_shape_structure(out_shapes))
        outputs = [keras_tensor.KerasTensor(shape, out_dtypes[i] if out_dtypes else self._dtype,
                                            name=f"{self._name}/output_{i}"
                                            if len(flat_shapes) > 1 else self._name,
                                            node=node, index=i)
                   for i, shape in enumerate(flat_shapes)]
        node.outputs = outputs
        self._inbound_nodes.append(node)
        self._record_shapes(shapes, out_shapes)
        return nest.pack_sequence_as(as_shape_structure(out_shapes), outputs)

    # ---- config and saving --------------------------------------------------------------------
    def get_config(self):
        """The constructor arguments that recreate this layer (without its weights)."""
        config = {"name": self._name, "trainable": self._trainable, "dtype": self._dtype}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def save_weights(self, filepath, overwrite=True, save_format=None):
        """Saves ``weights`` (in order) to ``filepath``."""
        from hybridtf.keras import saving
        return saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        """Loads weights saved by ``save_weights`` into ``weights`` (in order)."""
        from hybridtf.keras import saving
        return saving.load_weights(self, filepath)

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at {hex(id(self))}>"


def _closed_form(layer):
    """True when the layer's class defines compute_output_shape (no symbolic call needed)."""
    return type(layer).compute_output_shape is not Layer.compute_output_shape
