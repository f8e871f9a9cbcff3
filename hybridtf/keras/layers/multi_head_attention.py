"""MultiHeadAttention: scaled dot-product attention over several learned projections."""
import math
import string

from hybridtf.api import array_ops, einsum_ops, math_ops
from hybridtf.eager.execute import as_tensor
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import initializers
from hybridtf.keras.layers.activation_layers import Softmax
from hybridtf.keras.layers.attention import as_bool_mask, causal_mask, sequence_length
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.core import Dropout
from hybridtf.keras.layers.einsum_dense import EinsumDense
from hybridtf.keras.layers.layer_utils import (get_constraint, get_regularizer,
                                               serialize_constraint, serialize_initializer,
                                               serialize_regularizer)


def _positive_int(value, what, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"MultiHeadAttention: received an invalid value for argument "
                         f"`{what}`, expected a positive integer"
                         f"{' or None' if allow_none else ''}. Received: {what}={value!r}")
    return value


def projection(free_dims, contracted_dims, output_dims):
    """The einsum equation of a projection and its bias letters: ``free_dims`` axes kept,
    ``contracted_dims`` summed with the kernel, ``output_dims`` new axes from the kernel."""
    letters = iter(string.ascii_lowercase)
    free = "".join(next(letters) for _ in range(free_dims))
    contracted = "".join(next(letters) for _ in range(contracted_dims))
    new = "".join(next(letters) for _ in range(output_dims))
    return f"{free}{contracted},{contracted}{new}->{free}{new}", new


def attention_equations(rank, attention_axes):
    """Einsum equations for projected tensors of ``rank`` (``[batch, ..., heads, size]``):
    ``key, query -> scores`` and ``scores, value -> output``.  The scores are laid out as
    [the other (batch-like) axes and the heads, query attention axes, key attention axes]."""
    letters = string.ascii_lowercase
    query = letters[:rank]
    key_letter = iter(letters[rank:])
    key = "".join(next(key_letter) if i in attention_axes else query[i] for i in range(rank))
    batch = [i for i in range(rank - 1) if i not in attention_axes]
    scores = ("".join(query[i] for i in batch) + "".join(query[i] for i in attention_axes)
              + "".join(key[i] for i in attention_axes))
    return f"{key},{query}->{scores}", f"{scores},{key}->{query}", len(scores)


class MultiHeadAttention(Layer):
    """Multi-head attention, as in "Attention Is All You Need".

    ``query`` ``[batch, T, dim]`` (or ``[batch, *axes, dim]``), ``value`` ``[batch, S,
    dim_v]`` and ``key`` (default: value) are projected to ``num_heads`` heads of size
    ``key_dim`` (``value_dim`` for the values); each head computes
    ``softmax(q k^T / sqrt(key_dim)) v`` over ``attention_axes`` (default: every axis but
    the batch and the features), and the heads are projected back to ``output_shape``
    (default: the query's last dimension).  The weights are the EinsumDense sublayers
    ``query``, ``key``, ``value`` (kernels ``[dim, num_heads, key_dim]``, biases
    ``[num_heads, key_dim]``) and ``attention_output`` (kernel ``[num_heads, value_dim,
    *output_shape]``), and ``gate`` with ``use_gate=True`` (a sigmoid gate on each head's
    output).  ``sliding_window``: each query position attends only to key positions fewer
    than ``sliding_window`` steps away.

    Call arguments: ``attention_mask`` (bools ``[batch, T, S]``, True = may attend),
    ``query_mask``/``value_mask``/``key_mask`` (``[batch, T]``/``[batch, S]``, False =
    padding), ``use_causal_mask``, ``return_attention_scores`` (also return the attention
    weights ``[batch, num_heads, T, S]``), ``training`` (``dropout`` on the attention
    weights only when True).
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, sliding_window=None,
                 flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 use_gate=False, seed=None, **kwargs):
        self._num_heads = _positive_int(num_heads, "num_heads")
        self._key_dim = _positive_int(key_dim, "key_dim")
        self._value_dim = _positive_int(value_dim, "value_dim", allow_none=True) or key_dim
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not 0 <= dropout < 1:
            raise ValueError(f"MultiHeadAttention: dropout must be a float in [0, 1). "
                             f"Received: dropout={dropout!r}")
        if flash_attention:
            raise ValueError("MultiHeadAttention: flash_attention=True is not available in "
                             "this framework; leave it None or False (the attention is "
                             "computed exactly, without the fused kernel).")
        if output_shape:
            if isinstance(output_shape, int):
                output_shape = (output_shape,)
            try:
                output_shape = tuple(int(d) for d in output_shape)
            except (TypeError, ValueError):
                raise ValueError(f"MultiHeadAttention: invalid `output_shape`: {output_shape!r}"
                                 f". When specified, it should be a tuple, list or int.") \
                    from None
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        elif attention_axes is not None:
            if not isinstance(attention_axes, (list, tuple)):
                raise ValueError(f"MultiHeadAttention: `attention_axes` must be an int, list, "
                                 f"or tuple. Received: attention_axes={attention_axes!r}")
            attention_axes = tuple(attention_axes)
        self._sliding_window = _positive_int(sliding_window, "sliding_window", allow_none=True)
        self._dropout = dropout
        self._use_bias = bool(use_bias)
        self._use_gate = bool(use_gate)
        self._output_shape = output_shape or None
        self._attention_axes = attention_axes
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        self._kernel_regularizer = get_regularizer(kernel_regularizer, "MultiHeadAttention")
        self._bias_regularizer = get_regularizer(bias_regularizer, "MultiHeadAttention")
        self._kernel_constraint = get_constraint(kernel_constraint, "MultiHeadAttention")
        self._bias_constraint = get_constraint(bias_constraint, "MultiHeadAttention")
        self._projection_activity_regularizer = get_regularizer(activity_regularizer,
                                                                "MultiHeadAttention")
        self.seed = seed
        self.supports_masking = True
        self._query_dense = self._key_dense = self._value_dense = None
        self._gate_dense = self._output_dense = None

    num_heads = property(lambda self: self._num_heads)
    key_dim = property(lambda self: self._key_dim)
    value_dim = property(lambda self: self._value_dim)
    dropout = property(lambda self: self._dropout)
    use_bias = property(lambda self: self._use_bias)
    attention_axes = property(lambda self: self._attention_axes)
    query_dense = property(lambda self: self._query_dense)
    key_dense = property(lambda self: self._key_dense)
    value_dense = property(lambda self: self._value_dense)
    output_dense = property(lambda self: self._output_dense)

    # ---- building -----------------------------------------------------------------------------
    def _dense(self, equation, bias_axes, output_shape, name, activation=None):
        """An EinsumDense sublayer with this layer's initializers, regularizers and
        constraints (each sublayer its own copy of the initializers)."""
        return EinsumDense(
            equation, output_shape=output_shape, activation=activation,
            bias_axes=bias_axes if self._use_bias else None,
            kernel_initializer=initializers.deserialize(
                serialize_initializer(self._kernel_initializer)),
            bias_initializer=initializers.deserialize(
                serialize_initializer(self._bias_initializer)),
            kernel_regularizer=self._kernel_regularizer,
            bias_regularizer=self._bias_regularizer,
            activity_regularizer=self._projection_activity_regularizer,
            kernel_constraint=self._kernel_constraint, bias_constraint=self._bias_constraint,
            dtype=self.dtype, name=name)

    def build(self, query_shape, value_shape=None, key_shape=None):
        """Creates the projections for inputs of these shapes.  Called with the query's
        shape only (the first call of the layer), the projections are created on that
        call, once the value's and key's shapes are known."""
        if value_shape is None:
            self.built = True
            return
        self._build_projections(TensorShape(query_shape).as_list(),
                                TensorShape(value_shape).as_list(),
                                TensorShape(key_shape or value_shape).as_list())

    def _build_projections(self, query_dims, value_dims, key_dims):
        if value_dims[1:-1] != key_dims[1:-1]:
            raise ValueError(f"MultiHeadAttention {self.name}: all dimensions of `value` and "
                             f"`key`, except the last one, must be equal. Received: "
                             f"value_shape={tuple(value_dims)} and "
                             f"key_shape={tuple(key_dims)}")
        if len(query_dims) < 3 or len(value_dims) != len(query_dims):
            raise ValueError(f"MultiHeadAttention {self.name}: query and value must have the "
                             f"same rank >= 3 ([batch, ..., features]); received shapes "
                             f"{tuple(query_dims)} and {tuple(value_dims)}.")
        rank = len(query_dims)

        def build(layer, dims):
            layer._build_for_shapes(TensorShape(dims))
            return layer

        # [batch, ..., features] -> [batch, ..., heads, size]
        equation, bias_axes = projection(rank - 1, 1, 2)

        def heads_of(size):
            return [None] * (rank - 2) + [self._num_heads, size]

        self._query_dense = build(self._dense(equation, bias_axes, heads_of(self._key_dim),
                                              "query"), query_dims)
        self._key_dense = build(self._dense(equation, bias_axes, heads_of(self._key_dim),
                                            "key"), key_dims)
        if self._use_gate:
            self._gate_dense = build(self._dense(equation, bias_axes,
                                                 heads_of(self._value_dim), "gate",
                                                 "sigmoid"), query_dims)
        self._value_dense = build(self._dense(equation, bias_axes, heads_of(self._value_dim),
                                              "value"), value_dims)
        # Attention over the projected tensors [batch, ..., heads, size].
        axes = (tuple(range(1, rank - 1)) if self._attention_axes is None else
                tuple(a if a >= 0 else rank + a for a in self._attention_axes))
        if any(not 1 <= a < rank - 1 for a in axes) or len(set(axes)) != len(axes):
            raise ValueError(f"MultiHeadAttention {self.name}: attention_axes "
                             f"{self._attention_axes} must be distinct axes between 1 and "
                             f"{rank - 2} (not the batch or the features) for inputs of rank "
                             f"{rank}.")
        self._attention_axes = axes
        self._dot_product_equation, self._combine_equation, scores_rank = \
            attention_equations(rank + 1, axes)
        self._softmax = Softmax(axis=list(range(scores_rank - len(axes), scores_rank)),
                                dtype=self.dtype)
        self._dropout_layer = Dropout(self._dropout, seed=self.seed, dtype=self.dtype)
        output_shape = list(self._output_shape or [query_dims[-1]])
        letters = string.ascii_lowercase
        free = letters[:rank - 1]
        bound = letters[rank - 1:rank + 1]
        new = letters[rank + 1:rank + 1 + len(output_shape)]
        self._output_dense = build(self._dense(
            f"{free}{bound},{bound}{new}->{free}{new}", new,
            [None] * (rank - 2) + output_shape, "attention_output"),
            query_dims[:-1] + [self._num_heads, self._value_dim])

    # ---- calling ------------------------------------------------------------------------------
    def _combined_mask(self, query, value, query_mask, value_mask, key_mask, attention_mask,
                       use_causal_mask):
        """One bool mask [batch, T, S] (or broadcastable to it) of where attention may go,
        from every mask given; None when there is none."""
        parts = []
        if query_mask is not None:
            parts.append(array_ops.expand_dims(as_bool_mask(query_mask, "query_mask",
                                                            self.name), -1))
        for what, mask in (("value_mask", value_mask), ("key_mask", key_mask)):
            if mask is not None:
                parts.append(array_ops.expand_dims(as_bool_mask(mask, what, self.name), -2))
        if use_causal_mask or self._sliding_window is not None:
            if len(self._attention_axes) != 1:
                raise ValueError(f"MultiHeadAttention {self.name}: use_causal_mask and "
                                 f"sliding_window need a single attention axis; this layer "
                                 f"attends over axes {self._attention_axes}.")
            axis = self._attention_axes[0]
            lengths = sequence_length(query, axis), sequence_length(value, axis)
            if use_causal_mask:
                parts.append(causal_mask(*lengths))
            if self._sliding_window is not None:
                rows = array_ops.expand_dims(array_ops.range(lengths[0]), 1)
                cols = array_ops.expand_dims(array_ops.range(lengths[1]), 0)
                parts.append(array_ops.expand_dims(math_ops.less(
                    math_ops.abs(math_ops.subtract(rows, cols)), self._sliding_window), 0))
        if attention_mask is not None:
            parts.append(as_bool_mask(attention_mask, "attention_mask", self.name))
        if not parts:
            return None
        mask = parts[0]
        for part in parts[1:]:
            mask = math_ops.logical_and(mask, part)
        return mask

    def _masked_softmax(self, scores, mask):
        if mask is not None:
            # [batch, T, S] -> [batch, 1 (heads), T, S]: the same mask for every head.
            axis = -2 * len(self._attention_axes) - 1
            for _ in range(scores.ndim - mask.ndim):
                mask = array_ops.expand_dims(mask, axis)
        return self._softmax(scores, mask=mask)

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        value = as_tensor(value)
        key = value if key is None else as_tensor(key)
        if self._query_dense is None:
            self._build_projections(query.shape.as_list(), value.shape.as_list(),
                                    key.shape.as_list())
        mask = self._combined_mask(query, value, query_mask, value_mask, key_mask,
                                   attention_mask, use_causal_mask)
        gate = self._gate_dense(query) if self._use_gate else None
        q = self._query_dense(query)
        k = self._key_dense(key)
        v = self._value_dense(value)
        q = math_ops.multiply(q, 1.0 / math.sqrt(float(self._key_dim)))
        scores = self._masked_softmax(
            einsum_ops.einsum(self._dot_product_equation, k, q), mask)
        used = scores if self._dropout == 0 else self._dropout_layer(scores, training=training)
        heads = einsum_ops.einsum(self._combine_equation, used, v)
        if gate is not None:
            heads = math_ops.multiply(heads, gate)
        outputs = self._output_dense(heads)
        if return_attention_scores:
            return outputs, scores
        return outputs

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        query = TensorShape(query_shape).as_list()
        if value_shape is not None and key_shape is not None:
            value, key = TensorShape(value_shape).as_list(), TensorShape(key_shape).as_list()
            if value[1:-1] != key[1:-1]:
                raise ValueError(f"MultiHeadAttention {self.name}: all dimensions of `value` "
                                 f"and `key`, except the last one, must be equal. Received: "
                                 f"value_shape={tuple(value)} and key_shape={tuple(key)}")
        if self._output_shape:
            return TensorShape(query[:-1] + list(self._output_shape))
        return TensorShape(query)

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self._num_heads, "key_dim": self._key_dim,
            "value_dim": self._value_dim, "dropout": self._dropout,
            "use_bias": self._use_bias, "use_gate": self._use_gate,
            "output_shape": self._output_shape,
            "attention_axes": self._config_attention_axes(),
            "sliding_window": self._sliding_window,
            "kernel_initializer": serialize_initializer(self._kernel_initializer),
            "bias_initializer": serialize_initializer(self._bias_initializer),
            "kernel_regularizer": serialize_regularizer(self._kernel_regularizer),
            "bias_regularizer": serialize_regularizer(self._bias_regularizer),
            "activity_regularizer": serialize_regularizer(
                self._projection_activity_regularizer),
            "kernel_constraint": serialize_constraint(self._kernel_constraint),
            "bias_constraint": serialize_constraint(self._bias_constraint),
            "seed": self.seed})
        return config

    def _config_attention_axes(self):
        return None if self._attention_axes is None else list(self._attention_axes)
