"""``tf.summary`` and the Keras ``TensorBoard`` callback: event files read back with
TensorBoard's own reader.

The fixtures in ``data/tf_summaries`` were written by TensorFlow 2.21 (with Keras 3.15.1 and
TensorBoard 2.21) with this module's ``write_summaries`` and ``fit_with_tensorboard`` (they take
the framework module as an argument and run under either):

    write_summaries(tf, "tf_summaries/summaries")
    fit_with_tensorboard(tf.keras, "tf_summaries/keras")

``test_records_match_what_tf_writes`` compares hybridtf's records with TF's one by one.
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hybridtf as tf
from hybridtf.summary import values as summary_values
from hybridtf.summary.state import STATE

pytest.importorskip("tensorboard", reason="tf.summary writes event files with tensorboard")
from tensorboard.backend.event_processing import event_file_loader  # noqa: E402
from tensorboard.backend.event_processing.plugin_event_accumulator import (  # noqa: E402
    EventAccumulator)
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.plugins.graph import keras_util  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parent / "data" / "tf_summaries"


@pytest.fixture(autouse=True)
def _restore_summary_state():
    """Each test starts without a default writer, step or recording condition."""
    saved = STATE.writer, STATE.step, STATE.is_recording
    yield
    STATE.writer, STATE.step, STATE.is_recording = saved


# ---- what the fixtures hold (run under TensorFlow to remake them) ------------------------------
def write_summaries(tf, logdir):
    """Every kind of summary, eagerly and from a decorated function called three times."""
    rng = np.random.default_rng(0)
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default(step=3):
        tf.summary.scalar("loss", 0.25)
        tf.summary.scalar("int_value", 7, step=4, description="an *integer*")
        tf.summary.histogram("weights", rng.normal(size=200), buckets=12)
        tf.summary.histogram("default_buckets", np.arange(100.0))
        tf.summary.histogram("single_value", [3.0, 3.0, 3.0], buckets=5)
        tf.summary.histogram("empty", np.zeros([0], np.float32))
        tf.summary.histogram("ints", np.array([1, 2, 3, 10], np.int32), buckets=3)
        tf.summary.image("grey", rng.integers(0, 256, [2, 3, 5, 1]).astype(np.uint8))
        tf.summary.image("rgb_float", rng.uniform(-0.2, 1.2, [4, 2, 3, 3]).astype(np.float32),
                         max_outputs=2)
        tf.summary.image("grey_alpha", rng.integers(0, 256, [1, 2, 2, 2]).astype(np.uint8))
        tf.summary.image("rgba", rng.integers(0, 256, [1, 2, 2, 4]).astype(np.uint8))
        tf.summary.text("note", "**bold** text")
        tf.summary.text("table", [["a", "b"], ["c", "d"]])
        with tf.name_scope("outer"):
            tf.summary.scalar("scoped", 1.5)
    step = tf.Variable(10, dtype=tf.int64)

    @tf.function
    def log(x):
        with writer.as_default():
            tf.summary.scalar("in_function", x, step=step)
            tf.summary.histogram("in_function_hist", x * tf.range(5, dtype=tf.float32),
                                 step=step, buckets=4)
        step.assign_add(1)

    for value in (1.0, 2.0, 3.0):
        log(tf.constant(value))
    writer.close()


def fit_with_tensorboard(keras, logdir):
    """Short fits with the TensorBoard callback: a Sequential model with histograms and
    batch-level logging, and a functional model with branches (for its graph)."""
    x = np.linspace(0, 1, 64, dtype="float32").reshape(16, 4)
    y = (x.sum(axis=1) > 2).astype("int32")
    model = keras.Sequential([keras.Input((4,), name="x_in"),
                              keras.layers.Dense(3, activation="relu", name="hidden"),
                              keras.layers.Dense(2, name="out")], name="mlp")
    model.compile(keras.optimizers.SGD(0.1),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=4, epochs=2, validation_data=(x, y), verbose=0,
                        callbacks=[keras.callbacks.TensorBoard(f"{logdir}/sequential",
                                                               histogram_freq=1, update_freq=2)])
    inputs = keras.Input((4,), name="features")
    left = keras.layers.Dense(3, name="left")(inputs)
    right = keras.layers.Dense(3, name="right")(inputs)
    outputs = keras.layers.Dense(2, name="head")(keras.layers.Add(name="sum")([left, right]))
    functional = keras.Model(inputs, outputs, name="branches")
    functional.compile(keras.optimizers.SGD(0.1), "mse")
    functional.fit(x, np.zeros((16, 2), "float32"), batch_size=8, epochs=1, verbose=0,
                   callbacks=[keras.callbacks.TensorBoard(f"{logdir}/functional")])
    return history


# ---- reading event files -----------------------------------------------------------------------
def _event_files(logdir):
    return sorted(pathlib.Path(logdir).glob("events.out.tfevents.*"))


def _records(logdir):
    """(step, tag, plugin name, plugin content, description, value) of every summary in the
    event files of ``logdir``, in order, read with TensorBoard's event-file loader."""
    found = []
    for path in _event_files(logdir):
        for event in event_file_loader.EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                meta = value.metadata
                found.append((event.step, value.tag, meta.plugin_data.plugin_name,
                              meta.plugin_data.content, meta.summary_description,
                              tensor_util.make_ndarray(value.tensor)))
    return found


def _accumulator(logdir):
    accumulator = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    accumulator.Reload()
    return accumulator


def _tensors(logdir, tag):
    """[(step, value)] of ``tag``, read with TensorBoard's EventAccumulator."""
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto))
            for e in _accumulator(logdir).Tensors(tag)]


def _png_pixels(data):
    return tf.io.decode_png(data).numpy()


def _assert_same_value(tag, ours, theirs):
    if ours.dtype == object:      # strings: images compare by their decoded pixels
        assert ours.shape == theirs.shape, tag
        for mine, expected in zip(ours.ravel(), theirs.ravel()):
            if expected.startswith(b"\x89PNG"):
                np.testing.assert_array_equal(_png_pixels(mine), _png_pixels(expected), tag)
            else:
                assert mine == expected, tag
    else:
        assert ours.dtype == theirs.dtype, tag
        np.testing.assert_array_equal(ours, theirs, err_msg=tag)


# ---- against TensorFlow's own files ------------------------------------------------------------
def test_records_match_what_tf_writes(tmp_path):
    write_summaries(tf, str(tmp_path))
    ours, theirs = _records(tmp_path), _records(DATA / "summaries")
    assert [r[:5] for r in ours] == [r[:5] for r in theirs]
    for mine, expected in zip(ours, theirs):
        _assert_same_value(mine[1], mine[5], expected[5])
    # The file as TF names it, beginning with the same file-version record.
    (path,) = _event_files(tmp_path)
    assert path.name.startswith("events.out.tfevents.") and path.name.endswith(".v2")
    first = next(iter(event_file_loader.EventFileLoader(str(path)).Load()))
    assert first.file_version == "brain.Event:2"


def _keras_run(logdir):
    """{(run, tag, step, plugin)} of a TensorBoard callback's files; weight histograms named
    without Keras 3's model-name prefix (Keras 3 names weights by the scope they were built
    in, hybridtf by layer)."""
    found = set()
    for run in ("train", "validation"):
        for step, tag, plugin, *_ in _records(pathlib.Path(logdir) / run):
            found.add((run, tag.removeprefix("mlp/"), step, plugin))
    return found


def test_keras_callback_writes_what_keras_writes(tmp_path):
    history = fit_with_tensorboard(tf.keras, str(tmp_path))
    ours = _keras_run(tmp_path / "sequential")
    assert ours == _keras_run(DATA / "keras" / "sequential")
    assert {(run, tag) for run, tag, _, _ in ours} >= {
        ("train", "epoch_loss"), ("train", "epoch_accuracy"), ("train", "epoch_learning_rate"),
        ("train", "batch_loss"), ("train", "hidden/kernel/histogram"),
        ("validation", "epoch_loss"), ("validation", "evaluation_loss_vs_iterations")}
    # The values are the epoch logs fit returned.
    train, validation = tmp_path / "sequential" / "train", tmp_path / "sequential" / "validation"
    for name in ("loss", "accuracy"):
        assert [s for s, _ in _tensors(train, f"epoch_{name}")] == [0, 1]
        np.testing.assert_allclose([float(v) for _, v in _tensors(train, f"epoch_{name}")],
                                   history.history[name], rtol=1e-6)
        np.testing.assert_allclose([float(v) for _, v in _tensors(validation, f"epoch_{name}")],
                                   history.history["val_" + name], rtol=1e-6)
    np.testing.assert_allclose([float(v) for _, v in _tensors(train, "epoch_learning_rate")],
                               [0.1, 0.1], rtol=1e-6)
    # Batch-level logging every 2 of the 8 batches, counted over both epochs.
    assert [s for s, _ in _tensors(train, "batch_loss")] == [2, 4, 6, 8]
    assert [s for s, _ in _tensors(validation, "evaluation_loss_vs_iterations")] == [4, 8]
    # Histograms of the weights as they are at each epoch's end.
    (_, buckets), = [e for e in _tensors(train, "out/bias/histogram") if e[0] == 1]
    assert buckets.shape == (30, 3) and buckets[:, 2].sum() == 2


def _graph_nodes(logdir):
    """{node name: (layer class, inputs)} of the Keras model graph TensorBoard draws from the
    file."""
    (_, tag, plugin, content, _, value), = [
        r for r in _records(pathlib.Path(logdir) / "train") if r[2] == "graph_keras_model"]
    assert (tag, content) == ("keras", b"1")
    graph = keras_util.keras_model_to_graph_def(json.loads(value.ravel()[0].decode()))
    return {node.name: (node.attr["keras_class"].s.decode(), list(node.input))
            for node in graph.node}


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_keras_model_graph_draws_as_keras_s(tmp_path, kind):
    fit_with_tensorboard(tf.keras, str(tmp_path))
    ours = _graph_nodes(tmp_path / kind)
    assert ours == _graph_nodes(DATA / "keras" / kind)
    if kind == "functional":
        assert ours["branches/sum"] == ("Add", ["branches/left", "branches/right"])


# ---- eager use -------------------------------------------------------------------------------
def test_summaries_read_back_eagerly(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for step in range(3):
            assert bool(tf.summary.scalar("loss", 1.0 / (step + 1), step=step))
        assert bool(tf.summary.histogram("h", tf.constant([0.0, 1.0, 1.0, 4.0]), step=5,
                                         buckets=2))
        assert bool(tf.summary.image("img", np.full([1, 2, 3, 3], 0.5, np.float32), step=6))
        assert bool(tf.summary.text("t", tf.constant("héllo"), step=7))
    accumulator = _accumulator(tmp_path)
    assert sorted(accumulator.Tags()["tensors"]) == ["h", "img", "loss", "t"]
    loss = _tensors(tmp_path, "loss")
    assert [s for s, _ in loss] == [0, 1, 2]
    np.testing.assert_allclose([float(v) for _, v in loss], [1.0, 0.5, 1 / 3], rtol=1e-7)
    assert loss[0][1].dtype == np.float32 and loss[0][1].shape == ()
    ((step, buckets),) = _tensors(tmp_path, "h")
    assert step == 5
    np.testing.assert_array_equal(buckets, [[0.0, 2.0, 3.0], [2.0, 4.0, 1.0]])
    ((_, image),) = _tensors(tmp_path, "img")
    assert list(image[:2]) == [b"3", b"2"]                     # width, height
    np.testing.assert_array_equal(_png_pixels(image[2]), np.full([2, 3, 3], 127, np.uint8))
    ((_, text),) = _tensors(tmp_path, "t")
    assert text[()].decode() == "héllo"
    assert accumulator.SummaryMetadata("loss").plugin_data.plugin_name == "scalars"
    assert accumulator.SummaryMetadata("img").plugin_data.plugin_name == "images"


def test_default_step_and_name_scopes(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    assert tf.summary.experimental.get_step() is None
    with writer.as_default(step=4):
        assert tf.summary.experimental.get_step() == 4
        with tf.name_scope("train"):
            tf.summary.scalar("loss", 2.0)
        with writer.as_default(step=9):
            tf.summary.scalar("inner", 1.0)
        tf.summary.scalar("outer", 1.0)
    assert tf.summary.experimental.get_step() is None
    tf.summary.experimental.set_step(12)
    try:
        with writer.as_default():
            tf.summary.scalar("set", 1.0)
    finally:
        tf.summary.experimental.set_step(None)
    steps = {tag: step for step, tag, *_ in _records(tmp_path)}
    assert steps == {"train/loss": 4, "inner": 9, "outer": 4, "set": 12}


def test_no_default_writer_writes_nothing(tmp_path):
    result = tf.summary.scalar("x", 1.0, step=1)
    assert isinstance(result, tf.Tensor) and result.dtype == tf.bool and not bool(result)
    assert not bool(tf.summary.scalar("x", 1.0))          # no step needed without a writer
    assert not bool(tf.summary.should_record_summaries())
    with tf.summary.create_noop_writer().as_default():
        assert not bool(tf.summary.histogram("x", [1.0], step=1))
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        pass
    writer.close()
    assert _records(tmp_path) == []


def test_missing_or_bad_step_raises(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        with pytest.raises(ValueError, match="No step set"):
            tf.summary.scalar("x", 1.0)
        with tf.summary.record_if(False):
            assert not bool(tf.summary.scalar("x", 1.0))   # not recording: no step needed
        with pytest.raises(TypeError, match="step must be an integer"):
            tf.summary.scalar("x", 1.0, step=1.5)
        tf.summary.scalar("big", 1.0, step=2**40)           # int64 steps
        tf.summary.scalar("int32", 1.0, step=tf.constant(7))
    with pytest.raises(ValueError, match="must be a scalar"):
        tf.summary.scalar("x", 1.0, step=[1, 2])          # checked even without a writer
    writer.flush()
    assert {tag: step for step, tag, *_ in _records(tmp_path)} == {"big": 2**40, "int32": 7}


def test_bad_data_raises_before_writing(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=1):
        with pytest.raises(ValueError, match="Expected scalar shape"):
            tf.summary.scalar("x", [1.0, 2.0])
        with pytest.raises(TypeError, match="real number"):
            tf.summary.scalar("x", "text")
        with pytest.raises(TypeError, match="numeric"):
            tf.summary.histogram("x", ["a"])
        with pytest.raises(ValueError, match="rank 4"):
            tf.summary.image("x", np.zeros([2, 2, 1]))
        with pytest.raises(ValueError, match="1, 2, 3 or 4 channels"):
            tf.summary.image("x", np.zeros([1, 2, 2, 5]))
        with pytest.raises(TypeError, match="floating point or integer"):
            tf.summary.image("x", np.zeros([1, 2, 2, 3], bool))
        with pytest.raises(ValueError, match="max_outputs"):
            tf.summary.image("x", np.zeros([1, 2, 2, 3]), max_outputs=-1)
        with pytest.raises(TypeError, match="tf.string"):
            tf.summary.text("x", 3)
    writer.close()
    assert _records(tmp_path) == []


def test_generic_write_with_metadata_and_lazy_tensor(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="custom", content=b"v1"))
    calls = []

    def make():
        calls.append(1)
        return tf.constant([1, 2], tf.int64)

    with writer.as_default(step=2):
        tf.summary.write("proto", tf.constant([1.5]), metadata=metadata)
        tf.summary.write("bytes", tf.constant(3), metadata=metadata.SerializeToString())
        with tf.summary.record_if(False):
            tf.summary.write("lazy", make)
        assert calls == []                          # not called when not recording
        tf.summary.write("lazy", make)
        with tf.summary.experimental.summary_scope("custom_op", "default") as (tag, _):
            assert tag == "custom_op"
    assert calls == [1]
    found = {tag: (plugin, content, value) for _, tag, plugin, content, _, value in
             _records(tmp_path)}
    assert found["proto"][:2] == ("custom", b"v1") and found["bytes"][2] == 3
    np.testing.assert_array_equal(found["lazy"][2], np.array([1, 2], np.int64))


# ---- record_if -------------------------------------------------------------------------------
def test_record_if_bool_callable_and_tensor(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    step = tf.Variable(0, dtype=tf.int64)
    with writer.as_default(step=step):
        assert bool(tf.summary.should_record_summaries())
        with tf.summary.record_if(False):
            assert not bool(tf.summary.scalar("off", 1.0))
            assert not bool(tf.summary.should_record_summaries())
        with tf.summary.record_if(lambda: step % 2 == 0):
            for _ in range(4):
                tf.summary.scalar("even", 1.0)
                step.assign_add(1)
        with tf.summary.record_if(tf.constant(True)):
            assert bool(tf.summary.scalar("on", 1.0))
        with pytest.raises(TypeError, match="record_if"):
            with tf.summary.record_if(tf.constant([True, False])):
                tf.summary.scalar("bad", 1.0)
    assert [s for s, _ in _tensors(tmp_path, "even")] == [0, 2]
    assert "off" not in _accumulator(tmp_path).Tags()["tensors"]


# ---- inside decorated functions ------------------------------------------------------------------
def test_decorated_function_writes_on_every_call(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path), flush_millis=10_000_000)
    step = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def train_step(x):
        with writer.as_default():                   # flushes every time the function runs
            with tf.summary.record_if(lambda: step % 2 == 0):
                written = tf.summary.scalar("x", x, step=step)
            tf.summary.histogram("xs", tf.stack([x, 2.0 * x]), step=step, buckets=2)
            tf.summary.text("label", tf.constant("run"), step=step)
        step.assign_add(1)
        return written

    results = [bool(train_step(tf.constant(float(i)))) for i in range(5)]
    assert train_step.experimental_get_tracing_count() == 1
    assert results == [True, False, True, False, True]
    xs = _tensors(tmp_path, "x")          # read before close: the function flushed
    assert [s for s, _ in xs] == [0, 2, 4] and [float(v) for _, v in xs] == [0.0, 2.0, 4.0]
    hists = _tensors(tmp_path, "xs")
    assert [s for s, _ in hists] == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(hists[3][1], [[3.0, 4.5, 1.0], [4.5, 6.0, 1.0]])
    assert len(_tensors(tmp_path, "label")) == 5
    writer.close()


def test_decorated_function_uses_the_default_writer_and_step_of_its_trace(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    step = tf.Variable(5, dtype=tf.int64)

    @tf.function
    def log(x):
        return tf.summary.scalar("v", x)

    with writer.as_default(step=step):
        assert bool(log(tf.constant(1.0)))
    step.assign(6)
    assert bool(log(tf.constant(2.0)))     # the writer and the variable step were captured
    writer.flush()
    assert [(s, float(v)) for s, v in _tensors(tmp_path, "v")] == [(5, 1.0), (6, 2.0)]

    @tf.function
    def unlogged(x):
        return tf.summary.scalar("never", x, step=1)

    assert not bool(unlogged(tf.constant(1.0)))     # no writer when traced


def test_summary_in_a_keras_train_step(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.1)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        with writer.as_default():
            tf.summary.scalar("loss", loss, step=optimizer.iterations)
        return loss

    x, y = np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32)
    losses = [float(train_step(x, y)) for _ in range(3)]
    logged = _tensors(tmp_path, "loss")
    assert [s for s, _ in logged] == [1, 2, 3]
    np.testing.assert_allclose([float(v) for _, v in logged], losses, rtol=1e-6)


# ---- writers -----------------------------------------------------------------------------------
def test_flush_and_close(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path), max_queue=100,
                                           flush_millis=10_000_000, filename_suffix=".run1")
    (path,) = _event_files(tmp_path)
    assert path.name.endswith(".run1")
    writer.set_as_default(step=1)
    tf.summary.scalar("a", 1.0)
    tf.summary.flush()
    assert len(_records(tmp_path)) == 1
    tf.summary.scalar("b", 2.0)
    writer.close()
    assert len(_records(tmp_path)) == 2
    writer.close()                                  # closing twice is fine
    with pytest.raises(tf.errors.NotFoundError, match="closed"):
        tf.summary.scalar("c", 3.0)
    with pytest.raises(RuntimeError, match="already closed"):
        writer.as_default()
    with pytest.raises(ValueError, match="Invalid argument to flush"):
        tf.summary.flush(3)
    assert tf.summary.flush() is None


def test_create_file_writer_arguments(tmp_path):
    with pytest.raises(ValueError, match="logdir"):
        tf.summary.create_file_writer(None)
    with pytest.raises(TypeError, match="max_queue"):
        tf.summary.create_file_writer(str(tmp_path), max_queue=1.5)
    with pytest.raises(ValueError, match="flush_millis"):
        tf.summary.create_file_writer(str(tmp_path), flush_millis=-1)
    writer = tf.summary.create_file_writer(tf.constant(str(tmp_path / "nested" / "dir")))
    assert isinstance(writer, tf.summary.SummaryWriter)
    writer.close()
    assert len(_event_files(tmp_path / "nested" / "dir")) == 1


def test_without_tensorboard_import_works_and_writers_say_what_to_install(tmp_path):
    script = (
        "import sys\n"
        "for name in ('tensorboard', 'PIL'):\n"
        "    sys.modules[name] = None\n"
        "import hybridtf as tf\n"
        "assert not bool(tf.summary.scalar('x', 1.0, step=1))\n"
        "try:\n"
        f"    tf.summary.create_file_writer({str(tmp_path)!r})\n"
        "except ImportError as err:\n"
        "    print(err)\n")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parent.parent))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert 'pip install "hybridtf[tensorboard]"' in out.stdout


def test_image_summaries_need_no_pillow(tmp_path):
    script = (
        "import sys\n"
        "sys.modules['PIL'] = None\n"
        "import numpy as np\n"
        "import hybridtf as tf\n"
        f"writer = tf.summary.create_file_writer({str(tmp_path)!r})\n"
        "with writer.as_default(step=0):\n"
        "    tf.summary.image('img', np.full([1, 2, 3, 4], 0.5, np.float32))\n"
        "writer.close()\n")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parent.parent))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    ((_, image),) = _tensors(tmp_path, "img")
    np.testing.assert_array_equal(_png_pixels(image[2]), np.full([2, 3, 4], 127, np.uint8))


# ---- histogram buckets and image conversion, as TF computes them ---------------------------------
@given(st.lists(st.integers(-20, 20), min_size=1, max_size=60), st.sampled_from([1, 2, 4, 8]))
def test_histogram_buckets_match_numpy_on_exact_grids(ints, exponent):
    # Values on a grid of quarters with power-of-two widths: all arithmetic is exact, so
    # TF's floor((x - min) / width) bucketing equals NumPy's histogram.
    data = np.array(ints, np.float64) / 4
    buckets = summary_values.histogram_buckets(data, exponent)
    if data.min() == data.max():
        assert buckets[:, 2].tolist() == [0.0] * (exponent - 1) + [len(data)]
        assert (buckets[:, :2] == data[0]).all()
        return
    counts, edges = np.histogram(data, bins=exponent, range=(data.min(), data.max()))
    span = data.max() - data.min()
    if span / exponent * 4 != int(span / exponent * 4):
        return                                 # width not on the grid: not exact
    np.testing.assert_array_equal(buckets[:, 2], counts)
    np.testing.assert_array_equal(buckets[:, 0], edges[:-1])
    np.testing.assert_array_equal(buckets[:, 1], edges[1:])


@given(st.lists(st.floats(-1e6, 1e6), max_size=50), st.integers(-2, 40))
def test_histogram_buckets_count_every_value(data, count):
    buckets = summary_values.histogram_buckets(data, count)
    assert buckets.shape == (max(count, 0), 3) and buckets.dtype == np.float64
    if count > 0 and data:
        assert buckets[:, 2].sum() == len(data)
        assert buckets[0, 0] == min(data) and buckets[-1, 1] == max(data)
        assert (np.diff(buckets[:, 0]) >= 0).all()


def test_histogram_edge_cases_match_tf():
    # TF 2.21's results: empty data, no buckets, NaN and infinite values.
    np.testing.assert_array_equal(summary_values.histogram_buckets([], 3), np.zeros((3, 3)))
    assert summary_values.histogram_buckets([1.0, 3.0], 0).shape == (0, 3)
    assert summary_values.histogram_buckets([1.0, 3.0], -2).shape == (0, 3)
    nan = summary_values.histogram_buckets([1.0, np.nan, 3.0], 3)
    assert np.isnan(nan[:, :2]).all() and (nan[:, 2] == 0).all()
    np.testing.assert_array_equal(summary_values.histogram_buckets([1.0, np.inf, 3.0], 3),
                                  [[1, np.inf, 2], [np.inf, np.inf, 0], [np.inf, np.inf, 0]])
    np.testing.assert_array_equal(summary_values.histogram_buckets([True, False, True], 2),
                                  [[0, 0.5, 1], [0.5, 1, 2]])


@pytest.mark.parametrize("dtype, pixels, expected", [
    # tf.image.convert_image_dtype(pixels, tf.uint8, saturate=True) in TF 2.21
    (np.int8, [-128, -1, 0, 1, 64, 127], [0, 0, 0, 2, 128, 254]),
    (np.int16, [-5, 0, 255, 256, 1000, 32767], [0, 0, 1, 2, 7, 255]),
    (np.uint16, [0, 255, 256, 65535], [0, 0, 1, 255]),
    (np.int32, [-1, 0, 2**23, 2**31 - 1], [0, 0, 1, 255]),
    (np.int64, [-1, 0, 2**55, 2**63 - 1], [0, 0, 1, 255]),
    (np.float16, [-1, 0, 0.25, 0.5, 0.999, 1, 2], [0, 0, 63, 127, 255, 255, 255]),
    (np.float32, [-1, 0, 0.25, 0.5, 0.999, 1, 2, np.nan], [0, 0, 63, 127, 255, 255, 255, 0]),
    (np.float64, [-1, 0, 0.25, 0.5, 0.999, 1, 2], [0, 0, 63, 127, 255, 255, 255]),
])
def test_image_pixels_convert_as_tf(dtype, pixels, expected):
    converted = summary_values.image_as_uint8(np.array(pixels, dtype))
    assert converted.dtype == np.uint8
    assert converted.tolist() == expected


# ---- the Keras callback ------------------------------------------------------------------------
def test_tensorboard_callback_histograms_images_and_speed(tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="d")])
    model.compile("sgd", "mse")
    x, y = np.ones((8, 3), np.float32), np.zeros((8, 2), np.float32)
    callback = tf.keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=2, write_images=True,
                                              write_steps_per_second=True, write_graph=False)
    model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[callback])
    train = tmp_path / "train"
    assert [s for s, _ in _tensors(train, "d/kernel/histogram")] == [0, 2]
    ((_, kernel),) = [e for e in _tensors(train, "d/kernel/histogram") if e[0] == 2]
    np.testing.assert_allclose(kernel[0, 0], np.asarray(model.layers[0].kernel).min(),
                               rtol=1e-6)
    images = _tensors(train, "d/kernel/image")
    assert [s for s, _ in images] == [0, 2] and list(images[0][1][:2]) == [b"3", b"2"]
    speeds = [float(v) for _, v in _tensors(train, "epoch_steps_per_second")]
    assert len(speeds) == 3 and all(s > 0 for s in speeds)
    assert not (tmp_path / "validation").exists()
    assert "keras" not in _accumulator(train).Tags()["tensors"]


def test_tensorboard_callback_arguments(tmp_path):
    with pytest.raises(ValueError, match="profil"):
        tf.keras.callbacks.TensorBoard(str(tmp_path), profile_batch=2)
    with pytest.raises(ValueError, match="update_freq"):
        tf.keras.callbacks.TensorBoard(str(tmp_path), update_freq="sometimes")
    with pytest.raises(ValueError, match="histogram_freq"):
        tf.keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=-1)
    with pytest.raises(ValueError, match="embedding"):
        tf.keras.callbacks.TensorBoard(str(tmp_path), embeddings_freq=1)
    assert tf.keras.callbacks.TensorBoard(str(tmp_path), update_freq="batch").update_freq == 1


def test_tensorboard_callback_warns_when_the_graph_cannot_be_serialized(tmp_path):
    class Scaled(tf.keras.layers.Layer):
        def call(self, x):
            return x * 2.0

        def get_config(self):
            return {**super().get_config(), "factors": np.ones(2)}    # not JSON

    model = tf.keras.Sequential([tf.keras.Input((2,)), Scaled()])
    model.compile("sgd", "mse")
    callback = tf.keras.callbacks.TensorBoard(str(tmp_path))
    with pytest.warns(UserWarning, match="graph of model"):
        model.fit(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), verbose=0,
                  callbacks=[callback])
    assert "epoch_loss" in _accumulator(tmp_path / "train").Tags()["tensors"]


def test_raw_event_records_are_valid_protos(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=1):
        tf.summary.scalar("x", 1.0)
    writer.close()
    (path,) = _event_files(tmp_path)
    raw = list(event_file_loader.RawEventFileLoader(str(path)).Load())
    events = [event_pb2.Event.FromString(r) for r in raw]
    assert events[0].file_version == "brain.Event:2"
    assert events[1].step == 1 and events[1].summary.value[0].tag == "x"


def test_tensorboard_callback_writes_epochs_whatever_the_batch_frequency(tmp_path):
    # 4 batches an epoch, batch summaries every 3: the epochs' last batches (4, 8) are not
    # recorded, the epoch summaries are (as Keras documents; Keras 3 itself drops them).
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    x, y = np.ones((16, 3), np.float32), np.zeros((16, 2), np.float32)
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, validation_data=(x, y),
              callbacks=[tf.keras.callbacks.TensorBoard(str(tmp_path), update_freq=3)])
    assert [s for s, _ in _tensors(tmp_path / "train", "batch_loss")] == [3, 6]
    assert [s for s, _ in _tensors(tmp_path / "train", "epoch_loss")] == [0, 1]
    assert [s for s, _ in _tensors(tmp_path / "validation", "epoch_loss")] == [0, 1]
    assert [s for s, _ in _tensors(tmp_path / "validation",
                                   "evaluation_loss_vs_iterations")] == [4, 8]


def test_summary_scope_names_tags_and_scopes(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=1), tf.name_scope("outer"):
        with tf.summary.experimental.summary_scope("my op!", "default") as (tag, scope):
            assert (tag, scope) == ("outer/my op!", "outer/myop/")
            tf.summary.scalar("inner", 1.0)         # a summary made inside it is scoped too
        with tf.summary.experimental.summary_scope(None, "fallback") as (tag, _):
            assert tag == "outer/fallback"
        tf.summary.scalar("loss (train)", 1.0)      # tags keep characters scopes cannot have
    assert {tag for _, tag, *_ in _records(tmp_path)} == {"outer/myop/inner",
                                                          "outer/loss (train)"}


def test_summaries_in_loops_and_branches_of_a_decorated_function(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))

    @tf.function
    def log_range(n):
        with writer.as_default():
            for i in tf.range(n):
                if i % 2 == 0:
                    tf.summary.scalar("even", tf.cast(i, tf.float32), step=i)
                tf.summary.histogram("h", tf.fill([3], tf.cast(i, tf.float32)), step=i)
        return n

    log_range(tf.constant(5))
    log_range(tf.constant(3))
    assert [s for s, _ in _tensors(tmp_path, "even")] == [0, 2, 4, 0, 2]
    assert [s for s, _ in _tensors(tmp_path, "h")] == [0, 1, 2, 3, 4, 0, 1, 2]
