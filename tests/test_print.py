"""tf.print writes TF's format to stderr (or a chosen stream)."""
import io
import sys

import numpy as np

import hybridtf as tf


def _printed(*args, **kwargs):
    stream = io.StringIO()
    tf.print(*args, output_stream=stream, **kwargs)
    return stream.getvalue()


def test_print_formats_like_tf():
    assert _printed(tf.constant([1, 2, 3])) == "[1 2 3]\n"
    assert _printed("loss:", tf.constant(0.25)) == "loss: 0.25\n"
    assert _printed(tf.constant(6.0)) == "6\n"
    assert _printed(tf.constant([[1, 2], [3, 4]])) == "[[1 2]\n [3 4]]\n"
    assert _printed(tf.range(10)) == "[0 1 2 ... 7 8 9]\n"
    assert _printed(tf.range(10), summarize=-1) == "[0 1 2 3 4 5 6 7 8 9]\n"
    assert _printed(tf.constant(True)) == "true\n"
    assert _printed(tf.constant("fizz")) == "fizz\n"
    assert _printed(1, 2, sep=",", end=";") == "1,2;"
    assert _printed({"a": tf.constant(1)}) == "{'a': 1}\n"
    assert _printed(tf.Variable([1.5, 2.0])) == "[1.5 2]\n"


def test_print_uses_tf_float_digits():
    # The seed notebook's while-loop output: float32 values with up to 9 significant digits.
    values = tf.constant([0.207458138, 0.0565127134, 0.92794323, 0.1])
    assert _printed(values, summarize=-1) == "[0.207458138 0.0565127134 0.92794323 0.1]\n"
    assert _printed(tf.constant(0.1, tf.float64)) == "0.1\n"
    assert _printed(tf.constant(1 / 3, tf.float64)) == "0.33333333333333331\n"
    assert _printed(tf.constant([1e-8, 12345678.0])) == "[1e-08 12345678]\n"


def test_print_defaults_to_stderr(capsys):
    tf.print(tf.constant([1.0, 2.5]))
    captured = capsys.readouterr()
    assert captured.err == "[1 2.5]\n" and captured.out == ""
    tf.print("to stdout", output_stream=sys.stdout)
    assert capsys.readouterr().out == "to stdout\n"


def test_print_to_file(tmp_path):
    path = tmp_path / "log.txt"
    tf.print(tf.constant(np.array([3, 4])), output_stream=f"file://{path}")
    assert path.read_text() == "[3 4]\n"
