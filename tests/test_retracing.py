"""Retracing for Python values: each new value is a new trace (TF's semantics), but the traces
share compiled code, and a Function's traces and generated modules are bounded."""
import gc
import sys
import warnings
import weakref

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hybridtf as tf
from hybridtf.compiler.cpu.render import RENDERER
from hybridtf import polymorphic_function as function_lib
from hybridtf.polymorphic_function import RetracingWarning
from hybridtf.registry import OPS
from ops import codegen


@pytest.fixture(autouse=True)
def _quiet_retracing():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetracingWarning)
        yield


def _x(n=7, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, n).astype(np.float32)


def _kernels(module):
    """The fused / loop kernels (Numba dispatchers) of a generated module."""
    return {name: f for name, f in vars(module).items()
            if name.startswith(("fused_", "loop_", "branch_"))}


def _compiled_signatures(module):
    return sum(len(f.signatures) for f in _kernels(module).values())


def test_fifty_python_floats_share_one_module_and_one_compiled_kernel():
    traced = []

    @tf.function
    def f(x, k):
        traced.append(k)                       # a Python side effect: runs on each trace
        return tf.reduce_sum(tf.tanh(x * k) + k)

    x = _x(100)
    values = [i + 0.5 for i in range(50)]
    for k in values:
        got = f(tf.constant(x), k=k).numpy()
        want = np.sum(np.tanh(x * np.float32(k)) + np.float32(k), dtype=np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert traced == values
    assert f.experimental_get_tracing_count() == 50
    concretes = list(f._cache.values())
    assert len(concretes) == 50
    modules = {id(c._compiled_graph().module): c._compiled_graph().module for c in concretes}
    assert len(modules) == 1
    module, = modules.values()
    assert codegen.leased_modules()[module.__name__.rpartition(".")[2]] >= 50
    assert _compiled_signatures(module) == 1
    assert len({c._compiled_graph().kernel_source for c in concretes}) == 1
    # The value is not in the source: it reaches the kernel as an argument.
    assert "49.5" not in concretes[-1].kernel_source


def test_new_values_of_a_learning_rate_style_constant_reuse_the_kernel():
    v = tf.Variable(_x(5))

    @tf.function
    def step(rate, decay):
        v.assign(v * decay - rate * tf.sign(v))
        return v.read_value()

    expected = _x(5)
    for rate, decay in ((0.1, 0.9), (0.01, 0.99), (0.2, 0.5)):
        got = step(rate, decay).numpy()
        expected = expected * np.float32(decay) - np.float32(rate) * np.sign(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    modules = {id(c._compiled_graph().module) for c in step._cache.values()}
    assert len(modules) == 1 and step.experimental_get_tracing_count() == 3


def test_while_loop_kernels_take_their_constants_as_arguments():
    @tf.function
    def f(x, k):
        while tf.reduce_sum(x) > 1.0:
            x = tf.tanh(x) * k
        return x

    x0 = np.array([0.9, 0.8, 0.7], np.float32)
    for k in (0.9, 0.8, 0.95):
        x = x0.copy()
        while np.sum(x) > 1.0:
            x = np.tanh(x) * np.float32(k)
        np.testing.assert_allclose(f(tf.constant(x0), k).numpy(), x, rtol=1e-5)
    modules = {id(c._compiled_graph().module) for c in f._cache.values()}
    assert len(modules) == 1
    assert "loop_" in next(iter(f._cache.values())).kernel_source


def test_single_element_and_uniform_folded_constants_are_arguments_too():
    c1 = tf.constant([2.5])                     # one element, rank 1

    @tf.function
    def f(x, k):
        return x * c1 + tf.ones_like(x) * k     # ones_like folds to a uniform value

    x = _x(6)
    for k in (3.0, -1.25):
        np.testing.assert_allclose(f(tf.constant(x), k).numpy(),
                                   x * np.float32(2.5) + np.float32(k), rtol=1e-6)
    assert len({id(c._compiled_graph().module) for c in f._cache.values()}) == 1


@given(k=st.floats(-4, 4, width=32), n=st.integers(-50, 50), flag=st.booleans())
def test_constant_arguments_of_every_dtype_match_numpy(k, n, flag):
    x = _x(5)
    xi = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    got_f, got_i, got_b = _mixed(tf.constant(x), tf.constant(xi), k, n, flag)
    np.testing.assert_allclose(got_f.numpy(), x * np.float32(k) - np.float32(k), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_array_equal(got_i.numpy(), xi * np.int32(n) + np.int32(n))
    np.testing.assert_array_equal(got_b.numpy(), np.logical_and(xi > n, flag))


@tf.function
def _mixed(x, xi, k, n, flag):
    return x * k - k, xi * n + n, tf.logical_and(xi > n, flag)


def test_mixed_dtypes_share_one_module_across_values():
    x, xi = tf.constant(_x(5)), tf.constant(np.arange(12, dtype=np.int32).reshape(3, 4))

    @tf.function
    def g(x, xi, k, n, flag):
        return x * k - k, xi * n + n, tf.logical_and(xi > n, flag)

    for k, n, flag in ((1.5, 3, True), (-2.0, 7, False), (0.25, -1, True)):
        g(x, xi, k, n, flag)
    assert len({id(c._compiled_graph().module) for c in g._cache.values()}) == 1


# ---- the few constants that stay literals ----------------------------------------------------
def test_power_exponents_and_divisors_worth_a_literal():
    @tf.function
    def power(x, p):
        return x ** p

    x = np.abs(_x(8)) + 0.5
    for p in (0.5, -1.0, 0.7, 1.7):
        np.testing.assert_allclose(power(tf.constant(x), p).numpy(), x ** np.float32(p),
                                   rtol=1e-6)
    source = {p: power.get_concrete_function(tf.constant(x), p).kernel_source
              for p in (0.5, -1.0, 0.7, 1.7)}
    assert "np.float32(0.5)" in source[0.5] and "np.float32(-1.0)" in source[-1.0]
    assert source[0.7] == source[1.7]            # other exponents are arguments
    assert source[0.5] != source[0.7]

    @tf.function
    def div(xi, d):
        return xi // d, xi % d

    xi = np.arange(-20, 20, dtype=np.int64)
    for d in (8, 7, 5):
        q, r = div(tf.constant(xi), d)
        np.testing.assert_array_equal(q.numpy(), xi // d)
        np.testing.assert_array_equal(r.numpy(), xi % d)
    src = {d: div.get_concrete_function(tf.constant(xi), d).kernel_source for d in (8, 7, 5)}
    assert "np.int64(8)" in src[8] and src[7] == src[5]


@pytest.mark.parametrize("op, value, dtype, pays", [
    ("power", 0.5, np.float32, True), ("power", -1.0, np.float64, True),
    ("power", 0.0, np.float32, True), ("power", 2.0, np.float32, False),
    ("power", 1.7, np.float32, False), ("power", 4, np.int32, True),
    ("power", 16, np.int64, True), ("power", 17, np.int64, False),
    ("power", -1, np.int64, False), ("floordiv", 8, np.int64, True),
    ("floormod", 2.0, np.float32, True), ("floordiv", 1, np.int32, True),
    ("floordiv", 6, np.int64, False), ("floordiv", 0.5, np.float32, False),
    ("floordiv", 0, np.int64, False), ("floormod", -4, np.int64, False),
    ("floordiv", float("nan"), np.float32, False), ("multiply", 1.0, np.float32, False),
    ("add", 0.0, np.float32, False),
])
def test_literal_pays_rules(op, value, dtype, pays):
    node = type("Node", (), {"op": OPS[op]})()   # the rules are the op's CPU kernel's
    scalar = np.asarray(value, dtype)[()]
    assert RENDERER.literal_pays(node, 1, scalar) is pays
    assert RENDERER.literal_pays(node, 0, scalar) is False   # only the exponent / divisor


# ---- bounds -------------------------------------------------------------------------------
def test_traces_are_an_lru_and_an_evicted_trace_is_traced_again(monkeypatch):
    monkeypatch.setattr(function_lib, "MAX_TRACES", 3)
    traced = []

    @tf.function
    def f(x, k):
        traced.append(k)
        return x * k

    x = tf.constant(_x(4))
    held = f.get_concrete_function(x, 1.0)
    for k in (1.0, 2.0, 3.0):
        f(x, k)                                  # positional: the fast path caches them
    assert traced == [1.0, 2.0, 3.0]
    f(x, 1.0)                                    # a fast-path hit: now the most recent
    f(x, 4.0)                                    # drops 2.0, the least recently used
    assert traced == [1.0, 2.0, 3.0, 4.0] and len(f._cache) == 3
    assert all(entry[0] in f._cache.values() for entry in f._fast_cache.values())
    f(x, 1.0)
    f(x, 3.0)
    assert traced == [1.0, 2.0, 3.0, 4.0]      # still cached
    f(x, 2.0)                                    # traced again, as TF would trace anew
    assert traced == [1.0, 2.0, 3.0, 4.0, 2.0]
    assert f.experimental_get_tracing_count() == 5 and len(f._cache) == 3
    np.testing.assert_allclose(f(x, 2.0).numpy(), x.numpy() * 2.0)
    f(x, 5.0)                                    # drops 1.0
    assert traced[-1] == 5.0 and all(c is not held for c in f._cache.values())
    # A ConcreteFunction the caller holds outlives its eviction.
    np.testing.assert_allclose(held(x, 1.0).numpy(), x.numpy())


def test_relaxed_traces_are_bounded_too(monkeypatch):
    monkeypatch.setattr(function_lib, "MAX_TRACES", 2)

    @tf.function(reduce_retracing=True)
    def f(x, k):
        return x * k

    for n, k in ((2, 1.0), (3, 1.0), (4, 2.0), (5, 2.0), (6, 3.0), (7, 3.0)):
        np.testing.assert_allclose(f(tf.constant(_x(n)), k).numpy(), _x(n) * np.float32(k))
    assert len(f._cache) == 2 and len(f._relaxed) <= 2
    assert all(c in f._cache.values() for _, c in f._relaxed)


def test_deleting_a_function_frees_its_traces_and_modules(monkeypatch):
    monkeypatch.setattr(codegen, "IDLE_MODULES", 0)

    def make():
        @tf.function
        def f(x, k):
            return tf.reduce_sum(tf.sin(x * k) - k)
        return f

    f = make()
    x = tf.constant(_x(9))
    for k in (0.5, 1.5, 2.5):
        f(x, k=k)
    concrete = f.get_concrete_function(x, k=0.5)
    module = concrete._compiled_graph().module
    name = module.__name__.rpartition(".")[2]
    assert codegen.leased_modules()[name] >= 3
    refs = [weakref.ref(o)
            for o in (f, concrete, concrete.graph, concrete._compiled_graph(), module)]
    del f, concrete, module
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)
    assert name not in codegen.leased_modules()
    assert "hybridtf_generated." + name not in sys.modules


class _Scaler(tf.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = tf.Variable(scale)

    @tf.function
    def __call__(self, x):
        if tf.reduce_sum(x) > 0:          # AutoGraph converts the method
            return x * self.scale
        return -x


def test_a_decorated_method_does_not_keep_its_object_alive():
    refs = []
    for scale in (2.0, 3.0):
        m = _Scaler(scale)
        np.testing.assert_allclose(m(tf.constant([1.0, 2.0])).numpy(), [scale, 2 * scale])
        np.testing.assert_allclose(m(tf.constant([-1.0])).numpy(), [1.0])
        refs.append(weakref.ref(m))
        del m
    gc.collect()
    assert [r() for r in refs] == [None, None]
    assert not _Scaler.__call__._bound_instances
    m = _Scaler(4.0)
    call = m.__call__
    assert call.python_function.__self__ is m
    call(tf.constant([1.0]))
    del m
    gc.collect()
    np.testing.assert_allclose(call(tf.constant([1.0])).numpy(), [4.0])   # traced before
    with pytest.raises(ReferenceError, match="no longer exists"):
        call(tf.constant([1.0, 2.0]))      # a new trace needs the object


def test_an_idle_module_is_reused_by_an_equal_function():
    def make():
        @tf.function
        def f(x, k):
            return tf.reduce_sum(tf.cos(x * k) + k)
        return f

    x = tf.constant(_x(11))
    f = make()
    f(x, k=0.5)
    module = weakref.ref(f.get_concrete_function(x, k=0.5)._compiled_graph().module)
    del f
    gc.collect()
    g = make()
    np.testing.assert_allclose(g(x, k=2.0).numpy(),
                               np.sum(np.cos(x.numpy() * 2.0) + 2.0), rtol=1e-5)
    assert g.get_concrete_function(x, k=2.0)._compiled_graph().module is module()


def test_retracing_warns_at_most_twice_per_function():
    @tf.function
    def f(x, n):
        return x * n

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(12):
            f(tf.constant(1.0), n)
    retracing = [w for w in caught if issubclass(w.category, RetracingWarning)]
    assert len(retracing) == function_lib.MAX_RETRACING_WARNINGS == 2
