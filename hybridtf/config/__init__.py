"""``tf.config``: devices and placement; run decorated functions eagerly (for debugging);
``tf.config.threading``; ``tf.config.experimental`` (memory growth, device details, synchronous
compilation, compile notices)."""
from hybridtf.config import experimental, threading  # noqa: F401
from hybridtf.config.devices import (  # noqa: F401
    LogicalDevice, PhysicalDevice, get_soft_device_placement, get_visible_devices,
    list_logical_devices, list_physical_devices, set_soft_device_placement, set_visible_devices)
from hybridtf.polymorphic_function import functions_run_eagerly, run_functions_eagerly  # noqa: F401
