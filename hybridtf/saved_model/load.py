"""``tf.saved_model.load``: rebuilds a saved object from its directory, without its class.

Objects come back as ``tf.Module`` s carrying the saved attributes: variables (real
``tf.Variable`` s with the saved values, names and trainability), submodules, lists/dicts of
them, and functions (``RestoredFunction``: the saved traces, callable as before and mutating the
restored variables).  The root also has ``signatures``, the saved serving signatures.
"""
import json
import os

from hybridtf.framework import atomic_files
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.variables import Variable
from hybridtf.module import Module, _VALID_IDENTIFIER
from hybridtf.saved_model import array_file
from hybridtf.saved_model.function_serialization import deserialise_concrete
from hybridtf.saved_model.graph_serialization import GraphReader
from hybridtf.saved_model.restored_function import RestoredFunction, SignatureFunction
from hybridtf.saved_model.save import (DATA_FILES, DATA_FORMATS, FORMAT, MODEL_FILE, V1_FILES,
                                       VERSION)

# Reads of saved_model.json and its data files that may meet a concurrent save's switch.
_ATTEMPTS = 3


class CorruptSavedModelError(ValueError):
    """A SavedModel directory whose files are damaged, incomplete or inconsistent."""

    def __init__(self, export_dir, message):
        super().__init__(message)
        self.export_dir = export_dir


class LoadOptions:
    """Options for ``tf.saved_model.load`` (TF's argument names).

    ``experimental_load_function_aliases=True`` gives the loaded root a ``function_aliases``
    dict (alias -> function) from ``SaveOptions(function_aliases=...)``; the other options
    concern TF's devices and checkpoints and have no effect here.
    """

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None,
                 experimental_skip_checkpoint=False, experimental_variable_policy=None,
                 experimental_load_function_aliases=False):
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint
        self.experimental_variable_policy = experimental_variable_policy
        self.experimental_load_function_aliases = experimental_load_function_aliases


class RestoredModule(Module):
    """An object loaded from a SavedModel: a tf.Module with the saved attributes."""

    def __init__(self, name, class_name):
        super().__init__(name=name)
        self._saved_class_name = class_name

    def __call__(self, *args, **kwargs):
        # Python looks ``__call__`` up on the class, so a saved ``__call__`` (kept in the
        # instance dict like any attribute) is forwarded from here.
        call = self.__dict__.get("__call__")
        if call is None:
            raise TypeError(f"The restored object {self.name!r} (saved from "
                            f"{self._saved_class_name}) is not callable: it had no traced "
                            "__call__ when it was saved.")
        return call(*args, **kwargs)

    def __repr__(self):
        return f"<RestoredModule {self.name!r} (saved from {self._saved_class_name})>"


def contains_saved_model(export_dir):
    """True when ``export_dir`` holds a SavedModel written by hybridtf."""
    return os.path.isfile(os.path.join(os.fspath(export_dir), MODEL_FILE))


def load(export_dir, tags=None, options=None):
    """Loads a SavedModel written by ``tf.saved_model.save`` from ``export_dir``.

    ``tags`` (TF's MetaGraph tags) is accepted for compatibility; a hybridtf SavedModel has
    one set of functions.  Returns the saved object's restoration: attributes as on the
    original (variables, submodules, functions), ``variables`` / ``trainable_variables`` as a
    tf.Module, and ``signatures`` (a dict of signature key -> function returning a dict of
    tensors).  A save into ``export_dir`` may run meanwhile: the SavedModel read is the
    complete one before or after it.

    Raises:
      OSError: ``export_dir`` holds no SavedModel (FileNotFoundError).
      ValueError: the SavedModel is damaged or was written by a newer hybridtf.
    """
    if options is not None and not isinstance(options, LoadOptions):
        raise TypeError(f"tf.saved_model.load: options must be a tf.saved_model.LoadOptions, "
                        f"got {type(options).__name__}.")
    export_dir = os.fspath(export_dir)
    model_path = os.path.join(export_dir, MODEL_FILE)
    if not os.path.isfile(model_path):
        hint = ""
        if os.path.isfile(os.path.join(export_dir, "saved_model.pb")):
            hint = (" The directory holds a TensorFlow SavedModel (saved_model.pb), which "
                    "hybridtf cannot read; save the model with hybridtf.")
        raise FileNotFoundError(f"SavedModel file does not exist at: {model_path}.{hint}")
    for attempt in range(_ATTEMPTS):
        model = _read_model(export_dir, model_path)
        try:
            arrays = {key: _read_arrays(export_dir, _data_file(export_dir, model, key),
                                        DATA_FORMATS[key], model.get("save_id"))
                      for key in DATA_FILES}
            break
        except FileNotFoundError:
            # A save into this directory may have switched to a new version, and deleted
            # the files of the one read here, in between: then read the new one.
            if attempt + 1 == _ATTEMPTS or \
                    _read_model(export_dir, model_path).get("save_id") == model.get("save_id"):
                raise
    try:
        load_aliases = options is not None and options.experimental_load_function_aliases
        return _Loader(model, arrays["variables"], arrays["constants"], load_aliases).root()
    except CorruptSavedModelError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
        raise CorruptSavedModelError(
            export_dir, f"The SavedModel at {export_dir!r} is damaged and cannot be loaded "
            f"({type(err).__name__}: {err}).") from None


def _read_model(export_dir, model_path):
    try:
        with open(model_path, "r", encoding="utf-8") as f:
            model = json.load(f)
    except (ValueError, UnicodeDecodeError) as err:
        raise CorruptSavedModelError(
            export_dir, f"The SavedModel file {model_path!r} is truncated or corrupted "
            f"({type(err).__name__}: {err}).") from None
    if not isinstance(model, dict) or model.get("format") != FORMAT:
        raise CorruptSavedModelError(export_dir, f"{model_path!r} is not a hybridtf SavedModel "
                                     "file.")
    version = model.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CorruptSavedModelError(
            export_dir, f"The SavedModel at {export_dir!r} has format version {version!r}; this "
            f"hybridtf reads versions up to {VERSION}. Upgrade hybridtf to load it.")
    return model


def _data_file(export_dir, model, key):
    """The path of the ``key`` data file that ``saved_model.json`` names."""
    if model["version"] < 2:
        return os.path.join(export_dir, V1_FILES[key])
    files = model.get("files")
    name = files.get(key) if isinstance(files, dict) else None
    directory, stem, suffix = DATA_FILES[key]
    token = atomic_files.token_of(name.rsplit("/", 1)[-1], stem, suffix) \
        if isinstance(name, str) else None
    # Only the exact name a save writes: never a path out of the directory.
    if token is None or name != "/".join(filter(None, (
            directory, atomic_files.versioned_name(stem, token, suffix)))):
        raise CorruptSavedModelError(
            export_dir, f"The SavedModel file {os.path.join(export_dir, MODEL_FILE)!r} is "
            f"damaged: it names no valid {key} file ({name!r}). Save the model again.")
    return os.path.join(export_dir, *name.split("/"))


def _read_arrays(export_dir, path, file_format, save_id):
    try:
        manifest, arrays = array_file.read_arrays(path, "SavedModel file", file_format, VERSION)
    except FileNotFoundError:
        raise FileNotFoundError(f"The SavedModel at {export_dir!r} is incomplete: {path!r} is "
                                "missing.") from None
    if manifest.get("save_id") != save_id:
        raise CorruptSavedModelError(
            export_dir, f"The SavedModel at {export_dir!r} is inconsistent: {path!r} was written "
            f"by a different save than {MODEL_FILE} (an interrupted save?). Save it again.")
    return arrays


class _Loader:
    def __init__(self, model, variable_values, constant_values, load_aliases):
        self._model = model
        self._load_aliases = load_aliases
        self._constants = constant_values
        self._variables = [self._variable(i, spec, variable_values)
                           for i, spec in enumerate(model["variables"])]
        self._graphs = GraphReader(model["graphs"], self._variables, self._array)
        self._concretes = [deserialise_concrete(data, self._graphs, self._array)
                           for data in model["concrete_functions"]]
        self._functions = [RestoredFunction(f["name"], [self._concretes[i]
                                                        for i in f["concrete_functions"]])
                           for f in model["functions"]]
        self._objects = {}

    def _array(self, key):
        return self._constants[key]

    @staticmethod
    def _variable(index, spec, values):
        value = values[f"variable_{index}"]
        if value.dtype.name != spec["dtype"]:
            raise ValueError(f"variable {spec['name']!r} is stored as {value.dtype.name}, "
                             f"expected {spec['dtype']}")
        return Variable(value, trainable=spec["trainable"], name=spec["name"],
                        shape=TensorShape(spec["shape"]))

    def root(self):
        root = self._object(self._model["root"])
        signatures = {}
        for key, data in self._model["signatures"].items():
            signatures[key] = SignatureFunction(key, self._concretes[data["concrete_function"]],
                                                data["inputs"], data["outputs"])
        _set_attribute(root, "signatures", signatures)
        if self._load_aliases:
            _set_attribute(root, "function_aliases", {
                alias: RestoredFunction(alias, [self._concretes[i] for i in indices])
                for alias, indices in self._model.get("function_aliases", {}).items()})
        return root

    def _object(self, index):
        found = self._objects.get(index)
        if found is not None:
            return found
        node = self._model["objects"][index]
        kind = node["kind"]
        if kind == "variable":
            result = self._variables[node["variable"]]
        elif kind == "function":
            result = self._functions[node["function"]]
        elif kind == "list":
            result = self._objects[index] = []
            result.extend(self._object(i) for i in node["items"])
        elif kind == "tuple":
            result = tuple(self._object(i) for i in node["items"])
        elif kind == "dict":
            result = self._objects[index] = {}
            result.update((key, self._object(i)) for key, i in node["items"])
        elif kind == "object":
            name = node.get("name")
            if not isinstance(name, str) or not _VALID_IDENTIFIER.match(name):
                name = "restored_module"
            result = self._objects[index] = RestoredModule(name, node.get("class", "?"))
            for attribute, child in node["children"]:
                _set_attribute(result, attribute, self._object(child))
        else:
            raise ValueError(f"unknown object kind {kind!r}")
        self._objects[index] = result
        return result


def _set_attribute(obj, name, value):
    try:
        setattr(obj, name, value)
    except AttributeError:
        # A name a tf.Module defines as a read-only property (e.g. ``name``): keep the value
        # in the instance dict, where the property shadows it.
        obj.__dict__[name] = value
