"""``model.save("model.keras")`` and ``keras.models.load_model``: a model's architecture and
weights in one archive.

The archive is a zip holding ``config.json`` (the model's class name, ``get_config()``, the
input shape it was built for and its compile settings) and ``model.weights.h5`` (the weights, in hybridtf's weight-file
format).  Loading finds the class (``custom_objects``, the Keras classes, or any loaded
``Model``/``Layer`` subclass of that name), calls ``from_config``, builds it and loads the
weights.  Written to a temporary file and renamed, like every hybridtf save.
"""
import json
import os
import tempfile
import zipfile

from hybridtf.keras import saving

_FORMAT = "hybridtf.keras.model"
_VERSION = 1
_SUFFIXES = (".keras", ".h5", ".hdf5")


def _check_path(filepath, who):
    filepath = os.fspath(filepath)
    if not filepath.endswith(_SUFFIXES):
        raise ValueError(f"{who}: invalid filepath extension {filepath!r}; use a path ending "
                         "in `.keras` (or `.h5`) to save the whole model, `.weights.h5` with "
                         "`save_weights` for the weights only, or `tf.saved_model.save(model, "
                         "directory)` to export its traced functions.")
    return filepath


def save_model(model, filepath, overwrite=True):
    """Saves ``model``'s config and weights to ``filepath`` (``.keras``)."""
    filepath = _check_path(filepath, "save")
    if os.path.exists(filepath) and not overwrite:
        raise FileExistsError(f"save: {filepath} exists and overwrite=False.")
    if not model.built:
        raise ValueError(f"save: the model {model.name!r} has no weights yet; call it on data "
                         "or build it before saving.")
    try:
        config = model.get_config()
    except NotImplementedError as err:
        raise NotImplementedError(
            f"save: {type(model).__name__} cannot be saved as a whole: {err} Override "
            "get_config() (and from_config if needed), or save only its weights with "
            "save_weights.") from None
    manifest = {"format": _FORMAT, "version": _VERSION, "class_name": type(model).__name__,
                "config": config, "build_input_shape": _shape_list(model),
                "compile_config": _compile_config(model)}
    try:
        text = json.dumps(manifest)
    except TypeError as err:
        raise TypeError(f"save: the config of {type(model).__name__} is not JSON-serializable "
                        f"({err}); make get_config() return plain values.") from None
    directory = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        weights_path = os.path.join(scratch, "model.weights.h5")
        saving.save_weights(model, weights_path)
        archive = os.path.join(scratch, "model.keras")
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("config.json", text)
            zf.write(weights_path, "model.weights.h5")
        os.replace(archive, filepath)


def _compile_config(model):
    """The optimizer (settings, not its state), loss and metrics ``compile`` was given, when
    each can be written as a name or config; None otherwise."""
    from hybridtf.keras import losses, metrics, optimizers
    if not model.__dict__.get("_is_compiled"):
        return None
    try:
        return {"optimizer": optimizers.serialize(model.optimizer),
                "loss": None if model._loss_spec is None else
                model._loss_spec if isinstance(model._loss_spec, str) else
                losses.serialize(model._loss_spec),
                "metrics": [spec if isinstance(spec, str) else metrics.serialize(spec)
                            for spec in model._metric_specs]}
    except ValueError:
        return None   # a custom loss or metric function: the user compiles again


def _shape_list(model):
    shape = getattr(model, "_build_input_shape", None)
    if shape is None:
        shape = getattr(model, "input_shape", None)
    if shape is None:
        return None
    return [None if d is None else int(d) for d in shape]


def _all_subclasses(cls):
    found, stack = {}, [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.setdefault(sub.__name__, sub)
            stack.append(sub)
    return found


def _find_class(name, custom_objects):
    from hybridtf.keras import layers, models
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    for namespace in (models, layers):
        candidate = getattr(namespace, name, None)
        if isinstance(candidate, type):
            return candidate
    candidate = _all_subclasses(layers.Layer).get(name)
    if candidate is None:
        raise ValueError(f"load_model: unknown class {name!r}; pass it in custom_objects="
                         f"{{'{name}': {name}}}.")
    return candidate


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """The model saved with ``model.save(filepath)``: rebuilt from its config, with its
    weights, and compiled as it was (with ``compile=True``, when its optimizer, loss and
    metrics could be saved by name or config; the optimizer starts with fresh state)."""
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise ValueError(f"load_model: {filepath} is a directory; for a SavedModel use "
                         "tf.saved_model.load(directory).")
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"load_model: no such file: {filepath}")
    try:
        with zipfile.ZipFile(filepath) as zf:
            manifest = json.loads(zf.read("config.json"))
            weights = zf.read("model.weights.h5")
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as err:
        raise ValueError(f"load_model: {filepath} is not a model saved by hybridtf's "
                         f"model.save ({type(err).__name__}: {err}).") from None
    if manifest.get("format") != _FORMAT or manifest.get("version", 0) > _VERSION:
        raise ValueError(f"load_model: {filepath} is not a model file this version of hybridtf "
                         f"can read (format {manifest.get('format')!r}, version "
                         f"{manifest.get('version')!r}).")
    cls = _find_class(manifest["class_name"], custom_objects)
    model = cls.from_config(manifest["config"])
    shape = manifest.get("build_input_shape")
    if not model.built:
        if shape is None:
            raise ValueError(f"load_model: {filepath} does not record the input shape the "
                             "model was built for.")
        model.build(tuple(shape))
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "model.weights.h5")
        with open(path, "wb") as f:
            f.write(weights)
        saving.load_weights(model, path)
    compile_config = manifest.get("compile_config")
    if compile and compile_config:
        from hybridtf.keras import losses, metrics, optimizers
        custom = custom_objects or {}
        model.compile(
            optimizer=optimizers.deserialize(compile_config["optimizer"], custom),
            loss=None if compile_config["loss"] is None else
            losses.deserialize(compile_config["loss"], custom),
            metrics=[m if isinstance(m, str) else metrics.deserialize(m, custom)
                     for m in compile_config["metrics"]])
    return model
