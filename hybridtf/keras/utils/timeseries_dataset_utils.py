"""``keras.utils.timeseries_dataset_from_array``: sliding windows over a timeseries as a
``tf.data`` dataset."""
import numpy as np

from hybridtf.api import array_ops
from hybridtf.data import dataset_ops
from hybridtf.framework.constant_op import convert_to_tensor
from hybridtf.keras.utils import dataset_utils


def _check_positive_below(name, value, length, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer. Received: {name}={value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = "0 or greater" if allow_zero else "higher than 0"
        raise ValueError(f"`{name}` must be {bound}. Received: {name}={value}")
    if value >= length:
        raise ValueError(f"`{name}` must be lower than the length of the data. Received: "
                         f"{name}={value}, for data of length {length}")


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None, format="tf"):
    """A ``tf.data.Dataset`` of windows over ``data`` (time on axis 0).

    Window ``k`` starts at ``start_index + k * sequence_stride`` and takes
    ``sequence_length`` steps ``sampling_rate`` apart: ``data[i], data[i + r], ...,
    data[i + (sequence_length - 1) * r]``.  Windows use data from ``start_index``
    (default 0) up to ``end_index`` (exclusive; default the end).  ``targets[i]`` (None: no
    targets) is the target of the window starting at ``data[i]``; there are no more windows
    than targets.

    Args:
      data: a NumPy array or eager tensor of timesteps.
      targets: targets aligned with ``data`` (or None).
      sequence_length: steps per window.
      sequence_stride: steps between the starts of consecutive windows.
      sampling_rate: steps between the samples of a window.
      batch_size: windows per batch (None: one window per element).
      shuffle, seed: shuffle the windows: their order is NumPy's ``RandomState(seed)``
        shuffle, as in Keras, and each epoch reshuffles within a buffer of
        ``8 * batch_size`` windows.
      start_index, end_index: the part of ``data`` the windows are taken from.
      format: ``"tf"`` (the only one: a ``tf.data`` dataset).

    Returns:
      A dataset of ``(windows, targets)`` batches (or windows alone): windows of shape
      ``(batch, sequence_length) + data.shape[1:]``.
    """
    dataset_utils.check_format(format)
    data = data.numpy() if hasattr(data, "numpy") else np.asarray(data)
    length = len(data)
    if start_index:
        _check_positive_below("start_index", start_index, length, allow_zero=True)
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: "
                             f"start_index={start_index}, and end_index={end_index}")
        _check_positive_below("end_index", end_index, length)
    _check_positive_below("sampling_rate", sampling_rate, length)
    _check_positive_below("sequence_stride", sequence_stride, length)
    if isinstance(sequence_length, bool) or not isinstance(sequence_length, (int, np.integer)) \
            or sequence_length < 1:
        raise ValueError(f"`sequence_length` must be a positive integer. Received: "
                         f"sequence_length={sequence_length!r}")
    start_index = start_index or 0
    end_index = end_index or length
    count = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = targets.numpy() if hasattr(targets, "numpy") else np.asarray(targets)
        count = min(count, len(targets))
    index_dtype = np.int32 if count < 2 ** 31 - 1 else np.int64
    starts = np.arange(0, max(count, 0), sequence_stride, dtype=index_dtype)
    if shuffle:
        if seed is None:
            seed = int(np.random.randint(1e6))
        np.random.RandomState(seed).shuffle(starts)
    steps = convert_to_tensor(data[start_index:end_index])
    offsets = np.arange(0, sequence_length * sampling_rate, sampling_rate, dtype=index_dtype)

    def window(start):
        return array_ops.gather(steps, start + offsets)

    dataset = dataset_ops.Dataset.from_tensor_slices(starts)
    if targets is not None:
        aligned = convert_to_tensor(targets[start_index:end_index])
        dataset = dataset.map(lambda start: (window(start), array_ops.gather(aligned, start)))
    else:
        dataset = dataset.map(window)
    dataset = dataset.prefetch(dataset_ops.AUTOTUNE)
    if shuffle:
        dataset = dataset.shuffle(batch_size * 8 if batch_size is not None else 1024,
                                  seed=seed)
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    return dataset
