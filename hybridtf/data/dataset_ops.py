"""``tf.data.Dataset``: an input pipeline as a chain of transformations.

A ``Dataset`` wraps a pipeline node (``node.py``); each method returns a new dataset whose node
has the old one as input.  Iterating (``for x in ds``, ``iter``, ``as_numpy_iterator``) starts a
new pass; inside a decorated function ``for x in ds`` becomes a loop node that runs a new pass on
every call (``in_function``).
"""
import glob
import os

from hybridtf.autograph import operators as autograph_operators
from hybridtf.data import batching, functions, in_function, iterators, prefetching, shuffling
from hybridtf.data import sources, transformations
from hybridtf.data import structure as st
from hybridtf.data.node import INFINITE, UNKNOWN, new_pass
from hybridtf.framework import dtypes, nest
from hybridtf.framework.constant_op import constant
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.graph import func_graph
from hybridtf.graph.func_graph import FuncGraph, GraphTensor
from hybridtf.polymorphic_function import Function

AUTOTUNE = prefetching.AUTOTUNE
INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN


def _int_argument(value, what, who):
    """A Python int from an int or a scalar integer tensor."""
    if isinstance(value, GraphTensor):
        raise TypeError(f"{who}: {what} is a symbolic tensor of the function being traced; a "
                        "dataset's arguments must be known when it is built (build it outside "
                        "the decorated function).")
    if hasattr(value, "numpy") and not isinstance(value, int):
        value = value.numpy()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: {what} must be an integer, got {value!r}.") from None


class DatasetV2:
    """A sequence of elements, each a tensor or a tuple/dict of tensors (``tf.data.Dataset``).

    >>> ds = tf.data.Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).batch(2)
    >>> [(x.numpy(), y.numpy()) for x, y in ds]
    [(array([1, 2]), array([4, 5])), (array([3]), array([6]))]
    """

    def __init__(self, node):
        self._node = node

    # ---- structure and size ---------------------------------------------------------------
    @property
    def element_spec(self):
        """The structure of an element: ``tf.TensorSpec`` s (``DatasetSpec`` s for windows)
        in tuples and dicts; a batch dimension that may be partial is ``None``."""
        return self._node.structure

    def cardinality(self):
        """The number of elements as an int64 scalar tensor: ``tf.data.INFINITE_CARDINALITY``
        (-1) for an infinite dataset, ``tf.data.UNKNOWN_CARDINALITY`` (-2) when it is only known
        by iterating (after ``filter``, from a generator or files)."""
        return constant(self._node.cardinality(), dtype=dtypes.int64)

    def __len__(self):
        if func_graph.current() is not None:
            raise TypeError("`tf.data.Dataset` only supports `len` in eager mode. Use "
                            "`tf.data.Dataset.cardinality()` instead.")
        n = self._node.cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True   # defined because __len__ is (which may raise)

    def __repr__(self):
        return f"<_{self._node.kind}Dataset element_spec={self.element_spec!r}>"

    # ---- iteration ------------------------------------------------------------------------
    def __iter__(self):
        """An iterator over a new pass of the dataset (``tf.data.Iterator``)."""
        if func_graph.current() is not None:
            raise TypeError(
                "Iterating a tf.data.Dataset inside a traced function needs AutoGraph (on by "
                "default): write `for x in dataset:` in the decorated function, or use "
                "dataset.reduce; to step through it with next(), create the iterator outside "
                "the function (`it = iter(dataset)`) and call next(it) inside.")
        return iterators.OwnedIterator(self)

    def as_numpy_iterator(self):
        """An iterator of the elements as NumPy values (arrays, NumPy scalars, bytes)."""
        if st.has_datasets(self.element_spec):
            raise TypeError(f"Dataset.as_numpy_iterator() is not supported for datasets that "
                            f"produce values of type DatasetSpec (element_spec "
                            f"{self.element_spec!r}).")
        structure = self.element_spec
        return (st.to_numpy(structure, flat) for flat in self._node.iterate())

    def _element(self, flat):
        """An element as the user sees it, from its flat arrays."""
        pack = self.__dict__.get("_pack")
        if pack is None:
            pack = self._pack = st.packer(self.element_spec, DatasetV2)
        return pack(flat)

    def _graph_for_loop(self, body, state, extra_test):
        """``for x in dataset`` in a function being traced (called by AutoGraph)."""
        return in_function.loop(self._node.iterate, self._loop_structure(), body, state,
                                extra_test, "for loop over a dataset")

    def _loop_structure(self):
        if st.has_datasets(self.element_spec):
            raise TypeError("A dataset of datasets (from window) cannot be iterated inside a "
                            "traced function; flat_map the windows into tensors first.")
        return self.element_spec

    def reduce(self, initial_state, reduce_func, name=None):
        """``state = reduce_func(state, element)`` over every element, from ``initial_state``;
        returns the final state.  ``reduce_func`` is traced once (with AutoGraph) and the loop
        runs as one graph node, eagerly or inside a decorated function."""
        if not callable(reduce_func):
            raise TypeError(f"reduce: reduce_func must be callable, got {reduce_func!r}.")
        initial_state = st.normalize(initial_state, "reduce", symbolic_ok=True)
        structure = self._loop_structure()
        elements = self._node.iterate

        def run():
            step = autograph_operators.convert_in_context(reduce_func)
            return in_function.loop(elements, structure,
                                    lambda element, state: step(state, element),
                                    initial_state, None, "reduce")
        if func_graph.current() is not None:
            return run()
        return Function(run, name="reduce")()

    # ---- sources --------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """The slices of ``tensors`` along their first dimension; tuples and dicts of tensors
        give tuple and dict elements (all components must have the same first dimension)."""
        return DatasetV2(sources.TensorSlices(st.normalize(tensors, "from_tensor_slices")))

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset of one element, ``tensors``."""
        element = st.normalize(tensors, "from_tensors")
        return DatasetV2(sources.Tensors(element))

    @staticmethod
    def range(*args, output_type=dtypes.int64, name=None):
        """``range(stop)``, ``range(start, stop[, step])`` as Python's, as int64 scalars (or
        ``output_type``)."""
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range: expected 1 to 3 arguments (start, stop, step), got "
                            f"{len(args)}.")
        if st.discovering_now() and any(isinstance(a, GraphTensor) for a in args):
            return symbolic_dataset(TensorSpec([], output_type))
        values = [_int_argument(a, "each argument", "range") for a in args]
        start, stop, step = (0, values[0], 1) if len(values) == 1 else \
            (values + [1])[:3] if len(values) == 2 else values
        return DatasetV2(sources.Range(start, stop, step, output_type))

    @staticmethod
    def zip(*args, datasets=None, name=None):
        """Elements of the given datasets side by side (``zip(a, b)`` or ``zip((a, b))``, or a
        dict of datasets), as long as the shortest."""
        if datasets is not None and args:
            raise TypeError("zip: give the datasets either as positional arguments or as "
                            "`datasets`, not both.")
        if datasets is None:
            if not args:
                raise TypeError("zip: expected at least one dataset.")
            datasets = args[0] if len(args) == 1 else tuple(args)
        leaves = nest.flatten(datasets)
        if not leaves or not all(isinstance(d, DatasetV2) for d in leaves):
            raise TypeError(f"The argument to `Dataset.zip()` must be a (nested) structure of "
                            f"`Dataset` objects, got {datasets!r}.")
        return DatasetV2(sources.Zip(nest.map_structure(lambda d: d._node, datasets)))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """The elements ``generator(*args)`` yields, each checked against
        ``output_signature`` (a nest of ``tf.TensorSpec``): the structure must match, values
        are converted to the spec's dtype, and their shapes must be compatible."""
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("The `output_types` and `output_shapes` arguments cannot be "
                                "used together with the `output_signature` argument.")
            for spec in nest.flatten(output_signature):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"from_generator: output_signature must contain "
                                    f"tf.TensorSpec objects, got {spec!r}.")
            structure = output_signature
        elif output_types is not None:
            structure = _legacy_signature(output_types, output_shapes)
        else:
            raise TypeError("To specify the output signature you need to provide either the "
                            "`output_signature` argument or the `output_types` argument.")
        values = () if args is None else tuple(
            a.numpy() if hasattr(a, "numpy") else a
            for a in (st.normalize(x, "from_generator") for x in args))
        return DatasetV2(sources.Generator(generator, values, structure))

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        """The names of the files matching ``file_pattern`` (a glob or a list of them),
        shuffled unless ``shuffle=False``."""
        patterns = [file_pattern] if isinstance(file_pattern, (str, bytes, os.PathLike)) \
            else list(file_pattern)
        names = sorted({os.fsdecode(path) for pattern in patterns
                        for path in glob.glob(os.fsdecode(_text(pattern)))})
        if not names:
            raise InvalidArgumentError(None, "list_files",
                                       f"Expected 'tf.Tensor({patterns!r})' to be non-empty: "
                                       "no files matched the pattern.")
        dataset = DatasetV2.from_tensor_slices(names)
        if shuffle is None or shuffle:
            dataset = dataset.shuffle(len(names), seed=seed)
        return dataset

    # ---- transformations ------------------------------------------------------------------
    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        """Consecutive elements stacked into batches of ``batch_size`` (the last one smaller
        unless ``drop_remainder``; its batch dimension is then None in ``element_spec``)."""
        size = _int_argument(batch_size, "batch_size", "batch")
        return DatasetV2(batching.Batch(self._node, size, drop_remainder))

    def unbatch(self, name=None):
        """The rows of each element (the inverse of ``batch``)."""
        return DatasetV2(batching.Unbatch(self._node))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Batches of elements padded to ``padded_shapes`` (by default each component's shape,
        unknown dimensions padded to the longest in the batch) with ``padding_values`` (0, or
        b"" for strings)."""
        size = _int_argument(batch_size, "batch_size", "padded_batch")
        return DatasetV2(batching.PaddedBatch(self._node, size, padded_shapes, padding_values,
                                              drop_remainder))

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Windows of ``size`` elements, starting every ``shift`` (default ``size``) elements and
        taking every ``stride``-th; each window component is a dataset."""
        return DatasetV2(batching.Window(
            self._node, _int_argument(size, "size", "window"),
            None if shift is None else _int_argument(shift, "shift", "window"),
            _int_argument(stride, "stride", "window"), drop_remainder))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        """Elements in random order, drawn uniformly from a buffer of ``buffer_size`` that is
        refilled from the input (a buffer as large as the dataset gives a full shuffle).  Each
        pass is reshuffled unless ``reshuffle_each_iteration=False``; ``seed`` and
        ``tf.random.set_seed`` make the order reproducible."""
        size = _int_argument(buffer_size, "buffer_size", "shuffle")
        return DatasetV2(shuffling.Shuffle(self._node, size, seed, reshuffle_each_iteration))

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """``map_func`` applied to each element (a tuple element is passed as positional
        arguments).  ``map_func`` is traced once, with AutoGraph, into a graph that runs for
        each element, so its Python side effects happen once."""
        function = functions.StructuredFunction(map_func, self.element_spec, "map")
        return DatasetV2(transformations.Map(self._node, function))

    def filter(self, predicate, name=None):
        """The elements for which ``predicate`` (traced like ``map``'s function) returns True."""
        function = functions.StructuredFunction(predicate, self.element_spec, "filter")
        return DatasetV2(transformations.Filter(self._node, function))

    def flat_map(self, map_func, name=None):
        """The elements of the datasets ``map_func`` returns for each element, in order.

        ``map_func`` builds a dataset from the element (a window's datasets, or tensors).  It is
        traced once on symbolic values to learn the structure of the datasets it returns, then
        runs for each element (as Python: the datasets it builds are iterated)."""
        structure, make_node = self._dataset_function(map_func, "flat_map")
        return DatasetV2(transformations.FlatMap(self._node, make_node, structure))

    def _dataset_function(self, map_func, who):
        """(structure of the datasets ``map_func`` returns, flat element -> dataset node)."""
        if not callable(map_func):
            raise TypeError(f"{who}: map_func must be callable, got {map_func!r}.")
        structure = _dataset_function_structure(self.element_spec, map_func, who)

        def make_node(flat):
            result = functions.call_with_element(map_func, self._element(flat))
            if not isinstance(result, DatasetV2):
                raise TypeError(f"{who}: map_func must return a Dataset, got {result!r}.")
            if not st.compatible(result.element_spec, structure):
                raise TypeError(f"{who}: map_func returned a dataset of "
                                f"{result.element_spec!r}, which does not match the "
                                f"{structure!r} it returned when traced.")
            return result._node
        return structure, make_node

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None, name=None):
        """The datasets ``map_func`` returns for ``cycle_length`` elements at a time (by
        default, one per CPU core, as TF), interleaved ``block_length`` (1) elements at a time;
        ``map_func`` runs as ``flat_map``'s does."""
        if cycle_length is None or cycle_length == AUTOTUNE:
            cycle = _schedulable_cores()
        else:
            cycle = _int_argument(cycle_length, "cycle_length", "interleave")
        block = 1 if block_length is None else \
            _int_argument(block_length, "block_length", "interleave")
        if cycle < 1 or block < 1:
            raise InvalidArgumentError(None, "interleave", f"interleave: cycle_length and "
                                       f"block_length must be positive, got {cycle} and "
                                       f"{block}.")
        structure, make_node = self._dataset_function(map_func, "interleave")
        return DatasetV2(transformations.Interleave(self._node, make_node, structure, cycle,
                                                    block))

    def take_while(self, predicate, name=None):
        """The elements up to the first one for which ``predicate`` (traced like ``filter``'s)
        returns False."""
        function = functions.StructuredFunction(predicate, self.element_spec, "take_while")
        return DatasetV2(transformations.TakeWhile(self._node, function))

    def shard(self, num_shards, index, name=None):
        """Every ``num_shards``-th element, starting at the ``index``-th (one worker's share)."""
        return DatasetV2(transformations.Shard(
            self._node, _int_argument(num_shards, "num_shards", "shard"),
            _int_argument(index, "index", "shard")))

    def get_single_element(self, name=None):
        """The dataset's one element; InvalidArgumentError when it has none or several."""
        with new_pass(self._node) as elements:
            first = next(elements, None)
            if first is None:
                raise InvalidArgumentError(None, "get_single_element", "Dataset was empty.")
            if next(elements, None) is not None:
                raise InvalidArgumentError(None, "get_single_element",
                                           "Dataset had more than one element.")
        return self._element(first)

    def repeat(self, count=None, name=None):
        """The dataset ``count`` times (forever when None or -1; each pass a new one, so a
        shuffle reshuffles)."""
        count = None if count is None else _int_argument(count, "count", "repeat")
        return DatasetV2(transformations.Repeat(self._node, count))

    def take(self, count, name=None):
        """The first ``count`` elements (all with -1)."""
        return DatasetV2(transformations.Take(self._node, _int_argument(count, "count", "take")))

    def skip(self, count, name=None):
        """All but the first ``count`` elements (none with -1)."""
        return DatasetV2(transformations.Skip(self._node, _int_argument(count, "count", "skip")))

    def prefetch(self, buffer_size, name=None):
        """Elements produced on a background thread, up to ``buffer_size`` ahead
        (``tf.data.AUTOTUNE`` picks the size)."""
        size = _int_argument(buffer_size, "buffer_size", "prefetch")
        return DatasetV2(prefetching.Prefetch(self._node, size))

    def cache(self, filename="", name=None):
        """Keeps the elements of the first complete pass (in memory, or in ``filename``) and
        replays them on the next passes."""
        return DatasetV2(transformations.Cache(self._node, filename))

    def enumerate(self, start=0, name=None):
        """``(index, element)`` pairs, the index an int64 counting from ``start``."""
        return DatasetV2(transformations.Enumerate(
            self._node, _int_argument(start, "start", "enumerate")))

    def concatenate(self, dataset, name=None):
        """The elements of this dataset, then those of ``dataset`` (same structure and
        dtypes)."""
        if not isinstance(dataset, DatasetV2):
            raise TypeError(f"concatenate: expected a Dataset, got {dataset!r}.")
        return DatasetV2(sources.Concatenate(self._node, dataset._node))

    def apply(self, transformation_func):
        """``transformation_func(self)``, which must return a Dataset."""
        result = transformation_func(self)
        if not isinstance(result, DatasetV2):
            raise TypeError(f"apply: `transformation_func` must return a Dataset, got "
                            f"{result!r}.")
        return result


Dataset = DatasetV2


def symbolic_dataset(structure):
    """A dataset of ``structure`` standing for one built from symbolic values while flat_map's
    function is traced (it cannot be iterated)."""
    return DatasetV2(sources.Placeholder(structure))


def _schedulable_cores():
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _text(value):
    return value.numpy() if hasattr(value, "numpy") else value


def _legacy_signature(output_types, output_shapes):
    """``output_types``/``output_shapes`` (TF 1 style) as a nest of TensorSpecs."""
    types = nest.flatten(output_types)
    if output_shapes is None:
        shapes = [None] * len(types)
    else:
        shapes = st.flatten_up_to(output_types, output_shapes, "from_generator: output_shapes")
    specs = [TensorSpec(shape, dtypes.as_dtype(dtype)) for dtype, shape in zip(types, shapes)]
    return nest.pack_sequence_as(output_types, specs)


def _dataset_function_structure(element_spec, map_func, who):
    """The element structure of the datasets ``map_func`` returns, from a call on symbolic
    values: placeholders for tensors, placeholder datasets for a window's datasets."""
    graph = FuncGraph(f"{who}_structure")
    with func_graph.building(graph), st.discovering():
        leaves = [symbolic_dataset(spec.element_spec)
                  if isinstance(spec, st.DatasetSpec) else
                  graph.placeholder(spec.shape.dims, spec.dtype.as_numpy_dtype, "element")
                  for spec in nest.flatten(element_spec)]
        result = functions.call_with_element(
            autograph_operators.maybe_convert(map_func),
            nest.pack_sequence_as(element_spec, leaves))
    if not isinstance(result, DatasetV2):
        raise TypeError(f"{who}: map_func must return a Dataset, got {result!r}.")
    return result.element_spec


def cardinality(dataset):
    """``dataset.cardinality()`` (``tf.data.experimental.cardinality``)."""
    if not isinstance(dataset, DatasetV2):
        raise TypeError(f"cardinality: expected a Dataset, got {dataset!r}.")
    return dataset.cardinality()
