"""Devices and the backends that own them, and where ops are placed.

A *backend* is a kind of memory and the kernels that compute on it: ``cpu`` (NumPy arrays on the
host) is the one built in; ``cuda`` (Numba device arrays on an NVIDIA GPU) registers itself
when a GPU is present (``framework.cuda_device``).  A tensor or variable holds one array of one
backend, and its ``device`` is that backend's device, found from the array's type -- tensors
carry no device slot of their own.  A backend that owns a new array type is added with
``register`` without touching any op.

Placement follows TF: an op runs on the device named by the innermost ``tf.device`` scope, else
on a GPU when one of its inputs is there, else on the default device -- the first visible GPU
when there is one, the CPU otherwise.  Inputs held elsewhere are copied to that device.  An op
without a kernel for the device runs on the CPU instead when soft placement is on (TF's default;
``eager.placement`` does this).  ``PLACEMENT.cpu_only`` tells eager execution's fast paths that
everything runs on the CPU without asking: no other device is visible, soft placement is on and
placements are not logged.
"""
import re
import threading

import numpy as np

from hybridtf.framework.errors import InvalidArgumentError


# ---- device names -------------------------------------------------------------------------------
# TF's device strings: "/job:localhost/replica:0/task:0/device:GPU:0", "/device:GPU:0", "/GPU:0",
# "GPU:0", "gpu:0", "/cpu:0", "/job:localhost" (no device named), "" (the same).
_DEVICE_STRING = re.compile(
    r"^(?:/job:[A-Za-z0-9_]+)?(?:/replica:\d+)?(?:/task:\d+)?"
    r"(?:(?:/device:|/|^)(?P<type>[A-Za-z_]+):(?P<index>\d+|\*))?$")


def parse(device_string):
    """(device type in upper case, index or None) of a TF device string; (None, None) when it
    names no device.  ValueError for a string that is not a device string."""
    match = _DEVICE_STRING.match(device_string or "")
    if match is None:
        raise ValueError(f"Cannot parse device specification {device_string!r}: expected a "
                         "device such as '/GPU:0', '/CPU:0' or "
                         "'/job:localhost/replica:0/task:0/device:GPU:0'.")
    if match.group("type") is None:
        return None, None
    index = match.group("index")
    return match.group("type").upper(), None if index == "*" else int(index)


class Backend:
    """One backend: ``name`` (the key of an op's kernels, e.g. "cpu"), TF's full ``device_name``,
    the ``array_types`` it owns (subclasses included), and how its arrays are handled:
    ``asarray(value)`` gives the array its kernels take for a tensor's value, ``to_host(array)``
    a NumPy array (or NumPy scalar) with the same value, ``from_host(array)`` the reverse,
    ``copy(array)`` a new array of this backend with the same value; ``out_of_memory(error)``
    whether an exception a kernel raised says the device ran out of memory.
    ``device_type`` ("CPU", "GPU") and ``index`` are read from the device name;
    ``details()`` returns what ``tf.config.experimental.get_device_details`` reports (a call:
    asking a GPU starts its driver)."""

    __slots__ = ("name", "device_name", "array_types", "asarray", "to_host", "from_host",
                 "copy", "out_of_memory", "device_type", "index", "details")

    def __init__(self, name, device_name, array_types, asarray, to_host, from_host,
                 copy=None, out_of_memory=None, details=None):
        self.name = name
        self.device_name = device_name
        self.array_types = tuple(array_types)
        self.asarray = asarray
        self.to_host = to_host
        self.from_host = from_host
        self.copy = copy or (lambda array: from_host(to_host(array)))
        self.out_of_memory = out_of_memory or (lambda error: isinstance(error, MemoryError))
        self.device_type, self.index = parse(device_name)
        self.details = details or dict

    def __repr__(self):
        return f"<Backend {self.name} ({self.device_name})>"


def _same(array):
    return array


# NumPy arrays, and the NumPy scalars that ufuncs return for 0-d results.
CPU = Backend("cpu", "/job:localhost/replica:0/task:0/device:CPU:0", (np.ndarray, np.generic),
              asarray=np.asarray, to_host=_same, from_host=_same, copy=np.array)

_BACKENDS = {}    # name -> Backend
_BY_TYPE = {}     # array type -> Backend, filled as types are met
# The exact types of the CPU's arrays met so far: eager execution's fast paths test membership
# here (a set lookup) before calling NumPy ufuncs.
CPU_TYPES = set()


def register(backend):
    """Adds ``backend``: arrays of its ``array_types`` belong to it from now on, and it is
    visible (ops may be placed on it)."""
    if backend.name in _BACKENDS:
        raise ValueError(f"A backend named {backend.name!r} is already registered.")
    _BACKENDS[backend.name] = backend
    _forget_types()
    _update_placement()
    return backend


def unregister(backend):
    """Removes ``backend`` (registered with ``register``); its arrays belong to no backend."""
    if _BACKENDS.get(backend.name) is not backend:
        raise ValueError(f"{backend!r} is not registered.")
    del _BACKENDS[backend.name]
    PLACEMENT.hidden.discard(backend.name)
    _forget_types()
    _update_placement()


def _forget_types():
    _BY_TYPE.clear()
    CPU_TYPES.clear()
    CPU_TYPES.update((np.ndarray, *(t for t in set(np.sctypeDict.values())
                                    if issubclass(t, np.generic))))
    for t in CPU_TYPES:
        _BY_TYPE[t] = CPU


def backends():
    """The registered backends, by name."""
    return dict(_BACKENDS)


def backend_of(value):
    """The backend owning ``value`` (a tensor's array); TypeError if no backend owns its type."""
    backend = _BY_TYPE.get(type(value))
    if backend is None:
        backend = _BY_TYPE[type(value)] = _owner(type(value))
    return backend


def _owner(array_type):
    # The most derived registered type wins: a backend may own a subclass of np.ndarray.
    for base in array_type.__mro__:
        for backend in _BACKENDS.values():
            if base in backend.array_types:
                return backend
    raise TypeError(f"No device holds arrays of type {array_type.__name__}; registered "
                    f"devices: {', '.join(b.device_name for b in _BACKENDS.values())}.")


def to_host(value):
    """``value`` (a tensor's array) as a NumPy array or scalar."""
    if type(value) in CPU_TYPES:
        return value
    return backend_of(value).to_host(value)


# ---- placement --------------------------------------------------------------------------------
class _Placement:
    """Process-wide placement settings (``tf.config``'s): the backends hidden by
    ``set_visible_devices``, soft placement, placement logging, and ``cpu_only`` (module
    docstring), kept up to date by ``_update_placement``."""

    def __init__(self):
        self.hidden = set()
        self.soft = True
        self.log = False
        self.cpu_only = True


PLACEMENT = _Placement()


class _Scopes(threading.local):
    """Each thread's ``tf.device`` scopes, innermost last: (device type, index) or None (a
    ``tf.device(None)`` scope, which names no device)."""

    def __init__(self):
        self.stack = []


_SCOPES = _Scopes()


def visible_backends():
    """The backends ops may be placed on, the CPU first."""
    return [b for name, b in _BACKENDS.items() if name not in PLACEMENT.hidden]


def default_backend():
    """Where an op goes when nothing else decides: the first visible GPU, else the CPU."""
    for backend in visible_backends():
        if backend.device_type == "GPU":
            return backend
    return CPU


def set_hidden(names):
    """Hides the backends named (``tf.config.set_visible_devices``); the CPU stays visible."""
    unknown = set(names) - set(_BACKENDS)
    if unknown or CPU.name in names:
        raise ValueError(f"Cannot hide {sorted(unknown | ({CPU.name} & set(names)))}: the CPU "
                         "stays visible, and only registered devices can be hidden.")
    PLACEMENT.hidden = set(names)
    _update_placement()


def set_soft_placement(enabled):
    PLACEMENT.soft = bool(enabled)
    _update_placement()


def set_log_placement(enabled):
    PLACEMENT.log = bool(enabled)
    _update_placement()


def _update_placement():
    PLACEMENT.cpu_only = (PLACEMENT.soft and not PLACEMENT.log
                          and all(b is CPU for b in visible_backends()))


class device:  # noqa: N801 - TF's name
    """``tf.device(device_name)``: ops created or run inside the scope are placed on that device
    (TF's device strings: "/GPU:0", "/CPU:0", "/job:localhost/replica:0/task:0/device:GPU:0").
    ``None`` clears the enclosing scopes' choice; a string naming no device keeps it.  A device
    that does not exist is replaced by the default one while soft placement is on (TF's
    default), and is an error when an op runs there otherwise."""

    def __init__(self, device_name):
        if device_name is not None and not isinstance(device_name, str):
            raise TypeError(f"tf.device: device_name must be a string or None, got "
                            f"{type(device_name).__name__} {device_name!r}.")
        self._spec = None if device_name is None else parse(device_name)

    def __enter__(self):
        stack = _SCOPES.stack
        spec = self._spec
        if spec is not None and spec[0] is None:   # names no device: the enclosing choice holds
            spec = stack[-1] if stack else None
        # (PLACEMENT.cpu_only needs no update: while it holds, every scope resolves to the CPU.)
        stack.append(spec)
        return self

    def __exit__(self, *exc_info):
        _SCOPES.stack.pop()
        return False


def requested_device():
    """The (device type, index) of this thread's innermost ``tf.device`` scope, or None."""
    stack = _SCOPES.stack
    return stack[-1] if stack else None


def backend_for(spec):
    """The visible backend matching ``spec`` ((device type, index or None)), or None."""
    device_type, index = spec
    for backend in visible_backends():
        if backend.device_type == device_type and (index is None or backend.index == index):
            return backend
    return None


def placement_target():
    """The backend an op without device inputs goes to in this thread: the ``tf.device`` scope's
    device (the default one in its place, if it does not exist and soft placement is on), else
    the default device.  InvalidArgumentError for a device that does not exist when soft
    placement is off."""
    spec = requested_device()
    if spec is None:
        return default_backend()
    backend = backend_for(spec)
    if backend is not None:
        return backend
    if PLACEMENT.soft:
        return default_backend()
    type_name, index = spec
    raise InvalidArgumentError(
        None, None, f"Could not satisfy device specification '/device:{type_name}:"
        f"{'*' if index is None else index}': no such device is visible (the devices are "
        f"{', '.join(b.device_name for b in visible_backends())}). Enable soft placement "
        "(tf.config.set_soft_device_placement(True)) or name a device that exists.")


def on_backend(backend, value):
    """``value`` (a tensor's array) as an array of ``backend``, copied there if it is held
    elsewhere."""
    if backend_of(value) is backend:
        return backend.asarray(value)
    return backend.from_host(to_host(value))


def placed(array):
    """``array`` (a new host value: a constant, a variable's initial value) on the device new
    values go to in this thread: the ``tf.device`` scope's, else the default device.  Strings
    stay on the host."""
    if PLACEMENT.cpu_only or array.dtype == object:
        return array
    target = placement_target()
    return array if target is CPU else target.from_host(array)


register(CPU)
