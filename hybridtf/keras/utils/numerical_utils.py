"""``keras.utils.to_categorical`` and ``keras.utils.normalize``: NumPy helpers for targets and
features."""
import numpy as np


def to_categorical(x, num_classes=None):
    """One-hot encodes the class indices ``x`` (integers in ``[0, num_classes)``).

    The result has ``x``'s shape plus a last axis of ``num_classes`` (a trailing axis of size
    1 is dropped first, so ``[[1], [2]]`` gives shape ``(2, num_classes)``), dtype float64 as
    Keras returns.  ``num_classes`` defaults to ``max(x) + 1``.
    """
    x = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if x.dtype.kind == "f":
        if not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
            raise ValueError(f"to_categorical: class indices must be integers, got {x!r}.")
        x = x.astype(np.int64)
    elif x.dtype.kind not in "iub":
        raise ValueError(f"to_categorical: class indices must be integers, got an array of "
                         f"dtype {x.dtype}.")
    shape = x.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    flat = x.reshape(-1).astype(np.int64)
    if num_classes is None:
        num_classes = int(flat.max()) + 1 if flat.size else 0
    num_classes = int(num_classes)
    if flat.size and (flat.min() < 0 or flat.max() >= num_classes):
        bad = flat[(flat < 0) | (flat >= num_classes)][0]
        raise ValueError(f"to_categorical: class index {int(bad)} is out of range for "
                         f"num_classes={num_classes}; indices must be in [0, {num_classes}).")
    categorical = np.zeros((flat.size, num_classes), dtype=np.float64)
    categorical[np.arange(flat.size), flat] = 1.0
    return categorical.reshape(shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (a zero norm leaves the entries
    unchanged), as a NumPy array."""
    x = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    norm = np.linalg.norm(x, order, axis, keepdims=True)
    norm = np.where(norm == 0, 1, norm)
    return x / norm
