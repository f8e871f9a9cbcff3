"""``python -m hybridtf.warmup`` compiles the kernel library into the kernel cache."""
import subprocess
import sys

import pytest

from hybridtf import warmup
from ops import elementwise


def test_warm_up_compiles_the_ufunc_of_every_elementwise_op_for_each_dtype(monkeypatch):
    done = []
    monkeypatch.setattr(warmup, "LIBRARY_TASKS", (("noted", lambda: done.append(True)),))
    count = warmup.warm_up(["bool", "int32"], progress=False)
    expected = sum(("bool" in op.dtypes) + ("int32" in op.dtypes)
                   for op in elementwise.SCALAR_OPS.values())
    assert count == expected + 1 and done == [True]
    assert elementwise.ufunc("add", "int32").types == ["ii->i"]


def test_the_library_tasks_run():
    for _, task in warmup.LIBRARY_TASKS:
        task()


def test_the_command_rejects_unknown_dtypes():
    with pytest.raises(SystemExit):
        warmup.main(["--dtypes", "float32,complex7"])


def test_the_command_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "hybridtf.warmup", "--dtypes", "bool",
                           "--quiet"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
