"""``keras.utils.pad_sequences``: a list of variable-length sequences as one padded array."""
import numpy as np


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Pads (and truncates) ``sequences`` to a common length: an array of shape
    ``(len(sequences), maxlen) + element shape``.

    Args:
      sequences: a list of sequences (lists or arrays; their elements may be arrays of one
        common shape).
      maxlen: the length of the result (default: the longest sequence).
      dtype: the result's dtype (``object`` or a string dtype for strings).
      padding: ``"pre"`` or ``"post"``: where the padding ``value`` goes.
      truncating: ``"pre"`` or ``"post"``: which end of a longer sequence is cut.
      value: the padding value.
    """
    if padding not in ("pre", "post"):
        raise ValueError(f'Padding type "{padding}" not understood; use "pre" or "post".')
    if truncating not in ("pre", "post"):
        raise ValueError(f'Truncating type "{truncating}" not understood; use "pre" or '
                         '"post".')
    if not hasattr(sequences, "__len__"):
        raise ValueError("pad_sequences: `sequences` must be a list of sequences (each a list "
                         f"or array), got {type(sequences).__name__}.")
    arrays = []
    for i, seq in enumerate(sequences):
        if not hasattr(seq, "__len__"):
            raise ValueError(f"pad_sequences: `sequences` must be a list of iterables; found a "
                             f"non-iterable {seq!r} at index {i}.")
        arrays.append(np.asarray(seq))
    sample_shape = ()
    for array in arrays:
        if array.size:
            sample_shape = array.shape[1:]
            break
    if maxlen is None:
        maxlen = max((len(a) for a in arrays), default=0)
    maxlen = int(maxlen)
    np_dtype = np.dtype(dtype)
    is_text = np_dtype.kind in "OUS"
    if isinstance(value, str) and not is_text:
        raise ValueError(f"pad_sequences: dtype {np_dtype} is not compatible with the padding "
                         f"value {value!r}; pass dtype=object for strings.")
    out = np.full((len(arrays), maxlen) + sample_shape, value, dtype=np_dtype)
    for i, array in enumerate(arrays):
        if not len(array):
            continue
        if array.shape[1:] != sample_shape:
            raise ValueError(f"pad_sequences: the elements of sequence {i} have shape "
                             f"{array.shape[1:]}, unlike the earlier ones ({sample_shape}); "
                             "all elements must have the same shape.")
        if not is_text and array.dtype.kind in "OUS":
            raise ValueError(f"pad_sequences: sequence {i} holds strings, which dtype "
                             f"{np_dtype} cannot hold; pass dtype=object.")
        kept = array[-maxlen:] if truncating == "pre" else array[:maxlen]
        if not maxlen:
            kept = array[:0]
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, maxlen - len(kept):] = kept
    return out
