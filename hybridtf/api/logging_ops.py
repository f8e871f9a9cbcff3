"""``tf.print``: prints tensors (summarised like TF) and Python values, to stderr by default."""
import sys

import numpy as np

from hybridtf.framework import nest
from hybridtf.framework.tensor import Tensor


def _format_scalar(value):
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode(errors="replace")
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (np.floating, float)):
        if np.isfinite(value) and float(value).is_integer():
            return str(int(value))
        return np.format_float_positional(value, trim="-") if 1e-4 <= abs(value) < 1e16 \
            else np.format_float_scientific(value, trim="-")
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


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """Prints the inputs (tensors summarised to ``summarize`` items per end of each dimension).

    ``output_stream``: sys.stderr (default), sys.stdout, or "file://<path>" to append to a file.
    """
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
