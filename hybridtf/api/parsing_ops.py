"""``tf.io.decode_csv``: CSV records into one tensor per column."""
import numpy as np

from hybridtf.eager.execute import as_tensor, execute
from hybridtf.framework import dtypes
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import parsing as PR


def _text(value, what):
    if isinstance(value, Tensor):
        value = value.numpy()
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise TypeError(f"decode_csv: {what} must be a string, got {value!r}.")


def _select_cols(select_cols, count):
    if select_cols is None:
        return None
    cols = [int(c) for c in np.asarray(select_cols).reshape(-1)]
    if any(c < 0 for c in cols):
        raise ValueError("decode_csv: select_cols contains negative values.")
    if any(b <= a for a, b in zip(cols, cols[1:])):
        raise ValueError("decode_csv: select_cols is not strictly increasing.")
    if len(cols) != count:
        raise ValueError(f"decode_csv: Length of select_cols ({len(cols)}) and record_defaults "
                         f"({count}) do not match.")
    return tuple(cols)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """Parses CSV ``records`` (a string tensor of any shape) into a list of tensors, one per
    column, each of the records' shape.

    ``record_defaults`` gives each column's dtype (float32, float64, int32, int64 or string)
    and its value for an empty field (or one equal to ``na_value``): a scalar or 1-element
    list, or an empty tensor for a required column.  ``select_cols`` (increasing indices) picks
    the columns to parse; otherwise a record must have exactly one field per default.  A
    malformed record raises ``InvalidArgumentError`` naming the field and the record.
    """
    defaults = [as_tensor(d) for d in record_defaults]
    if not defaults:
        raise ValueError("decode_csv: record_defaults must not be empty: give one default "
                         "(or empty tensor) per column.")
    delimiter = _text(field_delim, "field_delim")
    if len(delimiter) != 1:
        raise InvalidArgumentError(None, "decode_csv", f"decode_csv: field_delim should be "
                                   f"only 1 char, got {field_delim!r}.")
    attrs = {"field_delim": delimiter[0], "use_quote_delim": bool(use_quote_delim),
             "na_value": _text(na_value, "na_value"),
             "select_cols": _select_cols(select_cols, len(defaults))}
    return list(execute(PR.DECODE_CSV, [as_tensor(records, dtypes.string)] + defaults, attrs))
