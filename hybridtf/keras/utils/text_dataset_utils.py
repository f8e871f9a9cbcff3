"""``keras.utils.text_dataset_from_directory``: a ``tf.data`` dataset of the text files in a
directory tree, labelled by subdirectory."""
from hybridtf.api import script_ops
from hybridtf.framework import dtypes
from hybridtf.io import file_ops
from hybridtf.keras.utils import dataset_utils


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None, shuffle=True,
                                seed=None, validation_split=None, subset=None,
                                follow_links=False, format="tf", verbose=True):
    """A ``tf.data.Dataset`` of the ``.txt`` files under ``directory`` (each a scalar
    ``tf.string``: the file's bytes) and their labels.

    With ``labels="inferred"``, ``directory`` holds one subdirectory per class::

        main_directory/
          class_a/  a_text_1.txt  a_text_2.txt ...
          class_b/  b_text_1.txt  b_text_2.txt ...

    ``max_length`` keeps at most that many bytes of each text.  The other arguments are
    those of ``image_dataset_from_directory``: ``labels`` (``"inferred"``, None, or a list),
    ``label_mode`` (``"int"``, ``"categorical"``, ``"binary"``, None), ``class_names``,
    ``batch_size`` (None: one text per element), ``shuffle`` and ``seed``,
    ``validation_split`` and ``subset`` (``"training"``, ``"validation"``, ``"both"``),
    ``follow_links``, ``format`` (``"tf"``) and ``verbose``.

    Returns:
      The dataset, yielding ``(texts, labels)`` (or ``texts`` alone), with attributes
      ``class_names`` and ``file_paths``; a list of two for ``subset="both"``.
    """
    labels, label_mode = dataset_utils.check_labels_arguments(labels, label_mode, class_names,
                                                              "text")
    if max_length is not None and (isinstance(max_length, bool) or
                                   not isinstance(max_length, int) or max_length < 0):
        raise ValueError(f"`max_length` must be a non-negative integer or None. Received: "
                         f"max_length={max_length!r}")
    dataset_utils.check_format(format)

    def truncate(text):
        return text.numpy()[:max_length]

    def load(path):
        text = file_ops.read_file(path)
        if max_length is not None:
            text = script_ops.py_function(truncate, [text], dtypes.string)
            text.set_shape(())
        return text
    return dataset_utils.directory_dataset(
        directory, labels, label_mode, class_names, (".txt",), load, "text files", batch_size,
        shuffle, seed, validation_split, subset, follow_links, verbose)
