"""AutoGraph: Python control flow on tensors becomes ``tf.cond`` / ``tf.while_loop``.

``tf.function`` (with ``autograph=True``, the default) traces the converted function.
``to_code(f)`` shows the conversion, ``to_graph(f)`` returns the converted function.

The functions it calls are converted too, while it is being traced (``converted_call``),
except those of hybridtf itself, its dependencies and the standard library; a Keras layer's
``call`` is converted when the layer is called inside such a trace (``convert_in_context``).
"""
from hybridtf.autograph import operators  # noqa: F401
from hybridtf.autograph.converter import ConversionError  # noqa: F401
from hybridtf.autograph.operators import convert, convert_in_context  # noqa: F401
from hybridtf.autograph.converter import to_code as _to_code


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """The converted Python function (calling it with symbolic tensors builds control flow
    ops; with eager tensors or Python values it runs as ordinary Python)."""
    return convert(getattr(entity, "python_function", entity))


def to_code(entity, recursive=True, experimental_optional_features=None):
    """The converted source of ``entity`` (a function or a ``tf.function``) as a string."""
    return _to_code(entity)


__all__ = ["to_code", "to_graph", "convert", "convert_in_context", "ConversionError",
           "operators"]
