"""Run-time checks: ``assert`` (behind ``tf.debugging.Assert`` and the ``assert_*`` family) and
``check_numerics``.

Both are stateful: inside a traced function they run on every call, in program order, and
raise ``InvalidArgumentError`` there (from the compiled function as from eager code).
"""
import numpy as np

from hybridtf.registry.public_ops import check_ops as CO
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.registry import OpDef, Spec, checks, register
from hybridtf.registry.python_ops import TensorSlot


def _count(summarize, size):
    return size if summarize < 0 else min(summarize, size)


def _compare_message(condition, data, attrs):
    """TF's message for a failed elementwise condition: the failing positions (when the
    condition has the operands' shape) and the first ``summarize`` elements of each operand."""
    summarize = attrs["summarize"]
    lines = [attrs["message"]] if attrs["message"] else []
    lines.append(f"Condition {attrs['condition']} did not hold.")
    names = attrs["names"]
    if all(np.shape(a) == condition.shape for a in data) and condition.ndim:
        failing = np.argwhere(~condition)
        failing = failing[:_count(summarize, len(failing))]
        which = "different" if len(data) == 2 else "failing"
        lines += [f"Indices of first {len(failing)} {which} values:", str(failing)]
        for name, a in zip(names, data):
            lines += [f"Corresponding {name} values:", str(a[tuple(failing.T)])]
    for name, a in zip(names, data):
        flat = np.reshape(a, -1)
        flat = flat[:_count(summarize, flat.size)]
        lines += [f"First {flat.size} elements of {name}:", str(flat)]
    return "\n".join(lines)


def _data_message(condition, data, attrs):
    """``tf.debugging.Assert``'s message: each data item, tensors as their first ``summarize``
    elements."""
    items = []
    for item in attrs["template"]:
        if isinstance(item, TensorSlot):
            flat = np.reshape(data[item.index], -1)
            flat = flat[:_count(attrs["summarize"], flat.size)]
            items.append(", ".join(str(v) for v in flat))
        else:
            items.append(str(item))
    return "Expected condition to be true. Summarized data: " + "\n".join(items)


_MESSAGES = {"compare": _compare_message, "data": _data_message}


def check(condition, data, attrs):
    """Raises ``InvalidArgumentError`` with the assertion's message unless every element of the
    bool array ``condition`` is true; ``data``: the arrays the message shows."""
    condition = np.asarray(condition)
    if condition.all():
        return
    raise InvalidArgumentError(None, "assert", _MESSAGES[attrs["kind"]](condition, data, attrs))


def _assert_eager(arrays, attrs):
    check(arrays[0], arrays[1:], attrs)
    return ()


def _assert_infer(specs, attrs):
    if specs[0].dtype.kind != "b":
        raise TypeError(f"assert: condition must be a bool tensor, got "
                        f"{checks.dtype_name(specs[0].dtype)}.")
    return []


ASSERT = register(OpDef("assert", "opaque", {"cpu": _assert_eager}, _assert_infer, num_outputs=0,
                        stateful=True))


# ---- check_numerics -----------------------------------------------------------------------------
def _check_numerics_eager(arrays, attrs):
    x, = arrays
    has_nan = bool(np.isnan(x).any())
    has_inf = bool(np.isinf(x).any())
    if has_nan or has_inf:
        found = "Inf and NaN" if has_nan and has_inf else "NaN" if has_nan else "Inf"
        raise InvalidArgumentError(None, "check_numerics",
                                   f"{attrs['message']} : Tensor had {found} values")
    return x


def _check_numerics_infer(specs, attrs):
    x, = specs
    checks.allowed_dtype("check_numerics", x.dtype, ("float32", "float64"), "tensor")
    return [Spec(x.shape, x.dtype)]


def _check_numerics_grad(record, grads):
    # The gradient passes through, checked in its turn (as TF).
    return (CO.check_numerics(grads[0], "Not a number (NaN) or infinity (Inf) values detected "
                                        f"in gradient. {record.attrs['message']}"),)


CHECK_NUMERICS = register(OpDef("check_numerics", "opaque", {"cpu": _check_numerics_eager},
                                _check_numerics_infer, _check_numerics_grad, stateful=True))
