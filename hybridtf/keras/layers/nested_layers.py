"""Serializing a layer held by another layer (an RNN's cell, a wrapper's layer).

The layer classes are known to ``keras.layers`` only, a package above the layer modules, so
``keras.layers`` binds its ``serialize`` / ``deserialize`` here as it loads.
"""
_BOUND = {}


def bind(serialize, deserialize):
    """Called by ``keras.layers`` once its layer classes are known."""
    _BOUND["serialize"] = serialize
    _BOUND["deserialize"] = deserialize


def _bound(name):
    function = _BOUND.get(name)
    if function is None:
        raise RuntimeError("keras.layers has not finished loading; import hybridtf.keras.layers "
                           "before (de)serializing layers.")
    return function


def serialize(layer):
    """``{"class_name": ..., "config": ...}`` of ``layer`` (see ``keras.layers.serialize``)."""
    return _bound("serialize")(layer)


def deserialize(config, custom_objects=None):
    """The layer ``config`` describes (see ``keras.layers.deserialize``)."""
    return _bound("deserialize")(config, custom_objects=custom_objects)
