"""tf.data file sources: TextLineDataset, CsvDataset and make_csv_dataset, on temporary files
(plain, GZIP and ZLIB)."""
import collections
import gzip
import zlib

import numpy as np
import pytest

import hybridtf as tf

CSV = "name,age,score\nalice,30,1.5\nbob,,2.5\ncarol,25,\n"


def _write(path, text, compression=""):
    data = text.encode()
    if compression == "GZIP":
        data = gzip.compress(data)
    elif compression == "ZLIB":
        data = zlib.compress(data)
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_text_lines_without_their_endings(tmp_path, compression):
    path = _write(tmp_path / "t.txt", "line one\r\nline two\n\nlast", compression)
    ds = tf.data.TextLineDataset(path, compression_type=compression)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert list(ds.as_numpy_iterator()) == [b"line one", b"line two", b"", b"last"]
    assert ds.cardinality() == tf.data.UNKNOWN_CARDINALITY


def test_text_lines_of_several_files_in_order(tmp_path):
    first = _write(tmp_path / "a.txt", "a1\na2\n")
    second = _write(tmp_path / "b.txt", "b1\n")
    lines = [b"a1", b"a2", b"b1"]
    assert list(tf.data.TextLineDataset([first, second]).as_numpy_iterator()) == lines
    names = tf.data.Dataset.from_tensor_slices([first, second])
    assert list(tf.data.TextLineDataset(names).as_numpy_iterator()) == lines
    assert sorted(tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
                  .as_numpy_iterator()) == [first.encode(), second.encode()]


def test_text_line_errors(tmp_path):
    ds = tf.data.TextLineDataset(str(tmp_path / "missing.txt"))
    with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
        list(ds)
    with pytest.raises(ValueError, match="compression_type"):
        tf.data.TextLineDataset("x.txt", compression_type="BZIP2")


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_csv_dataset_with_defaults(tmp_path, compression):
    path = _write(tmp_path / "a.csv", CSV, compression)
    ds = tf.data.experimental.CsvDataset(
        path, [tf.string, tf.constant(0, tf.int32), tf.constant(-1.0)], header=True,
        compression_type=compression)
    assert ds.element_spec == (tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.int32),
                               tf.TensorSpec([], tf.float32))
    assert list(ds.as_numpy_iterator()) == [(b"alice", 30, 1.5), (b"bob", 0, 2.5),
                                            (b"carol", 25, -1.0)]


def test_csv_dataset_required_fields_and_bad_values(tmp_path):
    path = _write(tmp_path / "a.csv", CSV)
    ds = tf.data.experimental.CsvDataset(path, [tf.string, tf.int32, tf.float32], header=True)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Field 1 is required but missing in record 1"):
        list(ds)
    bad = _write(tmp_path / "bad.csv", "1,x\n")
    ds = tf.data.experimental.CsvDataset(bad, [0, 0])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Field 1 in record 0 is not a valid int32: x"):
        list(ds)
    short = _write(tmp_path / "short.csv", "1,2\n3\n")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 2 fields but have 1"):
        list(tf.data.experimental.CsvDataset(short, [0, 0]))


def test_csv_dataset_selects_columns_and_reads_quotes(tmp_path):
    path = _write(tmp_path / "q.csv", 'a;b;c\n"x;y";2;3.5\nz;4;5\n')
    ds = tf.data.experimental.CsvDataset(path, [tf.string, tf.float64], header=True,
                                         field_delim=";", select_cols=[0, 2])
    assert list(ds.as_numpy_iterator()) == [(b"x;y", 3.5), (b"z", 5.0)]
    ds = tf.data.experimental.CsvDataset(path, [tf.string, tf.int64], header=True,
                                         field_delim=";", exclude_cols=[2])
    assert list(ds.as_numpy_iterator()) == [(b"x;y", 2), (b"z", 4)]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="select_cols should match output size"):
        tf.data.experimental.CsvDataset(path, [tf.string], select_cols=[0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Either select_cols or exclude_cols"):
        tf.data.experimental.CsvDataset(path, [tf.string], select_cols=[0], exclude_cols=[1])


# One record, and the column defaults to read it with.
CSV_RECORDS = [
    ('"a,b",2', [[""], [0]]),
    ('1,"a""b"', [[0], [""]]),
    ('"NA",2', [[7], [0]]),
    (" 1 , 2 ", [[0], [0.0]]),
    ("1,", [[0], [""]]),
    ("+3,-3", [[0], [0]]),
    ("1,99999999999", [[0], [0]]),
    ("1,1_0", [[0], [0]]),
    ("1,0x10", [[0], [0]]),
    ("1,abc", [[0], [0.0]]),
    ("1,,a", [tf.constant([], tf.int32), tf.constant([], tf.float32), [""]]),
    ("1,2,3", [[0], [0]]),
    ('1,"ab"c', [[0], [""]]),
    ('a"b,1', [[""], [""]]),
    ('"abc,1', [[""], [""]]),
]


def _outcome(read):
    """The values read, or the error's message without the op's name."""
    try:
        return [np.asarray(v).tolist() for v in read()]
    except tf.errors.InvalidArgumentError as err:
        return str(err).split(": ", 1)[1]


@pytest.mark.parametrize("record,defaults", CSV_RECORDS)
def test_csv_dataset_parses_as_decode_csv(tmp_path, record, defaults):
    # TF's quoting rules and messages: a file's records read as tf.io.decode_csv reads them.
    path = _write(tmp_path / "one.csv", record + "\n")
    expected = _outcome(lambda: tf.io.decode_csv(record, defaults, na_value="NA"))
    ds = tf.data.experimental.CsvDataset(path, defaults, na_value="NA")
    assert _outcome(lambda: next(iter(ds))) == expected


def test_csv_dataset_quoted_fields_span_lines_and_must_end(tmp_path):
    path = _write(tmp_path / "q.csv", 'a,"one\ntwo\r\nthree"\rb,"x"\r\nc,""\n')
    ds = tf.data.experimental.CsvDataset(path, [tf.string, "empty"])
    assert list(ds.as_numpy_iterator()) == [(b"a", b"one\ntwo\r\nthree"), (b"b", b"x"),
                                            (b"c", b"empty")]
    unended = _write(tmp_path / "unended.csv", 'a,b\nc,"d\ne\n')
    ds = tf.data.experimental.CsvDataset(unended, [tf.string, tf.string])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="CsvDataset: Quoted field has to end with quote"):
        list(ds)


def test_make_csv_dataset_reads_with_the_same_parser(tmp_path):
    path = _write(tmp_path / "a.csv", 'name,count\n"x, y",1_0\n"z",2\n')
    ds = tf.data.experimental.make_csv_dataset(path, batch_size=2, num_epochs=1,
                                               shuffle=False)
    assert ds.element_spec["count"].dtype == tf.string     # 1_0 is no number to TF
    batch = next(iter(ds))
    assert batch["name"].numpy().tolist() == [b"x, y", b"z"]
    assert batch["count"].numpy().tolist() == [b"1_0", b"2"]
    bad = _write(tmp_path / "bad.csv", 'name,count\n"x"y,1\nz,2\n')
    with pytest.raises(tf.errors.InvalidArgumentError, match="Quote inside a string"):
        list(tf.data.experimental.make_csv_dataset(bad, batch_size=2, num_epochs=1,
                                                   shuffle=False))
    ds = tf.data.experimental.make_csv_dataset(bad, batch_size=2, num_epochs=1,
                                               shuffle=False, ignore_errors=True)
    assert [b["name"].numpy().tolist() for b in ds] == [[b"z"]]


def test_make_csv_dataset_infers_types_and_splits_the_label(tmp_path):
    path = _write(tmp_path / "a.csv", CSV)
    ds = tf.data.experimental.make_csv_dataset(path, batch_size=2, label_name="score",
                                               num_epochs=1, shuffle=False)
    features_spec, label_spec = ds.element_spec
    assert isinstance(features_spec, collections.OrderedDict)
    assert list(features_spec) == ["name", "age"]
    assert features_spec["age"] == tf.TensorSpec([None], tf.int32)
    assert label_spec == tf.TensorSpec([None], tf.float32)
    (features, label), (last_features, last_label) = list(ds)
    assert list(features["name"].numpy()) == [b"alice", b"bob"]
    assert features["age"].numpy().tolist() == [30, 0]         # an empty field reads as 0
    assert label.numpy().tolist() == [1.5, 2.5]
    assert last_label.numpy().tolist() == [0.0]


def test_make_csv_dataset_repeats_shuffles_and_selects(tmp_path):
    path = _write(tmp_path / "a.csv", CSV)
    ds = tf.data.experimental.make_csv_dataset(path, batch_size=2, select_columns=["age"],
                                               column_defaults=[tf.constant(-1, tf.int64)],
                                               shuffle_seed=1)
    assert ds.cardinality() == tf.data.INFINITE_CARDINALITY
    assert ds.element_spec == collections.OrderedDict(age=tf.TensorSpec([2], tf.int64))
    ages = np.concatenate([b["age"].numpy() for b in ds.take(6)])
    assert sorted(ages.tolist()) == sorted([30, -1, 25] * 4)
    with pytest.raises(ValueError, match="`label_name` provided must be one of the columns"):
        tf.data.experimental.make_csv_dataset(path, batch_size=2, label_name="nope")
    with pytest.raises(ValueError, match="No files match"):
        tf.data.experimental.make_csv_dataset(str(tmp_path / "*.nothing"), batch_size=2)


def test_interleave_of_the_lines_of_several_files(tmp_path):
    first = _write(tmp_path / "a.csv", "header\na1\na2\na3\n")
    second = _write(tmp_path / "b.csv", "header\nb1\nb2\n")
    files = tf.data.Dataset.from_tensor_slices([first, second])
    lines = files.interleave(lambda name: tf.data.TextLineDataset(name).skip(1),
                             cycle_length=2)
    assert lines.element_spec == tf.TensorSpec([], tf.string)
    assert list(lines.as_numpy_iterator()) == [b"a1", b"b1", b"a2", b"b2", b"a3"]
    tagged = files.flat_map(lambda name: tf.data.TextLineDataset(name).skip(1).map(
        lambda line: (line, name)))
    assert tagged.element_spec == (tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.string))
    assert [pair[1] for pair in tagged.as_numpy_iterator()] == [first.encode()] * 3 + \
        [second.encode()] * 2
