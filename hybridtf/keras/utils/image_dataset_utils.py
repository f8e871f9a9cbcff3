"""``keras.utils.image_dataset_from_directory``: a ``tf.data`` dataset of the images in a
directory tree, labelled by subdirectory."""
from hybridtf.api import array_ops, image_codec_ops, image_ops, script_ops
from hybridtf.framework import dtypes
from hybridtf.io import file_ops
from hybridtf.keras.utils import dataset_utils, image_utils

IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}
INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
                  "mitchellcubic")


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, format="tf",
                                 verbose=True):
    """A ``tf.data.Dataset`` of the images under ``directory`` and their labels.

    With ``labels="inferred"``, ``directory`` holds one subdirectory per class::

        main_directory/
          class_a/  a_image_1.jpg  a_image_2.jpg ...
          class_b/  b_image_1.jpg  b_image_2.jpg ...

    Images (``.bmp``, ``.gif``, ``.jpeg``, ``.jpg``, ``.png``; JPEG and GIF need Pillow) are
    decoded with ``color_mode``'s channels (``"grayscale"`` 1, ``"rgb"`` 3, ``"rgba"`` 4),
    resized to ``image_size`` = ``(height, width)`` with ``tf.image.resize``'s
    ``interpolation`` -- after cropping the largest centered box of that aspect ratio
    (``crop_to_aspect_ratio``), or fitted inside and padded with zeros
    (``pad_to_aspect_ratio``) -- and batched by ``batch_size`` (None: one image per element).
    Images are float32 (uint8 with ``interpolation="nearest"``), ``(height, width,
    channels)`` or, with ``data_format="channels_first"``, ``(channels, height, width)``.

    Args:
      labels: ``"inferred"`` (the class subdirectories), None (images only), or a list of
        integer labels, one per image file in the alphanumeric order of their paths.
      label_mode: ``"int"`` (int32), ``"categorical"`` (float32 one-hot), ``"binary"``
        (float32 0/1, shape ``(1,)``; two classes only) or None (images only).
      class_names: the class subdirectories to use, in the order of their labels (default:
        all, alphanumerically).
      shuffle, seed: shuffle the files (and each epoch's order, within a buffer of
        ``8 * batch_size`` images); the same ``seed`` gives the same file order as Keras.
      validation_split, subset: hold out that fraction of the files, the last ones after
        shuffling; ``subset`` is ``"training"``, ``"validation"`` or ``"both"`` (a list of
        the two datasets).  Needs ``seed`` when shuffling.
      follow_links: visit subdirectories that are symbolic links.
      format: ``"tf"`` (the only one: a ``tf.data`` dataset).
      verbose: print how many files and classes were found.

    Returns:
      The dataset, yielding ``(images, labels)`` (or ``images`` alone), with attributes
      ``class_names`` and ``file_paths``; a list of two for ``subset="both"``.
    """
    labels, label_mode = dataset_utils.check_labels_arguments(labels, label_mode, class_names,
                                                              "image")
    if color_mode not in CHANNELS:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", "grayscale"}}. '
                         f"Received: color_mode={color_mode!r}")
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    elif not isinstance(image_size, (list, tuple)) or len(image_size) != 2:
        raise ValueError(f"Invalid `image_size` value. Expected a tuple of 2 integers. "
                         f"Received: image_size={image_size!r}")
    interpolation = interpolation.lower()
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"Argument `interpolation` should be one of {INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio`, `crop_to_aspect_ratio` can be set "
                         "to `True`.")
    dataset_utils.check_format(format)
    load = image_loader(tuple(image_size), CHANNELS[color_mode], interpolation,
                        image_utils._data_format(data_format), crop_to_aspect_ratio,
                        pad_to_aspect_ratio)
    return dataset_utils.directory_dataset(
        directory, labels, label_mode, class_names, IMAGE_FORMATS, load, "images", batch_size,
        shuffle, seed, validation_split, subset, follow_links, verbose)


def image_loader(image_size, channels, interpolation, data_format, crop_to_aspect_ratio,
                 pad_to_aspect_ratio):
    """``load(path)``: the image file at ``path`` decoded and resized, inside a dataset."""
    height, width = image_size
    dtype = dtypes.uint8 if interpolation == "nearest" else dtypes.float32

    def fit(image):
        # Eager, on one decoded image (its size is known only then).
        if crop_to_aspect_ratio:
            return image_utils.smart_resize(image, image_size, interpolation)
        return image_utils.resize_with_pad(image, height, width, interpolation)

    def load(path):
        image = image_codec_ops.decode_image(file_ops.read_file(path), channels=channels,
                                             expand_animations=False)
        if crop_to_aspect_ratio or pad_to_aspect_ratio:
            image = script_ops.py_function(fit, [image], dtype)
        else:
            image = image_ops.resize(image, image_size, method=interpolation)
        if data_format == "channels_first":
            image = array_ops.transpose(image, [2, 0, 1])
            image.set_shape((channels, height, width))
        else:
            image.set_shape((height, width, channels))
        return image
    return load
