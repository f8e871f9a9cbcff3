"""``tf.keras.optimizers``: SGD, Adam, RMSprop, Adagrad, learning-rate schedules."""
import inspect

from hybridtf.keras.optimizers import schedules  # noqa: F401
from hybridtf.keras.optimizers.adagrad import Adagrad
from hybridtf.keras.optimizers.adam import Adam
from hybridtf.keras.optimizers.optimizer import Optimizer
from hybridtf.keras.optimizers.rmsprop import RMSprop
from hybridtf.keras.optimizers.sgd import SGD

_BY_NAME = {cls.__name__.lower(): cls for cls in (SGD, Adam, RMSprop, Adagrad)}


def serialize(optimizer):
    """``{"class_name": ..., "config": ...}`` describing an optimizer."""
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"Cannot serialize {optimizer!r}: not a Keras optimizer.")
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    """The optimizer ``serialize`` described (a new one, without its variables' state)."""
    lookup = dict(_BY_NAME)
    lookup.update({k.lower(): v for k, v in (custom_objects or {}).items()})
    name = config.get("class_name") if isinstance(config, dict) else None
    cls = lookup.get(str(name).lower()) if name is not None else None
    if cls is None:
        raise ValueError(f"Could not interpret optimizer identifier: {config!r}; known "
                         f"optimizers: {', '.join(c.__name__ for c in _BY_NAME.values())}.")
    return cls.from_config(dict(config.get("config", {})), custom_objects)


def get(identifier):
    """The optimizer named by ``identifier`` (``tf.keras.optimizers.get``): a name such as
    ``"adam"`` or ``"SGD"`` (a new optimizer with default settings), a config dict, or an
    ``Optimizer`` (returned as is)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    if inspect.isclass(identifier) and issubclass(identifier, Optimizer):
        return identifier()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}; pass a name "
                     "('adam', 'sgd', 'rmsprop', 'adagrad'), a config dict or an Optimizer.")
