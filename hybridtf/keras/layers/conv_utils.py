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


def normalize_padding(value, allowed=("valid", "same")):
    """``value`` lower-cased, one of ``allowed`` (Conv1D also allows "causal")."""
    if not isinstance(value, str) or value.lower() not in allowed:
        names = ", ".join(f'"{name}"' for name in allowed)
        raise ValueError(f"The `padding` argument must be one of {names}. Received: {value!r}")
    return value.lower()


def normalize_data_format(value):
    if value is None:
        value = backend.image_data_format()
    if not isinstance(value, str) or value.lower() not in ("channels_last", "channels_first"):
        raise ValueError(f'The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value!r}')
    return value.lower()


def output_length(input_length, window, padding, stride, dilation=1):
    """The output size along one spatial axis (None stays None); "causal" pads like "same",
    all before the input."""
    if input_length is None:
        return None
    if padding in ("same", "causal"):
        return -(-input_length // stride)
    effective = (window - 1) * dilation + 1
    return max(0, -(-(input_length - effective + 1) // stride))


def transposed_output_length(input_length, window, padding, output_padding, stride, dilation=1):
    """The output size along one spatial axis of a transposed convolution (None stays None):
    the input size of the convolution whose output has ``input_length`` (``output_padding``
    None: the smallest such size for "valid", ``input_length * stride`` for "same")."""
    if input_length is None:
        return None
    effective = (window - 1) * dilation + 1
    if output_padding is None:
        if padding == "valid":
            return input_length * stride + max(effective - stride, 0)
        return input_length * stride
    pad = effective // 2 if padding == "same" else 0
    return (input_length - 1) * stride + effective - 2 * pad + output_padding


def channels_last_perm(rank):
    """The transpose that moves the channels of a channels_first tensor with ``rank``
    spatial axes last."""
    return [0] + list(range(2, rank + 2)) + [1]


def channels_first_perm(rank):
    """The inverse of ``channels_last_perm``."""
    return [0, rank + 1] + list(range(1, rank + 1))
