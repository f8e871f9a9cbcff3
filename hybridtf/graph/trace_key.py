"""Trace-cache keys: which calls of a ``hybridtf.function`` may share one trace.

As in TF 2, tensors (and NumPy arrays, which are treated as tensors) are keyed by dtype and
shape; Python scalars and other hashable values by type and value; unhashable objects by
identity; lists, tuples, dicts and namedtuples by their structure and their items' keys.
Arguments are first canonicalised against the function's signature, so ``f(1, y=2)``,
``f(1, 2)`` and ``f(x=1)`` with a default ``y=2`` share one key.
"""
import collections.abc
import inspect
from typing import NamedTuple

import numpy as np

from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec


class TensorKey(NamedTuple):
    """A tensor argument: its dtype name and shape (dims may be None after relaxing)."""

    dtype: str
    shape: tuple

    def describe(self):
        return f"tensor of dtype {self.dtype} and shape {TensorShape(self.shape)}"


class ValueKey(NamedTuple):
    """A hashable Python argument, keyed by its type and value (1, 1.0 and True differ)."""

    type_name: str
    value: object

    def describe(self):
        return f"Python {self.type_name} {self.value!r}"


class IdentityKey(NamedTuple):
    """An unhashable object: only the same object may reuse a trace."""

    type_name: str
    object_id: int

    def describe(self):
        return f"{self.type_name} object at {self.object_id:#x}"


class StructureKey(NamedTuple):
    """A list, tuple, namedtuple or dict: its kind and its items' keys."""

    kind: str
    items: tuple

    def describe(self):
        return f"{self.kind} of {len(self.items)} items"


def key_of(value):
    """The trace-cache key of one argument value."""
    if isinstance(value, TensorSpec):
        return TensorKey(value.dtype.name, tuple(value.shape.dims) if value.shape.rank is not None
                         else None)
    if isinstance(value, (np.ndarray, np.generic)):
        return TensorKey(dtypes.as_dtype(value.dtype).name, np.shape(value))
    if isinstance(value, Tensor):
        return TensorKey(value.dtype.name, tuple(value.shape))
    if getattr(value, "_is_variable", False):
        # Variables are used by reference, so a trace belongs to the variable it was made with.
        return IdentityKey("Variable", id(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return StructureKey(f"namedtuple {type(value).__qualname__}",
                            tuple(key_of(v) for v in value))
    if isinstance(value, (list, tuple)):
        return StructureKey(type(value).__name__, tuple(key_of(v) for v in value))
    if isinstance(value, collections.abc.Mapping):
        return StructureKey("dict", tuple(sorted(((repr(k), key_of(v)) for k, v in value.items()),
                                                 key=lambda kv: kv[0])))
    try:
        hash(value)
    except TypeError:
        return IdentityKey(type(value).__name__, id(value))
    return ValueKey(type(value).__name__, value)


def bind(signature, args, kwargs):
    """The call's ``inspect.BoundArguments`` with defaults applied (TypeError if it can't bind)."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound


def canonical_arguments(signature, args, kwargs):
    """(name, value) pairs for a call, in parameter order, with defaults filled in.

    ``signature`` is the ``inspect.Signature`` of the Python function.  Raises TypeError for a
    call the function could not accept.
    """
    return arguments_of(bind(signature, args, kwargs))


def arguments_of(bound):
    """(name, value) pairs of bound arguments, ``*args`` and ``**kwargs`` spread out."""
    signature = bound.signature
    pairs = []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            pairs += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            pairs += [(f"{name}[{k!r}]", value[k]) for k in sorted(value)]
        else:
            pairs.append((name, value))
    return pairs


def call_key(pairs):
    """The key of a whole call, from ``canonical_arguments``."""
    return tuple((name, key_of(value)) for name, value in pairs)


def without_sizes(key):
    """``key`` (a call's, or one argument's) with each tensor's shape reduced to its rank and
    each object's identity to its type: what calls of one function with other sizes, or in
    another process, have in common (``ops.kernel_prefetch`` keys working sets by it)."""
    if isinstance(key, TensorKey):
        return TensorKey(key.dtype, None if key.shape is None else len(key.shape))
    if isinstance(key, IdentityKey):
        return IdentityKey(key.type_name, 0)
    if isinstance(key, ValueKey):
        return key
    if isinstance(key, StructureKey):
        return StructureKey(key.kind, without_sizes(key.items))
    if isinstance(key, tuple):
        return tuple(without_sizes(item) for item in key)
    return key


# ---- shape relaxation (reduce_retracing) ---------------------------------------------------------
def relax(old, new):
    """The most specific key covering both, when they differ only in tensor dimensions.

    Returns None when the keys differ in anything else (a dtype, a rank, a Python value, the
    structure), since no single trace can serve both.
    """
    if isinstance(old, TensorKey) and isinstance(new, TensorKey):
        if old.dtype != new.dtype or old.shape is None or new.shape is None \
                or len(old.shape) != len(new.shape):
            return None if old.dtype != new.dtype else TensorKey(old.dtype, None)
        return TensorKey(old.dtype, tuple(a if a == b else None
                                          for a, b in zip(old.shape, new.shape)))
    if isinstance(old, StructureKey) and isinstance(new, StructureKey):
        if old.kind != new.kind or len(old.items) != len(new.items):
            return None
        items = []
        for a, b in zip(old.items, new.items):
            if old.kind == "dict":
                if a[0] != b[0]:
                    return None
                inner = relax(a[1], b[1])
                item = None if inner is None else (a[0], inner)
            else:
                item = relax(a, b)
            if item is None:
                return None
            items.append(item)
        return StructureKey(old.kind, tuple(items))
    return old if old == new else None


def relax_call(old, new):
    """``relax`` for whole call keys (tuples of (argument name, key) pairs)."""
    if len(old) != len(new):
        return None
    pairs = []
    for (name_a, a), (name_b, b) in zip(old, new):
        inner = relax(a, b) if name_a == name_b else None
        if inner is None:
            return None
        pairs.append((name_a, inner))
    return tuple(pairs)


def covers(general, specific):
    """True when a trace for key ``general`` can run a call with key ``specific``."""
    if isinstance(general, TensorKey) and isinstance(specific, TensorKey):
        if general.dtype != specific.dtype:
            return False
        if general.shape is None:
            return True
        return specific.shape is not None and len(general.shape) == len(specific.shape) and all(
            g is None or g == s for g, s in zip(general.shape, specific.shape))
    if isinstance(general, StructureKey) and isinstance(specific, StructureKey):
        if general.kind != specific.kind or len(general.items) != len(specific.items):
            return False
        if general.kind == "dict":
            return all(a[0] == b[0] and covers(a[1], b[1])
                       for a, b in zip(general.items, specific.items))
        return all(covers(a, b) for a, b in zip(general.items, specific.items))
    return general == specific


def covers_call(general, specific):
    """``covers`` for whole call keys."""
    return len(general) == len(specific) and all(
        na == nb and covers(a, b) for (na, a), (nb, b) in zip(general, specific))


# ---- retracing diagnostics -----------------------------------------------------------------------
def differences(old, new):
    """Human-readable lines naming each argument whose key changed between two calls."""
    old_args, new_args = dict(old), dict(new)
    lines = []
    for name in list(dict.fromkeys(list(old_args) + list(new_args))):
        a, b = old_args.get(name), new_args.get(name)
        if a == b:
            continue
        if a is None or b is None:
            lines.append(f"argument {name!r} was {'added' if a is None else 'removed'}")
        else:
            lines.append(f"argument {name!r}: {_describe(a)} -> {_describe(b)}")
    return lines


def _describe(key):
    return key.describe() if hasattr(key, "describe") else repr(key)


def advice(old, new):
    """What to do about retracing, given the keys of two calls that did not share a trace."""
    kinds = {type(b) for (_, a), (_, b) in zip(old, new) if a != b} | \
        {type(a) for (_, a), (_, b) in zip(old, new) if a != b}
    tips = []
    if ValueKey in kinds:
        tips.append("pass a tensor instead of a Python number, so that new values reuse the "
                    "trace (every distinct Python value is a new trace)")
    if TensorKey in kinds or StructureKey in kinds:
        tips.append("give an input_signature with None for the dimensions that vary, or use "
                    "reduce_retracing=True")
    if IdentityKey in kinds:
        tips.append("pass the same object each time, or a hashable one")
    return tips
