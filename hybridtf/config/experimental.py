"""``tf.config.experimental``: hybridtf's switches for when traced functions compile, and for
the line that says what compiles when compiling keeps the caller waiting."""
from ops.compile_notice import enabled as compile_notices  # noqa: F401
from ops.compile_notice import set_enabled as set_compile_notices  # noqa: F401

from hybridtf.execution_tiers import (  # noqa: F401
    set_synchronous_compilation, synchronous_compilation)
