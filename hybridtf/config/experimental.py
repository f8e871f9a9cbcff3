"""``tf.config.experimental``: hybridtf's switch for when traced functions compile."""
from hybridtf.execution_tiers import (  # noqa: F401
    set_synchronous_compilation, synchronous_compilation)
