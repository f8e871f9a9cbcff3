"""``tf.nn``'s convolution and pooling variants: 1-D convolution and pooling, transposed,
depthwise and separable convolution.

Most are written with the 2-D ops: a 1-D op is its 2-D op over a height-1 image, a transposed
convolution is conv2d's input gradient, a separable convolution is a depthwise convolution
followed by a 1x1 convolution.  Only the depthwise convolution has kernels of its own.
"""
import operator

from hybridtf.api import array_ops, nn_ops
from hybridtf.eager.execute import as_tensor, binary_operands, execute1
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.registry import checks
from hybridtf.registry import depthwise as DW
from hybridtf.registry import nn as NN


def _single(op_name, value, what, default=None):
    """TF's int / [n] / [1, n, 1] forms of a 1-D stride, window size or dilation, as an int."""
    if value is None:
        value = default
    try:
        values = [operator.index(value)]
    except TypeError:
        values = checks.integers(op_name, value, what)
    if len(values) == 3:
        if values[0] != 1 or values[2] != 1:
            checks.fail(op_name, f"{what} {values} may not stride or pool over the batch or "
                        "channel dimension (entries 0 and 2 must be 1).")
        values = values[1:2]
    if len(values) != 1:
        checks.fail(op_name, f"{what} must be an int or a list of 1 or 3 ints, got {values}.")
    if values[0] < 1:
        checks.fail(op_name, f"{what} must be >= 1, got {values[0]}.")
    return values[0]


def _channels_last_1d(op_name, data_format):
    """Whether 1-D data is NWC (True) or NCW (False)."""
    if data_format in (None, "NWC"):
        return True
    if data_format == "NCW":
        return False
    checks.fail(op_name, f"data_format must be 'NWC' or 'NCW', got {data_format!r}.")


def _as_image(x, op_name, channels_last, what="input"):
    """[batch, width, channels] (or [batch, channels, width]) as an NHWC image of height 1."""
    if x.ndim != 3:
        checks.fail(op_name, f"{what} must be 3-D [batch, width, channels], got shape "
                    f"{x.shape.as_list()}.")
    if not channels_last:
        x = array_ops.transpose(x, [0, 2, 1])
    return array_ops.expand_dims(x, 1)


def _from_image(y, channels_last):
    y = array_ops.squeeze(y, [1])
    return y if channels_last else array_ops.transpose(y, [0, 2, 1])


# ---- 1-D convolution and pooling --------------------------------------------------------------
def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,
           name=None):  # noqa: A002
    """1-D convolution of [batch, width, in_channels] ``input`` with [width, in_channels,
    out_channels] ``filters``; ``stride`` and ``dilations`` are ints (or [n], [1, n, 1])."""
    channels_last = _channels_last_1d("conv1d", data_format)
    x, w = binary_operands("conv1d", input, filters)
    if w.ndim != 3:
        checks.fail("conv1d", f"filters must be 3-D [width, in_channels, out_channels], got "
                    f"shape {w.shape.as_list()}.")
    image = _as_image(x, "conv1d", channels_last)
    y = nn_ops.conv2d(image, array_ops.expand_dims(w, 0),
                      strides=(1, _single("conv1d", stride, "stride")), padding=padding,
                      dilations=(1, _single("conv1d", dilations, "dilations", 1)))
    return _from_image(y, channels_last)


def _pool1d(op_name, pool2d, input, ksize, strides, padding, data_format):  # noqa: A002
    channels_last = _channels_last_1d(op_name, data_format)
    image = _as_image(as_tensor(input), op_name, channels_last)
    y = pool2d(image, ksize=(1, _single(op_name, ksize, "ksize")),
               strides=(1, _single(op_name, strides, "strides")), padding=padding)
    return _from_image(y, channels_last)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """The maximum over each ``ksize`` window of [batch, width, channels] ``input``."""
    return _pool1d("max_pool1d", nn_ops.max_pool2d, input, ksize, strides, padding, data_format)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """The mean over each ``ksize`` window of [batch, width, channels] ``input`` ('SAME'
    padding averages the cells inside the input only)."""
    return _pool1d("avg_pool1d", nn_ops.avg_pool2d, input, ksize, strides, padding, data_format)


# ---- transposed convolution -------------------------------------------------------------------
def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",
                     dilations=None, name=None):  # noqa: A002
    """The transpose (gradient) of conv2d: NHWC ``input`` of [batch, height, width, in_channels]
    and ``filters`` of [height, width, output_channels, in_channels] give a tensor of
    ``output_shape`` [batch, height, width, output_channels], the shape of the input of the
    conv2d whose output has ``input``'s shape.  A TensorShape ``output_shape`` may leave the
    batch size unknown (None) when tracing."""
    nn_ops.check_data_format("conv2d_transpose", data_format)
    x, w = binary_operands("conv2d_transpose", input, filters)
    out = list(nn_ops.input_sizes_with_batch("conv2d_transpose", output_shape, "output_shape"))
    if len(out) != 4 or x.ndim != 4 or w.ndim != 4:
        checks.fail("conv2d_transpose", f"input must be 4-D NHWC, filters 4-D [height, width, "
                    f"output_channels, in_channels] and output_shape 4 ints; got input "
                    f"{x.shape.as_list()}, filters {w.shape.as_list()} and output_shape {out}.")
    if None not in (x.shape[3], w.shape[3]) and x.shape[3] != w.shape[3]:
        checks.fail("conv2d_transpose", f"input depth {x.shape[3]} (shape {x.shape.as_list()}) "
                    f"does not match the filters' last dimension {w.shape[3]} (shape "
                    f"{w.shape.as_list()}).")
    if None not in (w.shape[2],) and out[3] != w.shape[2]:
        checks.fail("conv2d_transpose", f"output_shape {out} must end in the filters' third "
                    f"dimension {w.shape[2]} (filters {w.shape.as_list()}).")
    attrs = nn_ops.conv_attrs("conv2d_transpose", strides, padding, dilations)
    expected = NN.conv_output_shape("conv2d_transpose", out, tuple(w.shape.as_list()), attrs)
    if any(None not in (a, b) and a != b for a, b in zip(x.shape.as_list(), expected)):
        checks.fail("conv2d_transpose", f"output_shape {out} is not a size whose convolution "
                    f"(strides {list(attrs['strides'])}, padding {attrs['padding']}) has the "
                    f"input's shape {x.shape.as_list()}: it gives {list(expected)}.")
    return nn_ops.conv2d_backprop_input(TensorShape(out), w, x, **attrs)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",
                     dilations=None, name=None):  # noqa: A002
    """The transpose of conv1d: [batch, width, in_channels] ``input`` and [width,
    output_channels, in_channels] ``filters`` give a tensor of ``output_shape`` [batch, width,
    output_channels]."""
    channels_last = _channels_last_1d("conv1d_transpose", data_format)
    x, w = binary_operands("conv1d_transpose", input, filters)
    out = checks.integers("conv1d_transpose", output_shape, "output_shape")
    if len(out) != 3 or w.ndim != 3:
        checks.fail("conv1d_transpose", f"filters must be 3-D [width, output_channels, "
                    f"in_channels] and output_shape 3 ints; got filters {w.shape.as_list()} and "
                    f"output_shape {out}.")
    if not channels_last:
        out = [out[0], out[2], out[1]]
    y = conv2d_transpose(_as_image(x, "conv1d_transpose", channels_last),
                         array_ops.expand_dims(w, 0), [out[0], 1, out[1], out[2]],
                         strides=(1, _single("conv1d_transpose", strides, "strides")),
                         padding=padding,
                         dilations=(1, _single("conv1d_transpose", dilations, "dilations", 1)))
    return _from_image(y, channels_last)


# ---- depthwise and separable convolution ------------------------------------------------------
def _depthwise_attrs(op_name, strides, padding, dilations):
    attrs = nn_ops.conv_attrs(op_name, strides, padding, dilations)
    if max(attrs["strides"]) > 1 and max(attrs["dilations"]) > 1:
        checks.fail(op_name, f"strides {list(attrs['strides'])} > 1 are not supported together "
                    f"with dilations {list(attrs['dilations'])} > 1; use one or the other.")
    return attrs


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None,
                     name=None):  # noqa: A002
    """Depthwise 2-D convolution: each channel of NHWC ``input`` convolved with its own
    ``channel_multiplier`` filters of ``filter`` [height, width, in_channels,
    channel_multiplier]; output channel ``c * channel_multiplier + m``."""
    nn_ops.check_data_format("depthwise_conv2d", data_format)
    x, w = binary_operands("depthwise_conv2d", input, filter)
    return execute1(DW.DEPTHWISE_CONV2D, [x, w],
                    _depthwise_attrs("depthwise_conv2d", strides, padding, dilations))


def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding,
                                    data_format="NHWC", dilations=None, name=None):
    """The gradient of depthwise_conv2d with respect to its input, of shape ``input_sizes``."""
    name = "depthwise_conv2d_backprop_input"
    nn_ops.check_data_format(name, data_format)
    w, dy = binary_operands(name, filter, out_backprop)
    attrs = _depthwise_attrs(name, strides, padding, dilations)
    attrs["input_shape"] = tuple(checks.integers(name, input_sizes, "input_sizes"))
    return execute1(DW.DEPTHWISE_CONV2D_BACKPROP_INPUT, [w, dy], attrs)


def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                                     data_format="NHWC", dilations=None,
                                     name=None):  # noqa: A002
    """The gradient of depthwise_conv2d with respect to its filter, of shape
    ``filter_sizes``."""
    name = "depthwise_conv2d_backprop_filter"
    nn_ops.check_data_format(name, data_format)
    x, dy = binary_operands(name, input, out_backprop)
    attrs = _depthwise_attrs(name, strides, padding, dilations)
    attrs["filter_shape"] = tuple(checks.integers(name, filter_sizes, "filter_sizes"))
    return execute1(DW.DEPTHWISE_CONV2D_BACKPROP_FILTER, [x, dy], attrs)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,
                     data_format=None, dilations=None, name=None):  # noqa: A002
    """A depthwise convolution with ``depthwise_filter`` [height, width, in_channels,
    channel_multiplier] followed by a 1x1 convolution with ``pointwise_filter`` [1, 1,
    in_channels * channel_multiplier, out_channels]."""
    pointwise = as_tensor(pointwise_filter)
    depthwise = as_tensor(depthwise_filter)
    shape = pointwise.shape.as_list()
    if len(shape) != 4 or shape[:2] != [1, 1]:
        checks.fail("separable_conv2d", f"pointwise_filter must be 4-D [1, 1, in_channels * "
                    f"channel_multiplier, out_channels], got shape {shape}.")
    if depthwise.ndim == 4 and None not in depthwise.shape[2:] and shape[2] is not None and \
            depthwise.shape[2] * depthwise.shape[3] != shape[2]:
        checks.fail("separable_conv2d", f"pointwise_filter's in-depth {shape[2]} must be "
                    f"in_channels * channel_multiplier = {depthwise.shape[2] * depthwise.shape[3]}"
                    f" of depthwise_filter {depthwise.shape.as_list()}.")
    y = depthwise_conv2d(input, depthwise, strides, padding, data_format=data_format,
                         dilations=dilations)
    return nn_ops.conv2d(y, pointwise, strides=1, padding="VALID")
