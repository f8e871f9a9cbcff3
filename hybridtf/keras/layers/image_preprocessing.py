"""Image preprocessing layers that always act: Resizing and CenterCrop; and what every image
layer shares (the data format, single images and batches, cropping to an aspect ratio)."""
from hybridtf.api import array_ops, image_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer

# keras.ops.image.resize's interpolations (tf.image.resize methods of the same names).
INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5")


class UnknownChoiceError(NotImplementedError, ValueError):
    """An argument that is none of the values a layer knows (Keras raises
    NotImplementedError; it is a ValueError too, as for any bad argument value)."""


def check_choice(layer_name, what, value, allowed):
    if value not in allowed:
        raise UnknownChoiceError(f"{layer_name}: unknown `{what}` {value!r}; expected one of "
                                 f"{', '.join(allowed)}.")
    return value


def check_size(layer_name, height, width):
    for what, value in (("height", height), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{layer_name}: `{what}` must be a positive integer, got "
                             f"{value!r}.")


def aspect_crop_box(height, width, target_height, target_width):
    """(top, left, crop_height, crop_width): the largest centred window of a height x width
    image with the aspect ratio of target_height x target_width (computed as Keras does)."""
    crop_height = max(min(height, int(float(width * target_height) / target_width)), 1)
    crop_width = max(min(width, int(float(height * target_width) / target_height)), 1)
    return (int(float(height - crop_height) / 2), int(float(width - crop_width) / 2),
            crop_height, crop_width)


class ImageLayer(Layer):
    """The base of the image preprocessing layers: inputs are one image (3-D) or a batch
    (4-D), in ``data_format`` ("channels_last", the default from
    ``keras.backend.image_data_format()``, or "channels_first"); ``_transform`` sees a
    channels-last batch."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)

    def _spatial_axes(self):
        return (-2, -1) if self.data_format == "channels_first" else (-3, -2)

    def _as_batch(self, inputs):
        """``inputs`` as a channels-last 4-D batch."""
        rank = inputs._shape_tuple and len(inputs._shape_tuple)
        if rank not in (3, 4):
            raise ValueError(f"{type(self).__name__} layer {self.name}: expected one image "
                             f"(rank 3) or a batch of images (rank 4), got inputs of shape "
                             f"{inputs.shape}.")
        x = inputs if rank == 4 else array_ops.expand_dims(inputs, 0)
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, [0, 2, 3, 1])
        return x

    def _like_inputs(self, batch, inputs):
        """A channels-last batch back in the rank and data format of ``inputs``."""
        if self.data_format == "channels_first":
            batch = array_ops.transpose(batch, [0, 3, 1, 2])
        return batch if len(inputs._shape_tuple) == 4 else array_ops.squeeze(batch, [0])

    def _apply(self, inputs, transform):
        """``transform`` (of a channels-last batch) applied to ``inputs``."""
        return self._like_inputs(transform(self._as_batch(inputs)), inputs)

    def _to_compute_dtype(self, inputs):
        dtype = self._dtype_object
        return inputs if inputs.dtype is dtype else math_ops.cast(inputs, dtype)

    def _resized_shape(self, input_shape, height, width):
        dims = TensorShape(input_shape).as_list()
        h_axis, w_axis = self._spatial_axes()
        dims[h_axis], dims[w_axis] = height, width
        return TensorShape(dims)

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


def resize_batch(images, height, width, interpolation="bilinear", antialias=False,
                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, fill_value=0.0):
    """A channels-last batch resized to height x width, first cropped (or padded with
    ``fill_value``) to the target's aspect ratio if asked; float32 (nearest: the input dtype)."""
    in_height, in_width = images._shape_tuple[1:3]
    if crop_to_aspect_ratio:
        top, left, crop_height, crop_width = aspect_crop_box(in_height, in_width, height, width)
        images = image_ops.crop(images, (top, left, crop_height, crop_width))
    elif pad_to_aspect_ratio:
        pad_height = max(in_height, int(float(in_width * height) / width))
        pad_width = max(in_width, int(float(in_height * width) / height))
        # Keras pads the same margin on both sides (one row short when the gap is odd).
        top, left = (pad_height - in_height) // 2, (pad_width - in_width) // 2
        if top or left:
            images = array_ops.pad(images, [[0, 0], [top, top], [left, left], [0, 0]],
                                   constant_values=fill_value)
    return image_ops.resize(images, (height, width), method=interpolation,
                            antialias=antialias)


def _static_spatial(layer, batch):
    height, width = batch._shape_tuple[1:3]
    if height is None or width is None:
        raise ValueError(f"{type(layer).__name__} layer {layer.name}: the inputs' height and "
                         f"width must be known, got a batch of shape {batch.shape} "
                         "(channels last).")
    return height, width


class Resizing(ImageLayer):
    """Resizes images to ``height`` x ``width`` with ``interpolation`` ("bilinear",
    "nearest", "bicubic", "area", "lanczos3", "lanczos5"; ``antialias`` widens the filter
    when downsampling).  ``crop_to_aspect_ratio`` first takes the largest centred window with
    the target's aspect ratio; ``pad_to_aspect_ratio`` instead pads the image evenly with
    ``fill_value`` (``fill_mode`` "constant") to that ratio.  Integer images come back in
    their own dtype (rounded and saturated), floating-point ones in the layer's dtype."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        check_size("Resizing", height, width)
        self.height, self.width = height, width
        self.interpolation = check_choice("Resizing", "interpolation", interpolation,
                                          INTERPOLATIONS)
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError("Resizing: only one of `crop_to_aspect_ratio` and "
                             "`pad_to_aspect_ratio` can be True.")
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode = check_choice("Resizing", "fill_mode", fill_mode, ("constant",))
        self.fill_value = fill_value
        self.antialias = bool(antialias)

    def call(self, inputs):
        def resize(batch):
            _static_spatial(self, batch)
            resized = resize_batch(batch, self.height, self.width, self.interpolation,
                                   self.antialias, self.crop_to_aspect_ratio,
                                   self.pad_to_aspect_ratio, self.fill_value)
            if resized.dtype is batch.dtype:
                return resized
            if batch.dtype.is_integer:
                return math_ops.saturate_cast(math_ops.round(resized), batch.dtype)
            return math_ops.cast(resized, batch.dtype)

        return self._apply(inputs, resize)

    def compute_output_shape(self, input_shape):
        return self._resized_shape(input_shape, self.height, self.width)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width,
                       "interpolation": self.interpolation,
                       "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                       "pad_to_aspect_ratio": self.pad_to_aspect_ratio,
                       "fill_mode": self.fill_mode, "fill_value": self.fill_value,
                       "antialias": self.antialias})
        return config


class CenterCrop(ImageLayer):
    """Crops the central ``height`` x ``width`` window of images, in the layer's dtype.  An
    image smaller than the target in either dimension is instead cropped to the target's
    aspect ratio and resized (bilinear) to it, as Keras's ``smart_resize``."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        check_size("CenterCrop", height, width)
        self.height, self.width = height, width

    def call(self, inputs):
        def crop(batch):
            in_height, in_width = _static_spatial(self, batch)
            if in_height >= self.height and in_width >= self.width:
                top, left = (in_height - self.height) // 2, (in_width - self.width) // 2
                return image_ops.crop(batch, (top, left, self.height, self.width))
            return math_ops.cast(resize_batch(batch, self.height, self.width,
                                              crop_to_aspect_ratio=True), batch.dtype)

        return self._apply(self._to_compute_dtype(inputs), crop)

    def compute_output_shape(self, input_shape):
        return self._resized_shape(input_shape, self.height, self.width)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width})
        return config
