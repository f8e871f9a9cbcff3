"""The benchmark suite runs, and every workload's frameworks compute the same thing.

Times are never asserted (BENCHMARKS.md): these tests check that the suite works and that each
variant of each workload agrees with the NumPy reference before anything of it would be timed.
Peers that are not installed (TensorFlow, JAX, PyTorch in CI) are skipped; hybridtf features
that do not exist yet (``hybridtf.function`` until it lands) are skipped with the suite's own
"missing" reason. A hybridtf variant that raises or computes a different result fails.
"""
import copy
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:  # benchmarks/ is not an installed package
    sys.path.insert(0, REPO_ROOT)

from benchmarks import devices, frameworks, profiles, report  # noqa: E402
from benchmarks.__main__ import main  # noqa: E402
from benchmarks.agreement import Tolerance, compare, flatten, relative_error  # noqa: E402
from benchmarks.frameworks import Missing, NotImportable, Unavailable, require  # noqa: E402
from benchmarks.framework_processes import FrameworkProcesses  # noqa: E402
from benchmarks.harness import Prepared, time_alternating  # noqa: E402
from benchmarks.records import VariantFailed, record_failure  # noqa: E402
from benchmarks.suite import add_bandwidth, run_suite, run_timed  # noqa: E402
from benchmarks.subprocesses import run_child  # noqa: E402
from benchmarks.targets import evaluate  # noqa: E402
from benchmarks.workloads import GPU_WORKLOADS, WORKLOADS  # noqa: E402
from benchmarks.workloads import (d1_data_parallel, w1_seed_function, w2_small_chain,  # noqa: E402
                                  w3_mlp, w4_cnn)
from benchmarks.workloads.base import Impl, Workload  # noqa: E402

SMOKE = profiles.SMOKE
TIMED = [w for w in WORKLOADS.values() if w.kind == "time"]
VARIANTS = [pytest.param(w.id, i.framework, i.mode, id=f"{w.id}-{i.framework}-{i.mode}")
            for w in TIMED for i in w.impls if i.framework != "numpy"]
QUIET = None


def _impl(workload, framework, mode):
    return next(i for i in workload.impls if (i.framework, i.mode) == (framework, mode))


@pytest.fixture(scope="module")
def references():
    """NumPy's result for each workload, computed once per test module."""
    cache = {}

    def get(workload):
        if workload.id not in cache:
            reference = _impl(workload, "numpy", "eager")
            cache[workload.id] = reference.build(np, SMOKE).result()
        return cache[workload.id]
    return get


def _load_or_skip(framework):
    try:
        return frameworks.load(framework)
    except Unavailable as exc:
        pytest.skip(str(exc))
    except NotImportable as exc:
        pytest.fail(str(exc))


@pytest.mark.parametrize("workload_id", [w.id for w in TIMED])
def test_every_timed_workload_has_a_numpy_reference_and_a_hybridtf_eager_variant(workload_id):
    workload = WORKLOADS[workload_id]
    keys = [(i.framework, i.mode) for i in workload.impls]
    assert keys[0] == ("numpy", "eager"), "the first variant is the reference"
    assert ("hybridtf", "eager") in keys and ("hybridtf", "function") in keys


def test_numpy_references_are_finite_and_deterministic(references):
    for workload in TIMED:
        first = references(workload)
        for _, leaf in flatten(first):
            assert np.all(np.isfinite(leaf)), workload.id
        if workload.id not in ("W4", "W6"):  # the two slow ones are left out of the rerun
            again = _impl(workload, "numpy", "eager").build(np, SMOKE).result()
            assert compare(again, first, 0.0)["ok"], workload.id


@pytest.mark.parametrize("workload_id, framework, mode", VARIANTS)
def test_variant_agrees_with_numpy(workload_id, framework, mode, references):
    workload = WORKLOADS[workload_id]
    module = _load_or_skip(framework)
    try:
        prepared = _impl(workload, framework, mode).build(module, SMOKE)
        result = prepared.result()
    except Missing as exc:
        pytest.skip(f"{framework} {mode} reported missing: {exc}")
    outcome = compare(result, references(workload), workload.tolerance)
    assert outcome["ok"], f"{workload_id} {framework}/{mode} disagrees with NumPy: {outcome}"
    prepared.call()  # the timed callable runs too, after the check


def test_train_steps_move_the_weights(references):
    """The W3/W4 references really train: the loss changes, every weight leaves its start."""
    for workload_id, module in (("W3", w3_mlp), ("W4", w4_cnn)):
        result = references(WORKLOADS[workload_id])
        losses = [float(v) for v in result["loss"]]
        assert np.all(np.isfinite(losses)) and losses[-1] != losses[0], (workload_id, losses)
        initial = module.initial_params()
        moved = [relative_error(p, q) > 0 for p, q in zip(result["params"], initial)]
        assert all(moved), workload_id


def test_compare_flags_wrong_results():
    reference = {"loss": [np.float32(2.5)], "params": [np.linspace(-1, 1, 1000, dtype=np.float32)]}
    assert compare(reference, reference, 1e-6)["ok"]
    wrong_loss = {"loss": [np.float32(2.51)], "params": reference["params"]}
    assert not compare(wrong_loss, reference, 1e-4)["ok"]
    wrong_shape = {"loss": [np.float32(2.5)], "params": [reference["params"][:-1]]}
    assert not compare(wrong_shape, reference, 1.0)["ok"]
    assert not compare([np.float32(np.nan)], [np.float32(1.0)], 1.0)["ok"]
    # A few outliers pass a quantile tolerance, a general drift does not.
    params = reference["params"][0].copy()
    params[:3] += 0.5
    loose = {"loss": 1e-4, "params": Tolerance(1e-3, quantile=0.99)}
    assert compare({"loss": reference["loss"], "params": [params]}, reference, loose)["ok"]
    drifted = reference["params"][0] * np.float32(1.01)
    assert not compare({"loss": reference["loss"], "params": [drifted]}, reference, loose)["ok"]


def test_require_names_every_missing_attribute():
    require(np, "linalg.norm", "float32")
    with pytest.raises(Missing, match=r"numpy\.no_such_op, numpy\.linalg\.no_such_norm"):
        require(np, "no_such_op", "linalg.no_such_norm", "mean")


def _toy_workload(second):
    def build_reference(module, profile):
        return Prepared(lambda: np.arange(4, dtype=np.float32))
    return Workload(id="T0", title="toy", shapes="(4,)", tolerance=1e-6,
                    impls=(Impl("numpy", "eager", build_reference),
                           Impl("numba", "fused", second)))


def test_a_disagreeing_variant_is_reported_and_not_timed():
    wrong = _toy_workload(lambda m, p: Prepared(lambda: np.arange(4, dtype=np.float32) + 1))
    variants = run_timed(wrong, SMOKE, None, lambda message: None)
    assert variants[0]["status"] == "ok" and variants[0]["metrics"]["time_s"]["median"] > 0
    assert variants[1]["status"] == "mismatch"
    assert variants[1]["metrics"] == {}


def test_missing_features_and_errors_are_reported_not_raised():
    def missing(module, profile):
        require(np, "function")  # like hybridtf.function before it exists
    missing_variants = run_timed(_toy_workload(missing), SMOKE, None, lambda message: None)
    assert missing_variants[1]["status"] == "missing"
    assert "numpy.function" in missing_variants[1]["reason"]

    def broken(module, profile):
        raise RuntimeError("kernel exploded")
    error_variants = run_timed(_toy_workload(broken), SMOKE, None, lambda message: None)
    assert error_variants[1]["status"] == "error"
    assert "kernel exploded" in error_variants[1]["reason"]


def test_each_framework_runs_in_a_process_of_its_own():
    """What ``run_suite`` does: the variants of one framework share a process, no other
    framework's; a process that dies fails its variants, not the run."""
    workload = WORKLOADS["W2"]
    index = {(i.framework, i.mode): n for n, i in enumerate(workload.impls)}
    with FrameworkProcesses(devices.CPU) as processes:
        reference = processes.build("W2", index["numpy", "eager"], "numpy", SMOKE)
        eager = processes.build("W2", index["hybridtf", "eager"], "hybridtf", SMOKE)
        function = processes.build("W2", index["hybridtf", "function"], "hybridtf", SMOKE)
        pids = processes.pids()
        assert len(set(pids)) == 2 and os.getpid() not in pids
        for variant in (eager, function):
            assert compare(variant.result(), reference.result(), workload.tolerance)["ok"]
        timings, failures = time_alternating({"numpy": reference, "function": function}, SMOKE)
        assert not failures
        assert all(len(t["samples"]) == SMOKE.rounds and t["median"] > 0
                   for t in timings.values())
        os.kill(pids[1], signal.SIGKILL)
        with pytest.raises(VariantFailed, match="hybridtf process ended"):
            eager.sample(1, 0)
        entry = {}
        record_failure(entry, VariantFailed({"status": "missing", "reason": "no such API"}))
        assert entry == {"status": "missing", "reason": "no such API"}


def _statuses(workload):
    return {v["key"]: v["status"] for v in workload["variants"]}


def _assert_no_failures(workload):
    bad = {v["key"]: v["reason"] for v in workload["variants"]
           if v["status"] in ("error", "mismatch")}
    assert not bad, (workload["id"], bad)


def test_smoke_run_of_the_suite_through_the_python_api(tmp_path):
    results = run_suite(only=["W0", "W2", "W5"], profile="smoke",
                        frameworks_allowed=["numpy", "numba", "hybridtf"], log=QUIET)
    assert list(results["workloads"]) == ["W0", "W2", "W5"]
    for workload in results["workloads"].values():
        statuses = _statuses(workload)
        assert statuses["numpy/eager"] == "ok", (workload["id"], statuses)
        _assert_no_failures(workload)
        for variant in workload["variants"]:
            if variant["framework"] in ("tensorflow", "jax", "torch"):
                assert variant["status"] == "skipped"
    w0 = {v["key"]: v for v in results["workloads"]["W0"]["variants"]}
    assert w0["numba/fused"]["status"] == "ok"
    assert w0["numpy/eager"]["metrics"]["time_s"]["median"] > 0
    if w0["hybridtf/eager"]["status"] == "ok":
        pairs = {(r["hybridtf"], r["peer"]) for r in results["workloads"]["W0"]["ratios"]}
        assert ("hybridtf/eager", "numpy/eager") in pairs

    text = report.format_results(results)
    for workload_id in results["workloads"]:
        assert f"\n{workload_id}  " in text
    path = tmp_path / "out.json"
    report.write_json(results, str(path))
    assert json.loads(path.read_text())["workloads"]["W2"]["id"] == "W2"


def test_smoke_run_of_the_fresh_process_workloads():
    """C1 and M1's child processes, with NumPy only: hybridtf's cold compile would take the
    test's time (the W3 agreement tests cover hybridtf's step)."""
    results = run_suite(only=["C1", "M1"], profile="smoke", frameworks_allowed=["numpy"],
                        log=QUIET)
    for workload in results["workloads"].values():
        assert _statuses(workload)["numpy/eager"] == "ok"
        _assert_no_failures(workload)
    m1 = {v["key"]: v for v in results["workloads"]["M1"]["variants"]}
    assert 10 < m1["numpy/eager"]["metrics"]["peak_rss_mib"]["median"] < 4096
    c1 = {v["key"]: v for v in results["workloads"]["C1"]["variants"]}
    assert c1["numpy/eager"]["metrics"]["cold_first_call_s"]["median"] > 0
    assert "C1  first call" in report.format_results(results)


def test_smoke_run_of_the_retracing_workload():
    """R1's child process with hybridtf: every call a new trace, no new kernel, no cache file."""
    results = run_suite(only=["R1"], profile="smoke", frameworks_allowed=["hybridtf"],
                        log=QUIET)
    variant = {v["key"]: v for v in results["workloads"]["R1"]["variants"]}["hybridtf/function"]
    assert variant["status"] == "ok", variant.get("reason")
    assert variant["agreement"]["ok"]
    assert variant["tracing_count"] == 1 + SMOKE.r1_calls
    assert variant["metrics"]["cache_files"]["median"] == 0
    assert "R1  retracing" in report.format_results(results)


def test_first_step_child_runs_the_example_s_step():
    """C2's child with hybridtf: the example's model and decorated step, its first and second
    calls and the step undecorated (small batch: the figures are C2's, not the test's)."""
    result = run_child(["hybridtf", "--batch-size", "2", "--conv2-filters", "8",
                        "--dense-units", "16", "--eager-steps", "1"],
                       module="benchmarks.first_step_child", timeout=600)
    assert result["status"] == "ok", result
    assert result["first_step_s"] > 0 and result["second_step_s"] > 0
    assert result["eager_step_s"] > 0
    assert 0.5 < result["first_loss"] < 5.0   # ten classes from random weights: about ln 10


def test_first_step_child_binds_the_example_to_the_framework_given():
    """TensorFlow runs the example with ``tf`` bound to it; hybridtf stays what it was."""
    import types
    from benchmarks import first_step_child
    import hybridtf
    stand_in = types.SimpleNamespace(keras=types.SimpleNamespace(Model=object))
    example = first_step_child.load_example(stand_in)
    assert example.tf is stand_in and example.CNN.__mro__[1] is object
    assert sys.modules["hybridtf"] is hybridtf
    example = first_step_child.load_example(hybridtf)
    assert example.CNN(conv2_filters=8, dense_units=16).dense1.units == 16


def test_c2_flags_batch_50_runs_whose_first_losses_disagree():
    from benchmarks.records import new_variant
    from benchmarks.workloads import c2_first_step
    agreeing = new_variant("hybridtf", "function")
    c2_first_step.check_losses(agreeing, {"cold": 2.302585, "warm": 2.302586,
                                          "after warmup": 2.302585})
    assert agreeing["status"] is None and agreeing["agreement"]["ok"]
    disagreeing = new_variant("hybridtf", "function")
    c2_first_step.check_losses(disagreeing, {"cold": 2.302585, "warm": 2.31})
    assert disagreeing["status"] == "mismatch" and "warm run's first loss" in disagreeing["reason"]


@pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or d1_data_parallel.mpiexec() is None,
    reason='D1 needs the `distributed` extra (mpi4py, mpiexec): pip install -e ".[distributed]"')
def test_data_parallel_child_on_one_and_two_ranks():
    """D1's ranks with hybridtf's W3 step: the averaged gradient of two ranks on equal batches
    is the one-rank gradient, so the losses agree; throughput is reported, never asserted."""
    results = {}
    for ranks in (1, 2):
        results[ranks] = run_child(["hybridtf", "W3", "--profile", "smoke"],
                                   module="benchmarks.data_parallel_child",
                                   launcher=[d1_data_parallel.mpiexec(), "-n", str(ranks)],
                                   timeout=300)
        assert results[ranks]["status"] == "ok", results[ranks]
        assert results[ranks]["ranks"] == ranks
        assert results[ranks]["images_s"] and min(results[ranks]["images_s"]) > 0
    np.testing.assert_allclose(results[2]["losses"], results[1]["losses"], rtol=1e-5)
    assert results[1]["losses"][-1] < results[1]["losses"][0]
    assert "images_s_alone" in results[2] and "images_s_alone" not in results[1]


def test_command_line_writes_json_and_plot(tmp_path, capsys):
    json_path, plot_path = tmp_path / "r.json", tmp_path / "r.png"
    code = main(["--smoke", "--only", "W0", "--frameworks", "numpy,numba", "--quiet",
                 "--json", str(json_path), "--plot", str(plot_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "W0  call overhead" in out and "Numba fused" in out
    data = json.loads(json_path.read_text())
    assert {v["status"] for v in data["workloads"]["W0"]["variants"]
            if v["framework"] in ("numpy", "numba")} == {"ok"}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "ratio chart skipped" in out
    else:
        assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_line_rejects_unknown_workloads(capsys):
    assert main(["--smoke", "--only", "W9", "--quiet"]) == 2
    assert "unknown workload" in capsys.readouterr().err


def test_command_line_knows_every_workload():
    from benchmarks.__main__ import WORKLOAD_IDS
    assert tuple(WORKLOADS) == WORKLOAD_IDS


def test_load_mode_keeps_busy_processes_running_only_during_the_block():
    from benchmarks.machine_load import BusyProcesses
    with BusyProcesses(2) as load:
        processes = list(load._processes)
        assert len(processes) == 2 and all(p.poll() is None for p in processes)
    assert all(p.poll() is not None for p in processes)
    with pytest.raises(ValueError, match="--load"):
        BusyProcesses(-1)


def test_the_load_monitor_counts_the_runs_own_processes_as_its_own():
    """A framework's process busy with a variant is this run's work, not another program's."""
    from benchmarks.machine_load import BusyProcesses, LoadMonitor
    with BusyProcesses(1) as busy:
        helper = busy._processes[0].pid
        time.sleep(0.3)   # the helper is running
        with LoadMonitor(lambda: [helper]) as own:
            time.sleep(1.0)
        with LoadMonitor() as other:
            time.sleep(1.0)
    if other.other_cpus is None:
        pytest.skip("no /proc/stat here")
    assert other.other_cpus > 0.5       # its core's worth, seen as another program's
    assert own.other_cpus < other.other_cpus - 0.5


def test_figures_of_calls_of_several_units_are_per_unit():
    from benchmarks.harness import per_unit, summarize
    timing = dict(summarize([2.0, 4.0, 6.0]), number=3)
    out = per_unit(timing, 20)
    assert out["samples"] == [0.1, 0.2, 0.3] and out["median"] == 0.2
    assert out["number"] == 3 and out["units_per_call"] == 20
    assert per_unit(timing, 1) is timing


def test_benchmark_processes_compile_traced_functions_on_their_first_call(monkeypatch):
    """Timed decorated variants run their compiled plan, not the interpreter that serves while
    kernels compile in the background: loading a framework sets the default for the process
    and its children (C1, which times the first result, overrides it)."""
    monkeypatch.delenv("HYBRIDTF_SYNCHRONOUS_COMPILATION", raising=False)
    frameworks._prepare_environment()
    assert os.environ["HYBRIDTF_SYNCHRONOUS_COMPILATION"] == "1"


# ---- the GPU variants (--device gpu), on Numba's CUDA simulator -----------------------------

def _without_simulator_environment():
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return env


def test_gpu_variants_are_the_cpu_workloads_builders_on_the_gpu():
    from benchmarks.__main__ import GPU_WORKLOAD_IDS
    assert tuple(GPU_WORKLOADS) == GPU_WORKLOAD_IDS == ("W1", "W2", "W3", "W4", "W5", "W6")
    for workload_id, gpu_workload in GPU_WORKLOADS.items():
        keys = [(i.framework, i.mode, i.timed) for i in gpu_workload.impls]
        assert keys[0] == ("numpy", "eager", False), "the CPU reference, not timed"
        assert sorted(keys[1:]) == [("hybridtf", "eager", True), ("hybridtf", "function", True),
                                    ("jax", "jit", True), ("torch", "eager", True)]
        cpu_builds = {(i.framework, i.mode): i.build for i in WORKLOADS[workload_id].impls}
        for impl in gpu_workload.impls[1:]:
            cpu_build = cpu_builds[impl.framework, impl.mode]
            assert impl.build.func is getattr(cpu_build, "func", cpu_build)
            assert impl.build.keywords == {**getattr(cpu_build, "keywords", {}),
                                           "device": devices.GPU}


def test_gpu_variants_run_on_the_simulated_gpu_and_report_their_rows(gpu, monkeypatch):
    """W1 (shrunk: the simulator runs every GPU thread in Python) and W2 for hybridtf eager and
    decorated on the simulated GPU, checked against NumPy on the CPU."""
    monkeypatch.setattr(w1_seed_function, "SHAPE", (8, 8))
    # in this process: the frameworks' own processes would not see the shrunk shape
    results = run_suite(only=["W1", "W2"], profile="smoke", log=QUIET, device="gpu",
                        frameworks_allowed=["numpy", "hybridtf"], isolated=False)
    assert results["meta"]["device"] == "gpu"
    assert results["meta"]["gpu"]["peak_bandwidth_bytes_s"] is None   # the simulator's
    for workload in results["workloads"].values():
        statuses = _statuses(workload)
        assert statuses == {"numpy/eager": "untimed", "hybridtf/eager": "ok",
                            "hybridtf/function": "ok", "jax/jit": "skipped",
                            "torch/eager": "skipped"}, (workload["id"], workload["variants"])
        for variant in workload["variants"]:
            if variant["framework"] == "hybridtf":
                assert variant["agreement"]["ok"] and variant["agreement"]["reference"] == \
                    "numpy/eager"
                assert variant["metrics"]["time_s"]["median"] > 0
    for variant in results["workloads"]["W1"]["variants"][-2:]:
        time_s = variant["metrics"]["time_s"]["median"]
        assert variant["metrics"]["bandwidth_bytes_s"]["median"] == pytest.approx(
            (2 * 8 * 8 * 4 + 4) / time_s)
        assert "bandwidth_share" not in variant["metrics"]
    text = report.format_results(results)
    assert "device: GPU variants on" in text and "peak memory bandwidth unknown" in text
    w1_rows = text.split("\nW1  ")[1].split("\nW2  ")[0]
    assert "bandwidth" in w1_rows and "of peak" in w1_rows and "unknown" in w1_rows
    assert "hybridtf function" in w1_rows and "NumPy: untimed" in w1_rows
    targets = {row["text"]: row for row in evaluate(results)}
    assert "decorated within 1.2x of hand-fused Numba" not in targets   # the CPU run's
    share_target = targets["decorated at >= 70% of the GPU's peak memory bandwidth"]
    assert share_target["status"] == "n.a." and "unknown" in share_target["why"]
    with pytest.raises(ValueError, match="with --device gpu"):
        run_suite(only=["C1"], profile="smoke", log=QUIET, device="gpu")


def test_gpu_variants_place_hybridtf_on_the_gpu(gpu, monkeypatch):
    import hybridtf as tf
    for decorated in (False, True):
        prepared = w2_small_chain.build_tf(tf, SMOKE, decorated, device=devices.GPU)
        assert prepared.call().device.endswith("GPU:0")
    place = devices.tf_placement(tf, devices.GPU)
    with tf.device("/CPU:0"), place.scope():   # the variant's placement wins over its caller's
        assert tf.constant([1.0]).device.endswith("GPU:0")
    from numba import cuda
    waits = []
    monkeypatch.setattr(cuda, "synchronize", lambda: waits.append("synchronized"))
    place = devices.tf_placement(tf, devices.GPU)   # a timed call waits for the GPU
    assert place.timed(lambda: 5)() == 5 and waits == ["synchronized"]
    call = w2_small_chain.inputs   # on the CPU a call is timed as it is, as before
    assert devices.tf_placement(tf, devices.CPU).timed(call) is call
    tf.config.set_visible_devices(tf.config.list_physical_devices("CPU"))
    with pytest.raises(Unavailable, match="hidden"):
        w2_small_chain.build_tf(tf, SMOKE, True, device=devices.GPU)


def test_w1_bandwidth_and_its_share_of_the_peak_in_the_report():
    # An H100 SXM's HBM3: 2619 MHz, 5120-bit bus, 3.35 TB/s.
    assert devices.peak_bandwidth(2_619_000, 5120) == pytest.approx(3.35232e12)
    variants = [{"status": "ok", "metrics": {"time_s": {"median": 1e-5}}},
                {"status": "skipped", "metrics": {}}]
    add_bandwidth(variants, 8_000_004, 3.2e12)
    assert variants[0]["metrics"]["bandwidth_bytes_s"]["median"] == pytest.approx(8.000004e11)
    assert variants[0]["metrics"]["bandwidth_share"]["median"] == pytest.approx(0.25)
    assert variants[1]["metrics"] == {}

    results = {"workloads": {}, "meta": {"device": "gpu", "gpu": {
        "name": "Some GPU", "compute_capability": [9, 0], "memory_clock_khz": 2_000_000,
        "memory_bus_bits": 4096, "peak_bandwidth_bytes_s": devices.peak_bandwidth(
            2_000_000, 4096)}}}
    variant = {"framework": "hybridtf", "mode": "function", "key": "hybridtf/function",
               "label": "hybridtf function", "status": "ok", "reason": None,
               "agreement": {"ok": True, "max_rel_err": 0.0, "reference": "numpy/eager"},
               "metrics": {"time_s": {"samples": [4e-6, 4e-6], "median": 4e-6, "min": 4e-6,
                                      "max": 4e-6, "number": 100}}}
    add_bandwidth([variant], 8_000_004, results["meta"]["gpu"]["peak_bandwidth_bytes_s"])
    workload = dict(GPU_WORKLOADS["W1"].__dict__)
    results["workloads"]["W1"] = {
        "id": "W1", "title": workload["title"], "shapes": workload["shapes"], "kind": "time",
        "metrics": list(workload["metrics"]), "ratio_metrics": ["time_s"], "notes": "",
        "no_ratio": [], "variants": [variant], "ratios": []}
    rows, header, _ = report._variant_rows(results["workloads"]["W1"])
    assert header[-3:] == ["bandwidth", "of peak", "check"]
    assert rows[0][-3:] == ["2e+03 GB/s", "97.7%", "ok 0.0e+00"]
    assert report._device_lines(results["meta"]) == [
        "device: GPU variants on Some GPU (compute capability 9.0), peak memory bandwidth "
        "2048 GB/s (memory clock 2000 MHz, 4096-bit bus, double data rate)"]
    met = copy.deepcopy(results)
    (row,) = [r for r in evaluate(met) if r["workload"] == "W1"]
    assert row["status"] == "met" and row["value"] == pytest.approx(0.977, abs=1e-3)
    variant["metrics"]["time_s"]["median"] = 1e-4
    variant["metrics"].update(devices.bandwidth_metrics(variant["metrics"]["time_s"], 8_000_004,
                                                        2.048e12))
    (row,) = [r for r in evaluate(results) if r["workload"] == "W1"]
    assert row["status"] == "not met" and row["value"] == pytest.approx(0.0391, abs=1e-4)


@pytest.mark.skipif(os.environ.get("HYBRIDTF_TEST_GPU") == "1", reason="a GPU is present")
def test_without_a_gpu_the_gpu_suite_says_so_and_runs_nothing(tmp_path):
    json_path = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--device", "gpu", "--frameworks", "hybridtf",
         "--json", str(json_path)], cwd=REPO_ROOT, env=_without_simulator_environment(),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("No GPU found"), done.stdout
    assert "hybridtf has no GPU (tf.config.list_physical_devices('GPU') is empty" in lines[0]
    assert not json_path.exists()


def test_cpu_runs_keep_hybridtf_off_a_gpu():
    """--device cpu on a machine with a GPU (the simulator's, in a fresh process): loading
    hybridtf for CPU figures hides the GPU, so the workloads run on the CPU as before."""
    code = ("from benchmarks import frameworks, profiles\n"
            "from benchmarks.workloads import w2_small_chain\n"
            "tf = frameworks.load('hybridtf')\n"
            "result = w2_small_chain.build_tf(tf, profiles.SMOKE, False).call()\n"
            "print(len(tf.config.list_physical_devices('GPU')), "
            "len(tf.config.list_logical_devices('GPU')), result.device)\n")
    env = dict(_without_simulator_environment(), NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "0", "/job:localhost/replica:0/task:0/device:CPU:0"]
