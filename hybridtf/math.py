"""``tf.math``."""
from hybridtf.api.math_ops import (  # noqa: F401
    abs, add, add_n, argmax, argmin, ceil, cos, cumprod, cumsum, div_no_nan, divide, equal, exp,
    expm1, floor, floordiv, floormod, greater, greater_equal, less, less_equal, log, log1p,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, mod, multiply, negative,
    not_equal, pow, reciprocal, reduce_all, reduce_any, reduce_logsumexp, reduce_max, reduce_mean,
    reduce_min, reduce_prod, reduce_std, reduce_sum, reduce_variance, round, rsqrt, sigmoid, sign,
    sin, softplus, sqrt, square, squared_difference, subtract, tanh, truediv)
from hybridtf.api.math_ops import (  # noqa: F401
    cumulative_logsumexp, digamma, erf, erfc, erfinv, is_finite, is_inf, is_nan, lgamma,
    polygamma)
from hybridtf.api.nn_ops import softmax, log_softmax  # noqa: F401
from hybridtf.api.segment_ops import (  # noqa: F401
    bincount, confusion_matrix, segment_max, segment_mean, segment_min, segment_prod, segment_sum,
    unsorted_segment_max, unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod,
    unsorted_segment_sqrt_n, unsorted_segment_sum)
from hybridtf.api.sort_ops import in_top_k, top_k  # noqa: F401
