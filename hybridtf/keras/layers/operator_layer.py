"""Python operators on the symbolic tensors of functional models (``x + y``, ``-x``, ``x * 2``).

Keras 3 lets a functional model apply arithmetic to its KerasTensors; each operator becomes a
call of an ``OperatorLayer`` here (one layer per use, with no weights), so the model replays it,
saves it and loads it like any other layer call.
"""
import operator

from hybridtf.keras.layers import keras_tensor
from hybridtf.keras.layers.base_layer import Layer

# name -> (function, arity); a binary one applies to (tensor, other) or, reflected, (other,
# tensor) when the KerasTensor is its right operand
OPERATORS = {
    "add": (operator.add, 2), "subtract": (operator.sub, 2), "multiply": (operator.mul, 2),
    "divide": (operator.truediv, 2), "floordiv": (operator.floordiv, 2),
    "mod": (operator.mod, 2), "power": (operator.pow, 2), "matmul": (operator.matmul, 2),
    "negative": (operator.neg, 1), "absolute": (operator.abs, 1),
}


class OperatorLayer(Layer):
    """Applies one Python operator: ``call(x)`` for a unary one, ``call(x, other)`` for a
    binary one (``reflected``: ``other <op> x``)."""

    def __init__(self, operator_name, reflected=False, **kwargs):
        if operator_name not in OPERATORS:
            raise ValueError(f"OperatorLayer: unknown operator {operator_name!r}; known: "
                             f"{sorted(OPERATORS)}.")
        super().__init__(**kwargs)
        self.operator_name = operator_name
        self.reflected = bool(reflected)
        self.supports_masking = True

    def call(self, inputs, other=None):
        function, arity = OPERATORS[self.operator_name]
        if arity == 1:
            return function(inputs)
        return function(other, inputs) if self.reflected else function(inputs, other)

    def get_config(self):
        config = super().get_config()
        config.update(operator_name=self.operator_name, reflected=self.reflected)
        return config


def _unary(name):
    def apply(self):
        return OperatorLayer(name)(self)
    return apply


def _binary(name, reflected):
    def apply(self, other):
        return OperatorLayer(name, reflected=reflected)(self, other)
    return apply


def attach_operators():
    """Gives KerasTensor its arithmetic operators."""
    cls = keras_tensor.KerasTensor
    for name, dunder in (("add", "add"), ("subtract", "sub"), ("multiply", "mul"),
                         ("divide", "truediv"), ("floordiv", "floordiv"), ("mod", "mod"),
                         ("power", "pow"), ("matmul", "matmul")):
        setattr(cls, f"__{dunder}__", _binary(name, False))
        setattr(cls, f"__r{dunder}__", _binary(name, True))
    cls.__neg__ = _unary("negative")
    cls.__abs__ = _unary("absolute")
