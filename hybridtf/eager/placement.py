"""Where an eager op runs, and the copies that takes: TF's placement (``framework.devices``).

An op runs on the device of the innermost ``tf.device`` scope, else on the device of an input
held off the CPU, else on the default device (the GPU when one is visible).  Inputs held
elsewhere are copied there.  With soft placement (TF's default), an op without a kernel for its
device -- or with string inputs, which never leave the host -- runs on the CPU instead, logged
once per op on the "hybridtf.placement" logger; its outputs stay on the CPU until an op on
another device copies them.  Ops that read only their inputs' shapes run on the CPU without
copying the inputs.
"""
import logging

import numpy as np

from hybridtf.framework import cuda_device  # noqa: F401 - registers the GPU when one is present
from hybridtf.framework import devices
from hybridtf.framework.errors import InvalidArgumentError, ResourceExhaustedError

_CPU = devices.CPU
_CPU_TYPES = devices.CPU_TYPES
LOGGER = logging.getLogger("hybridtf.placement")
_SOFT_PLACED = set()   # (op name, device) pairs logged already


def place(op, values):
    """(backend, arrays): the backend ``op`` runs on and its input ``values`` (tensors'
    arrays) there."""
    scoped = devices.requested_device() is not None
    target = devices.placement_target() if scoped else _device_of(values)
    if target is not _CPU and (not op.has_kernel(target) or host_only(values)):
        if scoped and not devices.PLACEMENT.soft:
            raise InvalidArgumentError(
                None, op.name, f"{op.name}: cannot run on {target.device_name}: it has no kernel "
                "there (or its inputs are strings, which stay on the host). Run it under "
                "tf.device('/CPU:0'), or enable soft placement "
                "(tf.config.set_soft_device_placement(True)).")
        if (op.name, target.name) not in _SOFT_PLACED:
            _SOFT_PLACED.add((op.name, target.name))
            LOGGER.info("%s has no kernel for %s (or has string inputs); it runs on the CPU, "
                        "with its inputs copied there.", op.name, target.device_name)
        target = _CPU
    if devices.PLACEMENT.log:
        print(f"Executing op {op.name} in device {target.device_name}")
    if target is _CPU and op.shape_only:
        return target, [_shape_stand_in(v) for v in values]
    return target, [devices.on_backend(target, v) for v in values]


def _device_of(values):
    for value in values:
        if type(value) not in _CPU_TYPES:
            return devices.backend_of(value)
    return devices.default_backend()


def host_only(values):
    """Whether ``values`` (arrays) hold strings, which never leave the host."""
    return any(getattr(v, "dtype", None) == object for v in values)


def _shape_stand_in(value):
    # An op reading only shapes and dtypes gets a zero-strided host array of the right shape.
    if type(value) in _CPU_TYPES:
        return np.asarray(value)
    return np.broadcast_to(np.zeros((), value.dtype), value.shape)


def run_kernel(op, kernel, backend, arrays, attrs):
    """``kernel.run(arrays, attrs)`` on a device other than the CPU, its running out of memory
    raised as TF raises it (ResourceExhaustedError naming the op and the device)."""
    try:
        return kernel.run(arrays, attrs)
    except Exception as error:
        if backend.out_of_memory(error):
            shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
            raise ResourceExhaustedError(
                None, op.name, f"{op.name}: out of memory on {backend.device_name} for inputs "
                f"of shapes {shapes} ({error}). Use smaller batches, or free tensors that are "
                "no longer needed.") from None
        raise
