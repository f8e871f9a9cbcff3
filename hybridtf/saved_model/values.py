"""Python values as JSON: op attributes, argument templates and output structures.

JSON has no tuples, slices, NumPy scalars or dtypes, so every value that is not a plain JSON
scalar is written as a tagged object ``{"$": kind, ...}``; decoding gives back a value of the
same type (a tuple stays a tuple, ``np.float32`` stays ``np.float32``), which matters because op
kernels index with these values and the compiler keys code on them.  Arrays go to the array
store (the SavedModel's ``.npz``), nested graphs to the graph table; both are passed in as
callbacks so this module knows nothing of files or graphs.
"""
import base64
import collections
import sys

import numpy as np

from hybridtf.framework import dtypes
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.registry import Spec
from hybridtf.registry.python_ops import TensorSlot

_JSON_SCALARS = (bool, int, float, str, type(None))


class UnsavableValueError(TypeError):
    """A value that a SavedModel cannot represent (an arbitrary Python object)."""


def encode(value, store_array, store_graph):
    """``value`` as JSON-able data; ``store_array(ndarray) -> key`` and
    ``store_graph(FuncGraph) -> index`` keep arrays and nested graphs out of line."""
    def enc(v):
        return encode(v, store_array, store_graph)

    kind = type(value)
    if kind in _JSON_SCALARS:
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return encode_strings(value)
        return {"$": "array", "key": store_array(value)}
    if isinstance(value, np.generic):
        return {"$": "npscalar", "dtype": value.dtype.name, "v": enc(value.item())}
    if isinstance(value, np.dtype):
        return {"$": "npdtype", "v": value.name}
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"$": "nptype", "v": np.dtype(value).name}
    if isinstance(value, dtypes.DType):
        return {"$": "dtype", "v": value.name}
    if isinstance(value, TensorShape):
        return {"$": "shape", "v": value.dims}
    if isinstance(value, TensorSpec):
        return encode_spec(value)
    if isinstance(value, TensorSlot):
        return {"$": "slot", "i": value.index}
    if kind is Spec:
        shape = None if value.shape is None else [None if d is None else int(d)
                                                  for d in value.shape]
        return {"$": "opspec", "shape": shape, "dtype": np.dtype(value.dtype).name}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {"$": "namedtuple", "type": type(value).__name__, "fields": list(value._fields),
                "items": [enc(v) for v in value]}
    if isinstance(value, tuple):
        return {"$": "tuple", "items": [enc(v) for v in value]}
    if isinstance(value, list):
        return {"$": "list", "items": [enc(v) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "items": [[enc(k), enc(v)] for k, v in value.items()]}
    if kind is slice:
        return {"$": "slice", "v": [enc(value.start), enc(value.stop), enc(value.step)]}
    if value is Ellipsis:
        return {"$": "ellipsis"}
    if kind is complex:
        return {"$": "complex", "v": [value.real, value.imag]}
    if value is sys.stdout or value is sys.__stdout__:
        return {"$": "stream", "v": "stdout"}
    if value is sys.stderr or value is sys.__stderr__:
        return {"$": "stream", "v": "stderr"}
    graph_index = store_graph(value)
    if graph_index is not None:
        return {"$": "graph", "i": graph_index}
    raise UnsavableValueError(f"{_short_repr(value)} of type {type(value).__name__}")


def encode_strings(array):
    """A ``tf.string`` array (bytes objects) as JSON: its shape and each string in base64 (the
    array store holds numbers only: it never pickles)."""
    flat = array.reshape(-1)
    if not all(isinstance(s, bytes) for s in flat):
        raise UnsavableValueError(f"an object array that is not a tf.string array "
                                  f"({_short_repr(array)})")
    return {"$": "strings", "shape": list(array.shape),
            "v": [base64.b64encode(s).decode("ascii") for s in flat]}


def decode_strings(data):
    flat = [base64.b64decode(s.encode("ascii"), validate=True) for s in data["v"]]
    array = np.empty(len(flat), dtype=object)
    array[:] = flat
    return array.reshape(data["shape"])


def encode_spec(spec):
    return {"$": "spec", "shape": spec.shape.dims, "dtype": spec.dtype.name, "name": spec.name}


def decode_spec(data):
    return TensorSpec(TensorShape(data["shape"]), dtypes.as_dtype(data["dtype"]), data["name"])


_NAMEDTUPLES = {}


def _namedtuple_type(name, fields):
    key = (name, tuple(fields))
    found = _NAMEDTUPLES.get(key)
    if found is None:
        found = _NAMEDTUPLES[key] = collections.namedtuple(name, fields)
    return found


def decode(data, load_array, load_graph):
    """The inverse of ``encode``; ``load_array(key)`` and ``load_graph(index)`` resolve the
    out-of-line parts."""
    def dec(v):
        return decode(v, load_array, load_graph)

    if not isinstance(data, dict):
        if isinstance(data, list):
            raise ValueError("untagged list in a saved value")
        return data
    tag = data.get("$")
    if tag == "array":
        return load_array(data["key"])
    if tag == "strings":
        return decode_strings(data)
    if tag == "npscalar":
        return np.dtype(data["dtype"]).type(dec(data["v"]))
    if tag == "npdtype":
        return np.dtype(data["v"])
    if tag == "nptype":
        return np.dtype(data["v"]).type
    if tag == "dtype":
        return dtypes.as_dtype(data["v"])
    if tag == "shape":
        return TensorShape(data["v"])
    if tag == "spec":
        return decode_spec(data)
    if tag == "slot":
        return TensorSlot(data["i"])
    if tag == "opspec":
        shape = None if data["shape"] is None else tuple(data["shape"])
        return Spec(shape, np.dtype(data["dtype"]))
    if tag == "namedtuple":
        return _namedtuple_type(data["type"], data["fields"])(*[dec(v) for v in data["items"]])
    if tag == "tuple":
        return tuple(dec(v) for v in data["items"])
    if tag == "list":
        return [dec(v) for v in data["items"]]
    if tag == "dict":
        return {_hashable(dec(k)): dec(v) for k, v in data["items"]}
    if tag == "slice":
        return slice(*[dec(v) for v in data["v"]])
    if tag == "ellipsis":
        return Ellipsis
    if tag == "complex":
        return complex(*data["v"])
    if tag == "stream":
        return sys.stdout if data["v"] == "stdout" else sys.stderr
    if tag == "graph":
        return load_graph(data["i"])
    raise ValueError(f"unknown saved value kind {tag!r}")


def _hashable(key):
    return tuple(key) if isinstance(key, list) else key


def _short_repr(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
