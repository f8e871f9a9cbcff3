"""R1: retracing on Python values: a decorated ``f(x, k=i + 0.5)`` called for i = 0 .. 199.

Every new Python value of ``k`` is a new trace (TF's semantics); what is measured is what a trace
costs a long-running process. One child process per variant, with on-disk caches in a new
temporary directory: the loop's wall time, the growth of the resident set over it (each read
after a garbage collection) and the files the loop added to the caches. A first call with
k = 0.25 runs before the loop, so that imports and the first compile (C1's subject) stay out.

``f(x, k) = reduce_sum(tanh(x * k) + k)`` on a (100,) float32 x, the same TF code under either
module.
"""
import shutil
import tempfile

import numpy as np

from benchmarks import data
from benchmarks.frameworks import require
from benchmarks.harness import summarize
from benchmarks.subprocesses import cache_environment, run_child
from benchmarks.workloads.base import Workload
from benchmarks.workloads.process_common import absorb_failure, check_value, start_variant

METRICS = ("loop_s", "trace_s", "growth_mib", "cache_files")
VARIANTS = (("tensorflow", "function"), ("hybridtf", "function"))
SHAPE = (100,)
FIRST_K = 0.25


def values(calls):
    """The Python values of ``k``, one new trace each."""
    return [i + 0.5 for i in range(calls)]


def build(tf):
    """(decorated f, x) for TensorFlow or hybridtf."""
    require(tf, "function", "constant", "reduce_sum", "tanh")

    @tf.function
    def f(x, k):
        return tf.reduce_sum(tf.tanh(x * k) + k)
    return f, tf.constant(data.uniform("R1.x", SHAPE, -1.0, 1.0))


def numpy_checksum(calls):
    """The NumPy value of the sum of the loop's results (float32 throughout)."""
    x = data.uniform("R1.x", SHAPE, -1.0, 1.0)
    return float(sum(np.sum(np.tanh(x * np.float32(k)) + np.float32(k), dtype=np.float32)
                     for k in values(calls)))


def run(workload, profile, allowed, log):
    records = []
    reference = ("numpy", numpy_checksum(profile.r1_calls))
    for framework, mode in VARIANTS:
        entry = start_variant(framework, mode, allowed)
        records.append(entry)
        if entry["status"]:
            continue
        log(f"  R1 {entry['label']}: {profile.r1_calls} calls, each a new trace")
        root = tempfile.mkdtemp(prefix="hybridtf-bench-r1-")
        try:
            result = run_child(["r1", framework, mode, "--profile", profile.name,
                                "--steps", str(profile.r1_calls)],
                               env=cache_environment(root), timeout=profile.r1_timeout_s)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if absorb_failure(entry, result):
            continue
        # The sum of the loop's results is what the variants must agree on.
        check_value(entry, "sum of the results", result["checksum"], reference)
        if entry["status"] == "mismatch":
            continue
        entry["status"] = "ok"
        entry["metrics"] = {name: summarize([result[name]]) for name in METRICS}
        entry["tracing_count"] = result["tracing_count"]
    return records


WORKLOAD = Workload(
    id="R1",
    title="retracing on Python values: 200 calls of f(x, k=i + 0.5), each a new trace",
    shapes="x: (100,) float32; f = reduce_sum(tanh(x * k) + k) (--quick: 100 calls)",
    impls=(),
    kind="process",
    run=run,
    metrics=METRICS,
    ratio_metrics=("loop_s", "growth_mib"),
    notes="loop: the calls' wall time; per trace: loop / calls; growth: RSS after the loop "
          "minus before it; cache files: files the loop added to the on-disk caches.",
)
