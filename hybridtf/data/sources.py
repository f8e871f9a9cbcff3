"""Datasets made from values: tensor slices, a single element, ranges, Python generators, and
datasets combined (zip, concatenate)."""
import itertools

import numpy as np

from hybridtf.data import structure as st
from hybridtf.data.node import (INFINITE, UNKNOWN, IndexSource, Node, add_cardinalities,
                                close)
from hybridtf.framework import dtypes, nest
from hybridtf.framework.constant_op import to_numpy
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec


def _whole_range(length):
    def chunks():
        yield np.arange(length, dtype=np.int64)
    return chunks


class TensorSlices(Node):
    """The rows of a nest of tensors (``from_tensor_slices``)."""

    kind = "TensorSlice"

    def __init__(self, element):
        tensors = nest.flatten(element)
        for tensor in tensors:
            if tensor.shape.rank == 0:
                raise ValueError(f"from_tensor_slices: every component needs a first dimension "
                                 f"to slice (Unbatching a tensor is only supported for rank >= "
                                 f"1), got the scalar {tensor!r}.")
        sizes = {t.shape[0] for t in tensors} - {None}
        if len(sizes) > 1:
            shapes = ", ".join(str(t.shape) for t in tensors)
            raise ValueError(f"from_tensor_slices: all components must have the same size in "
                             f"their first dimension; got shapes {shapes}.")
        super().__init__(nest.map_structure(
            lambda t: TensorSpec(t.shape[1:], t.dtype), element))
        self.arrays = st.flat_arrays(element)     # None: symbolic (structure only)
        self.length = sizes.pop() if sizes else (0 if not tensors else None)

    def cardinality(self):
        return UNKNOWN if self.length is None else self.length

    def index_source(self):
        arrays = self.arrays
        if arrays is None:
            raise st.symbolic_dataset_error("from_tensor_slices")
        return IndexSource(lambda idx: tuple(a[idx] for a in arrays),
                           _whole_range(self.length), self.length, plain=True)


class Tensors(Node):
    """One element (``from_tensors``)."""

    kind = "Tensor"

    def __init__(self, element):
        super().__init__(st.structure_of(element))
        self.arrays = st.flat_arrays(element)

    def cardinality(self):
        return 1

    def index_source(self):
        arrays = self.arrays
        if arrays is None:
            raise st.symbolic_dataset_error("from_tensors")
        return IndexSource(lambda idx: tuple(np.repeat(a[np.newaxis], len(idx), axis=0)
                                             for a in arrays),
                           _whole_range(1), 1, plain=True)


class Range(Node):
    """``start, start + step, ...`` up to ``stop`` (exclusive), as in Python's ``range``."""

    kind = "Range"

    def __init__(self, start, stop, step, dtype):
        if step == 0:
            raise InvalidArgumentError(None, "range", "range: step must be a non-zero integer.")
        dtype = dtypes.as_dtype(dtype)
        if not (dtype.is_integer or dtype.is_floating):
            raise TypeError(f"range: output_type must be an integer or floating dtype, got "
                            f"{dtype.name}.")
        super().__init__(TensorSpec([], dtype))
        self.start, self.step = start, step
        self.length = len(range(start, stop, step))
        self.np_dtype = np.dtype(dtype.as_numpy_dtype)

    def cardinality(self):
        return self.length

    def index_source(self):
        start, step, dtype = self.start, self.step, self.np_dtype
        return IndexSource(lambda idx: ((start + idx * step).astype(dtype),),
                           _whole_range(self.length), self.length, plain=True)


class Generator(Node):
    """Elements yielded by ``generator(*args)``, checked against the declared structure."""

    kind = "FlatMap"   # TF builds it as a flat_map over a generator state

    def __init__(self, generator, args, structure):
        super().__init__(structure)
        self.generator = generator
        self.args = args

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        specs = nest.flatten(self.structure)
        for value in self.generator(*self.args):
            yield _checked(value, self.structure, specs)


def _checked(value, structure, specs):
    """A generator's element as flat arrays, checked against ``structure`` as TF checks it."""
    if isinstance(value, list) and nest.is_nested(structure) and not isinstance(structure, list):
        value = tuple(value)   # a list of components stands for a tuple, as in TF
    try:
        leaves = st.flatten_up_to(structure, value, "element")
    except ValueError:
        raise InvalidArgumentError(
            None, "from_generator",
            f"`generator` yielded an element that did not match the expected structure. The "
            f"expected structure was {structure!r}, but the yielded element was {value!r}.") \
            from None
    out = []
    for leaf, spec in zip(leaves, specs):
        array = _converted(leaf, spec.dtype)
        if array is None:
            raise InvalidArgumentError(
                None, "from_generator",
                f"`generator` yielded an element that could not be converted to the expected "
                f"type. The expected type was {spec.dtype.name}, but the yielded element was "
                f"{leaf!r}.")
        if not spec.shape.is_compatible_with(TensorShape(array.shape)):
            raise InvalidArgumentError(
                None, "from_generator",
                f"`generator` yielded an element of shape {TensorShape(array.shape)} where an "
                f"element of shape {spec.shape} was expected.")
        out.append(array)
    return tuple(out)


def _converted(value, dtype):
    """``value`` as an array of ``dtype`` (NumPy's conversion, as TF's), or None."""
    if getattr(value, "_is_variable", False) or hasattr(value, "_value"):
        value = np.asarray(value)
    try:
        if dtype is dtypes.string:
            array = to_numpy(value)
            return array if array.dtype == object else None
        array = np.asarray(value)
        if array.dtype.kind not in "biufc":
            return None
        return array.astype(dtype.as_numpy_dtype, copy=False)
    except (TypeError, ValueError):
        return None


class Placeholder(Node):
    """A dataset standing for a window's dataset while flat_map's function is traced."""

    kind = "Variant"

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        raise st.symbolic_dataset_error("flat_map")


class Elements(Node):
    """A dataset of given elements (the datasets a window yields)."""

    kind = "Variant"

    def __init__(self, structure, elements):
        super().__init__(structure)
        self.elements = list(elements)

    def cardinality(self):
        return len(self.elements)

    def iterate(self):
        return iter(list(self.elements))


class Zip(Node):
    """Elements of several datasets side by side, until the shortest one ends."""

    kind = "Zip"

    def __init__(self, nodes):
        super().__init__(nest.map_structure(lambda n: n.structure, nodes))
        self.nodes = nest.flatten(nodes)
        self.inputs = tuple(self.nodes)

    def cardinality(self):
        result = INFINITE
        for node in self.nodes:
            n = node.cardinality()
            if n == UNKNOWN:
                return UNKNOWN
            if n != INFINITE:
                result = n if result == INFINITE else min(result, n)
        return result

    def _elements(self):
        passes = [node.iterate() for node in self.nodes]
        try:
            for parts in zip(*passes):
                yield tuple(itertools.chain.from_iterable(parts))
        finally:
            for elements in passes:   # stops the background work of the ones left unfinished
                close(elements)

    def index_source(self):
        sources = [node.index_source() for node in self.nodes]
        if not self.nodes or any(s is None or not s.plain for s in sources):
            return None
        length = min(s.length for s in sources)

        def gather(idx):
            return tuple(itertools.chain.from_iterable(s.gather(idx) for s in sources))
        return IndexSource(gather, _whole_range(length), length, plain=True)


class Concatenate(Node):
    """The elements of one dataset, then those of another."""

    kind = "Concatenate"

    def __init__(self, first, second):
        if not _concatenable(first.structure, second.structure):
            raise TypeError(f"Incompatible dataset elements:\n  {first.structure!r} vs.   "
                            f"{second.structure!r}")
        super().__init__(st.most_specific_common(first.structure, second.structure))
        self.first, self.second = first, second
        self.inputs = (first, second)

    def cardinality(self):
        return add_cardinalities(self.first.cardinality(), self.second.cardinality())

    def iterate(self):
        yield from self.first.iterate()
        yield from self.second.iterate()


def _concatenable(a, b):
    try:
        nest.assert_same_structure(a, b)
    except ValueError:
        return False
    return all(type(x) is type(y) and x.dtype is y.dtype if isinstance(x, TensorSpec)
               else type(x) is type(y) for x, y in zip(nest.flatten(a), nest.flatten(b)))
