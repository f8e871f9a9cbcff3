"""Python operators on tensors and variables (``x + 1``, ``a @ b``, ``x[1:, None]``, ...)."""
from hybridtf.api import array_ops, math_ops
from hybridtf.eager.execute import as_tensor
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor import Tensor
from hybridtf.framework.variables import Variable


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _logical(fn, op_symbol):
    def apply(x, y):
        xt = as_tensor(x)
        if not xt.dtype.is_bool:
            raise TypeError(f"`{op_symbol}` on tensors is logical and needs bool operands, got "
                            f"{xt.dtype.name}.")
        return fn(x, y)
    return apply


def _invert(x):
    xt = as_tensor(x)
    if not xt.dtype.is_bool:
        raise TypeError(f"`~` on tensors is logical_not and needs a bool tensor, got "
                        f"{xt.dtype.name}.")
    return math_ops.logical_not(xt)


def _equality(fn, when_incomparable):
    # TF 2: elementwise comparison; None, unconvertible or non-broadcastable operands compare
    # as plainly unequal instead of raising.
    def compare(self, other):
        if other is None:
            return when_incomparable
        try:
            return fn(self, other)
        except (InvalidArgumentError, TypeError, ValueError):
            return when_incomparable
    return compare


OPERATORS = {
    "__add__": math_ops.add, "__radd__": _reflected(math_ops.add),
    "__sub__": math_ops.subtract, "__rsub__": _reflected(math_ops.subtract),
    "__mul__": math_ops.multiply, "__rmul__": _reflected(math_ops.multiply),
    "__truediv__": math_ops.divide, "__rtruediv__": _reflected(math_ops.divide),
    "__floordiv__": math_ops.floordiv, "__rfloordiv__": _reflected(math_ops.floordiv),
    "__mod__": math_ops.floormod, "__rmod__": _reflected(math_ops.floormod),
    "__pow__": math_ops.pow, "__rpow__": _reflected(math_ops.pow),
    "__matmul__": math_ops.matmul, "__rmatmul__": _reflected(math_ops.matmul),
    "__lt__": math_ops.less, "__le__": math_ops.less_equal,
    "__gt__": math_ops.greater, "__ge__": math_ops.greater_equal,
    "__eq__": _equality(math_ops.equal, False), "__ne__": _equality(math_ops.not_equal, True),
    "__and__": _logical(math_ops.logical_and, "&"),
    "__rand__": _reflected(_logical(math_ops.logical_and, "&")),
    "__or__": _logical(math_ops.logical_or, "|"),
    "__ror__": _reflected(_logical(math_ops.logical_or, "|")),
    "__xor__": _logical(math_ops.logical_xor, "^"),
    "__rxor__": _reflected(_logical(math_ops.logical_xor, "^")),
    "__neg__": math_ops.negative, "__abs__": math_ops.abs, "__invert__": _invert,
    "__pos__": lambda x: as_tensor(x),
    "__getitem__": array_ops.getitem,
}

for _cls in (Tensor, Variable):
    for _name, _fn in OPERATORS.items():
        setattr(_cls, _name, _fn)
