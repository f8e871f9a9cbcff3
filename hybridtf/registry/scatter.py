"""Index-tuple ops: gather_nd, scatter_nd, tensor_scatter_nd_*, boolean_mask, and the taking and
putting along an axis that sorting gradients use.

Every index is checked against the shape it indexes before a kernel runs.
"""
import numpy as np

from ops import scatter as kernels
from ops.cuda import array as cuda_kernels

from hybridtf.framework import devices
from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import math_ops as M
from hybridtf.registry.public_ops import scatter_ops as X
from hybridtf.registry import Spec, checks, sizes

REAL = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
        "uint32", "uint64")


# ---- shared checks ------------------------------------------------------------------------------
def compatible(a, b):
    """Whether two shapes (dims may be None) can be the same."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def check_index_tuples(op_name, indices, dims, shape, batch_dims=0, what="shape"):
    """Every index tuple (the last axis of ``indices``) inside ``dims``, or InvalidArgumentError
    naming the first that is not, the ``shape`` indexed and the valid range of each entry."""
    if indices.size == 0:
        return
    bad = ((indices < 0) | (indices >= np.asarray(dims, np.int64))).any(axis=-1)
    if bad.any():
        where = np.argwhere(bad)[0]
        ranges = " x ".join(f"[0, {d})" for d in dims)
        batch = f" after its {batch_dims} batch dimensions" if batch_dims else ""
        checks.fail(op_name, f"indices[{','.join(str(i) for i in where)}] = "
                    f"{indices[tuple(where)].tolist()} does not index into {what} "
                    f"{checks.fmt_shape(shape)}{batch}: an index must lie in {ranges}.")


def _tuple_length(op_name, indices, rank, batch_dims, what):
    """K, the length of the index tuples, checked against the rank of the indexed shape; None
    while tracing with indices whose last dimension is unknown (checked when the op runs)."""
    checks.integer_dtype(op_name, indices.dtype)
    if len(indices.shape) < 1 + batch_dims:
        checks.fail(op_name, f"indices must have rank >= {1 + batch_dims} (index tuples along "
                    f"the last axis), got shape {checks.fmt_shape(indices.shape)}.")
    k = indices.shape[-1]
    if k is not None and batch_dims + k > rank:
        checks.fail(op_name, f"index tuples of length {k} cannot index into {what} of rank "
                    f"{rank}{f' after {batch_dims} batch dimensions' if batch_dims else ''} "
                    f"(indices shape {checks.fmt_shape(indices.shape)}).")
    return k


def _batch_check(op_name, shape, indices_shape, batch_dims, what):
    if not compatible(tuple(shape[:batch_dims]), tuple(indices_shape[:batch_dims])):
        checks.fail(op_name, f"the {batch_dims} batch dimensions of {what} "
                    f"{checks.fmt_shape(shape)} and indices {checks.fmt_shape(indices_shape)} "
                    "differ.")


# ---- gather_nd ----------------------------------------------------------------------------------
def _gather_nd_infer(specs, attrs):
    params, indices = specs
    b = attrs["batch_dims"]
    if params.shape is None or indices.shape is None:   # checked when the op runs
        checks.integer_dtype("gather_nd", indices.dtype)
        return [Spec(None, params.dtype)]
    if len(params.shape) == 0:
        checks.fail("gather_nd", "params must have rank >= 1, got a scalar.")
    k = _tuple_length("gather_nd", indices, len(params.shape), b, "params")
    _batch_check("gather_nd", params.shape, indices.shape, b, "params")
    if k is None:   # the rank of the result depends on it: unknown, as in TF
        return [Spec(None, params.dtype)]
    return [Spec(tuple(indices.shape[:-1]) + tuple(params.shape[b + k:]), params.dtype)]


def _gather_nd_check(arrays, attrs):
    params, indices = arrays
    indices = devices.to_host(indices)   # read on the host, where the kernel runs on a device
    b = attrs["batch_dims"]
    check_index_tuples("gather_nd", indices, params.shape[b:b + indices.shape[-1]],
                       params.shape, b, "params of shape")


GATHER_ND = sizes.register_opaque(
    "gather_nd",
    lambda arrays, attrs: kernels.gather_nd(arrays[0], arrays[1], attrs["batch_dims"]),
    _gather_nd_infer,
    lambda record, grads: (X.scatter_nd_batched(record.inputs[1], grads[0],
                                                A.shape(record.inputs[0], out_type=np.int64),
                                                record.attrs["batch_dims"]), None),
    check_values=_gather_nd_check,
    cuda_kernel=lambda arrays, attrs: cuda_kernels.gather_nd(arrays[0], arrays[1],
                                                             attrs["batch_dims"]))


# ---- scatter_nd and tensor_scatter_nd_* ---------------------------------------------------------
def _scatter_shapes(op_name, shape, indices, updates, batch_dims=0):
    """Checks that ``updates`` fits index tuples ``indices`` into ``shape`` (as far as their
    ranks are known: the rest is checked when the op runs)."""
    checks.integer_dtype(op_name, indices.dtype)
    if shape is None or indices.shape is None or updates.shape is None:
        return
    k = _tuple_length(op_name, indices, len(shape), batch_dims, "a tensor")
    _batch_check(op_name, shape, indices.shape, batch_dims, "the output")
    if k is None:
        return
    expected = tuple(indices.shape[:-1]) + tuple(shape[batch_dims + k:])
    if not compatible(tuple(updates.shape), expected):
        checks.fail(op_name, f"updates has shape {checks.fmt_shape(updates.shape)}, but indices "
                    f"of shape {checks.fmt_shape(indices.shape)} into a tensor of shape "
                    f"{checks.fmt_shape(shape)} need updates of shape "
                    f"{checks.fmt_shape(expected)}.")


def _scatter_dtype(op_name, dtype, allow_bool):
    allowed = REAL + (("bool",) if allow_bool else ())
    checks.allowed_dtype(op_name, dtype, allowed, "updates")


def _scatter_nd_infer(specs, attrs):
    indices, updates = specs[:2]
    _scatter_dtype("scatter_nd", updates.dtype, True)
    shape = attrs["shape"]
    if shape is None:
        length = specs[2].shape[0]
        shape = (None,) * length
    elif any(d < 0 for d in shape):
        checks.fail("scatter_nd", f"shape must have non-negative dimensions, got {shape}.")
    _scatter_shapes("scatter_nd", tuple(shape), indices, updates, attrs["batch_dims"])
    return [Spec(tuple(shape), updates.dtype)]


def _scatter_nd_check(arrays, attrs):
    indices, updates = arrays[:2]
    shape = tuple(sizes.value(arrays, attrs, "shape"))
    b = attrs["batch_dims"]
    if attrs["shape"] is None:   # known only now: the checks tracing could not make
        if any(d < 0 for d in shape):
            checks.fail("scatter_nd", f"shape must have non-negative dimensions, got "
                        f"{list(shape)}.")
        _scatter_shapes("scatter_nd", shape, Spec(indices.shape, indices.dtype),
                        Spec(updates.shape, updates.dtype), b)
    check_index_tuples("scatter_nd", indices, shape[b:b + indices.shape[-1]], shape, b)


def _scatter_nd_eager(arrays, attrs):
    indices, updates = arrays[:2]
    shape = tuple(sizes.value(arrays, attrs, "shape"))
    # Repeated indices sum; for bools that is a logical or.
    mode = kernels.MAX if updates.dtype == np.bool_ else kernels.ADD
    return kernels.scatter_nd(indices, updates, np.zeros(shape, updates.dtype), mode,
                              attrs["batch_dims"])


SCATTER_ND = sizes.register_opaque(
    "scatter_nd", _scatter_nd_eager, _scatter_nd_infer,
    lambda record, grads: (None, X.gather_nd(grads[0], record.inputs[0],
                                             batch_dims=record.attrs["batch_dims"]), None),
    check_values=_scatter_nd_check)


def _tensor_scatter(mode):
    name = f"tensor_scatter_nd_{mode}"

    def infer(specs, attrs):
        tensor, indices, updates = specs
        _scatter_dtype(name, tensor.dtype, mode == "update")
        checks.same_dtype(name, [tensor, updates], names=("tensor", "updates"))
        _scatter_shapes(name, None if tensor.shape is None else tuple(tensor.shape), indices,
                        updates)
        return [Spec(tensor.shape, tensor.dtype)]

    def check(arrays, attrs):
        tensor, indices, _ = arrays
        check_index_tuples(name, indices, tensor.shape[:indices.shape[-1]], tensor.shape)

    def eager(arrays, attrs):
        tensor, indices, updates = arrays
        return kernels.scatter_nd(indices, updates, tensor, kernels.MODES[mode])

    return name, eager, infer, check


def _scatter_update_grad(record, grads):
    _, indices, updates = record.inputs
    g = grads[0]
    return (X.tensor_scatter_nd_update(g, indices, A.zeros_like(updates)), None,
            X.gather_nd(g, indices))


def _scatter_add_grad(record, grads):
    return grads[0], None, X.gather_nd(grads[0], record.inputs[1])


def _scatter_sub_grad(record, grads):
    return grads[0], None, M.negative(X.gather_nd(grads[0], record.inputs[1]))


def _scatter_extremum_grad(record, grads):
    # Every element equal to the result shares its gradient: the tensor's element and each
    # update written into it alike.
    tensor, indices, updates = record.inputs
    out = record.outputs[0]
    g = grads[0]
    tensor_hit = M.cast(M.equal(tensor, out), g.dtype)
    update_hit = M.cast(M.equal(updates, X.gather_nd(out, indices)), g.dtype)
    share = g / (tensor_hit + X.scatter_nd(indices, update_hit,
                                           A.shape(tensor, out_type=np.int64)))
    return share * tensor_hit, None, X.gather_nd(share, indices) * update_hit


def _tensor_scatter_op(mode, grad):
    name, eager, infer, check = _tensor_scatter(mode)
    return sizes.register_opaque(name, eager, infer, grad, check_values=check)


TENSOR_SCATTER_UPDATE = _tensor_scatter_op("update", _scatter_update_grad)
TENSOR_SCATTER_ADD = _tensor_scatter_op("add", _scatter_add_grad)
TENSOR_SCATTER_SUB = _tensor_scatter_op("sub", _scatter_sub_grad)
TENSOR_SCATTER_MAX = _tensor_scatter_op("max", _scatter_extremum_grad)
TENSOR_SCATTER_MIN = _tensor_scatter_op("min", _scatter_extremum_grad)


# ---- boolean_mask -------------------------------------------------------------------------------
def mask_axis(tensor_shape, mask_shape, axis):
    """``axis`` normalised, checking that ``mask_shape`` matches the tensor's dimensions there."""
    if len(mask_shape) == 0:
        checks.fail("boolean_mask", "mask cannot be a scalar; it must cover at least one "
                    "dimension of the tensor.")
    rank = len(tensor_shape)
    axis = checks.axis("boolean_mask", axis, rank) if rank else 0
    covered = tuple(tensor_shape[axis:axis + len(mask_shape)])
    if axis + len(mask_shape) > rank or not compatible(covered, tuple(mask_shape)):
        checks.fail("boolean_mask", f"mask of shape {checks.fmt_shape(mask_shape)} does not "
                    f"match the dimensions of tensor {checks.fmt_shape(tensor_shape)} from axis "
                    f"{axis}.")
    return axis


def _boolean_mask_infer(specs, attrs):
    tensor, mask = specs
    if mask.dtype.kind not in "biu":
        raise TypeError(f"boolean_mask: mask must be a bool tensor, got "
                        f"{checks.dtype_name(mask.dtype)}.")
    if tensor.shape is None or mask.shape is None:   # checked when the op runs
        return [Spec(None, tensor.dtype)]
    axis = mask_axis(tensor.shape, mask.shape, attrs["axis"])
    # The number of true entries is known only when the op runs.
    kept = (None,) + tuple(tensor.shape[axis + len(mask.shape):])
    return [Spec(tuple(tensor.shape[:axis]) + kept, tensor.dtype)]


def _boolean_mask_eager(arrays, attrs):
    tensor, mask = arrays
    return kernels.boolean_mask(tensor, mask, mask_axis(tensor.shape, mask.shape, attrs["axis"]))


BOOLEAN_MASK = sizes.register_opaque(
    "boolean_mask", _boolean_mask_eager, _boolean_mask_infer,
    lambda record, grads: (X.boolean_mask_grad(grads[0], record.inputs[1], record.inputs[0],
                                               record.attrs["axis"]), None))


def _boolean_mask_grad_eager(arrays, attrs):
    values, mask, like = arrays
    axis = mask_axis(like.shape, mask.shape, attrs["axis"])
    return kernels.boolean_mask_grad(values, mask, like.shape, axis)


def _boolean_mask_grad_check(arrays, attrs):
    values, mask, like = arrays
    axis = mask_axis(like.shape, mask.shape, attrs["axis"])
    if values.shape[axis] != np.count_nonzero(mask):
        checks.fail("boolean_mask", f"the gradient has {values.shape[axis]} masked slices but "
                    f"the mask selects {np.count_nonzero(mask)}.")


BOOLEAN_MASK_GRAD = sizes.register_opaque(
    "boolean_mask_grad", _boolean_mask_grad_eager,
    lambda specs, attrs: [Spec(specs[2].shape, specs[0].dtype)],
    lambda record, grads: (X.boolean_mask(grads[0], record.inputs[1], axis=record.attrs["axis"]),
                           None, None),
    check_values=_boolean_mask_grad_check)


# ---- taking and putting along an axis (the gradients of sorts and top_k) ------------------------
def _along_infer(op_name, x_shape, indices, axis):
    checks.integer_dtype(op_name, indices.dtype)
    if x_shape is None or indices.shape is None:   # checked when the op runs
        return
    rank = len(x_shape)
    if rank == 0 or len(indices.shape) != rank:
        checks.fail(op_name, f"indices {checks.fmt_shape(indices.shape)} must have the rank of "
                    f"the tensor {checks.fmt_shape(x_shape)} (>= 1).")
    axis = checks.axis(op_name, axis, rank)
    others = [i for i in range(rank) if i != axis]
    if not compatible(tuple(x_shape[i] for i in others),
                      tuple(indices.shape[i] for i in others)):
        checks.fail(op_name, f"indices {checks.fmt_shape(indices.shape)} and tensor "
                    f"{checks.fmt_shape(x_shape)} must match outside axis {axis}.")
    return axis


def _along_check(op_name, x_shape, indices, axis):
    axis = checks.axis(op_name, axis, len(x_shape))
    if indices.size:
        n = x_shape[axis]
        bad = (indices < 0) | (indices >= n)
        if bad.any():
            where = np.argwhere(bad)[0]
            checks.fail(op_name, f"indices[{','.join(str(i) for i in where)}] = "
                        f"{indices[tuple(where)]} is not in [0, {n}) (axis {axis} of shape "
                        f"{checks.fmt_shape(x_shape)}).")


def _take_along_infer(specs, attrs):
    x, indices = specs
    _along_infer("take_along_axis", x.shape, indices, attrs["axis"])
    return [Spec(indices.shape, x.dtype)]


TAKE_ALONG_AXIS = sizes.register_opaque(
    "take_along_axis",
    lambda arrays, attrs: kernels.take_along_axis(
        arrays[0], arrays[1], checks.axis("take_along_axis", attrs["axis"], arrays[0].ndim)),
    _take_along_infer,
    lambda record, grads: (X.put_along_axis(grads[0], record.inputs[1], record.inputs[0],
                                            record.attrs["axis"]), None),
    check_values=lambda arrays, attrs: _along_check("take_along_axis", arrays[0].shape,
                                                    arrays[1], attrs["axis"]))


def _put_along_infer(specs, attrs):
    values, indices, like = specs
    _along_infer("put_along_axis", like.shape, indices, attrs["axis"])
    if values.shape is not None and indices.shape is not None and \
            not compatible(tuple(values.shape), tuple(indices.shape)):
        checks.fail("put_along_axis", f"values {checks.fmt_shape(values.shape)} and indices "
                    f"{checks.fmt_shape(indices.shape)} must have the same shape.")
    return [Spec(like.shape, values.dtype)]


PUT_ALONG_AXIS = sizes.register_opaque(
    "put_along_axis",
    lambda arrays, attrs: kernels.put_along_axis_add(
        arrays[0], arrays[1], arrays[2].shape,
        checks.axis("put_along_axis", attrs["axis"], arrays[2].ndim)),
    _put_along_infer,
    lambda record, grads: (X.take_along_axis(grads[0], record.inputs[1], record.attrs["axis"]),
                           None, None),
    check_values=lambda arrays, attrs: _along_check("put_along_axis", arrays[2].shape,
                                                    arrays[1], attrs["axis"]))
