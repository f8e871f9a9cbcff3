"""Random image augmentation layers: RandomFlip, RandomRotation, RandomZoom,
RandomTranslation, RandomContrast, RandomCrop.

They act only in training (``training=True``, the default of a direct call, as in Keras 3;
``fit`` trains with it, ``predict`` and ``evaluate`` do not) and pass their inputs through
otherwise.  Each image of a batch draws its own random parameters, from the layer's ``seed``
by TF's seeding rules, so they work eagerly, in ``tf.function`` and in ``Dataset.map``, on
single images and on batches whose size is known only when the graph runs.  Rotation, zoom
and translation resample the images through a projective transform (differentiable with
respect to the images).
"""
import math
import random

from hybridtf.api import array_ops, image_ops, math_ops, random_ops
from hybridtf.framework import dtypes
from hybridtf.keras.layers.core import _training_value, smart_cond
from hybridtf.keras.layers.image_preprocessing import (
    ImageLayer, aspect_crop_box, check_choice, check_size, resize_batch)

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")
FLIP_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


def _factor_pair(layer_name, what, factor, low, high, low_open=False):
    """``factor`` as a sorted (lower, upper) pair: a pair of numbers each in [low, high], or a
    number f in that range, which stands for (max(-|f|, low), |f|).  ``low_open``: ``low``
    itself is excluded."""
    message = (f"{layer_name}: `{what}` must be a number or a pair of numbers in "
               f"{'(' if low_open else '['}{low}, {high}], got {what}={factor!r}.")

    def check(value):
        if not _is_number(value) or value > high or value < low or (low_open and value == low):
            raise ValueError(message)
        return float(value)

    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise ValueError(message)
        return tuple(sorted(check(f) for f in factor))
    f = abs(check(factor))
    return max(-f, low), f


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _spatial_sizes(batch):
    """The height and width of a channels-last batch: Python floats, or float32 scalars when
    known only when the graph runs."""
    sizes = []
    for axis in (1, 2):
        static = batch._shape_tuple[axis]
        sizes.append(float(static) if static is not None
                     else math_ops.cast(array_ops.shape(batch)[axis], dtypes.float32))
    return sizes


def _between(draws, lower, upper):
    """Uniform [0, 1) draws scaled to [lower, upper)."""
    return draws * (upper - lower) + lower


class _RandomImageLayer(ImageLayer):
    """An augmentation applied only in training; ``_augment`` sees a channels-last batch."""

    _cast_at_inference = True    # Keras's geometric layers give the layer's dtype either way

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.seed = seed

    def _draw(self, batch, count):
        """``count`` uniform [0, 1) float32 values per image of ``batch``: [batch, count]."""
        return image_ops.random_per_image_uniform(batch, count, seed=self.seed)

    def call(self, inputs, training=True):
        training = _training_value(training)
        if training is False:
            return self._to_compute_dtype(inputs) if self._cast_at_inference else inputs
        x = self._to_compute_dtype(inputs)
        return smart_cond(training, lambda: self._apply(x, self._augment),
                          lambda: array_ops.identity(x))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["seed"] = self.seed
        return config


class RandomFlip(_RandomImageLayer):
    """Flips images at random in training: ``mode`` "horizontal" (left-right), "vertical"
    (up-down) or "horizontal_and_vertical" (each image flipped both ways, or not at all, with
    probability 1/2 each)."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.mode = check_choice("RandomFlip", "mode", mode, FLIP_MODES)

    def _augment(self, batch):
        flips = array_ops.reshape(math_ops.less_equal(self._draw(batch, 1), 0.5), [-1, 1, 1, 1])
        if self.mode != "vertical":
            batch = image_ops.flip_selected(batch, flips, -2)
        if self.mode != "horizontal":
            batch = image_ops.flip_selected(batch, flips, -3)
        return batch

    def get_config(self):
        config = super().get_config()
        config["mode"] = self.mode
        return config


class _AffineLayer(_RandomImageLayer):
    """A random affine resampling: each image's transform maps output pixels to input
    points, read with ``interpolation`` and ``fill_mode`` (points outside the image: "reflect"
    d c b a | a b c d | d c b a, "wrap" a b c d | a b c d, "nearest" a a | a b c d | d d, or
    "constant" ``fill_value``)."""

    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        name = type(self).__name__
        self.fill_mode = check_choice(name, "fill_mode", fill_mode, FILL_MODES)
        self.interpolation = check_choice(name, "interpolation", interpolation, INTERPOLATIONS)
        self.fill_value = fill_value

    def _augment(self, batch):
        return image_ops.image_projective_transform(
            batch, self._transforms(batch), interpolation=self.interpolation,
            fill_mode=self.fill_mode, fill_value=self.fill_value)

    def get_config(self):
        config = super().get_config()
        config.update({"fill_mode": self.fill_mode, "fill_value": self.fill_value,
                       "interpolation": self.interpolation})
        return config


def _transform_rows(*columns):
    """[batch, 8] float32 transforms from 8 columns ([batch] tensors or numbers)."""
    like = next(c for c in columns if not _is_number(c))
    zeros = array_ops.zeros_like(like)
    return array_ops.stack([zeros + c if _is_number(c) else c for c in columns], axis=1)


class RandomRotation(_AffineLayer):
    """Rotates images by a random angle about their centre in training.  ``factor``: a
    fraction of a full turn (2 pi): a number f draws angles in [-f * 2 pi, f * 2 pi], a pair
    (lower, upper) in [lower * 2 pi, upper * 2 pi]; positive angles turn counter-clockwise.
    ``fill_mode`` (default "reflect"), ``interpolation`` ("bilinear" or "nearest") and
    ``fill_value`` say how the corners are filled and pixels read."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode=fill_mode, interpolation=interpolation, seed=seed,
                         fill_value=fill_value, data_format=data_format, **kwargs)
        self.factor = _factor_pair("RandomRotation", "factor", factor, -1.0, 1.0)

    def _transforms(self, batch):
        lower, upper = (f * 2.0 * math.pi for f in self.factor)
        angles = _between(self._draw(batch, 1)[:, 0], lower, upper)
        height, width = _spatial_sizes(batch)
        cos, sin = math_ops.cos(angles), math_ops.sin(angles)
        cx, cy = (width - 1.0) / 2.0, (height - 1.0) / 2.0
        return _transform_rows(cos, -sin, cx - cx * cos + cy * sin,
                               sin, cos, cy - cx * sin - cy * cos, 0.0, 0.0)

    def get_config(self):
        config = super().get_config()
        config["factor"] = self.factor
        return config


class RandomZoom(_AffineLayer):
    """Zooms images by a random factor about their centre in training.  ``height_factor``: a
    number f or a pair (lower, upper), each in (-1, 1]: the height is zoomed by 1 + a draw
    from [-f, f] (or [lower, upper]); positive values zoom out, negative ones in.
    ``width_factor`` likewise for the width (None: the same zoom as the height, keeping the
    aspect ratio)."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode=fill_mode, interpolation=interpolation, seed=seed,
                         fill_value=fill_value, data_format=data_format, **kwargs)
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _factor_pair(
            "RandomZoom", "height_factor", height_factor, -1.0, 1.0, low_open=True)
        self.width_factor = width_factor
        if width_factor is not None:
            self.width_lower, self.width_upper = _factor_pair(
                "RandomZoom", "width_factor", width_factor, -1.0, 1.0, low_open=True)

    def _transforms(self, batch):
        draws = self._draw(batch, 2)
        zoom_h = _between(draws[:, 0], 1.0 + self.height_lower, 1.0 + self.height_upper)
        zoom_w = zoom_h if self.width_factor is None else _between(
            draws[:, 1], 1.0 + self.width_lower, 1.0 + self.width_upper)
        height, width = _spatial_sizes(batch)
        return _transform_rows(zoom_w, 0.0, (width - 1.0) / 2.0 * (1.0 - zoom_w),
                               0.0, zoom_h, (height - 1.0) / 2.0 * (1.0 - zoom_h), 0.0, 0.0)

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return config


class RandomTranslation(_AffineLayer):
    """Shifts images by a random offset in training.  ``height_factor`` and ``width_factor``:
    a number f or a pair (lower, upper), each in [-1, 1], as fractions of the height and
    width: the shift is drawn from [-f, f] (or [lower, upper]) times the size; positive
    values move the content down and right."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode=fill_mode, interpolation=interpolation, seed=seed,
                         fill_value=fill_value, data_format=data_format, **kwargs)
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _factor_pair(
            "RandomTranslation", "height_factor", height_factor, -1.0, 1.0)
        self.width_factor = width_factor
        self.width_lower, self.width_upper = _factor_pair(
            "RandomTranslation", "width_factor", width_factor, -1.0, 1.0)

    def _transforms(self, batch):
        draws = self._draw(batch, 2)
        height, width = _spatial_sizes(batch)
        shift_y = _between(draws[:, 0], self.height_lower, self.height_upper) * height
        shift_x = _between(draws[:, 1], self.width_lower, self.width_upper) * width
        return _transform_rows(1.0, 0.0, -shift_x, 0.0, 1.0, -shift_y, 0.0, 0.0)

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return config


class RandomContrast(_RandomImageLayer):
    """Scales each image's contrast by a random factor in training: every channel's
    deviation from its mean over the image is multiplied by a draw from
    [1 - lower, 1 + upper], and the result clipped to ``value_range``.  ``factor``: a pair
    (lower, upper) in [0, 1], or a number f, which Keras 3 takes as (0, f)."""

    _cast_at_inference = False

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = _factor_pair("RandomContrast", "factor", factor, 0.0, 1.0)
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2 \
                or not all(_is_number(v) for v in value_range) \
                or value_range[0] > value_range[1]:
            raise ValueError(f"RandomContrast: `value_range` must be a pair (low, high) of "
                             f"numbers with low <= high, got {value_range!r}.")
        self.value_range = tuple(value_range)

    def _augment(self, batch):
        lower, upper = self.factor
        contrast = array_ops.reshape(_between(self._draw(batch, 1), 1.0 - lower, 1.0 + upper),
                                     [-1, 1, 1, 1])
        contrast = math_ops.cast(contrast, batch.dtype)
        mean = math_ops.reduce_mean(batch, axis=[1, 2], keepdims=True)
        adjusted = (batch - mean) * contrast + mean
        return math_ops.clip_by_value(adjusted, self.value_range[0], self.value_range[1])

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomCrop(_RandomImageLayer):
    """Crops a random ``height`` x ``width`` window of the images in training (one window for
    the whole batch).  Images not larger than the target in both dimensions are instead
    cropped to the target's aspect ratio about their centre and resized to it.  Inference
    passes the inputs through, as in Keras 3.  ``seed`` defaults to a random integer, kept in
    the config."""

    _cast_at_inference = False

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        if seed is None:
            seed = random.randint(1, int(1e9))
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        check_size("RandomCrop", height, width)
        self.height, self.width = height, width

    def _augment(self, batch):
        in_height, in_width = batch._shape_tuple[1:3]
        if in_height is None or in_width is None:
            raise ValueError(f"RandomCrop layer {self.name}: the inputs' height and width must "
                             f"be known, got a batch of shape {batch.shape} (channels last).")
        if in_height > self.height and in_width > self.width:
            draws = random_ops.uniform([2], seed=self.seed)
            spans = [float(in_height - self.height + 1), float(in_width - self.width + 1)]
            starts = math_ops.cast(math_ops.floor(draws * spans), dtypes.int32)
            box = array_ops.concat([starts, [self.height, self.width]], axis=0)
            cropped = image_ops.crop(batch, box)
            # The window's place is known only when the graph runs; its size is not.
            return array_ops.reshape(cropped, [-1, self.height, self.width,
                                               batch._shape_tuple[3]])
        top, left, crop_height, crop_width = aspect_crop_box(in_height, in_width, self.height,
                                                             self.width)
        cropped = image_ops.crop(batch, (top, left, crop_height, crop_width))
        if (crop_height, crop_width) == (self.height, self.width):
            return cropped
        return math_ops.cast(resize_batch(cropped, self.height, self.width), batch.dtype)

    def compute_output_shape(self, input_shape):
        return self._resized_shape(input_shape, self.height, self.width)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width})
        return config
