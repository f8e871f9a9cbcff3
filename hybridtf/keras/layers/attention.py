"""Attention (dot-product, Luong-style) and AdditiveAttention (Bahdanau-style) layers."""
from hybridtf.api import array_ops, math_ops, nn_ops
from hybridtf.eager.execute import as_tensor
from hybridtf.framework import dtypes
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.core import Dropout


def causal_mask(query_length, key_length):
    """[1, Tq, Tv] bools, True where key position <= query position (no attending to the
    future); the lengths are ints or scalar int tensors."""
    rows = array_ops.expand_dims(array_ops.range(query_length), 1)
    cols = array_ops.expand_dims(array_ops.range(key_length), 0)
    return array_ops.expand_dims(math_ops.greater_equal(rows, cols), 0)


def sequence_length(x, axis):
    """The size of ``x`` along ``axis``: an int when known, else a scalar tensor."""
    size = x.shape.as_list()[axis]
    return size if size is not None else array_ops.shape(x)[axis]


def as_bool_mask(mask, what, layer_name):
    mask = as_tensor(mask)
    if mask.dtype is dtypes.bool:
        return mask
    if not (mask.dtype.is_integer or mask.dtype.is_floating):
        raise TypeError(f"{layer_name}: {what} must be a boolean (or 0/1) tensor, got dtype "
                        f"{mask.dtype.name}.")
    return math_ops.not_equal(mask, math_ops.cast(0, mask.dtype))


class Attention(Layer):
    """Dot-product attention: ``softmax(query @ key^T) @ value`` (Luong-style).

    Call with ``[query, value]`` or ``[query, value, key]`` (key defaults to value):
    query ``[batch, Tq, dim]``, value ``[batch, Tv, dim_v]``, key ``[batch, Tv, dim]``; the
    output is ``[batch, Tq, dim_v]``.  ``use_scale``: multiply the scores by a learned
    scalar ``scale``.  ``score_mode="concat"``: scores are
    ``concat_score_weight * sum(tanh(scale * (query + key)))`` over the features instead.
    Call arguments: ``mask=[query_mask, value_mask]`` (``[batch, Tq]`` / ``[batch, Tv]``,
    False = padding: padded values get no attention and padded queries output zeros),
    ``use_causal_mask`` (position i attends to positions <= i), ``return_attention_scores``
    (also return the ``[batch, Tq, Tv]`` attention distribution), ``training`` (``dropout``
    on the attention distribution only when True).
    """

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"{type(self).__name__}: invalid value for argument score_mode. "
                             f"Expected one of {{'dot', 'concat'}}. Received: "
                             f"score_mode={score_mode!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not 0 <= dropout < 1:
            raise ValueError(f"{type(self).__name__}: dropout must be a float in [0, 1). "
                             f"Received: dropout={dropout!r}")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = dropout
        self.seed = seed
        self.supports_masking = True
        self.scale = self.concat_score_weight = None
        self._dropout_layer = Dropout(dropout, seed=seed) if dropout > 0 else None

    def _validate_inputs(self, inputs, mask=None):
        name = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{name} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: "
                             f"inputs={inputs!r}.")
        if not 2 <= len(inputs) <= 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 or 3, namely "
                             f"[query, value] or [query, value, key]. Received length: "
                             f"{len(inputs)}.")
        if mask is not None:
            if not isinstance(mask, (list, tuple)):
                raise ValueError(f"{name} layer mask must be a list, namely "
                                 f"[query_mask, value_mask]. Received: mask={mask!r}.")
            if not 2 <= len(mask) <= 3:
                raise ValueError(f"{name} layer accepts mask list of length 2 or 3. "
                                 f"Received length: {len(mask)}.")

    def build(self, input_shape):
        self._validate_inputs(input_shape)
        if self.use_scale:
            self.scale = self.add_weight("scale", shape=(), initializer="ones",
                                         trainable=True)
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", shape=(),
                                                       initializer="ones", trainable=True)
        self.built = True

    def _calculate_scores(self, query, key):
        if self.score_mode == "dot":
            scores = math_ops.matmul(query, key, transpose_b=True)
            return scores if self.scale is None else math_ops.multiply(scores, self.scale)
        pairs = math_ops.add(array_ops.expand_dims(query, -2), array_ops.expand_dims(key, -3))
        if self.scale is not None:
            pairs = math_ops.multiply(pairs, self.scale)
        return math_ops.multiply(self.concat_score_weight,
                                 math_ops.reduce_sum(math_ops.tanh(pairs), axis=-1))

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        self._validate_inputs(inputs, mask)
        dtype = self._dtype_object
        query, value = (math_ops.cast(as_tensor(t), dtype) if as_tensor(t).dtype is not dtype
                        else as_tensor(t) for t in inputs[:2])
        key = value if len(inputs) < 3 else as_tensor(inputs[2])
        if key.dtype is not dtype:
            key = math_ops.cast(key, dtype)
        if query.ndim < 3 or value.ndim != query.ndim or key.ndim != query.ndim:
            raise ValueError(f"{type(self).__name__} {self.name}: query, value and key must "
                             f"have the same rank >= 3 ([batch, T, dim]); received shapes "
                             f"{query.shape}, {value.shape}, {key.shape}.")
        query_mask = value_mask = None
        if mask is not None:
            query_mask = None if mask[0] is None else as_bool_mask(mask[0], "query_mask",
                                                                   self.name)
            value_mask = None if mask[1] is None else as_bool_mask(mask[1], "value_mask",
                                                                   self.name)
        scores = self._calculate_scores(query, key)
        scores_mask = None
        if value_mask is not None:
            scores_mask = array_ops.expand_dims(value_mask, -2)          # [batch, 1, Tv]
        if use_causal_mask:
            causal = causal_mask(sequence_length(scores, -2), sequence_length(scores, -1))
            scores_mask = causal if scores_mask is None else math_ops.logical_and(
                scores_mask, causal)
        if scores_mask is not None:
            # Padded keys get a score far below the others: no weight after the softmax.
            big = 65504.0 if dtype is dtypes.float16 else 1.0e9
            scores = math_ops.where(scores_mask, scores, math_ops.subtract(scores, big))
        weights = nn_ops.softmax(scores, axis=-1)
        used = weights if self._dropout_layer is None else self._dropout_layer(
            weights, training=training)
        outputs = math_ops.matmul(used, value)
        if query_mask is not None:
            outputs = math_ops.where(array_ops.expand_dims(query_mask, -1), outputs,
                                     array_ops.zeros_like(outputs))
        if return_attention_scores:
            return outputs, weights
        return outputs

    def compute_mask(self, inputs, mask=None):
        self._validate_inputs(inputs, mask)
        if mask is None or mask[0] is None:
            return None
        return as_bool_mask(mask[0], "query_mask", self.name)

    def compute_output_shape(self, input_shape):
        query, value = TensorShape(input_shape[0]).as_list(), TensorShape(input_shape[1])
        return TensorShape(query[:-1] + [value[-1]])

    def get_config(self):
        config = super().get_config()
        config.update({"use_scale": self.use_scale, "score_mode": self.score_mode,
                       "dropout": self.dropout, "seed": self.seed})
        return config


class AdditiveAttention(Attention):
    """Additive (Bahdanau-style) attention: scores are ``sum(scale * tanh(query + key))``
    over the features, with a learned per-feature ``scale`` when ``use_scale`` (the
    default).  Call as ``Attention``: ``[query, value(, key)]``, masks, causal mask,
    ``return_attention_scores``."""

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        kwargs.pop("score_mode", None)
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        self._validate_inputs(input_shape)
        dim = TensorShape(input_shape[0]).as_list()[-1]
        if self.use_scale:
            if dim is None:
                raise ValueError(f"AdditiveAttention {self.name}: the last dimension of the "
                                 f"query must be known; got shape {input_shape[0]}.")
            self.scale = self.add_weight("scale", shape=(dim,), initializer="glorot_uniform",
                                         trainable=True)
        self.built = True

    def _calculate_scores(self, query, key):
        pairs = math_ops.tanh(math_ops.add(array_ops.expand_dims(query, -2),
                                           array_ops.expand_dims(key, -3)))
        if self.scale is not None:
            pairs = math_ops.multiply(pairs, self.scale)
        return math_ops.reduce_sum(pairs, axis=-1)

    def get_config(self):
        config = super().get_config()
        del config["score_mode"]
        return config
