"""Decorated functions on the GPU (Numba's CUDA simulator stands in for one): each fused group
one ``@cuda.jit`` kernel, the other nodes on their CUDA kernels, every value on the device, and
the results the CPU's."""
import numpy as np
import pytest

import hybridtf as tf

GPU_NAME = "/job:localhost/replica:0/task:0/device:GPU:0"


def _on_both(fn, *host_args):
    """``fn`` decorated, run on the GPU and on the CPU: (GPU result, CPU result, the GPU trace)."""
    function = tf.function(fn)
    with tf.device("/GPU:0"):
        args = [tf.constant(a) for a in host_args]
        on_gpu = function(*args)
        concrete = function.get_concrete_function(*args)
    with tf.device("/CPU:0"):
        on_cpu = function(*[tf.constant(a) for a in host_args])
    return on_gpu, on_cpu, concrete


def test_a_fused_chain_is_one_cuda_kernel(gpu):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    b = np.arange(4, dtype=np.float32)
    on_gpu, on_cpu, concrete = _on_both(
        lambda x, b: tf.nn.relu(tf.tanh(x * 2.0 + b) - 0.25) / (1.0 + tf.abs(x)), x, b)
    assert concrete.graph.device == GPU_NAME and on_gpu.device == GPU_NAME
    np.testing.assert_allclose(on_gpu.numpy(), on_cpu.numpy(), rtol=2e-6, atol=1e-7)
    source = concrete.kernel_source
    assert source.count("@cuda.jit") == 1 and "cuda.grid(1)" in source
    assert "device_function(elementwise.tanh)" in source   # the CPU's scalar definitions


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_broadcasting_scalars_and_integers(gpu, dtype):
    x = np.arange(6, dtype=dtype).reshape(2, 3, 1)
    y = np.arange(4, dtype=dtype)
    s = np.asarray(3, dtype)
    on_gpu, on_cpu, _ = _on_both(lambda x, y, s: tf.maximum(x * s, y) - (x + y) // 2, x, y, s)
    assert on_gpu.shape == (2, 3, 4)
    np.testing.assert_array_equal(on_gpu.numpy(), on_cpu.numpy())


def test_rank_zero_and_several_outputs(gpu):
    x, y = np.float32(1.5), np.float32(-0.5)
    on_gpu, on_cpu, _ = _on_both(lambda x, y: (x * y, tf.exp(x) + y, x > y), x, y)
    for a, b in zip(on_gpu, on_cpu):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_a_reduction_after_a_fused_group(gpu):
    x = np.random.default_rng(1).standard_normal((5, 7)).astype(np.float32)
    on_gpu, on_cpu, _ = _on_both(
        lambda x: (tf.reduce_sum(tf.square(x - 1.0), axis=1), tf.reduce_mean(x * x)), x)
    for a, b in zip(on_gpu, on_cpu):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)


def test_a_train_step_gives_the_cpu_numbers(gpu):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    labels = rng.integers(0, 3, 8)
    w1_0 = rng.standard_normal((5, 6)).astype(np.float32) * 0.3
    w2_0 = rng.standard_normal((6, 3)).astype(np.float32) * 0.3

    def train(device):
        with tf.device(device):
            w1, w2 = tf.Variable(w1_0), tf.Variable(w2_0)
            b1 = tf.Variable(np.zeros(6, np.float32))

            @tf.function
            def step(x, y):
                with tf.GradientTape() as tape:
                    h = tf.nn.relu(tf.matmul(x, w1) + b1)
                    logits = tf.matmul(h, w2)
                    loss = tf.reduce_mean(
                        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
                grads = tape.gradient(loss, [w1, b1, w2])
                for v, g in zip([w1, b1, w2], grads):
                    v.assign_sub(0.1 * g)
                return loss

            losses = [step(tf.constant(x), tf.constant(labels)).numpy() for _ in range(3)]
            assert w1.device.endswith(device.strip("/"))
            return losses, w1.numpy(), w2.numpy()

    gpu_losses, gpu_w1, gpu_w2 = train("/GPU:0")
    cpu_losses, cpu_w1, cpu_w2 = train("/CPU:0")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    np.testing.assert_allclose(gpu_w1, cpu_w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gpu_w2, cpu_w2, rtol=1e-5, atol=1e-6)
    assert gpu_losses[2] < gpu_losses[0]


def test_control_flow_and_random_draws_on_the_gpu(gpu):
    def fn(x):
        total = tf.constant(0.0)
        for i in tf.range(3):
            if tf.reduce_sum(x) > 0:
                total += tf.reduce_sum(x) * tf.cast(i, tf.float32)
            else:
                total -= 1.0
        return total + tf.random.uniform((), seed=3)

    results = {}
    for device in ("/GPU:0", "/CPU:0"):
        tf.random.set_seed(5)   # the same stream in both traces
        function = tf.function(fn)
        with tf.device(device):
            results[device] = function(tf.constant([1.0, 2.0])).numpy()
            graph = function.get_concrete_function(tf.constant([1.0, 2.0])).graph
        assert graph.device.endswith(device.strip("/"))
    assert 9.0 <= results["/GPU:0"] < 10.0
    np.testing.assert_allclose(results["/GPU:0"], results["/CPU:0"], rtol=1e-6)


def test_an_input_signature_traces_once_for_the_device(gpu):
    w = tf.Variable(tf.ones([3, 2]))

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def product(x):
        return tf.matmul(x, w)

    for batch in (4, 2):
        assert product(tf.constant(np.ones((batch, 3), np.float32))).shape == (batch, 2)
    assert product.experimental_get_tracing_count() == 1
    with tf.device("/CPU:0"):   # another device: another trace
        product(tf.constant(np.ones((1, 3), np.float32)))
    assert product.experimental_get_tracing_count() == 2


def test_strings_in_a_function_on_the_gpu_stay_on_the_host(gpu):
    @tf.function
    def greet(name, n):
        return name + "!", n * 2.0

    text, doubled = greet(tf.constant("you"), tf.constant(1.5))
    assert text.numpy() == b"you!" and text.device.endswith("CPU:0")
    assert doubled.device == GPU_NAME and float(doubled) == 3.0
