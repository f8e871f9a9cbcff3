"""Sorting and searching: ``tf.sort``, ``tf.argsort``, ``tf.math.top_k``, ``tf.math.in_top_k``,
``tf.searchsorted``, ``tf.unique`` and ``tf.unique_with_counts``."""
import collections

import numpy as np

from hybridtf.eager.execute import as_tensor, execute, execute1
from hybridtf.framework import dtypes
from hybridtf.registry import sizes
from hybridtf.registry import sorting as SR

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])
Unique = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _direction(op_name, direction):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{op_name}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}.")
    return direction == "DESCENDING"


def _axis(op_name, axis):
    static, _ = sizes.split(axis, op_name, "axis")
    if static is None:
        raise TypeError(f"{op_name}: axis must be known when the function is traced (a Python "
                        "int), not a tensor computed inside it.")
    return static


def _sort(op_name, values, axis, direction):
    attrs = {"axis": _axis(op_name, axis), "descending": _direction(op_name, direction),
             "name": op_name}
    return execute(SR.SORT, [as_tensor(values)], attrs)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` ('ASCENDING' or 'DESCENDING').

    Equal values keep their order; NaNs go after every number (before, descending).
    """
    return _sort("sort", values, axis, direction)[0]


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort ``values`` along ``axis``.

    The sort is always stable (equal values keep their order), so ``stable`` changes nothing.
    """
    return _sort("argsort", values, axis, direction)[1]


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002
    """The ``k`` largest entries of each row (last dimension) of ``input``, largest first, and
    their indices: ``TopKV2(values, indices)``.

    Equal values are ordered by index (the lower index first).  The entries are always sorted;
    ``sorted=False`` allows any order, and this one is as good as any.
    """
    x = as_tensor(input)
    index_dtype = dtypes.as_dtype(index_type)
    if index_dtype not in (dtypes.int16, dtypes.int32, dtypes.int64):
        raise TypeError(f"top_k: index_type must be int16, int32 or int64, got "
                        f"{index_dtype.name}.")
    static, dynamic = sizes.split(k, "top_k", "k")
    values, indices = execute(SR.TOP_K, [x] + sizes.inputs(dynamic),
                              {"k": static, "index_type": index_dtype.as_numpy_dtype})
    return TopKV2(values, indices)


def in_top_k(targets, predictions, k, name=None):
    """Whether each ``targets[i]`` is among the ``k`` largest ``predictions[i, :]``: a bool
    vector.

    A class tied with the k-th largest value counts as in the top k.  A target out of range, or
    a row of predictions with a NaN or an infinity, gives False.
    """
    t = as_tensor(targets)
    p = as_tensor(predictions)
    static, dynamic = sizes.split(k, "in_top_k", "k")
    return execute1(SR.IN_TOP_K, [t, p] + sizes.inputs(dynamic), {"k": static})


def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None):
    """Where each of ``values`` would go in ``sorted_sequence`` to keep it sorted.

    Searches along the last dimension: row ``r`` of ``values`` in row ``r`` of
    ``sorted_sequence``.  ``side='left'`` gives the first suitable position, ``'right'`` the
    last.
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}.")
    s = as_tensor(sorted_sequence)
    v = as_tensor(values, s.dtype)
    return execute1(SR.SEARCHSORTED, [s, v],
                    {"side": side, "out_type": dtypes.as_dtype(out_type).as_numpy_dtype})


def _unique(x, out_idx):
    index = np.dtype(dtypes.as_dtype(out_idx).as_numpy_dtype)
    if index not in (np.int32, np.int64):
        raise TypeError(f"unique: out_idx must be int32 or int64, got {out_idx!r}.")
    return execute(SR.UNIQUE, [as_tensor(x)], {"out_idx": index})


def unique(x, out_idx=dtypes.int32, name=None):
    """The distinct values of the 1-D ``x`` in order of first occurrence, and for each element
    of ``x`` the index of its value among them: ``Unique(y, idx)``.  Inside a ``tf.function``
    the length of ``y`` is unknown (None)."""
    y, idx, _ = _unique(x, out_idx)
    return Unique(y, idx)


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """``unique`` with the number of times each distinct value occurs:
    ``UniqueWithCounts(y, idx, count)``."""
    return UniqueWithCounts(*_unique(x, out_idx))
