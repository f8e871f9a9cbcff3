"""``tf.config``'s devices: which exist, which ops may use, and how placement behaves."""
from collections import namedtuple

from hybridtf.framework import devices

PhysicalDevice = namedtuple("PhysicalDevice", "name device_type")
LogicalDevice = namedtuple("LogicalDevice", "name device_type")

_MEMORY_GROWTH = {}   # physical device name -> the flag set


def _physical(backend):
    return PhysicalDevice(f"/physical_device:{backend.device_type}:{backend.index}",
                          backend.device_type)


def _backend_of_physical(device):
    for backend in devices.backends().values():
        if _physical(backend) == tuple(device):
            return backend
    raise ValueError(f"Unrecognized device: {device!r}; the physical devices are "
                     f"{[_physical(b) for b in devices.backends().values()]}.")


def _matching(backends, device_type):
    if device_type is None:
        return backends
    return [b for b in backends if b.device_type == device_type.upper()]


def list_physical_devices(device_type=None):
    """The physical devices of ``device_type`` ("CPU", "GPU"; all when None), visible or not.
    hybridtf uses the first GPU of the machine."""
    return [_physical(b) for b in _matching(list(devices.backends().values()), device_type)]


def list_logical_devices(device_type=None):
    """The devices ops can be placed on (the visible physical ones), as ``LogicalDevice`` s."""
    return [LogicalDevice(f"/device:{b.device_type}:{b.index}", b.device_type)
            for b in _matching(devices.visible_backends(), device_type)]


def get_visible_devices(device_type=None):
    """The visible physical devices of ``device_type`` (all when None)."""
    return [_physical(b) for b in _matching(devices.visible_backends(), device_type)]


def set_visible_devices(devices_, device_type=None):
    """Makes only ``devices_`` (a ``PhysicalDevice`` or a list of them) visible among those of
    ``device_type`` (all types when None): the others take no ops.  The CPU must stay visible.
    Tensors already on a hidden device keep their values."""
    if isinstance(devices_, PhysicalDevice):
        devices_ = [devices_]
    keep = {_backend_of_physical(d).name for d in devices_}
    candidates = _matching(list(devices.backends().values()), device_type)
    if device_type is not None and any(
            _backend_of_physical(d).device_type != device_type.upper() for d in devices_):
        raise ValueError(f"set_visible_devices: every device must be of type {device_type}, "
                         f"got {list(devices_)}.")
    hidden = set(devices.PLACEMENT.hidden)
    for backend in candidates:
        (hidden.discard if backend.name in keep else hidden.add)(backend.name)
    if devices.CPU.name in hidden:
        raise ValueError("set_visible_devices: the CPU must stay visible; pass it among the "
                         "devices (tf.config.list_physical_devices('CPU')).")
    devices.set_hidden(hidden)


def set_soft_device_placement(enabled):
    """With True (the default), an op placed on a device that has no kernel for it, or on a
    device that does not exist, runs on an available device (the CPU) instead of failing."""
    devices.set_soft_placement(enabled)


def get_soft_device_placement():
    return devices.PLACEMENT.soft


def set_memory_growth(device, enable):
    """Recorded for TF compatibility: hybridtf allocates GPU memory as tensors need it (Numba's
    allocator), which is TF's memory growth, whatever the flag."""
    _backend_of_physical(device)
    _MEMORY_GROWTH[tuple(device)] = bool(enable)


def get_memory_growth(device):
    _backend_of_physical(device)
    return _MEMORY_GROWTH.get(tuple(device), False)


def get_device_details(device):
    """A GPU's "device_name" and "compute_capability" (empty for the CPU), as TF reports."""
    return _backend_of_physical(device).details()
