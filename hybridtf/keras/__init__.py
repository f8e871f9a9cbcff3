"""``tf.keras``: layers, models, losses, metrics, optimizers, callbacks, datasets."""
from hybridtf.keras import (  # noqa: F401
    activations, backend, callbacks, datasets, initializers, layers, losses, metrics, models,
    optimizers, saving)
from hybridtf.keras import constraints, export, regularizers, utils  # noqa: F401
from hybridtf.keras import preprocessing  # noqa: F401
from hybridtf.keras.layers import Input  # noqa: F401
from hybridtf.keras.models import Model, Sequential  # noqa: F401
