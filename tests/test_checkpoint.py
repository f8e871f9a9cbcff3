"""tf.train.Checkpoint, CheckpointManager and checkpoint readers: round trips, keys, deferred
restoration, status assertions, errors.  (A kill at any moment of a manager's save:
test_atomic_save.py, kind "checkpoint".)"""
import gc
import os
import warnings
import weakref

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras
from hybridtf.framework import deferred_restoration
from hybridtf.saved_model import array_file

VALUE = ".ATTRIBUTES/VARIABLE_VALUE"


def _module(v=(1.0, 2.0), w=3.0):
    module = tf.Module()
    module.v = tf.Variable(np.array(v, np.float32))
    module.w = tf.Variable(np.float32(w))
    return module


def _restore_quietly(checkpoint, path):
    return checkpoint.restore(path).expect_partial()


# ---- round trips ---------------------------------------------------------------------------------
def test_save_numbers_checkpoints_and_restore_brings_values_back(tmp_path):
    module = _module()
    step = tf.Variable(np.int64(5))
    checkpoint = tf.train.Checkpoint(module=module, step=step)
    first = checkpoint.save(str(tmp_path / "ckpt"))
    module.v.assign([7.0, 8.0])
    step.assign_add(1)
    second = checkpoint.save(tmp_path / "ckpt")           # os.PathLike too
    assert (first, second) == (str(tmp_path / "ckpt-1"), str(tmp_path / "ckpt-2"))
    assert int(checkpoint.save_counter.numpy()) == 2
    assert tf.train.latest_checkpoint(tmp_path) == second

    other, other_step = _module(v=(0.0, 0.0), w=0.0), tf.Variable(np.int64(0))
    restored = tf.train.Checkpoint(module=other, step=other_step)
    restored.restore(first).assert_consumed()
    np.testing.assert_array_equal(other.v.numpy(), [1.0, 2.0])
    assert float(other.w.numpy()) == 3.0 and int(other_step.numpy()) == 5
    assert int(restored.save_counter.numpy()) == 1
    restored.restore(second).assert_consumed()
    np.testing.assert_array_equal(other.v.numpy(), [7.0, 8.0])
    assert int(other_step.numpy()) == 6
    # Numbering goes on from the restored counter.
    assert restored.save(str(tmp_path / "ckpt")) == str(tmp_path / "ckpt-3")


def test_write_and_read_touch_neither_counter_nor_state_file(tmp_path):
    module = _module()
    checkpoint = tf.train.Checkpoint(module=module)
    assert checkpoint.write(str(tmp_path / "weights")) == str(tmp_path / "weights")
    assert sorted(os.listdir(tmp_path)) == ["weights.index"]
    assert checkpoint._save_counter is None                # never made by write()
    keys = [key for key, _ in tf.train.list_variables(str(tmp_path / "weights"))]
    assert "save_counter/" + VALUE not in keys
    other = _module(v=(0.0, 0.0), w=0.0)
    tf.train.Checkpoint(module=other).read(str(tmp_path / "weights")).assert_consumed()
    assert float(other.w.numpy()) == 3.0


def test_containers_shared_objects_and_key_escaping(tmp_path):
    shared = tf.Variable(np.float32(4.0))
    module = tf.Module()
    module.layers = [tf.Variable(np.float32(1.0)), "not trackable", {"b": shared}]
    module.pair = (tf.Variable(np.float32(2.0)), 5, tf.Variable(np.float32(3.0)))
    module.again = shared        # a shorter path to the same variable: its key, saved once
    setattr(module, "a.b/c", tf.Variable(np.float32(6.0)))
    path = tf.train.Checkpoint(**{"m.x": module}).write(str(tmp_path / "c"))
    keys = dict(tf.train.list_variables(path))
    assert sorted(keys) == sorted([
        "_CHECKPOINTABLE_OBJECT_GRAPH", "m..x/layers/0/" + VALUE, "m..x/again/" + VALUE,
        "m..x/pair/0/" + VALUE, "m..x/pair/2/" + VALUE, "m..x/a..b.Sc/" + VALUE])

    fresh = tf.Module()
    fresh.layers = [tf.Variable(np.float32(0.0)), None, {"b": tf.Variable(np.float32(0.0))}]
    fresh.pair = (tf.Variable(np.float32(0.0)), None, tf.Variable(np.float32(0.0)))
    fresh.again = fresh.layers[2]["b"]
    setattr(fresh, "a.b/c", tf.Variable(np.float32(0.0)))
    tf.train.Checkpoint(**{"m.x": fresh}).read(path).assert_consumed()
    assert [float(v.numpy()) for v in (fresh.layers[0], fresh.layers[2]["b"], fresh.pair[0],
                                       fresh.pair[2], getattr(fresh, "a.b/c"))] == \
        [1.0, 4.0, 2.0, 3.0, 6.0]


def test_root_object_and_attributes_added_later(tmp_path):
    module = _module()
    checkpoint = tf.train.Checkpoint(module, extra=tf.Variable(np.float32(9.0)))
    checkpoint.late = tf.Variable(np.float32(10.0))
    path = checkpoint.save(str(tmp_path / "c"))
    keys = [key for key, _ in tf.train.list_variables(path)]
    assert keys == ["_CHECKPOINTABLE_OBJECT_GRAPH", "extra/" + VALUE, "late/" + VALUE,
                    "save_counter/" + VALUE, "v/" + VALUE, "w/" + VALUE]
    assert not hasattr(module, "extra")
    other = _module(v=(0.0, 0.0), w=0.0)
    restored = tf.train.Checkpoint(other, extra=tf.Variable(np.float32(0.0)))
    status = restored.restore(path)
    restored.late = tf.Variable(np.float32(0.0))           # restored when attached
    status.assert_consumed()
    assert float(restored.late.numpy()) == 10.0 and float(other.w.numpy()) == 3.0
    by_reference = tf.train.Checkpoint(weakref.ref(other))      # a root held weakly
    assert [key for key, _ in tf.train.list_variables(by_reference.write(
        str(tmp_path / "weak")))] == ["_CHECKPOINTABLE_OBJECT_GRAPH", "v/" + VALUE, "w/" + VALUE]


# ---- Keras models and optimizers -----------------------------------------------------------------
def _sequential():
    return keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])


def _data():
    rng = np.random.RandomState(0)
    return rng.randn(16, 3).astype(np.float32), rng.randn(16, 2).astype(np.float32)


def _train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return float(loss)


def test_keys_of_a_keras_model_and_adam_are_tensorflows(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4),
                              keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    model.optimizer.build(model.trainable_variables)
    path = tf.train.Checkpoint(model=model, optimizer=model.optimizer).write(
        str(tmp_path / "k"))
    # What TensorFlow 2.21 (Keras 3) lists for the same objects.
    expected = {"_CHECKPOINTABLE_OBJECT_GRAPH": [],
                "model/_functional/_operations/2/moving_mean/" + VALUE: [4],
                "model/_functional/_operations/2/moving_variance/" + VALUE: [4],
                "optimizer/_iterations/" + VALUE: [],
                "optimizer/_learning_rate/" + VALUE: []}
    for i, shape in enumerate([[3, 4], [4], [4], [4], [4, 2], [2]]):
        expected[f"optimizer/_trainable_variables/{i}/" + VALUE] = shape
        expected[f"optimizer/_variables/{2 + 2 * i}/" + VALUE] = shape      # momentum
        expected[f"optimizer/_variables/{3 + 2 * i}/" + VALUE] = shape      # velocity
    assert dict(tf.train.list_variables(path)) == expected


def test_training_continues_identically_after_restore_into_an_unbuilt_model(tmp_path):
    x, y = _data()
    tf.random.set_seed(3)
    model, optimizer = _sequential(), keras.optimizers.Adam(0.05)
    for _ in range(3):
        _train_step(model, optimizer, x, y)
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "c"))
    uninterrupted = [_train_step(model, optimizer, x, y) for _ in range(3)]

    tf.random.set_seed(4)                  # other initial values
    fresh, fresh_optimizer = _sequential(), keras.optimizers.Adam(0.05)
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh_optimizer).restore(path)
    with pytest.raises(AssertionError, match="Unresolved object in checkpoint"):
        status.assert_consumed()                     # no weights, no slots yet
    status.assert_existing_objects_matched()         # what exists (iterations, ...) matched
    assert int(fresh_optimizer.iterations.numpy()) == 3
    resumed = [_train_step(fresh, fresh_optimizer, x, y) for _ in range(3)]
    assert resumed == uninterrupted                  # weights and Adam's slots restored
    status.assert_consumed()
    assert int(fresh_optimizer.iterations.numpy()) == 6


def test_fit_resumes_from_a_manager_checkpoint(tmp_path):
    x, y = _data()

    def compiled_model():
        model = _sequential()
        model.compile(keras.optimizers.Adam(0.05), "mse")
        return model

    tf.random.set_seed(5)
    model = compiled_model()
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), tmp_path, 2)
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    manager.save()
    uninterrupted = model.fit(x, y, batch_size=8, epochs=2, shuffle=False,
                              verbose=0).history["loss"]

    tf.random.set_seed(6)
    fresh = compiled_model()
    fresh_manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=fresh), tmp_path, 2)
    assert fresh_manager.restore_or_initialize() == str(tmp_path / "ckpt-1")
    resumed = fresh.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(resumed, uninterrupted, rtol=1e-6)
    assert int(fresh.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy())


def test_optimizer_slots_wait_for_their_variables(tmp_path):
    variable = tf.Variable(np.array([1.0, -1.0], np.float32))
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    holder = tf.Module()
    holder.v = variable
    optimizer.apply_gradients([(tf.constant([1.0, 1.0]), variable)])
    path = tf.train.Checkpoint(holder=holder, optimizer=optimizer).write(str(tmp_path / "c"))
    momentum = optimizer.variables[-1].numpy()
    assert np.any(momentum != 0)

    fresh_optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    fresh = tf.Module()
    fresh.v = tf.Variable(np.zeros(2, np.float32))
    status = tf.train.Checkpoint(holder=fresh, optimizer=fresh_optimizer).read(path)
    fresh_optimizer.build([fresh.v])                 # slots made now get their values
    np.testing.assert_array_equal(fresh_optimizer.variables[-1].numpy(), momentum)
    status.assert_consumed()


def test_layers_added_and_optimizers_compiled_after_restore_get_their_values(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    model.optimizer.iterations.assign(7)
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "c"))

    fresh = keras.Sequential()
    status = tf.train.Checkpoint(model=fresh).read(path)
    fresh.add(keras.Input((3,)))
    fresh.add(keras.layers.Dense(4))          # built at once (the input shape is known)
    fresh.add(keras.layers.Dense(2))
    fresh.compile(keras.optimizers.Adam(0.01), "mse")
    assert int(fresh.optimizer.iterations.numpy()) == 7
    for got, want in zip(fresh.weights, model.weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    status.assert_consumed()


def test_a_layer_built_inside_a_function_gets_restored_values(tmp_path):
    layer = keras.layers.Dense(3)
    layer(np.ones((1, 2), np.float32))
    path = tf.train.Checkpoint(layer=layer).write(str(tmp_path / "c"))
    fresh = keras.layers.Dense(3)
    tf.train.Checkpoint(layer=fresh).read(path).assert_existing_objects_matched()

    @tf.function
    def apply(x):
        return fresh(x)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_allclose(apply(x).numpy(), layer(x).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(fresh.kernel.numpy(), layer.kernel.numpy())


def test_deferred_values_are_checked_when_the_variable_is_made(tmp_path):
    path = tf.train.Checkpoint(module=_module()).write(str(tmp_path / "c"))
    module = tf.Module()
    _restore_quietly(tf.train.Checkpoint(module=module), path)
    with pytest.raises(ValueError, match=r"incompatible tensor with shape \(2,\).*shape \(3,\)"):
        module.v = tf.Variable(np.zeros(3, np.float32))


def test_waiting_restorations_do_not_keep_their_objects_alive(tmp_path):
    path = tf.train.Checkpoint(module=_module()).write(str(tmp_path / "c"))
    module = tf.Module()
    _restore_quietly(tf.train.Checkpoint(module=module), path)
    assert id(module) in deferred_restoration.WAITING       # for module.v and module.w
    reference = weakref.ref(module)
    del module
    gc.collect()
    assert reference() is None


def test_save_counter_made_after_read_is_restored(tmp_path):
    checkpoint = tf.train.Checkpoint(module=_module())
    checkpoint.save(str(tmp_path / "c"))
    path = checkpoint.save(str(tmp_path / "c"))
    fresh = tf.train.Checkpoint(module=_module(v=(0.0, 0.0), w=0.0))
    fresh.read(path)
    assert int(fresh.save_counter.numpy()) == 2


def test_write_inside_a_function_saves_the_values_at_that_point_each_call(tmp_path):
    variable = tf.Variable(np.float32(1.0))
    checkpoint = tf.train.Checkpoint(v=variable)
    prefix = str(tmp_path / "in_function")

    @tf.function
    def step():
        variable.assign_add(1.0)
        written = checkpoint.write(prefix)
        variable.assign_add(10.0)
        return written
    assert step().numpy() == prefix.encode()
    assert float(tf.train.load_variable(prefix, "v/" + VALUE)) == 2.0
    step()
    assert float(tf.train.load_variable(prefix, "v/" + VALUE)) == 13.0
    assert float(variable.numpy()) == 23.0


def test_save_and_restore_inside_a_function_are_refused(tmp_path):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    path = checkpoint.write(str(tmp_path / "c"))
    manager = tf.train.CheckpointManager(checkpoint, tmp_path / "m", 2)

    @tf.function
    def save():
        return checkpoint.save(str(tmp_path / "c"))

    @tf.function
    def save_managed():
        return manager.save()

    @tf.function
    def restore():
        checkpoint.restore(path)
        return 0
    with pytest.raises(NotImplementedError, match="Checkpoint.write"):
        save()
    with pytest.raises(NotImplementedError, match="Checkpoint.write"):
        save_managed()
    with pytest.raises(RuntimeError, match="before calling the function"):
        restore()


# ---- readers -------------------------------------------------------------------------------------
def test_load_checkpoint_reader(tmp_path):
    checkpoint = tf.train.Checkpoint(module=_module(), step=tf.Variable(np.int64(7)))
    path = checkpoint.save(str(tmp_path / "c"))
    for where in (path, str(tmp_path)):               # a prefix, or its directory's latest
        reader = tf.train.load_checkpoint(where)
        np.testing.assert_array_equal(reader.get_tensor("module/v/" + VALUE), [1.0, 2.0])
    value = reader.get_tensor("module/w/" + VALUE)
    assert isinstance(value, np.float32) and value == 3.0
    assert reader.has_tensor("step/" + VALUE) and not reader.has_tensor("nope")
    assert reader.get_variable_to_shape_map() == {
        "_CHECKPOINTABLE_OBJECT_GRAPH": [], "module/v/" + VALUE: [2], "module/w/" + VALUE: [],
        "save_counter/" + VALUE: [], "step/" + VALUE: []}
    dtype_map = reader.get_variable_to_dtype_map()
    assert dtype_map["step/" + VALUE] == tf.int64 and dtype_map["module/v/" + VALUE] == tf.float32
    assert dtype_map["_CHECKPOINTABLE_OBJECT_GRAPH"] == tf.string
    assert isinstance(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"), bytes)
    assert b"module/v/.ATTRIBUTES/VARIABLE_VALUE (DT_FLOAT) [2]" in reader.debug_string()
    with pytest.raises(tf.errors.NotFoundError, match="Key module/zz not found in checkpoint"):
        reader.get_tensor("module/zz")
    assert int(tf.train.load_variable(path, "step/" + VALUE + ":0")) == 7
    assert tf.train.list_variables(str(tmp_path)) == sorted(
        (key, shape) for key, shape in reader.get_variable_to_shape_map().items())
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(tmp_path / "empty"))


# ---- the state file and latest_checkpoint --------------------------------------------------------
def test_state_file_is_tensorflows_text_format_with_relative_paths(tmp_path, monkeypatch):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    checkpoint.save(str(tmp_path / "a" / "x"))
    assert (tmp_path / "a" / "checkpoint").read_text() == \
        'model_checkpoint_path: "x-1"\nall_model_checkpoint_paths: "x-1"\n'
    monkeypatch.chdir(tmp_path)
    assert checkpoint.save("rel/ck") == os.path.join("rel", "ck-2")
    assert tf.train.latest_checkpoint("rel") == os.path.join("rel", "ck-2")
    state = tf.train.get_checkpoint_state("rel")
    assert state.all_model_checkpoint_paths == [os.path.join("rel", "ck-2")]


def test_latest_checkpoint_without_checkpoints(tmp_path):
    assert tf.train.latest_checkpoint(tmp_path) is None
    assert tf.train.latest_checkpoint(tmp_path / "missing") is None
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "gone-3"\n')
    with pytest.warns(UserWarning, match="Couldn't match files for checkpoint"):
        assert tf.train.latest_checkpoint(tmp_path) is None


def test_state_file_strings_round_trip(tmp_path):
    name = 'we\u00efrd "name"\\'
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    path = checkpoint.save(str(tmp_path / name))
    assert tf.train.latest_checkpoint(tmp_path) == path
    assert "\\303\\257" in (tmp_path / "checkpoint").read_text()      # octal, as TF writes


def test_corrupt_state_file_is_refused_naming_it(tmp_path):
    (tmp_path / "checkpoint").write_bytes(b"model_checkpoint_path: \"ck-1\nrubbish")
    with pytest.raises(tf.errors.DataLossError, match="checkpoint state file .*checkpoint'"):
        tf.train.latest_checkpoint(tmp_path)


# ---- CheckpointManager ---------------------------------------------------------------------------
def test_manager_keeps_the_last_max_to_keep_checkpoints(tmp_path):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    manager = tf.train.CheckpointManager(checkpoint, tmp_path, max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    paths = [manager.save() for _ in range(3)]
    assert paths == [str(tmp_path / f"ckpt-{i}") for i in (1, 2, 3)]
    assert manager.checkpoints == paths[1:] and manager.latest_checkpoint == paths[2]
    assert sorted(os.listdir(tmp_path)) == [".checkpoint.lock", "checkpoint", "ckpt-2.index",
                                            "ckpt-3.index"]
    assert manager.save(checkpoint_number=tf.Variable(10)) == str(tmp_path / "ckpt-10")
    assert int(checkpoint.save_counter.numpy()) == 4          # incremented all the same
    assert manager.checkpoints == [paths[2], str(tmp_path / "ckpt-10")]
    state = tf.train.get_checkpoint_state(tmp_path)
    assert state.all_model_checkpoint_paths == manager.checkpoints
    assert len(state.all_model_checkpoint_timestamps) == 2

    # A new manager picks up the list, and deletes from it.
    again = tf.train.CheckpointManager(checkpoint, tmp_path, max_to_keep=1)
    assert again.checkpoints == manager.checkpoints
    assert again.latest_checkpoint == str(tmp_path / "ckpt-10")
    again.save()
    assert sorted(os.listdir(tmp_path)) == [".checkpoint.lock", "checkpoint", "ckpt-5.index"]


def test_manager_keeps_all_without_max_to_keep(tmp_path):
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), tmp_path,
                                         max_to_keep=None, checkpoint_name="model")
    for _ in range(3):
        manager.save()
    assert manager.checkpoints == [str(tmp_path / f"model-{i}") for i in (1, 2, 3)]


def test_manager_checkpoint_interval(tmp_path):
    step = tf.Variable(np.int64(0))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), tmp_path, None,
                                         step_counter=step, checkpoint_interval=3)
    saved = []
    for _ in range(8):
        saved.append(manager.save())
        step.assign_add(1)
    assert [p and os.path.basename(p) for p in saved] == \
        ["ckpt-1", None, None, "ckpt-2", None, None, "ckpt-3", None]
    assert os.path.basename(manager.save(check_interval=False)) == "ckpt-4"
    assert manager.save(check_interval=False) is None           # this step is saved already
    with pytest.raises(ValueError, match="step_counter"):
        tf.train.CheckpointManager(tf.train.Checkpoint(), tmp_path, 1, checkpoint_interval=3)


def test_manager_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("time.time", lambda: clock[0])
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), tmp_path,
                                         max_to_keep=1, keep_checkpoint_every_n_hours=1)
    for _ in range(6):
        manager.save()
        clock[0] += 1800.0           # half an hour between saves
    # Leaving the kept set, ckpt-3 (saved an hour after the manager started) and ckpt-5 (an
    # hour after ckpt-3) stay on disk, unmanaged; the others are deleted.
    assert manager.checkpoints == [str(tmp_path / "ckpt-6")]
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == \
        ["ckpt-3.index", "ckpt-5.index", "ckpt-6.index"]
    assert tf.train.CheckpointManager(manager.checkpoint, tmp_path, 1).checkpoints == \
        manager.checkpoints


def test_restore_or_initialize(tmp_path):
    calls = []
    variable = tf.Variable(np.float32(1.0))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), tmp_path, 2,
                                         init_fn=lambda: calls.append(1))
    assert manager.restore_or_initialize() is None and calls == [1]
    path = manager.save()
    variable.assign(5.0)
    assert manager.restore_or_initialize() == path and calls == [1]
    assert float(variable.numpy()) == 1.0


def test_manager_argument_errors(tmp_path):
    checkpoint = tf.train.Checkpoint()
    with pytest.raises(ValueError, match="positive integer or `None` for `max_to_keep`"):
        tf.train.CheckpointManager(checkpoint, tmp_path, max_to_keep=0)
    with pytest.raises(TypeError, match="must be a tf.train.Checkpoint"):
        tf.train.CheckpointManager(tf.Module(), tmp_path, max_to_keep=1)


# ---- status objects ------------------------------------------------------------------------------
def test_status_assertions(tmp_path):
    path = tf.train.Checkpoint(module=_module(), step=tf.Variable(np.int64(5))).save(
        str(tmp_path / "c"))
    # The program lacks `step` and `module.w`: existing objects matched, not consumed.
    partial = tf.Module()
    partial.v = tf.Variable(np.zeros(2, np.float32))
    status = tf.train.Checkpoint(module=partial).restore(path).expect_partial()
    status.assert_existing_objects_matched().assert_nontrivial_match()
    with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint \(root\)\.step"):
        status.assert_consumed()
    # The program has a variable the checkpoint lacks.
    extra = _module(v=(0.0, 0.0), w=0.0)
    extra.more = tf.Variable(np.float32(0.0))
    status = tf.train.Checkpoint(module=extra, step=tf.Variable(np.int64(0))).restore(path)
    with pytest.raises(AssertionError, match="Found 1 Python objects that were not bound"):
        status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="Found 1 Python objects"):
        status.assert_consumed()
    assert status.run_restore_ops() is None and status.initialize_or_restore() is None
    # Nothing matched but the root.
    unrelated = tf.Module()
    unrelated.q = tf.Variable(0.0)
    status = tf.train.Checkpoint(x=unrelated).read(path).expect_partial()
    with pytest.raises(AssertionError, match="Nothing except the root object matched"):
        status.assert_nontrivial_match()


def test_restore_none_restores_nothing(tmp_path):
    status = tf.train.Checkpoint(v=tf.Variable(1.0)).restore(None)
    for check in (status.assert_consumed, status.assert_existing_objects_matched,
                  status.assert_nontrivial_match, status.run_restore_ops):
        with pytest.raises(AssertionError, match="No checkpoint specified"):
            check()
    assert status.expect_partial() is status


def _status_with_unrestored_values(path):
    return tf.train.Checkpoint(module=tf.Module()).restore(path)


def test_unrestored_values_warn_when_the_restoration_ends(tmp_path):
    path = tf.train.Checkpoint(module=_module()).write(str(tmp_path / "c"))
    with pytest.warns(UserWarning, match=r"unrestored values.*\(root\)\.module\.v"):
        _status_with_unrestored_values(path)
        gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _status_with_unrestored_values(path).expect_partial()
        gc.collect()


# ---- errors --------------------------------------------------------------------------------------
def test_missing_checkpoints_and_directories(tmp_path):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    with pytest.raises(tf.errors.NotFoundError, match="the '-1' in"):
        checkpoint.restore(str(tmp_path / "nope"))
    with pytest.raises(tf.errors.NotFoundError, match="is a directory"):
        checkpoint.restore(str(tmp_path))
    path = checkpoint.write(str(tmp_path / "c"))
    with pytest.raises(tf.errors.NotFoundError, match="without '.index'"):
        checkpoint.restore(path + ".index")
    with pytest.raises(tf.errors.NotFoundError):
        tf.train.list_variables(str(tmp_path / "nope"))


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_damaged_checkpoint_files_are_refused_naming_the_file(tmp_path, damage):
    variable = tf.Variable(np.arange(1000, dtype=np.float32))
    path = tf.train.Checkpoint(v=variable).write(str(tmp_path / "c"))
    index = tmp_path / "c.index"
    data = index.read_bytes()
    index.write_bytes({"truncated": data[:len(data) // 2], "garbage": b"\x00" * 64,
                       "empty": b""}[damage])
    fresh = tf.Variable(np.zeros(1000, np.float32))
    with pytest.raises(tf.errors.DataLossError, match=str(index)):
        tf.train.Checkpoint(v=fresh).restore(path)
    with pytest.raises(tf.errors.DataLossError, match=str(index)):
        tf.train.load_checkpoint(path)
    assert not fresh.numpy().any()


def test_a_checkpoint_whose_manifest_does_not_match_its_values_is_refused(tmp_path):
    index = str(tmp_path / "c.index")
    array_file.write_arrays(index, {"format": "hybridtf.checkpoint", "version": 1,
                                    "objects": [{"children": [["v", 1]]},
                                                {"children": [], "key": "v/" + VALUE}]}, {})
    with pytest.raises(tf.errors.DataLossError, match="object graph does not match"):
        tf.train.load_checkpoint(str(tmp_path / "c"))


def test_tensorflow_checkpoints_are_refused_plainly(tmp_path):
    # What TensorFlow writes: a table file ending with its magic number, and data shards.
    (tmp_path / "ckpt-1.index").write_bytes(b"\x00" * 40 + bytes.fromhex("57fb808b247547db"))
    (tmp_path / "ckpt-1.data-00000-of-00001").write_bytes(b"\x00" * 16)
    (tmp_path / "only_shards.data-00000-of-00001").write_bytes(b"\x00" * 16)
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    for prefix in ("ckpt-1", "only_shards"):
        with pytest.raises(tf.errors.DataLossError, match="is a TensorFlow checkpoint"):
            checkpoint.restore(str(tmp_path / prefix))


def test_mismatched_shapes_and_dtypes_assign_nothing(tmp_path):
    path = tf.train.Checkpoint(a=tf.Variable(np.float32(1.0)),
                               b=tf.Variable(np.zeros(2, np.float32))).write(str(tmp_path / "c"))
    a, b = tf.Variable(np.float32(0.0)), tf.Variable(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"incompatible tensor with shape \(2,\).*'b/"):
        tf.train.Checkpoint(a=a, b=b).restore(path)
    assert float(a.numpy()) == 0.0                   # checked before anything is assigned
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype int32.*float32"):
        tf.train.Checkpoint(a=tf.Variable(0), b=tf.Variable(np.zeros(2, np.float32))).restore(
            path)


def test_checkpoint_arguments_must_be_trackable():
    with pytest.raises(ValueError, match="expecting x to be a trackable object"):
        tf.train.Checkpoint(x=3)
    with pytest.raises(ValueError, match="expecting x to be a trackable object"):
        tf.train.Checkpoint(x=object())
    module = _module()
    with pytest.raises(ValueError, match="root.v already exists"):
        tf.train.Checkpoint(module, v=tf.Variable(1.0))
    with pytest.raises(ValueError, match="pass a variable by name"):
        tf.train.Checkpoint(tf.Variable(1.0))


def test_dicts_with_non_string_keys_cannot_be_saved(tmp_path):
    module = tf.Module()
    module.table = {1: tf.Variable(1.0)}
    with pytest.raises(ValueError, match="non-string key 1"):
        tf.train.Checkpoint(module=module).write(str(tmp_path / "c"))


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    variable = tf.Variable(np.float32(1.0))
    checkpoint = tf.train.Checkpoint(v=variable)
    manager = tf.train.CheckpointManager(checkpoint, tmp_path, 2)
    first = manager.save()
    variable.assign(2.0)

    def full_disk(*args, **kwargs):
        raise OSError("No space left on device")
    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.raises(OSError, match="No space left"):
        manager.save()
    monkeypatch.undo()
    assert tf.train.latest_checkpoint(tmp_path) == first
    assert sorted(os.listdir(tmp_path)) == [".checkpoint.lock", "checkpoint", "ckpt-1.index"]
    fresh = tf.Variable(np.float32(0.0))
    tf.train.Checkpoint(v=fresh).restore(first).assert_consumed()
    assert float(fresh.numpy()) == 1.0
