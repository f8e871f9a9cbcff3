"""Devices and the backends that own them.

A *backend* is a kind of memory and the kernels that compute on it: ``cpu`` (NumPy arrays on the
host) is the one built in.  A tensor or variable holds one array of one backend, and its
``device`` is that backend's device, found from the array's type -- tensors carry no device slot
of their own.  Eager execution runs an op on the backend that holds its inputs, with the op's
kernel for that backend (``hybridtf.registry.OpDef.kernel``); a backend that owns a new array
type (a GPU's device arrays) is added with ``register`` without touching any op.
"""
import numpy as np

from hybridtf.framework.errors import InvalidArgumentError


class Backend:
    """One backend: ``name`` (the key of an op's kernels, e.g. "cpu"), TF's full ``device_name``,
    the ``array_types`` it owns (subclasses included), and how its arrays are handled:
    ``asarray(value)`` gives the array its kernels take for a tensor's value, ``to_host(array)``
    a NumPy array (or NumPy scalar) with the same value, ``from_host(array)`` the reverse."""

    __slots__ = ("name", "device_name", "array_types", "asarray", "to_host", "from_host")

    def __init__(self, name, device_name, array_types, asarray, to_host, from_host):
        self.name = name
        self.device_name = device_name
        self.array_types = tuple(array_types)
        self.asarray = asarray
        self.to_host = to_host
        self.from_host = from_host

    def __repr__(self):
        return f"<Backend {self.name} ({self.device_name})>"


def _same(array):
    return array


# NumPy arrays, and the NumPy scalars that ufuncs return for 0-d results.
CPU = Backend("cpu", "/job:localhost/replica:0/task:0/device:CPU:0", (np.ndarray, np.generic),
              asarray=np.asarray, to_host=_same, from_host=_same)

_BACKENDS = {}    # name -> Backend
_BY_TYPE = {}     # array type -> Backend, filled as types are met
# The exact types of the CPU's arrays met so far: eager execution's fast paths test membership
# here (a set lookup) before calling NumPy ufuncs.
CPU_TYPES = set()


def register(backend):
    """Adds ``backend``: arrays of its ``array_types`` belong to it from now on."""
    if backend.name in _BACKENDS:
        raise ValueError(f"A backend named {backend.name!r} is already registered.")
    _BACKENDS[backend.name] = backend
    _forget_types()
    return backend


def unregister(backend):
    """Removes ``backend`` (registered with ``register``); its arrays belong to no backend."""
    if _BACKENDS.get(backend.name) is not backend:
        raise ValueError(f"{backend!r} is not registered.")
    del _BACKENDS[backend.name]
    _forget_types()


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


def backend_of_values(op_name, values):
    """The one backend holding every value of ``values`` (an op's inputs); the CPU when there
    are none.  Inputs on different devices are an InvalidArgumentError naming the op and the
    devices (hybridtf copies no tensor between devices implicitly)."""
    for value in values:
        if type(value) not in CPU_TYPES:
            break
    else:
        return CPU
    backend = backend_of(values[0])
    for value in values[1:]:
        if backend_of(value) is not backend:
            names = sorted({backend_of(v).device_name for v in values})
            raise InvalidArgumentError(
                None, op_name, f"{op_name}: its inputs are on different devices ("
                f"{', '.join(names)}); an op runs on one device: copy the inputs to one "
                "device first.")
    return backend


def to_host(value):
    """``value`` (a tensor's array) as a NumPy array or scalar."""
    if type(value) in CPU_TYPES:
        return value
    return backend_of(value).to_host(value)


register(CPU)
