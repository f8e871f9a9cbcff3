"""Array creation and manipulation: zeros, reshape, concat, gather, slicing, ..."""
import builtins
import operator

import numpy as np

from hybridtf.eager.execute import as_tensor, execute, execute1, execute_binary
from hybridtf.framework import context, devices, dtypes
from hybridtf.framework.constant_op import convert_to_tensor, to_numpy
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import Spec, checks
from hybridtf.registry import array as AR
from hybridtf.registry import elementwise as E
from hybridtf.registry import reductions as R
from hybridtf.registry import tensor_array

newaxis = None


def _shape_list(shape, op_name="shape"):
    """A shape argument (a list or tuple of ints, a TensorShape, a 1-D integer tensor or array,
    or a single int) as a list of Python ints.  Anything else -- floats included, even 2.0, and
    unknown dimensions -- is a TypeError, as in TF."""
    try:
        if isinstance(shape, (list, tuple)):   # the commonest, on which operator.index raises
            dims = checks.integers(op_name, shape, "shape")
        else:
            dims = [operator.index(shape)]   # one int: a 1-D shape
    except TypeError:
        try:
            dims = checks.integers(op_name, shape, "shape")
        except TypeError:
            raise TypeError(f"{op_name}: shape must be a list of integers or a 1-D integer "
                            f"tensor, got {shape!r}.") from None
    if any(not -2**63 <= d < 2**63 for d in dims):
        raise ValueError(f"{op_name}: shape {dims} has a dimension out of the range of int64.")
    return dims


def _creation_dims(shape, op_name):
    dims = _shape_list(shape, op_name)
    if any(d < 0 for d in dims):
        checks.fail(op_name, f"shape must have non-negative dimensions, got {dims}.")
    if checks.num_elements(dims) >= 2**63:
        checks.fail(op_name, f"shape {dims} has more elements than int64 can count.")
    return dims


# ---- creation -----------------------------------------------------------------------------------
def _filled(op_name, shape, np_dtype, value):
    """An array of ``shape`` of zeros (``value`` 0) or ones (1) of ``np_dtype``: b"" are the
    zeros of tf.string, which has no ones (a TypeError, as in TF)."""
    if np.dtype(np_dtype) != object:
        return (np.zeros if value == 0 else np.ones)(shape, np_dtype)
    if value:
        raise TypeError(f"{op_name}: dtype string has no ones; use tf.fill(dims, b'...').")
    return np.full(shape, b"", object)


def zeros(shape, dtype=dtypes.float32, name=None):
    return Tensor(_filled("zeros", _creation_dims(shape, "zeros"),
                          dtypes.as_dtype(dtype).as_numpy_dtype, 0))


def ones(shape, dtype=dtypes.float32, name=None):
    return Tensor(_filled("ones", _creation_dims(shape, "ones"),
                          dtypes.as_dtype(dtype).as_numpy_dtype, 1))


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    return _filled_like("zeros_like", input, dtype, 0)


def ones_like(input, dtype=None, name=None):  # noqa: A002
    return _filled_like("ones_like", input, dtype, 1)


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` filled with ``value`` (whose dtype it takes)."""
    shape_ = _creation_dims(dims, "fill")
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        tensor = as_tensor(value)
        if tensor._shape_tuple != ():
            checks.fail("fill", f"value must be a scalar, got shape "
                        f"{checks.fmt_shape(tensor._shape_tuple or ())}.")
        if type(tensor) is not Tensor:   # known only when the graph runs
            return broadcast_to(tensor, shape_)
        scalar = tensor._value
    else:
        scalar = to_numpy(value)
    if np.ndim(scalar) != 0:
        checks.fail("fill", f"value must be a scalar, got shape {list(np.shape(scalar))}.")
    return Tensor(np.full(shape_, scalar, dtype=scalar.dtype))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    rows = checks.integer("eye", num_rows, "num_rows")
    cols = rows if num_columns is None else checks.integer("eye", num_columns, "num_columns")
    if rows < 0 or cols < 0:
        checks.fail("eye", f"num_rows and num_columns must be >= 0, got {rows}, {cols}.")
    target = dtypes.as_dtype(dtype)
    if target is dtypes.string:
        raise TypeError("eye: dtype string has no ones; use a numeric or bool dtype.")
    matrix = np.eye(rows, cols, dtype=target.as_numpy_dtype)
    if batch_shape is not None:
        matrix = np.broadcast_to(matrix, tuple(_shape_list(batch_shape)) + matrix.shape).copy()
    return Tensor(matrix)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """Numbers from ``start`` up to (not including) ``limit`` in steps of ``delta``."""
    if limit is None:
        start, limit = 0, start
    if dtype is not None:
        _numeric_range_dtype(dtypes.as_dtype(dtype).as_numpy_dtype)
    if any(isinstance(v, Tensor) and type(v) is not Tensor for v in (start, limit, delta)):
        return _traced_range(start, limit, delta, dtype)
    values = [np.asarray(v) if isinstance(v, Tensor) or getattr(v, "_is_variable", False) else v
              for v in (start, limit, delta)]
    for what, value in zip(("start", "limit", "delta"), values):
        if np.ndim(value) != 0:
            checks.fail("range", f"{what} must be a scalar, got shape {list(np.shape(value))}.")
    if dtype is None:
        floaty = [np.asarray(v).dtype for v in values
                  if isinstance(v, np.ndarray) or isinstance(v, np.generic)]
        if floaty:
            target = np.result_type(*floaty)
        elif any(isinstance(v, float) for v in values):
            target = np.float32
        else:   # int32, or int64 for an int beyond int32, as TF converts them
            target = np.result_type(*[to_numpy(v).dtype for v in values])
    else:
        target = dtypes.as_dtype(dtype).as_numpy_dtype
    _numeric_range_dtype(target)
    return Tensor(AR.RANGE.kernel(devices.CPU).run(values, {"dtype": target}))


def _numeric_range_dtype(np_dtype):
    if np.dtype(np_dtype).kind not in "iuf":
        raise TypeError(f"range: dtype must be an integer or floating point dtype, got "
                        f"{checks.dtype_name(np.dtype(np_dtype))}.")


def _traced_range(start, limit, delta, dtype):
    """``tf.range`` with a bound known only when the traced function runs."""
    bounds = [as_tensor(v) for v in (start, limit, delta)]
    if dtype is None:
        kinds = [b._np_dtype for b in bounds]
        target = np.result_type(*kinds)
    else:
        target = np.dtype(dtypes.as_dtype(dtype).as_numpy_dtype)
    bounds = [b if b._np_dtype == target else execute1(AR.CAST, [b], {"dtype": target})
              for b in bounds]
    return execute1(AR.RANGE, bounds, {"dtype": target})


# ---- shape ---------------------------------------------------------------------------------------
def shape(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shape of a tensor, as a 1-D integer tensor."""
    x = as_tensor(input)
    target = _index_dtype("shape", out_type)
    if type(x) is Tensor or None not in x._shape_tuple:
        return Tensor(np.asarray(x._shape_tuple, dtype=target))
    return execute1(AR.SHAPE, [x], {"dtype": target})


def _index_dtype(op_name, out_type):
    target = dtypes.as_dtype(out_type)
    if target not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op_name}: out_type must be int32 or int64, got {target.name}.")
    return target.as_numpy_dtype


def size(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The number of elements of a tensor, as an integer scalar tensor."""
    x = as_tensor(input)
    target = _index_dtype("size", out_type)
    if type(x) is Tensor or None not in x._shape_tuple:
        return Tensor(np.asarray(int(np.prod(x._shape_tuple)), dtype=target))
    return execute1(R.PROD, [shape(x, out_type)], {"axis": None, "keepdims": False})


def rank(input, name=None):  # noqa: A002
    return Tensor(np.int32(len(as_tensor(input)._shape_tuple)))


def _filled_like(op_name, input, dtype, value):
    x = as_tensor(input)
    target = x._np_dtype if dtype is None else dtypes.as_dtype(dtype).as_numpy_dtype
    if type(x) is Tensor:
        return Tensor(_filled(op_name, x._shape_tuple, target, value))
    fill_value = _filled(op_name, (), target, value)[()]
    return execute1(AR.FILL_LIKE, [x], {"value": fill_value, "dtype": target})


def reshape(tensor, shape, name=None):
    """The same elements in a new shape; one dimension may be -1."""
    x = as_tensor(tensor)
    dims = _shape_list(shape, "reshape")
    if tuple(dims) == x._shape_tuple:
        return x if not _recording() else execute1(AR.RESHAPE, [x], {"shape": dims})
    return execute1(AR.RESHAPE, [x], {"shape": dims})


def _recording():
    return bool(context.STATE.active)


def transpose(a, perm=None, conjugate=False, name="transpose"):
    x = as_tensor(a)
    return execute1(AR.TRANSPOSE, [x], {"perm": None if perm is None else _shape_list(perm)})


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Removes dimensions of size 1 (all of them, or those in ``axis``)."""
    x = as_tensor(input)
    shape_ = x._shape_tuple
    axes = None if axis is None else _shape_list(axis, "squeeze")
    if axes is not None and shape_ is not None:
        axes = tuple(sorted({checks.axis("squeeze", a, len(shape_)) for a in axes}))
    dims = AR.SQUEEZE.infer([Spec(shape_, x._np_dtype)], {"axes": axes})[0].shape
    if shape_ is not None and None not in shape_:
        return reshape(x, list(dims))
    # Dimensions known only when the graph runs: checked (and squeezed) then.
    return execute1(AR.SQUEEZE, [x], {"axes": axes})


def expand_dims(input, axis, name=None):  # noqa: A002
    """Inserts a dimension of size 1 at ``axis``."""
    x = as_tensor(input)
    dims = list(x._shape_tuple)
    position = checks.axis("expand_dims", axis, len(dims) + 1)
    if dims.count(None) > 1:
        # Sizes only known when the graph runs: a new axis by indexing keeps them symbolic.
        return x[(builtins.slice(None),) * position + (newaxis,)]
    dims.insert(position, 1)
    return reshape(x, [-1 if d is None else d for d in dims])


def broadcast_to(input, shape, name=None):  # noqa: A002
    x = as_tensor(input)
    dims = tuple(_shape_list(shape))
    if dims == tuple(x._shape_tuple):
        return x
    return execute1(AR.BROADCAST_TO, [x], {"shape": dims})


def identity(input, name=None):  # noqa: A002
    return execute1(AR.IDENTITY, [as_tensor(input)], None)


def stop_gradient(input, name=None):  # noqa: A002
    """The same value, through which no gradient flows."""
    x = as_tensor(input)
    if type(x) is Tensor:
        return Tensor(x._value)
    return execute1(AR.STOP_GRADIENT, [x], None)


# ---- joins and splits ----------------------------------------------------------------------------
def concat(values, axis, name="concat"):
    tensors = [as_tensor(v) for v in values]
    attrs = {"axis": checks.integer("concat", axis, "axis")}
    if len(tensors) == 1:
        # Nothing to join, but the axis must still be valid (as TF checks it).
        AR.CONCAT.infer([Spec(tensors[0]._shape_tuple, tensors[0]._np_dtype)], attrs)
        return identity(tensors[0])
    return execute1(AR.CONCAT, tensors, attrs)


def stack(values, axis=0, name="stack"):
    """Joins tensors of equal shape along a new dimension ``axis``."""
    tensors = [as_tensor(v) for v in values]
    if not tensors:
        checks.fail("stack", "values must be a non-empty list of tensors.")
    first = tensors[0]._shape_tuple
    for i, t in enumerate(tensors):
        if t._shape_tuple != first:
            checks.fail("stack", f"Shapes of all inputs must match: values[0].shape = "
                        f"{list(first)} != values[{i}].shape = {list(t._shape_tuple)}.")
    position = checks.axis("stack", axis, len(first) + 1)
    return concat([expand_dims(t, position) for t in tensors], axis=position)


def unstack(value, num=None, axis=0, name="unstack"):
    """Splits a tensor into a list of tensors along ``axis``, removing it."""
    x = as_tensor(value)
    position = checks.axis("unstack", axis, max(x.ndim, 1) if x.ndim else 0) if x.ndim else None
    if position is None:
        checks.fail("unstack", "cannot unstack a scalar.")
    n = x._shape_tuple[position]
    if num is not None:
        num = checks.integer("unstack", num, "num")
        if n is None:
            n = num   # the split checks it when the graph runs
        elif num != n:
            checks.fail("unstack", f"num={num} does not match dimension {position} of size {n}.")
    if n is None:
        raise TypeError(f"unstack: dimension {position} of the value (shape "
                        f"{checks.fmt_shape(x._shape_tuple)}) must be known when tracing, or "
                        "num given.")
    if n == 0:
        return []
    parts = split(x, n, axis=position)
    return [squeeze(p, axis=position) for p in parts]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits into equal parts (an int) or parts of the given sizes (a list; one may be -1)."""
    x = as_tensor(value)
    if isinstance(num_or_size_splits, Tensor):
        num_or_size_splits = np.asarray(num_or_size_splits).tolist()
    return list(execute(AR.SPLIT, [x], {"axis": checks.integer("split", axis, "axis"),
                                        "sizes": num_or_size_splits}))


def tile(input, multiples, name=None):  # noqa: A002
    return execute1(AR.TILE, [as_tensor(input)], {"multiples": _shape_list(multiples)})


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads with ``constant_values`` (mode CONSTANT) or mirrored values (REFLECT, SYMMETRIC)."""
    x = as_tensor(tensor)
    if not isinstance(mode, str):
        raise TypeError(f"pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}.")
    mode = mode.upper()
    try:
        pads = np.asarray(paddings)
    except ValueError:   # a ragged nested list
        pads = np.asarray(None)
    if pads.dtype.kind not in "iu" and pads.size:
        raise TypeError(f"pad: paddings must be an integer tensor or nested list of integers of "
                        f"shape [{x.ndim}, 2], got {paddings!r}.")
    pads = pads.astype(np.int64)
    if pads.size == 0:
        pads = pads.reshape(0, 2)  # a scalar's paddings: [] is the empty [0, 2] matrix
    if mode == "CONSTANT":
        return execute1(AR.PAD, [x], {"paddings": pads.tolist(), "mode": mode,
                                      "constant_values": _pad_value(x, constant_values)})
    if mode not in ("REFLECT", "SYMMETRIC"):
        checks.fail("pad", f"mode must be CONSTANT, REFLECT or SYMMETRIC, got {mode!r}.")
    if pads.shape != (x.ndim, 2) or (pads < 0).any():
        checks.fail("pad", f"paddings must be non-negative with shape [{x.ndim}, 2], got "
                    f"{pads.tolist()}.")
    # Mirrored padding is a gather of source positions along each axis (so it is differentiable).
    out = x
    for axis_, (before, after) in enumerate(pads.tolist()):
        size_ = x._shape_tuple[axis_]
        if size_ is None and (before or after):
            raise TypeError(f"pad: mode {mode} needs dimension {axis_} of the tensor (shape "
                            f"{checks.fmt_shape(x._shape_tuple)}) known when tracing.")
        limit = size_ - 1 if mode == "REFLECT" else size_
        if before > limit or after > limit:
            checks.fail("pad", f"paddings {before, after} too large for dimension {axis_} of size "
                        f"{size_} in mode {mode}.")
        if before or after:
            index = np.pad(np.arange(size_), (before, after), mode=mode.lower())
            out = gather(out, Tensor(index.astype(np.int64)), axis=axis_)
    return out


def _pad_value(x, constant_values):
    """``constant_values`` as a scalar of x's dtype (the default 0 of a string tensor is b"")."""
    if x.dtype is dtypes.string and isinstance(constant_values, int) and constant_values == 0:
        return b""
    value = as_tensor(constant_values, x.dtype)
    if value.dtype != x.dtype or value._shape_tuple != ():
        raise TypeError(f"pad: constant_values must be a scalar of the tensor's dtype "
                        f"{x.dtype.name}, got {constant_values!r}.")
    return np.asarray(value).item()


# ---- gather and friends --------------------------------------------------------------------------
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of ``params`` along ``axis`` at ``indices``; indices out of range are an error."""
    p = as_tensor(params)
    i = as_tensor(indices)
    axis = 0 if axis is None else checks.integer("gather", axis, "axis")
    batch_dims = checks.integer("gather", batch_dims, "batch_dims")
    if batch_dims:
        return _batched_gather(p, i, axis, batch_dims)
    return execute1(AR.GATHER, [p, i], {"axis": axis})


def _batched_gather(params, indices, axis, batch_dims):
    # Fold the batch dimensions into the gathered axis by offsetting indices per batch entry.
    if not -indices.ndim <= batch_dims <= indices.ndim:
        checks.fail("gather", f"batch_dims={batch_dims} is out of range for indices of rank "
                    f"{indices.ndim} (expected [{-indices.ndim}, {indices.ndim}]).")
    if batch_dims < 0:
        batch_dims += indices.ndim
    axis = checks.axis("gather", axis, params.ndim)
    if axis != batch_dims:
        checks.fail("gather", f"with batch_dims={batch_dims} only axis={batch_dims} is "
                    f"supported, got axis={axis}; transpose the gathered axis there first.")
    pshape = list(params._shape_tuple)
    ishape = list(indices._shape_tuple)
    if None in pshape[:axis + 1] or None in ishape[:batch_dims]:
        raise TypeError(f"gather: batch_dims={batch_dims} needs the dimensions of params up to "
                        f"axis {axis} (shape {checks.fmt_shape(pshape)}) and the batch dimensions "
                        f"of indices (shape {checks.fmt_shape(ishape)}) known when tracing.")
    if pshape[:batch_dims] != ishape[:batch_dims]:
        checks.fail("gather", f"batch dimensions of params {pshape} and indices {ishape} differ.")
    batch = int(np.prod(pshape[:batch_dims]))
    n = pshape[axis]
    if type(indices) is Tensor:  # traced indices are checked by the gather node at run time
        AR.check_indices("gather", np.asarray(indices._value), n)
    offsets = np.arange(batch, dtype=indices._np_dtype).reshape(
        pshape[:batch_dims] + [1] * (len(ishape) - batch_dims)) * n
    flat_params = reshape(params, [batch * n] + pshape[axis + 1:])
    flat = execute1(AR.GATHER, [flat_params, execute_binary(E.ADD, indices, Tensor(offsets))],
                    {"axis": 0})
    return reshape(flat, ishape + pshape[axis + 1:])


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length ``depth`` (indices outside [0, depth) give all off_value).

    The dtype is ``dtype``, else that of ``on_value`` or ``off_value``, else float32;
    ``on_value`` and ``off_value`` (default 1 and 0) are scalars of that dtype, as in TF.
    """
    i = as_tensor(indices)
    depth = checks.integer("one_hot", depth, "depth")
    axis = -1 if axis is None else checks.integer("one_hot", axis, "axis")
    target = None if dtype is None else dtypes.as_dtype(dtype)
    given = {what: as_tensor(value, target) for what, value in
             (("on_value", on_value), ("off_value", off_value)) if value is not None}
    for what, value in given.items():
        if target is not None and value.dtype != target:
            raise TypeError(f"one_hot: dtype {value.dtype.name} of {what} does not match the "
                            f"dtype parameter {target.name}.")
    if target is None:
        target = next(iter(given.values())).dtype if given else dtypes.float32
    # The defaults in the dtype: a TypeError for tf.string, as in TF.
    on = given["on_value"] if "on_value" in given else convert_to_tensor(1, target)
    off = given["off_value"] if "off_value" in given else convert_to_tensor(0, target)
    if on.dtype != off.dtype:
        raise TypeError(f"one_hot: dtype {on.dtype.name} of on_value does not match dtype "
                        f"{off.dtype.name} of off_value.")
    for what, value in (("on_value", on), ("off_value", off)):
        if value.ndim != 0:
            checks.fail("one_hot", f"{what} must be a scalar, got shape {value.shape.as_list()}.")
    return execute1(AR.ONE_HOT, [i], {"depth": depth, "on_value": np.asarray(on).item(),
                                      "off_value": np.asarray(off).item(), "axis": axis,
                                      "dtype": target.as_numpy_dtype})


# ---- slicing -------------------------------------------------------------------------------------
def _index_item(item):
    if item is None or item is Ellipsis:
        return item
    if isinstance(item, builtins.slice):
        return builtins.slice(*(None if v is None else _int_index(v) for v in
                                (item.start, item.stop, item.step)))
    return _int_index(item)


def _int_index(value):
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                        f"scalar int32/int64 tensors are valid indices, got {value!r}.")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        array = np.asarray(value)
        if array.ndim == 0 and array.dtype.kind in "iu":
            return int(array)
    raise TypeError("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                    f"scalar int32/int64 tensors are valid indices, got {value!r}.")


def normalize_index(key, rank):
    """A tuple of ints, slices and None with any Ellipsis expanded, checked against ``rank``."""
    items = key if isinstance(key, tuple) else (key,)
    items = tuple(_index_item(i) for i in items)
    if sum(i is Ellipsis for i in items) > 1:
        checks.fail("strided_slice", "Multiple ellipses in slice spec not allowed: an index "
                    "can have a single '...'.")
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    if consumed > rank:
        checks.fail("strided_slice", f"too many indices ({consumed}) for a tensor of rank {rank}.")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (builtins.slice(None),) * (rank - consumed) + items[at + 1:]
    for i in items:
        if isinstance(i, builtins.slice) and i.step == 0:
            checks.fail("strided_slice", "slice step cannot be zero.")
    return items


def strided_slice(tensor, spec):
    return execute1(AR.STRIDED_SLICE, [as_tensor(tensor)], {"spec": spec})


def strided_slice_grad(grad, sliced, spec):
    """The gradient of ``sliced[spec]``: ``grad`` placed into zeros of ``sliced``'s shape."""
    return execute1(AR.STRIDED_SLICE_GRAD, [as_tensor(grad), as_tensor(sliced)], {"spec": spec})


def getitem(tensor, key):
    """``tensor[key]`` with ints, slices, ``...``, ``tf.newaxis`` and scalar int tensors."""
    x = as_tensor(tensor)
    return strided_slice(x, normalize_index(key, len(x._shape_tuple)))


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """The slice starting at ``begin`` with ``size`` (-1: to the end) in each dimension."""
    x = as_tensor(input_)
    begin = _shape_list(begin)
    size_ = _shape_list(size)
    if len(begin) != x.ndim or len(size_) != x.ndim:
        checks.fail("slice", f"begin {begin} and size {size_} need one entry per dimension of "
                    f"the input of shape {list(x._shape_tuple)}.")
    spec = []
    for b, s, d in zip(begin, size_, x._shape_tuple):
        end = d if s == -1 else b + s
        if b < 0 or end > d or end < b:
            checks.fail("slice", f"begin {begin} / size {size_} out of bounds for shape "
                        f"{list(x._shape_tuple)}.")
        spec.append(builtins.slice(b, end))
    return strided_slice(x, tuple(spec))


# ---- used by gradient rules: shapes taken from a tensor at run time ------------------------------
def sum_to_like(grad, x):
    """``grad`` summed over the dimensions broadcasting stretched, to ``x``'s shape."""
    return execute1(AR.SUM_TO_LIKE, [as_tensor(grad), as_tensor(x)], None)


def reshape_like(value, x):
    """``value`` reshaped to ``x``'s shape (known only when the graph runs, perhaps): how the
    gradient of a reshape goes back to its input."""
    x = as_tensor(x)
    shape = x._shape_tuple
    if shape is not None and shape.count(None) <= 1:
        return reshape(value, [-1 if d is None else d for d in shape])
    return execute1(AR.RESHAPE_LIKE, [as_tensor(value), x], None)


def broadcast_like(value, x):
    """``value`` broadcast to ``x``'s shape."""
    return execute1(AR.BROADCAST_LIKE, [as_tensor(value), as_tensor(x)], None)


def unreduce(value, x, axes, keepdims):
    """A reduction's result over ``axes`` broadcast back to the shape of its input ``x``."""
    return execute1(AR.UNREDUCE, [as_tensor(value), as_tensor(x)],
                    {"axes": tuple(axes), "keepdims": bool(keepdims)})


def tensor_array_write_grad(grad, buffer, index):
    """The gradients of a TensorArray write: (for the old buffer, for the written value)."""
    return execute(tensor_array.TENSOR_ARRAY_WRITE_GRAD,
                   [as_tensor(grad), as_tensor(buffer), as_tensor(index)], None)
