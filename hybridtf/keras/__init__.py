"""``tf.keras``: layers, models, losses, metrics, optimizers, callbacks, datasets."""
from hybridtf.keras import (  # noqa: F401
    activations, backend, callbacks, datasets, initializers, layers, losses, metrics, models,
    optimizers)
