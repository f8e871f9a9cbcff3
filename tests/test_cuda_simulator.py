"""The CUDA simulator the tests run GPU code on: its swap of the ``cuda`` module is counted
(``ops.cuda.simulator``), so device functions of one module run on many threads at once."""
import sys
import threading
import types

import numpy as np
import pytest
from numba import cuda

from ops.cuda import launch, simulator

pytestmark = pytest.mark.skipif(not launch.SIMULATED, reason="checks the CUDA simulator")

DEVICE_MODULE = '''
from numba import cuda

@cuda.jit(device=True)
def thread_index_times_twenty():
    total = 0
    for _ in range(20):            # many reads of cuda.threadIdx, with switches in between
        total += cuda.threadIdx.x
    return total
'''


def test_the_simulator_uses_the_counted_swap():
    from numba.cuda.simulator import kernel
    assert kernel.swapped_cuda_module is simulator.counted_swap


def test_the_real_module_comes_back_when_the_last_call_inside_a_module_returns():
    namespace = {"cuda": cuda, "gpu": cuda, "other": np}
    fn = types.FunctionType((lambda: None).__code__, namespace)
    fake = object()
    first_inside, second_inside, first_out = (threading.Event() for _ in range(3))
    seen = {}

    def first():
        with simulator.counted_swap(fn, fake):
            first_inside.set()
            second_inside.wait(timeout=30)
        first_out.set()

    def second():
        first_inside.wait(timeout=30)
        with simulator.counted_swap(fn, fake):
            second_inside.set()
            first_out.wait(timeout=30)
            seen["after the first returned"] = (namespace["cuda"], namespace["gpu"])
        seen["after both returned"] = (namespace["cuda"], namespace["gpu"], namespace["other"])

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert seen["after the first returned"] == (fake, fake)
    assert seen["after both returned"] == (cuda, cuda, np)
    assert simulator._swaps == {}


def test_device_functions_of_another_module_run_on_many_threads_at_once():
    module = types.ModuleType("simulated_device_functions")
    exec(DEVICE_MODULE, module.__dict__)

    @cuda.jit
    def kernel(out):
        out[cuda.threadIdx.x] = module.thread_index_times_twenty()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)        # threads switch inside the device function often
    try:
        for _ in range(40):            # without the counted swap, some of them fail
            out = np.zeros(64, np.int64)
            kernel[1, 64](out)
            np.testing.assert_array_equal(out, np.arange(64) * 20)
    finally:
        sys.setswitchinterval(interval)
