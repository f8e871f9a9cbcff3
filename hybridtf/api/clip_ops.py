"""Clipping by norm: ``tf.clip_by_norm``, ``tf.clip_by_global_norm`` and
``tf.linalg.global_norm`` (how gradients are usually kept from exploding)."""
from hybridtf.api import array_ops as A
from hybridtf.api import math_ops as M
from hybridtf.eager.execute import as_tensor, binary_operands
from hybridtf.framework import dtypes
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import checks


def _floating(op_name, t, what):
    if not t.dtype.is_floating:
        raise TypeError(f"{op_name}: {what} has dtype {t.dtype.name} (shape {t.shape.as_list()}), "
                        "but clipping by norm needs float32 or float64; cast it with tf.cast.")


def _like(op_name, value, reference, what):
    """``value`` as a tensor of ``reference``'s dtype (Python and NumPy values are converted)."""
    result = binary_operands(op_name, reference, value)[1]
    if result.dtype != reference.dtype:
        checks.fail(op_name, f"{what} has dtype {result.dtype.name} but the values have dtype "
                    f"{reference.dtype.name}. Cast one of them with tf.cast.")
    return result


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t`` scaled so that its L2 norm (over ``axes``, or all of it) is at most ``clip_norm``:
    ``t * clip_norm / max(norm(t), clip_norm)``.  A negative ``clip_norm`` counts as 0; a
    zero ``t`` stays zero (with finite gradients) unless ``clip_norm`` is 0 too."""
    values = as_tensor(t)
    _floating("clip_by_norm", values, "t")
    clip = M.maximum(_like("clip_by_norm", clip_norm, values, "clip_norm"), 0)
    squares = M.reduce_sum(values * values, axis=axes, keepdims=True)
    # sqrt at 0 has an infinite slope: take it only where the sum is positive.
    positive = M.greater(squares, 0)
    norm = M.where(positive, M.sqrt(M.where(positive, squares, A.ones_like(squares))), squares)
    return values * clip / M.maximum(norm, clip)


def _tensor_list(op_name, t_list):
    if isinstance(t_list, (Tensor, str, bytes)) or getattr(t_list, "_is_variable", False) or \
            not hasattr(t_list, "__iter__") or hasattr(t_list, "shape"):
        raise TypeError(f"{op_name}: `t_list` should be a sequence of tensors. Received "
                        f"{type(t_list)}.")
    tensors = [None if t is None else as_tensor(t) for t in t_list]
    present = [t for t in tensors if t is not None]
    for i, t in enumerate(present):
        _floating(op_name, t, f"t_list entry {i}")
        if t.dtype != present[0].dtype:
            checks.fail(op_name, f"all tensors must have one dtype, got {present[0].dtype.name} "
                        f"and {t.dtype.name}.")
    return tensors, present


def global_norm(t_list, name=None):
    """sqrt(sum of the squares of every element of every tensor in ``t_list``); None entries are
    skipped, and an empty list has norm 0."""
    _, present = _tensor_list("global_norm", t_list)
    return _global_norm(present)


def _global_norm(present):
    if not present:
        return as_tensor(0.0, dtypes.float32)
    return M.sqrt(M.add_n([M.reduce_sum(t * t) for t in present]))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)``, so
    that their global norm is at most ``clip_norm``.

    Returns ``(list_clipped, global_norm)``; None entries stay None.  ``use_norm`` replaces the
    computed global norm.  An infinite or NaN global norm makes every clipped value NaN, as in TF.
    """
    tensors, present = _tensor_list("clip_by_global_norm", t_list)
    norm = _global_norm(present) if use_norm is None else as_tensor(use_norm)
    clip = _like("clip_by_global_norm", clip_norm, norm, "clip_norm")
    scale = clip * M.minimum(1.0 / norm, 1.0 / clip)
    # Finite norms add 0; inf or NaN ones make the scale NaN.
    scale = scale + (norm - norm)
    clipped = [None if t is None else t * M.cast(scale, t.dtype) for t in tensors]
    return clipped, norm
