"""``tf.linalg``."""
from hybridtf.api.array_ops import eye  # noqa: F401
from hybridtf.api.math_ops import matmul, tensordot  # noqa: F401
