"""Permute and RepeatVector: rearrange or repeat the axes of each example."""
from hybridtf.api import array_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.input_spec import InputSpec


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` is a permutation of 1..rank-1 (the batch axis,
    0, stays first).  ``Permute((2, 1))`` swaps the two axes of ``[batch, a, b]`` inputs."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        try:
            dims = tuple(int(d) for d in dims)
        except (TypeError, ValueError):
            raise ValueError(f"Permute: dims must be a tuple of ints, got {dims!r}.") from None
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for Permute layer. The set "
                             f"of indices in `dims` must be consecutive and start from 1 (the "
                             f"batch axis 0 is not permuted). Received dims={dims}")
        self.dims = dims
        self.input_spec = InputSpec(ndim=len(dims) + 1)
        self.supports_masking = True

    def call(self, inputs):
        return array_ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0]] + [dims[d] for d in self.dims])

    def get_config(self):
        config = super().get_config()
        config["dims"] = self.dims
        return config


class RepeatVector(Layer):
    """Repeats each example ``n`` times: ``[batch, features]`` -> ``[batch, n, features]``."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"RepeatVector: expected an integer value for `n`, got "
                            f"{type(n).__name__} ({n!r}).")
        if n <= 0:
            raise ValueError(f"RepeatVector: argument `n` should be a positive integer. "
                             f"Received: n={n}")
        self.n = n
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return array_ops.tile(array_ops.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        return TensorShape([dims[0], self.n, dims[1]])

    def get_config(self):
        config = super().get_config()
        config["n"] = self.n
        return config
