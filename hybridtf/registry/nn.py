"""Neural-network ops: softmax, cross-entropies, conv2d, pooling, bias_add."""
import numpy as np

from ops import elementwise, reference
from ops import nn as kernels
from ops.cuda import conv as cuda_conv
from ops.cuda import elementwise as cuda_elementwise
from ops.cuda import nn as cuda_logits
from ops.cuda import pooling as cuda_pooling

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry.public_ops import nn_ops as N
from hybridtf.registry import Kernel, OpDef, Spec, checks, register
from hybridtf.registry.array import check_indices

FLOATS = ("float32", "float64")


def _float_input(op_name, spec, what):
    checks.allowed_dtype(op_name, spec.dtype, FLOATS, what)


# ---- softmax ------------------------------------------------------------------------------------
def _last_axis_infer(name):
    def infer(specs, attrs):
        x, = specs
        _float_input(name, x, "logits")
        if len(x.shape) == 0:
            checks.fail(name, "logits must have rank >= 1, got a scalar.")
        return [Spec(x.shape, x.dtype)]
    return infer


def softmax_backprop(y, g):
    """The gradient through y = softmax(x) along the last axis, given dL/dy = g."""
    return y * (g - M.reduce_sum(g * y, axis=-1, keepdims=True))


def _softmax_grad(record, grads):
    return (softmax_backprop(record.outputs[0], grads[0]),)


def _log_softmax_grad(record, grads):
    y = record.outputs[0]
    g = grads[0]
    return (g - M.exp(y) * M.reduce_sum(g, axis=-1, keepdims=True),)


def _softmax_op(name, log, grad):
    cpu, cuda = getattr(kernels, name), getattr(cuda_logits, name)
    return register(OpDef(
        name, "opaque",
        {"cpu": Kernel(lambda arrays, attrs: cpu(arrays[0]),
                       reference=lambda arrays, attrs: reference.softmax(arrays[0], log)),
         "cuda": lambda arrays, attrs: cuda(arrays[0])},
        _last_axis_infer(name), grad))


SOFTMAX = _softmax_op("softmax", False, _softmax_grad)
LOG_SOFTMAX = _softmax_op("log_softmax", True, _log_softmax_grad)


# ---- cross-entropies ----------------------------------------------------------------------------
# Both ops output (loss, probs): probs = softmax(logits) is what the gradient needs, and having it
# as an output lets the rule stay differentiable (second-order gradients flow through probs).
def _sparse_xent_infer(specs, attrs):
    logits, labels = specs
    name = "sparse_softmax_cross_entropy_with_logits"
    _float_input(name, logits, "logits")
    if labels.dtype.kind not in "iu":
        raise TypeError(f"{name}: labels must be int32 or int64, got "
                        f"{checks.dtype_name(labels.dtype)}.")
    if len(logits.shape) != 2 or len(labels.shape) != 1 or (
            None not in (logits.shape[0], labels.shape[0]) and logits.shape[0] != labels.shape[0]):
        checks.fail(name, f"logits must be [batch, classes] and labels [batch]; got "
                    f"{checks.fmt_shape(logits.shape)} and {checks.fmt_shape(labels.shape)}.")
    return [Spec(labels.shape, logits.dtype), Spec(logits.shape, logits.dtype)]


def _sparse_xent_check(arrays, attrs):
    logits, labels = arrays
    if not isinstance(labels, np.ndarray):
        # On a GPU a label outside [0, classes) gives NaN in its loss and gradient rows instead,
        # as TF documents (the kernel never reads out of bounds), with no copy to the host.
        return
    check_indices("sparse_softmax_cross_entropy_with_logits", labels, logits.shape[1], "labels")


def _sparse_xent_grad(record, grads):
    g_loss, g_probs = grads
    logits, labels = record.inputs
    probs = record.outputs[1]
    total = None
    if g_loss is not None:
        onehot = A.one_hot(labels, logits.shape[1], dtype=logits.dtype)
        total = A.expand_dims(g_loss, -1) * (probs - onehot)
    if g_probs is not None:
        via_probs = softmax_backprop(probs, g_probs)
        total = via_probs if total is None else total + via_probs
    return total, None


SPARSE_XENT = register(OpDef(
    "sparse_softmax_cross_entropy_with_logits", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.sparse_softmax_cross_entropy(*arrays),
                   reference=lambda arrays, attrs: reference.sparse_softmax_cross_entropy(
                       *arrays)),
     "cuda": lambda arrays, attrs: cuda_logits.sparse_softmax_cross_entropy(arrays[0], arrays[1])},
    _sparse_xent_infer, _sparse_xent_grad, check_values=_sparse_xent_check, num_outputs=2))


def _xent_infer(specs, attrs):
    logits, labels = specs
    name = "softmax_cross_entropy_with_logits"
    _float_input(name, logits, "logits")
    checks.same_dtype(name, specs, names=("logits", "labels"))
    if len(logits.shape) != 2 or checks.broadcast(name, [logits.shape, labels.shape]) != \
            tuple(logits.shape):
        checks.fail(name, f"logits and labels must both be [batch, classes]; got "
                    f"{checks.fmt_shape(logits.shape)} and {checks.fmt_shape(labels.shape)}.")
    return [Spec(logits.shape[:1], logits.dtype), Spec(logits.shape, logits.dtype)]


def _xent_grad(record, grads):
    g_loss, g_probs = grads
    logits, labels = record.inputs
    probs = record.outputs[1]
    g_logits = g_labels = None
    if g_loss is not None:
        g = A.expand_dims(g_loss, -1)
        g_logits = g * (probs * M.reduce_sum(labels, axis=-1, keepdims=True) - labels)
        g_labels = -g * N.log_softmax(logits)
    if g_probs is not None:
        via_probs = softmax_backprop(probs, g_probs)
        g_logits = via_probs if g_logits is None else g_logits + via_probs
    return g_logits, g_labels


XENT = register(OpDef(
    "softmax_cross_entropy_with_logits", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.softmax_cross_entropy(
        arrays[0], checks.contiguous(np.broadcast_to(arrays[1], arrays[0].shape))),
        reference=lambda arrays, attrs: reference.softmax_cross_entropy(*arrays)),
     # (the CUDA kernel reads labels of a broadcasting shape in place)
     "cuda": lambda arrays, attrs: cuda_logits.softmax_cross_entropy(arrays[0], arrays[1])},
    _xent_infer, _xent_grad, num_outputs=2))


# ---- convolution --------------------------------------------------------------------------------
def _out_size(name, size, k, stride, dilation, padding):
    if size is None:
        return None
    out = kernels.conv_output_size(size, k, stride, dilation, padding)
    if out <= 0:
        checks.fail(name, f"the window (size {k}, dilation {dilation}) does not fit an input "
                    f"dimension of {size} with padding {padding}; use padding='SAME' or a "
                    "smaller window.")
    return out


def conv_output_shape(name, x_shape, w_shape, attrs):
    (sh, sw), (dh, dw), padding = attrs["strides"], attrs["dilations"], attrs["padding"]
    n, h, w, _ = x_shape
    kh, kw, _, cout = w_shape
    return (n, _out_size(name, h, kh, sh, dh, padding), _out_size(name, w, kw, sw, dw, padding),
            cout)


def check_conv_pair(name, x_shape, w_shape, x_dtype, w_dtype):
    """Op ``name``'s check of an NHWC input and [height, width, in, ...] filters: ranks, input
    depth and one float dtype."""
    if len(x_shape) != 4 or len(w_shape) != 4:
        checks.fail(name, f"input must be 4-D NHWC and filters 4-D [height, width, in, out]; got "
                    f"{checks.fmt_shape(x_shape)} and {checks.fmt_shape(w_shape)}.")
    if None not in (x_shape[3], w_shape[2]) and x_shape[3] != w_shape[2]:
        checks.fail(name, f"input depth {x_shape[3]} (shape {checks.fmt_shape(x_shape)}) does not "
                    f"match the filters' in-depth {w_shape[2]} (shape "
                    f"{checks.fmt_shape(w_shape)}).")
    if x_dtype != w_dtype:
        checks.fail(name, f"input has dtype {checks.dtype_name(x_dtype)} but filters have "
                    f"{checks.dtype_name(w_dtype)}; cast one with tf.cast.")
    checks.allowed_dtype(name, x_dtype, FLOATS, "input")


def _conv_infer(specs, attrs):
    x, w = specs
    check_conv_pair("conv2d", x.shape, w.shape, x.dtype, w.dtype)
    return [Spec(conv_output_shape("conv2d", x.shape, w.shape, attrs), x.dtype)]


def _conv_args(attrs):
    return attrs["strides"], attrs["padding"], attrs["dilations"]


def _conv_grad(record, grads):
    x, w = record.inputs
    g = grads[0]
    a = record.attrs
    return (N.conv2d_backprop_input(x.shape, w, g, **_conv_kw(a)),
            N.conv2d_backprop_filter(x, w.shape, g, **_conv_kw(a)))


def _conv_kw(attrs):
    return {"strides": attrs["strides"], "padding": attrs["padding"],
            "dilations": attrs["dilations"]}


CONV2D = register(OpDef(
    "conv2d", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.conv2d(*arrays, *_conv_args(attrs)),
                   reference=lambda arrays, attrs: reference.conv2d(
                       *arrays, *_conv_args(attrs))),
     "cuda": lambda arrays, attrs: cuda_conv.conv2d(arrays[0], arrays[1], *_conv_args(attrs))},
    _conv_infer, _conv_grad))


def _backprop_input_infer(specs, attrs):
    w, dy = specs
    x_shape = tuple(attrs["input_shape"])
    check_conv_pair("conv2d_backprop_input", x_shape, w.shape, w.dtype, dy.dtype)
    expected = conv_output_shape("conv2d_backprop_input", x_shape, w.shape, attrs)
    if len(dy.shape) != 4 or any(None not in (a, b) and a != b for a, b in zip(dy.shape, expected)):
        checks.fail("conv2d_backprop_input", f"out_backprop has shape {checks.fmt_shape(dy.shape)} "
                    f"but the convolution's output shape is {checks.fmt_shape(expected)}.")
    return [Spec(x_shape, w.dtype)]


def _backprop_input_grad(record, grads):
    w, dy = record.inputs
    g = grads[0]
    kw = _conv_kw(record.attrs)
    return (N.conv2d_backprop_filter(g, w.shape, dy, **kw), N.conv2d(g, w, **kw))


def backprop_input_shape(attrs, dy):
    """``attrs["input_shape"]``, with a batch size known only when the graph runs (None) taken
    from the gradient ``dy``."""
    shape = tuple(attrs["input_shape"])
    return shape if shape[0] is not None else (dy.shape[0],) + shape[1:]


CONV2D_BACKPROP_INPUT = register(OpDef(
    "conv2d_backprop_input", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.conv2d_backprop_input(
        backprop_input_shape(attrs, arrays[1]), arrays[0], arrays[1], *_conv_args(attrs)),
        reference=lambda arrays, attrs: reference.conv2d_backprop_input(
            backprop_input_shape(attrs, arrays[1]), arrays[0], arrays[1], *_conv_args(attrs))),
     "cuda": lambda arrays, attrs: cuda_conv.conv2d_backprop_input(
        backprop_input_shape(attrs, arrays[1]), arrays[0], arrays[1], *_conv_args(attrs))},
    _backprop_input_infer, _backprop_input_grad))


def _backprop_filter_infer(specs, attrs):
    x, dy = specs
    w_shape = tuple(attrs["filter_shape"])
    check_conv_pair("conv2d_backprop_filter", x.shape, w_shape, x.dtype, dy.dtype)
    expected = conv_output_shape("conv2d_backprop_filter", x.shape, w_shape, attrs)
    if len(dy.shape) != 4 or any(None not in (a, b) and a != b for a, b in zip(dy.shape, expected)):
        checks.fail("conv2d_backprop_filter", f"out_backprop has shape "
                    f"{checks.fmt_shape(dy.shape)} but the convolution's output shape is "
                    f"{checks.fmt_shape(expected)}.")
    return [Spec(w_shape, x.dtype)]


def _backprop_filter_grad(record, grads):
    x, dy = record.inputs
    g = grads[0]
    kw = _conv_kw(record.attrs)
    return (N.conv2d_backprop_input(x.shape, g, dy, **kw), N.conv2d(x, g, **kw))


CONV2D_BACKPROP_FILTER = register(OpDef(
    "conv2d_backprop_filter", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.conv2d_backprop_filter(
        arrays[0], tuple(attrs["filter_shape"]), arrays[1], *_conv_args(attrs)),
        reference=lambda arrays, attrs: reference.conv2d_backprop_filter(
            arrays[0], tuple(attrs["filter_shape"]), arrays[1], *_conv_args(attrs))),
     "cuda": lambda arrays, attrs: cuda_conv.conv2d_backprop_filter(
        arrays[0], tuple(attrs["filter_shape"]), arrays[1], *_conv_args(attrs))},
    _backprop_filter_infer, _backprop_filter_grad))


# ---- pooling ------------------------------------------------------------------------------------
def pool_output_shape(name, x_shape, attrs):
    (kh, kw), (sh, sw), padding = attrs["ksize"], attrs["strides"], attrs["padding"]
    n, h, w, c = x_shape
    return (n, _out_size(name, h, kh, sh, 1, padding), _out_size(name, w, kw, sw, 1, padding), c)


def _pool_infer(name):
    def infer(specs, attrs):
        x = specs[0]
        if len(x.shape) != 4:
            checks.fail(name, f"input must be 4-D NHWC, got shape {checks.fmt_shape(x.shape)}.")
        _float_input(name, x, "input")
        return [Spec(pool_output_shape(name, x.shape, attrs), x.dtype)]
    return infer


def _pool_args(attrs):
    return attrs["ksize"], attrs["strides"], attrs["padding"]


def _pool_kw(attrs):
    return {"ksize": attrs["ksize"], "strides": attrs["strides"], "padding": attrs["padding"]}


MAX_POOL = register(OpDef(
    "max_pool2d", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.max_pool2d(arrays[0], *_pool_args(attrs)),
                   reference=lambda arrays, attrs: reference.max_pool2d(
                       arrays[0], *_pool_args(attrs))),
     "cuda": lambda arrays, attrs: cuda_pooling.max_pool2d(arrays[0], *_pool_args(attrs))},
    _pool_infer("max_pool2d"),
    lambda record, grads: (N.max_pool2d_grad(record.inputs[0], record.outputs[0], grads[0],
                                             **_pool_kw(record.attrs)),)))


def _same_as_input(name):
    def infer(specs, attrs):
        x = specs[0]
        expected = _pool_infer(name)([x], attrs)[0].shape
        for other in specs[1:]:
            if tuple(other.shape) != tuple(expected) or other.dtype != x.dtype:
                checks.fail(name, f"pooled tensors must have shape {checks.fmt_shape(expected)} "
                            f"and dtype {checks.dtype_name(x.dtype)}, got "
                            f"{checks.fmt_shape(other.shape)} {checks.dtype_name(other.dtype)}.")
        return [Spec(x.shape, x.dtype)]
    return infer


MAX_POOL_GRAD = register(OpDef(
    "max_pool2d_grad", "opaque",
    {"cpu": Kernel(lambda arrays, attrs: kernels.max_pool2d_grad(*arrays, *_pool_args(attrs)),
                   reference=lambda arrays, attrs: reference.max_pool2d_grad(
                       *arrays, *_pool_args(attrs))),
     "cuda": lambda arrays, attrs: cuda_pooling.max_pool2d_grad(*arrays, *_pool_args(attrs))},
    _same_as_input("max_pool2d_grad"),
    # Piecewise constant in the pooled tensors: zeros for them (as TF), linear in the gradient.
    lambda record, grads: (A.zeros_like(record.inputs[0]), A.zeros_like(record.inputs[1]),
                           N.max_pool2d_grad_grad(record.inputs[0], record.inputs[1], grads[0],
                                                  **_pool_kw(record.attrs)))))


def _grad_grad_infer(specs, attrs):
    x, y, ddx = specs
    if tuple(ddx.shape) != tuple(x.shape):
        checks.fail("max_pool2d_grad_grad", f"grad has shape {checks.fmt_shape(ddx.shape)} but "
                    f"the input has {checks.fmt_shape(x.shape)}.")
    return [Spec(pool_output_shape("max_pool2d_grad_grad", x.shape, attrs), x.dtype)]


MAX_POOL_GRAD_GRAD = register(OpDef(
    "max_pool2d_grad_grad", "opaque",
    {"cpu": lambda arrays, attrs: kernels.max_pool2d_grad_grad(*arrays, *_pool_args(attrs)),
     "cuda": lambda arrays, attrs: cuda_pooling.max_pool2d_grad_grad(
         *arrays, *_pool_args(attrs))},
    _grad_grad_infer,
    lambda record, grads: (A.zeros_like(record.inputs[0]), A.zeros_like(record.inputs[1]),
                           N.max_pool2d_grad(record.inputs[0], record.inputs[1], grads[0],
                                             **_pool_kw(record.attrs)))))

AVG_POOL = register(OpDef(
    "avg_pool2d", "opaque",
    {"cpu": lambda arrays, attrs: kernels.avg_pool2d(arrays[0], *_pool_args(attrs)),
     "cuda": lambda arrays, attrs: cuda_pooling.avg_pool2d(arrays[0], *_pool_args(attrs))},
    _pool_infer("avg_pool2d"),
    lambda record, grads: (N.avg_pool2d_grad(record.inputs[0].shape, grads[0],
                                             **_pool_kw(record.attrs)),)))


def _avg_grad_infer(specs, attrs):
    dy, = specs
    x_shape = tuple(attrs["input_shape"])
    expected = _pool_infer("avg_pool2d_grad")([Spec(x_shape, dy.dtype)], attrs)[0].shape
    if tuple(dy.shape) != tuple(expected):
        checks.fail("avg_pool2d_grad", f"grad has shape {checks.fmt_shape(dy.shape)}, expected "
                    f"{checks.fmt_shape(expected)}.")
    return [Spec(x_shape, dy.dtype)]


AVG_POOL_GRAD = register(OpDef(
    "avg_pool2d_grad", "opaque",
    {"cpu": lambda arrays, attrs: kernels.avg_pool2d_grad(tuple(attrs["input_shape"]), arrays[0],
                                                          *_pool_args(attrs)),
     "cuda": lambda arrays, attrs: cuda_pooling.avg_pool2d_grad(tuple(attrs["input_shape"]),
                                                                arrays[0], *_pool_args(attrs))},
    _avg_grad_infer,
    lambda record, grads: (N.avg_pool2d(grads[0], **_pool_kw(record.attrs)),)))


# ---- bias_add -----------------------------------------------------------------------------------
def _bias_infer(specs, attrs):
    value, bias = specs
    checks.same_dtype("bias_add", specs, names=("value", "bias"))
    if len(bias.shape) != 1 or len(value.shape) < 2 or (
            None not in (bias.shape[0], value.shape[-1]) and bias.shape[0] != value.shape[-1]):
        checks.fail("bias_add", f"bias must be 1-D with the size of value's last dimension; got "
                    f"value {checks.fmt_shape(value.shape)} and bias "
                    f"{checks.fmt_shape(bias.shape)}.")
    return [Spec(value.shape, value.dtype)]


# An add under NumPy's broadcasting once its shape rule has passed: fused as ``add``.
BIAS_ADD = register(OpDef(
    "bias_add", "elementwise",
    {"cpu": Kernel(lambda arrays, attrs: elementwise.ufunc("add", arrays[0].dtype.name)(*arrays),
                   reference=lambda arrays, attrs: np.add(*arrays)),
     "cuda": lambda arrays, attrs: cuda_elementwise.run("add", arrays)},
    _bias_infer,
    lambda record, grads: (grads[0], M.reduce_sum(grads[0], axis=list(range(grads[0].ndim - 1)))),
    scalar=elementwise.SCALAR_OPS["add"]))
