"""Test configuration: a reusable Numba/kernel cache and hypothesis profiles."""
import os
import pathlib

# Compiled kernels are cached on disk so that a second run (and CI's reuse of its cache
# directory) skips Numba's slow compilation: hybridtf's kernels in HYBRIDTF_CACHE_DIR, the
# tests' own @njit functions in NUMBA_CACHE_DIR.  Must be set before numba is imported.
_CACHE = pathlib.Path(__file__).resolve().parent.parent / ".numba_cache"
os.environ.setdefault("NUMBA_CACHE_DIR", str(_CACHE / "numba"))
os.environ.setdefault("HYBRIDTF_CACHE_DIR", str(_CACHE / "hybridtf"))
# Traced functions compile on their first call, so that a test of a compiled plan checks the
# plan and a compiler failure fails the call that met it; tests/test_execution_tiers.py checks
# the default (the interpreter first, the kernels compiled in the background).
os.environ.setdefault("HYBRIDTF_SYNCHRONOUS_COMPILATION", "1")
# CUDA code runs on Numba's CUDA simulator, which needs no GPU, unless HYBRIDTF_TEST_GPU=1 asks
# for the real GPU.  numba.cuda binds the simulator when it is imported with the variable set;
# it is removed again so that the processes the tests start see no GPU.
if os.environ.get("HYBRIDTF_TEST_GPU") != "1" and "NUMBA_ENABLE_CUDASIM" not in os.environ:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import numba.cuda  # noqa: E402,F401
    del os.environ["NUMBA_ENABLE_CUDASIM"]

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "default", max_examples=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "thorough", max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config):
    # A graph the compiler fails on would otherwise pass every test on the slower interpreter.
    # (Added here rather than in setup.cfg: resolving the class imports hybridtf, which must
    # wait for the environment set above.)
    config.addinivalue_line("filterwarnings", "error::hybridtf.compiler.CompilationWarning")
    # The GPU (the simulated one) is hidden but where a test asks for it (the ``gpu`` fixture):
    # elsewhere ops run on the CPU, as on a machine without a GPU.
    import hybridtf as tf
    tf.config.set_visible_devices(tf.config.list_physical_devices("CPU"))


@pytest.fixture
def gpu():
    """Makes the GPU visible for the test, so that ops go there by default as in TF; the
    CUDA simulator's stands in for one unless HYBRIDTF_TEST_GPU=1."""
    import hybridtf as tf
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        pytest.skip("no GPU is present (and the CUDA simulator is off)")
    tf.config.set_visible_devices(tf.config.list_physical_devices())
    try:
        yield gpus[0]
    finally:
        tf.config.set_visible_devices(tf.config.list_physical_devices("CPU"))
