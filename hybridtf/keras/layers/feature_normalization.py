"""Normalization: shift and scale features by a mean and variance given or learned by
``adapt``."""
import numpy as np

from hybridtf.api import array_ops, math_ops
from hybridtf.data import Dataset
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import backend
from hybridtf.keras.layers.base_layer import Layer


def _first_of(batch):
    """The features of a dataset element: ``x`` of an ``(x, y[, sample_weight])`` tuple."""
    return batch[0] if isinstance(batch, tuple) else batch


class Normalization(Layer):
    """Normalises features: ``(inputs - mean) / sqrt(variance)`` (``invert=True``:
    ``inputs * sqrt(variance) + mean``), with the square root floored at
    ``keras.backend.epsilon()``.

    ``axis``: the axes that keep their own statistics (default -1, one mean and variance per
    feature; None for a single mean and variance).  ``mean``/``variance``: the statistics,
    broadcast against the kept axes; when they are not given, call ``adapt(data)`` with a
    NumPy array, a tensor, a batched ``tf.data.Dataset`` (of features or of ``(x, y)``
    tuples; an unbatched one is batched), or an iterable of batches.  Adapted statistics are
    the weights ``mean``, ``variance`` and ``count`` (saved with the model).
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int) and not isinstance(axis, bool):
            axis = (axis,)
        else:
            try:
                axis = tuple(int(a) for a in axis)
            except (TypeError, ValueError):
                raise TypeError(f"Normalization: axis must be None, an int or a tuple of ints, "
                                f"got {axis!r}.") from None
        self.axis = axis
        if (mean is None) != (variance is None):
            raise ValueError(f"Normalization: when setting values directly, both `mean` and "
                             f"`variance` must be set. Received: mean={mean} and "
                             f"variance={variance}")
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError(f"Normalization: when setting values directly, `mean` and "
                                 f"`variance` must have the same shape. Received: mean shape "
                                 f"{np.shape(mean)} and variance shape {np.shape(variance)}")
            if np.ndim(mean) > len(axis):
                raise ValueError(f"Normalization: the rank of `mean` must be less than or "
                                 f"equal to the number of axes ({len(axis)}). Received: mean "
                                 f"shape {np.shape(mean)} for axis {axis}")
        self.input_mean = mean
        self.input_variance = variance
        self.invert = bool(invert)
        self.supports_masking = True
        self.adapt_mean = self.adapt_variance = self.count = None
        self._adapt_input_shape = None

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        ndim = len(dims)
        if any(not -ndim <= a < ndim for a in self.axis):
            raise ValueError(f"Normalization {self.name}: all `axis` values must be in the "
                             f"range [-ndim, ndim). Received inputs with ndim={ndim}, while "
                             f"axis={self.axis}")
        keep = sorted(a % ndim for a in self.axis)
        for d in keep:
            if dims[d] is None:
                raise ValueError(f"Normalization {self.name}: all `axis` values to be kept "
                                 f"must have a known size. Received axis={self.axis}, inputs "
                                 f"shape {tuple(dims)}, with unknown axis {d}")
        self._adapt_input_shape = tuple(dims)
        self._keep_axis = tuple(keep)
        self._reduce_axis = tuple(d for d in range(ndim) if d not in keep)
        self._broadcast_shape = [dims[d] if d in keep else 1 for d in range(ndim)]
        stats_shape = tuple(dims[d] for d in keep)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight("mean", shape=stats_shape, initializer="zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", shape=stats_shape,
                                                  initializer="ones", trainable=False)
            self.count = self.add_weight("count", shape=(), dtype="int64",
                                         initializer="zeros", trainable=False)
        else:
            dtype = self._dtype_object.as_numpy_dtype
            self._given_mean = self._broadcast_given(self.input_mean).astype(dtype)
            self._given_variance = self._broadcast_given(self.input_variance).astype(dtype)
        self.built = True

    def _broadcast_given(self, value):
        """A given mean/variance aligned with the last kept axes, broadcast to them."""
        value = np.asarray(value, np.float64)
        expanded = [1] * len(self._broadcast_shape)
        for i in range(1, value.ndim + 1):
            expanded[self._keep_axis[-i]] = value.shape[-i]
        try:
            return np.broadcast_to(value.reshape(expanded), self._broadcast_shape)
        except ValueError:
            raise ValueError(f"Normalization {self.name}: mean/variance of shape {value.shape} "
                             f"do not broadcast to the kept axes {self._keep_axis} of inputs "
                             f"of shape {self._adapt_input_shape}.") from None

    def adapt(self, data):
        """Sets the mean and variance (per position of the kept axes) to those of ``data``."""
        if self.input_mean is not None:
            raise ValueError(f"Normalization {self.name}: adapt() cannot be used when `mean` "
                             "and `variance` were passed to the constructor.")
        batches, shape = self._adapt_batches(data)
        if not self.built:
            self._build_for_shapes(TensorShape(shape))
        total_mean = total_var = None
        total_count = 0
        for batch in batches:
            batch = np.asarray(_first_of(batch), np.float64)
            if batch.ndim != len(self._adapt_input_shape) or any(
                    batch.shape[d] != self._adapt_input_shape[d] for d in self._keep_axis):
                raise ValueError(f"Normalization {self.name}: the layer was built with input "
                                 f"shape {self._adapt_input_shape}, but adapt() got data of "
                                 f"the incompatible shape {batch.shape}.")
            count = int(np.prod([batch.shape[d] for d in self._reduce_axis]))
            if count == 0:
                continue
            mean = batch.mean(axis=self._reduce_axis)
            var = batch.var(axis=self._reduce_axis)
            if total_mean is None:
                total_mean, total_var, total_count = mean, var, count
                continue
            # Exact pooled mean and variance of everything seen so far and this batch.
            new_count = total_count + count
            new_mean = total_mean + (mean - total_mean) * (count / new_count)
            total_var = (total_count * (total_var + (total_mean - new_mean) ** 2)
                         + count * (var + (mean - new_mean) ** 2)) / new_count
            total_mean, total_count = new_mean, new_count
        if total_mean is None:
            raise ValueError(f"Normalization {self.name}: adapt() received no data.")
        self.adapt_mean.assign(total_mean.astype(self._dtype_object.as_numpy_dtype))
        self.adapt_variance.assign(total_var.astype(self._dtype_object.as_numpy_dtype))
        self.count.assign(total_count)

    def _adapt_batches(self, data):
        """(an iterable of batches, the shape to build with) for the data ``adapt`` accepts."""
        if isinstance(data, (np.ndarray, Tensor)):
            array = np.asarray(data)
            return [array], array.shape
        if isinstance(data, Dataset):
            spec = _first_of(data.element_spec)
            if spec.shape.rank == 1:
                data = data.batch(128)
                spec = _first_of(data.element_spec)
            return data, spec.shape
        if hasattr(data, "__iter__") and not isinstance(data, (str, bytes, dict)):
            batches = [np.asarray(_first_of(b)) for b in data]
            if not batches:
                raise ValueError(f"Normalization {self.name}: adapt() received an empty "
                                 "iterable; pass at least one batch, e.g. layer.adapt([x]).")
            return batches, batches[0].shape
        raise TypeError(f"Normalization {self.name}: adapt() supports NumPy arrays, tensors, "
                        f"tf.data.Dataset and iterables of batches; got {type(data).__name__}.")

    def call(self, inputs):
        dtype = self._dtype_object
        x = inputs if inputs.dtype is dtype else math_ops.cast(inputs, dtype)
        if self.input_mean is not None:
            mean, variance = self._given_mean, self._given_variance
        else:
            mean = array_ops.reshape(self.adapt_mean, self._broadcast_shape)
            variance = array_ops.reshape(self.adapt_variance, self._broadcast_shape)
        std = math_ops.maximum(math_ops.sqrt(variance), backend.epsilon())
        if self.invert:
            return math_ops.add(math_ops.multiply(x, std), mean)
        return math_ops.divide(math_ops.subtract(x, mean), std)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": self.axis, "invert": self.invert,
            "mean": None if self.input_mean is None else np.asarray(self.input_mean).tolist(),
            "variance": None if self.input_variance is None
            else np.asarray(self.input_variance).tolist()})
        return config
