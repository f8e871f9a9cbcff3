"""``tf.math``."""
from hybridtf.api.math_ops import (  # noqa: F401
    abs, add, add_n, argmax, argmin, ceil, cos, cumprod, cumsum, div_no_nan, divide, equal, exp,
    expm1, floor, floordiv, floormod, greater, greater_equal, less, less_equal, log, log1p,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, mod, multiply, negative,
    not_equal, pow, reciprocal, reduce_all, reduce_any, reduce_logsumexp, reduce_max, reduce_mean,
    reduce_min, reduce_prod, reduce_std, reduce_sum, reduce_variance, round, rsqrt, sigmoid, sign,
    sin, softplus, sqrt, square, squared_difference, subtract, tanh, truediv,
    unsorted_segment_sum)
from hybridtf.api.nn_ops import softmax, log_softmax  # noqa: F401

