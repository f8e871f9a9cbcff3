"""``tf.print``: prints tensors (summarised like TF) and Python values, to stderr by default."""
import sys

import numpy as np

from hybridtf.eager.execute import as_tensor, execute
from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor
from hybridtf.graph import func_graph
from hybridtf.registry import checks
from hybridtf.registry.python_ops import PRINT, TensorSlot


def _format_float(value):
    """TF's float printing: the short form (6 significant digits for float32, 15 for float64)
    when it reads back as the same number, else enough digits to round-trip (9 or 17)."""
    if isinstance(value, np.float32) or isinstance(value, np.float16):
        short, full, kind = 6, 9, np.float32
    else:
        short, full, kind = 15, 17, np.float64
    text = "%.*g" % (short, value)
    if kind(text) != kind(value) and not np.isnan(value):
        text = "%.*g" % (full, value)
    return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(text, text)


def _format_scalar(value):
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode(errors="replace")
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (np.floating, float)):
        return _format_float(value)
    return str(value)


def format_tensor(array, summarize=3):
    """TF's print format: ``[1 2 ... 9 10]`` with at most ``summarize`` items at each end."""
    array = np.asarray(array)
    if array.ndim == 0:
        return _format_scalar(array[()])
    return _format_nested(array, summarize, 1)


def _format_nested(array, summarize, depth):
    n = array.shape[0]
    if summarize is not None and summarize >= 0 and n > 2 * summarize:
        picks = list(range(summarize)) + [None] + list(range(n - summarize, n))
    else:
        picks = list(range(n))
    if array.ndim == 1:
        parts = ["..." if i is None else _format_scalar(array[i]) for i in picks]
        return "[" + " ".join(parts) + "]"
    separator = "\n" * (array.ndim - 1) + " " * depth
    parts = ["..." if i is None else _format_nested(array[i], summarize, depth + 1) for i in picks]
    return "[" + separator.join(parts) + "]"


def _format_value(value, summarize):
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        return format_tensor(np.asarray(value), summarize)
    if nest.is_nested(value):
        if isinstance(value, dict):
            inner = ", ".join(f"{k!r}: {_format_value(v, summarize)}" for k, v in value.items())
            return "{" + inner + "}"
        inner = ", ".join(_format_value(v, summarize) for v in value)
        return ("(" + inner + ")") if isinstance(value, tuple) else ("[" + inner + "]")
    return str(value)


def write(inputs, output_stream, summarize, sep, end):
    """Formats ``inputs`` as ``tf.print`` does and writes them to the stream."""
    text = sep.join(_format_value(v, summarize) for v in inputs) + end
    stream = sys.stderr if output_stream is None else output_stream
    if isinstance(stream, str):
        if not stream.startswith("file://"):
            raise ValueError(f"print: output_stream must be a stream or 'file://<path>', got "
                             f"{stream!r}.")
        with open(stream[len("file://"):], "a") as f:
            f.write(text)
        return
    stream.write(text)
    if hasattr(stream, "flush"):
        stream.flush()


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """Prints the inputs (tensors summarised to ``summarize`` items per end of each dimension).

    ``output_stream``: sys.stderr (default), sys.stdout, or "file://<path>" to append to a file.
    Inside a traced function it prints every time the function runs.
    """
    for what, value in (("sep", sep), ("end", end)):
        if not isinstance(value, str):
            raise TypeError(f"print: {what} must be a string, got {value!r}.")
    if summarize is not None:
        summarize = checks.integer("print", summarize, "summarize")
    if func_graph.current() is None:
        write(inputs, output_stream, summarize, sep, end)
        return None
    tensors = []

    def slot(leaf):
        if isinstance(leaf, Tensor) or getattr(leaf, "_is_variable", False):
            tensors.append(as_tensor(leaf))
            return TensorSlot(len(tensors) - 1)
        return leaf

    template = nest.map_structure(slot, list(inputs))
    execute(PRINT, tensors, {"template": template, "output_stream": output_stream,
                             "summarize": summarize, "sep": sep, "end": end})
    return None
