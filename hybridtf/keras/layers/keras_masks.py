"""The Keras mask that travels with a tensor from one layer to the next.

A layer's ``compute_mask`` result is attached to the tensors its call returned; the next layer
called on them receives it as ``mask=`` (when its ``call`` takes a ``mask``) and passes on its
own.  Tensors have no attribute dictionary, so the masks live here, keyed by the tensor's
identity and dropped when the tensor is freed.
"""
import weakref

from hybridtf.framework.tensor import Tensor

_MASKS = {}   # id(tensor) -> (weak reference to the tensor, its mask)


def get_keras_mask(tensor):
    """The mask attached to ``tensor``, or None."""
    entry = _MASKS.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]


def set_keras_mask(tensor, mask):
    """Attaches ``mask`` to ``tensor`` (None removes it)."""
    key = id(tensor)
    if mask is None:
        _MASKS.pop(key, None)
        return

    def forget(ref, key=key):
        entry = _MASKS.get(key)
        if entry is not None and entry[0] is ref:
            del _MASKS[key]

    _MASKS[key] = (weakref.ref(tensor, forget), mask)


def masks_of(inputs):
    """The masks of ``inputs``: one tensor's mask, a list for a list or tuple of tensors (None
    where there is none), or None when no input has one."""
    if isinstance(inputs, Tensor):
        return get_keras_mask(inputs)
    if isinstance(inputs, (list, tuple)):
        masks = [get_keras_mask(t) if isinstance(t, Tensor) else None for t in inputs]
        return masks if any(m is not None for m in masks) else None
    return None


def attach(outputs, mask):
    """Attaches ``mask`` to ``outputs``: a tensor, or a list/tuple of tensors with one mask
    each (a list of masks) or the same mask for all."""
    if isinstance(outputs, Tensor):
        set_keras_mask(outputs, mask[0] if isinstance(mask, (list, tuple)) else mask)
        return
    if not isinstance(outputs, (list, tuple)):
        return
    masks = mask if isinstance(mask, (list, tuple)) and len(mask) == len(outputs) \
        else [mask] * len(outputs)
    for output, m in zip(outputs, masks):
        if isinstance(output, Tensor):
            set_keras_mask(output, m)
