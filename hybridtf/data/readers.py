"""File datasets: ``TextLineDataset``, ``experimental.CsvDataset`` and
``experimental.make_csv_dataset``.

Files are read lazily, a line at a time, when a pass reaches them; ``compression_type`` is ""
(none), "GZIP" or "ZLIB".  Lines lose their ending ("\\n" or "\\r\\n").  Strings are bytes, as
in TF's ``tf.string`` tensors.
"""
import collections
import glob
import gzip
import io
import os
import zlib

import numpy as np

from hybridtf.data import structure as st
from hybridtf.data.dataset_ops import AUTOTUNE, DatasetV2, symbolic_dataset
from hybridtf.data.node import UNKNOWN, UnaryNode, new_pass
from hybridtf.framework import dtypes
from hybridtf.framework.errors import InvalidArgumentError, NotFoundError
from hybridtf.framework.tensor import is_tensor
from hybridtf.framework.tensor_spec import TensorSpec
from hybridtf.graph.func_graph import GraphTensor
from hybridtf.registry import checks, parsing

_COMPRESSIONS = ("", "GZIP", "ZLIB")
_CSV_DTYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)
_READ_BYTES = 1 << 16


def _compression(value, who):
    value = "" if value is None else _as_str(value)
    if value.upper() not in _COMPRESSIONS:
        raise ValueError(f"{who}: compression_type must be '', 'GZIP' or 'ZLIB', got {value!r}.")
    return value.upper()


def _as_str(value):
    if is_tensor(value):
        value = np.asarray(value)[()]
    return os.fsdecode(value) if isinstance(value, (bytes, os.PathLike)) else str(value)


def _as_bytes(value):
    """A string argument (str, bytes or a string tensor) as bytes, as CSV fields are."""
    return os.fsencode(_as_str(value))


def _filenames(filenames, who):
    """A dataset of file names from a name, a list of names, a string tensor or a dataset."""
    if isinstance(filenames, DatasetV2):
        spec = filenames.element_spec
        if not isinstance(spec, TensorSpec) or spec.dtype is not dtypes.string \
                or spec.shape.rank not in (0, None):
            raise TypeError(f"{who}: a dataset of filenames must have scalar tf.string "
                            f"elements, got {spec!r}.")
        return filenames
    if isinstance(filenames, GraphTensor):
        if not st.discovering_now():
            raise TypeError(f"{who}: the filenames are a symbolic tensor of the function being "
                            "traced; build the dataset outside the decorated function.")
        return symbolic_dataset(TensorSpec([], dtypes.string))   # flat_map's discovery
    if isinstance(filenames, (str, bytes, os.PathLike)):
        names = [_as_str(filenames)]
    elif is_tensor(filenames):
        names = [_as_str(n) for n in np.asarray(filenames).reshape(-1)]
    else:
        names = [_as_str(n) for n in filenames]
    if not names:
        raise ValueError(f"{who}: expected at least one filename.")
    return DatasetV2.from_tensor_slices(names)


class _ZlibReader(io.RawIOBase):
    """A raw stream of the decompressed bytes of a zlib file."""

    def __init__(self, raw):
        self._raw = raw
        self._inflate = zlib.decompressobj()
        self._pending = b""

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._pending:
            data = self._raw.read(_READ_BYTES)
            if not data:
                self._pending = self._inflate.flush()
                if not self._pending:
                    return 0
                break
            self._pending = self._inflate.decompress(data)
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def close(self):
        self._raw.close()
        super().close()


def open_file(path, compression):
    """A binary stream of the (decompressed) contents of ``path``."""
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(None, "read_file", f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise InvalidArgumentError(None, "read_file", f"{path} is a directory, not a "
                                   "file.") from None
    if compression == "GZIP":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "ZLIB":
        return io.BufferedReader(_ZlibReader(raw))
    return raw


def _lines(stream):
    for line in stream:
        if line.endswith(b"\n"):
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
        yield line


class _FileRecords(UnaryNode):
    """The records of the files a dataset of file names (the input) names, read in order."""

    def __init__(self, names_node, structure, compression):
        super().__init__(names_node, structure)
        self.compression = compression

    def cardinality(self):
        return UNKNOWN

    def iterate(self):
        with new_pass(self.input) as names:
            for (name,) in names:
                with open_file(_as_str(np.asarray(name)[()]), self.compression) as stream:
                    yield from self._records(stream)


class TextLines(_FileRecords):
    kind = "TextLine"

    def __init__(self, names_node, compression):
        super().__init__(names_node, TensorSpec([], dtypes.string), compression)

    def _records(self, stream):
        """The elements of one file (a binary stream)."""
        for line in _lines(stream):
            yield (np.array(line, dtype=object),)


class TextLineDataset(DatasetV2):
    """The lines of one or more text files (``tf.data.TextLineDataset``), as scalar
    ``tf.string`` elements without their line endings; the files are read in order."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        names = _filenames(filenames, "TextLineDataset")
        super().__init__(TextLines(names._node, _compression(compression_type,
                                                             "TextLineDataset")))


# ---- CSV ---------------------------------------------------------------------------------------
class _Column:
    """One output column of a CSV dataset: its dtype and default (None: required)."""

    def __init__(self, dtype, default):
        self.dtype = dtype
        self.default = default


def _columns(record_defaults, who):
    columns = []
    for i, value in enumerate(record_defaults):
        if isinstance(value, dtypes.DType):
            dtype, default = value, None
        else:
            array = np.asarray(value) if is_tensor(value) else None
            if array is None:
                tensor = st.normalize(value, who)
                array = np.asarray(tensor._value)
            dtype = dtypes.of_array(array)
            if array.size > 1:
                raise ValueError(f"{who}: record_defaults[{i}] must be a scalar default, an "
                                 f"empty tensor or a dtype, got {value!r}.")
            default = None if array.size == 0 else array.reshape(())
        if dtype not in _CSV_DTYPES:
            raise TypeError(f"{who}: record_defaults[{i}] has dtype {dtype.name}; CSV columns "
                            "must be float32, float64, int32, int64 or string.")
        columns.append(_Column(dtype, default))
    if not columns:
        raise ValueError(f"{who}: record_defaults must not be empty.")
    return columns


def _parse(text, column, field, record, na_value):
    """One CSV field (bytes) as a 0-d array of the column's dtype, by ``tf.io.decode_csv``'s
    rules."""
    np_dtype = np.dtype(column.dtype.as_numpy_dtype)
    return np.array(parsing.convert_field(text, column.default, np_dtype, na_value, field,
                                          record, "CsvDataset"), dtype=np_dtype)


def _delimiter(field_delim, who):
    """``field_delim`` as the one byte (an int) that separates fields."""
    delimiter = _as_bytes(field_delim)
    if len(delimiter) != 1:
        raise ValueError(f"{who}: field_delim must be one character, got {field_delim!r}.")
    return delimiter[0]


def csv_records(stream, delimiter, use_quote_delim, who, ignore_errors=False):
    """The records of a binary CSV stream as lists of fields (bytes), split by
    ``tf.io.decode_csv``'s parser.  Records end at a line break ("\\n", "\\r\\n" or "\\r")
    outside quotes; a quoted field may span lines (its line breaks are part of it).  A
    malformed record raises the parser's InvalidArgumentError, or is skipped with
    ``ignore_errors``."""
    # Latin-1 maps bytes to characters one to one: the lines, with every kind of line break,
    # come back as the exact bytes.
    lines = io.TextIOWrapper(stream, encoding="latin-1", newline="")
    pending = b""     # the lines of a record whose quoted field goes on
    for line in lines:
        pending += line.encode("latin-1")
        try:
            fields = parsing.split_record(_without_line_break(pending), delimiter,
                                          use_quote_delim, who, may_continue=True)
        except InvalidArgumentError:
            if not ignore_errors:
                raise
            pending = b""
            continue
        if fields is not None:
            pending = b""
            yield fields
    if pending and not ignore_errors:   # the file ends inside a quoted field
        parsing.split_record(pending, delimiter, use_quote_delim, who)


def _without_line_break(line):
    for ending in (b"\r\n", b"\n", b"\r"):
        if line.endswith(ending):
            return line[:-len(ending)]
    return line


class CsvRecords(_FileRecords):
    kind = "CsvDataset"

    def __init__(self, names_node, columns, compression, header, delimiter, use_quote_delim,
                 na_value, select_cols, exclude_cols, ignore_errors=False):
        super().__init__(names_node, tuple(TensorSpec([], c.dtype) for c in columns),
                         compression)
        self.columns = columns
        self.header = header
        self.delimiter = delimiter
        self.use_quote_delim = use_quote_delim
        self.na_value = na_value
        self.select_cols = select_cols
        self.exclude_cols = exclude_cols
        self.ignore_errors = ignore_errors

    def _selected(self, fields, record):
        if self.select_cols is not None:
            if len(fields) <= self.select_cols[-1]:
                checks.fail("CsvDataset", f"Expect {self.select_cols[-1] + 1} fields but have "
                            f"{len(fields)} in record {record}")
            return [fields[i] for i in self.select_cols], list(self.select_cols)
        if self.exclude_cols is not None:
            excluded = set(self.exclude_cols)
            kept = [i for i in range(len(fields)) if i not in excluded]
        else:
            kept = list(range(len(fields)))
        if len(kept) != len(self.columns):
            checks.fail("CsvDataset", f"Expect {len(self.columns)} fields but have {len(kept)} "
                        f"in record {record}")
        return [fields[i] for i in kept], kept

    def _records(self, stream):
        records = csv_records(stream, self.delimiter, self.use_quote_delim, "CsvDataset",
                              self.ignore_errors)
        if self.header:
            next(records, None)
        for record, fields in enumerate(records):
            try:
                chosen, positions = self._selected(fields, record)
                yield tuple(_parse(text, column, position, record, self.na_value)
                            for text, column, position in zip(chosen, self.columns, positions))
            except InvalidArgumentError:
                if not self.ignore_errors:
                    raise


def _column_indices(cols, what, who):
    if cols is None:
        return None
    indices = [int(c) for c in cols]
    if any(i < 0 for i in indices) or indices != sorted(set(indices)):
        raise InvalidArgumentError(None, who, f"{who}: {what} must be non-negative, unique and "
                                   f"in ascending order, got {list(cols)}.")
    return indices


class CsvDataset(DatasetV2):
    """The records of CSV files (``tf.data.experimental.CsvDataset``): one element per record,
    a tuple of scalars, one per column.

    ``record_defaults`` gives each column its dtype and default: a dtype (or an empty tensor)
    makes the column required, a scalar is the value of an empty field (or one equal to
    ``na_value``).  ``select_cols`` / ``exclude_cols`` pick the columns."""

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None, name=None):
        who = "CsvDataset"
        columns = _columns(record_defaults, who)
        if select_cols is not None and exclude_cols is not None:
            raise InvalidArgumentError(None, who, "Either select_cols or exclude_cols should be "
                                       "empty")
        select = _column_indices(select_cols, "select_cols", who)
        exclude = _column_indices(exclude_cols, "exclude_cols", who)
        if select is not None and len(select) != len(columns):
            raise InvalidArgumentError(None, who, f"select_cols should match output size: "
                                       f"{len(select)} selected columns for {len(columns)} "
                                       "record_defaults")
        delimiter = _delimiter(field_delim, who)
        names = _filenames(filenames, who)
        super().__init__(CsvRecords(names._node, columns, _compression(compression_type, who),
                                    bool(header), delimiter, bool(use_quote_delim),
                                    _as_bytes(na_value), select, exclude))


# ---- make_csv_dataset --------------------------------------------------------------------------
def _matching_files(file_pattern):
    patterns = [file_pattern] if isinstance(file_pattern, (str, bytes, os.PathLike)) else \
        list(file_pattern)
    names = sorted({path for pattern in patterns for path in glob.glob(_as_str(pattern))})
    if not names:
        raise ValueError(f"No files match `file_pattern` {file_pattern!r}.")
    return names


def _first_records(names, compression, delimiter, use_quote_delim, count, ignore_errors):
    """Up to ``count`` records (lists of bytes) from the start of the files, in order."""
    rows = []
    for path in names:
        with open_file(path, compression) as stream:
            for fields in csv_records(stream, delimiter, use_quote_delim, "make_csv_dataset",
                                      ignore_errors):
                rows.append(fields)
                if len(rows) >= count:
                    return rows
    return rows


def _infer_dtype(values, na_value):
    """int32, int64, float32 or string: the narrowest dtype that the CSV parser reads every
    value (bytes) as, as TF infers (an empty value fits any)."""
    for dtype in (dtypes.int32, dtypes.int64, dtypes.float32):
        np_dtype = np.dtype(dtype.as_numpy_dtype)
        try:
            for record, value in enumerate(values):
                parsing.convert_field(value, 0, np_dtype, na_value, 0, record)
        except InvalidArgumentError:
            continue
        return dtype
    return dtypes.string


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",",
                     use_quote_delim=True, na_value="", header=True, num_epochs=None,
                     shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                     num_rows_for_inference=100, compression_type=None, ignore_errors=False,
                     encoding="utf-8"):
    """Batches of CSV records as ``(features, label)`` (or ``features`` without
    ``label_name``), ``features`` an OrderedDict from column name to a batch of values
    (``tf.data.experimental.make_csv_dataset``).

    Column names come from the header (or ``column_names``); column dtypes from
    ``column_defaults`` or, by default, from the first ``num_rows_for_inference`` records
    (int32, int64, float32 or string; an empty field becomes 0 or b"").  The files (and their
    records, through a buffer of ``shuffle_buffer_size``) are shuffled unless
    ``shuffle=False``; the data repeats ``num_epochs`` times (forever by default, and then
    every batch is full)."""
    who = "make_csv_dataset"
    names = _matching_files(file_pattern)
    compression = _compression(compression_type, who)
    delimiter = _delimiter(field_delim, who)
    na_value = _as_bytes(na_value)
    if column_names is None:
        if not header:
            raise ValueError("Expected `column_names` or `header` to be set.")
        first = _first_records(names[:1], compression, delimiter, use_quote_delim, 1, False)
        if not first:
            raise ValueError(f"{who}: {names[0]} is empty; it has no header to name the "
                             "columns.")
        column_names = [_as_str(name).strip() for name in first[0]]
    column_names = [_as_str(n) for n in column_names]
    if len(set(column_names)) != len(column_names):
        raise ValueError(f"{who}: column names must be unique, got {column_names}.")
    selected = list(range(len(column_names)))
    if select_columns is not None:
        try:
            selected = sorted({c if isinstance(c, int) else column_names.index(_as_str(c))
                               for c in select_columns})
        except ValueError:
            raise ValueError(f"{who}: select_columns {list(select_columns)} must be names or "
                             f"indices of the columns {column_names}.") from None
    chosen = [column_names[i] for i in selected]
    if label_name is not None and label_name not in chosen:
        raise ValueError(f"`label_name` provided must be one of the columns: {chosen}. "
                         f"Received: {label_name!r}.")
    if column_defaults is None:
        rows = _first_records(names, compression, delimiter, use_quote_delim,
                              num_rows_for_inference + (1 if header else 0), ignore_errors)
        rows = rows[1:] if header else rows
        column_defaults = []
        for i in selected:
            dtype = _infer_dtype([r[i] for r in rows if i < len(r)], na_value)
            column_defaults.append(np.array(b"" if dtype is dtypes.string else 0,
                                            dtype=dtype.as_numpy_dtype))
    elif len(column_defaults) != len(selected):
        raise ValueError(f"{who}: column_defaults has {len(column_defaults)} entries but "
                         f"{len(selected)} columns are selected.")
    files = DatasetV2.from_tensor_slices(names)
    if shuffle:
        files = files.shuffle(len(names), seed=shuffle_seed)
    columns = _columns(column_defaults, who)
    dataset = DatasetV2(CsvRecords(files._node, columns, compression, bool(header), delimiter,
                                   bool(use_quote_delim), na_value, selected, None,
                                   bool(ignore_errors)))
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)

    def to_features(*values):
        features = collections.OrderedDict(zip(chosen, values))
        if label_name is None:
            return features
        label = features.pop(label_name)
        return features, label
    dataset = dataset.map(to_features)
    return dataset.prefetch(AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)
