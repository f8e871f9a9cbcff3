"""tf.Module and tf.name_scope: naming, and variables / submodules found by walking attributes."""
import numpy as np
import pytest

import hybridtf as tf


class DemoModule(tf.Module):
    """The seed notebook's module."""

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


def test_seed_demo_module(capsys):
    demo = DemoModule(init_value=tf.constant(1.0))
    assert float(demo.addprint(tf.constant(5.0))) == 6.0
    assert float(demo.addprint(tf.constant(50.0))) == 56.0
    assert capsys.readouterr().err.split() == ["6", "56"]
    assert demo.submodules == ()
    assert demo.name == "demo_module"
    assert [v.name for v in demo.variables] == ["demo_module/Variable:0"]
    assert demo.trainable_variables == demo.variables


class Dense(tf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = tf.Variable(tf.ones([n_in, n_out]), name="w")
            self.b = tf.Variable(tf.zeros([n_out]), name="b")

    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class MLP(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.layers = [Dense(3, 4), Dense(4, 2, name="head")]
            self.extra = {"scale": tf.Variable(2.0, trainable=False, name="scale")}

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x * self.extra["scale"]


def test_variables_and_submodules_are_found_in_lists_and_dicts():
    model = MLP()
    names = [v.name for v in model.variables]
    # Own leaves first (attributes in sorted order: extra, layers), then submodules' leaves.
    assert names == ["mlp/scale:0", "mlp/dense/b:0", "mlp/dense/w:0", "mlp/head/b:0",
                     "mlp/head/w:0"]
    assert [v.name for v in model.trainable_variables] == names[1:]
    assert [v.name for v in model.non_trainable_variables] == ["mlp/scale:0"]
    assert [m.name for m in model.submodules] == ["dense", "head"]
    x = tf.ones([1, 3])
    np.testing.assert_allclose(model(x).numpy(), [[24.0, 24.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(model(x))
    grads = tape.gradient(y, model.trainable_variables)
    assert all(g is not None for g in grads)


def test_shared_variables_and_cycles_are_listed_once():
    a = Dense(2, 2, name="a")
    holder = tf.Module(name="holder")
    holder.first = a
    holder.again = [a, a.w]
    holder.me = holder
    assert len(holder.variables) == 2
    assert holder.submodules == (a,)


def test_names_and_scopes():
    assert tf.Module().name == "module"

    class MyMLP2Layer(tf.Module):
        pass
    assert MyMLP2Layer().name == "my_mlp2_layer"
    with pytest.raises(ValueError, match="valid module name"):
        tf.Module(name="not valid!")
    with tf.name_scope("outer") as scope:
        assert scope == "outer/"
        inner = Dense(1, 1, name="inner")
        v = tf.Variable(1.0, name="v")
    assert v.name == "outer/v:0"
    assert inner.w.name == "outer/inner/w:0"
    with tf.name_scope("a"), tf.name_scope("b"):
        assert tf.Variable(0.0).name == "a/b/Variable:0"
    assert tf.Variable(0.0, name="plain").name == "plain:0"


def test_with_name_scope_decorator():
    class Maker(tf.Module):
        @tf.Module.with_name_scope
        def make(self):
            return tf.Variable(1.0, name="made")

    assert Maker(name="maker").make().name == "maker/made:0"


def test_module_subclass_without_super_init_still_works(tmp_path):
    """As in TF: a tf.Module subclass that skips ``super().__init__()`` still tracks its
    variables, checkpoints and saves (only ``name`` / ``name_scope`` are missing, as in TF)."""
    class NoSuper(tf.Module):
        def __init__(self):
            self.v = tf.Variable(1.0)
            self.frozen = [tf.Variable(2.0, trainable=False)]

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def __call__(self, x):
            return x * self.v

    m = NoSuper()
    assert [float(v.numpy()) for v in m.variables] == [2.0, 1.0]
    assert [float(v.numpy()) for v in m.trainable_variables] == [1.0]
    assert float(m(tf.constant(3.0))) == 3.0
    with pytest.raises(AttributeError):
        m.name
    checkpoint = tf.train.Checkpoint(m=m)
    path = checkpoint.save(str(tmp_path / "ckpt" / "c"))
    m.v.assign(5.0)
    checkpoint.restore(path)
    assert float(m.v.numpy()) == 1.0
    tf.saved_model.save(m, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    assert float(loaded(tf.constant(2.0))) == 2.0
    assert float(loaded.signatures["serving_default"](x=tf.constant(4.0))["output_0"]) == 4.0
    with pytest.raises(TypeError, match="incompatible with input_signature"):
        m(tf.constant([1.0, 2.0]))
