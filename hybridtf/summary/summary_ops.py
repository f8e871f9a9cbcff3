"""The summary ops: ``tf.summary.scalar``, ``histogram``, ``image``, ``text`` and the generic
``write``.

Each writes to the current default writer at ``step`` (by default the step set with
``tf.summary.experimental.set_step`` or ``as_default(step)``) and returns a scalar bool tensor:
True when the summary is written, False when there is no default writer or recording is off
(``tf.summary.record_if``).  Each is one stateful ``write_summary`` op: eagerly it writes at
once; inside a decorated function it writes every time the function runs, reading a
``tf.Variable`` step (and a tensor recording condition) as they are then.  The histogram
buckets and PNG images are computed when the summary is written, and only then.
"""
import contextlib
import functools
import re

from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework import dtypes
from hybridtf.framework.name_scope import current_prefix, name_scope
from hybridtf.registry import checks
from hybridtf.registry.summary import WRITE_SUMMARY
from hybridtf.summary import state
from hybridtf.summary.values import DEFAULT_BUCKET_COUNT
from hybridtf.summary.writer import FileWriter

_INVALID_SCOPE_CHARACTERS = re.compile(r"[^-_/.A-Za-z0-9]")
_NO_STEP = ("No step set. Please specify one either through the `step` argument or through "
            "tf.summary.experimental.set_step()")


class _Record:
    """What a ``write_summary`` op does when it runs: encode the data (e.g. bucket a
    histogram) and append the summary to the writer's event file."""

    __slots__ = ("writer", "tag", "encode", "metadata")

    def __init__(self, writer, tag, encode, metadata):
        self.writer = writer
        self.tag = tag
        self.encode = encode
        self.metadata = metadata

    def __call__(self, step, data, condition=True):
        if not condition:
            return False
        self.writer.write_summary(self.tag, self.encode(data), self.metadata, int(step))
        return True

    def __repr__(self):
        return f"<summary {self.tag!r} to {self.writer!r}>"


@contextlib.contextmanager
def summary_scope(name, default_name="summary", values=None):
    """For defining a summary op: yields ``(tag, scope)``, the tag being ``name`` (or
    ``default_name``) prefixed by the enclosing ``tf.name_scope`` s.  ``values`` (the op's
    inputs, for TF 1 graphs) is accepted and unused."""
    del values
    name = name or default_name
    if not isinstance(name, str):
        raise TypeError(f"summary_scope: name must be a string, got {type(name).__name__}.")
    tag = current_prefix() + name
    # Tags may hold any character; scope names only some (the rest are dropped).
    with name_scope(_INVALID_SCOPE_CHARACTERS.sub("", name) or default_name) as scope:
        yield tag, scope


def _step_tensor(who, step):
    """``step`` as a scalar integer tensor (a variable step is read: at run time, in a
    decorated function)."""
    tensor = as_tensor(step, dtype=dtypes.int64)
    if not tensor.dtype.is_integer:
        raise TypeError(f"{who}: step must be an integer (an int64-castable value), got "
                        f"{step!r} of dtype {tensor.dtype.name}.")
    if tensor.shape.rank != 0:
        raise ValueError(f"{who}: Argument `step` must be a scalar. Received step with shape "
                         f"{tensor.shape}.")
    return tensor


def _write(who, tag, data, step, encode, metadata, check=None):
    """The path every summary op takes; ``data`` may be a callable giving the tensor, called
    only when the summary is recorded."""
    if step is not None:
        step = _step_tensor(who, step)
    writer = state.STATE.writer
    if writer is None:
        return as_tensor(False)
    condition = state.recording_condition()
    if condition is False:
        return as_tensor(False)
    if step is None:
        if state.get_step() is None:
            raise ValueError(_NO_STEP)
        step = _step_tensor(who, state.get_step())
    data = as_tensor(data() if callable(data) else data)
    if check is not None:
        check(who, data)
    inputs = [step, data] + ([] if condition is True else [condition])
    if not isinstance(writer, FileWriter):
        raise TypeError(f"{who}: the default summary writer {writer!r} cannot write summaries; "
                        "use one made by tf.summary.create_file_writer.")
    records = writer.records
    return execute1(WRITE_SUMMARY, inputs, {
        "record": _Record(writer, tag, functools.partial(encode, records),
                          metadata(records)),
        "tag": tag})


def _tag(name, default_name):
    with summary_scope(name, default_name) as (tag, _):
        return tag


def write(tag, tensor, step=None, metadata=None, name=None):
    """Writes ``tensor`` (or the tensor a callable returns, called only when recording) under
    ``tag`` with ``metadata`` (a ``SummaryMetadata`` protocol buffer or its bytes) to the
    default writer; the building block of the other summary ops."""
    del name
    if not isinstance(tag, str):
        raise TypeError(f"write: tag must be a string, got {type(tag).__name__}.")
    return _write("write", tag, tensor, step,
                  lambda records, array: records.tensor_proto(array),
                  lambda records: records.parse_metadata(metadata, "write"))


def _real_scalar(who, data):
    if not (data.dtype.is_floating or data.dtype.is_integer or data.dtype.is_bool):
        raise TypeError(f"{who}: data must be a real number, got dtype {data.dtype.name}.")
    if data.shape.rank != 0:
        raise ValueError(f"{who}: Expected scalar shape, saw shape: {data.shape}.")


def scalar(name, data, step=None, description=None):
    """Writes a scalar summary (a point of a curve in TensorBoard's Scalars dashboard).

    ``data``: a real number (or scalar tensor), stored as float32.  ``step``: an integer, by
    default ``tf.summary.experimental.get_step()``.  ``description``: Markdown shown with the
    curve.  Returns True if written, False when there is no default writer or recording is off;
    raises ValueError when a summary would be written but no step is set.
    """
    return _write("scalar", _tag(name, "scalar_summary"), data, step,
                  lambda records, array: records.scalar_tensor(array),
                  lambda records: records.plugin_metadata("scalar", description), _real_scalar)


def _numeric(who, data):
    if not (data.dtype.is_floating or data.dtype.is_integer or data.dtype.is_bool):
        raise TypeError(f"{who}: data must be numeric (castable to float64), got dtype "
                        f"{data.dtype.name}.")


def histogram(name, data, step=None, buckets=None, description=None):
    """Writes a histogram of all the values of ``data`` (any shape), for TensorBoard's
    Histograms and Distributions dashboards.

    ``buckets`` (default 30) equal-width buckets span [min, max]; when all values are equal
    the buckets all have that value as edges and the last holds the count, and empty data
    gives all-zero buckets.  Returns True if written (see ``scalar``).
    """
    count = DEFAULT_BUCKET_COUNT if buckets is None else checks.integer(
        "histogram", buckets, "buckets")
    return _write("histogram", _tag(name, "histogram_summary"), data, step,
                  lambda records, array: records.histogram_tensor(array, count),
                  lambda records: records.plugin_metadata("histogram", description), _numeric)


def _images(who, data):
    if not (data.dtype.is_floating or data.dtype.is_integer):
        raise TypeError(f"{who}: image dtype must be floating point or integer, got "
                        f"{data.dtype.name}.")
    shape = data.shape
    if shape.rank is not None and shape.rank != 4:
        raise ValueError(f"{who}: data must have rank 4 ([k, h, w, c]), got shape {shape}.")
    channels = None if shape.rank is None else shape.as_list()[3]
    if channels is not None and not 1 <= channels <= 4:
        raise ValueError(f"{who}: images must have 1, 2, 3 or 4 channels (grey, grey + alpha, "
                         f"RGB, RGBA), got {channels} (shape {shape}).")


def image(name, data, step=None, max_outputs=3, description=None):
    """Writes images, for TensorBoard's Images dashboard.

    ``data``: ``[k, h, w, c]`` pixels, c = 1, 2, 3 or 4 (grey, grey + alpha, RGB, RGBA):
    floats in [0, 1] or uint8 in [0, 255] (other values are clipped; other integer types are
    scaled from their [0, MAX] range), stored as PNG.  The first ``max_outputs`` images are
    written.  Returns True if written (see ``scalar``).
    """
    count = checks.integer("image", max_outputs, "max_outputs")
    if count < 0:
        raise ValueError(f"image: max_outputs must be >= 0, got {count}.")
    return _write("image", _tag(name, "image_summary"), data, step,
                  lambda records, array: records.image_tensor(array, count),
                  lambda records: records.plugin_metadata("image", description), _images)


def _strings(who, data):
    if data.dtype.name != "string":
        raise TypeError(f"{who}: data must be of type tf.string; got tf.{data.dtype.name}.")


def text(name, data, step=None, description=None):
    """Writes text (a string, or a tensor of strings: rank 1 and 2 show as tables), rendered as
    Markdown in TensorBoard's Text dashboard.  Returns True if written (see ``scalar``)."""
    return _write("text", _tag(name, "text_summary"), data, step,
                  lambda records, array: records.tensor_proto(array),
                  lambda records: records.plugin_metadata("text", description), _strings)
