"""CategoryEncoding: integer category ids to one-hot, multi-hot or count vectors."""
from hybridtf.api import array_ops, check_ops, math_ops
from hybridtf.eager.execute import as_tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers.base_layer import Layer

_MODES = ("one_hot", "multi_hot", "count")


class CategoryEncoding(Layer):
    """Encodes integer ids in ``[0, num_tokens)`` as vectors of length ``num_tokens``.

    ``output_mode``:
      - ``"one_hot"``: one vector per id; a trailing axis of size 1 is replaced
        (``[batch, 1]`` -> ``[batch, num_tokens]``, ``[batch]`` -> ``[batch, num_tokens]``).
      - ``"multi_hot"`` (default; ``"binary"`` is an alias): one vector per example (per
        row of the last axis) with 1 at every id present.
      - ``"count"``: like multi-hot, with the number of times each id occurs, or the sum of
        ``count_weights`` (call argument, the shape of the inputs) at its positions.
    A scalar input is treated as one example of one id.  Ids outside ``[0, num_tokens)``
    raise InvalidArgumentError.
    """

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode not in _MODES:
            raise ValueError(f"CategoryEncoding: unknown output_mode {output_mode!r}; expected "
                             f"one of {_MODES}.")
        if num_tokens is None:
            raise ValueError("CategoryEncoding: num_tokens must be set to use this layer. If "
                             "the number of tokens is not known beforehand, use the "
                             "IntegerLookup layer instead.")
        if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
            raise ValueError(f"CategoryEncoding: `num_tokens` must be an integer >= 1. "
                             f"Received: num_tokens={num_tokens!r}.")
        if sparse:
            raise ValueError("CategoryEncoding: sparse=True needs sparse tensors, which this "
                             "framework does not have; use sparse=False (dense outputs).")
        self.num_tokens = num_tokens
        self.output_mode = output_mode
        self.sparse = False

    def _checked_ids(self, inputs):
        ids = as_tensor(inputs)
        if not (ids.dtype.is_integer or ids.dtype.is_floating):
            raise TypeError(f"CategoryEncoding {self.name}: inputs must be integer ids, got "
                            f"dtype {ids.dtype.name}.")
        if not ids.dtype.is_integer:
            ids = math_ops.cast(ids, "int64")
        message = (f"CategoryEncoding {self.name}: input values must be in the range "
                   f"0 <= values < num_tokens with num_tokens={self.num_tokens}")
        check_ops.assert_non_negative(ids, message=message)
        check_ops.assert_less(ids, math_ops.cast(self.num_tokens, ids.dtype), message=message)
        return ids

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(f"CategoryEncoding {self.name}: `count_weights` is only used when "
                             f"output_mode is 'count'; got output_mode={self.output_mode!r}.")
        ids = self._checked_ids(inputs)
        if ids.ndim == 0:
            ids = array_ops.reshape(ids, [1])
        dtype = self._dtype_object
        if self.output_mode == "one_hot":
            if ids.ndim > 1 and ids.shape[-1] == 1:
                ids = array_ops.squeeze(ids, [-1])
            return array_ops.one_hot(ids, self.num_tokens, dtype=dtype)
        if ids.ndim > 2:
            raise ValueError(f"CategoryEncoding {self.name}: with output_mode "
                             f"{self.output_mode!r} the inputs must have rank <= 2 ([batch, "
                             f"ids]); received input shape {ids.shape}.")
        encoded = array_ops.one_hot(ids, self.num_tokens, dtype=dtype)
        if self.output_mode == "multi_hot":
            return math_ops.reduce_max(encoded, axis=-2)
        if count_weights is not None:
            weights = as_tensor(count_weights)
            if weights.shape.as_list() != ids.shape.as_list():
                raise ValueError(f"CategoryEncoding {self.name}: count_weights must have the "
                                 f"shape of the inputs {ids.shape}; got {weights.shape}.")
            encoded = math_ops.multiply(encoded, array_ops.expand_dims(
                math_ops.cast(weights, dtype), -1))
        return math_ops.reduce_sum(encoded, axis=-2)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if not dims:
            return TensorShape([1, self.num_tokens]) if self.output_mode == "one_hot" \
                else TensorShape([self.num_tokens])
        if self.output_mode == "one_hot" and len(dims) > 1 and dims[-1] == 1:
            dims = dims[:-1]
        if self.output_mode != "one_hot":
            dims = dims[:-1]
        return TensorShape(dims + [self.num_tokens])

    def get_config(self):
        config = super().get_config()
        config.update({"num_tokens": self.num_tokens, "output_mode": self.output_mode})
        return config
