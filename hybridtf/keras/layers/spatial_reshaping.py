"""UpSampling1D/2D, ZeroPadding1D/2D and Cropping1D/2D: layers that change the length of
sequences or the size of images, keeping the batch and channel dimensions."""
from hybridtf.api import array_ops, image_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers import conv_utils
from hybridtf.keras.layers.base_layer import Layer
from hybridtf.keras.layers.input_spec import InputSpec

_RESIZE_METHODS = ("nearest", "bilinear", "bicubic", "lanczos3", "lanczos5", "area",
                   "gaussian", "mitchellcubic")


def _pairs(value, rank, name, who):
    """An int, ``rank`` ints, or ``rank`` pairs of ints >= 0 as ``rank`` (before, after)
    pairs: Keras's forms of ``padding`` and ``cropping``."""
    def bad():
        return ValueError(f"{who}: `{name}` should be an int, a tuple of {rank} ints or a tuple "
                          f"of {rank} tuples of 2 ints (all >= 0). Received: {name}={value!r}")

    if isinstance(value, int) and not isinstance(value, bool):
        pairs = ((value, value),) * rank
    elif rank == 1 and isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        pairs = (tuple(value),)
    elif isinstance(value, (list, tuple)) and len(value) == rank:
        pairs = []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool):
                pairs.append((item, item))
            elif isinstance(item, (list, tuple)) and len(item) == 2 and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in item):
                pairs.append(tuple(item))
            else:
                raise bad()
        pairs = tuple(pairs)
    else:
        raise bad()
    if any(v < 0 for pair in pairs for v in pair):
        raise bad()
    return pairs


class _Spatial(Layer):
    """A layer over ``rank`` spatial axes of channels_last or channels_first inputs."""

    rank = None

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    @property
    def _spatial_axes(self):
        first = 1 if self.data_format == "channels_last" else 2
        return list(range(first, first + self.rank))

    def compute_output_shape(self, input_shape):
        dims = TensorShape(input_shape).as_list()
        if len(dims) != self.rank + 2:
            raise ValueError(f"{type(self).__name__} {self.name}: expected an input shape of "
                             f"rank {self.rank + 2}, got {tuple(dims)}.")
        for k, axis in enumerate(self._spatial_axes):
            if dims[axis] is not None:
                dims[axis] = self._output_size(k, dims[axis])
        return TensorShape(dims)


# ---- up-sampling --------------------------------------------------------------------------------
def _repeat(x, size, axis):
    """Each entry of ``x`` along ``axis`` repeated ``size`` times in a row."""
    if size == 1:
        return x
    dims = x.shape.as_list()
    multiples = [1] * (len(dims) + 1)
    multiples[axis + 1] = size
    tiled = array_ops.tile(array_ops.expand_dims(x, axis + 1), multiples)
    target = list(dims)
    target[axis] = None if dims[axis] is None else dims[axis] * size
    if target.count(None) <= 1:
        return array_ops.reshape(tiled, [-1 if d is None else d for d in target])
    shape = array_ops.shape(x)   # sizes known only when the graph runs
    return array_ops.reshape(tiled, array_ops.stack(
        [shape[i] * size if i == axis else shape[i] for i in range(len(dims))]))


class UpSampling1D(_Spatial):
    """Repeats each step ``size`` times: [batch, steps, features] -> [batch, steps * size,
    features]."""

    rank = 1

    def __init__(self, size=2, **kwargs):
        super().__init__(data_format="channels_last", **kwargs)
        self.size = conv_utils.normalize_tuple(size, 1, "size")[0]

    def _output_size(self, k, n):
        return n * self.size

    def call(self, inputs):
        return _repeat(inputs, self.size, 1)

    def get_config(self):
        config = super().get_config()
        config["size"] = self.size
        return config


class UpSampling2D(_Spatial):
    """Enlarges images by ``size`` (rows, columns): "nearest" ``interpolation`` repeats each
    pixel, the others ("bilinear", "bicubic", ...) resize as ``tf.image.resize``."""

    rank = 2

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.size = conv_utils.normalize_tuple(size, 2, "size")
        if interpolation not in _RESIZE_METHODS:
            raise ValueError(f"UpSampling2D {self.name}: `interpolation` must be one of "
                             f"{', '.join(map(repr, _RESIZE_METHODS))}. Received: "
                             f"interpolation={interpolation!r}")
        self.interpolation = interpolation

    def _output_size(self, k, n):
        return n * self.size[k]

    def call(self, inputs):
        if self.interpolation == "nearest":
            x = inputs
            for axis, size in zip(self._spatial_axes, self.size):
                x = _repeat(x, size, axis)
            return x
        x = inputs
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, conv_utils.channels_last_perm(2))
        height, width = x.shape.as_list()[1:3]
        if height is None or width is None:
            shape = array_ops.shape(x)
            new_size = array_ops.stack([shape[1] * self.size[0], shape[2] * self.size[1]])
        else:
            new_size = [height * self.size[0], width * self.size[1]]
        y = image_ops.resize(x, new_size, method=self.interpolation)
        if y.dtype != inputs.dtype:
            y = math_ops.cast(y, inputs.dtype)
        if self.data_format == "channels_first":
            y = array_ops.transpose(y, conv_utils.channels_first_perm(2))
        return y

    def get_config(self):
        config = super().get_config()
        config.update({"size": self.size, "data_format": self.data_format,
                       "interpolation": self.interpolation})
        return config


# ---- zero padding -------------------------------------------------------------------------------
class _ZeroPadding(_Spatial):
    def _output_size(self, k, n):
        return n + sum(self.padding[k])

    def call(self, inputs):
        paddings = [[0, 0]] * (self.rank + 2)
        for axis, pair in zip(self._spatial_axes, self.padding):
            paddings[axis] = list(pair)
        return array_ops.pad(inputs, paddings)

    def get_config(self):
        config = super().get_config()
        config.update({"padding": self.padding, "data_format": self.data_format})
        return config


class ZeroPadding1D(_ZeroPadding):
    """Adds zeros before and after the steps: ``padding`` an int (both sides) or a pair
    (before, after)."""

    rank = 1

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.padding = _pairs(padding, 1, "padding", f"ZeroPadding1D {self.name}")

    def get_config(self):
        config = super().get_config()
        config["padding"] = self.padding[0]
        return config


class ZeroPadding2D(_ZeroPadding):
    """Adds rows and columns of zeros around images: ``padding`` an int, a pair (rows,
    columns, each on both sides) or ((top, bottom), (left, right))."""

    rank = 2

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.padding = _pairs(padding, 2, "padding", f"ZeroPadding2D {self.name}")


# ---- cropping -----------------------------------------------------------------------------------
class _Cropping(_Spatial):
    def _output_size(self, k, n):
        size = n - sum(self.cropping[k])
        if size <= 0:
            raise ValueError(f"{type(self).__name__} {self.name}: `cropping` {self.cropping} "
                             f"leaves nothing of a spatial dimension of size {n}; it must "
                             "remove less than the input's size.")
        return size

    def call(self, inputs):
        dims = inputs.shape.as_list()
        index = [slice(None)] * (self.rank + 2)
        for k, (axis, (before, after)) in enumerate(zip(self._spatial_axes, self.cropping)):
            if dims[axis] is not None:
                self._output_size(k, dims[axis])
            index[axis] = slice(before, -after if after else None)
        return inputs[tuple(index)]

    def get_config(self):
        config = super().get_config()
        config["cropping"] = self.cropping
        return config


class Cropping1D(_Cropping):
    """Removes steps at the start and end: ``cropping`` an int (both ends) or a pair
    (start, end)."""

    rank = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(data_format="channels_last", **kwargs)
        self.cropping = _pairs(cropping, 1, "cropping", f"Cropping1D {self.name}")

    def get_config(self):
        config = super().get_config()
        config["cropping"] = self.cropping[0]
        return config


class Cropping2D(_Cropping):
    """Removes rows and columns at the edges of images: ``cropping`` an int, a pair (rows,
    columns, each at both edges) or ((top, bottom), (left, right))."""

    rank = 2

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.cropping = _pairs(cropping, 2, "cropping", f"Cropping2D {self.name}")

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config
