"""C1: the first call (trace + compile) of W3's step in a fresh process, without and with the
on-disk caches.

Every repeat makes a new temporary directory for NUMBA_CACHE_DIR, HYBRIDTF_CACHE_DIR and JAX's
compilation cache: the cold run starts it empty, the warm run (a second fresh process) reuses
what the cold run wrote. TensorFlow and PyTorch keep no such cache, so their warm run shows only
the operating system's file cache.
"""
import shutil
import tempfile

from benchmarks.subprocesses import cache_environment, run_child
from benchmarks.harness import summarize
from benchmarks.workloads.base import Workload
from benchmarks.workloads.process_common import (absorb_failure, check_first_loss,
                                                 start_variant, variants)

METRICS = ("cold_first_call_s", "warm_first_call_s", "cold_import_s", "warm_import_s",
           "cold_process_s", "warm_process_s")


def run(workload, profile, allowed, log):
    records, reference = [], None
    # Eager TF and PyTorch compile nothing; --quick leaves them out.
    for framework, mode in variants(profile, (("tensorflow", "eager"), ("torch", "eager"))):
        entry = start_variant(framework, mode, allowed)
        records.append(entry)
        if entry["status"]:
            continue
        samples = {name: [] for name in METRICS}
        failed = False
        for repeat in range(profile.c1_repeats):
            root = tempfile.mkdtemp(prefix="hybridtf-bench-c1-")
            try:
                for phase in ("cold", "warm"):
                    log(f"  C1 {entry['label']}: {phase} process {repeat + 1}/{profile.c1_repeats}")
                    # hybridtf's default: the first calls run on the interpreter (its ops on
                    # their reference forms where their kernels are not compiled yet) while
                    # the kernels compile in the background
                    env = dict(cache_environment(root), HYBRIDTF_SYNCHRONOUS_COMPILATION="0")
                    result = run_child(["c1", framework, mode, "--profile", profile.name],
                                       env=env, timeout=profile.c1_timeout_s)
                    if absorb_failure(entry, result):
                        if entry["reason"] and phase == "warm":
                            entry["reason"] = "warm run: " + entry["reason"]
                        failed = True
                        break
                    samples[f"{phase}_first_call_s"].append(result["first_call_s"])
                    samples[f"{phase}_import_s"].append(result["import_s"])
                    samples[f"{phase}_process_s"].append(result["process_s"])
                    if repeat == 0 and phase == "cold":
                        reference = check_first_loss(entry, result["first_loss"], reference)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            if failed or entry["status"] == "mismatch":
                break
        if not entry["status"]:
            entry["status"] = "ok"
            entry["metrics"] = {name: summarize(values) for name, values in samples.items()}
    return records


WORKLOAD = Workload(
    id="C1",
    title="first call of W3's step (trace + compile) in a fresh process",
    shapes="cold: empty cache dirs; warm: the cold run's",
    impls=(),
    kind="process",
    run=run,
    metrics=METRICS,
    ratio_metrics=("cold_first_call_s", "warm_first_call_s"),
    notes="import: importing the framework; process: the whole child process. NumPy (no "
          "compiler) is the floor, left out of the ratios.",
    extra={"no_ratio": ("numpy",)},
)
