"""D1: data-parallel throughput of the W3 and W4 train steps under ``mpiexec -n 1`` and
``-n 2``, and the scaling efficiency from 1 to 2 ranks.

Each rank runs on one kernel thread and trains on the workload's batch (weak scaling), so the
efficiency -- images/s with 2 ranks over twice those with 1 -- shows what the gradient
all-reduce and the ranks' interference cost.  hybridtf averages the gradients with
``hybridtf.distribute.mpi`` (one fused MPI all-reduce inside the compiled step); the peer is
PyTorch's DistributedDataParallel on gloo (no Horovod), launched by the same mpiexec.  The ranks
share one batch, so the averaged gradient is the one-rank gradient: the first losses of ``-n 2``
must equal those of ``-n 1`` (and hybridtf's PyTorch's, within W3/W4's tolerance).
"""
import importlib.util
import os
import shutil
import socket
import sys

from benchmarks.harness import summarize
from benchmarks.subprocesses import run_child
from benchmarks.workloads.base import Workload
from benchmarks.workloads.process_common import absorb_failure, check_value, start_variant

MODELS = ("W3", "W4")
RANKS = (1, 2)
VARIANTS = (("hybridtf", "mpi"), ("torch", "ddp"))
METRICS = tuple(f"{model.lower()}_{what}" for model in MODELS
                for what in ("images_s_1", "images_s_2", "efficiency", "images_s_2_alone"))
TIMEOUT_S = 900.0


def mpiexec():
    """The mpiexec beside this Python (the mpich wheel's), else the one on PATH, or None."""
    return shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment():
    """One kernel thread per rank: every thread pool the frameworks might size by the cores."""
    env = dict(os.environ)
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[variable] = "1"
    return env


def run(workload, profile, allowed, log):
    launcher = mpiexec()
    records = []
    reference = {}
    for framework, mode in VARIANTS:
        entry = start_variant(framework, mode, allowed)
        records.append(entry)
        if entry["status"]:
            continue
        if launcher is None:
            entry["status"] = "skipped"
            entry["reason"] = "no mpiexec: pip install mpi4py mpich"
            continue
        if framework == "hybridtf" and importlib.util.find_spec("mpi4py") is None:
            entry["status"] = "skipped"
            entry["reason"] = "mpi4py is not installed: pip install mpi4py mpich"
            continue
        metrics = {}
        for model in MODELS:
            rates = {}
            for ranks in RANKS:
                log(f"  D1 {entry['label']}: {model} on {ranks} rank(s)")
                result = run_child([framework, model, "--profile", profile.name,
                                    "--port", str(_free_port())],
                                   env=_environment(), timeout=TIMEOUT_S,
                                   module="benchmarks.data_parallel_child",
                                   launcher=[launcher, "-n", str(ranks)])
                if absorb_failure(entry, result):
                    entry["reason"] = f"{model} on {ranks} rank(s): {entry['reason']}"
                    break
                reference[model] = check_value(entry, f"{model} 3rd loss ({ranks} ranks)",
                                               result["losses"][-1], reference.get(model), 2e-4)
                if entry["status"] == "mismatch":
                    break
                rates[ranks] = result["images_s"]
                alone = result.get("images_s_alone")
            if len(rates) < len(RANKS):
                break
            key = model.lower()
            metrics[f"{key}_images_s_1"] = summarize(rates[1])
            metrics[f"{key}_images_s_2"] = summarize(rates[2])
            one, two = (metrics[f"{key}_images_s_{n}"]["median"] for n in RANKS)
            metrics[f"{key}_efficiency"] = summarize([two / (2 * one)])
            metrics[f"{key}_images_s_2_alone"] = summarize(alone)
        if not entry["status"]:
            entry["status"] = "ok"
            entry["metrics"] = metrics
    return records


WORKLOAD = Workload(
    id="D1",
    title="data-parallel throughput of the W3 and W4 steps, 1 and 2 ranks",
    shapes="per rank: W3 batch 64, W4 batch 50; one kernel thread per rank",
    impls=(),
    kind="process",
    run=run,
    metrics=METRICS,
    ratio_metrics=(),
    notes="images/s over all ranks; efficiency = images/s at 2 ranks / (2 x at 1 rank); "
          "'no all-red.': the 2 ranks stepping without the all-reduce (what sharing the "
          "machine alone costs). PyTorch: DistributedDataParallel on gloo.",
)
