"""Serving a Keras model from a SavedModel: ``model.export(path)``, ``keras.export.ExportArchive``
and the ``serving_default`` signature ``tf.saved_model.save(model, path)`` gives a model.

* ``tf.saved_model.save(model, path)`` saves the model object with a ``serving_default``
  signature traced from ``model(inputs, training=False)`` on the model's input spec, as TF
  does: its inputs are named ``inputs`` (``inputs``, ``inputs_1``, ... for several), its
  outputs ``output_0`` (``output_0``, ``output_1``, ... for a list; a dict's keys for a dict).
* ``model.export(path)`` writes an inference-only SavedModel, as Keras 3 does: its root has the
  endpoint ``serve`` (``reloaded.serve(x)``), the signatures ``serve`` and ``serving_default``
  (inputs named as the model's ``keras.Input`` s), and the lists ``variables``,
  ``trainable_variables`` and ``non_trainable_variables``.
"""
from hybridtf.framework import nest
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.polymorphic_function import Function, function
from hybridtf.module import Module
from hybridtf.saved_model.save import save as save_saved_model


# ---- the model's input specs -------------------------------------------------------------------
def _functional_specs(model, names):
    """The input specs of a functional model, in the structure of its inputs."""
    def spec(tensor, name):
        return TensorSpec(tensor.shape, tensor.dtype, name=name)
    flat = [spec(t, name) for t, name in zip(model.inputs, names(model.inputs))]
    return nest.pack_sequence_as(model._nested_inputs, flat)


def _built_shape_specs(model, shape, names, relax_batch):
    """Specs from the input shape a model was built (or declared) with."""
    structure = _as_nested_shapes(shape)
    flat = nest.flatten(structure)
    specs = []
    for leaf, name in zip(flat, names(flat)):
        dims = list(leaf.dims)
        if relax_batch and dims:
            dims[0] = None       # any batch size
        specs.append(TensorSpec(dims, model.dtype, name=name))
    return nest.pack_sequence_as(structure, specs)


def _as_nested_shapes(shape):
    """A shape, or a nest of shapes, with each shape a ``_ShapeLeaf`` (a leaf for ``nest``)."""
    if isinstance(shape, TensorShape):
        return _ShapeLeaf(shape.as_list())
    if isinstance(shape, (list, tuple)) and all(d is None or isinstance(d, int) for d in shape):
        return _ShapeLeaf(list(shape))
    if isinstance(shape, dict):
        return {k: _as_nested_shapes(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)):
        return [_as_nested_shapes(s) for s in shape]
    raise ValueError(f"Cannot make an input signature from the input shape {shape!r}.")


class _ShapeLeaf:
    """One input's shape, kept whole by ``nest`` (a list of ints would be flattened)."""

    def __init__(self, dims):
        self.dims = dims


def model_input_signature(model, names, relax_batch):
    """The model's inputs as a structure of TensorSpecs, named by ``names(flat inputs)``;
    None when the model's input shape is unknown (it was never built)."""
    if model.__dict__.get("_is_graph_network"):
        return _functional_specs(model, names)
    shape = model.__dict__.get("_sequential_input_shape") or model.__dict__.get(
        "_build_input_shape")
    if shape is None:
        return None
    return _built_shape_specs(model, shape, names, relax_batch)


def _numbered(base):
    """``base``, ``base_1``, ``base_2``, ... for each flat input."""
    return lambda flat: [base if i == 0 else f"{base}_{i}" for i in range(len(flat))]


def _keras_input_names(model):
    """The names Keras gives a model's inputs in an export: the ``keras.Input`` names."""
    inputs = model.__dict__.get("inputs")
    if inputs and all(isinstance(getattr(t, "name", None), str) for t in inputs):
        return lambda flat: [t.name for t in inputs]
    layers = model.__dict__.get("_self_tracked_layers") or []
    if layers and type(layers[0]).__name__ == "InputLayer":
        return lambda flat: [layers[0].name]
    return lambda flat: [f"args_{i}" for i in range(len(flat))]


def _serving_function(model, signature, name):
    def serve(inputs):
        return model(inputs, training=False)
    return function(serve, input_signature=[signature], name=name)


def default_save_signature(model):
    """The ``serving_default`` function ``tf.saved_model.save(model, path)`` saves: the model
    called on its input spec (inputs named ``inputs``, ``inputs_1``, ...); None when the
    model was never built."""
    signature = model_input_signature(model, _numbered("inputs"), relax_batch=False)
    if signature is None:
        return None
    return _serving_function(model, signature, "serving_default")


# ---- ExportArchive -----------------------------------------------------------------------------
class _ExportRoot:
    """The object an ExportArchive saves: its endpoints and variable lists as attributes
    (and nothing else of the tracked models, whose variables the endpoints use)."""


class ExportArchive:
    """Builds an inference SavedModel from Keras models and functions
    (``keras.export.ExportArchive``).

    ``track(model)`` makes the model's variables part of the archive; ``add_endpoint(name, fn,
    input_signature)`` adds a function (traced on ``input_signature``) callable as
    ``reloaded.<name>(...)``; ``add_variable_collection(name, variables)`` saves a list of
    variables under ``name``; ``write_out(path)`` writes the SavedModel, with each endpoint
    also a signature (the first one as ``serving_default`` too).
    """

    def __init__(self):
        self._root = _ExportRoot()
        self._endpoint_names = []
        self._tracked = []

    @property
    def variables(self):
        return [v for obj in self._tracked for v in obj.variables]

    @property
    def trainable_variables(self):
        return [v for obj in self._tracked for v in obj.trainable_variables]

    @property
    def non_trainable_variables(self):
        return [v for obj in self._tracked for v in obj.non_trainable_variables]

    def track(self, resource):
        """Makes the variables of ``resource`` (a layer, model or tf.Module) part of the
        archive."""
        if not isinstance(resource, Module):
            raise ValueError(f"ExportArchive.track: invalid resource type {type(resource)}; "
                             "expected a Keras layer or model, or a tf.Module.")
        if getattr(resource, "built", True) is False:
            raise ValueError(f"ExportArchive.track: the layer {resource.name!r} has not been "
                             "built; call it on data first.")
        if not any(obj is resource for obj in self._tracked):
            self._tracked.append(resource)

    def add_endpoint(self, name, fn=None, input_signature=None, **kwargs):
        """Adds the endpoint ``name``: ``fn`` traced on ``input_signature`` (a list of
        TensorSpecs, one per argument), or ``fn`` itself when it is a ``tf.function`` with an
        input_signature.  Returns the traced function."""
        if kwargs:
            raise TypeError(f"ExportArchive.add_endpoint: unexpected keyword arguments "
                            f"{sorted(kwargs)}.")
        if name in self._endpoint_names:
            raise ValueError(f"Endpoint name '{name}' is already taken.")
        if not callable(fn):
            raise ValueError(f"ExportArchive.add_endpoint: fn must be callable, got {fn!r}.")
        if isinstance(fn, Function) and fn.input_signature is not None and \
                input_signature is None:
            traced = fn
        else:
            if input_signature is None:
                raise ValueError(f"ExportArchive.add_endpoint({name!r}): pass input_signature "
                                 "(a list of tf.TensorSpec, one per argument of fn), or a "
                                 "tf.function with an input_signature.")
            python_function = fn.python_function if isinstance(fn, Function) else fn
            traced = function(python_function, input_signature=list(input_signature),
                              name=name)
        traced.get_concrete_function()      # traced now: a bad signature fails here
        setattr(self._root, name, traced)
        self._endpoint_names.append(name)
        return traced

    def add_variable_collection(self, name, variables):
        """Saves ``variables`` (a list of tf.Variables) as the attribute ``name``."""
        variables = list(variables)
        for v in variables:
            if not getattr(v, "_is_variable", False):
                raise ValueError(f"ExportArchive.add_variable_collection: expected a list of "
                                 f"tf.Variables, got {v!r}.")
        setattr(self._root, name, variables)

    def write_out(self, filepath, options=None, verbose=True):
        """Writes the SavedModel to the directory ``filepath``."""
        if not self._endpoint_names:
            raise ValueError("No endpoints have been set yet. Call add_endpoint().")
        root = self._root
        for attribute in ("variables", "trainable_variables", "non_trainable_variables"):
            setattr(root, attribute, getattr(self, attribute))
        signatures = {name: getattr(root, name) for name in self._endpoint_names}
        signatures.setdefault("serving_default", signatures[self._endpoint_names[0]])
        save_saved_model(root, filepath, signatures=signatures, options=options)
        if verbose:
            print(f"Saved artifact at '{filepath}'. The following endpoints are available: "
                  f"{', '.join(self._endpoint_names)}.")


def export_model(model, filepath, format="tf_saved_model", verbose=True,  # noqa: A002
                 input_signature=None, **kwargs):
    """``model.export(filepath)``: an inference SavedModel with the endpoint ``serve``."""
    if format != "tf_saved_model":
        raise ValueError(f"model.export: format {format!r} is not supported; hybridtf exports "
                         "format='tf_saved_model' (a SavedModel directory).")
    if kwargs:
        raise TypeError(f"model.export: unexpected keyword arguments {sorted(kwargs)}.")
    if not model.built:
        raise ValueError(f"model.export: the model {model.name!r} has not been built; call it "
                         "on data (or build it) before exporting.")
    if input_signature is None:
        signature = model_input_signature(model, _keras_input_names(model), relax_batch=True)
        if signature is None:
            raise ValueError(f"model.export: the input shape of {model.name!r} is unknown; "
                             "pass input_signature=[tf.TensorSpec(...)].")
        input_signature = [signature]
    archive = ExportArchive()
    archive.track(model)

    def serve(*inputs):
        return model(inputs[0] if len(inputs) == 1 else list(inputs), training=False)
    archive.add_endpoint("serve", serve, input_signature)
    archive.write_out(filepath, verbose=verbose)
