"""Keras's object descriptions: ``{"class_name": ..., "config": ...}`` for configurable objects,
a name for plain functions -- shared by losses and metrics; and Keras 3's fuller form (with
``module`` and ``registered_name``), used by regularizers and constraints."""
import inspect

from hybridtf.keras import callable_serialization, object_registration


def serialize(obj, base, kind):
    """The description of ``obj``: a config dict for a ``base`` instance, a function's name."""
    if isinstance(obj, base):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    if callable(obj) and hasattr(obj, "__name__"):
        return obj.__name__
    raise ValueError(f"Cannot serialize {obj!r}: not a Keras {kind} or {kind} function.")


def deserialize(identifier, lookup, kind):
    """The object ``identifier`` describes: a new instance for a config dict, the entry of
    ``lookup`` (names -> classes or functions) for a name."""
    if isinstance(identifier, dict):
        cls = lookup.get(identifier.get("class_name"))
        if not inspect.isclass(cls):
            raise ValueError(f"Could not interpret {kind} identifier: {identifier}. Unknown "
                             f"class_name {identifier.get('class_name')!r}.")
        return cls.from_config(dict(identifier.get("config", {})))
    obj = lookup.get(identifier)
    if obj is None:
        raise ValueError(f"Could not interpret {kind} identifier: {identifier!r}. Known names: "
                         f"{', '.join(sorted(k for k in lookup if isinstance(k, str)))}.")
    return obj


def serialize_keras_object(obj, module, kind):
    """Keras 3's description of a configurable object or a function:
    ``{"module": ..., "class_name": ..., "config": ..., "registered_name": ...}``.

    Built-in objects name their Keras module (``module``, e.g. ``"keras.regularizers"``) and
    have no registered name; a user's class has its registered name (``"package>Name"``, or its
    class name when not registered).  A function is described by name (a lambda by its
    bytecode), as ``callable_serialization`` writes it.
    """
    if obj is None:
        return None
    if hasattr(obj, "get_config") and not inspect.isroutine(obj):
        cls = type(obj)
        built_in = cls.__module__.startswith("hybridtf.")
        return {"module": module if built_in else None, "class_name": cls.__name__,
                "config": obj.get_config(),
                "registered_name": None if built_in
                else object_registration.get_registered_name(cls)}
    if callable(obj):
        return callable_serialization.serialize_function(obj, kind)
    raise ValueError(f"Cannot serialize {obj!r} as a Keras {kind}: it is neither an object with "
                     "get_config() nor a function.")


def deserialize_keras_object(identifier, lookup, kind, custom_objects=None):
    """The object a ``serialize_keras_object`` dict (or a Keras 2 ``{"class_name", "config"}``
    dict) describes.  Classes are found by registered name (``custom_object_scope``, the
    registry, ``custom_objects``), then among ``lookup`` (the built-in names); functions as
    ``callable_serialization.deserialize_function`` finds them."""
    if not isinstance(identifier, dict) or "class_name" not in identifier:
        raise ValueError(f"Could not interpret {kind} identifier: {identifier!r}; expected a "
                         "dict with 'class_name' and 'config'.")
    class_name = identifier["class_name"]
    if class_name in ("function", callable_serialization.LAMBDA):
        return callable_serialization.deserialize_function(identifier, custom_objects,
                                                           layer_name=kind)
    registered = identifier.get("registered_name") or class_name
    cls = None
    for name in dict.fromkeys((registered, class_name)):
        cls = object_registration.get_registered_object(name, custom_objects)
        if cls is not None:
            break
    if cls is None:
        cls = lookup.get(class_name)
    if not inspect.isclass(cls):
        raise ValueError(f"Could not interpret {kind} identifier: unknown {kind} class "
                         f"{class_name!r}. Pass custom classes in custom_objects="
                         f"{{'{class_name}': {class_name}}} or register them with "
                         "@keras.saving.register_keras_serializable().")
    return cls.from_config(dict(identifier.get("config") or {}))
