"""TensorBoard event records, built with the ``tensorboard`` package (its event-file writer, its
protocol buffers and its plugins' metadata); images are encoded as PNG by ``ops.png``, the
encoder of ``tf.io.encode_png``.

This module imports ``tensorboard`` at its top; the writers load it when the first file writer
is created, so ``import hybridtf`` works without it.  The records are the ones TF 2 writes:
each summary is an ``Event`` at a step holding one tensor value with its plugin's metadata --
scalars as float32 scalars, histograms as ``[k, 3]`` float64 buckets, images as a string
vector ``[width, height, png, ...]``, text as string tensors.
"""
import time

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.graph import metadata as graph_metadata
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: F401

from ops import png

from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.summary import values

_DATA_TYPES = {
    np.dtype(np.float16): types_pb2.DT_HALF, np.dtype(np.float32): types_pb2.DT_FLOAT,
    np.dtype(np.float64): types_pb2.DT_DOUBLE, np.dtype(np.int8): types_pb2.DT_INT8,
    np.dtype(np.int16): types_pb2.DT_INT16, np.dtype(np.int32): types_pb2.DT_INT32,
    np.dtype(np.int64): types_pb2.DT_INT64, np.dtype(np.uint8): types_pb2.DT_UINT8,
    np.dtype(np.uint16): types_pb2.DT_UINT16, np.dtype(np.uint32): types_pb2.DT_UINT32,
    np.dtype(np.uint64): types_pb2.DT_UINT64, np.dtype(np.bool_): types_pb2.DT_BOOL,
    np.dtype(np.complex64): types_pb2.DT_COMPLEX64,
    np.dtype(np.complex128): types_pb2.DT_COMPLEX128,
}

# The metadata of each kind of summary: (plugin name, description) -> SummaryMetadata.
METADATA = {
    "scalar": scalar_metadata.create_summary_metadata,
    "histogram": histogram_metadata.create_summary_metadata,
    "image": image_metadata.create_summary_metadata,
    "text": text_metadata.create_summary_metadata,
}


def plugin_metadata(kind, description):
    """The ``SummaryMetadata`` TF 2 writes with a ``kind`` summary (``"scalar"``, ...)."""
    return METADATA[kind](display_name=None, description=description)


def keras_model_metadata():
    """The metadata of a Keras model's JSON description, which TensorBoard's Graphs dashboard
    draws as the model's conceptual graph (content ``b"1"``: the format's version)."""
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
        plugin_name=graph_metadata.PLUGIN_NAME_KERAS_MODEL, content=b"1"))


def parse_metadata(metadata, who):
    """``tf.summary.write``'s metadata: None, a ``SummaryMetadata`` (any protocol buffer
    message of that layout) or its serialized bytes."""
    if metadata is None:
        return summary_pb2.SummaryMetadata()
    if hasattr(metadata, "SerializeToString"):
        metadata = metadata.SerializeToString()
    if not isinstance(metadata, bytes):
        raise TypeError(f"{who}: metadata must be a SummaryMetadata protocol buffer or its "
                        f"serialized bytes, got {type(metadata).__name__}.")
    return summary_pb2.SummaryMetadata.FromString(metadata)


def tensor_proto(array):
    """A ``TensorProto`` holding ``array``: numbers as raw little-endian bytes, strings (bytes,
    or str encoded as UTF-8) one by one, as TF stores them."""
    array = np.asarray(array)
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in array.shape])
    if array.dtype.kind in "OSU":
        strings = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in array.ravel()]
        return tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, tensor_shape=shape,
                                      string_val=strings)
    dtype = _DATA_TYPES.get(array.dtype)
    if dtype is None:
        raise TypeError(f"write_summary: cannot store a tensor of dtype {array.dtype} in a "
                        "summary.")
    content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, tensor_content=content)


def scalar_tensor(array):
    """A scalar summary's value: the number as a float32 scalar."""
    return tensor_proto(np.asarray(array, np.float32).reshape(()))


def histogram_tensor(array, buckets):
    """A histogram summary's value: its ``[buckets, 3]`` float64 buckets."""
    return tensor_proto(values.histogram_buckets(array, buckets))


def image_tensor(array, max_outputs):
    """An image summary's value: ``[width, height, png_1, ..., png_n]`` as strings, for the
    first ``max_outputs`` images of ``array`` (shape ``[k, h, w, c]``)."""
    array = np.asarray(array)
    if array.ndim != 4 or not 1 <= array.shape[3] <= 4:
        raise InvalidArgumentError(
            None, "image", f"image: data must have shape [k, h, w, c] with 1, 2, 3 or 4 "
            f"channels, got shape {list(array.shape)}.")
    _, height, width, channels = array.shape
    chosen = values.image_as_uint8(array[:max_outputs])
    if len(chosen) and (height == 0 or width == 0):
        raise InvalidArgumentError(None, "image", f"image: cannot encode images of height "
                                   f"{height} and width {width} as PNG.")
    pngs = [png.write(image) for image in chosen]
    return tensor_proto(np.array([str(width).encode(), str(height).encode()] + pngs,
                                 dtype=object))


def summary_event(tag, tensor, metadata, step):
    """One ``Event`` at ``step`` holding the summary value."""
    event = event_pb2.Event(wall_time=time.time(), step=step)
    event.summary.value.add(tag=tag, tensor=tensor, metadata=metadata)
    return event


def event_file_writer(logdir, max_queue, flush_secs, filename_suffix):
    """TensorBoard's own event-file writer: a new ``events.out.tfevents.*`` file in ``logdir``
    (created if needed), written by a background thread, flushed every ``flush_secs``."""
    return EventFileWriter(logdir, max_queue_size=max_queue, flush_secs=flush_secs,
                           filename_suffix=filename_suffix)
