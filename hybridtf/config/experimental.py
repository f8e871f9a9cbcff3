"""``tf.config.experimental``: TF's device functions kept there (memory growth, device details,
the older names of ``tf.config``'s), and hybridtf's switches for when traced functions compile
and for the line that says what compiles when compiling keeps the caller waiting."""
from ops.compile_notice import enabled as compile_notices  # noqa: F401
from ops.compile_notice import set_enabled as set_compile_notices  # noqa: F401

from hybridtf.config.devices import (  # noqa: F401
    get_device_details, get_memory_growth, get_visible_devices, list_logical_devices,
    list_physical_devices, set_memory_growth, set_visible_devices)
from hybridtf.execution_tiers import (  # noqa: F401
    set_synchronous_compilation, synchronous_compilation)
