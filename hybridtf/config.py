"""``tf.config``: run decorated functions eagerly (for debugging)."""
from hybridtf.graph.function import functions_run_eagerly, run_functions_eagerly  # noqa: F401
