"""Depthwise convolution ops: depthwise_conv2d and its input and filter gradients.

Filters are [height, width, in_channels, channel_multiplier]; input channel c with multiplier
slice m gives output channel c * multiplier + m.  Attributes as conv2d's: ``strides``,
``dilations`` ((h, w) pairs) and ``padding`` ('SAME' or 'VALID'); the gradients add
``input_shape`` or ``filter_shape``.
"""
from ops import nn as kernels

from hybridtf.registry import OpDef, Spec, checks, register
from hybridtf.registry.nn import backprop_input_shape, check_conv_pair, conv_output_shape
from hybridtf.registry.public_ops import execute as EX


def _output_shape(name, x_shape, w_shape, attrs):
    n, h, w, _ = conv_output_shape(name, x_shape, w_shape, attrs)
    channels, multiplier = w_shape[2], w_shape[3]
    depth = None if None in (channels, multiplier) else channels * multiplier
    return (n, h, w, depth)


def _check_out_backprop(name, dy, expected):
    if len(dy.shape) != 4 or any(None not in (a, b) and a != b
                                 for a, b in zip(dy.shape, expected)):
        checks.fail(name, f"out_backprop has shape {checks.fmt_shape(dy.shape)} but the depthwise "
                    f"convolution's output shape is {checks.fmt_shape(expected)}.")


def _conv_attrs(attrs, **extra):
    out = {"strides": attrs["strides"], "padding": attrs["padding"],
           "dilations": attrs["dilations"]}
    out.update(extra)
    return out


def _args(attrs):
    return attrs["strides"], attrs["padding"], attrs["dilations"]


def _shape(tensor):
    return tuple(tensor.shape.as_list())


# ---- forward ------------------------------------------------------------------------------------
def _forward_infer(specs, attrs):
    x, w = specs
    check_conv_pair("depthwise_conv2d", x.shape, w.shape, x.dtype, w.dtype)
    return [Spec(_output_shape("depthwise_conv2d", x.shape, w.shape, attrs), x.dtype)]


def _forward_grad(record, grads):
    x, w = record.inputs
    g = grads[0]
    a = record.attrs
    return (EX.execute1(DEPTHWISE_CONV2D_BACKPROP_INPUT, [w, g],
                        _conv_attrs(a, input_shape=_shape(x))),
            EX.execute1(DEPTHWISE_CONV2D_BACKPROP_FILTER, [x, g],
                        _conv_attrs(a, filter_shape=_shape(w))))


DEPTHWISE_CONV2D = register(OpDef(
    "depthwise_conv2d", "opaque",
    {"cpu": lambda arrays, attrs: kernels.depthwise_conv2d(arrays[0], arrays[1], *_args(attrs))},
    _forward_infer, _forward_grad))


# ---- gradient with respect to the input ---------------------------------------------------------
def _backprop_input_infer(specs, attrs):
    w, dy = specs
    name = "depthwise_conv2d_backprop_input"
    x_shape = tuple(attrs["input_shape"])
    check_conv_pair(name, x_shape, w.shape, w.dtype, dy.dtype)
    _check_out_backprop(name, dy, _output_shape(name, x_shape, w.shape, attrs))
    return [Spec(x_shape, w.dtype)]


def _backprop_input_grad(record, grads):
    w, dy = record.inputs
    g = grads[0]
    a = record.attrs
    return (EX.execute1(DEPTHWISE_CONV2D_BACKPROP_FILTER, [g, dy],
                        _conv_attrs(a, filter_shape=_shape(w))),
            EX.execute1(DEPTHWISE_CONV2D, [g, w], _conv_attrs(a)))


DEPTHWISE_CONV2D_BACKPROP_INPUT = register(OpDef(
    "depthwise_conv2d_backprop_input", "opaque",
    {"cpu": lambda arrays, attrs: kernels.depthwise_conv2d_backprop_input(
        backprop_input_shape(attrs, arrays[1]), arrays[0], arrays[1], *_args(attrs))},
    _backprop_input_infer, _backprop_input_grad))


# ---- gradient with respect to the filter --------------------------------------------------------
def _backprop_filter_infer(specs, attrs):
    x, dy = specs
    name = "depthwise_conv2d_backprop_filter"
    w_shape = tuple(attrs["filter_shape"])
    check_conv_pair(name, x.shape, w_shape, x.dtype, dy.dtype)
    _check_out_backprop(name, dy, _output_shape(name, x.shape, w_shape, attrs))
    return [Spec(w_shape, x.dtype)]


def _backprop_filter_grad(record, grads):
    x, dy = record.inputs
    g = grads[0]
    a = record.attrs
    return (EX.execute1(DEPTHWISE_CONV2D_BACKPROP_INPUT, [g, dy],
                        _conv_attrs(a, input_shape=_shape(x))),
            EX.execute1(DEPTHWISE_CONV2D, [x, g], _conv_attrs(a)))


DEPTHWISE_CONV2D_BACKPROP_FILTER = register(OpDef(
    "depthwise_conv2d_backprop_filter", "opaque",
    {"cpu": lambda arrays, attrs: kernels.depthwise_conv2d_backprop_filter(
        arrays[0], tuple(attrs["filter_shape"]), arrays[1], *_args(attrs))},
    _backprop_filter_infer, _backprop_filter_grad))
