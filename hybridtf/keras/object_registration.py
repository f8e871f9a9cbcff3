"""Custom objects for loading models: ``keras.saving.register_keras_serializable``,
``custom_object_scope``, and whether loading is in safe mode.

Loading a model finds a class or function by its name in, in this order: the active
``custom_object_scope`` s (innermost first), the objects registered with
``register_keras_serializable`` (or added to ``get_custom_objects()``), and the
``custom_objects`` argument of the loading function.  A registered object is saved under its
registered name, ``"<package>>Name"``.

Safe mode (``load_model(..., safe_mode=True)``, the default) refuses to run code from the file
itself -- a ``Lambda`` layer's Python bytecode -- and to use callables the file names but the
user did not make known (built in, registered, or passed in ``custom_objects``).
"""
import inspect
import threading

_GLOBAL_CUSTOM_OBJECTS = {}      # registered name -> object
_GLOBAL_CUSTOM_NAMES = {}        # id(object) -> registered name


class _ScopeState(threading.local):
    def __init__(self):
        self.custom_objects = []     # dicts of the active custom_object_scopes, outermost first
        self.safe_mode = None        # set by SafeModeScope while a model loads


_state = _ScopeState()


def register_keras_serializable(package="Custom", name=None):
    """A decorator that registers a class or function under ``"<package>>name"`` (``name``
    defaults to its ``__name__``), so that models using it load without ``custom_objects``
    (``tf.keras.saving.register_keras_serializable``)."""

    def decorator(obj):
        registered_name = f"{package}>{name or getattr(obj, '__name__', '')}"
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError(f"Cannot register {obj.__name__} as {registered_name!r}: a class "
                             "must have a get_config() method to be registered.")
        if registered_name in _GLOBAL_CUSTOM_OBJECTS:
            raise ValueError(f"{registered_name!r} has already been registered to "
                             f"{_GLOBAL_CUSTOM_OBJECTS[registered_name]!r}; choose another "
                             "package or name.")
        if id(obj) in _GLOBAL_CUSTOM_NAMES:
            raise ValueError(f"{obj!r} has already been registered as "
                             f"{_GLOBAL_CUSTOM_NAMES[id(obj)]!r}.")
        _GLOBAL_CUSTOM_OBJECTS[registered_name] = obj
        _GLOBAL_CUSTOM_NAMES[id(obj)] = registered_name
        return obj
    return decorator


def get_registered_name(obj):
    """The name ``obj`` was registered under, or its ``__name__``."""
    return _GLOBAL_CUSTOM_NAMES.get(id(obj), getattr(obj, "__name__", None))


def get_custom_objects():
    """The global dict of registered objects (name -> object); entries added to it are found
    when loading, like registered ones."""
    return _GLOBAL_CUSTOM_OBJECTS


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The class or function called ``name`` in the active scopes, the registry,
    ``custom_objects`` or ``module_objects`` (in that order); None when there is none."""
    for scope in reversed(_state.custom_objects):
        if name in scope:
            return scope[name]
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


class CustomObjectScope:
    """``with custom_object_scope({"MyLayer": MyLayer}):`` makes the given objects known to
    every loading function inside the block."""

    def __init__(self, *custom_objects):
        self._objects = {}
        for objects in custom_objects:
            if objects is not None:
                self._objects.update(objects)

    def __enter__(self):
        _state.custom_objects.append(self._objects)
        return self

    def __exit__(self, *exc_info):
        _state.custom_objects.pop()


custom_object_scope = CustomObjectScope


class SafeModeScope:
    """Sets safe mode (True or False) for the loading done inside the block."""

    def __init__(self, safe_mode=True):
        self._safe_mode = safe_mode
        self._outer = None

    def __enter__(self):
        self._outer = _state.safe_mode
        _state.safe_mode = self._safe_mode
        return self

    def __exit__(self, *exc_info):
        _state.safe_mode = self._outer


def in_safe_mode():
    """Whether the loading under way is in safe mode: True unless a ``SafeModeScope``
    (``load_model(..., safe_mode=False)``) says otherwise -- unsafe loading is never the
    default."""
    return _state.safe_mode is not False
