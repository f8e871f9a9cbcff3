"""The structure of dataset elements: nests of ``TensorSpec`` (and ``DatasetSpec``).

Inside a pipeline an element travels as a flat tuple of NumPy arrays (a dataset component of a
``window`` travels as its pipeline node), in ``nest.flatten`` order of the dataset's
``element_spec``.  As in TF, tuples, namedtuples and dicts are structures and a Python list is
one tensor (``from_tensor_slices([1, 2, 3])`` has scalar elements).
"""
import collections.abc
import contextlib
import threading

import numpy as np

from hybridtf.framework import nest
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape, as_shape
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.graph.func_graph import GraphTensor


class DatasetSpec:
    """The type of a dataset-valued element component (``tf.data.DatasetSpec``): the elements'
    structure, and the shape of the component (``[]`` for one dataset)."""

    __slots__ = ("_element_spec", "_shape")

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._shape = as_shape(dataset_shape)

    element_spec = property(lambda self: self._element_spec)
    shape = property(lambda self: self._shape)

    def is_compatible_with(self, other):
        return isinstance(other, DatasetSpec) and compatible(self._element_spec,
                                                             other._element_spec)

    def __eq__(self, other):
        return (isinstance(other, DatasetSpec) and self._shape == other._shape
                and _same(self._element_spec, other._element_spec))

    def __hash__(self):
        return hash((repr(self._element_spec), self._shape))

    def __repr__(self):
        return f"DatasetSpec({self._element_spec!r}, {self._shape!r})"


def _same(a, b):
    try:
        nest.assert_same_structure(a, b)
    except ValueError:
        return False
    return all(x == y for x, y in zip(nest.flatten(a), nest.flatten(b)))


def is_dataset(value):
    """True for a ``tf.data.Dataset`` (it carries its pipeline node)."""
    return hasattr(value, "_node") and hasattr(value, "element_spec")


# ---- user values -> elements ---------------------------------------------------------------------
class _Discovery(threading.local):
    active = False


_DISCOVERY = _Discovery()


@contextlib.contextmanager
def discovering():
    """While a dataset-building function runs on symbolic values to learn the structure of the
    dataset it returns (``flat_map``), datasets may be built from symbolic tensors: they have
    a structure but cannot be iterated."""
    saved, _DISCOVERY.active = _DISCOVERY.active, True
    try:
        yield
    finally:
        _DISCOVERY.active = saved


def discovering_now():
    return _DISCOVERY.active


def _as_tensor(value, who, symbolic_ok=False):
    if getattr(value, "_is_variable", False):
        value = value.value()
    if isinstance(value, GraphTensor) and (symbolic_ok or _DISCOVERY.active):
        return value
    if isinstance(value, GraphTensor):
        raise TypeError(f"{who}: {value!r} is a symbolic tensor of the function being traced; "
                        "build the dataset outside the decorated function (from eager tensors "
                        "or NumPy arrays) and iterate it inside.")
    if is_dataset(value):
        raise TypeError(f"{who}: a dataset cannot be an element component here; use "
                        "Dataset.zip to pair datasets, or window to make datasets of datasets.")
    if value is None:
        raise TypeError(f"{who}: None cannot be an element component; give tensors, NumPy "
                        "arrays or Python numbers/strings (in tuples or dicts).")
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        value = value.copy()   # the dataset keeps today's values; the caller may change it
    try:
        return convert_to_tensor(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{who}: cannot convert {value!r} to a tensor ({err}).") from None


def normalize(value, who, symbolic_ok=False):
    """``value`` as an element: tuples, namedtuples and dicts kept as structure, every other
    value (a list included) converted to a tensor.  Returns the nest of tensors; symbolic
    tensors are refused unless ``symbolic_ok`` (a loop state may be symbolic, a source not)."""
    if isinstance(value, tuple):
        items = [normalize(v, who, symbolic_ok) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, collections.abc.Mapping):
        result = {k: normalize(v, who, symbolic_ok) for k, v in value.items()}
        try:
            return type(value)(result)
        except TypeError:
            return result
    return _as_tensor(value, who, symbolic_ok)


def spec_of(tensor):
    """The ``TensorSpec`` of a tensor (no name, as TF's element specs)."""
    return TensorSpec(tensor.shape, tensor.dtype)


def structure_of(element):
    """The nest of specs describing a nest of tensors."""
    return nest.map_structure(spec_of, element)


def flat_arrays(element):
    """The NumPy arrays of a nest of tensors, in ``nest.flatten`` order; None when one is
    symbolic (see ``discovering``)."""
    leaves = nest.flatten(element)
    if any(isinstance(t, GraphTensor) for t in leaves):
        return None
    return tuple(np.asarray(t._value) for t in leaves)


def symbolic_dataset_error(who):
    return TypeError(f"{who}: this dataset was built from symbolic tensors, to learn the "
                     "structure of the datasets flat_map's function returns; it cannot be "
                     "iterated.")


def flatten_up_to(structure, value, what):
    """The parts of ``value`` standing where ``structure`` has leaves (a shape given as a list
    stays whole where the structure has a spec)."""
    if not nest.is_nested(structure):
        return [value]
    if isinstance(structure, collections.abc.Mapping):
        if not isinstance(value, collections.abc.Mapping) or set(value) != set(structure):
            raise ValueError(f"{what} {value!r} must have the structure of the elements, "
                             f"{structure!r}.")
        pairs = [(structure[k], value[k]) for k in nest._sorted_keys(structure)]
    else:
        if not isinstance(value, (list, tuple)) or len(value) != len(structure):
            raise ValueError(f"{what} {value!r} must have the structure of the elements, "
                             f"{structure!r}.")
        pairs = list(zip(structure, value))
    out = []
    for sub_structure, sub_value in pairs:
        out += flatten_up_to(sub_structure, sub_value, what)
    return out


def has_datasets(structure):
    return any(isinstance(s, DatasetSpec) for s in nest.flatten(structure))


# ---- elements -> user values ---------------------------------------------------------------------
def to_tensors(structure, flat, wrap_dataset):
    """The element as the user sees it: tensors (and datasets, made by ``wrap_dataset`` from
    their pipeline nodes) in the dataset's structure."""
    leaves = [wrap_dataset(v) if isinstance(s, DatasetSpec) else Tensor(v)
              for s, v in zip(nest.flatten(structure), flat)]
    return nest.pack_sequence_as(structure, leaves)


def packer(structure, wrap_dataset):
    """``to_tensors`` for one structure, as a function built once: a flat tuple of tensors, or
    one tensor, skips the generic nest walk (which costs more than the rest of a step)."""
    specs = nest.flatten(structure)
    if any(isinstance(s, DatasetSpec) for s in specs):
        return lambda flat: to_tensors(structure, flat, wrap_dataset)
    if not nest.is_nested(structure):
        return lambda flat: Tensor(flat[0])
    if type(structure) is tuple and len(specs) == len(structure):
        return lambda flat: tuple(map(Tensor, flat))
    return lambda flat: nest.pack_sequence_as(structure, list(map(Tensor, flat)))


def to_numpy(structure, flat):
    """The element as NumPy values (scalars for rank 0, bytes for strings): what
    ``as_numpy_iterator`` yields."""
    leaves = []
    for array in flat:
        value = np.asarray(array)
        leaves.append(value[()] if value.ndim == 0 else value)
    return nest.pack_sequence_as(structure, leaves)


# ---- comparing and merging structures ------------------------------------------------------------
def compatible(a, b):
    """True when two structures have the same nesting, dtypes and compatible shapes."""
    try:
        nest.assert_same_structure(a, b)
    except ValueError:
        return False
    for x, y in zip(nest.flatten(a), nest.flatten(b)):
        if isinstance(x, DatasetSpec) or isinstance(y, DatasetSpec):
            if not (isinstance(x, DatasetSpec) and x.is_compatible_with(y)):
                return False
        elif x.dtype is not y.dtype or not x.shape.is_compatible_with(y.shape):
            return False
    return True


def most_specific_common(a, b):
    """The structure both conform to: shapes relaxed where they differ (``concatenate``)."""
    def merge(x, y):
        if isinstance(x, DatasetSpec):
            return x
        return TensorSpec(x.shape.most_specific_compatible_shape(y.shape), x.dtype)
    return nest.map_structure(merge, a, b)


def batched(structure, batch_dim):
    """The structure of a batch of elements: each shape gets a leading ``batch_dim``."""
    def add(spec):
        if isinstance(spec, DatasetSpec):
            raise TypeError("batch: elements that contain datasets (from window) cannot be "
                            "batched; use flat_map to turn each window into a batch.")
        return TensorSpec(TensorShape([batch_dim]).concatenate(spec.shape), spec.dtype)
    return nest.map_structure(add, structure)
