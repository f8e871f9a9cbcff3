"""Embedding: integer ids -> rows of a trainable [input_dim, output_dim] matrix."""
from hybridtf.api import array_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras import initializers
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.layer_utils import (get_constraint, get_regularizer,
                                               serialize_constraint, serialize_initializer,
                                               serialize_regularizer)


class Embedding(Layer):
    """Looks up ``embeddings[ids]``: inputs [batch, ...] of ids in [0, input_dim) give
    outputs [batch, ..., output_dim].  Float ids are cast to int32, as Keras does.

    ``input_length`` fixes the sequence length (the first layer of a Sequential model is then
    built for inputs of shape (None, input_length)).
    """

    # Ids must not pass through a float cast (large ids would lose precision).
    _autocast_default = False

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None, **kwargs):
        if "input_shape" not in kwargs and "batch_input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not (isinstance(input_dim, int) and isinstance(output_dim, int)) or \
                input_dim <= 0 or output_dim <= 0:
            raise ValueError(f"Embedding {self.name}: both `input_dim` and `output_dim` should "
                             f"be positive integers, received input_dim = {input_dim!r} and "
                             f"output_dim = {output_dim!r}")
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = get_regularizer(embeddings_regularizer, "Embedding")
        self.embeddings_constraint = get_constraint(embeddings_constraint, "Embedding")
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.input_length = input_length
        self.embeddings = None

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            "embeddings", shape=(self.input_dim, self.output_dim),
            initializer=self.embeddings_initializer, regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs):
        if not (inputs.dtype.is_integer or inputs.dtype.is_unsigned):
            inputs = math_ops.cast(inputs, "int32")
        return array_ops.gather(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return math_ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return TensorShape(TensorShape(input_shape).as_list() + [self.output_dim])

    def get_config(self):
        config = super().get_config()
        config.update({
            "input_dim": self.input_dim, "output_dim": self.output_dim,
            "embeddings_initializer": serialize_initializer(self.embeddings_initializer),
            "embeddings_regularizer": serialize_regularizer(self.embeddings_regularizer),
            "activity_regularizer": serialize_regularizer(self.activity_regularizer),
            "embeddings_constraint": serialize_constraint(self.embeddings_constraint),
            "mask_zero": self.mask_zero,
            "input_length": self.input_length})
        return config
