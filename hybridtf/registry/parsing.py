"""``decode_csv``: CSV records (a string tensor of any shape) into one tensor per column.

The op's inputs are the records and then one default per column, a tensor of shape [] or [1]
(the value of an empty field) or [0] (the field is required); each output has the records'
shape and its default's dtype.  Fields follow TF's rules: a field that starts with a quote (with
``use_quote_delim``) runs to the closing quote, which must be followed by the delimiter or the
end, and ``""`` inside it is one quote; an unquoted field must not contain a quote or a line
break; a field that is empty or equals ``na_value`` takes its column's default.

``split_record`` and ``convert_field`` are the one CSV parser: ``tf.data``'s ``CsvDataset``
and ``make_csv_dataset`` read file records with them too, so quoting rules and errors are the
same everywhere.
"""
import numpy as np

from hybridtf.registry import OpDef, Spec, checks, register

OP = "decode_csv"
_QUOTE = ord('"')
DTYPES = ("float32", "float64", "int32", "int64", "string")


def _quoted(record, start, delimiter, op_name):
    """The text of the quoted field at ``record[start]`` (a quote) and where it ends; None
    when the record ends inside it."""
    parts = []
    pos = start + 1
    while True:
        close = record.find(b'"', pos)
        if close < 0:
            return None, len(record)
        parts.append(record[pos:close])
        if record[close + 1:close + 2] == b'"':    # "" is one quote
            parts.append(b'"')
            pos = close + 2
            continue
        end = close + 1
        if end < len(record) and record[end] != delimiter:
            checks.fail(op_name, "Quote inside a string has to be escaped by another quote.")
        return b"".join(parts), end


def split_record(record, delimiter, use_quote_delim, op_name=OP, may_continue=False):
    """The fields (bytes) of one record; ``delimiter`` is one byte, as an int.

    A record that ends inside a quoted field is an error, except with ``may_continue`` (a line
    of a file, whose quoted field may go on over the next lines): then the result is None."""
    if not record:
        return []
    fields = []
    pos = 0
    while True:
        if use_quote_delim and record[pos:pos + 1] == b'"':
            field, pos = _quoted(record, pos, delimiter, op_name)
            if field is None:
                if may_continue:
                    return None
                checks.fail(op_name, "Quoted field has to end with quote followed by delim or "
                            "end.")
        else:
            end = record.find(bytes([delimiter]), pos)
            end = len(record) if end < 0 else end
            field = record[pos:end]
            if (use_quote_delim and _QUOTE in field) or b"\n" in field or b"\r" in field:
                checks.fail(op_name, "Unquoted fields cannot have quotes/CRLFs inside.")
            pos = end
        fields.append(field)
        if pos >= len(record):
            return fields
        pos += 1                      # past the delimiter
        if pos == len(record):        # a trailing delimiter: one more, empty field
            fields.append(b"")
            return fields


def _number(text, dtype, field, record, op_name):
    """``text`` as a number of ``dtype``, or TF's error naming the field and record."""
    try:
        value = text.decode("ascii")
        if "_" in value:              # Python's digit grouping, which TF does not read
            raise ValueError(value)
        if dtype.kind == "i":
            number = int(value)
            info = np.iinfo(dtype)
            if not info.min <= number <= info.max:
                raise ValueError(value)
            return number
        return float(value)
    except (UnicodeDecodeError, ValueError):
        kind = checks.dtype_name(dtype) if dtype.kind == "i" else "float"
        checks.fail(op_name, f"Field {field} in record {record} is not a valid {kind}: "
                    f"{text.decode('utf-8', 'replace')}")


def convert_field(text, default, dtype, na_value, field, record, op_name=OP):
    """Field ``field`` of record ``record`` (bytes) as a value of ``dtype`` (a NumPy dtype:
    bytes for strings, else a Python number); an empty field, or one equal to ``na_value``,
    is ``default`` (None: the field is required)."""
    if not text or text == na_value:
        if default is None:
            checks.fail(op_name, f"Field {field} is required but missing in record {record}!")
        return default
    if dtype == object:
        return text
    return _number(text, dtype, field, record, op_name)


def _decode_eager(arrays, attrs):
    records = arrays[0]
    defaults = [a.reshape(-1)[0] if a.size else None for a in arrays[1:]]
    dtypes = [a.dtype for a in arrays[1:]]
    flat = records.reshape(-1)
    columns = [[None] * flat.size for _ in defaults]
    select = attrs["select_cols"]
    delimiter, quotes, na_value = attrs["field_delim"], attrs["use_quote_delim"], \
        attrs["na_value"]
    for index, record in enumerate(flat):
        if isinstance(record, str):
            record = record.encode("utf-8")
        fields = split_record(record, delimiter, quotes)
        if select is not None:
            fields = [fields[i] for i in select if i < len(fields)]
        if len(fields) != len(defaults):
            checks.fail(OP, f"Expect {len(defaults)} fields but have {len(fields)} in record "
                        f"{index}")
        for column, (text, default, dtype) in enumerate(zip(fields, defaults, dtypes)):
            columns[column][index] = convert_field(text, default, dtype, na_value, column,
                                                   index)
    return tuple(np.array(values, dtype=dtype).reshape(records.shape)
                 for values, dtype in zip(columns, dtypes))


def _decode_infer(specs, attrs):
    records = specs[0]
    if records.dtype != object:
        raise TypeError(f"decode_csv: records must be a tf.string tensor, got "
                        f"{checks.dtype_name(records.dtype)}.")
    outputs = []
    for i, default in enumerate(specs[1:]):
        checks.allowed_dtype("decode_csv", default.dtype, DTYPES, f"record_defaults[{i}]")
        if default.shape is None or len(default.shape) > 1 or \
                (default.shape and default.shape[0] not in (0, 1)):
            checks.fail(OP, f"There should only be 1 default per field but field "
                        f"{i} has shape {checks.fmt_shape(default.shape or [None])}: each "
                        "default is a scalar, a 1-element list, or empty (a required field).")
        outputs.append(Spec(records.shape, default.dtype))
    return outputs


DECODE_CSV = register(OpDef("decode_csv", "opaque", {"cpu": _decode_eager}, _decode_infer,
                            num_outputs=None))
