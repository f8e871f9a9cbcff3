"""``tf.io``: files, CSV records, images (decode and encode) and ``tf.io.gfile``, eagerly, in
``tf.function`` and in ``tf.data`` pipelines, with TF's results and errors.

``data/tf_png_decode.npz`` holds TensorFlow 2.21's ``decode_png`` of PNG files of every color
type and bit depth (rebuilt here byte by byte from the samples stored beside them, by
``image_files``) for each ``channels`` and dtype; ``data/tf_jpeg_decode.npz`` a JPEG file and
TF's decodings of it.
"""
import io
import os
import pathlib
import re
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from image_files import bmp_bytes, png_bytes

IAE = tf.errors.InvalidArgumentError
DATA = pathlib.Path(__file__).parent / "data"
try:
    from PIL import Image
except ImportError:      # the tests that need Pillow (JPEG, GIF, Pillow's files) are skipped
    Image = None
needs_pillow = pytest.mark.skipif(Image is None,
                                  reason='needs Pillow: pip install "hybridtf[images]"')


def _pillow_bytes(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


# ---- read_file / write_file ---------------------------------------------------------------------
def test_write_file_then_read_file(tmp_path):
    path = tmp_path / "sub" / "dir" / "data.bin"
    assert tf.io.write_file(str(path), b"\x00bytes\xff") is None
    content = tf.io.read_file(str(path))
    assert content.dtype == tf.string and content.shape == ()
    assert content.numpy() == b"\x00bytes\xff"
    tf.io.write_file(tf.constant(str(path)), tf.constant("héllo"))
    assert path.read_bytes() == "héllo".encode("utf-8")


def test_read_file_and_write_file_errors(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        tf.io.read_file(str(tmp_path / "missing"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        tf.io.read_file(str(tmp_path))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        tf.io.write_file(str(tmp_path), b"x")
    with pytest.raises(IAE, match="must be a scalar"):
        tf.io.read_file([str(tmp_path / "a")])
    with pytest.raises(IAE, match="must be a scalar"):
        tf.io.write_file(str(tmp_path / "a"), [b"a", b"b"])
    with pytest.raises(TypeError, match="tf.string"):
        tf.io.read_file(3)


def test_write_file_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "model.txt"
    tf.io.write_file(str(path), b"old")

    def killed(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(tf.errors.ResourceExhaustedError, match="No space left"):
        tf.io.write_file(str(path), b"new contents")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["model.txt"]     # no temporary left behind


def test_file_ops_run_on_every_call_of_a_function(tmp_path):
    path = str(tmp_path / "counter.txt")

    @tf.function
    def bump(text):
        tf.io.write_file(path, text)
        return tf.io.read_file(path)
    assert bump(tf.constant(b"one")).numpy() == b"one"
    assert bump(tf.constant(b"two")).numpy() == b"two"

    @tf.function
    def read():
        return tf.io.read_file(path)
    pathlib.Path(path).write_bytes(b"changed outside")
    assert read().numpy() == b"changed outside"
    pathlib.Path(path).write_bytes(b"and again")
    assert read().numpy() == b"and again"


def test_a_function_that_writes_files_saves_and_loads(tmp_path):
    target = tmp_path / "written.txt"

    class Writer(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
        def write(self, contents):
            tf.io.write_file(str(target), contents)
            return tf.io.read_file(str(target))
    tf.saved_model.save(Writer(), str(tmp_path / "model"))
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    assert loaded.write(tf.constant(b"from the loaded function")).numpy() == \
        b"from the loaded function"
    assert target.read_bytes() == b"from the loaded function"


# ---- decode_csv --------------------------------------------------------------------------------
def _values(tensors):
    return [(t.dtype.name, np.asarray(t).tolist()) for t in tensors]


# (records, record_defaults, options) -> TF 2.21's (dtype, values) per column
CSV_CASES = [
    (["1,2.5,a", "3,,b"], [[0], [1.0], [""]], {},
     [("int32", [1, 3]), ("float32", [2.5, 1.0]), ("string", [b"a", b"b"])]),
    ([["1,2", "3,4"]], [[0], [0]], {}, [("int32", [[1, 3]]), ("int32", [[2, 4]])]),
    ("1,2", [[0], [0]], {}, [("int32", 1), ("int32", 2)]),
    ('"a,b",2', [[""], [0]], {}, [("string", b"a,b"), ("int32", 2)]),
    ("1;2", [[0], [0]], {"field_delim": ";"}, [("int32", 1), ("int32", 2)]),
    ("NA,2", [[7], [0]], {"na_value": "NA"}, [("int32", 7), ("int32", 2)]),
    ('"NA",2', [[7], [0]], {"na_value": "NA"}, [("int32", 7), ("int32", 2)]),
    ("1,2,3,4", [[0], [0]], {"select_cols": [1, 3]}, [("int32", 2), ("int32", 4)]),
    (" 1 , 2 ", [[0], [0.0]], {}, [("int32", 1), ("float32", 2.0)]),
    ("1,99999999999", [[0], tf.constant(0, tf.int64)], {},
     [("int32", 1), ("int64", 99999999999)]),
    ('1,"a""b"', [[0], [""]], {}, [("int32", 1), ("string", b'a"b')]),
    ("1,inf", [[0], [0.0]], {}, [("int32", 1), ("float32", float("inf"))]),
    ("1,1e3", [[0], [0.0]], {}, [("int32", 1), ("float32", 1000.0)]),
    ("1,", [[0], [""]], {}, [("int32", 1), ("string", b"")]),
    (",", [[""], [""]], {}, [("string", b""), ("string", b"")]),
    ('"a\nb",c', [[""], [""]], {}, [("string", b"a\nb"), ("string", b"c")]),
    ("1\t2", [[0], [0]], {"field_delim": "\t"}, [("int32", 1), ("int32", 2)]),
    ("1, 2", [[0], [""]], {}, [("int32", 1), ("string", b" 2")]),
    ("+3,-3", [[0], [0]], {}, [("int32", 3), ("int32", -3)]),
    ("3.,.5", [[0.0], [0.0]], {}, [("float32", 3.0), ("float32", 0.5)]),
    ("1,2", [[0.0], tf.constant(0, tf.float64)], {}, [("float32", 1.0), ("float64", 2.0)]),
    (["1,2,3"], [[0], [0]], {"select_cols": [0, 1]}, [("int32", [1]), ("int32", [2])]),
]


@pytest.mark.parametrize("records,defaults,options,expected", CSV_CASES)
def test_decode_csv_matches_tensorflow(records, defaults, options, expected):
    assert _values(tf.io.decode_csv(records, defaults, **options)) == expected


def test_decode_csv_with_quotes_off():
    assert _values(tf.io.decode_csv('a"b,1', [[""], [0]], use_quote_delim=False)) == \
        [("string", b'a"b'), ("int32", 1)]
    with pytest.raises(IAE, match="Expect 2 fields but have 3"):
        tf.io.decode_csv('"a,b",2', [[""], [0]], use_quote_delim=False)


CSV_ERRORS = [
    ("1,,a", [tf.constant([], tf.int32), tf.constant([], tf.float32), [""]], {},
     "Field 1 is required but missing in record 0!"),
    ("1,2,3", [[0], [0]], {}, "Expect 2 fields but have 3 in record 0"),
    (["1,2", "3"], [[0], [0]], {}, "Expect 2 fields but have 1 in record 1"),
    ("", [[5]], {}, "Expect 1 fields but have 0 in record 0"),
    ("1,x", [[0], [0]], {}, "Field 1 in record 0 is not a valid int32: x"),
    ("1,2.5", [[0], [0]], {}, "not a valid int32: 2.5"),
    ("1,0x10", [[0], [0]], {}, "not a valid int32: 0x10"),
    ("1,1_0", [[0], [0]], {}, "not a valid int32: 1_0"),
    ("1,99999999999", [[0], [0]], {}, "not a valid int32"),
    ("1,abc", [[0], [0.0]], {}, "not a valid float: abc"),
    ('1,"ab"c', [[0], [""]], {}, "Quote inside a string has to be escaped"),
    ('"abc,1', [[""], [""]], {}, "Quoted field has to end with quote"),
    ('a"b,1', [[""], [""]], {}, "Unquoted fields cannot have quotes/CRLFs inside"),
    ("a,b\n", [[""], [""]], {}, "Unquoted fields cannot have quotes/CRLFs inside"),
    (["1,2"], [[0], [0]], {"field_delim": "ab"}, "field_delim should be only 1 char"),
    (["1,2"], [[0], [0.0, 1.0]], {}, "There should only be 1 default per field"),
    (["1,2", "3,4"], [[0], [0]], {"select_cols": [0, 5]}, "Expect 2 fields but have 1"),
    ("NA,NA", [[0], tf.zeros([0], tf.string)], {"na_value": "NA"},
     "Field 1 is required but missing"),
]


@pytest.mark.parametrize("records,defaults,options,message", CSV_ERRORS)
def test_decode_csv_errors_match_tensorflow(records, defaults, options, message):
    with pytest.raises(IAE, match=re.escape(message)):
        tf.io.decode_csv(records, defaults, **options)


def test_decode_csv_argument_errors():
    with pytest.raises(ValueError, match="Length of select_cols"):
        tf.io.decode_csv(["1,2"], [[0]], select_cols=[0, 1])
    with pytest.raises(ValueError, match="negative"):
        tf.io.decode_csv(["1,2"], [[0], [0]], select_cols=[-1, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        tf.io.decode_csv(["1,2"], [[0], [0.0]], select_cols=[1, 0])
    with pytest.raises(TypeError, match="bool"):
        tf.io.decode_csv(["1,2"], [[0], [True]])
    with pytest.raises(ValueError, match="must not be empty"):
        tf.io.decode_csv(["1,2"], [])


@given(hnp.arrays(np.int32, st.tuples(st.integers(1, 4), st.integers(1, 3)),
                  elements=st.integers(-10**6, 10**6)),
       hnp.arrays(np.float64, st.integers(1, 4), elements=st.floats(-1e6, 1e6)))
def test_decode_csv_against_python_formatting(ints, floats):
    rows = ints.shape[0]
    floats = np.resize(floats, rows)
    records = [",".join([str(v) for v in ints[r]] + [repr(float(floats[r])), f'"x,{r}"'])
               for r in range(rows)]
    defaults = [[0]] * ints.shape[1] + [tf.constant(0.0, tf.float64), [""]]
    columns = tf.io.decode_csv(records, defaults)
    for c in range(ints.shape[1]):
        np.testing.assert_array_equal(columns[c].numpy(), ints[:, c])
    np.testing.assert_array_equal(columns[-2].numpy(), floats)
    assert columns[-1].numpy().tolist() == [f"x,{r}".encode() for r in range(rows)]


def test_decode_csv_in_a_function_and_a_text_pipeline(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def parse(lines):
        label, score, name = tf.io.decode_csv(lines, [[0], [0.0], [""]])
        return label * 2, score, name
    label, score, name = parse(tf.constant(["1,0.5,a", "2,,b"]))
    assert label.numpy().tolist() == [2, 4] and score.numpy().tolist() == [0.5, 0.0]
    assert name.numpy().tolist() == [b"a", b"b"]
    with pytest.raises(IAE, match="Expect 3 fields"):
        parse(tf.constant(["1,2"]))

    path = tmp_path / "table.csv"
    path.write_text("1,0.5\n2,1.5\n3,2.5\n")
    dataset = tf.data.TextLineDataset(str(path)).map(
        lambda line: tf.io.decode_csv(line, [[0], [0.0]])).batch(3)
    labels, scores = next(iter(dataset))
    assert labels.numpy().tolist() == [1, 2, 3] and scores.numpy().tolist() == [0.5, 1.5, 2.5]


# ---- PNG ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tf_png():
    with np.load(DATA / "tf_png_decode.npz") as f:
        return {k: f[k] for k in f.files}


def _fixture_png(fixture, name):
    color, depth, interlace = (int(v) for v in fixture[f"{name}:meta"])
    palette = fixture.get(f"{name}:palette")
    trns = fixture.get(f"{name}:trns")
    return png_bytes(fixture[f"{name}:samples"], color, depth, palette,
                     None if trns is None else trns.tobytes(), bool(interlace)), color, depth


def test_decode_png_matches_tensorflow(tf_png):
    names = sorted({k.split(":")[0] for k in tf_png})
    assert len(names) == 23
    for name in names:
        data, color, depth = _fixture_png(tf_png, name)
        for channels in (0, 1, 3, 4):
            for dtype in ("uint8", "uint16"):
                expected = tf_png[f"{name}:c{channels}:{dtype}"]
                out = tf.io.decode_png(data, channels=channels, dtype=dtype).numpy()
                assert out.shape == expected.shape and out.dtype == expected.dtype, name
                if channels == 4 and depth < 8 and f"{name}:trns" not in tf_png:
                    # TF gives the alpha it adds to 1-, 2- and 4-bit gray and palette images the
                    # largest value of the file's bit depth (1, 3, 15): not opaque, a TF bug.
                    # Opaque is 255 / 65535.
                    assert (out[..., 3] == np.iinfo(out.dtype).max).all(), name
                    np.testing.assert_array_equal(out[..., :3], expected[..., :3], err_msg=name)
                elif channels == 1 and color == 6 or (channels == 1 and color == 2
                                                      and depth == 16):
                    # libpng's gray of RGBA, and of 16-bit RGB, rounds differently in places.
                    tolerance = 1 if dtype == "uint8" and depth == 8 else 257 * (depth == 8) + 4
                    assert np.abs(out.astype(int) - expected).max() <= tolerance, name
                else:
                    np.testing.assert_array_equal(out, expected, err_msg=f"{name} {channels}")


@given(st.sampled_from([1, 2, 3, 4]), st.sampled_from([np.uint8, np.uint16]),
       st.integers(1, 9), st.integers(1, 9), st.sampled_from([-1, 0, 1, 9]), st.data())
def test_encode_png_round_trips(channels, dtype, height, width, compression, data):
    image = data.draw(hnp.arrays(dtype, (height, width, channels)))
    encoded = tf.io.encode_png(image, compression=compression)
    assert encoded.dtype == tf.string and encoded.shape == ()
    decoded = tf.io.decode_png(encoded, dtype=dtype)
    assert decoded.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(decoded.numpy(), image)


@needs_pillow
def test_png_files_of_pillow_and_ours_read_the_same():
    rng = np.random.default_rng(0)
    for mode, channels in (("L", 1), ("LA", 2), ("RGB", 3), ("RGBA", 4)):
        # a smooth image, so that Pillow's encoder uses every filter type
        y, x = np.mgrid[0:13, 0:17]
        pixels = ((x[..., None] * 7 + y[..., None] * 3 + np.arange(channels) * 50
                   + rng.integers(0, 3, (13, 17, channels))) % 256).astype(np.uint8)
        pillow_file = _pillow_bytes(Image.fromarray(pixels.squeeze(-1) if channels == 1
                                                    else pixels, mode), "PNG", optimize=True)
        np.testing.assert_array_equal(tf.io.decode_png(pillow_file).numpy(), pixels)
        ours = tf.io.encode_png(pixels).numpy()
        np.testing.assert_array_equal(
            np.asarray(Image.open(io.BytesIO(ours))).reshape(pixels.shape), pixels)


def test_png_interlaced_split_and_odd_sizes():
    rng = np.random.default_rng(1)
    for height, width in ((1, 1), (1, 9), (9, 1), (8, 8), (10, 13)):
        samples = rng.integers(0, 65536, (height, width, 3))
        data = png_bytes(samples, 2, 16, interlace=True, idat_pieces=3)
        np.testing.assert_array_equal(tf.io.decode_png(data, dtype=tf.uint16).numpy(), samples)


def _with_idat(png, scanlines):
    """``png`` with its image data replaced by the (compressed) ``scanlines``."""
    payload = zlib.compress(scanlines)
    idat = struct.pack(">I", len(payload)) + b"IDAT" + payload + struct.pack(
        ">I", zlib.crc32(b"IDAT" + payload))
    return png[:png.index(b"IDAT") - 4] + idat + png[png.index(b"IEND") - 4:]


def test_corrupt_png_files_raise_invalid_argument():
    good = tf.io.encode_png(np.zeros((4, 4, 3), np.uint8)).numpy()
    flipped = bytearray(good)
    flipped[40] ^= 0xFF
    gray = png_bytes(np.zeros((2, 2, 1)), 0, 8)
    cases = [(good[:-12], "truncated"), (bytes(flipped), "CRC"),
             (good[:8] + good[33:], "first chunk is not IHDR"),
             (b"\x89PNG\r\n\x1a\n", "truncated"),
             (_with_idat(gray, b"\x07\x00\x00\x00\x00\x00"), "invalid filter type"),
             (_with_idat(gray, b"\x00\x00\x00"), "image data are truncated"),
             (gray[:gray.index(b"IDAT") + 4] + b"junk" + gray[gray.index(b"IDAT") + 8:],
              "CRC"),
             (png_bytes(np.zeros((2, 2, 1)), 3, 8), "without a palette")]
    for data, message in cases:
        with pytest.raises(IAE, match=message):
            tf.io.decode_png(data)


def test_encode_png_rejects_bad_images():
    with pytest.raises(TypeError, match="float32"):
        tf.io.encode_png(np.zeros((2, 2, 3), np.float32))
    with pytest.raises(IAE, match="3-D"):
        tf.io.encode_png(np.zeros((2, 2), np.uint8))
    with pytest.raises(IAE, match="1, 2, 3, or 4 channels"):
        tf.io.encode_png(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(IAE, match="compression should be in \\[-1,9\\]"):
        tf.io.encode_png(np.zeros((2, 2, 3), np.uint8), compression=10)
    with pytest.raises(IAE, match="empty"):
        tf.io.encode_png(np.zeros((0, 2, 3), np.uint8))


# ---- BMP, JPEG, GIF, decode_image ----------------------------------------------------------------
@needs_pillow
def test_decode_bmp():
    rng = np.random.default_rng(2)
    rgba = rng.integers(0, 256, (3, 5, 4)).astype(np.uint8)
    for top_down in (False, True):
        np.testing.assert_array_equal(
            tf.io.decode_bmp(bmp_bytes(rgba[..., :3], 24, top_down)).numpy(), rgba[..., :3])
        np.testing.assert_array_equal(
            tf.io.decode_bmp(bmp_bytes(rgba, 32, top_down)).numpy(), rgba)
    np.testing.assert_array_equal(tf.io.decode_bmp(bmp_bytes(rgba[..., :1], 8)).numpy(),
                                  rgba[..., :1])
    np.testing.assert_array_equal(tf.io.decode_bmp(bmp_bytes(rgba, 32), channels=3).numpy(),
                                  rgba[..., :3])
    with_alpha = tf.io.decode_bmp(bmp_bytes(rgba[..., :3], 24), channels=4).numpy()
    assert (with_alpha[..., 3] == 255).all()
    pillow_file = _pillow_bytes(Image.fromarray(rgba[..., :3]), "BMP")
    np.testing.assert_array_equal(tf.io.decode_image(pillow_file).numpy(), rgba[..., :3])
    with pytest.raises(IAE, match="Trying to decode PNG format using decode_bmp"):
        tf.io.decode_bmp(tf.io.encode_png(rgba))
    with pytest.raises(IAE, match="truncated"):
        tf.io.decode_bmp(bmp_bytes(rgba, 32)[:-5])
    with pytest.raises(IAE, match="must be 0, 3, 4 for BMP"):
        tf.io.decode_image(bmp_bytes(rgba, 32), channels=1)
    one_bit = _pillow_bytes(Image.fromarray(rgba[..., 0]).convert("1"), "BMP")
    with pytest.raises(IAE, match="1, 3 or 4"):
        tf.io.decode_bmp(one_bit)


@pytest.fixture(scope="module")
def tf_jpeg():
    with np.load(DATA / "tf_jpeg_decode.npz") as f:
        return {k: f[k] for k in f.files}


@needs_pillow
def test_decode_jpeg_is_within_a_few_levels_of_tensorflow(tf_jpeg):
    data, gray = tf_jpeg["jpeg"].tobytes(), tf_jpeg["gray_jpeg"].tobytes()
    for out, key in [(tf.io.decode_jpeg(data), "c0"), (tf.io.decode_jpeg(data, channels=1), "c1"),
                     (tf.io.decode_jpeg(data, ratio=2), "ratio2"),
                     (tf.io.decode_jpeg(data, ratio=8), "ratio8"),
                     (tf.io.decode_image(gray), "gray_c0"),
                     (tf.io.decode_jpeg(gray, channels=3), "gray_c3")]:
        expected = tf_jpeg[key]
        assert out.shape == expected.shape and out.dtype == tf.uint8, key
        assert np.abs(out.numpy().astype(int) - expected).max() <= 4, key


@needs_pillow
def test_decode_jpeg_options_and_errors(tf_jpeg):
    data = tf_jpeg["jpeg"].tobytes()
    frame = data.index(b"\xff\xc0") + 5          # the height and width in the frame header
    claims_huge = data[:frame] + struct.pack(">HH", 65500, 65500) + data[frame + 4:]
    with pytest.raises(tf.errors.ResourceExhaustedError, match="MAX_IMAGE_PIXELS"):
        tf.io.decode_jpeg(claims_huge)
    with pytest.raises(IAE, match="JPEG does not support 4 channels"):
        tf.io.decode_jpeg(data, channels=4)
    with pytest.raises(IAE, match="`channels` must be 0, 1, 3 or 4 but got 2"):
        tf.io.decode_jpeg(data, channels=2)
    with pytest.raises(IAE, match="ratio must be 1, 2, 4 or 8"):
        tf.io.decode_jpeg(data, ratio=3)
    truncated = data[:-60]
    with pytest.raises(IAE, match="Invalid JPEG data"):
        tf.io.decode_jpeg(truncated)
    recovered = tf.io.decode_jpeg(truncated, try_recover_truncated=True).numpy()
    assert recovered.shape == (40, 56, 3)
    np.testing.assert_array_equal(recovered[:16], tf.io.decode_jpeg(data).numpy()[:16])


@needs_pillow
def test_decode_gif_frames():
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, (4, 5, 3)).astype(np.uint8) for _ in range(3)]
    # Pillow quantises to a palette: compare with Pillow's own reading of the file.
    pictures = [Image.fromarray(f) for f in frames]
    data = _pillow_bytes(pictures[0], "GIF", save_all=True, append_images=pictures[1:])
    reader = Image.open(io.BytesIO(data))
    expected = []
    for index in range(reader.n_frames):
        reader.seek(index)
        expected.append(np.asarray(reader.convert("RGB")))
    expected = np.stack(expected)
    np.testing.assert_array_equal(tf.io.decode_gif(data).numpy(), expected)
    np.testing.assert_array_equal(tf.io.decode_image(data).numpy(), expected)
    np.testing.assert_array_equal(tf.io.decode_image(data, expand_animations=False).numpy(),
                                  expected[0])
    with pytest.raises(IAE, match="must be 0, 3 for GIF"):
        tf.io.decode_image(data, channels=1)
    with pytest.raises(IAE, match="Invalid GIF data"):
        tf.io.decode_gif(data[:len(data) // 2])
    assert tf.io.decode_gif(tf.io.encode_png(frames[0])).shape == (1, 4, 5, 3)


@needs_pillow
def test_decode_image_reads_the_format_and_converts_dtypes():
    image = np.random.default_rng(4).integers(0, 256, (3, 4, 3)).astype(np.uint8)
    png = tf.io.encode_png(image)
    jpeg = _pillow_bytes(Image.fromarray(image), "JPEG", quality=95)
    for data in (png, jpeg, bmp_bytes(image, 24)):
        assert tf.io.decode_image(data).shape == (3, 4, 3)
        assert tf.io.decode_png(data).shape == (3, 4, 3)     # TF decodes by content
    np.testing.assert_array_equal(tf.io.decode_image(png, dtype=tf.uint16).numpy(),
                                  image.astype(np.uint16) * 257)
    as_float = tf.io.decode_image(png, dtype=tf.float32)
    assert as_float.dtype == tf.float32
    np.testing.assert_allclose(as_float.numpy(), image / 255.0, rtol=1e-6)
    deep = (np.arange(12, dtype=np.uint16) * 5000 + 7).reshape(2, 2, 3)
    np.testing.assert_allclose(tf.io.decode_image(tf.io.encode_png(deep), dtype=tf.float64)
                               .numpy(), deep / 65535.0, rtol=1e-12)
    with pytest.raises(IAE, match="Unknown image file format"):
        tf.io.decode_image(b"hello world")
    with pytest.raises(IAE, match="must be scalar"):
        tf.io.decode_image([png.numpy()])
    with pytest.raises(TypeError, match="uint8 or uint16"):
        tf.io.decode_png(png, dtype=tf.float32)
    assert tf.image.decode_png is tf.io.decode_png and tf.image.encode_png is tf.io.encode_png


@needs_pillow
def test_decoded_shapes_inside_a_function():
    image = np.random.default_rng(5).integers(0, 256, (3, 4, 3)).astype(np.uint8)
    png = tf.io.encode_png(image)
    shapes = {}

    @tf.function
    def decode(data):
        outputs = (tf.io.decode_png(data), tf.io.decode_png(data, channels=4),
                   tf.io.decode_image(data), tf.io.decode_image(data, expand_animations=False),
                   tf.io.decode_gif(data))
        shapes["traced"] = [o.shape.as_list() if o.shape.rank is not None else None
                            for o in outputs]
        return outputs
    outputs = decode(png)
    assert shapes["traced"] == [[None, None, None], [None, None, 4], None, [None, None, None],
                                [None, None, None, 3]]
    np.testing.assert_array_equal(outputs[0].numpy(), image)
    assert outputs[1].shape == (3, 4, 4) and outputs[4].shape == (1, 3, 4, 3)

    @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.uint8)])
    def round_trip(pixels):
        return tf.io.decode_png(tf.io.encode_png(pixels, compression=9), channels=3)
    np.testing.assert_array_equal(round_trip(image).numpy(), image)
    jpeg = _pillow_bytes(Image.fromarray(image), "JPEG", quality=95)
    gray = tf.function(lambda data: tf.io.decode_jpeg(data, channels=1))(jpeg)
    np.testing.assert_array_equal(gray.numpy(), tf.io.decode_jpeg(jpeg, channels=1).numpy())
    bmp = tf.function(lambda data: tf.io.decode_bmp(data))(bmp_bytes(image, 24))
    np.testing.assert_array_equal(bmp.numpy(), image)

    @tf.function
    def resize_any(data):    # a GIF would be 4-D: the rank is unknown, as in TF
        return tf.image.resize(tf.io.decode_image(data), [2, 2])
    with pytest.raises(ValueError, match="expand_animations=False"):
        resize_any(png)


# ---- without Pillow ----------------------------------------------------------------------------
@needs_pillow
def test_without_pillow_jpeg_and_gif_say_how_to_install_it(monkeypatch):
    jpeg = _pillow_bytes(Image.fromarray(np.zeros((2, 2, 3), np.uint8)), "JPEG")
    gif = _pillow_bytes(Image.fromarray(np.zeros((2, 2, 3), np.uint8)), "GIF")
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    for decode, data in ((tf.io.decode_jpeg, jpeg), (tf.io.decode_image, gif)):
        with pytest.raises(ImportError, match='pip install "hybridtf\\[images\\]"'):
            decode(data)
    png = tf.io.encode_png(np.ones((2, 2, 3), np.uint8))      # PNG needs no Pillow
    assert tf.io.decode_image(png).numpy().sum() == 12


def test_hybridtf_imports_without_pillow():
    code = ("import sys; sys.modules['PIL'] = None; import hybridtf as tf\n"
            "png = tf.io.encode_png(tf.ones([2, 3, 1], tf.uint8))\n"
            "assert tf.io.decode_png(png).shape == (2, 3, 1)\n"
            "try:\n"
            "    tf.io.decode_jpeg(b'\\xff\\xd8\\xff\\xe0')\n"
            "except ImportError as err:\n"
            "    print(err)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert 'pip install "hybridtf[images]"' in result.stdout


# ---- pipelines ----------------------------------------------------------------------------------
def _write_images(directory, count=3):
    rng = np.random.default_rng(6)
    images = []
    for i in range(count):
        image = rng.integers(0, 256, (5 + i, 7, 3)).astype(np.uint8)
        tf.io.write_file(str(directory / f"image{i}.png"), tf.io.encode_png(image))
        images.append(image)
    return images


def test_image_files_through_a_dataset_pipeline(tmp_path):
    images = _write_images(tmp_path)
    files = tf.data.Dataset.list_files(str(tmp_path / "*.png"), shuffle=False)
    dataset = files.map(lambda f: tf.image.resize(
        tf.io.decode_png(tf.io.read_file(f), channels=3), [4, 4]))
    assert dataset.element_spec == tf.TensorSpec([4, 4, 3], tf.float32)
    results = [x.numpy() for x in dataset]
    for image, result in zip(images, results):
        np.testing.assert_allclose(result, tf.image.resize(image, [4, 4]).numpy())

    names = sorted(tf.io.gfile.glob(str(tmp_path / "*.png")))
    decoded = tf.data.Dataset.from_tensor_slices(names).map(
        lambda f: tf.image.decode_png(tf.io.read_file(f)))
    for image, result in zip(images, decoded):
        np.testing.assert_array_equal(result.numpy(), image)
    batches = decoded.map(lambda x: tf.image.resize(tf.image.convert_image_dtype(x, tf.float32),
                                                    [3, 3])).batch(2)
    assert [b.shape for b in batches] == [(2, 3, 3, 3), (1, 3, 3, 3)]


# ---- gfile -------------------------------------------------------------------------------------
def test_gfile_files_and_directories(tmp_path):
    gfile = tf.io.gfile
    root = str(tmp_path)
    gfile.makedirs(os.path.join(root, "a", "b"))
    gfile.makedirs(os.path.join(root, "a", "b"))               # existing: fine
    gfile.mkdir(os.path.join(root, "a"))
    (tmp_path / "f.txt").write_text("line1\nline2\nline3")
    assert gfile.exists(root + "/f.txt") and not gfile.exists(root + "/nope")
    assert gfile.exists(pathlib.Path(root) / "f.txt") and gfile.exists(root.encode())
    assert gfile.exists(tf.constant(root)) and gfile.exists("file://" + root)
    assert gfile.isdir(root) and not gfile.isdir(root + "/f.txt")
    assert sorted(gfile.listdir(root)) == ["a", "f.txt"]
    assert sorted(gfile.glob(root + "/*")) == [root + "/a", root + "/f.txt"]
    assert gfile.glob([root + "/*.txt", root + "/a"]) == [root + "/f.txt", root + "/a"]
    assert gfile.glob(root + "/*.zzz") == []
    stat = gfile.stat(root + "/f.txt")
    assert (stat.length, stat.is_directory) == (17, False) and stat.mtime_nsec > 0
    assert gfile.stat(root).is_directory
    gfile.copy(root + "/f.txt", root + "/g.txt")
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.copy(root + "/f.txt", root + "/g.txt")
    gfile.copy(root + "/f.txt", root + "/g.txt", overwrite=True)
    gfile.rename(root + "/g.txt", root + "/h.txt")
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.rename(root + "/f.txt", root + "/h.txt")
    gfile.rename(root + "/h.txt", root + "/a/h.txt", overwrite=True)
    assert sorted(gfile.walk(root)) == [(root, ["a"], ["f.txt"]),
                                        (root + "/a", ["b"], ["h.txt"]),
                                        (root + "/a/b", [], [])]
    assert [d for d, _, _ in gfile.walk(root, topdown=False)] == [root + "/a/b", root + "/a",
                                                                  root]
    gfile.remove(root + "/a/h.txt")
    gfile.rmtree(root + "/a")
    assert gfile.listdir(root) == ["f.txt"]
    assert gfile.join(root, "x", "y") == os.path.join(root, "x", "y")


def test_gfile_errors(tmp_path):
    gfile = tf.io.gfile
    root = str(tmp_path)
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "d").mkdir()
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        gfile.mkdir(root + "/x/y")
    with pytest.raises(tf.errors.FailedPreconditionError):
        gfile.makedirs(root + "/f.txt/z")
    with pytest.raises(tf.errors.NotFoundError, match="Could not find directory"):
        gfile.listdir(root + "/f.txt")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.stat(root + "/nope")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.copy(root + "/nope", root + "/x")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.rename(root + "/nope", root + "/x")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.remove(root + "/nope")
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        gfile.remove(root + "/d")
    with pytest.raises(tf.errors.NotFoundError, match="not found"):
        gfile.rmtree(root + "/nope")
    seen = []
    assert list(gfile.walk(root + "/nope", onerror=seen.append)) == []
    assert isinstance(seen[0], tf.errors.NotFoundError)
    with pytest.raises(tf.errors.UnimplementedError, match="scheme 'gs'"):
        gfile.exists("gs://bucket/file")


def test_gfile_reading_and_writing(tmp_path):
    path = str(tmp_path / "f.txt")
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("line1\n")
        f.write(b"line2\nline3")
        assert f.tell() == 17
    with tf.io.gfile.GFile(path) as f:
        assert f.read() == "line1\nline2\nline3"
    with tf.io.gfile.GFile(path) as f:
        assert (f.read(3), f.tell(), f.readline(), f.readlines(), f.size()) == \
            ("lin", 3, "e1\n", ["line2\n", "line3"], 17)
    with tf.io.gfile.GFile(path, "rb") as f:
        assert f.read(3) == b"lin" and list(f) == [b"e1\n", b"line2\n", b"line3"]
    with tf.io.gfile.GFile(path) as f:
        assert list(f) == ["line1\n", "line2\n", "line3"]
        f.seek(6)
        assert f.read(5) == "line2"
        f.seek(offset=-2, whence=2)
        assert f.read() == "e3"
        with pytest.raises(tf.errors.PermissionDeniedError, match="isn't open for writing"):
            f.write("x")
    with tf.io.gfile.GFile(path, "a") as f:
        f.write("!")
    assert pathlib.Path(path).read_text() == "line1\nline2\nline3!"
    missing = tf.io.gfile.GFile(str(tmp_path / "missing"))      # opened on first use, as TF
    with pytest.raises(tf.errors.NotFoundError):
        missing.read()
    with pytest.raises(IAE, match="mode is not"):
        tf.io.gfile.GFile(path, "x")
