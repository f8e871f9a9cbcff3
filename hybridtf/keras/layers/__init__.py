"""``tf.keras.layers``: the Layer base class and the built-in layers."""
from hybridtf.keras import object_registration
from hybridtf.keras.layers.base_layer import Layer  # noqa: F401
from hybridtf.keras.layers.convolutional import (  # noqa: F401
    Conv1D, Conv2D, Conv2DTranspose, Convolution1D, Convolution2D, Convolution2DTranspose)
from hybridtf.keras.layers.depthwise_separable import (  # noqa: F401
    DepthwiseConv2D, SeparableConv2D, SeparableConvolution2D)
from hybridtf.keras.layers.pooling_1d import (  # noqa: F401
    AveragePooling1D, AvgPool1D, GlobalAveragePooling1D, GlobalAvgPool1D, GlobalMaxPool1D,
    GlobalMaxPooling1D, MaxPool1D, MaxPooling1D)
from hybridtf.keras.layers.spatial_reshaping import (  # noqa: F401
    Cropping1D, Cropping2D, UpSampling1D, UpSampling2D, ZeroPadding1D, ZeroPadding2D)
from hybridtf.keras.layers.core import Activation, Dense, Dropout, Lambda  # noqa: F401
from hybridtf.keras.layers.embedding import Embedding  # noqa: F401
from hybridtf.keras.layers.input_layer import Input, InputLayer  # noqa: F401
from hybridtf.keras.layers.input_spec import InputSpec  # noqa: F401
from hybridtf.keras.layers.merging import (  # noqa: F401
    Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract, add, average, concatenate,
    maximum, minimum, multiply, subtract)
from hybridtf.keras.layers.normalization import BatchNormalization  # noqa: F401
from hybridtf.keras.layers.pooling import (  # noqa: F401
    AveragePooling2D, AvgPool2D, GlobalAveragePooling2D, GlobalAvgPool2D, GlobalMaxPool2D,
    GlobalMaxPooling2D, MaxPool2D, MaxPooling2D)
from hybridtf.keras.layers.reshaping import Flatten, Reshape  # noqa: F401
from hybridtf.keras.layers.activation_layers import (  # noqa: F401
    ELU, LeakyReLU, PReLU, ReLU, Softmax)
from hybridtf.keras.layers.axis_layers import Permute, RepeatVector  # noqa: F401
from hybridtf.keras.layers.layer_normalization import LayerNormalization  # noqa: F401
from hybridtf.keras.layers.noise import (  # noqa: F401
    GaussianNoise, SpatialDropout1D, SpatialDropout2D)
from hybridtf.keras.layers.rescaling import Rescaling  # noqa: F401
from hybridtf.keras.layers.feature_normalization import Normalization  # noqa: F401
from hybridtf.keras.layers.category_encoding import CategoryEncoding  # noqa: F401
from hybridtf.keras.layers.einsum_dense import EinsumDense  # noqa: F401
from hybridtf.keras.layers.attention import AdditiveAttention, Attention  # noqa: F401
from hybridtf.keras.layers.multi_head_attention import MultiHeadAttention  # noqa: F401
from hybridtf.keras.layers.image_preprocessing import CenterCrop, Resizing  # noqa: F401
from hybridtf.keras.layers.image_augmentation import (  # noqa: F401
    RandomContrast, RandomCrop, RandomFlip, RandomRotation, RandomTranslation, RandomZoom)
from hybridtf.keras.layers import nested_layers
from hybridtf.keras.layers.masking import Masking  # noqa: F401
from hybridtf.keras.layers import operator_layer
from hybridtf.keras.layers.operator_layer import OperatorLayer
from hybridtf.keras.layers.recurrent import GRU, LSTM, RNN, SimpleRNN  # noqa: F401
from hybridtf.keras.layers.recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell  # noqa: F401
from hybridtf.keras.layers.wrappers import Bidirectional, TimeDistributed  # noqa: F401

_BUILT_IN = {cls.__name__: cls for cls in (
    Masking, RNN, SimpleRNN, LSTM, GRU, SimpleRNNCell, LSTMCell, GRUCell, Bidirectional,
    TimeDistributed,
    Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, AveragePooling1D,
    GlobalAveragePooling1D, GlobalMaxPooling1D, MaxPooling1D, Cropping1D, Cropping2D,
    UpSampling1D, UpSampling2D, ZeroPadding1D, ZeroPadding2D,
    Layer, Conv2D, Activation, Dense, Dropout, Lambda, Embedding, InputLayer, Add, Average,
    Concatenate, Maximum, Minimum, Multiply, Subtract, BatchNormalization, AveragePooling2D,
    GlobalAveragePooling2D, GlobalMaxPooling2D, MaxPooling2D, Flatten, Reshape,
    ELU, LeakyReLU, PReLU, ReLU, Softmax, Permute, RepeatVector, LayerNormalization,
    GaussianNoise, SpatialDropout1D, SpatialDropout2D, Rescaling, Normalization,
    CategoryEncoding, EinsumDense, Attention, AdditiveAttention, MultiHeadAttention,
    Resizing, CenterCrop, RandomFlip, RandomRotation, RandomZoom, RandomTranslation,
    RandomContrast, RandomCrop, OperatorLayer)}


def serialize(layer):
    """``{"class_name": ..., "config": layer.get_config()}``, and the ``"registered_name"``
    of a class registered with ``keras.saving.register_keras_serializable``."""
    config = {"class_name": type(layer).__name__, "config": layer.get_config()}
    registered = object_registration.get_registered_name(type(layer))
    if registered != config["class_name"]:
        config["registered_name"] = registered
    return config


def deserialize(config, custom_objects=None):
    """The layer described by a ``serialize`` dict (custom classes via ``custom_objects`` or
    ``keras.saving.register_keras_serializable``)."""
    name = config["class_name"]
    if name in ("Sequential", "Model", "Functional"):
        from hybridtf.keras import models
        cls = models.Model if name == "Functional" else getattr(models, name)
    else:
        cls = (object_registration.get_registered_object(
            config.get("registered_name") or name, custom_objects)
            or object_registration.get_registered_object(name, custom_objects)
            or _BUILT_IN.get(name))
    if cls is None:
        raise ValueError(f"Unknown layer: {name!r}. Pass custom layer classes in "
                         f"custom_objects={{'{name}': {name}}}, or register them with "
                         "@keras.saving.register_keras_serializable().")
    with object_registration.CustomObjectScope(custom_objects):    # for nested objects
        return cls.from_config(config["config"])


nested_layers.bind(serialize, deserialize)
operator_layer.attach_operators()
