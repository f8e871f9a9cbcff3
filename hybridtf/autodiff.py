"""``tf.autodiff``."""
from hybridtf.eager.backprop import GradientTape  # noqa: F401
