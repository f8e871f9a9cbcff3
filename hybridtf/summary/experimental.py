"""``tf.summary.experimental``: the default step and the scope helper for custom summary ops."""
from hybridtf.summary.state import get_step, set_step  # noqa: F401
from hybridtf.summary.summary_ops import summary_scope  # noqa: F401
