"""Keras's object descriptions: ``{"class_name": ..., "config": ...}`` for configurable objects,
a name for plain functions -- shared by losses and metrics."""
import inspect


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
