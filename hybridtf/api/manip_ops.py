"""``tf.reverse`` and ``tf.roll``: elements moved along axes, the shape unchanged."""
import numpy as np

from hybridtf.eager.execute import as_tensor, execute1
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import checks
from hybridtf.registry import reordering as RO


def _axis_values(op_name, axis):
    """``axis`` (an int, a list of ints, or a constant integer tensor) as (list of ints, whether
    it was a scalar).  The axes must be known while tracing: a symbolic tensor is a TypeError."""
    if isinstance(axis, Tensor) or getattr(axis, "_is_variable", False):
        axis = as_tensor(axis)
        if type(axis) is not Tensor:
            raise TypeError(f"{op_name}: axis must be known when the function is traced (a Python "
                            f"int or list, or a constant tensor), got the symbolic {axis!r}.")
        axis = axis._value
    array = np.asarray(axis)
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"{op_name}: axis must be an integer or a list of integers, got {axis!r}.")
    if array.ndim > 1:
        checks.fail(op_name, f"axis must be a scalar or a 1-D list of axes, got shape "
                    f"{list(array.shape)}.")
    return [int(a) for a in array.reshape(-1)], array.ndim == 0


def reverse(tensor, axis, name=None):
    """Reverses ``tensor`` along each dimension in ``axis`` (a 1-D list; each axis at most once;
    negative axes count from the end)."""
    x = as_tensor(tensor)
    axes, scalar = _axis_values("reverse", axis)
    if scalar:
        checks.fail("reverse", f"axis must be a 1-D list of axes, got the scalar {axes[0]}; "
                    f"write [{axes[0]}].")
    return execute1(RO.REVERSE, [x], {"axis": axes})


def roll(input, shift, axis, name=None):  # noqa: A002 - TF's name
    """Rolls the elements of ``input`` by ``shift`` positions along ``axis``: those moved past
    the end come back at the start.

    ``shift`` and ``axis`` are both scalars or both 1-D of the same length; shifting one axis
    several times adds the shifts.  ``shift`` may be a tensor (int32 or int64).
    """
    x = as_tensor(input)
    axes, scalar = _axis_values("roll", axis)
    return execute1(RO.ROLL, [x, as_tensor(shift)], {"axis": axes, "scalar": scalar})
