"""tf.saved_model.save / load: variables and traced functions, in this process and a fresh one."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from hybridtf.saved_model import CorruptSavedModelError
from hybridtf.saved_model import values
from hybridtf.saved_model.restored_function import RestoredFunction

REPO = pathlib.Path(__file__).resolve().parent.parent


# ---- the seed notebook's DemoModule -----------------------------------------------------------
class DemoModule(tf.Module):
    def __init__(self, init_value=tf.constant(0.0), name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.x = tf.Variable(init_value, dtype=tf.float32, trainable=True)

    @tf.function(input_signature=[tf.TensorSpec(shape=[], dtype=tf.float32)])
    def addprint(self, a):
        with self.name_scope:
            self.x.assign_add(a)
            tf.print(self.x)
            return self.x

    @tf.function
    def scaled(self, a, k=2):
        return a * k + self.x


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    demo = DemoModule(init_value=tf.constant(1.0))
    assert float(demo.addprint(tf.constant(5.0))) == 6.0
    assert float(demo.addprint(tf.constant(50.0))) == 56.0
    demo.scaled(tf.constant([1.0, 2.0]))
    demo.scaled(tf.constant(3.0), k=3)
    path = tmp_path_factory.mktemp("saved") / "demo_model"
    tf.saved_model.save(demo, str(path), signatures={"serving_default": demo.addprint})
    return path


def test_seed_demo_module(demo_dir, capfd):
    demo2 = tf.saved_model.load(str(demo_dir))
    result = demo2.addprint(tf.constant(5.0))
    assert capfd.readouterr().err == "61\n"        # tf.print, to stderr, as in the notebook
    assert isinstance(result, tf.Tensor) and result.dtype is tf.float32
    assert float(result) == 61.0
    assert isinstance(demo2.x, tf.Variable) and float(demo2.x.numpy()) == 61.0
    assert demo2.x.name == "demo_module/Variable:0" and demo2.x.trainable
    assert demo2.variables == (demo2.x,) and demo2.trainable_variables == (demo2.x,)
    assert demo2.name == "demo_module"
    assert isinstance(demo2.addprint, RestoredFunction)


def test_seed_demo_module_in_a_fresh_process(demo_dir):
    code = ("import hybridtf as tf\n"
            f"demo2 = tf.saved_model.load({str(demo_dir)!r})\n"
            "print('result', float(demo2.addprint(tf.constant(5.0))))\n"
            "print('served', float(demo2.signatures['serving_default'](a=tf.constant(1.0))"
            "['output_0']))\n"
            "print('scaled', demo2.scaled(tf.constant(3.0), k=3).numpy())\n")
    # (no compile notices: with a cold kernel cache they would come before tf.print's lines)
    env = dict(os.environ, PYTHONPATH=str(REPO), HYBRIDTF_COMPILE_NOTICES="0")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=str(demo_dir.parent), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["result 61.0", "served 62.0", "scaled 71.0"]
    assert done.stderr.splitlines()[:2] == ["61", "62"]


def test_resaving_keeps_signatures(demo_dir, tmp_path):
    loaded = tf.saved_model.load(str(demo_dir))
    tf.saved_model.save(loaded, tmp_path / "again")
    again = tf.saved_model.load(tmp_path / "again")
    before = float(again.x.numpy())
    out = again.signatures["serving_default"](a=tf.constant(2.0))
    assert float(out["output_0"]) == before + 2.0 == float(again.x.numpy())


def test_signatures_return_dicts(demo_dir):
    loaded = tf.saved_model.load(str(demo_dir))
    serving = loaded.signatures["serving_default"]
    assert list(loaded.signatures) == ["serving_default"]
    out = serving(a=tf.constant(4.0))
    assert list(out) == ["output_0"] and float(out["output_0"]) == 60.0
    assert float(serving(tf.constant(1.0))["output_0"]) == 61.0   # positionally too
    assert serving.structured_input_signature == (
        (), {"a": tf.TensorSpec([], tf.float32, "a")})
    assert serving.structured_outputs == {"output_0": tf.TensorSpec([], tf.float32, "output_0")}
    with pytest.raises(TypeError, match="unexpected keyword argument 'b'; its inputs are"):
        serving(b=tf.constant(1.0))
    with pytest.raises(TypeError, match=r"missing inputs \['a'\]"):
        serving()


def test_python_arguments_select_the_saved_trace(demo_dir):
    loaded = tf.saved_model.load(str(demo_dir))
    x = float(loaded.x.numpy())
    np.testing.assert_allclose(loaded.scaled(tf.constant([1.0, 2.0])).numpy(),
                               [2.0 + x, 4.0 + x])
    assert float(loaded.scaled(tf.constant(3.0), k=3)) == 9.0 + x
    assert float(loaded.scaled(a=tf.constant(3.0), k=3)) == 9.0 + x
    # A Python number where the trace had a tensor of an input_signature is converted.
    assert float(loaded.addprint(1.0)) == x + 1.0
    assert len(loaded.scaled.concrete_functions) == 2


def test_no_matching_trace_names_the_saved_options(demo_dir):
    loaded = tf.saved_model.load(str(demo_dir))
    with pytest.raises(ValueError) as err:
        loaded.scaled(tf.constant(3.0), k=4)
    message = str(err.value)
    assert "Could not find matching concrete function" in message and "'scaled'" in message
    assert "2 option(s)" in message
    assert "TensorSpec(shape=(2,), dtype=tf.float32, name='a')" in message
    assert "TensorSpec(shape=(), dtype=tf.float32, name='a')" in message
    with pytest.raises(ValueError, match="Could not find matching"):
        loaded.scaled(tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Could not find matching"):
        loaded.addprint(tf.constant(1, tf.int32))


# ---- a richer module: control flow, tapes, nesting, containers -------------------------------
class Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.array([[0.5, -1.0], [1.5, 0.25], [-0.5, 1.0]], np.float32),
                             name="w")
        self.b = tf.Variable(np.array([0.1, -0.2], np.float32), name="b")
        self.step = tf.Variable(0, trainable=False, name="step")
        self.blocks = [tf.Module(name="inner")]
        self.blocks[0].v = tf.Variable([1.0, 2.0], name="v")
        self.table = {"scale": tf.Variable(3.0, name="scale")}

    @tf.function
    def forward(self, x, training=False):
        y = tf.matmul(x, self.w) + self.b
        if training:
            y = y * 2.0
        return {"y": tf.nn.relu(y), "tail": tf.reduce_sum(y[:, 1:]), "training": training}

    @tf.function
    def loop(self, n):
        i = tf.constant(0)
        acc = tf.constant(0.0)
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        while i < n:
            if i % 2 == 0:
                acc += tf.cast(i, tf.float32) * self.table["scale"]
            else:
                acc -= 1.0
            ta = ta.write(i, acc)
            i += 1
        self.step.assign_add(1)
        return acc, ta.stack()

    @tf.function
    def train(self, x, labels):
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, self.w) + self.b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
        gw, gb = tape.gradient(loss, [self.w, self.b])
        self.w.assign_sub(0.1 * gw)
        self.b.assign_sub(0.1 * gb)
        return loss

    @tf.function
    def square(self, x):
        return _times_v(x, self.blocks[0].v)


@tf.function
def _times_v(x, v):
    return x * x * v


X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
LABELS = np.array([0, 1, 1, 0], np.int32)


def _numpy_train_step(w, b, x, labels):
    logits = x @ w + b
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(len(labels)), labels]))
    d = p.copy()
    d[np.arange(len(labels)), labels] -= 1
    d /= len(labels)
    return loss, w - 0.1 * x.T @ d, b - 0.1 * d.sum(0)


@pytest.fixture(scope="module")
def net_dir(tmp_path_factory):
    net = Net()
    net.forward(tf.constant(X))
    net.forward(tf.constant(X), training=True)
    acc, stacked = net.loop(tf.constant(5))
    assert float(acc) == 16.0
    np.testing.assert_allclose(stacked.numpy(), [0.0, -1.0, 5.0, 4.0, 16.0])
    w, b = net.w.numpy().copy(), net.b.numpy().copy()
    net.train(tf.constant(X), tf.constant(LABELS))
    net.w.assign(w)
    net.b.assign(b)
    net.square(tf.constant([1.0, 3.0]))
    path = tmp_path_factory.mktemp("saved") / "net"
    tf.saved_model.save(net, path)
    return path


@pytest.fixture
def net(net_dir):
    return tf.saved_model.load(net_dir)


def test_attributes_come_back_by_name(net):
    assert isinstance(net.w, tf.Variable) and net.w.name == "w:0"
    assert not net.step.trainable and net.step.dtype is tf.int32
    assert [type(m).__name__ for m in net.blocks] == ["RestoredModule"]
    assert net.blocks[0].name == "inner" and net.blocks[0].v.name == "v:0"
    assert list(net.table) == ["scale"] and float(net.table["scale"].numpy()) == 3.0
    # tf.Module's order: attributes sorted by name, submodules' variables after.
    assert [v.name for v in net.variables] == ["b:0", "step:0", "scale:0", "w:0", "v:0"]
    assert [v.name for v in net.variables] == [v.name for v in Net().variables]
    assert [v.name for v in net.trainable_variables] == ["b:0", "scale:0", "w:0", "v:0"]
    assert net.submodules == (net.blocks[0],)
    assert net.signatures == {}    # no input_signature anywhere: no default signature


def test_results_and_python_outputs(net):
    out = net.forward(tf.constant(X))
    expected = X @ net.w.numpy() + net.b.numpy()
    np.testing.assert_allclose(out["y"].numpy(), np.maximum(expected, 0), rtol=1e-6)
    np.testing.assert_allclose(float(out["tail"]), expected[:, 1:].sum(), rtol=1e-6)
    assert out["training"] is False
    out = net.forward(tf.constant(X), training=True)
    np.testing.assert_allclose(out["y"].numpy(), np.maximum(2 * expected, 0), rtol=1e-6)
    assert out["training"] is True


def test_control_flow_and_variable_updates(net):
    acc, stacked = net.loop(tf.constant(5))
    assert float(acc) == 16.0
    np.testing.assert_allclose(stacked.numpy(), [0.0, -1.0, 5.0, 4.0, 16.0])
    assert int(net.step.numpy()) == 2      # 1 when saved, +1 by the loaded function
    net.table["scale"].assign(1.0)         # the loaded graph reads the restored variable
    acc, stacked = net.loop(tf.constant(3))
    assert float(acc) == 1.0 and stacked.shape == (3,)
    assert int(net.step.numpy()) == 3


def test_train_step_with_tape_inside(net):
    w, b = net.w.numpy(), net.b.numpy()
    for _ in range(2):
        want_loss, w, b = _numpy_train_step(w, b, X, LABELS)
        loss = net.train(tf.constant(X), tf.constant(LABELS))
        np.testing.assert_allclose(float(loss), want_loss, rtol=1e-5)
    np.testing.assert_allclose(net.w.numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.b.numpy(), b, rtol=1e-5, atol=1e-6)


def test_gradients_through_a_loaded_function(net):
    x = tf.constant([1.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(net.square(x))
    gx, gv = tape.gradient(y, [x, net.blocks[0].v])
    np.testing.assert_allclose(float(y), 1 * 1 + 9 * 2)
    np.testing.assert_allclose(gx.numpy(), [2 * 1 * 1.0, 2 * 3 * 2.0])
    np.testing.assert_allclose(gv.numpy(), [1.0, 9.0])


def test_loaded_functions_inside_a_new_function(net):
    @tf.function
    def twice(x):
        return net.square(x) + net.square(x)
    np.testing.assert_allclose(twice(tf.constant([2.0, 1.0])).numpy(), [8.0, 4.0])


def test_resaving_a_loaded_object(net, tmp_path):
    net.step.assign(41)
    tf.saved_model.save(net, tmp_path / "again")
    again = tf.saved_model.load(tmp_path / "again")
    assert int(again.step.numpy()) == 41
    np.testing.assert_allclose(again.square(tf.constant([2.0, 1.0])).numpy(), [4.0, 2.0])


# ---- signatures -------------------------------------------------------------------------------
class Served(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(2.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="inp"),
                                  tf.TensorSpec([], tf.int32)])
    def named(self, x, n):
        return {"b": x * self.v, "a": tf.cast(n, tf.float32)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def pair(self, x):
        return x, 2.0 * x


def test_signature_names_and_untraced_input_signatures(tmp_path):
    served = Served()            # never called: the input_signatures are traced at save time
    tf.saved_model.save(served, tmp_path / "s", signatures={"s": served.named,
                                                            "t": served.pair})
    loaded = tf.saved_model.load(tmp_path / "s")
    s, t = loaded.signatures["s"], loaded.signatures["t"]
    assert s.structured_input_signature == ((), {
        "inp": tf.TensorSpec([None], tf.float32, "inp"), "n": tf.TensorSpec([], tf.int32, "n")})
    out = s(inp=tf.constant([1.0, 2.0]), n=tf.constant(3))
    assert sorted(out) == ["a", "b"]
    np.testing.assert_allclose(out["b"].numpy(), [2.0, 4.0])
    assert float(out["a"]) == 3.0
    out = t(x=tf.constant([1.0, 5.0]))
    assert list(out) == ["output_0", "output_1"]
    np.testing.assert_allclose(out["output_1"].numpy(), [2.0, 10.0])
    # The functions themselves, with any length the saved [None] shape allows.
    first, second = loaded.pair(tf.constant([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(second.numpy(), [2.0, 4.0, 6.0])


def test_function_aliases(tmp_path):
    demo = DemoModule()
    demo.scaled(tf.constant(1.0))
    options = tf.saved_model.SaveOptions(function_aliases={"times": demo.scaled})
    tf.saved_model.save(demo, tmp_path / "a", options=options)
    loaded = tf.saved_model.load(
        tmp_path / "a", options=tf.saved_model.LoadOptions(
            experimental_load_function_aliases=True))
    assert float(loaded.function_aliases["times"](tf.constant(2.0))) == 4.0
    assert not hasattr(tf.saved_model.load(tmp_path / "a"), "function_aliases")
    with pytest.raises(TypeError, match="options must be a tf.saved_model.SaveOptions"):
        tf.saved_model.save(demo, tmp_path / "b", options={"x": 1})


def test_default_signature_is_the_only_input_signature_function(tmp_path):
    tf.saved_model.save(DemoModule(), tmp_path / "one")
    assert list(tf.saved_model.load(tmp_path / "one").signatures) == ["serving_default"]
    tf.saved_model.save(Served(), tmp_path / "two")        # two candidates: none chosen
    assert tf.saved_model.load(tmp_path / "two").signatures == {}


def test_signature_must_have_an_input_signature(tmp_path):
    demo = DemoModule()
    demo.scaled(tf.constant(1.0))
    with pytest.raises(ValueError, match="Only `tf.function`s with an input signature or "
                                         "concrete functions can be used as a signature"):
        tf.saved_model.save(demo, tmp_path / "bad", signatures=demo.scaled)
    assert not (tmp_path / "bad").exists()
    concrete = demo.scaled.get_concrete_function(tf.TensorSpec([], tf.float32))
    tf.saved_model.save(demo, tmp_path / "ok", signatures=concrete)
    served = tf.saved_model.load(tmp_path / "ok").signatures["serving_default"]
    assert float(served(a=tf.constant(2.0))["output_0"]) == 4.0


# ---- other objects ----------------------------------------------------------------------------
def test_plain_object_root_and_variables_it_does_not_hold(tmp_path):
    offset = tf.Variable(10.0)

    class Plain:
        def __init__(self):
            self.v = tf.Variable(2.0)
            self.f = tf.function(lambda x: (x + offset) * self.v)
    plain = Plain()
    assert float(plain.f(tf.constant(1.0))) == 22.0
    tf.saved_model.save(plain, tmp_path / "plain")
    offset.assign(100.0)
    loaded = tf.saved_model.load(tmp_path / "plain")
    assert float(loaded.f(tf.constant(1.0))) == 22.0    # the saved copy of `offset`
    assert [float(v.numpy()) for v in loaded.variables] == [2.0]


def test_function_never_called_cannot_be_called_after_loading(tmp_path):
    class Lazy(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(1.0)

        @tf.function
        def f(self, x):
            return x + self.v
    tf.saved_model.save(Lazy(), tmp_path / "lazy")
    with pytest.raises(ValueError, match="'f' loaded from the SavedModel has no saved traces"):
        tf.saved_model.load(tmp_path / "lazy").f(tf.constant(1.0))


# ---- what cannot be saved -------------------------------------------------------------------
def test_py_function_cannot_be_saved(tmp_path):
    class UsesPython(tf.Module):
        @tf.function
        def double(self, x):
            return tf.py_function(lambda a: a * 2, [x], tf.float32)
    module = UsesPython()
    module.double(tf.constant(1.0))
    with pytest.raises(ValueError, match=r"function 'double' uses tf.py_function \(op "
                                         r"'py_function', calling <lambda>\)"):
        tf.saved_model.save(module, tmp_path / "py")
    assert not (tmp_path / "py").exists()
    assert [p.name for p in tmp_path.iterdir()] == []     # no staging directory left


def test_arbitrary_python_arguments_cannot_be_saved(tmp_path):
    class TakesObjects(tf.Module):
        @tf.function
        def f(self, x, thing):
            return x

        @tf.function
        def g(self, x):
            return x, object()
    module = TakesObjects()
    module.f(tf.constant(1.0), object())
    with pytest.raises(ValueError, match="function 'f' was traced with argument 'thing' = "
                                         "<object object at 0x[0-9a-f]+> of type object, which "
                                         "cannot be saved"):
        tf.saved_model.save(module, tmp_path / "obj")
    module = TakesObjects()
    module.g(tf.constant(1.0))
    with pytest.raises(ValueError, match=r"function 'g' returns <object object at "
                                         r"0x[0-9a-f]+> of type object, which cannot be saved"):
        tf.saved_model.save(module, tmp_path / "obj")


def test_not_an_object(tmp_path):
    with pytest.raises(ValueError, match="Expected an object such as a tf.Module"):
        tf.saved_model.save(3, tmp_path / "three")


# ---- the directory ------------------------------------------------------------------------------
def _small_saved_model(path, value=1.0):
    module = tf.Module()
    module.v = tf.Variable(value)
    tf.saved_model.save(module, path)


def _data_files(path):
    """The two data files saved_model.json names, and the save id."""
    model = json.loads((path / "saved_model.json").read_text())
    return (path / model["files"]["variables"], path / model["files"]["constants"],
            model["save_id"])


def test_layout_and_overwriting(tmp_path):
    path = tmp_path / "m"
    _small_saved_model(path, 1.0)
    variables, constants, save_id = _data_files(path)
    assert variables.name == f"variables.{save_id}.npz"
    assert constants.name == f"constants.{save_id}.npz"
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == sorted([
        ".saved_model.json.lock", constants.name, "saved_model.json", "variables",
        os.path.join("variables", variables.name)])
    (path / "notes.txt").write_text("mine")
    _small_saved_model(path, 2.0)                 # into an existing, non-empty directory
    assert float(tf.saved_model.load(path).v.numpy()) == 2.0
    assert (path / "notes.txt").read_text() == "mine"
    new_variables, new_constants, new_id = _data_files(path)
    assert new_id != save_id
    assert not variables.exists() and not constants.exists()     # the old save's files went
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == sorted([
        ".saved_model.json.lock", new_constants.name, "notes.txt", "saved_model.json",
        "variables", os.path.join("variables", new_variables.name)])
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    assert tf.saved_model.contains_saved_model(path)
    assert not tf.saved_model.contains_saved_model(tmp_path)


def test_version_1_saved_models_load_and_are_replaced(tmp_path):
    path = tmp_path / "m"
    _small_saved_model(path, 3.0)
    variables, constants, _ = _data_files(path)
    # The layout of version 1: fixed data file names.
    variables.rename(path / "variables" / "variables.npz")
    constants.rename(path / "constants.npz")
    model = json.loads((path / "saved_model.json").read_text())
    del model["files"]
    (path / "saved_model.json").write_text(json.dumps(dict(model, version=1)))
    assert float(tf.saved_model.load(path).v.numpy()) == 3.0
    _small_saved_model(path, 4.0)
    assert float(tf.saved_model.load(path).v.numpy()) == 4.0
    assert not (path / "variables" / "variables.npz").exists()
    assert not (path / "constants.npz").exists()


def test_data_file_names_must_be_the_ones_a_save_writes(tmp_path):
    path = tmp_path / "m"
    _small_saved_model(path)
    model = json.loads((path / "saved_model.json").read_text())
    for bad in ("../../etc/passwd", "variables/variables.npz", "/tmp/x.npz", 7,
                model["files"]["constants"]):
        files = dict(model["files"], variables=bad)
        (path / "saved_model.json").write_text(json.dumps(dict(model, files=files)))
        with pytest.raises(CorruptSavedModelError, match="names no valid variables file"):
            tf.saved_model.load(path)


def test_missing_directory_and_tensorflow_saved_models(tmp_path):
    with pytest.raises(OSError, match="SavedModel file does not exist at: .*nowhere"):
        tf.saved_model.load(tmp_path / "nowhere")
    (tmp_path / "tf_model").mkdir()
    (tmp_path / "tf_model" / "saved_model.pb").write_bytes(b"\x08\x01")
    with pytest.raises(FileNotFoundError, match="holds a TensorFlow SavedModel"):
        tf.saved_model.load(tmp_path / "tf_model")


def test_corrupted_model_file(tmp_path):
    path = tmp_path / "m"
    _small_saved_model(path)
    text = (path / "saved_model.json").read_text()
    (path / "saved_model.json").write_text(text[: len(text) // 2])
    with pytest.raises(CorruptSavedModelError, match="saved_model.json' is truncated or "
                                                     "corrupted"):
        tf.saved_model.load(path)
    (path / "saved_model.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(CorruptSavedModelError, match="is not a hybridtf SavedModel file"):
        tf.saved_model.load(path)
    model = json.loads(text)
    (path / "saved_model.json").write_text(json.dumps(dict(model, version=7)))
    with pytest.raises(CorruptSavedModelError, match="format version 7.*Upgrade hybridtf"):
        tf.saved_model.load(path)
    (path / "saved_model.json").write_text(json.dumps(dict(model, objects=[{"kind": "?"}])))
    with pytest.raises(CorruptSavedModelError, match="is damaged and cannot be loaded"):
        tf.saved_model.load(path)


def test_damaged_graph_description(demo_dir, tmp_path):
    import shutil
    path = tmp_path / "copy"
    shutil.copytree(demo_dir, path)
    model = json.loads((path / "saved_model.json").read_text())
    model["graphs"][0]["nodes"][0]["op"] = "no_such_op"
    (path / "saved_model.json").write_text(json.dumps(model))
    with pytest.raises(CorruptSavedModelError, match="uses op 'no_such_op'"):
        tf.saved_model.load(path)
    model["graphs"][0]["nodes"][0]["inputs"] = [["node", 99, 0]]
    model["graphs"][0]["nodes"][0]["op"] = "add"
    (path / "saved_model.json").write_text(json.dumps(model))
    with pytest.raises(CorruptSavedModelError, match="tensor reference"):
        tf.saved_model.load(path)


def test_truncated_and_mismatched_array_files(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    _small_saved_model(first, 1.0)
    _small_saved_model(second, 2.0)
    variables, constants, _ = _data_files(first)
    data = variables.read_bytes()
    variables.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=rf"{variables.name}' is truncated or corrupted.*Save it "
                                         "again"):
        tf.saved_model.load(first)
    # A data file of another save under this save's name.
    variables.write_bytes(_data_files(second)[0].read_bytes())
    with pytest.raises(CorruptSavedModelError, match=rf"is inconsistent: .*{variables.name}' was "
                                                     "written by a different save"):
        tf.saved_model.load(first)
    variables.write_bytes(data)
    constants.unlink()
    with pytest.raises(FileNotFoundError, match=rf"is incomplete: .*{constants.name}' is "
                                                "missing"):
        tf.saved_model.load(first)


# ---- op attributes of many kinds --------------------------------------------------------------
class Zoo(tf.Module):
    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable(np.linspace(-1, 1, 18, dtype=np.float32).reshape(3, 3, 1, 2))

    @tf.function
    def run(self, img, ids):
        conv = tf.nn.conv2d(img, self.kernel, strides=1, padding="SAME")
        pooled = tf.nn.max_pool2d(conv, 2, 2, "VALID")
        flat = tf.reshape(pooled, [tf.shape(pooled)[0], -1])
        sliced = img[0, ::2, 1:, ...][..., tf.newaxis]
        hot = tf.one_hot(ids, 4, on_value=2.0, off_value=-1.0)
        first, second = tf.split(tf.transpose(hot, [1, 0]), 2, axis=0)
        padded = tf.pad(first, [[1, 0], [0, 2]])
        noise = tf.random.uniform([3], seed=7)
        tf.print("sizes", [1, 2], {"k": 3}, tf.reduce_max(flat), output_stream=sys.stdout)
        return (flat, sliced, padded, second, noise, tf.argmax(hot, axis=1),
                tf.reduce_mean(img, axis=(1, 2), keepdims=True), tf.cast(ids, tf.float64))


def test_attributes_of_many_ops_round_trip(tmp_path, capfd):
    zoo = Zoo()
    img = tf.constant(np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2)[..., :1] / 10)
    ids = tf.constant([3, 0, 1, 2], tf.int32)
    expected = zoo.run(img, ids)
    printed = capfd.readouterr().out
    assert printed.startswith("sizes [1, 2] {'k': 3} ")
    tf.saved_model.save(zoo, tmp_path / "zoo")
    got = tf.saved_model.load(tmp_path / "zoo").run(img, ids)
    assert capfd.readouterr().out == printed
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.dtype is b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())


class Callable(tf.Module):
    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(3.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, x):
        return x * self.scale


def test_a_saved_call_makes_the_loaded_object_callable(tmp_path):
    tf.saved_model.save(Callable(), tmp_path / "c")
    loaded = tf.saved_model.load(tmp_path / "c")
    np.testing.assert_allclose(loaded(tf.constant([1.0, 2.0])).numpy(), [3.0, 6.0])
    assert list(loaded.signatures) == ["serving_default"]
    _small_saved_model(tmp_path / "plain")
    with pytest.raises(TypeError, match="is not callable: it had no traced __call__"):
        tf.saved_model.load(tmp_path / "plain")(1.0)


# ---- the JSON encoding of Python values ----------------------------------------------------------
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**62, 2**62), st.floats(allow_nan=False),
    st.text(max_size=5), st.just(Ellipsis),
    st.builds(slice, st.none() | st.integers(-5, 5), st.none() | st.integers(-5, 5),
              st.none() | st.integers(1, 3)),
    st.sampled_from([np.float32, np.int64, np.bool_]),
    st.sampled_from([np.dtype("float16"), np.dtype("int8")]),
    st.builds(np.float32, st.floats(width=32, allow_nan=False)),
    st.builds(np.int32, st.integers(-2**31, 2**31 - 1)),
    st.sampled_from([tf.float32, tf.int64, tf.TensorShape([None, 3]), tf.TensorShape(None),
                     tf.TensorSpec([2, None], tf.int32, "x")]))
nested = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.text(max_size=3) | st.integers(0, 9), inner, max_size=3)), max_leaves=8)


def _typed(value):
    """A comparable form that tells tuples from lists and np.float32 from float."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    return (type(value).__name__, repr(value))


@given(nested)
def test_values_round_trip_through_json_with_their_types(value):
    arrays = {}

    def store(array):
        arrays[str(len(arrays))] = array
        return str(len(arrays) - 1)
    text = json.dumps(values.encode(value, store, lambda g: None))
    back = values.decode(json.loads(text), arrays.__getitem__, None)
    assert _typed(back) == _typed(value)


def test_arrays_go_to_the_store_and_objects_are_refused():
    arrays = {}
    encoded = values.encode({"a": np.arange(3)}, lambda a: arrays.setdefault("k", a) is a and "k",
                            lambda g: None)
    assert values.decode(encoded, arrays.__getitem__, None)["a"] is arrays["k"]
    with pytest.raises(values.UnsavableValueError,
                       match="<object object at 0x[0-9a-f]+> of type object"):
        values.encode([1, object()], lambda a: "k", lambda g: None)


@given(hnp.arrays(object, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
                  elements=st.binary(max_size=6)))
def test_string_arrays_are_stored_inline_as_json(array):
    encoded = values.encode(array, lambda a: pytest.fail("strings never reach the array store"),
                            lambda g: None)
    back = values.decode(json.loads(json.dumps(encoded)), None, None)
    assert back.dtype == object and back.shape == array.shape
    assert back.tolist() == array.tolist()
    with pytest.raises(values.UnsavableValueError, match="not a tf.string array"):
        values.encode(np.array([object()]), lambda a: "k", lambda g: None)
