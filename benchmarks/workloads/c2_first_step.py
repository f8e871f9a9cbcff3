"""C2: the first train step of ``examples/mnist_cnn.py`` (the seed CNN) as a new user meets it.

Each figure is the first call of the example's decorated train step in a fresh process
(``benchmarks/first_step_child.py``), in the situations of a user's first hours:

* cold: a fresh install, the kernel cache empty;
* after warmup: a fresh install, then ``python -m hybridtf.warmup``, then the script;
* warm: the same script again;
* batch 64: the script again with ``--batch-size 64`` instead of 50;
* Dense 700 / Conv 48: the script again with Dense(700) instead of Dense(1024) and Conv2D(48)
  instead of Conv2D(64).

Every repeat makes a new temporary directory for NUMBA_CACHE_DIR and HYBRIDTF_CACHE_DIR: the
cold run starts it empty and the three warm ones follow in it; the warmup run has a directory of
its own.  hybridtf runs as a user's script does (``HYBRIDTF_SYNCHRONOUS_COMPILATION=0``: a new
trace runs on the graph interpreter while its kernels compile in the background, an op whose
kernel is not compiled yet runs its NumPy reference form meanwhile, and the process waits at
exit for those compiles, so that the next run finds them).  TensorFlow's
``tf.function`` runs the same example in the same situations (it keeps no compilation cache).

A steady eager step, the same step undecorated, is measured in hybridtf's warm run, once the
compiles its first call left to the background are done: the first step with a new batch size
or layer width is compared with it.  hybridtf's batch-50 runs (cold,
warm, after warmup) start from the same weights and batch, so their first losses must agree (to
rounding: the cold run's comes from the reference forms).
"""
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks.agreement import compare
from benchmarks.harness import summarize
from benchmarks.subprocesses import REPO_ROOT, cache_environment, child_environment, run_child
from benchmarks.workloads.base import Workload
from benchmarks.workloads.process_common import absorb_failure, start_variant

VARIANTS = (("tensorflow", "function"), ("hybridtf", "function"))
NEW_SHAPES = {"batch64": ("--batch-size", "64"),
              "narrow": ("--dense-units", "700", "--conv2-filters", "48")}
SITUATIONS = ("cold", "warm", *NEW_SHAPES)   # in this order, in one cache directory
METRICS = ("cold_first_step_s", "warmup_first_step_s", "warm_first_step_s",
           "batch64_first_step_s", "narrow_first_step_s", "eager_step_s", "batch64_over_eager",
           "narrow_over_eager", "warmup_command_s")
LOSS_TOLERANCE = 1e-4
WARMUP_TIMEOUT_S = 1200.0   # the warmup command compiles the whole kernel library


def _environment(root):
    # a user's script: the first calls on the interpreter while the kernels compile
    return dict(cache_environment(root), HYBRIDTF_SYNCHRONOUS_COMPILATION="0")


def _child(framework, situation, root, profile, eager_steps=0):
    arguments = [framework, *NEW_SHAPES.get(situation, ())]
    if eager_steps:
        arguments += ["--eager-steps", str(eager_steps)]
    return run_child(arguments, env=_environment(root), timeout=profile.c1_timeout_s,
                     module="benchmarks.first_step_child")


def run_warmup_command(root, timeout):
    """``python -m hybridtf.warmup --quiet`` with its caches in ``root``: {"status": "ok",
    "seconds": its wall time}, or an error record."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "hybridtf.warmup", "--quiet"],
                              cwd=REPO_ROOT, env=child_environment(_environment(root)),
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"the warmup command timed out after {timeout:.0f} s"}
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-5:])
        return {"status": "error",
                "reason": f"the warmup command exited with {done.returncode}: {tail}"}
    return {"status": "ok", "seconds": time.perf_counter() - start}


def _one_repeat(entry, profile, log, samples, losses):
    """One cold run and the warm runs after it (and, for hybridtf, the warmup run); False when
    the variant failed."""
    framework = entry["framework"]
    hybridtf = framework == "hybridtf"
    root = tempfile.mkdtemp(prefix="hybridtf-bench-c2-")
    try:
        for situation in SITUATIONS:
            log(f"  C2 {entry['label']}: {situation}")
            eager_steps = profile.min_rounds if hybridtf and situation == "warm" else 0
            result = _child(framework, situation, root, profile, eager_steps)
            if absorb_failure(entry, result):
                entry["reason"] = f"{situation} run: {entry['reason']}"
                return False
            samples[f"{situation}_first_step_s"].append(result["first_step_s"])
            if "eager_step_s" in result:
                samples["eager_step_s"].append(result["eager_step_s"])
            if situation not in NEW_SHAPES:
                losses.setdefault(situation, result["first_loss"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if hybridtf:
        for situation in NEW_SHAPES:
            samples[f"{situation}_over_eager"].append(
                samples[f"{situation}_first_step_s"][-1] / samples["eager_step_s"][-1])
    if hybridtf and profile.c2_warmup:
        root = tempfile.mkdtemp(prefix="hybridtf-bench-c2-warmup-")
        try:
            log(f"  C2 {entry['label']}: python -m hybridtf.warmup, then the first step")
            result = run_warmup_command(root, WARMUP_TIMEOUT_S)
            if result["status"] == "ok":
                samples["warmup_command_s"].append(result["seconds"])
                result = _child(framework, "cold", root, profile)
            if absorb_failure(entry, result):
                entry["reason"] = f"warmup run: {entry['reason']}"
                return False
            samples["warmup_first_step_s"].append(result["first_step_s"])
            losses.setdefault("after warmup", result["first_loss"])
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return True


def check_losses(entry, losses):
    """The first losses of the batch-50 runs agree (the same weights and batch, interpreted
    or compiled); the first run's is the reference."""
    (first, reference), *others = losses.items()
    entry["agreement"] = {"ok": True, "reference": True}
    for situation, loss in others:
        outcome = compare(loss, reference, LOSS_TOLERANCE)
        if not outcome["ok"]:
            entry["agreement"] = dict(outcome, reference=f"{entry['key']} {first}")
            entry["status"] = "mismatch"
            entry["reason"] = (f"the {situation} run's first loss {loss:.6g} disagrees with the "
                               f"{first} run's {reference:.6g}")
            return


def run(workload, profile, allowed, log):
    records = []
    for framework, mode in VARIANTS:
        entry = start_variant(framework, mode, allowed)
        records.append(entry)
        if entry["status"]:
            continue
        samples = {name: [] for name in METRICS}
        losses = {}
        if not all(_one_repeat(entry, profile, log, samples, losses)
                   for _ in range(profile.c1_repeats)):
            continue
        if framework == "hybridtf":
            check_losses(entry, losses)
        if not entry["status"]:
            entry["status"] = "ok"
            entry["metrics"] = {name: summarize(values) for name, values in samples.items()
                                if values}
        entry["first_loss"] = losses.get("cold")
    return records


WORKLOAD = Workload(
    id="C2",
    title="first train step of examples/mnist_cnn.py in a new process (a new user's first runs)",
    shapes="batch 50 of 28x28x1; then batch 64; then Dense 700 and Conv2D 48",
    impls=(),
    kind="process",
    run=run,
    metrics=METRICS,
    ratio_metrics=("cold_first_step_s", "warm_first_step_s", "batch64_first_step_s",
                   "narrow_first_step_s"),
    notes="cold: empty cache dirs; warm, batch 64, Dense 700 / Conv 48: the cold run's, in "
          "that order; after warmup: `python -m hybridtf.warmup` into empty dirs first (its "
          "wall time: warmup cmd). eager step: the step undecorated, hybridtf's warm run; "
          "x eager: the first step over it. TensorFlow keeps no compilation cache, and its "
          "Keras initializers draw other weights (its first loss is not compared).",
)
