"""NumPy references for fuzzed ops: what a valid call must return.

``REFERENCES[name](**kwargs)`` takes the call's arguments with tensors replaced by NumPy arrays and
returns the expected value(s), an ``Approx`` where the result depends on the order of
summation, or None where NumPy cannot say (non-finite values whose handling differs, an
unusual form of an argument): the fuzzer then only checks what it always checks.  A reference
that raises means NumPy refuses the input, and nothing is compared either.
"""
import warnings

import numpy as np


# How NumPy (and the references' own argument checks) refuse an input.
NUMPY_REFUSALS = (ValueError, TypeError, IndexError, OverflowError, ZeroDivisionError)


class Approx:
    """An expected float value known to within ``atol`` (sums: the order of addition)."""

    def __init__(self, value, atol):
        self.value = np.asarray(value)
        self.atol = atol


def _finite(*arrays):
    return all(np.all(np.isfinite(np.asarray(a, np.float64))) for a in arrays
               if np.asarray(a).dtype.kind in "fc")


def _is_float(a):
    return np.asarray(a).dtype.kind == "f"


def _eps(a):
    return float(np.finfo(np.asarray(a).dtype).eps) if _is_float(a) else 0.0


def _axis(axis):
    """An axis argument as NumPy takes it (None, an int or a tuple)."""
    if axis is None:
        return None
    array = np.asarray(axis)
    if array.dtype.kind not in "iu":
        raise TypeError("not an integer axis")
    return int(array) if array.ndim == 0 else tuple(int(a) for a in array.reshape(-1))


def _ints(values):
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        raise TypeError("not integers")
    return [int(v) for v in array.reshape(-1)]


def _flag(value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError("not a bool")  # TF's flags are bools; other values are not compared
    return bool(value)


def _summed(value, x, n_terms):
    """A sum of ``n_terms`` values of ``x``: exact for integers, else to within its rounding."""
    if not _is_float(x):
        return value
    if not _finite(x):
        return None
    scale = float(np.max(np.abs(x))) if np.size(x) else 0.0
    return Approx(value, 4 * _eps(x) * max(n_terms, 1) * scale)


# ---- elementwise --------------------------------------------------------------------------------
def _floordiv(x, y):
    if _is_float(x) or _is_float(y):
        return np.floor(np.divide(x, y))
    return np.floor_divide(x, y)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "truediv": np.true_divide, "floordiv": _floordiv, "floormod": np.mod, "mod": np.mod,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "squared_difference": lambda x, y: np.square(np.subtract(x, y)),
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "div_no_nan": lambda x, y: np.where(np.equal(y, 0), 0, np.true_divide(x, y)),
}
UNARY = {
    "abs": np.abs, "negative": np.negative, "sign": np.sign, "square": np.square,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": np.reciprocal,
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
    "sigmoid": _sigmoid, "softplus": lambda x: np.logaddexp(np.zeros_like(x), x),
    "sin": np.sin, "cos": np.cos, "floor": np.floor, "ceil": np.ceil, "round": np.round,
    "relu": lambda x: np.maximum(x, np.zeros_like(x)), "logical_not": np.logical_not,
    "relu6": lambda x: np.minimum(np.maximum(x, np.zeros_like(x)), 6),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
}


def _integer_with_python_float(x, y):
    """hybridtf converts a Python float operand to an integer tensor's dtype (an integral one;
    a fraction is an error), where NumPy promotes the tensor to float."""
    return any(isinstance(a, float) and np.asarray(b).dtype.kind in "iub"
               for a, b in ((x, y), (y, x)))


def _binary(f):
    def ref(x, y, **_):
        return None if _integer_with_python_float(x, y) else f(x, y)
    return ref


def _unary(f):
    def ref(x=None, features=None, **_):
        return f(x if features is None else features)
    return ref


def _leaky_relu(features, alpha=0.2, **_):
    x = features if _is_float(features) else np.asarray(features, np.float32)
    return np.where(x > 0, x, x * float(np.asarray(alpha)))


def _cast(x, dtype, **_):
    from hybridtf import as_dtype
    target = as_dtype(dtype).as_numpy_dtype
    x = np.asarray(x)
    if np.dtype(target) == object or x.dtype == object:
        return None
    if _is_float(x) and np.dtype(target).kind in "iu":
        info = np.iinfo(target)
        if not (_finite(x) and np.all((x >= info.min) & (x <= info.max))):
            return None   # C's float-to-int conversion is undefined out of range
    return x.astype(target)


def _clip(t, clip_value_min, clip_value_max, **_):
    return np.minimum(np.maximum(t, clip_value_min), clip_value_max)


# ---- reductions ---------------------------------------------------------------------------------
def _reduction(f, summed=True, floats_only=False):
    def ref(input_tensor, axis=None, keepdims=False, **_):
        x = np.asarray(input_tensor)
        if floats_only and not _is_float(x):
            return None
        if not summed and _is_float(x) and not _finite(x):
            return None
        value = f(x, axis=_axis(axis), keepdims=_flag(keepdims))
        if not summed:
            return value
        return _summed(value, x, x.size)
    return ref


def _mean(x, axis, keepdims):
    if not _is_float(x):
        raise TypeError("integer means truncate their own way")
    return np.mean(x, axis=axis, keepdims=keepdims)


def _logsumexp(x, axis, keepdims):
    if not _finite(x):
        raise TypeError("non-finite")
    x64 = x.astype(np.float64)
    m = np.max(x64, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x64 - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis if axis is not None else None)


def _arg(f):
    def ref(input, axis=None, output_type=None, **_):  # noqa: A002
        x = np.asarray(input)
        if _is_float(x) and np.isnan(x).any():
            return None
        return f(x, axis=0 if axis is None else _axis(axis))
    return ref


def _scan(f, identity):
    def ref(x, axis=0, exclusive=False, reverse=False, **_):
        x = np.asarray(x)
        axis = _axis(axis)
        if _flag(reverse):
            x = np.flip(x, axis)
        out = f(x, axis=axis)
        if _flag(exclusive):
            out = np.concatenate([np.full_like(np.take(out, [0], axis), identity),
                                  np.delete(out, -1, axis)], axis)
        if reverse:
            out = np.flip(out, axis)
        if f is np.cumsum:
            return _summed(out, x, x.shape[axis])
        if not _is_float(x):
            return out
        return Approx(out, 1e-5 * np.max(np.abs(out), initial=0)) if _finite(out) else None
    return ref


# ---- arrays -------------------------------------------------------------------------------------
def _split(value, num_or_size_splits, axis=0, num=None, **_):
    axis = _axis(axis)
    if np.ndim(num_or_size_splits) == 0:
        return np.split(value, int(num_or_size_splits), axis)
    sizes = _ints(num_or_size_splits)
    if -1 in sizes:
        sizes[sizes.index(-1)] = value.shape[axis] - (sum(sizes) + 1)
    return np.split(value, np.cumsum(sizes)[:-1], axis)


def _pad(tensor, paddings, mode="CONSTANT", constant_values=0, **_):
    if np.ndim(tensor) == 0:
        return None
    pads = np.asarray(paddings).reshape(-1, 2).tolist()
    if mode.upper() == "CONSTANT":
        return np.pad(tensor, pads, constant_values=np.asarray(constant_values).item())
    return np.pad(tensor, pads, mode=mode.lower())


def _gather(params, indices, validate_indices=None, axis=None, batch_dims=0, **_):
    if batch_dims:
        return None
    return np.take(params, indices, axis=0 if axis is None else _axis(axis))


def _one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, **_):
    indices = np.asarray(indices)
    on = 1 if on_value is None else np.asarray(on_value).item()
    off = 0 if off_value is None else np.asarray(off_value).item()
    hot = indices[..., None] == np.arange(int(depth))
    out = np.where(hot, on, off)
    return np.moveaxis(out, -1, -1 if axis is None else int(axis))


def _range(start, limit=None, delta=1, dtype=None, **_):
    if limit is None:
        start, limit = 0, start
    values = [np.asarray(v).item() for v in (start, limit, delta)]
    if any(isinstance(v, bool) for v in values):
        return None
    return np.arange(*values)


def _slice(input_, begin, size, **_):
    begin, size = _ints(begin), _ints(size)
    return input_[tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))]


def _index_key(key):
    items = key if isinstance(key, tuple) else (key,)
    converted = []
    for item in items:
        if isinstance(item, np.ndarray):
            if item.ndim or item.dtype.kind not in "iu":
                raise TypeError("not an index")
            item = int(item)
        elif not (item is None or item is Ellipsis or isinstance(item, (int, slice))) or \
                isinstance(item, bool):
            raise TypeError("not an index")
        converted.append(item)
    return tuple(converted)


# ---- linear algebra -----------------------------------------------------------------------------
def _matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, **_):
    a, b = np.asarray(a), np.asarray(b)
    if _flag(transpose_a) or _flag(adjoint_a):
        a = np.swapaxes(a, -1, -2)
    if _flag(transpose_b) or _flag(adjoint_b):
        b = np.swapaxes(b, -1, -2)
    if not _finite(a, b):
        return None   # BLAS may skip the products of zeros: 0 * inf gives 0, not IEEE's NaN
    out = np.matmul(a, b)
    if not _is_float(a):
        return out
    scale = float(np.max(np.abs(a), initial=0) * np.max(np.abs(b), initial=0))
    return Approx(out, 4 * _eps(a) * a.shape[-1] * scale)


def _tensordot(a, b, axes, **_):
    a, b = np.asarray(a), np.asarray(b)
    if not _finite(a, b):
        return None   # BLAS may skip the products of zeros: 0 * inf gives 0, not IEEE's NaN
    out = np.tensordot(a, b, axes if np.ndim(axes) == 0 else [_ints(axes[0]), _ints(axes[1])])
    if not _is_float(a):
        return out
    scale = float(np.max(np.abs(a), initial=0) * np.max(np.abs(b), initial=0))
    return Approx(out, 4 * _eps(a) * max(a.size, 1) * scale)


def _segment_sum(data, segment_ids, num_segments, **_):
    data, ids = np.asarray(data), np.asarray(segment_ids)
    out = np.zeros((int(num_segments),) + data.shape[ids.ndim:], data.dtype)
    kept = ids >= 0
    np.add.at(out, ids[kept], data[kept])
    return _summed(out, data, data.size)


def _add_n(inputs, **_):
    total = inputs[0]
    for item in inputs[1:]:
        total = total + item
    return total


# ---- nn -----------------------------------------------------------------------------------------
def _log_softmax64(x, axis=-1):
    x = np.asarray(x, np.float64)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _softmax(logits, axis=None, **_):
    if not _finite(logits):
        return None
    return np.exp(_log_softmax64(logits, -1 if axis is None else _axis(axis)))


def _log_softmax(logits, axis=None, **_):
    if not _finite(logits):
        return None
    return _log_softmax64(logits, -1 if axis is None else _axis(axis))


def _xent(labels, logits, axis=-1, **_):
    if not _finite(logits, labels):
        return None
    axis = _axis(axis)
    terms = np.where(np.asarray(labels) == 0, 0.0, -labels * _log_softmax64(logits, axis))
    return np.sum(terms, axis=axis)


def _sparse_xent(labels=None, logits=None, **_):
    if not _finite(logits):
        return None
    log_probs = _log_softmax64(logits)
    return -np.take_along_axis(log_probs, np.asarray(labels)[..., None], -1)[..., 0]


def _sigmoid_xent(labels=None, logits=None, **_):
    x, z = np.asarray(logits), np.asarray(labels)
    if not _finite(x, z):
        return None
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def _bias_add(value, bias, data_format=None, **_):
    if data_format is not None and data_format.startswith("NC"):
        return None
    return np.add(value, bias)


def _eye(num_rows, num_columns=None, batch_shape=None, dtype=None, **_):
    matrix = np.eye(int(num_rows), None if num_columns is None else int(num_columns))
    if batch_shape is not None:
        matrix = np.broadcast_to(matrix, tuple(_ints(batch_shape)) + matrix.shape)
    return matrix


def _zeros_like(input, dtype=None, **_):  # noqa: A002
    from hybridtf import as_dtype, string
    strings = np.asarray(input).dtype == object if dtype is None else as_dtype(dtype) is string
    return np.full(np.shape(input), b"", object) if strings else np.zeros_like(input)


def _where(condition, x=None, y=None, **_):
    if x is None and y is None:
        return np.argwhere(condition)
    return np.where(condition, x, y)


# ---- images -------------------------------------------------------------------------------------
def _image(image):
    """An image argument as TF takes it: 3-D [h, w, c] or 4-D [n, h, w, c]."""
    image = np.asarray(image)
    if image.ndim not in (3, 4):
        raise ValueError("not an image")
    return image


def _rot90(image, k=1, **_):
    k, = _ints(k)
    return np.rot90(_image(image), k, axes=(-3, -2))


REFERENCES = {
    **{name: _binary(f) for name, f in BINARY.items()},
    **{name: _unary(f) for name, f in UNARY.items()},
    "leaky_relu": _leaky_relu, "cast": _cast, "clip_by_value": _clip,
    "reduce_sum": _reduction(np.sum), "reduce_mean": _reduction(_mean),
    "reduce_prod": _reduction(np.prod, summed=False), "reduce_max": _reduction(np.max, False),
    "reduce_min": _reduction(np.min, False), "reduce_any": _reduction(np.any, False),
    "reduce_all": _reduction(np.all, False),
    "reduce_logsumexp": _reduction(_logsumexp, floats_only=True),
    "reduce_variance": _reduction(np.var, floats_only=True),
    "reduce_std": _reduction(np.std, floats_only=True),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "cumsum": _scan(np.cumsum, 0), "cumprod": _scan(np.cumprod, 1),
    "transpose": lambda a, perm=None, **_: np.transpose(a, None if perm is None else _ints(perm)),
    "reshape": lambda tensor, shape, **_: np.reshape(tensor, _ints(shape)),
    "concat": lambda values, axis, **_: np.concatenate(values, _axis(axis)),
    "stack": lambda values, axis=0, **_: np.stack(values, _axis(axis)),
    "unstack": lambda value, num=None, axis=0, **_: list(np.moveaxis(value, _axis(axis), 0)),
    "split": _split, "tile": lambda input, multiples, **_: np.tile(input, _ints(multiples)),
    "pad": _pad, "gather": _gather, "one_hot": _one_hot,
    "squeeze": lambda input, axis=None, **_: np.squeeze(input, _axis(axis)),
    "expand_dims": lambda input, axis, **_: np.expand_dims(input, _axis(axis)),
    "broadcast_to": lambda input, shape, **_: np.broadcast_to(input, _ints(shape)),
    "zeros": lambda shape, dtype=None, **_: _zeros_like(np.zeros(_ints(shape)), dtype),
    "ones": lambda shape, dtype=None, **_: np.ones(_ints(shape)),
    "fill": lambda dims, value, **_: np.full(_ints(dims), value),
    "zeros_like": _zeros_like,
    "ones_like": lambda input, dtype=None, **_: np.ones_like(input),
    "identity": lambda input, **_: input, "stop_gradient": lambda input, **_: input,
    "shape": lambda input, out_type=None, **_: np.array(np.shape(input)),
    "size": lambda input, out_type=None, **_: np.size(input),
    "rank": lambda input, **_: np.ndim(input),
    "where": _where, "eye": _eye, "range": _range, "slice": _slice,
    "matmul": _matmul, "tensordot": _tensordot, "unsorted_segment_sum": _segment_sum,
    "add_n": _add_n,
    "l2_loss": lambda t, **_: _summed(np.sum(np.square(t)) / 2, np.square(t), np.size(t)),
    "softmax": _softmax, "log_softmax": _log_softmax,
    "softmax_cross_entropy_with_logits": _xent,
    "sparse_softmax_cross_entropy_with_logits": _sparse_xent,
    "sigmoid_cross_entropy_with_logits": _sigmoid_xent, "bias_add": _bias_add,
    "flip_left_right": lambda image, **_: np.flip(_image(image), -2),
    "flip_up_down": lambda image, **_: np.flip(_image(image), -3),
    "rot90": _rot90,
}

# Tensor operators: the function each one calls, with its operands in order.
_OPERATOR_FUNCTIONS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floordiv", "mod": "floormod", "pow": "pow", "matmul": "matmul", "lt": "less",
    "le": "less_equal", "gt": "greater", "ge": "greater_equal", "and": "logical_and",
    "or": "logical_or", "xor": "logical_xor",
}
for _op, _fn in _OPERATOR_FUNCTIONS.items():
    _ref = REFERENCES[_fn]
    REFERENCES[f"Tensor.__{_op}__"] = (lambda ref: lambda self, other: ref(self, other))(_ref)
    REFERENCES[f"Tensor.__r{_op}__"] = (lambda ref: lambda self, other: ref(other, self))(_ref)
REFERENCES["Tensor.__neg__"] = lambda self: np.negative(self)
REFERENCES["Tensor.__abs__"] = lambda self: np.abs(self)
REFERENCES["Tensor.__invert__"] = lambda self: np.logical_not(self)
REFERENCES["Tensor.__getitem__"] = lambda self, key: np.asarray(self)[_index_key(key)]


def reference(name, kwargs):
    """The expected result of op ``name`` (its short name, or ``Tensor.__op__``) for NumPy
    arguments, or None."""
    ref = REFERENCES.get(name.rsplit(".", 1)[-1] if not name.startswith("Tensor.") else name)
    if ref is None:
        return None
    # NumPy's own warnings about the reference's input (empty means, NaN) are not findings.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return ref(**kwargs)
        except NUMPY_REFUSALS:  # NumPy refuses the input: there is nothing to compare with
            return None
