"""Layers that merge a list of inputs: Add, Subtract, Multiply, Average, Maximum, Minimum,
Concatenate (and their functional forms add, concatenate, ...)."""
import functools

from hybridtf.api import array_ops, math_ops
from hybridtf.framework.tensor_shape import TensorShape
from hybridtf.keras.layers.base_layer import Layer


def _check_list(layer, inputs, minimum):
    if not isinstance(inputs, (list, tuple)):
        raise ValueError(f"A merge layer ({type(layer).__name__} {layer.name}) should be called "
                         f"on a list of inputs. Received: inputs={inputs!r} (not a list)")
    if len(inputs) < minimum:
        raise ValueError(f"A merge layer ({type(layer).__name__} {layer.name}) should be called "
                         f"on a list of at least {minimum} inputs. Got {len(inputs)} inputs.")


class _Merge(Layer):
    """Combines inputs of the same (broadcastable) shape elementwise."""

    _minimum_inputs = 1

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def build(self, input_shape):
        _check_list(self, input_shape, self._minimum_inputs)
        self._output_shape_of(input_shape)
        self.built = True

    def _output_shape_of(self, input_shapes):
        shapes = [TensorShape(s) for s in input_shapes]
        out = shapes[0].as_list()
        for shape in shapes[1:]:
            dims = shape.as_list()
            if len(dims) != len(out):
                raise ValueError(f"{type(self).__name__} layer {self.name}: inputs must have the "
                                 f"same rank; got shapes {[tuple(s.as_list()) for s in shapes]}.")
            merged = []
            for a, b in zip(out, dims):
                if a is not None and b is not None and a != b and 1 not in (a, b):
                    raise ValueError(f"{type(self).__name__} layer {self.name}: inputs must have "
                                     f"compatible shapes; got "
                                     f"{[tuple(s.as_list()) for s in shapes]}.")
                merged.append(None if a is None or b is None else max(a, b))
            out = merged
        return TensorShape(out)

    def _merge(self, inputs):
        raise TypeError(f"{type(self).__name__} does not define how to merge its inputs.")

    def call(self, inputs):
        _check_list(self, inputs, self._minimum_inputs)
        return self._merge(list(inputs))

    def compute_output_shape(self, input_shape):
        _check_list(self, input_shape, self._minimum_inputs)
        return self._output_shape_of(input_shape)


class Add(_Merge):
    """The elementwise sum of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(math_ops.add, inputs)


class Subtract(_Merge):
    """inputs[0] - inputs[1] (exactly two inputs)."""

    _minimum_inputs = 2

    def _merge(self, inputs):
        if len(inputs) != 2:
            raise ValueError(f"A `Subtract` layer ({self.name}) should be called on exactly 2 "
                             f"inputs. Received: {len(inputs)} inputs.")
        return math_ops.subtract(inputs[0], inputs[1])


class Multiply(_Merge):
    """The elementwise product of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(math_ops.multiply, inputs)


class Average(_Merge):
    """The elementwise mean of the inputs."""

    def _merge(self, inputs):
        return math_ops.divide(functools.reduce(math_ops.add, inputs), float(len(inputs)))


class Maximum(_Merge):
    """The elementwise maximum of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(math_ops.maximum, inputs)


class Minimum(_Merge):
    """The elementwise minimum of the inputs."""

    def _merge(self, inputs):
        return functools.reduce(math_ops.minimum, inputs)


class Concatenate(_Merge):
    """Joins the inputs along ``axis`` (default -1); other dimensions must match."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def _output_shape_of(self, input_shapes):
        shapes = [TensorShape(s).as_list() for s in input_shapes]
        rank = len(shapes[0])
        if not -rank <= self.axis < rank:
            raise ValueError(f"Concatenate layer {self.name}: axis {self.axis} is out of range "
                             f"for inputs of rank {rank}.")
        axis = self.axis % rank
        out = list(shapes[0])
        for dims in shapes[1:]:
            if len(dims) != rank or any(
                    a is not None and b is not None and a != b
                    for i, (a, b) in enumerate(zip(out, dims)) if i != axis):
                raise ValueError(f"A `Concatenate` layer ({self.name}) requires inputs with "
                                 f"matching shapes except for the concatenation axis. Received: "
                                 f"input_shape={[tuple(s) for s in shapes]}")
            out = [(None if a is None or b is None else a + b) if i == axis
                   else (a if a is not None else b)
                   for i, (a, b) in enumerate(zip(out, dims))]
        return TensorShape(out)

    def _merge(self, inputs):
        return array_ops.concat(inputs, axis=self.axis)

    def get_config(self):
        config = super().get_config()
        config["axis"] = self.axis
        return config


def add(inputs, **kwargs):
    """``Add(**kwargs)(inputs)``."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis=axis, **kwargs)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)
