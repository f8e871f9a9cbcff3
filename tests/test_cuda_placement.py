"""Placement with a GPU present (Numba's CUDA simulator stands in for one): TF's default
placement, ``tf.device`` scopes, copies between host and device, variables, decorated functions
and gradients on GPU tensors, and the ``tf.config`` device functions."""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf.framework import cuda_device, devices

CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU_NAME = "/job:localhost/replica:0/task:0/device:GPU:0"


def test_the_gpu_is_listed_as_tf_lists_it(gpu):
    assert tf.config.list_physical_devices("GPU") == [
        tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")]
    names = [d.name for d in tf.config.list_logical_devices()]
    assert names == ["/device:CPU:0", "/device:GPU:0"]
    assert tf.test.gpu_device_name() == "/device:GPU:0" and tf.test.is_gpu_available()
    details = tf.config.experimental.get_device_details(gpu)
    assert len(details["compute_capability"]) == 2
    tf.config.experimental.set_memory_growth(gpu, True)
    assert tf.config.experimental.get_memory_growth(gpu)


def test_hidden_gpu_takes_no_ops():
    # (the tests run with the GPU hidden but where they ask for it)
    assert tf.config.list_physical_devices("GPU") and not tf.config.list_logical_devices("GPU")
    assert tf.test.gpu_device_name() == ""
    assert tf.constant([1.0]).device == CPU_NAME
    with pytest.raises(ValueError, match="the CPU must stay visible"):
        tf.config.set_visible_devices(tf.config.list_physical_devices("GPU"))


def test_new_tensors_and_variables_go_to_the_gpu_by_default(gpu):
    x = tf.constant([1.0, 2.0])
    v = tf.Variable([[1, 2]])
    assert x.device == GPU_NAME and v.device == GPU_NAME
    assert isinstance(x._value, cuda_device.BACKEND.array_types)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])   # copied to the host
    assert tf.constant(["a"]).device == CPU_NAME   # strings stay on the host
    with tf.device("/CPU:0"):
        assert tf.constant(1.0).device == CPU_NAME
        assert tf.Variable(1.0).device == CPU_NAME
        with tf.device(None):   # clears the scope: the default again
            assert tf.constant(1.0).device == GPU_NAME
        with tf.device("/job:localhost"):   # names no device: the enclosing scope holds
            assert tf.constant(1.0).device == CPU_NAME


def test_identity_copies_between_host_and_device(gpu):
    with tf.device("/CPU:0"):
        host = tf.constant([1.0, 2.0, 3.0])
    with tf.device("/GPU:0"):
        on_gpu = tf.identity(host)
    with tf.device("/CPU:0"):
        back = tf.identity(on_gpu)
    assert (host.device, on_gpu.device, back.device) == (CPU_NAME, GPU_NAME, CPU_NAME)
    np.testing.assert_array_equal(back.numpy(), [1.0, 2.0, 3.0])


def test_ops_run_where_their_inputs_are_and_copy_the_others(gpu):
    with tf.device("/CPU:0"):
        host = tf.constant([1.0, 2.0])
    on_gpu = tf.constant([10.0, 20.0])
    total = host + on_gpu
    assert total.device == GPU_NAME
    np.testing.assert_array_equal(total.numpy(), [11.0, 22.0])


def test_variables_update_on_their_device(gpu):
    v = tf.Variable([1.0, 2.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub(tf.constant([0.5, 0.5]))
    assert v.device == GPU_NAME
    np.testing.assert_array_equal(v.numpy(), [1.5, 2.5])
    v.assign([7.0, 8.0])
    assert v.device == GPU_NAME
    np.testing.assert_array_equal(v.numpy(), [7.0, 8.0])


def test_a_decorated_function_runs_on_the_device_it_was_placed_on(gpu):
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x):
        v.assign_add(x * 2.0)
        return tf.reduce_sum(v) + x

    with tf.device("/CPU:0"):
        host_x = tf.constant([1.0, 1.0])
    result = step(host_x)   # a host input is copied to the graph's device
    assert step.get_concrete_function(host_x).graph.device == GPU_NAME
    np.testing.assert_allclose(result.numpy(), [8.0, 8.0])
    assert v.device == GPU_NAME
    np.testing.assert_allclose(v.numpy(), [3.0, 4.0])
    with tf.device("/CPU:0"):   # a scope is part of the trace's key
        on_cpu = step(host_x)
        assert step.get_concrete_function(host_x).graph.device == CPU_NAME
    np.testing.assert_allclose(on_cpu.numpy(), [12.0, 12.0])
    assert v.device == GPU_NAME   # the variable stays on its device
    np.testing.assert_allclose(v.numpy(), [5.0, 6.0])


def test_gradients_of_gpu_tensors_equal_the_cpu_ones(gpu):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((3, 4)).astype(np.float32)
    w_np = rng.standard_normal((4, 2)).astype(np.float32)

    def loss_and_grads(device):
        with tf.device(device):
            x, w = tf.constant(x_np), tf.Variable(w_np)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.tanh(tf.matmul(x, w)) ** 2)
            return loss, tape.gradient(loss, w)

    cpu_loss, cpu_grad = loss_and_grads("/CPU:0")
    gpu_loss, gpu_grad = loss_and_grads("/GPU:0")
    np.testing.assert_allclose(gpu_loss.numpy(), cpu_loss.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gpu_grad.numpy(), cpu_grad.numpy(), rtol=1e-5, atol=1e-6)


def test_placement_can_be_logged(gpu, capsys):
    tf.debugging.set_log_device_placement(True)
    try:
        with tf.device("/CPU:0"):
            tf.negative(tf.constant(1.0))
    finally:
        tf.debugging.set_log_device_placement(False)
    assert f"Executing op negative in device {CPU_NAME}" in capsys.readouterr().out
    assert devices.PLACEMENT.cpu_only is False   # the GPU is still visible


def test_running_out_of_gpu_memory_is_resource_exhausted(gpu, monkeypatch):
    from hybridtf.registry import OPS

    class OutOfMemory(Exception):
        code = 2   # the CUDA driver's CUDA_ERROR_OUT_OF_MEMORY, as Numba raises it

    def exhausted(arrays, attrs):
        raise OutOfMemory("cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")

    monkeypatch.setattr(OPS["matmul"].kernels["cuda"], "run", exhausted)
    x = tf.constant([[1.0, 2.0]])
    with pytest.raises(tf.errors.ResourceExhaustedError, match="matmul: out of memory on"):
        tf.matmul(x, x, transpose_b=True)

    @tf.function
    def f(x):   # a step of the compiled plan
        return tf.matmul(x, x, transpose_b=True) + 1.0
    with pytest.raises(tf.errors.ResourceExhaustedError, match="out of memory"):
        f(x)


def test_a_broken_cuda_driver_means_no_gpu_and_says_why(monkeypatch):
    def broken():
        raise OSError("libcuda.so: cannot open shared object file")

    monkeypatch.setattr(cuda_device.cuda, "is_available", broken)
    with pytest.warns(RuntimeWarning, match="CUDA driver could not be initialised .*libcuda"):
        assert cuda_device._gpu_present() is False
