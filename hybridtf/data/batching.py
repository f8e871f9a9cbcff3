"""Grouping elements: ``batch``, ``padded_batch``, ``unbatch`` and ``window``."""
import collections

import numpy as np

from hybridtf.data import structure as st
from hybridtf.data.node import INFINITE, UNKNOWN, UnaryNode, new_pass, positive_size
from hybridtf.data.sources import Elements
from hybridtf.framework import dtypes, nest
from hybridtf.framework.constant_op import to_numpy
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor import is_tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.framework.tensor_spec import TensorSpec


def _batch_cardinality(n, batch_size, drop_remainder):
    if n in (INFINITE, UNKNOWN):
        return n
    return n // batch_size if drop_remainder else -(-n // batch_size)


def _groups(node, batch_size, drop_remainder):
    """Lists of ``batch_size`` consecutive elements of a pass over ``node`` (the last one
    shorter unless dropped)."""
    group = []
    with new_pass(node) as elements:
        for element in elements:
            group.append(element)
            if len(group) == batch_size:
                yield group
                group = []
    if group and not drop_remainder:
        yield group


def stack(group, op_name="batch"):
    """The components of a list of elements stacked along a new first axis."""
    out = []
    for i, first in enumerate(group[0]):
        first_shape = np.shape(first)
        for j, element in enumerate(group):
            if np.shape(element[i]) != first_shape:
                raise InvalidArgumentError(
                    None, op_name, f"Cannot batch tensors with different shapes in component "
                    f"{i}. First element had shape {list(first_shape)} and element {j} had "
                    f"shape {list(np.shape(element[i]))}.")
        out.append(np.stack([element[i] for element in group]))
    return tuple(out)


class Batch(UnaryNode):
    kind = "Batch"

    def __init__(self, node, batch_size, drop_remainder):
        self.batch_size = positive_size(batch_size, "batch_size", "batch")
        self.drop_remainder = bool(drop_remainder)
        super().__init__(node, st.batched(node.structure,
                                          self.batch_size if self.drop_remainder else None))

    def cardinality(self):
        return _batch_cardinality(self.input.cardinality(), self.batch_size, self.drop_remainder)

    def iterate(self):
        source = self.input.index_source()
        if source is not None:
            return self._gathered(source)
        groups = _groups(self.input, self.batch_size, self.drop_remainder)
        return (stack(group) for group in groups)

    def _gathered(self, source):
        """Batches of in-memory rows: one gather per component per batch."""
        size = self.batch_size
        pending = []
        count = 0
        for chunk in source.chunks():
            pending.append(chunk)
            count += len(chunk)
            if count < size:
                continue
            indices = np.concatenate(pending) if len(pending) > 1 else pending[0]
            full = len(indices) - len(indices) % size
            for start in range(0, full, size):
                yield source.gather(indices[start:start + size])
            pending = [indices[full:]]
            count = len(indices) - full
        if count and not self.drop_remainder:
            yield source.gather(np.concatenate(pending))


class Unbatch(UnaryNode):
    kind = "Unbatch"

    def __init__(self, node):
        def unbatched(spec):
            if isinstance(spec, st.DatasetSpec) or spec.shape.rank is None \
                    or spec.shape.rank < 1:
                raise ValueError(f"unbatch: every component needs a first dimension to split "
                                 f"(Unbatching a dataset is only supported for rank >= 1), got "
                                 f"{spec!r}.")
            return TensorSpec(spec.shape[1:], spec.dtype)
        super().__init__(node, nest.map_structure(unbatched, node.structure))

    def cardinality(self):
        n = self.input.cardinality()
        sizes = {spec.shape[0] for spec in nest.flatten(self.input.structure)}
        if n in (INFINITE, UNKNOWN) or None in sizes or len(sizes) != 1:
            return n if n == INFINITE else UNKNOWN
        return n * sizes.pop()

    def iterate(self):
        with new_pass(self.input) as elements:
            for element in elements:
                sizes = [np.shape(c)[0] for c in element]
                if len(set(sizes)) > 1:
                    raise InvalidArgumentError(
                        None, "unbatch", f"Input element must have the same batch size in each "
                        f"component. Component 0 had size {sizes[0]} but component "
                        f"{next(i for i, s in enumerate(sizes) if s != sizes[0])} had size "
                        f"{next(s for s in sizes if s != sizes[0])}.")
                for row in range(sizes[0] if sizes else 0):
                    yield tuple(c[row, ...] for c in element)


class PaddedBatch(UnaryNode):
    kind = "PaddedBatch"

    def __init__(self, node, batch_size, padded_shapes, padding_values, drop_remainder):
        self.batch_size = positive_size(batch_size, "batch_size", "padded_batch")
        self.drop_remainder = bool(drop_remainder)
        specs = nest.flatten(node.structure)
        if st.has_datasets(node.structure):
            raise TypeError("padded_batch: elements that contain datasets cannot be batched.")
        self.shapes = _padded_shapes(node.structure, specs, padded_shapes)
        self.values = _padding_values(node.structure, specs, padding_values)
        batch_dim = self.batch_size if self.drop_remainder else None
        super().__init__(node, nest.pack_sequence_as(node.structure, [
            TensorSpec(TensorShape([batch_dim]).concatenate(shape), spec.dtype)
            for shape, spec in zip(self.shapes, specs)]))

    def cardinality(self):
        return _batch_cardinality(self.input.cardinality(), self.batch_size, self.drop_remainder)

    def iterate(self):
        for group in _groups(self.input, self.batch_size, self.drop_remainder):
            yield tuple(self._padded(i, [element[i] for element in group])
                        for i in range(len(self.shapes)))

    def _padded(self, i, parts):
        shape, value = self.shapes[i], self.values[i]
        ranks = {np.ndim(p) for p in parts}
        if ranks != {len(shape)}:
            raise InvalidArgumentError(
                None, "padded_batch", f"padded_batch: component {i} has rank "
                f"{sorted(ranks)} in this batch but its padded shape {shape} has rank "
                f"{len(shape)}.")
        target = []
        for axis, dim in enumerate(shape):
            longest = max(np.shape(p)[axis] for p in parts)
            if dim is not None and longest > dim:
                raise InvalidArgumentError(
                    None, "padded_batch", f"padded_batch: attempted to pad to a smaller size "
                    f"than the input element: component {i} has size {longest} in dimension "
                    f"{axis}, but the padded shape is {shape}.")
            target.append(longest if dim is None else dim)
        out = np.full([len(parts)] + target, value, dtype=value.dtype)
        for row, part in enumerate(parts):
            out[(row,) + tuple(slice(0, n) for n in np.shape(part))] = part
        return out


def _padded_shapes(structure, specs, padded_shapes):
    """One TensorShape per component: the given padded shapes, or the components' shapes (their
    unknown dimensions padded to the longest in each batch)."""
    if padded_shapes is None:
        for spec in specs:
            if spec.shape.rank is None:
                raise ValueError(f"padded_batch: a component of unknown rank ({spec!r}) needs "
                                 "its padded_shapes.")
        return [spec.shape for spec in specs]
    shapes = []
    for spec, shape in zip(specs, st.flatten_up_to(structure, padded_shapes,
                                                   "padded_batch: padded_shapes")):
        if hasattr(shape, "numpy"):
            shape = [int(d) for d in np.asarray(shape).reshape(-1)]
        shape = TensorShape(shape)
        if shape.rank is None:
            raise ValueError(f"padded_batch: the padded shape of {spec!r} must have a known rank.")
        if spec.shape.rank is not None and (
                spec.shape.rank != shape.rank or any(
                    d is not None and p is not None and p < d
                    for d, p in zip(spec.shape, shape))):
            raise ValueError(f"The padded shape {shape} is not compatible with the shape "
                             f"{spec.shape} of the corresponding input component.")
        shapes.append(shape)
    return shapes


def _padding_values(structure, specs, padding_values):
    """One NumPy scalar per component: the given padding values, or 0 (b"" for strings)."""
    given = [None] * len(specs) if padding_values is None else \
        st.flatten_up_to(structure, padding_values, "padded_batch: padding_values")
    values = []
    for spec, value in zip(specs, given):
        np_dtype = np.dtype(spec.dtype.as_numpy_dtype)
        if value is None:
            values.append(np.array(b"" if spec.dtype is dtypes.string else 0, dtype=np_dtype))
            continue
        if is_tensor(value) and value.dtype is not spec.dtype:
            raise TypeError(f"padded_batch: padding value {value!r} has dtype "
                            f"{value.dtype.name} but its component has dtype {spec.dtype.name}.")
        array = to_numpy(np.asarray(value) if is_tensor(value) else value)
        if array.ndim != 0:
            raise ValueError(f"padded_batch: padding values must be scalars, got {value!r}.")
        if (array.dtype == object) != (spec.dtype is dtypes.string):
            raise TypeError(f"padded_batch: padding value {value!r} does not suit a component "
                            f"of dtype {spec.dtype.name}.")
        values.append(array.astype(np_dtype))
    return values


class Window(UnaryNode):
    """Windows of ``size`` elements, each a dataset per component, starting every ``shift``
    elements and taking every ``stride``-th one."""

    kind = "Window"

    def __init__(self, node, size, shift, stride, drop_remainder):
        self.size = positive_size(size, "size", "window")
        self.shift = self.size if shift is None else positive_size(shift, "shift", "window")
        self.stride = positive_size(stride, "stride", "window")
        self.drop_remainder = bool(drop_remainder)
        self.component_specs = nest.flatten(node.structure)
        super().__init__(node, nest.map_structure(st.DatasetSpec, node.structure))

    def cardinality(self):
        n = self.input.cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        if self.drop_remainder:
            rest = n - ((self.size - 1) * self.stride + 1)
            return rest // self.shift + 1 if rest > -1 else 0
        return -(-n // self.shift)

    def iterate(self):
        span = (self.size - 1) * self.stride + 1     # positions one window covers
        buffer = collections.deque()                  # the next window's elements on
        exhausted = False
        with new_pass(self.input) as elements:
            while True:
                while not exhausted and len(buffer) < span:
                    element = next(elements, None)
                    if element is None:
                        exhausted = True
                    else:
                        buffer.append(element)
                if not buffer or (self.drop_remainder and len(buffer) < span):
                    return
                yield self._window(list(buffer)[:span:self.stride])
                for _ in range(min(self.shift, len(buffer))):
                    buffer.popleft()
                skip = self.shift - span if self.shift > span else 0
                for _ in range(skip):
                    if next(elements, None) is None:
                        return

    def _window(self, members):
        return tuple(Elements(spec, [(element[i],) for element in members])
                     for i, spec in enumerate(self.component_specs))
