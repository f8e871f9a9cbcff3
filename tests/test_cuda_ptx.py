"""The CUDA compiler's kernels -- fused groups, and loops and branches run as one kernel --
compile for a real GPU (PTX through libNVVM), checked where no GPU is present: the simulator
that runs the other GPU tests runs kernels as Python and accepts code that a GPU's compiler
rejects.  Needs libNVVM (the ``nvidia-cuda-nvcc-cu12`` wheel, or a
CUDA toolkit); skipped without it."""
import os
import pathlib
import subprocess
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent


def _environment():
    # A process of its own: numba.cuda is the simulator in this one.
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), env.get("PYTHONPATH", "")])
    return env


def _nvvm_missing():
    found = subprocess.run(
        [sys.executable, "-c", "from numba.cuda.cudadrv import nvvm; nvvm.NVVM()"],
        env=_environment(), capture_output=True, text=True, timeout=120)
    return found.returncode != 0


@pytest.mark.skipif(_nvvm_missing(), reason="libNVVM not found (pip install "
                    "nvidia-cuda-nvcc-cu12, or a CUDA toolkit): the CUDA kernels cannot be "
                    "compiled to PTX here")
def test_fused_kernels_compile_for_a_gpu():
    done = subprocess.run([sys.executable, str(TESTS / "ptx_check.py")], env=_environment(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "ok a train step" in done.stdout
    assert "ok tanh float32" in done.stdout and "ok select" in done.stdout
    assert "ok loop: w5" in done.stdout and "ok loop: nested" in done.stdout
    assert "ok random: _uniform_int_kernel" in done.stdout
