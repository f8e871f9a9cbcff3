"""``tf.nn``: activations, softmax, cross-entropies, convolution, pooling, dropout."""
import operator

import numpy as np

from hybridtf.api import array_ops, math_ops, random_ops
from hybridtf.eager.execute import as_tensor, binary_operands, execute, execute1
from hybridtf.registry import Spec, checks
from hybridtf.registry import nn as NN

relu = math_ops.relu
sigmoid = math_ops.sigmoid
tanh = math_ops.tanh
softplus = math_ops.softplus


def relu6(features, name=None):
    return math_ops.minimum(math_ops.relu(features), 6.0)


def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, alpha * features elsewhere (any alpha, as TF's kernel;
    max(x, alpha * x) would be wrong for alpha > 1).  Integer features are cast to float32."""
    x = as_tensor(features)
    if not x.dtype.is_floating:
        x = math_ops.cast(x, "float32")
    alpha = float(np.asarray(alpha))
    return math_ops.where(math_ops.greater(x, 0.0), x, math_ops.multiply(x, alpha))


def elu(features, name=None):
    x = as_tensor(features)
    return math_ops.where(x > 0, x, math_ops.expm1(math_ops.minimum(x, 0.0)))


def _along_last(fn, logits, axis, name):
    x = as_tensor(logits)
    if x.ndim == 0:
        checks.fail(name, "logits must have rank >= 1, got a scalar.")
    axis = checks.axis(name, -1 if axis is None else axis, x.ndim)
    if axis == x.ndim - 1:
        return fn(x)
    perm = list(range(x.ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return array_ops.transpose(fn(array_ops.transpose(x, perm)), perm)


def softmax(logits, axis=None, name=None):
    """exp(logits) / sum(exp(logits)) along ``axis`` (default: last), computed stably."""
    return _along_last(lambda x: execute1(NN.SOFTMAX, [x], None), logits, axis, "softmax")


def log_softmax(logits, axis=None, name=None):
    return _along_last(lambda x: execute1(NN.LOG_SOFTMAX, [x], None), logits, axis, "log_softmax")


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Per-example cross-entropy between integer class ``labels`` and unscaled ``logits``.

    labels: [d0, ..., dn] int32/int64 in [0, classes); logits: [d0, ..., dn, classes].
    """
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits needs labels= and logits=.")
    lt = as_tensor(logits)
    yt = as_tensor(labels)
    name = "sparse_softmax_cross_entropy_with_logits"
    if lt.ndim == 0 or not yt.shape.is_compatible_with(lt.shape[:-1]):
        checks.fail(name, f"labels shape {list(yt.shape)} must equal logits shape "
                    f"{list(lt.shape)} without its last dimension.")
    if lt.ndim == 2:
        return execute(NN.SPARSE_XENT, [lt, yt], None)[0]
    rows, classes = _rows_and_classes(name, lt)
    loss = execute(NN.SPARSE_XENT, [array_ops.reshape(lt, [rows, classes]),
                                    array_ops.reshape(yt, [rows])], None)[0]
    return _unflatten(loss, lt)


def _rows_and_classes(op_name, logits):
    """The [rows, classes] that [..., classes] logits flatten to, -1 for a size known only when
    the graph runs (one at most)."""
    outer, classes = logits.shape.as_list()[:-1], logits.shape[-1]
    # Explicit sizes where known: -1 cannot be inferred for empty tensors.
    rows = None if None in outer else int(np.prod(outer))
    if (rows is None and classes is None) or (rows is None and classes == 0):
        raise TypeError(f"{op_name}: logits of shape {logits.shape} need their class dimension "
                        "and the others known when tracing (one of them may be unknown); give "
                        "the function an input_signature with them.")
    return (-1 if rows is None else rows), (-1 if classes is None else classes)


def _unflatten(loss, logits):
    """Per-row losses back in the shape of the logits without their class dimension."""
    outer = logits.shape.as_list()[:-1]
    if outer.count(None) <= 1:
        return array_ops.reshape(loss, [-1 if d is None else d for d in outer])
    return array_ops.reshape_like(loss, logits[..., 0])   # shaped when the graph runs


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Per-example cross-entropy between a distribution ``labels`` and unscaled ``logits``."""
    lt, yt = binary_operands("softmax_cross_entropy_with_logits", logits, labels)
    if lt.ndim == 0:
        checks.fail("softmax_cross_entropy_with_logits", "logits must have rank >= 1.")
    axis = checks.axis("softmax_cross_entropy_with_logits", axis, lt.ndim)
    if axis != lt.ndim - 1:
        # Move the class axis last, keeping the other dimensions in order (they are the
        # loss's shape).
        perm = [i for i in range(lt.ndim) if i != axis] + [axis]
        lt = array_ops.transpose(lt, perm)
        yt = array_ops.transpose(yt, perm) if yt.ndim == lt.ndim else yt
    if lt.ndim == 2:
        return execute(NN.XENT, [lt, yt], None)[0]
    rows, classes = _rows_and_classes("softmax_cross_entropy_with_logits", lt)
    if yt.ndim == lt.ndim and tuple(yt.shape) == tuple(lt.shape):
        yt = array_ops.reshape(yt, [rows, classes])
    loss = execute(NN.XENT, [array_ops.reshape(lt, [rows, classes]), yt], None)[0]
    return _unflatten(loss, lt)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss, computed stably: max(x,0) - x*z + log(1 + exp(-|x|)).

    labels and logits must have the same shape and dtype (as TF; no broadcasting).
    """
    x, z = binary_operands("sigmoid_cross_entropy_with_logits", logits, labels)
    checks.allowed_dtype("sigmoid_cross_entropy_with_logits", x._np_dtype, NN.FLOATS,
                         "logits")
    checks.same_dtype("sigmoid_cross_entropy_with_logits",
                      [Spec(x._shape_tuple, x._np_dtype), Spec(z._shape_tuple, z._np_dtype)],
                      names=("logits", "labels"))
    if tuple(x.shape) != tuple(z.shape):
        checks.fail("sigmoid_cross_entropy_with_logits", f"logits and labels must have the same "
                    f"shape, got {x.shape.as_list()} and {z.shape.as_list()}.")
    return math_ops.relu(x) - x * z + math_ops.log1p(math_ops.exp(-math_ops.abs(x)))


def l2_loss(t, name=None):
    """sum(t ** 2) / 2 of a floating point tensor."""
    x = as_tensor(t)
    checks.allowed_dtype("l2_loss", x._np_dtype, NN.FLOATS, "t")
    return math_ops.reduce_sum(math_ops.square(x)) / 2.0


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, where bias is 1-D and matches value's channel dimension."""
    v, b = binary_operands("bias_add", value, bias)
    if data_format is not None and not isinstance(data_format, str):
        raise TypeError(f"bias_add: data_format must be a string such as 'NHWC' or 'NCHW', got "
                        f"{data_format!r}.")
    if data_format is not None and data_format.startswith("NC") and v.ndim > 2:
        if b.ndim != 1 or b.shape[0] != v.shape[1]:
            checks.fail("bias_add", f"bias must be 1-D with the size of value's channel dimension "
                        f"(1 for data_format={data_format!r}); got value {v.shape.as_list()} "
                        f"and bias {b.shape.as_list()}.")
        return math_ops.add(v, array_ops.reshape(b, [-1] + [1] * (v.ndim - 2)))
    return execute1(NN.BIAS_ADD, [v, b], None)


# ---- convolution and pooling ---------------------------------------------------------------------
def _pair(op_name, value, what):
    """TF's int / [h, w] / [1, h, w, 1] forms of strides, ksize and dilations, as (h, w)."""
    try:
        values = [operator.index(value)]
    except TypeError:
        values = checks.integers(op_name, value, what)
    if len(values) == 1:
        pair = (values[0], values[0])
    elif len(values) == 2:
        pair = tuple(values)
    elif len(values) == 4:
        if values[0] != 1 or values[3] != 1:
            checks.fail(op_name, f"{what} {values} may not stride or pool over the batch or "
                        "channel dimension (entries 0 and 3 must be 1).")
        pair = (values[1], values[2])
    else:
        checks.fail(op_name, f"{what} must be an int or a list of 1, 2 or 4 ints, got {values}.")
    if min(pair) < 1:
        checks.fail(op_name, f"{what} must be >= 1, got {values}.")
    return pair


def _padding(op_name, padding):
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        checks.fail(op_name, f"padding must be 'SAME' or 'VALID', got {padding!r}.")
    return padding.upper()


def check_data_format(op_name, data_format):
    """Rejects layouts other than NHWC (the one the kernels take), saying how to convert."""
    if data_format not in (None, "NHWC"):
        checks.fail(op_name, f"only data_format='NHWC' is supported, got {data_format!r}; "
                    "transpose NCHW input with tf.transpose(x, [0, 2, 3, 1]).")


def conv_attrs(op_name, strides, padding, dilations):
    """A convolution's attributes checked and in the kernels' form: (h, w) pairs, padding."""
    return {"strides": _pair(op_name, strides, "strides"), "padding": _padding(op_name, padding),
            "dilations": _pair(op_name, 1 if dilations is None else dilations, "dilations")}


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,
           name=None):  # noqa: A002
    """2-D convolution of NHWC ``input`` with [height, width, in, out] ``filters``."""
    check_data_format("conv2d", data_format)
    x, w = binary_operands("conv2d", input, filters)
    return execute1(NN.CONV2D, [x, w], conv_attrs("conv2d", strides, padding, dilations))


def conv2d_backprop_input(input_sizes, filters, out_backprop, strides, padding,
                          data_format="NHWC", dilations=None, name=None):
    """The gradient of conv2d with respect to its input, of shape ``input_sizes``."""
    check_data_format("conv2d_backprop_input", data_format)
    w, dy = binary_operands("conv2d_backprop_input", filters, out_backprop)
    attrs = conv_attrs("conv2d_backprop_input", strides, padding, dilations)
    attrs["input_shape"] = input_sizes_with_batch("conv2d_backprop_input", input_sizes)
    return execute1(NN.CONV2D_BACKPROP_INPUT, [w, dy], attrs)


def input_sizes_with_batch(op_name, input_sizes, what="input_sizes"):
    """``input_sizes`` as a tuple of ints; the batch size of a TensorShape may be unknown (None:
    a traced input's, which the kernel takes from the gradient when the graph runs)."""
    if hasattr(input_sizes, "as_list") and input_sizes.rank and input_sizes[0] is None:
        return (None,) + tuple(checks.integers(op_name, input_sizes[1:], f"{what}[1:]"))
    return tuple(checks.integers(op_name, input_sizes, what))


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                           data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """The gradient of conv2d with respect to its filters, of shape ``filter_sizes``."""
    check_data_format("conv2d_backprop_filter", data_format)
    x, dy = binary_operands("conv2d_backprop_filter", input, out_backprop)
    attrs = conv_attrs("conv2d_backprop_filter", strides, padding, dilations)
    attrs["filter_shape"] = tuple(checks.integers("conv2d_backprop_filter", filter_sizes,
                                                  "filter_sizes"))
    return execute1(NN.CONV2D_BACKPROP_FILTER, [x, dy], attrs)


def _pool_attrs(op_name, ksize, strides, padding):
    return {"ksize": _pair(op_name, ksize, "ksize"), "strides": _pair(op_name, strides, "strides"),
            "padding": _padding(op_name, padding)}


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Max over ksize windows of NHWC input."""
    check_data_format("max_pool2d", data_format)
    return execute1(NN.MAX_POOL, [as_tensor(input)],
                    _pool_attrs("max_pool2d", ksize, strides, padding))


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Mean over ksize windows of NHWC input (SAME padding averages real cells only)."""
    check_data_format("avg_pool2d", data_format)
    return execute1(NN.AVG_POOL, [as_tensor(input)],
                    _pool_attrs("avg_pool2d", ksize, strides, padding))


max_pool = max_pool2d
avg_pool = avg_pool2d


def max_pool2d_grad(orig_input, orig_output, grad, ksize, strides, padding):
    return execute1(NN.MAX_POOL_GRAD, [as_tensor(orig_input), as_tensor(orig_output),
                                       as_tensor(grad)],
                    _pool_attrs("max_pool2d_grad", ksize, strides, padding))


def max_pool2d_grad_grad(orig_input, orig_output, grad, ksize, strides, padding):
    return execute1(NN.MAX_POOL_GRAD_GRAD, [as_tensor(orig_input), as_tensor(orig_output),
                                            as_tensor(grad)],
                    _pool_attrs("max_pool2d_grad_grad", ksize, strides, padding))


def avg_pool2d_grad(orig_input_shape, grad, ksize, strides, padding):
    attrs = _pool_attrs("avg_pool2d_grad", ksize, strides, padding)
    attrs["input_shape"] = tuple(checks.integers("avg_pool2d_grad", orig_input_shape,
                                                 "orig_input_shape"))
    return execute1(NN.AVG_POOL_GRAD, [as_tensor(grad)], attrs)


# ---- dropout ------------------------------------------------------------------------------------
def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes elements with probability ``rate`` and scales the rest by 1 / (1 - rate)."""
    xt = as_tensor(x)
    if not xt.dtype.is_floating:
        raise ValueError(f"dropout: x must be a floating point tensor, got {xt.dtype.name}.")
    rate = float(rate)
    if not 0 <= rate < 1:
        raise ValueError(f"dropout: rate must be a scalar in [0, 1), got {rate}.")
    if rate == 0:
        return xt
    shape = list(xt.shape) if noise_shape is None else array_ops._shape_list(noise_shape,
                                                                             "dropout")
    if noise_shape is not None and (len(shape) > xt.ndim or checks.broadcast(
            "dropout", [xt.shape.as_list(), shape]) != tuple(xt.shape.as_list())):
        checks.fail("dropout", f"noise_shape {shape} must broadcast to x's shape "
                    f"{xt.shape.as_list()}.")
    keep = random_ops.uniform(shape, dtype=xt.dtype, seed=seed) >= rate
    return xt * math_ops.cast(keep, xt.dtype) * (1.0 / (1.0 - rate))
