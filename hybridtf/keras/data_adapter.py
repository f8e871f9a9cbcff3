"""The data ``fit``, ``evaluate`` and ``predict`` iterate over, as batches of tensors.

Two kinds, as in Keras: in-memory arrays (NumPy arrays, tensors, or lists/dicts of them), cut
into ``batch_size`` slices (the last one partial), optionally shuffled each epoch; and
iterables of ready-made ``(x, y[, sample_weight])`` batches -- a ``tf.data.Dataset``, a
generator, or a ``Sequence``-like object with ``__len__`` and ``__getitem__``.
"""
import numbers

import numpy as np

from hybridtf.data import INFINITE_CARDINALITY, Dataset
from hybridtf.framework import nest
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.framework.tensor import Tensor
from hybridtf.keras import backend


def unpack_x_y_sample_weight(data):
    """``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)`` -> the three (missing ones None);
    anything else is ``x`` alone."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     f"`(x, y, sample_weight)`, found a tuple of {len(data)} elements.")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The batch a step receives: ``x`` (or ``(x,)`` when ``x`` is a list/tuple/dict),
    ``(x, y)``, or ``(x, y, sample_weight)`` -- as Keras packs it, so that a custom
    ``train_step`` can write ``x, y = data``."""
    if y is None:
        return (x,) if isinstance(x, (list, tuple, dict)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


# ---- arrays -----------------------------------------------------------------------------------
def _is_number_list(value):
    leaves = nest.flatten(value)
    return bool(leaves) and all(isinstance(v, (numbers.Number, np.number, bool))
                                for v in leaves)


def _as_arrays(structure, what, who):
    """``structure`` with every leaf a NumPy array (a list of numbers is one array)."""
    if structure is None:
        return None
    if isinstance(structure, (list, tuple)) and _is_number_list(structure):
        return np.asarray(structure)

    def as_array(value):
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
            return np.asarray(value)
        try:
            array = np.asarray(value)
        except Exception as err:  # noqa: BLE001 - re-raised with the argument named
            raise TypeError(f"{who}: {what} must be NumPy arrays, tensors, or lists/dicts of "
                            f"them; got {type(value).__name__} ({err}).") from None
        if array.dtype == object:
            raise TypeError(f"{who}: {what} must be NumPy arrays, tensors, or lists/dicts of "
                            f"them; got {type(value).__name__}, which is not numeric.")
        return array
    return nest.map_structure(as_array, structure)


def _num_samples(named, who):
    sizes = {}
    for name, structure in named:
        if structure is None:
            continue
        for leaf in nest.flatten(structure):
            if leaf.ndim == 0:
                raise ValueError(f"{who}: {name} must have a batch dimension (one row per "
                                 f"sample), got a scalar {leaf!r}.")
            sizes.setdefault(name, []).append(int(leaf.shape[0]))
    distinct = {n for found in sizes.values() for n in found}
    if len(distinct) > 1:
        detail = "\n".join(f"  {name} sizes: {', '.join(map(str, found))}"
                           for name, found in sizes.items())
        raise ValueError(f"{who}: data cardinality is ambiguous:\n{detail}\nMake sure all "
                         "arrays contain the same number of samples.")
    return distinct.pop() if distinct else 0


def check_class_weight(class_weight, model=None):
    """``class_weight`` checked: None, or a dict mapping class indices to weights."""
    del model
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict) or not class_weight:
        raise ValueError(f"class_weight must be a non-empty dict mapping class indices (ints) "
                         f"to weights, got {class_weight!r}.")
    for key, value in class_weight.items():
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool) or key < 0:
            raise ValueError(f"class_weight keys must be class indices (non-negative ints), "
                             f"got {key!r}.")
        if not isinstance(value, (numbers.Number, np.number)):
            raise ValueError(f"class_weight[{key}] must be a number, got {value!r}.")
    return dict(class_weight)


def _class_weights(y, class_weight, who):
    """Per-sample weights from the class of each target (an index, or a one-hot row)."""
    if isinstance(y, (list, tuple, dict)):
        raise ValueError(f"{who}: class_weight is only supported for models with a single "
                         "output; give sample_weight per output instead.")
    if y is None:
        raise ValueError(f"{who}: class_weight needs targets y.")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] > 1:
        classes = np.argmax(y, axis=1)
    else:
        classes = y.reshape(y.shape[0], -1)[:, 0]
    classes = np.rint(classes).astype(np.int64)
    missing = sorted(set(np.unique(classes).tolist()) - set(class_weight))
    if missing:
        raise ValueError(f"{who}: class_weight has no weight for class(es) {missing}; give a "
                         f"weight for every class (it has keys {sorted(class_weight)}).")
    table = np.zeros(max(class_weight) + 1, np.float32)
    for key, value in class_weight.items():
        table[key] = value
    return table[classes]


def _to_tensors(structure):
    """Tensors of the arrays; floating arrays become ``floatx`` (float32), as Keras feeds them,
    so float64 data neither retraces the step nor runs it in double precision."""
    if structure is None:
        return None
    floatx = np.dtype(backend.floatx())

    def to_tensor(array):
        if array.dtype.kind == "f" and array.dtype != floatx:
            array = array.astype(floatx)
        return convert_to_tensor(np.ascontiguousarray(array))
    return nest.map_structure(to_tensor, structure)


class ArrayData:
    """In-memory arrays, cut into batches of ``batch_size`` samples (the last one partial)."""

    exhausted = False

    def __init__(self, x, y, sample_weight, batch_size, who="fit", class_weight=None,
                 steps=None):
        self.who = who
        self.x = _as_arrays(x, "x", who)
        self.y = _as_arrays(y, "y", who)
        self.sample_weight = _as_arrays(sample_weight, "sample_weight", who)
        self.size = _num_samples([("x", self.x), ("y", self.y),
                                  ("sample_weight", self.sample_weight)], who)
        if batch_size is None:
            batch_size = 32
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"{who}: batch_size must be a positive integer, got "
                             f"{batch_size!r}.")
        self.batch_size = int(batch_size)
        self.class_weight = class_weight
        if class_weight is not None:
            weights = _class_weights(self.y, class_weight, who)
            self.sample_weight = weights if self.sample_weight is None else \
                np.asarray(self.sample_weight, np.float32).reshape(self.size, -1)[:, 0] * weights
        batches = -(-self.size // self.batch_size)
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
                raise ValueError(f"{who}: steps must be a positive integer, got {steps!r}.")
            batches = min(batches, int(steps))
        self.steps = batches

    @classmethod
    def single_batch(cls, x, y, sample_weight, who, class_weight=None):
        """The whole of ``x`` (and ``y``, ``sample_weight``) as one batch of tensors."""
        data = cls(x, y, sample_weight, 1, who, class_weight)
        return pack_x_y_sample_weight(_to_tensors(data.x), _to_tensors(data.y),
                                      _to_tensors(data.sample_weight))

    def split(self, fraction):
        """(training part, validation part): the last ``fraction`` of the samples, before any
        shuffling, is held out -- Keras's ``validation_split``."""
        cut = int(self.size * (1.0 - fraction))
        if cut == 0 or cut == self.size:
            raise ValueError(f"{self.who}: validation_split={fraction} leaves no samples for "
                             f"training or for validation out of {self.size}; use a fraction "
                             "that leaves at least one sample on each side.")

        def part(structure, index):
            return None if structure is None else nest.map_structure(lambda a: a[index],
                                                                     structure)
        pieces = []
        for index in (slice(0, cut), slice(cut, None)):
            piece = ArrayData(part(self.x, index), part(self.y, index),
                              part(self.sample_weight, index), self.batch_size, self.who)
            pieces.append(piece)
        return tuple(pieces)

    def batches(self, shuffle=False, rng=None, part=None):
        """Yields batches of tensors packed by ``pack_x_y_sample_weight``.  ``rng`` (a NumPy
        ``Generator``) draws the shuffle instead of NumPy's global one; ``part(size) -> (start,
        stop)`` keeps only those samples of each batch (one replica's share)."""
        order = (np.random if rng is None else rng).permutation(self.size) if shuffle else None
        for step in range(self.steps):
            start = step * self.batch_size
            stop = min(start + self.batch_size, self.size)
            if part is not None:
                first, last = part(stop - start)
                start, stop = start + first, start + last
            index = order[start:stop] if order is not None else slice(start, stop)

            def take(structure):
                if structure is None:
                    return None
                return nest.map_structure(lambda a: a[index], structure)
            yield pack_x_y_sample_weight(_to_tensors(take(self.x)), _to_tensors(take(self.y)),
                                         _to_tensors(take(self.sample_weight)))

    def on_epoch_end(self):
        pass


# ---- generators and Sequences -------------------------------------------------------------------
class IterableData:
    """Batches from an iterable of ``(x, y[, sample_weight])`` tuples: a generator (read on
    across epochs; ``steps`` batches per epoch) or an object with ``__len__`` and
    ``__getitem__`` such as a ``keras.utils.Sequence`` (indexed ``0 .. len - 1`` each epoch,
    and its ``on_epoch_end()`` called after each)."""

    def __init__(self, source, steps, who="fit", class_weight=None):
        self.source = source
        self.who = who
        self.class_weight = class_weight
        self.is_sequence = not hasattr(source, "__next__") and hasattr(source, "__getitem__") \
            and hasattr(source, "__len__")
        if steps is not None and (isinstance(steps, bool) or not isinstance(
                steps, (int, np.integer)) or steps < 1):
            raise ValueError(f"{who}: steps must be a positive integer, got {steps!r}.")
        if steps is None and self.is_sequence:
            steps = len(source)
        self.steps = None if steps is None else int(steps)
        self.size = None
        self.exhausted = False
        self._iterator = None

    def _items(self):
        if self.is_sequence:
            count = len(self.source) if self.steps is None else min(self.steps,
                                                                    len(self.source))
            return (self.source[i] for i in range(count))
        if self._iterator is None:
            self._iterator = iter(self.source)
        return self._iterator

    def batches(self, shuffle=False):
        """Yields batches of tensors packed by ``pack_x_y_sample_weight``; sets ``exhausted``
        when a generator runs out of batches."""
        items = self._items()
        count = 0
        while self.steps is None or count < self.steps:
            try:
                data = next(items)
            except StopIteration:
                # A generator that ends before `steps` batches (or yields none in an epoch)
                # has run out of data; a Sequence simply ends its epoch.
                if not self.is_sequence and (self.steps is not None or count == 0):
                    self.exhausted = True
                return
            x, y, sample_weight = unpack_x_y_sample_weight(data)
            if self.class_weight is not None:
                weights = _class_weights(y, self.class_weight, self.who)
                sample_weight = weights if sample_weight is None else \
                    np.asarray(sample_weight, np.float32).reshape(len(weights), -1)[:, 0] * weights
            yield pack_x_y_sample_weight(
                _to_tensors(_as_arrays(x, "x", self.who)),
                _to_tensors(_as_arrays(y, "y", self.who)),
                _to_tensors(_as_arrays(sample_weight, "sample_weight", self.who)))
            count += 1

    def on_epoch_end(self):
        if self.is_sequence and hasattr(self.source, "on_epoch_end"):
            self.source.on_epoch_end()


class DatasetData(IterableData):
    """A ``tf.data.Dataset`` of batches: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.

    Without ``steps`` an epoch is a whole new pass over the dataset (reshuffled when it
    shuffles); with ``steps`` the pass goes on across epochs, and a dataset that runs out before
    ``steps * epochs`` batches ends training with a warning, as in Keras.  An infinite dataset
    needs ``steps``."""

    def __init__(self, dataset, steps, who, class_weight=None):
        count = int(dataset.cardinality())
        if steps is None and count == INFINITE_CARDINALITY:
            argument = "steps_per_epoch" if who == "fit" else \
                "validation_steps" if "validation" in who else "steps"
            raise ValueError(f"{who}: the dataset is infinite (it repeats forever); give "
                             f"`{argument}` to say how many batches to take.")
        self._new_pass_each_epoch = steps is None
        super().__init__(dataset, steps if steps is not None else count if count > 0 else None,
                         who, class_weight)

    def _items(self):
        if self._new_pass_each_epoch:
            return iter(self.source)
        return super()._items()


def _is_batch_iterable(x):
    if hasattr(x, "__next__"):
        return True
    return (not isinstance(x, (np.ndarray, Tensor, list, tuple, dict, str, bytes))
            and hasattr(x, "__getitem__") and hasattr(x, "__len__") and not hasattr(x, "shape"))


def _reject_separate_targets(y, sample_weight, message):
    """A ValueError (``message(argument, what)``) for ``y`` or ``sample_weight`` given beside
    an ``x`` whose batches carry them."""
    for value, argument, what in ((y, "y", "the targets"),
                                  (sample_weight, "sample_weight", "the sample weights")):
        if value is not None:
            raise ValueError(message(argument, what))


def data_for(x, y, sample_weight, batch_size, steps, who, class_weight=None,
             default_batch_size=None):
    """The ``ArrayData``, ``DatasetData`` or ``IterableData`` for ``fit``/``evaluate``/
    ``predict``'s inputs; ``default_batch_size`` is used for arrays when ``batch_size`` is
    None."""
    if x is None:
        raise ValueError(f"{who}: x is required (the input data).")
    if isinstance(x, Dataset):
        _reject_separate_targets(y, sample_weight, lambda argument, what: (
            f"{who}: when providing `x` as a tf.data.Dataset, `{argument}` should not be "
            f"passed. Instead, {what} should be included as part of the tf.data.Dataset."))
        if batch_size is not None:
            raise ValueError(f"{who}: `batch_size` must not be given when `x` is a "
                             "tf.data.Dataset: the dataset yields the batches (use "
                             "dataset.batch(...)).")
        return DatasetData(x, steps, who, class_weight)
    if batch_size is None:
        batch_size = default_batch_size
    if _is_batch_iterable(x):
        _reject_separate_targets(y, sample_weight, lambda argument, what: (
            f"{who}: `{argument}` argument is not supported when x is a generator or Sequence: "
            f"its batches hold {what} ((x, y) or (x, y, sample_weight) batches); leave "
            f"{argument}=None."))
        return IterableData(x, steps, who, class_weight)
    return ArrayData(x, y, sample_weight, batch_size, who, class_weight, steps)
