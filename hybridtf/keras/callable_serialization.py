"""Functions in layer configs (a ``Lambda`` layer's ``function``, ``output_shape`` and
``mask``), written as Keras 3 writes them.

* A Python ``lambda`` is saved as its bytecode: ``{"class_name": "__lambda__", "config":
  {"code": <base64 marshal>, "defaults": ..., "closure": ...}}``, plus the Python version
  (bytecode only loads into the same one) and the modules it uses as globals, by name
  (``{"tf": "hybridtf", "np": "numpy"}``).  Loading it runs code from the file, so it is
  refused in safe mode.
* Any other function is saved by name: ``{"class_name": "function", "config": name, "module":
  ..., "registered_name": ...}``.  Loading finds it among ``custom_objects``, registered
  objects and hybridtf's own functions; a function found nowhere else is imported from its
  module only with ``safe_mode=False``.
"""
import base64
import importlib
import json
import marshal
import sys
import types
import warnings

from hybridtf.keras import object_registration

LAMBDA = "__lambda__"
_UNSAFE_HINT = ("Pass safe_mode=False to load_model only if you trust the source of the file: "
                "loading can then run arbitrary code.")


def serialize_function(fn, layer_name):
    """The config entry for the callable ``fn`` of the layer ``layer_name``."""
    if isinstance(fn, types.LambdaType) and fn.__name__ == "<lambda>":
        return _serialize_lambda(fn, layer_name)
    if not callable(fn):
        raise ValueError(f"Layer {layer_name!r}: cannot save {fn!r} of type "
                         f"{type(fn).__name__}: not a function.")
    name = getattr(fn, "__name__", None)
    if name is None:
        raise ValueError(f"Layer {layer_name!r}: cannot save the callable {fn!r}: it has no "
                         "__name__; use a function or a lambda.")
    return {"module": getattr(fn, "__module__", None), "class_name": "function",
            "config": name, "registered_name": object_registration.get_registered_name(fn)}


def _serialize_lambda(fn, layer_name):
    code = fn.__code__
    module_globals, other_globals = {}, []
    for name in code.co_names:
        value = fn.__globals__.get(name)
        if isinstance(value, types.ModuleType):
            module_globals[name] = value.__name__
        elif name in fn.__globals__:
            other_globals.append(name)
    if other_globals:
        warnings.warn(f"Layer {layer_name!r}: its lambda uses the global(s) {other_globals}, "
                      "which are not modules and are not saved; they will be undefined in a "
                      "loaded model. Pass them as `arguments` of the Lambda layer instead.",
                      stacklevel=4)
    closure = [cell.cell_contents for cell in fn.__closure__ or ()]
    defaults = list(fn.__defaults__ or ())
    for what, values in (("closure", closure), ("default arguments", defaults)):
        try:
            json.dumps(values)
        except TypeError as err:
            raise ValueError(f"Layer {layer_name!r}: its lambda cannot be saved: its {what} "
                             f"hold values that are not JSON-serializable ({err}). Pass them "
                             "as `arguments` of the Lambda layer, or use a named function "
                             "with custom_objects.") from None
    return {"class_name": LAMBDA, "config": {
        "code": base64.b64encode(marshal.dumps(code)).decode("ascii"),
        "defaults": defaults or None, "closure": closure or None,
        "python_version": list(sys.version_info[:2]), "globals": module_globals}}


def deserialize_function(config, custom_objects=None, safe_mode=None, layer_name="?"):
    """The callable a ``serialize_function`` entry describes (see the module docstring).

    ``safe_mode=None`` takes the setting of the load under way (safe unless
    ``load_model(..., safe_mode=False)``).  Raises ValueError for a lambda in safe mode, for
    a function that cannot be found, and for bytecode of another Python version.
    """
    safe = object_registration.in_safe_mode() if safe_mode is None else safe_mode is not False
    if isinstance(config, str):           # configs of earlier hybridtf versions: a name only
        config = {"class_name": "function", "config": config}
    if not isinstance(config, dict) or not isinstance(config.get("config"), (str, dict)):
        raise ValueError(f"Layer {layer_name!r}: cannot load the function described by "
                         f"{config!r}.")
    if config.get("class_name") == LAMBDA:
        if safe:
            raise ValueError(f"Layer {layer_name!r} is a Lambda layer whose function is a "
                             "Python lambda, saved as bytecode: loading it would run code "
                             f"from the file, so it is refused in safe mode. {_UNSAFE_HINT}")
        return _load_lambda(config["config"], layer_name)
    return _find_function(config, custom_objects, safe, layer_name)


def _load_lambda(config, layer_name):
    version = config.get("python_version")
    if version != list(sys.version_info[:2]):
        saved = ".".join(map(str, version)) if isinstance(version, list) else "an unknown version"
        raise ValueError(f"Layer {layer_name!r}: its lambda was saved as bytecode of Python "
                         f"{saved}, which this Python ({sys.version_info[0]}."
                         f"{sys.version_info[1]}) cannot run. Rebuild the Lambda layer in code "
                         "and load the weights only.")
    namespace = {"__builtins__": __builtins__}
    for name, module in (config.get("globals") or {}).items():
        namespace[name] = importlib.import_module(module)
    try:
        code = marshal.loads(base64.b64decode(config["code"], validate=True))
    except (KeyError, TypeError, ValueError, EOFError) as err:
        raise ValueError(f"Layer {layer_name!r}: the bytecode of its lambda is damaged "
                         f"({type(err).__name__}: {err}); save the model again.") from None
    if not isinstance(code, types.CodeType):
        raise ValueError(f"Layer {layer_name!r}: the saved lambda is not Python bytecode; "
                         "save the model again.")
    closure = tuple(types.CellType(value) for value in config.get("closure") or ())
    return types.FunctionType(code, namespace, code.co_name,
                              tuple(config.get("defaults") or ()) or None, closure or None)


def _find_function(config, custom_objects, safe, layer_name):
    name = config["config"]
    registered = config.get("registered_name") or name
    for key in dict.fromkeys((registered, name)):
        found = object_registration.get_registered_object(key, custom_objects)
        if found is not None:
            return found
    module = config.get("module") or ""
    if module == "hybridtf" or module.startswith("hybridtf."):
        found = getattr(importlib.import_module(module), name, None)
        if callable(found):
            return found
    if safe:
        raise ValueError(
            f"Layer {layer_name!r} uses the function {name!r} (from module {module!r}), which "
            f"is not a hybridtf function, not registered, and not in custom_objects. Pass "
            f"custom_objects={{'{name}': {name}}} or register it with "
            f"@keras.saving.register_keras_serializable(); or, to import it from {module!r}, "
            f"load with safe_mode=False. {_UNSAFE_HINT}")
    try:
        found = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError) as err:
        raise ValueError(f"Layer {layer_name!r} uses the function {name!r}, which cannot be "
                         f"imported from module {module!r} ({err}); pass it in "
                         f"custom_objects={{'{name}': {name}}}.") from None
    if not callable(found):
        raise ValueError(f"Layer {layer_name!r}: {module}.{name} is not a function.")
    return found
