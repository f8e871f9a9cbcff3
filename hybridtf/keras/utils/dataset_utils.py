"""What ``image_dataset_from_directory`` and ``text_dataset_from_directory`` share: finding
the files of a directory tree and their labels, the validation split, and the ``tf.data``
pipeline (file paths and labels -> shuffled, loaded, batched, prefetched).

The files are found as Keras finds them: with ``labels="inferred"`` each subdirectory of
``directory`` is a class (classes in alphanumeric order, or as ``class_names`` lists them) and
every file under it, at any depth, with an allowed extension is a sample; otherwise the whole
tree is walked.  Files come in alphanumeric order of their directories and names, then
(``shuffle=True``) in the order NumPy's ``RandomState(seed).shuffle`` gives -- the same order,
for the same seed, as Keras's ``file_paths``.
"""
import os

import numpy as np

from hybridtf.api import array_ops, math_ops
from hybridtf.data import dataset_ops
from hybridtf.framework import dtypes

LABEL_MODES = ("int", "categorical", "binary", None)


def check_labels_arguments(labels, label_mode, class_names, what):
    """Checks ``labels`` / ``label_mode`` / ``class_names``; returns ``(labels, label_mode)``
    with both None when either is (a dataset of samples only)."""
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(
                f"`labels` argument should be a list/tuple of integer labels, of the same size "
                f"as the number of {what} files in the target directory. If you wish to infer "
                'the labels from the subdirectory names in the target directory, pass '
                '`labels="inferred"`. If you wish to get a dataset that only contains the '
                f"samples (no labels), pass `labels=None`. Received: labels={labels!r}")
        if class_names:
            raise ValueError(f'You can only pass `class_names` if `labels="inferred"`. '
                             f"Received: labels={labels!r}, and class_names={class_names!r}")
    if label_mode not in LABEL_MODES:
        raise ValueError('`label_mode` argument must be one of "int", "categorical", "binary", '
                         f"or None. Received: label_mode={label_mode!r}")
    if labels is None or label_mode is None:
        return None, None
    return labels, label_mode


def check_validation_split(validation_split, subset, shuffle, seed):
    """Rejects inconsistent ``validation_split`` / ``subset`` / ``seed`` arguments."""
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'`subset` must be either "training", "validation" or "both", '
                         f"received: {subset!r}")
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide "
                         "a `seed` argument, to make sure that there is no overlap between the "
                         "training and validation subset.")


def _files_under(directory, formats, follow_links):
    """Paths (relative to ``directory``) of the files with an extension in ``formats``, in
    alphanumeric order of their directories, then names."""
    found = []
    walk = sorted(os.walk(directory, followlinks=follow_links), key=lambda entry: entry[0])
    for root, _, files in walk:
        for name in sorted(files):
            if name.lower().endswith(formats):
                found.append(os.path.relpath(os.path.join(root, name), directory))
    return found


def index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None,
                    follow_links=False, verbose=True):
    """``(file_paths, labels, class_names)`` of the files under ``directory`` (see the module
    docstring); ``labels`` is an int32 array, or None for ``labels=None``."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Could not find directory {directory}")
    if labels == "inferred":
        subdirs = [name for name in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, name)) and not name.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(subdirs):
                raise ValueError("The `class_names` passed did not match the names of the "
                                 f"subdirectories of the target directory. Expected: "
                                 f"{subdirs} (or a subset of it), but received: "
                                 f"class_names={list(class_names)}")
            subdirs = list(class_names)           # in the order given
    else:
        subdirs = [""]
        if class_names is not None:
            raise ValueError("When `labels=None` (no labels), argument `class_names` cannot be "
                             "specified." if labels is None else
                             "When argument `labels` is specified, argument `class_names` "
                             "cannot be specified (the `class_names` will be the sorted list "
                             "of labels).")
    filenames, inferred = [], []
    for index, subdir in enumerate(subdirs):
        files = _files_under(os.path.join(directory, subdir), formats, follow_links)
        filenames += [os.path.join(subdir, name) for name in files]
        inferred += [index] * len(files)
    if labels == "inferred":
        labels = np.asarray(inferred, np.int32)
        class_names = subdirs
    elif labels is None:
        class_names = None
    else:
        if len(labels) != len(filenames):
            raise ValueError(f"Expected the lengths of `labels` to match the number of files in "
                             f"the target directory. len(labels) is {len(labels)} while we "
                             f"found {len(filenames)} files in directory {directory}.")
        class_names = [str(label) for label in sorted(set(labels))]
        labels = np.asarray(labels, np.int32)
    if verbose:
        print(f"Found {len(filenames)} files." if labels is None else
              f"Found {len(filenames)} files belonging to {len(class_names)} classes.")
    file_paths = [os.path.join(directory, name) for name in filenames]
    if shuffle:
        np.random.RandomState(seed).shuffle(file_paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return file_paths, labels, class_names


def split(samples, labels, validation_split, subset, verbose=True):
    """The ``"training"`` (all but the last ``validation_split`` of the samples) or
    ``"validation"`` (the last ones) part of ``samples`` and ``labels``."""
    if not validation_split:
        return samples, labels
    count = int(validation_split * len(samples))
    if subset == "training":
        if verbose:
            print(f"Using {len(samples) - count} files for training.")
        cut = slice(None, len(samples) - count)
    elif subset == "validation":
        if verbose:
            print(f"Using {count} files for validation.")
        cut = slice(len(samples) - count, None)
    else:
        raise ValueError(f'`subset` must be either "training" or "validation", received: '
                         f"{subset!r}")
    return samples[cut], None if labels is None else labels[cut]


def labels_dataset(labels, label_mode, num_classes):
    """A dataset of the labels encoded as ``label_mode`` says: ``"int"`` int32 scalars,
    ``"categorical"`` float32 one-hot vectors, ``"binary"`` float32 vectors of one 0/1."""
    dataset = dataset_ops.Dataset.from_tensor_slices(labels)
    if label_mode == "binary":
        return dataset.map(lambda x: array_ops.expand_dims(math_ops.cast(x, dtypes.float32), -1))
    if label_mode == "categorical":
        return dataset.map(lambda x: array_ops.one_hot(x, num_classes))
    return dataset


def directory_dataset(directory, labels, label_mode, class_names, formats, load, what,
                      batch_size, shuffle, seed, validation_split, subset, follow_links,
                      verbose):
    """The dataset (or ``[training, validation]`` for ``subset="both"``) of the files under
    ``directory`` loaded by ``load(path)``, with their labels; each has ``class_names`` and
    ``file_paths`` attributes.  ``what`` names the files in errors (``"images"``)."""
    check_validation_split(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = int(np.random.randint(1e6))
    file_paths, labels, class_names = index_directory(
        directory, labels, formats, class_names=class_names, shuffle=shuffle, seed=seed,
        follow_links=follow_links, verbose=verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError('When passing `label_mode="binary"`, there must be exactly 2 '
                         f"class_names. Received: class_names={class_names}")
    num_classes = len(class_names) if class_names else 0
    shuffle_buffer = batch_size * 8 if batch_size is not None else 1024
    parts = [("training", shuffle), ("validation", False)] if subset == "both" else \
        [(subset, shuffle)]
    datasets = []
    for part, shuffle_part in parts:
        paths, part_labels = split(file_paths, labels, validation_split, part, verbose)
        if not paths:
            kind = f"{part} " if subset == "both" else ""
            raise ValueError(f"No {kind}{what} found in directory {directory}. Allowed "
                             f"formats: {formats}")
        dataset = dataset_ops.Dataset.from_tensor_slices(paths)
        if label_mode is not None:
            dataset = dataset_ops.Dataset.zip(
                (dataset, labels_dataset(part_labels, label_mode, num_classes)))
        if shuffle_part:
            dataset = dataset.shuffle(shuffle_buffer, seed=seed)
        if label_mode is not None:
            dataset = dataset.map(lambda path, label: (load(path), label))
        else:
            dataset = dataset.map(load)
        if batch_size is not None:
            dataset = dataset.batch(batch_size)
        dataset = dataset.prefetch(dataset_ops.AUTOTUNE)
        dataset.class_names = class_names
        dataset.file_paths = list(paths)
        datasets.append(dataset)
    return datasets if subset == "both" else datasets[0]


def check_format(format):  # noqa: A002 - Keras's argument name
    if format != "tf":
        raise ValueError(f'`format` must be "tf" (hybridtf makes tf.data datasets). Received: '
                         f"format={format!r}")
