"""The targets of BENCHMARKS.md, evaluated on one run's figures (reported, never asserted)."""
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Target:
    workload: str
    text: str
    ours: str               # hybridtf variant key
    peer: Optional[str]     # peer variant key, or None for an absolute limit
    metric: str
    limit: float            # ratio ours/peer (or the absolute value) must be <= limit ...
    at_least: bool = False  # ... or >= limit (an absolute value where more is better)
    device: str = "cpu"     # the run (--device) whose figures it applies to


TARGETS = (
    Target("W0", "eager op <= PyTorch eager", "hybridtf/eager", "torch/eager", "time_s", 1.0),
    Target("W0", "decorated call <= JAX jit", "hybridtf/function", "jax/jit", "time_s", 1.0),
    Target("W1", "decorated within 1.2x of hand-fused Numba", "hybridtf/function", "numba/fused",
           "time_s", 1.2),
    Target("W1", "eager within 1.2x of NumPy", "hybridtf/eager", "numpy/eager", "time_s", 1.2),
    Target("W2", "decorated within 1.2x of hand-fused Numba", "hybridtf/function", "numba/fused",
           "time_s", 1.2),
    Target("W2", "eager within 1.2x of NumPy", "hybridtf/eager", "numpy/eager", "time_s", 1.2),
    Target("W3", "decorated step faster than JAX jit", "hybridtf/function", "jax/jit", "time_s",
           1.0),
    Target("W4", "decorated step faster than TF function", "hybridtf/function",
           "tensorflow/function", "time_s", 1.0),
    Target("W5", "decorated faster than JAX jit", "hybridtf/function", "jax/jit", "time_s", 1.0),
    Target("W6", "decorated faster than TF function", "hybridtf/function", "tensorflow/function",
           "time_s", 1.0),
    Target("W7", "decorated step faster than TF function", "hybridtf/function",
           "tensorflow/function", "time_s", 1.0),
    Target("W7", "decorated step faster than PyTorch eager", "hybridtf/function", "torch/eager",
           "time_s", 1.0),
    Target("W8", "decorated step faster than TF function", "hybridtf/function",
           "tensorflow/function", "time_s", 1.0),
    Target("W8", "decorated step within 1.2x of JAX jit", "hybridtf/function", "jax/jit",
           "time_s", 1.2),
    Target("E1", "eager tape within 1.5x PyTorch eager", "hybridtf/eager", "torch/eager",
           "time_s", 1.5),
    Target("K1", "fit step no slower than TF fit's", "hybridtf/function", "tensorflow/function",
           "time_s", 1.0),
    Target("K1", "fit step within 1.1x of the hand-written decorated step", "hybridtf/function",
           "hybridtf/step", "time_s", 1.1),
    Target("K2", "predict no slower than TF's", "hybridtf/function", "tensorflow/function",
           "time_s", 1.0),
    Target("D0", "epoch faster than tf.data (eager iteration)", "hybridtf/eager",
           "tensorflow/eager", "time_s", 1.0),
    Target("D0", "epoch in a decorated function faster than TF's", "hybridtf/function",
           "tensorflow/function", "time_s", 1.0),
    Target("C1", "cold first call no slower than TF function's", "hybridtf/function",
           "tensorflow/function", "cold_first_call_s", 1.0),
    Target("C1", "first call from the disk cache under 0.3 s", "hybridtf/function", None,
           "warm_first_call_s", 0.3),
    Target("C2", "cold first step (empty kernel cache) <= 5 s", "hybridtf/function", None,
           "cold_first_step_s", 5.0),
    Target("C2", "first step after the warmup command <= 0.5 s", "hybridtf/function", None,
           "warmup_first_step_s", 0.5),
    Target("C2", "warm cache, batch 64: first step <= 2x a steady eager step",
           "hybridtf/function", None, "batch64_over_eager", 2.0),
    Target("C2", "warm cache, Dense 700 / Conv 48: first step <= 2x a steady eager step",
           "hybridtf/function", None, "narrow_over_eager", 2.0),
    Target("M1", "no growth after warm-up (<= 1 MiB)", "hybridtf/function", None, "growth_mib",
           1.0),
    Target("R1", "retracing loop within 2x TF function's time", "hybridtf/function",
           "tensorflow/function", "loop_s", 2.0),
    Target("R1", "retracing loop's RSS growth within 2x TF function's", "hybridtf/function",
           "tensorflow/function", "growth_mib", 2.0),
    Target("R1", "retracing loop writes no cache files", "hybridtf/function", None,
           "cache_files", 0.0),
    Target("D1", "W4 scaling efficiency 1 -> 2 ranks >= 90%", "hybridtf/mpi", None,
           "w4_efficiency", 0.9, at_least=True),
    Target("D1", "W3 scaling efficiency 1 -> 2 ranks >= 90%", "hybridtf/mpi", None,
           "w3_efficiency", 0.9, at_least=True),
    # The GPU variants (--device gpu).
    Target("W1", "decorated at >= 70% of the GPU's peak memory bandwidth", "hybridtf/function",
           None, "bandwidth_share", 0.7, at_least=True, device="gpu"),
    Target("W3", "decorated step faster than PyTorch CUDA eager", "hybridtf/function",
           "torch/eager", "time_s", 1.0, device="gpu"),
    Target("W3", "decorated step within 1.2x of JAX jit on the GPU", "hybridtf/function",
           "jax/jit", "time_s", 1.2, device="gpu"),
    Target("W4", "decorated step faster than PyTorch CUDA eager", "hybridtf/function",
           "torch/eager", "time_s", 1.0, device="gpu"),
    Target("W4", "decorated step within 1.2x of JAX jit on the GPU", "hybridtf/function",
           "jax/jit", "time_s", 1.2, device="gpu"),
    Target("W5", "decorated faster than JAX jit on the GPU", "hybridtf/function", "jax/jit",
           "time_s", 1.0, device="gpu"),
)


def _median(workload, variant_key, metric):
    for variant in workload["variants"]:
        if variant["key"] == variant_key:
            value = variant["metrics"].get(metric)
            return (value or {}).get("median"), variant
    return None, None


def evaluate(results):
    """``[{"workload", "text", "status": met|not met|n.a., "value", "why"}]`` for the run's
    workloads on the run's device (targets of workloads that did not run are left out)."""
    out = []
    device = results.get("meta", {}).get("device", "cpu")
    for target in TARGETS:
        workload = results["workloads"].get(target.workload)
        if workload is None or target.device != device:
            continue
        row = {"workload": target.workload, "text": target.text, "value": None, "why": None,
               "absolute": target.peer is None}
        ours, our_variant = _median(workload, target.ours, target.metric)
        if ours is None:
            row["status"] = "n.a."
            row["why"] = f"{target.ours}: " + _why(our_variant, target.metric, results)
        elif target.peer is None:
            row["value"] = ours
            met = ours >= target.limit if target.at_least else ours <= target.limit
            row["status"] = "met" if met else "not met"
        else:
            theirs, peer_variant = _median(workload, target.peer, target.metric)
            if not theirs:
                row["status"] = "n.a."
                row["why"] = f"{target.peer}: " + _why(peer_variant, target.metric, results)
            else:
                row["value"] = ours / theirs
                row["status"] = "met" if row["value"] <= target.limit else "not met"
        out.append(row)
    return out


def _why(variant, metric, results):
    if variant is None:
        return "not in this workload"
    if variant["status"] == "ok":
        if metric == "bandwidth_share":
            gpu = results["meta"].get("gpu") or {}
            return f"the GPU's peak memory bandwidth is unknown ({gpu.get('peak_unknown')})"
        return "not measured by this profile"
    return f"{variant['status']}" + (f" ({variant['reason']})" if variant.get("reason") else "")
