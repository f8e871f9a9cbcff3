"""``tf.linspace`` and ``tf.meshgrid``: evenly spaced values and coordinate grids.

Both are compositions of registered ops, so their gradients (to ``start`` and ``stop``, and to
each meshgrid input) come from those ops' rules, eagerly and in traced functions alike.
"""
import operator

import numpy as np

from hybridtf.api import array_ops as A
from hybridtf.api import check_ops
from hybridtf.api import math_ops as M
from hybridtf.eager.execute import as_tensor
from hybridtf.framework import dtypes
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import checks


def _num_tensor(num):
    """``num`` as an integer scalar tensor (a Python int, or an int32/int64 scalar tensor)."""
    if isinstance(num, Tensor) or getattr(num, "_is_variable", False):
        count = as_tensor(num)
    else:
        try:
            value = operator.index(num)
        except TypeError:
            raise TypeError(f"linspace: num must be an integer, got {num!r}.") from None
        if not 0 <= value <= np.iinfo(np.int64).max:
            checks.fail("linspace", f"num must be >= 0 (and fit in int64), got {value}.")
        count = Tensor(np.asarray(value, np.int64))
    if count.dtype not in (dtypes.int32, dtypes.int64) or count._shape_tuple != ():
        raise TypeError(f"linspace: num must be an int32 or int64 scalar, got a "
                        f"{count.dtype.name} tensor of shape {count.shape}.")
    if type(count) is not Tensor:   # known when the function runs: checked then
        check_ops.assert_non_negative(count, message="linspace: num must be >= 0")
    elif int(count._value) < 0:
        checks.fail("linspace", f"num must be >= 0 (and fit in int64), got "
                                f"{int(count._value)}.")
    return M.cast(count, dtypes.int64)


def _to_rank(t, rank):
    """``t`` with leading dimensions of size 1 added up to ``rank`` (for broadcasting)."""
    while t.ndim < rank:
        t = A.expand_dims(t, 0)
    return t


def linspace(start, stop, num, name=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive, along a new dimension
    ``axis`` of the broadcast shape of ``start`` and ``stop`` (tensors give batches of ranges).

    Integer ``start`` and ``stop`` give float64 values, as in TF; ``stop`` takes ``start``'s
    dtype.  ``num`` = 1 gives ``start``; both ends are exact.
    """
    start_t = as_tensor(start)
    if isinstance(stop, Tensor) or getattr(stop, "_is_variable", False):
        stop_t = as_tensor(stop)
    else:
        stop_t = convert_to_tensor(stop, start_t.dtype)
    if stop_t.dtype != start_t.dtype:
        raise TypeError(f"linspace: stop has dtype {stop_t.dtype.name} but start has dtype "
                        f"{start_t.dtype.name}; cast one of them with tf.cast.")
    if start_t.dtype.is_integer:
        start_t, stop_t = M.cast(start_t, dtypes.float64), M.cast(stop_t, dtypes.float64)
    elif not start_t.dtype.is_floating:
        raise TypeError(f"linspace: start and stop must be floating point or integer tensors, "
                        f"got dtype {start_t.dtype.name}.")
    count = _num_tensor(num)
    rank = max(start_t.ndim, stop_t.ndim)
    position = checks.axis("linspace", axis, rank + 1)
    begin = A.expand_dims(_to_rank(start_t, rank), position)
    end = A.expand_dims(_to_rank(stop_t, rank), position)
    steps = A.range(count, dtype=dtypes.int64)
    steps = A.reshape(steps, [1] * position + [-1] + [1] * (rank - position))
    dtype = start_t.dtype
    fraction = M.cast(steps, dtype)
    intervals = M.cast(M.maximum(count - 1, 1), dtype)
    values = begin + fraction * ((end - begin) / intervals)
    # The last value is exactly ``stop`` (as TF), except that num = 1 gives just ``start``.
    last = M.logical_and(M.equal(steps, count - 1), M.greater(steps, 0))
    return M.where(last, end, values)


def meshgrid(*args, **kwargs):
    """Coordinate arrays for a grid over the given 1-D coordinate vectors (each input is
    flattened).  ``indexing='xy'`` (default, Cartesian) swaps the first two output dimensions;
    ``indexing='ij'`` (matrix) keeps the inputs' order.  Every output has the grid's shape.
    """
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: {sorted(kwargs)[0]!r} is an invalid keyword argument; it "
                        "takes only `indexing` and `name`.")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be either 'xy' or 'ij', got {indexing!r}.")
    vectors = [A.reshape(as_tensor(a), [-1]) for a in args]
    for i, v in enumerate(vectors[1:], 1):
        if v.dtype != vectors[0].dtype:
            raise TypeError(f"meshgrid: all inputs must have the same dtype, but input 0 has "
                            f"{vectors[0].dtype.name} and input {i} has {v.dtype.name}.")
    ndim = len(vectors)
    positions = list(range(ndim))
    if indexing == "xy" and ndim > 1:
        positions[0], positions[1] = 1, 0
    placed = [A.reshape(v, [1] * p + [-1] + [1] * (ndim - p - 1))
              for v, p in zip(vectors, positions)]
    sizes = [v._shape_tuple[0] for v in vectors]
    if None not in sizes:
        grid = [sizes[positions.index(d)] for d in range(ndim)]
        return [A.broadcast_to(t, grid) for t in placed]
    # Sizes known only when the graph runs: broadcast against a carrier of the grid's shape.
    carrier = None
    for t in placed:
        zeros = A.zeros_like(t, dtype=dtypes.float32)
        carrier = zeros if carrier is None else carrier + zeros
    return [A.broadcast_like(t, carrier) for t in placed]
