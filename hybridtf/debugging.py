"""``tf.debugging``: assertions, ``check_numerics``, ``is_numeric_tensor`` and the logging of
where ops run."""
from hybridtf.api.check_ops import (  # noqa: F401
    Assert, assert_all_finite, assert_equal, assert_greater, assert_greater_equal,
    assert_integer, assert_less, assert_less_equal, assert_near, assert_negative,
    assert_non_negative, assert_non_positive, assert_none_equal, assert_positive, assert_rank,
    assert_rank_at_least, assert_rank_in, assert_scalar, assert_shapes, assert_type,
    check_numerics, is_numeric_tensor)
from hybridtf.framework import devices as _devices


def set_log_device_placement(enabled):
    """With True, every eager op prints the device it runs on (TF's "Executing op ... in device
    ...")."""
    _devices.set_log_placement(enabled)


def get_log_device_placement():
    return _devices.PLACEMENT.log
