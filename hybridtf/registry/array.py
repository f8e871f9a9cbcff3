"""Array ops: shape changes, joins and splits, gathers, casts, slicing."""
import math
import operator

import numpy as np

from ops import array as kernels
from ops import reduce as reduce_kernels
from ops import reference
from ops.cuda import array as cuda_kernels
from ops.cuda import elementwise as cuda_elementwise
from ops.cuda import reduce as cuda_reduce

from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry.public_ops import segment_ops as S
from hybridtf.framework import devices
from hybridtf.framework.errors import UnimplementedError
from hybridtf.registry import Kernel, OpDef, Spec, checks, register, sizes
from hybridtf.registry.elementwise import unbroadcast


def _one(name, cpu_kernel, infer, grad=None, kind="opaque", cuda=None, **kw):
    """Registers op ``name`` with its CPU kernel and, where given, its ``cuda`` kernel (see
    ``OpDef`` for the rest)."""
    by_backend = {"cpu": cpu_kernel} if cuda is None else {"cpu": cpu_kernel, "cuda": cuda}
    return register(OpDef(name, kind, by_backend, infer, grad, **kw))


# ---- reshape, transpose, broadcast ------------------------------------------------------------
def resolve_shape(op_name, in_shape, shape):
    """``shape`` with its single -1 resolved against ``in_shape``'s element count."""
    shape = [int(d) for d in shape]
    if shape.count(-1) > 1:
        checks.fail(op_name, f"only one dimension of the new shape may be -1, got {shape}.")
    if shape and min(shape) < -1:
        checks.fail(op_name, f"dimensions of the new shape must be >= -1, got {shape}.")
    total = checks.num_elements(in_shape)
    known = 1   # exact (Python ints): no int64 overflow
    for d in shape:
        if d != -1:
            known *= d
    if known >= 2**63:
        checks.fail(op_name, f"the new shape {shape} has more elements than int64 can count.")
    if -1 in shape:
        if total is None:
            return tuple(None if d == -1 else d for d in shape)
        if known == 0 or total % known:
            checks.fail(op_name, f"Input to reshape is a tensor with {total} values, but the "
                        f"requested shape {shape} cannot hold them.")
        shape[shape.index(-1)] = total // known
    elif total is not None and total != known:
        checks.fail(op_name, f"Input to reshape is a tensor with {total} values, but the requested "
                    f"shape {shape} has {known}. Use -1 for one dimension to infer it.")
    return tuple(shape)


RESHAPE = _one(
    "reshape",
    lambda arrays, attrs: arrays[0].reshape(resolve_shape("reshape", arrays[0].shape,
                                                          attrs["shape"])),
    lambda specs, attrs: [Spec(resolve_shape("reshape", specs[0].shape, attrs["shape"]),
                               specs[0].dtype)],
    lambda record, grads: (A.reshape_like(grads[0], record.inputs[0]),), kind="view",
    cuda=lambda arrays, attrs: cuda_kernels.reshape(
        arrays[0], resolve_shape("reshape", arrays[0].shape, attrs["shape"])))


def _perm(op_name, perm, rank):
    """``perm`` (None: reversed) normalized to [0, rank); entries may be negative, as in TF."""
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if len(perm) != rank or any(not -rank <= p < rank for p in perm) or \
            sorted(p % rank for p in perm) != list(range(rank)):
        checks.fail(op_name, f"perm {perm} is not a permutation of the {rank} dimensions of the "
                    f"input (each of 0..{rank - 1} once; -{rank}..-1 count from the end).")
    return [p % rank for p in perm]


TRANSPOSE = _one(
    "transpose",
    lambda arrays, attrs: checks.contiguous(
        arrays[0].transpose(_perm("transpose", attrs["perm"], arrays[0].ndim))),
    lambda specs, attrs: [Spec(tuple(specs[0].shape[p] for p in
                                     _perm("transpose", attrs["perm"], len(specs[0].shape))),
                               specs[0].dtype)],
    lambda record, grads: (A.transpose(grads[0], list(np.argsort(
        _perm("transpose", record.attrs["perm"], record.inputs[0].ndim)))),),
    cuda=lambda arrays, attrs: cuda_kernels.transpose(
        arrays[0], _perm("transpose", attrs["perm"], arrays[0].ndim)))


def _broadcast_infer(specs, attrs):
    x = specs[0]
    target = tuple(attrs["shape"])
    for d in target:
        if d is not None and d < 0:
            checks.fail("broadcast_to", f"shape must have non-negative dimensions, got "
                        f"{checks.fmt_shape(target)}.")
    if x.shape == ():   # a scalar broadcasts to any shape (a full reduction's gradient)
        return [Spec(target, x.dtype)]
    # Each dimension of x (aligned at the end) is 1, the target's, or unknown while tracing
    # (then checked when the graph runs).
    checks.broadcast("broadcast_to", [x.shape, target])
    if x.shape is not None and (len(x.shape) > len(target) or any(
            d not in (1, None, t) for d, t in zip(x.shape[::-1], target[::-1]))):
        checks.fail("broadcast_to", f"cannot broadcast shape {checks.fmt_shape(x.shape)} to "
                    f"{checks.fmt_shape(target)}.")
    return [Spec(target, x.dtype)]


def _broadcast_to(arrays, attrs):
    out = np.empty(attrs["shape"], arrays[0].dtype)
    out[...] = arrays[0]   # a copy with broadcasting (np.broadcast_to's view costs more)
    return out


BROADCAST_TO = _one(
    "broadcast_to", _broadcast_to,
    _broadcast_infer,
    lambda record, grads: (unbroadcast(grads[0], record.inputs[0]),),
    cuda=lambda arrays, attrs: cuda_elementwise.broadcast_to(arrays[0], attrs["shape"]))


# ---- squeeze ------------------------------------------------------------------------------------
def _squeeze_infer(specs, attrs):
    """``axes``: the dimensions to remove (normalized), or None for every dimension of size 1 --
    which, with dimensions unknown while tracing, leaves even the rank to the run."""
    x, = specs
    axes = attrs["axes"]
    if x.shape is None or (axes is None and None in x.shape):
        return [Spec(None, x.dtype)]
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    for a in axes:
        if x.shape[a] not in (1, None):
            checks.fail("squeeze", f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                        f"{x.shape[a]} (shape {checks.fmt_shape(x.shape)}).")
    return [Spec(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)]


SQUEEZE = _one(
    "squeeze", lambda arrays, attrs: np.squeeze(arrays[0], attrs["axes"]), _squeeze_infer,
    lambda record, grads: (A.reshape_like(grads[0], record.inputs[0]),),
    cuda=lambda arrays, attrs: cuda_kernels.squeeze(arrays[0], attrs["axes"]))


# ---- cast, identity -----------------------------------------------------------------------------
def _cast_grad(record, grads):
    x = record.inputs[0]
    if not x.dtype.is_floating:
        return (None,)
    return (M.cast(grads[0], x.dtype),)


def _cast_infer(specs, attrs):
    x = specs[0]
    target = np.dtype(attrs["dtype"])
    if (x.dtype == object) != (target == object):
        raise UnimplementedError(None, "cast", f"cast: Cast {checks.dtype_name(x.dtype)} to "
                                 f"{checks.dtype_name(target)} is not supported (input shape "
                                 f"{checks.fmt_shape(x.shape)}).")
    return [Spec(x.shape, target)]


def _cast_eager(arrays, attrs):
    x, = arrays
    if x.dtype.kind == "c" and np.dtype(attrs["dtype"]).kind != "c":
        x = x.real   # as TF: the imaginary part is dropped (NumPy would warn)
    return x.astype(attrs["dtype"])


CAST = _one("cast", _cast_eager, _cast_infer, _cast_grad,
            cuda=lambda arrays, attrs: cuda_elementwise.cast(arrays[0], attrs["dtype"]))


def _same_array(arrays, attrs):
    return arrays[0]


# An alias's output is its input on any device: the same kernel serves the CPU and the GPU
# (placement copies the input first where the op runs elsewhere: tf.identity's copy).
IDENTITY = _one("identity", _same_array,
                lambda specs, attrs: [Spec(specs[0].shape, specs[0].dtype)],
                lambda record, grads: (grads[0],), kind="alias", cuda=_same_array)


# ---- concat and split ---------------------------------------------------------------------------
def _concat_infer(specs, attrs):
    if not specs:
        checks.fail("concat", "values must be a non-empty list of tensors.")
    rank = len(specs[0].shape)
    if rank == 0:
        checks.fail("concat", "cannot concatenate scalars; use tf.stack.")
    axis = checks.axis("concat", attrs["axis"], rank)
    checks.same_dtype("concat", specs, names=[f"values[{i}]" for i in range(len(specs))])
    total = 0
    for i, s in enumerate(specs):
        if len(s.shape) != rank or any(a != b and None not in (a, b)
                                       for j, (a, b) in enumerate(zip(s.shape, specs[0].shape))
                                       if j != axis):
            checks.fail("concat", f"values[{i}] has shape {checks.fmt_shape(s.shape)}, which does "
                        f"not match values[0]'s {checks.fmt_shape(specs[0].shape)} outside axis "
                        f"{axis}.")
        total = None if total is None or s.shape[axis] is None else total + s.shape[axis]
    shape = list(specs[0].shape)
    shape[axis] = total
    return [Spec(tuple(shape), specs[0].dtype)]


def _concat_grad(record, grads):
    axis = checks.axis("concat", record.attrs["axis"], record.inputs[0].ndim)
    sizes = [x.shape[axis] for x in record.inputs]
    return tuple(A.split(grads[0], sizes, axis=axis))


CONCAT = _one("concat",
              lambda arrays, attrs: np.concatenate(arrays, axis=attrs["axis"]),
              _concat_infer, _concat_grad,
              cuda=lambda arrays, attrs: cuda_kernels.concat(
                  arrays, checks.axis("concat", attrs["axis"], arrays[0].ndim)))


def split_sizes(op_name, dim, num_or_sizes):
    """The part sizes of splitting a dimension of size ``dim`` (None: unknown) into
    ``num_or_sizes`` equal parts (an int) or parts of the given sizes (one may be -1)."""
    try:
        num = operator.index(num_or_sizes)
    except TypeError:
        num = None
    if num is not None:
        if num <= 0 or (dim is not None and dim % num):
            checks.fail(op_name, f"cannot split a dimension of size {dim} into {num} equal parts.")
        return [None if dim is None else dim // num] * num
    sizes = checks.integers(op_name, num_or_sizes, "num_or_size_splits")
    if sizes.count(-1) > 1:
        checks.fail(op_name, f"at most one size may be -1, got {sizes}.")
    if dim is not None:
        if -1 in sizes:
            sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
        if sum(sizes) != dim or any(s < 0 for s in sizes):
            checks.fail(op_name, f"sizes {sizes} do not add up to the dimension's size {dim}.")
    return sizes


def _split_infer(specs, attrs):
    x, = specs
    if len(x.shape) == 0:
        checks.fail("split", "value must have rank >= 1, got a scalar.")
    axis = checks.axis("split", attrs["axis"], len(x.shape))
    sizes = split_sizes("split", x.shape[axis], attrs["sizes"])
    return [Spec(x.shape[:axis] + (s,) + x.shape[axis + 1:], x.dtype) for s in sizes]


def _split_axis(x, attrs):
    """(axis, part sizes) of a split of ``x`` when it runs."""
    axis = checks.axis("split", attrs["axis"], x.ndim)
    return axis, split_sizes("split", x.shape[axis], attrs["sizes"])


def _split_eager(arrays, attrs):
    x, = arrays
    axis, sizes = _split_axis(x, attrs)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


def _split_cuda(arrays, attrs):
    x, = arrays
    axis, sizes = _split_axis(x, attrs)
    return cuda_kernels.split(x, sizes, axis)


def _split_grad(record, grads):
    filled = [g if g is not None else A.zeros_like(y) for g, y in zip(grads, record.outputs)]
    return (A.concat(filled, axis=record.attrs["axis"]),)


SPLIT = _one("split", _split_eager, _split_infer, _split_grad, num_outputs=None,
             cuda=_split_cuda)


# ---- tile, pad ----------------------------------------------------------------------------------
def _tile_infer(specs, attrs):
    x, = specs
    multiples = [int(m) for m in attrs["multiples"]]
    if len(multiples) != len(x.shape) or any(m < 0 for m in multiples):
        checks.fail("tile", f"multiples {multiples} must have one non-negative entry per "
                    f"dimension of the input of shape {checks.fmt_shape(x.shape)}.")
    return [Spec(tuple(None if d is None else d * m for d, m in zip(x.shape, multiples)),
                 x.dtype)]


def _tile_grad(record, grads):
    x = record.inputs[0]
    multiples = [int(m) for m in record.attrs["multiples"]]
    split = []
    for m, d in zip(multiples, x.shape):
        split += [m, d]
    summed = M.reduce_sum(A.reshape(grads[0], split), axis=list(range(0, 2 * x.ndim, 2)))
    return (summed,)


TILE = _one("tile", lambda arrays, attrs: np.tile(arrays[0], [int(m) for m in attrs["multiples"]]),
            _tile_infer, _tile_grad,
            cuda=lambda arrays, attrs: cuda_kernels.tile(
                arrays[0], [int(m) for m in attrs["multiples"]]))


def _pad_infer(specs, attrs):
    x = specs[0]
    pads = np.asarray(attrs["paddings"]).reshape(-1, 2) if len(x.shape) else np.zeros((0, 2))
    if pads.shape != (len(x.shape), 2) or (pads < 0).any():
        checks.fail("pad", f"paddings must be non-negative with shape [{len(x.shape)}, 2] for an "
                    f"input of shape {checks.fmt_shape(x.shape)}, got {attrs['paddings']}.")
    return [Spec(tuple(None if d is None else d + int(a) + int(b)
                       for d, (a, b) in zip(x.shape, pads)), x.dtype)]


def _pad_eager(arrays, attrs):
    if arrays[0].ndim == 0:
        return arrays[0].copy()  # np.pad rejects 0-d arrays
    x = arrays[0]
    pads = np.asarray(attrs["paddings"], dtype=np.int64).reshape(-1, 2)
    if x.dtype == object:   # strings: np.pad would store NumPy bytes scalars
        out = np.full([d + a + b for d, (a, b) in zip(x.shape, pads)], attrs["constant_values"],
                      object)
        out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, pads))] = x
        return out
    return np.pad(x, pads, constant_values=attrs["constant_values"])


def _pad_cuda(arrays, attrs):
    x = arrays[0]
    pads = np.asarray(attrs["paddings"], dtype=np.int64).reshape(-1, 2)[:x.ndim]
    return cuda_kernels.pad(x, pads.tolist(), attrs["constant_values"])


def _pad_grad(record, grads):
    x = record.inputs[0]
    pads = np.asarray(record.attrs["paddings"]).reshape(-1, 2)
    index = tuple(slice(int(a), int(a) + d) for (a, _), d in zip(pads, x.shape))
    return (grads[0][index],)


PAD = _one("pad", _pad_eager, _pad_infer, _pad_grad, cuda=_pad_cuda)


# ---- gather, one_hot ----------------------------------------------------------------------------
def _gather_infer(specs, attrs):
    params, indices = specs
    if indices.dtype.kind not in "iu":
        raise TypeError(f"gather: indices must be int32 or int64, got "
                        f"{checks.dtype_name(indices.dtype)}.")
    if len(params.shape) == 0:
        checks.fail("gather", "params must have rank >= 1, got a scalar.")
    axis = checks.axis("gather", attrs["axis"], len(params.shape))
    return [Spec(params.shape[:axis] + tuple(indices.shape) + params.shape[axis + 1:],
                 params.dtype)]


def check_indices(op_name, indices, limit, what="indices", drop_negative=False):
    """Every index in [0, limit) (or negative, with ``drop_negative``), or InvalidArgumentError
    naming the first that is not.  Indices on a device are copied to the host to be read."""
    indices = devices.to_host(indices)
    if indices.size:
        bad = indices >= limit if drop_negative else (indices < 0) | (indices >= limit)
        if bad.any():
            where = np.argwhere(bad)[0]
            pos = ",".join(str(i) for i in where)
            checks.fail(op_name, f"{what}[{pos}] = {indices[tuple(where)]} is not in "
                        f"[0, {limit}).")


def _gather_check(arrays, attrs):
    params, indices = arrays
    axis = checks.axis("gather", attrs["axis"], params.ndim)
    check_indices("gather", indices, params.shape[axis])


def _gather_grad(record, grads):
    params, indices = record.inputs
    axis = checks.axis("gather", record.attrs["axis"], params.ndim)
    g = grads[0]
    n_index_dims = indices.ndim
    # Bring the index dimensions to the front, sum rows that share an index, move back.
    front = list(range(axis, axis + n_index_dims))
    rest = [i for i in range(g.ndim) if i not in front]
    moved = A.transpose(g, front + rest) if axis else g
    size = params.shape[axis]
    if size is None:   # known only when the graph runs
        size = A.shape(params)[axis]
    summed = S.unsorted_segment_sum(moved, indices, size)
    if axis:
        perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, params.ndim))
        summed = A.transpose(summed, perm)
    return summed, None


GATHER = _one("gather",
              lambda arrays, attrs: kernels.gather(arrays[0], arrays[1],
                                                   checks.axis("gather", attrs["axis"],
                                                               arrays[0].ndim)),
              _gather_infer, _gather_grad, check_values=_gather_check,
              cuda=lambda arrays, attrs: cuda_kernels.gather(
                  arrays[0], arrays[1], checks.axis("gather", attrs["axis"], arrays[0].ndim)))


def _one_hot_infer(specs, attrs):
    indices, = specs
    if indices.dtype.kind not in "iu":
        raise TypeError("one_hot: indices must be an integer tensor.")
    if attrs["depth"] < 0:
        checks.fail("one_hot", f"depth must be >= 0, got {attrs['depth']}.")
    rank = len(indices.shape) + 1
    axis = checks.axis("one_hot", attrs["axis"], rank)
    shape = list(indices.shape)
    shape.insert(axis, attrs["depth"])
    return [Spec(tuple(shape), np.dtype(attrs["dtype"]))]


def _one_hot_args(arrays, attrs):
    return (arrays[0], attrs["depth"], attrs["on_value"], attrs["off_value"],
            checks.axis("one_hot", attrs["axis"], arrays[0].ndim + 1), attrs["dtype"])


ONE_HOT = _one("one_hot",
               Kernel(lambda arrays, attrs: kernels.one_hot(*_one_hot_args(arrays, attrs)),
                      reference=lambda arrays, attrs: reference.one_hot(
                          *_one_hot_args(arrays, attrs))),
               _one_hot_infer,
               cuda=lambda arrays, attrs: cuda_kernels.one_hot(*_one_hot_args(arrays, attrs)))


# ---- slicing ------------------------------------------------------------------------------------
def slice_shape(op_name, shape, spec):
    """The result shape of indexing ``shape`` with a normalized index ``spec``."""
    out = []
    dim = 0
    for item in spec:
        if item is None:
            out.append(1)
        elif isinstance(item, slice):
            size = shape[dim]
            out.append(None if size is None else len(range(*item.indices(size))))
            dim += 1
        else:
            size = shape[dim]
            if size is not None and not -size <= item < size:
                checks.fail(op_name, f"slice index {item} of dimension {dim} out of bounds "
                            f"(size {size}, shape {checks.fmt_shape(shape)}).")
            dim += 1
    return tuple(out) + tuple(shape[dim:])


def _slice_infer(specs, attrs):
    return [Spec(slice_shape("strided_slice", specs[0].shape, attrs["spec"]), specs[0].dtype)]


STRIDED_SLICE = _one(
    "strided_slice", lambda arrays, attrs: checks.contiguous(arrays[0][attrs["spec"]]),
    _slice_infer,
    lambda record, grads: (A.strided_slice_grad(grads[0], record.inputs[0],
                                                record.attrs["spec"]),),
    cuda=lambda arrays, attrs: cuda_kernels.strided_slice(arrays[0], attrs["spec"]))


def _slice_grad_eager(arrays, attrs):
    g, x = arrays   # x: the sliced tensor, for its shape (perhaps unknown while tracing)
    out = np.zeros(x.shape, g.dtype)
    out[attrs["spec"]] = g
    return out


STRIDED_SLICE_GRAD = _one(
    "strided_slice_grad", _slice_grad_eager,
    lambda specs, attrs: [Spec(tuple(specs[1].shape), specs[0].dtype)],
    lambda record, grads: (A.strided_slice(grads[0], record.attrs["spec"]), None),
    cuda=lambda arrays, attrs: cuda_kernels.strided_slice_grad(arrays[0], arrays[1].shape,
                                                               attrs["spec"]))


# ---- ops that traced code needs where eager code reads the value directly ------------------------
# As a compile-time constant, a fill is a zero-strided view of its one value: any size folds.
FILL_LIKE = _one(
    "fill_like",
    Kernel(lambda arrays, attrs: np.full(np.shape(arrays[0]), attrs["value"], attrs["dtype"]),
           constant=lambda arrays, attrs: np.broadcast_to(
               np.asarray(attrs["value"], attrs["dtype"]), np.shape(arrays[0]))),
    lambda specs, attrs: [Spec(specs[0].shape, np.dtype(attrs["dtype"]))], shape_only=True,
    cuda=lambda arrays, attrs: cuda_elementwise.fill(np.shape(arrays[0]), attrs["value"],
                                                     attrs["dtype"]))
SHAPE = _one(
    "shape", lambda arrays, attrs: np.asarray(np.shape(arrays[0]), dtype=attrs["dtype"]),
    lambda specs, attrs: [Spec((len(specs[0].shape),), np.dtype(attrs["dtype"]))],
    shape_only=True)
STOP_GRADIENT = _one("stop_gradient", _same_array,
                     lambda specs, attrs: [Spec(specs[0].shape, specs[0].dtype)], kind="alias",
                     cuda=_same_array)
WHERE_INDICES = _one(
    "where_indices", lambda arrays, attrs: np.argwhere(arrays[0]).astype(np.int64),
    lambda specs, attrs: [Spec((None, len(specs[0].shape)), np.dtype(np.int64))])


# ---- shape-polymorphic helpers of gradient rules (dimensions may be unknown while tracing) -------
def _sum_to_shape(g, shape, reduce_sum=reduce_kernels.reduce_sum):
    """``g`` summed, with the backend's ``reduce_sum``, over its leading axes and the axes where
    ``shape`` has a 1, in ``shape``: the gradient of a broadcast from ``shape`` to g's."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and g.shape[lead + i] != 1)
    return reduce_sum(g, axes, True).reshape(shape) if axes else g.reshape(shape)


SUM_TO_LIKE = _one(
    "sum_to_like", lambda arrays, attrs: _sum_to_shape(arrays[0], arrays[1].shape),
    lambda specs, attrs: [Spec(specs[1].shape, specs[0].dtype)],
    lambda record, grads: (A.broadcast_like(grads[0], record.inputs[0]), None),
    cuda=lambda arrays, attrs: _sum_to_shape(arrays[0], tuple(arrays[1].shape),
                                             cuda_reduce.reduce_sum))
BROADCAST_LIKE = _one(
    "broadcast_like",
    lambda arrays, attrs: checks.contiguous(np.broadcast_to(arrays[0], arrays[1].shape)),
    lambda specs, attrs: [Spec(specs[1].shape, specs[0].dtype)],
    lambda record, grads: (A.sum_to_like(grads[0], record.inputs[0]), None),
    cuda=lambda arrays, attrs: cuda_elementwise.broadcast_to(arrays[0], arrays[1].shape))


def _reshape_like_infer(specs, attrs):
    value, like = specs
    known = [d for d in like.shape if d is not None]
    if value.shape and None not in value.shape and len(known) == len(like.shape) and \
            int(np.prod(value.shape)) != int(np.prod(known)):
        checks.fail("reshape", f"cannot reshape a tensor of shape {checks.fmt_shape(value.shape)}"
                    f" to {checks.fmt_shape(like.shape)}.")
    return [Spec(like.shape, value.dtype)]


def _reshape_like_check(arrays, attrs):
    value, like = arrays
    if value.size != like.size:
        checks.fail("reshape", f"cannot reshape a tensor of shape {list(value.shape)} to "
                    f"{list(like.shape)}.")


RESHAPE_LIKE = _one(
    "reshape_like", lambda arrays, attrs: arrays[0].reshape(arrays[1].shape),
    _reshape_like_infer, lambda record, grads: (A.reshape_like(grads[0], record.inputs[0]), None),
    check_values=_reshape_like_check)


def _reduced_kept(g, x, attrs):
    """``g`` (a reduction of ``x`` or its gradient) with the reduced axes kept as 1s."""
    if attrs["keepdims"]:
        return g
    return g.reshape(tuple(1 if i in attrs["axes"] else d for i, d in enumerate(x.shape)))


def _unreduce_eager(arrays, attrs):
    g, x = arrays
    return checks.contiguous(np.broadcast_to(_reduced_kept(g, x, attrs), x.shape))


UNREDUCE = _one(
    "unreduce", _unreduce_eager, lambda specs, attrs: [Spec(specs[1].shape, specs[0].dtype)],
    lambda record, grads: (M.reduce_sum(grads[0], axis=list(record.attrs["axes"]),
                                        keepdims=record.attrs["keepdims"]), None),
    cuda=lambda arrays, attrs: cuda_elementwise.broadcast_to(
        _reduced_kept(arrays[0], arrays[1], attrs), tuple(arrays[1].shape)))


def _range_length(start, limit, delta):
    """How many values tf.range gives (Python numbers), or InvalidArgumentError when the bounds
    give no count."""
    if delta == 0:
        checks.fail("range", "delta must not be zero.")
    if all(isinstance(v, int) for v in (start, limit, delta)):
        return len(range(start, limit, delta))
    steps = (limit - start) / delta
    if steps != steps:
        checks.fail("range", f"start, limit and delta must not be NaN, got {start}, {limit} and "
                    f"{delta}.")
    if not steps < 2.0 ** 63:
        checks.fail("range", f"(limit - start) / delta = {steps:g}: more values than a tensor "
                    "can hold (at most 2**63 - 1).")
    return max(math.ceil(steps), 0)


def _range_bounds(arrays, attrs):
    """start, limit and delta as Python numbers (from the host, or copied from a device), and
    the length of the range, checked."""
    start, limit, delta = [np.asarray(a).item() for a in arrays]
    length = _range_length(start, limit, delta)
    sizes.check_allocation("range", (length,), attrs["dtype"], "start, limit and delta")
    return start, limit, delta, length


def _range_eager(arrays, attrs):
    start, limit, delta, _ = _range_bounds(arrays, attrs)
    # (bounds beyond an integer dtype wrap, as in TF)
    return np.arange(start, limit, delta).astype(attrs["dtype"])


def _range_cuda(arrays, attrs):
    start, limit, delta, length = _range_bounds(arrays, attrs)
    # As np.arange: in int64 when all three are integers, else in float64 with the step taken
    # between the first two values (start + delta rounded), each value start + i * step.
    if not all(isinstance(v, int) for v in (start, limit, delta)):
        start, delta = float(start), float(start + delta) - float(start)
    return cuda_elementwise.arange(start, delta, length, attrs["dtype"])


RANGE = sizes.register_opaque("range", _range_eager,
                              lambda specs, attrs: [Spec((None,), np.dtype(attrs["dtype"]))],
                              cuda_kernel=_range_cuda)
