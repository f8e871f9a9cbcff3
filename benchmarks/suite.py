"""Runs the selected workloads and collects raw figures (no formatting here: see report.py)."""
import datetime
import gc
import platform
import sys
import time

from benchmarks import devices, frameworks, profiles
from benchmarks.agreement import compare
from benchmarks.framework_processes import FrameworkProcesses
from benchmarks.harness import TimedCall, harness_overhead, per_unit, time_alternating
from benchmarks.machine_load import BusyProcesses, LoadMonitor
from benchmarks.records import NOT_SELECTED, UNTIMED, new_variant, record_failure, selected
from benchmarks.workloads import GPU_WORKLOADS, WORKLOADS


def _log_to_stderr(message):
    print(message, file=sys.stderr, flush=True)


def _build(workload, index, profile, processes):
    """(the built variant: ``result()`` and ``units``; what times it), in this process or, with
    ``processes``, in its framework's own."""
    impl = workload.impls[index]
    if processes is None:
        built = impl.build(frameworks.load(impl.framework), profile)
        return built, TimedCall(built.call)
    built = processes.build(workload.id, index, impl.framework, profile)
    return built, built


def run_timed(workload, profile, allowed, log, processes=None):
    """Build every variant, check agreement against the reference, then time in rounds.

    ``processes``: a ``framework_processes.FrameworkProcesses`` that runs each framework's
    variants in a process of their own (what ``run_suite`` does); None: all in this one."""
    variants, prepared, reference = [], {}, None
    for index, impl in enumerate(workload.impls):
        entry = new_variant(impl.framework, impl.mode)
        variants.append(entry)
        if not selected(impl.framework, allowed):
            entry["status"], entry["reason"] = "skipped", NOT_SELECTED
            continue
        log(f"  {workload.id} {entry['label']}: build and check")
        try:
            built, timer = _build(workload, index, profile, processes)
            result = built.result()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, the run goes on
            record_failure(entry, exc)
            continue
        if reference is None:
            reference = (entry["key"], result)
            entry["agreement"] = {"ok": True, "reference": True}
        else:
            entry["agreement"] = compare(result, reference[1], workload.tolerance)
            entry["agreement"]["reference"] = reference[0]
            if not entry["agreement"]["ok"]:
                entry["status"] = "mismatch"
                entry["reason"] = (f"disagrees with {reference[0]}: relative error "
                                   f"{entry['agreement']['max_rel_err']:.3g} in "
                                   f"{entry['agreement']['worst']} (tolerance "
                                   f"{entry['agreement'].get('tolerance', 0):.3g})")
                continue
        if not impl.timed:
            entry["status"], entry["reason"] = "untimed", UNTIMED
            continue
        prepared[entry["key"]] = built, timer
    if prepared:
        log(f"  {workload.id}: timing {len(prepared)} variants in {profile.rounds} rounds")
        timings, failures = time_alternating({k: t for k, (_, t) in prepared.items()}, profile)
        for entry in variants:
            if entry["key"] in timings:
                entry["status"] = "ok"
                entry["metrics"]["time_s"] = per_unit(timings[entry["key"]],
                                                      prepared[entry["key"]][0].units)
            elif entry["key"] in failures:
                record_failure(entry, failures[entry["key"]])
    del prepared
    if processes is not None:
        processes.release()
    gc.collect()
    return variants


def ratios(workload_result):
    """hybridtf / peer for every pair measured in the same run, per ratio metric."""
    out = []
    variants = workload_result["variants"]
    for metric in workload_result["ratio_metrics"]:
        def median(entry):
            value = entry["metrics"].get(metric)
            return value.get("median") if value else None
        ours = [v for v in variants if v["framework"] == "hybridtf" and median(v)]
        peers = [v for v in variants if v["framework"] != "hybridtf" and median(v)
                 and v["framework"] not in workload_result.get("no_ratio", ())]
        for mine in ours:
            for peer in peers:
                out.append({"metric": metric, "hybridtf": mine["key"], "peer": peer["key"],
                            "ratio": median(mine) / median(peer)})
    return out


def add_bandwidth(variants, bytes_moved, peak_bytes_s):
    """The memory bandwidth each timed variant achieved moving ``bytes_moved`` per call, and
    its share of the GPU's peak (``peak_bytes_s``; None: unknown, the share is left out)."""
    for entry in variants:
        if entry["status"] == "ok":
            entry["metrics"].update(devices.bandwidth_metrics(
                entry["metrics"]["time_s"], bytes_moved, peak_bytes_s))


def metadata(profile, allowed):
    info = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "machine": platform.machine(), "profile": profile.as_dict(),
            "frameworks_selected": sorted(allowed) if allowed else None,
            "versions": {name: frameworks.version(name) for name in frameworks.FRAMEWORKS}}
    info["threads"] = frameworks.thread_settings()
    info["blas"] = frameworks.blas_kernels()
    info["harness_overhead_s"] = harness_overhead(profile)
    return info


def run_suite(only=None, profile="full", frameworks_allowed=None, log=_log_to_stderr, load=0,
              device=devices.CPU, isolated=True):
    """Run workloads (ids in ``only``, default all) and return the results as a dict.

    ``frameworks_allowed`` restricts the frameworks (names from ``frameworks.FRAMEWORKS``);
    ``log`` receives progress lines (``None`` for silence); ``load``: processes that keep a core
    busy each while the workloads run (``machine_load.BusyProcesses``); ``device``: "cpu", or
    "gpu" for the GPU variants of W1-W6 (``workloads.GPU_WORKLOADS``; a framework without a GPU
    has its variants skipped); ``isolated``: each framework's variants of the timed workloads
    run in a process of their own (``framework_processes``), else all in this one.
    """
    if device not in devices.DEVICES:
        raise ValueError(f"unknown device {device!r}; expected one of {list(devices.DEVICES)}")
    previous = frameworks.use_device(device)
    try:
        return _run_suite(only, profiles.get(profile), frameworks_allowed, log, load, device,
                          isolated)
    finally:
        frameworks.use_device(previous)


def _run_suite(only, profile, frameworks_allowed, log, load, device, isolated):
    started = time.perf_counter()
    if log is None:
        def log(message):
            return None
    else:
        def log(message, _emit=log):
            _emit(f"[{time.perf_counter() - started:6.1f} s] {message}")
    workloads = GPU_WORKLOADS if device == devices.GPU else WORKLOADS
    ids = list(workloads) if not only else [i.upper() for i in only]
    unknown = [i for i in ids if i not in workloads]
    if unknown:
        which = " with --device gpu" if device == devices.GPU else ""
        raise ValueError(f"unknown workload(s) {unknown}{which}; expected some of "
                         f"{list(workloads)}")
    allowed = set(frameworks_allowed) if frameworks_allowed else None
    if allowed:
        bad = allowed - set(frameworks.FRAMEWORKS)
        if bad:
            raise ValueError(f"unknown framework(s) {sorted(bad)}; "
                             f"expected some of {list(frameworks.FRAMEWORKS)}")
    results = {"workloads": {}}
    gpu = devices.gpu_details() if device == devices.GPU else None
    with BusyProcesses(load), FrameworkProcesses(device) as processes:
        _run_workloads([workloads[i] for i in ids], profile, allowed, log, results, gpu,
                       processes if isolated else None)
    results["meta"] = metadata(profile, allowed)
    results["meta"]["load"] = load
    results["meta"]["framework_processes"] = isolated
    results["meta"]["device"] = device
    if gpu is not None:
        results["meta"]["gpu"] = gpu
    results["meta"]["wall_s"] = time.perf_counter() - started
    return results


def _run_workloads(selected_workloads, profile, allowed, log, results, gpu, processes):
    for workload in selected_workloads:
        log(f"{workload.id}: {workload.title}")
        began = time.perf_counter()
        with LoadMonitor(processes and processes.pids) as load:
            if workload.kind == "time":
                variants = run_timed(workload, profile, allowed, log, processes)
            else:
                variants = workload.run(workload, profile, allowed, log)
        if "bytes_moved" in workload.extra:
            add_bandwidth(variants, workload.extra["bytes_moved"](),
                          (gpu or {}).get("peak_bandwidth_bytes_s"))
        entry = {"id": workload.id, "title": workload.title, "shapes": workload.shapes,
                 "kind": workload.kind, "metrics": list(workload.metrics),
                 "ratio_metrics": list(workload.ratio_metrics), "notes": workload.notes,
                 "no_ratio": list(workload.extra.get("no_ratio", ())),
                 "variants": variants, "wall_s": time.perf_counter() - began,
                 "other_load_cpus": load.other_cpus}
        entry["ratios"] = ratios(entry)
        results["workloads"][workload.id] = entry
