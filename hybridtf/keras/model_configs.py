"""What model files record besides weights, shared by ``.keras`` archives and legacy ``.h5``
files: the compile settings, the model's class (found again by name) and the input shape it
was built for."""
import inspect
import warnings

from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import layers, losses, metrics, models, object_registration, optimizers
from hybridtf.keras.layers.layer_utils import as_shape_structure


def input_shape_structure(model):
    """The input shape(s) the model was built for, as JSON lists (None when unknown)."""
    shape = getattr(model, "_build_input_shape", None)
    if shape is None:
        try:
            shape = model.input_shape
        except AttributeError:
            return None

    def to_json(value):
        if isinstance(value, TensorShape):
            return value.as_list() if value.rank is not None else None
        if isinstance(value, dict):
            return {k: to_json(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [to_json(v) for v in value]
        return None
    return to_json(as_shape_structure(shape))


def serialize_spec(spec, serialize):
    """A compile argument (a name, an object, a function, or a list/dict of them) as JSON."""
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, (list, tuple)):
        return [serialize_spec(s, serialize) for s in spec]
    if isinstance(spec, dict):
        return {k: serialize_spec(v, serialize) for k, v in spec.items()}
    try:
        return serialize(spec)
    except ValueError:
        name = getattr(spec, "__name__", None)
        if name is None:
            raise
        return name            # a custom function: found again through custom_objects


def compile_config(model):
    """The optimizer (settings), loss(es), metrics and loss weights ``compile`` was given;
    None when the model was not compiled or one of them cannot be written down."""
    if not model.__dict__.get("_is_compiled"):
        return None
    try:
        container = model.compiled_metrics
        return {"optimizer": optimizers.serialize(model.optimizer),
                "loss": serialize_spec(model._loss_spec, losses.serialize),
                "metrics": serialize_spec(container._user_metrics, metrics.serialize),
                "weighted_metrics": serialize_spec(container._user_weighted_metrics,
                                                   metrics.serialize),
                "loss_weights": model.compiled_loss._user_loss_weights}
    except (ValueError, AttributeError) as err:
        warnings.warn(f"save: the compile settings of {model.name!r} cannot be saved ({err}); "
                      "compile the loaded model again.", stacklevel=3)
        return None


def _all_subclasses(cls):
    found, stack = {}, [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.setdefault(sub.__name__, [])
            if sub not in found[sub.__name__]:
                found[sub.__name__].append(sub)
            stack.append(sub)
    return found


def find_model_class(name, registered_name, custom_objects, safe_mode):
    """The class a model file names: registered or in ``custom_objects`` first, then Keras's
    own; in unsafe mode also the one loaded ``Layer`` subclass of that name."""
    for key in dict.fromkeys((registered_name or name, name)):
        found = object_registration.get_registered_object(key, custom_objects)
        if found is not None:
            return found
    for namespace in (models, layers):
        candidate = getattr(namespace, name, None)
        if isinstance(candidate, type):
            return candidate
    if safe_mode:
        raise ValueError(
            f"load_model: the model's class {name!r} is not a Keras class, not in "
            f"custom_objects and not registered. Pass custom_objects={{'{name}': {name}}} or "
            "decorate the class with @keras.saving.register_keras_serializable(). In safe "
            "mode (the default) hybridtf uses no other class the file names; pass "
            f"safe_mode=False, if you trust the file, to use the loaded Layer subclass called "
            f"{name!r}.")
    candidates = _all_subclasses(layers.Layer).get(name, [])
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ValueError(f"load_model: unknown class {name!r}; pass it in custom_objects="
                         f"{{'{name}': {name}}}.")
    where = sorted(f"{c.__module__}.{c.__qualname__}" for c in candidates)
    raise ValueError(f"load_model: {len(candidates)} loaded classes are named {name!r} "
                     f"({', '.join(where)}); say which with custom_objects={{'{name}': ...}}.")


def model_from_class_config(cls, class_name, config, custom_objects):
    """A model of class ``cls`` rebuilt with its ``from_config`` (given ``custom_objects``
    when it takes them); errors say how to make the class loadable."""
    try:
        accepts_objects = "custom_objects" in inspect.signature(cls.from_config).parameters
    except (TypeError, ValueError):
        accepts_objects = False
    try:
        if accepts_objects:
            return cls.from_config(config, custom_objects=custom_objects)
        return cls.from_config(config)
    except TypeError as err:
        raise TypeError(f"load_model: could not rebuild {class_name} from its config {config} "
                        f"({err}). Make get_config() return every argument __init__ needs, or "
                        "define the classmethod from_config(cls, config).") from None


def is_flat_shape(shape):
    return isinstance(shape, list) and all(d is None or isinstance(d, int) for d in shape)


def shape_argument(shape):
    """A recorded input shape as ``build`` takes it: a tuple for one input, else as is."""
    return tuple(shape) if is_flat_shape(shape) else shape


def compile_from_config(model, config, custom):
    """Compiles ``model`` as ``config`` says; False (with a warning) when a loss or metric
    cannot be found."""

    def rebuild(spec, deserialize, keep_names):
        if spec is None:
            return None
        if isinstance(spec, list):
            return [rebuild(s, deserialize, keep_names) for s in spec]
        if isinstance(spec, dict) and "class_name" not in spec:       # one entry per output
            return {k: rebuild(v, deserialize, keep_names) for k, v in spec.items()}
        if isinstance(spec, str):
            if spec in custom:
                return custom[spec]
            if keep_names:
                # Metric names stay names, so that "accuracy" is resolved against the data
                # again; an unknown one is an error now rather than at the first batch.
                if spec.lower() not in ("accuracy", "acc"):
                    deserialize(spec, custom)
                return spec
        return deserialize(spec, custom)
    try:
        model.compile(optimizer=optimizers.deserialize(config["optimizer"], custom),
                      loss=rebuild(config.get("loss"), losses.deserialize, False),
                      metrics=rebuild(config.get("metrics"), metrics.deserialize, True),
                      weighted_metrics=rebuild(config.get("weighted_metrics"),
                                               metrics.deserialize, True),
                      loss_weights=config.get("loss_weights"))
    except ValueError as err:
        warnings.warn(f"load_model: the model was loaded but not compiled ({err}); pass the "
                      "custom losses/metrics in custom_objects, or compile it again.",
                      stacklevel=3)
        return False
    return True
