"""``tf.saved_model.save``: an object's variables and traced functions, in a directory.

Layout of ``export_dir``::

    saved_model.json                   objects, variables, functions, graphs, signatures (JSON)
                                       and the names of this save's two data files
    variables/variables.<save>.npz     the variables' values
    constants.<save>.npz               constants captured by the graphs, and array-valued
                                       attributes
    .saved_model.json.lock             taken by each save, so that saves follow one another

Saving is atomic (see ``framework.atomic_files``): the data files of a save get names of their own
and are written and fsync'ed first; replacing ``saved_model.json`` (one rename) switches to
the new save; the previous save's data files are deleted after that.  A process killed at any
moment leaves the previous SavedModel, or the new one, loadable -- never a mix; and the next
save removes what the killed one left.  All files carry the same ``save_id`` (checked on load).
"""
import json
import os

import numpy as np

from hybridtf.distribute import distribute_lib
from hybridtf.framework import atomic_files, nest
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.polymorphic_function import _TENSOR_OUTPUT, ConcreteFunction, Function
from hybridtf.saved_model import array_file
from hybridtf.saved_model.function_serialization import serialise_concrete
from hybridtf.saved_model.graph_serialization import GraphWriter
from hybridtf.saved_model.object_graph import ObjectGraph, concrete_functions_of
from hybridtf.saved_model.restored_function import SignatureFunction

FORMAT = "hybridtf.saved_model"
VERSION = 2     # 2: per-save data file names, listed under "files"
MODEL_FILE = "saved_model.json"
VARIABLES_DIR = "variables"
# (directory, stem, suffix) of each data file: ``<directory>/<stem>.<save token><suffix>``.
DATA_FILES = {"variables": (VARIABLES_DIR, "variables", ".npz"),
              "constants": ("", "constants", ".npz")}
DATA_FORMATS = {"variables": "hybridtf.saved_model.variables",
                "constants": "hybridtf.saved_model.constants"}
# The fixed names a version-1 SavedModel used.
V1_FILES = {"variables": os.path.join(VARIABLES_DIR, "variables.npz"),
            "constants": "constants.npz"}


class SaveOptions:
    """Options for ``tf.saved_model.save`` (TF's argument names).

    ``function_aliases`` (a dict of alias -> tf.function) is recorded in the SavedModel; the
    other options concern TF's graph format, devices and distribution and have no effect here.
    """

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_debug_stripper=False, experimental_io_device=None,
                 experimental_variable_policy=None, experimental_custom_gradients=True,
                 experimental_image_format=False, experimental_skip_saver=False,
                 experimental_sharding_callback=None, extra_tags=None):
        if function_aliases is not None and not isinstance(function_aliases, dict):
            raise TypeError(f"SaveOptions: function_aliases must be a dict, got "
                            f"{type(function_aliases).__name__}.")
        self.namespace_whitelist = namespace_whitelist
        self.save_debug_info = save_debug_info
        self.function_aliases = dict(function_aliases or {})
        self.experimental_debug_stripper = experimental_debug_stripper
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = experimental_variable_policy
        self.experimental_custom_gradients = experimental_custom_gradients
        self.experimental_image_format = experimental_image_format
        self.experimental_skip_saver = experimental_skip_saver
        self.experimental_sharding_callback = experimental_sharding_callback
        self.extra_tags = extra_tags


class _ArrayStore:
    """Arrays kept out of the JSON, each once (by identity)."""

    def __init__(self, prefix):
        self._prefix = prefix
        self._keys = {}
        self._keep = []
        self.arrays = {}

    def add(self, array):
        key = self._keys.get(id(array))
        if key is None:
            key = f"{self._prefix}{len(self.arrays)}"
            self._keys[id(array)] = key
            self._keep.append(array)
            self.arrays[key] = np.asarray(array)
        return key


def save(obj, export_dir, signatures=None, options=None):
    """Saves ``obj`` -- a tf.Module or any object holding variables, modules and
    ``tf.function`` s -- with its variables and traced functions to ``export_dir``.

    Every trace made so far of each ``tf.function`` found on the object and its submodules is
    saved (a function with an ``input_signature`` is traced now if it never was), so that
    ``tf.saved_model.load`` in another process can call them without the Python class.

    Args:
      obj: the object to save.
      export_dir: the directory to write (created; an existing SavedModel is replaced).
      signatures: a ``tf.function`` with an input_signature or a ConcreteFunction (saved as
        ``"serving_default"``), or a dict of them by signature key.  Default: the one
        ``tf.function`` with an input_signature on ``obj``, if there is exactly one.
      options: a ``tf.saved_model.SaveOptions``.

    Raises:
      ValueError: a function cannot be saved (it uses ``tf.py_function``, or was traced with
        arguments that are arbitrary Python objects), or a signature is not a function with
        an input_signature or a concrete function.
    """
    if isinstance(obj, (int, float, str, bool, bytes, type(None), list, tuple, dict)) or \
            not hasattr(obj, "__dict__"):
        raise ValueError(f"Expected an object such as a tf.Module for export. Got {obj!r} with "
                         f"type {type(obj)}.")
    if options is not None and not isinstance(options, SaveOptions):
        raise TypeError(f"tf.saved_model.save: options must be a tf.saved_model.SaveOptions, "
                        f"got {type(options).__name__}.")
    objects = ObjectGraph(obj)
    signatures = _signature_functions(obj, signatures, objects)

    variables = list(objects.variables)
    variable_ids = {id(v): i for i, v in enumerate(variables)}

    def variable_index(variable):
        # Variables a function uses without the object holding them are saved too (with the
        # function), though not reachable as attributes after loading.
        index = variable_ids.get(id(variable))
        if index is None:
            index = variable_ids[id(variable)] = len(variables)
            variables.append(variable)
        return index

    constants = _ArrayStore("array_")
    writer = GraphWriter(variable_index, constants.add)
    concrete_ids = {}
    concretes = []

    def concrete_index(concrete):
        index = concrete_ids.get(id(concrete))
        if index is None:
            index = concrete_ids[id(concrete)] = len(concretes)
            concretes.append(serialise_concrete(concrete, writer, constants.add))
        return index

    functions = [{"name": name, "concrete_functions": [concrete_index(c)
                                                       for c in concrete_functions_of(fn)]}
                 for name, fn in objects.functions]
    signature_table = {}
    for key, (concrete, input_names, output_keys) in signatures.items():
        signature_table[key] = {"concrete_function": concrete_index(concrete),
                                "inputs": input_names, "outputs": output_keys}
    aliases = {}
    if options is not None:
        for alias, fn in options.function_aliases.items():
            aliases[alias] = [concrete_index(c) for c in concrete_functions_of(fn)]

    model = {
        "format": FORMAT, "version": VERSION, "root": 0,
        "objects": objects.nodes,
        "variables": [{"name": v.name, "trainable": bool(v.trainable),
                       "shape": v.shape.dims, "dtype": v.dtype.name} for v in variables],
        "functions": functions,
        "concrete_functions": concretes,
        "graphs": writer.table,
        "signatures": signature_table,
        "function_aliases": aliases,
    }
    variable_values = {}
    for i, v in enumerate(variables):
        value = np.asarray(v.numpy())
        if value.dtype.hasobject:
            raise ValueError(f"tf.saved_model.save: variable {v.name!r} has dtype "
                             f"{v.dtype.name}, which cannot be saved.")
        variable_values[f"variable_{i}"] = value
    export_dir = os.fspath(export_dir)
    # Under MultiWorkerMirroredStrategy every process saves and rank 0 writes the files.
    distribute_lib.write_once(
        lambda: _write_directory(export_dir, model, {"variables": variable_values,
                                                     "constants": constants.arrays}),
        f"tf.saved_model.save({export_dir!r})")


# ---- signatures ----------------------------------------------------------------------------------
def _signature_functions(obj, signatures, objects):
    """{key: (ConcreteFunction, input names, output keys)} for the signatures to save."""
    if signatures is None:
        restored = getattr(obj, "signatures", None)
        if isinstance(restored, dict) and restored and all(
                isinstance(s, SignatureFunction) for s in restored.values()):
            signatures = restored       # re-saving a loaded SavedModel keeps its signatures
        else:
            candidates = [fn for name, fn in _root_functions(obj, objects)
                          if isinstance(fn, Function) and fn.input_signature is not None]
            default = getattr(obj, "_default_save_signature", None)
            if not candidates and callable(default):
                # A Keras model: its call traced on its input spec, as TF saves it.
                candidates = [fn for fn in [default()] if fn is not None]
            signatures = {"serving_default": candidates[0]} if len(candidates) == 1 else {}
    elif not isinstance(signatures, dict):
        signatures = {"serving_default": signatures}
    result = {}
    for key, fn in signatures.items():
        if not isinstance(key, str):
            raise ValueError(f"tf.saved_model.save: signature keys must be strings, got {key!r}.")
        result[key] = _signature(key, fn)
    return result


def _root_functions(obj, objects):
    root = objects.nodes[0]
    for name, index in root["children"]:
        node = objects.nodes[index]
        if node["kind"] == "function":
            yield name, objects.functions[node["function"]][1]


def _signature(key, fn):
    if isinstance(fn, SignatureFunction):
        return fn._concrete, list(fn._input_names), list(fn._output_keys)
    spec_names = None
    if isinstance(fn, Function) and fn.input_signature is not None:
        spec_names = [s.name for s in nest.flatten(list(fn.input_signature))]
        concrete = fn.get_concrete_function()
    elif isinstance(fn, ConcreteFunction):
        concrete = fn
    else:
        raise ValueError(f"Expected a TensorFlow function for which to generate a signature, "
                         f"but got {fn!r} (signature {key!r}). Only `tf.function`s with an "
                         "input signature or concrete functions can be used as a signature.")
    return concrete, _input_names(concrete, spec_names), _output_keys(key, concrete)


def _input_names(concrete, spec_names):
    """One name per tensor input: the input_signature's TensorSpec name when it has one, else
    the parameter's name (``name_1``, ``name_2``, ... for the leaves of a nested argument)."""
    names = []
    for parameter, value in concrete._arg_template.arguments.items():
        leaves = [leaf for leaf in nest.flatten(value) if isinstance(leaf, TensorSpec)]
        if len(leaves) == 1 and not nest.is_nested(value):
            names.append(parameter)
        else:
            names += [f"{parameter}_{i + 1}" for i in range(len(leaves))]
    if spec_names is not None and len(spec_names) == len(names):
        names = [given or default for given, default in zip(spec_names, names)]
    unique = []
    for name in names:
        candidate, n = name, 1
        while candidate in unique:
            candidate, n = f"{name}_{n}", n + 1
        unique.append(candidate)
    return unique


def _output_keys(key, concrete):
    graph = concrete.graph
    if any(kind is not _TENSOR_OUTPUT for kind in graph.output_leaves):
        raise ValueError(f"tf.saved_model.save: signature {key!r} ({concrete.name}) returns "
                         f"non-tensor values ({graph.structured_outputs!r}); a signature must "
                         "return tensors (a tensor, a list/tuple of tensors or a dict of them).")
    result = graph.structured_outputs
    if isinstance(result, dict) and all(isinstance(k, str) for k in result) and \
            not any(nest.is_nested(v) for v in result.values()):
        return sorted(result)   # the order nest.flatten gives dict values
    return [f"output_{i}" for i in range(len(graph.outputs))]


# ---- writing -------------------------------------------------------------------------------------
def _write_directory(export_dir, model, arrays):
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise FileExistsError(f"tf.saved_model.save: {export_dir!r} exists and is not a "
                              "directory.")
    export_dir = os.path.abspath(export_dir)
    if not os.path.isdir(export_dir):
        os.makedirs(export_dir, exist_ok=True)
        atomic_files.fsync_directory(os.path.dirname(export_dir))
    model_path = os.path.join(export_dir, MODEL_FILE)
    with atomic_files.exclusive(model_path), atomic_files.live_save() as token:
        # What killed saves left: their temporaries always, their data files only when the
        # current saved_model.json can be read (so that we know which files it needs).
        atomic_files.remove_stale_temporaries(model_path)
        _remove_old_data_files(export_dir, _current_tokens(export_dir))
        files = {}
        for key, (directory, stem, suffix) in DATA_FILES.items():
            files[key] = os.path.join(directory, atomic_files.versioned_name(stem, token, suffix))
            array_file.write_arrays(
                os.path.join(export_dir, files[key]),
                {"format": DATA_FORMATS[key], "version": VERSION, "save_id": token},
                arrays[key])
        model = dict(model, save_id=token, files={k: v.replace(os.sep, "/")
                                                  for k, v in files.items()})
        text = json.dumps(model, separators=(",", ":")).encode("utf-8")
        atomic_files.write_file(model_path, lambda f: f.write(text))     # the switch
        _remove_old_data_files(export_dir, {token})
        for name in V1_FILES.values():
            if os.path.isfile(os.path.join(export_dir, name)):
                os.unlink(os.path.join(export_dir, name))


def _current_tokens(export_dir):
    """The save tokens of the data files ``saved_model.json`` names now; None when it cannot
    be read (then no data file may be judged unused)."""
    try:
        with open(os.path.join(export_dir, MODEL_FILE), "rb") as f:
            files = json.loads(f.read()).get("files", {})
    except FileNotFoundError:
        return set()
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    tokens = set()
    for key, (_, stem, suffix) in DATA_FILES.items():
        name = files.get(key) if isinstance(files, dict) else None
        token = atomic_files.token_of(os.path.basename(name), stem, suffix) \
            if isinstance(name, str) else None
        if token is not None:
            tokens.add(token)
    return tokens


def _remove_old_data_files(export_dir, keep):
    if keep is None:
        return
    for directory, stem, suffix in DATA_FILES.values():
        atomic_files.remove_stale_versions(os.path.join(export_dir, directory), stem, suffix, keep)
