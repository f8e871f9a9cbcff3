"""``tf.config``: run decorated functions eagerly (for debugging); ``tf.config.threading``;
``tf.config.experimental`` (synchronous compilation, compile notices)."""
from hybridtf.config import experimental, threading  # noqa: F401
from hybridtf.polymorphic_function import functions_run_eagerly, run_functions_eagerly  # noqa: F401
