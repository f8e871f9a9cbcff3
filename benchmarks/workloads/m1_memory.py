"""M1: peak RSS over 1,000 W3 steps, and its growth from step 100 to step 1,000.

One child process per variant so that one framework's memory does not pollute another's. RSS is
read after a garbage collection at both marks; the peak is the process's high-water mark
(imports included).
"""
from benchmarks.subprocesses import run_child
from benchmarks.harness import summarize
from benchmarks.workloads.base import Workload
from benchmarks.workloads.process_common import (absorb_failure, check_first_loss,
                                                 start_variant, variants)

METRICS = ("peak_rss_mib", "growth_mib", "rss_mark_mib", "rss_end_mib", "step_s")


def run(workload, profile, allowed, log):
    records, reference = [], None
    # --quick leaves out TF eager (TF function shows TensorFlow's runtime memory already).
    for framework, mode in variants(profile, (("tensorflow", "eager"),)):
        entry = start_variant(framework, mode, allowed)
        records.append(entry)
        if entry["status"]:
            continue
        log(f"  M1 {entry['label']}: {profile.m1_steps} steps")
        result = run_child(["m1", framework, mode, "--profile", profile.name,
                            "--steps", str(profile.m1_steps), "--mark", str(profile.m1_mark)],
                           timeout=profile.m1_timeout_s)
        if absorb_failure(entry, result):
            continue
        reference = check_first_loss(entry, result["first_loss"], reference)
        if entry["status"] == "mismatch":
            continue
        entry["status"] = "ok"
        entry["metrics"] = {name: summarize([result[name]]) for name in METRICS
                            if result.get(name) is not None}
        entry["last_loss"] = result["last_loss"]
        entry["steps"], entry["mark"] = result["steps"], result["mark"]
    return records


WORKLOAD = Workload(
    id="M1",
    title="memory of W3 steps: peak RSS, growth from the mark to the end",
    shapes="1,000 steps, mark at 100 (--quick: 60, mark at 10)",
    impls=(),
    kind="process",
    run=run,
    metrics=METRICS,
    ratio_metrics=("peak_rss_mib",),
)
