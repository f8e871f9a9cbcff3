"""Child process of C1, M1 and R1: ``python -m benchmarks.child {c1|m1|r1} FRAMEWORK MODE
[options]``.

It builds one W3 variant, measures, and prints one line ``BENCHMARK-RESULT <json>`` on stdout
(see ``benchmarks.subprocesses`` for the parent's side). Nothing imports this module: it is only
ever run as the child's ``__main__``.
"""
import argparse
import gc
import json
import os
import resource
import sys
import time

from benchmarks.subprocesses import MARKER


def _proc_status_mib(field):
    """A memory field of /proc/self/status (VmRSS, VmHWM) in MiB, or None off Linux."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _rss_mib():
    return _proc_status_mib("VmRSS")


def _peak_rss_mib():
    # VmHWM belongs to this process image. getrusage's ru_maxrss is no use here: Linux carries
    # the parent's peak over fork and exec, so every child would report the suite's own peak.
    peak = _proc_status_mib("VmHWM")
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak = peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0
    return peak


def _enable_jax_disk_cache():
    directory = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if directory:
        import jax
        jax.config.update("jax_compilation_cache_dir", directory)
        # Cache every executable: W3's step compiles in well under JAX's default 1 s threshold.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def measure_first_call(framework, mode, profile):
    """C1: import, build (variables, data), then time the first and the second step."""
    from benchmarks import frameworks
    from benchmarks.workloads import w3_mlp
    start = time.perf_counter()
    frameworks.load(framework)
    if framework == "jax":
        _enable_jax_disk_cache()
    imported = time.perf_counter()
    prepared = w3_mlp.build(framework, mode, profile)
    built = time.perf_counter()
    loss = prepared.call()
    first = time.perf_counter()
    prepared.call()
    second = time.perf_counter()
    return {"import_s": imported - start, "build_s": built - imported,
            "first_call_s": first - built, "second_call_s": second - first,
            "first_loss": float(frameworks.to_numpy(loss))}


def measure_memory(framework, mode, profile, steps, mark):
    """M1: RSS after ``mark`` and after ``steps`` W3 steps (after a collection), and the peak."""
    from benchmarks import frameworks
    from benchmarks.workloads import w3_mlp
    frameworks.load(framework)
    prepared = w3_mlp.build(framework, mode, profile)
    rss_mark = first_loss = None
    start = time.perf_counter()
    for step in range(1, steps + 1):
        loss = prepared.call()
        if step == 1:
            first_loss = float(frameworks.to_numpy(loss))
            start = time.perf_counter()
        if step == mark:
            gc.collect()
            rss_mark = _rss_mib()
    elapsed = time.perf_counter() - start
    last_loss = float(frameworks.to_numpy(loss))
    gc.collect()
    rss_end = _rss_mib()
    growth = rss_end - rss_mark if rss_end is not None and rss_mark is not None else None
    return {"peak_rss_mib": _peak_rss_mib(), "rss_mark_mib": rss_mark, "rss_end_mib": rss_end,
            "growth_mib": growth, "step_s": elapsed / max(steps - 1, 1), "steps": steps,
            "mark": mark, "first_loss": first_loss, "last_loss": last_loss}


def _cache_files():
    """The number of files in the on-disk caches the parent pointed this process to."""
    roots = {os.environ[name] for name in ("HYBRIDTF_CACHE_DIR", "NUMBA_CACHE_DIR",
                                           "JAX_COMPILATION_CACHE_DIR") if os.environ.get(name)}
    return sum(len(files) for root in roots for _, _, files in os.walk(root))


def measure_retracing(framework, mode, profile, calls):
    """R1: ``calls`` calls of the decorated f, each with a new Python value (a new trace)."""
    from benchmarks import frameworks
    from benchmarks.workloads import r1_retracing
    tf = frameworks.load(framework)
    f, x = r1_retracing.build(tf)
    f(x, k=r1_retracing.FIRST_K)
    values = r1_retracing.values(calls)
    files = _cache_files()
    gc.collect()
    rss_before = _rss_mib()
    start = time.perf_counter()
    results = [f(x, k=k) for k in values]
    elapsed = time.perf_counter() - start
    checksum = float(sum(float(frameworks.to_numpy(r)) for r in results))
    del results
    gc.collect()
    return {"loop_s": elapsed, "trace_s": elapsed / max(calls, 1),
            "growth_mib": _rss_mib() - rss_before, "cache_files": _cache_files() - files,
            "checksum": checksum, "tracing_count": int(f.experimental_get_tracing_count())}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.child")
    parser.add_argument("what", choices=("c1", "m1", "r1"))
    parser.add_argument("framework")
    parser.add_argument("mode")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--mark", type=int, default=100)
    args = parser.parse_args(argv)

    from benchmarks import profiles
    from benchmarks.records import child_result
    profile = profiles.get(args.profile)

    def measure():
        if args.what == "c1":
            return measure_first_call(args.framework, args.mode, profile)
        if args.what == "r1":
            return measure_retracing(args.framework, args.mode, profile, args.steps)
        return measure_memory(args.framework, args.mode, profile, args.steps, args.mark)

    result = child_result(args.framework, args.mode, measure)
    sys.stdout.flush()
    print(MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
