"""Argument normalisation and output sizes shared by convolution and pooling layers."""
from hybridtf.keras import backend


def normalize_tuple(value, n, name, allow_zero=False):
    """An int or a sequence of ``n`` ints as a tuple of ``n`` ints, with a clear error."""
    if isinstance(value, int) and not isinstance(value, bool):
        values = (value,) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                             f"{value!r}") from None
        if len(values) != n or not all(isinstance(v, int) and not isinstance(v, bool)
                                       for v in values):
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                             f"{value!r}")
    smallest = 0 if allow_zero else 1
    if any(v < smallest for v in values):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers >= "
                         f"{smallest}. Received: {value!r}")
    return values


def normalize_padding(value):
    if not isinstance(value, str) or value.lower() not in ("valid", "same"):
        raise ValueError(f'The `padding` argument must be one of "valid", "same". Received: '
                         f"{value!r}")
    return value.lower()


def normalize_data_format(value):
    if value is None:
        value = backend.image_data_format()
    if not isinstance(value, str) or value.lower() not in ("channels_last", "channels_first"):
        raise ValueError(f'The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value!r}')
    return value.lower()


def output_length(input_length, window, padding, stride, dilation=1):
    """The output size along one spatial axis (None stays None)."""
    if input_length is None:
        return None
    if padding == "same":
        return -(-input_length // stride)
    effective = (window - 1) * dilation + 1
    return max(0, -(-(input_length - effective + 1) // stride))
