"""``python -m hybridtf.warmup`` compiles the kernel library into the kernel cache."""
import subprocess
import sys

import pytest

from hybridtf import warmup
from ops import elementwise, linalg, native_parts, threads
from ops.nn import conv_im2col, conv_shift, conv_winograd3, conv_winograd5


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


def test_the_kernel_threads_waiting_loops_are_compiled(monkeypatch):
    # a program's first split would compile them otherwise (0.2-0.5 s of its first step)
    monkeypatch.setattr(threads, "_looks", None)
    tasks = dict(warmup.LIBRARY_TASKS)
    tasks["kernel threads"]()
    assert all(loop.signatures for loop in (threads._spin_while_equal, threads._serve_parts,
                                            threads._take_back_or_wait))
    assert threads._looks is not None


def test_the_products_task_compiles_the_forms_of_a_product_in_parts():
    # a first step whose products split into parts would compile them otherwise
    dict(warmup.LIBRARY_TASKS)["matrix products"]()
    assert {str(signature[2].dtype) for signature in linalg.describe_part.signatures} >= {
        "float32", "float64"}
    assert native_parts.run.signatures


def test_the_convolutions_reach_every_algorithm_forward_and_backward(monkeypatch):
    entries = {conv_im2col: ("forward", "backprop_input", "backprop_filter"),
               conv_shift: ("forward", "backprop_input", "backprop_filter"),
               conv_winograd3: ("forward", "backprop_filter"),   # dx: forward, filter turned
               conv_winograd5: ("forward", "backprop_filter")}
    reached = set()
    for module, names in entries.items():
        for name in names:
            def noted(*args, _real=getattr(module, name), _key=(module.__name__, name),
                      **kwargs):
                reached.add(_key)
                return _real(*args, **kwargs)
            monkeypatch.setattr(module, name, noted)
    warmup._convolutions()
    assert reached == {(m.__name__, n) for m, names in entries.items() for n in names}


def test_the_command_rejects_unknown_dtypes():
    with pytest.raises(SystemExit):
        warmup.main(["--dtypes", "float32,complex7"])


def test_the_command_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "hybridtf.warmup", "--dtypes", "bool",
                           "--quiet"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
