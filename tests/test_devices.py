"""Devices: tensors and variables know their device from their array, and eager execution runs
an op with its kernel for the device of its inputs.

The seam is tested with a fake device registered here alone: its arrays wrap host data so that
NumPy cannot compute on them by accident, and two ops get kernels for it.
"""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf.framework import devices
from hybridtf.framework.errors import InvalidArgumentError
from hybridtf.framework.tensor import Tensor
from hybridtf.registry import OPS, Kernel

CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"
FAKE_NAME = "/job:localhost/replica:0/task:0/device:FAKE:0"


class DeviceArray:
    """An array on the fake device: shape and dtype like any array, its data out of reach."""

    def __init__(self, host):
        self._host = np.array(host)
        self.shape, self.dtype, self.ndim = self._host.shape, self._host.dtype, self._host.ndim

    def __array__(self, *args, **kwargs):
        raise AssertionError("a device array was read as a host array without to_host")


def _from_host(array):
    return DeviceArray(array)


def _to_host(array):
    return array._host.copy()


FAKE = devices.Backend("fake", FAKE_NAME, (DeviceArray,), asarray=lambda v: v,
                       to_host=_to_host, from_host=_from_host)


@pytest.fixture
def fake_device(monkeypatch):
    """Registers the fake device, with kernels for ``add`` and ``negative``; returns the list of
    the kernel calls made on it.  Everything is removed afterwards."""
    calls = []

    def add(arrays, attrs):
        calls.append("add")
        x, y = arrays
        return DeviceArray(x._host + y._host)

    def negative(arrays, attrs):
        calls.append("negative")
        return DeviceArray(-arrays[0]._host)

    devices.register(FAKE)
    monkeypatch.setitem(OPS["add"].kernels, "fake", Kernel(add))
    monkeypatch.setitem(OPS["negative"].kernels, "fake", Kernel(negative))
    yield calls
    devices.unregister(FAKE)


def _on_fake(value):
    return Tensor(FAKE.from_host(np.asarray(value, np.float32)))


def test_cpu_tensors_and_variables_report_the_cpu():
    assert tf.constant([1.0, 2.0]).device == CPU_NAME
    assert tf.constant(3).device == CPU_NAME
    assert (tf.constant(1.0) + 1.0).device == CPU_NAME   # a NumPy scalar value
    assert tf.Variable([1.0]).device == CPU_NAME
    assert devices.backend_of(np.float32(1)) is devices.CPU


def test_a_tensor_reports_the_device_of_its_array(fake_device):
    x = _on_fake([1.0, 2.0])
    assert x.device == FAKE_NAME
    assert x.shape == (2,) and x.dtype == tf.float32
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])   # copied to the host
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])


def test_ops_with_a_kernel_for_the_device_run_it(fake_device):
    x, y = _on_fake([1.0, 2.0]), _on_fake([10.0, 20.0])
    for result in (tf.add(x, y), x + y):   # the generic path and the operator's fast path
        assert result.device == FAKE_NAME
        np.testing.assert_array_equal(result.numpy(), [11.0, 22.0])
    negated = -x
    assert negated.device == FAKE_NAME
    np.testing.assert_array_equal(negated.numpy(), [-1.0, -2.0])
    assert fake_device == ["add", "add", "negative"]


def test_ops_without_a_kernel_for_the_device_run_on_the_cpu(fake_device, caplog):
    x = _on_fake([1.0, 2.0])
    assert OPS["add"].has_kernel(FAKE) and not OPS["exp"].has_kernel(FAKE)
    with caplog.at_level("INFO", logger="hybridtf.placement"):
        for _ in range(2):
            result = tf.exp(x)
            assert result.device == CPU_NAME   # soft placement: TF's default
            np.testing.assert_allclose(result.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    logged = [r.getMessage() for r in caplog.records if "exp has no kernel" in r.getMessage()]
    assert len(logged) == 1 and FAKE_NAME in logged[0]   # once per op and device
    assert fake_device == []


def test_without_soft_placement_a_scoped_op_without_a_kernel_is_an_error(fake_device):
    x = _on_fake([1.0, 2.0])
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device("/FAKE:0"):
            with pytest.raises(InvalidArgumentError, match="exp: cannot run on") as info:
                tf.exp(x)
            assert FAKE_NAME in str(info.value)
            with pytest.raises(InvalidArgumentError, match="Could not satisfy"):
                with tf.device("/FAKE:7"):
                    tf.add(x, x)
    finally:
        tf.config.set_soft_device_placement(True)
    assert devices.PLACEMENT.soft and fake_device == []


def test_inputs_on_different_devices_are_copied_to_the_op_device(fake_device):
    x, y = _on_fake([1.0, 2.0]), tf.constant([10.0, 20.0])
    for result in (tf.add(x, y), tf.add(y, x)):   # the input off the CPU decides
        assert result.device == FAKE_NAME
        np.testing.assert_array_equal(result.numpy(), [11.0, 22.0])
    with tf.device("/CPU:0"):   # a scope decides before the inputs
        on_cpu = tf.add(x, y)
    assert on_cpu.device == CPU_NAME
    np.testing.assert_array_equal(on_cpu.numpy(), [11.0, 22.0])
    assert fake_device == ["add", "add"]


def test_device_strings_are_parsed_as_tf_does():
    assert devices.parse("/GPU:0") == ("GPU", 0)
    assert devices.parse("gpu:1") == ("GPU", 1)
    assert devices.parse("/job:localhost/replica:0/task:0/device:CPU:0") == ("CPU", 0)
    assert devices.parse("/device:GPU:*") == ("GPU", None)
    assert devices.parse("/job:localhost") == (None, None) == devices.parse("")
    with pytest.raises(ValueError, match="Cannot parse device specification 'GPU0'"):
        tf.device("GPU0")
    with pytest.raises(TypeError, match="must be a string or None"):
        tf.device(0)


def test_without_a_gpu_every_scope_runs_on_the_cpu():
    assert tf.config.list_logical_devices("GPU") == []
    assert devices.PLACEMENT.cpu_only
    for name in ("/GPU:0", "/CPU:0", "/TPU:3", None, ""):
        with tf.device(name):
            assert (tf.constant([1.0]) * 2.0).device == CPU_NAME
            assert tf.Variable(1.0).device == CPU_NAME


def test_the_fake_device_leaves_no_trace():
    assert "fake" not in devices.backends()
    assert "fake" not in OPS["add"].kernels
    with pytest.raises(TypeError, match="No device holds arrays of type DeviceArray"):
        Tensor(DeviceArray([1.0])).device


def test_a_backend_is_registered_once(fake_device):
    with pytest.raises(ValueError, match="already registered"):
        devices.register(FAKE)
