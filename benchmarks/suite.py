"""Runs the selected workloads and collects raw figures (no formatting here: see report.py)."""
import datetime
import gc
import platform
import sys
import time

from benchmarks import frameworks, profiles
from benchmarks.agreement import compare
from benchmarks.harness import harness_overhead, per_unit, time_alternating
from benchmarks.machine_load import BusyProcesses, LoadMonitor
from benchmarks.records import NOT_SELECTED, new_variant, record_failure, selected
from benchmarks.workloads import WORKLOADS


def _log_to_stderr(message):
    print(message, file=sys.stderr, flush=True)


def run_timed(workload, profile, allowed, log):
    """Build every variant, check agreement against the reference, then time in rounds."""
    variants, prepared, reference = [], {}, None
    for impl in workload.impls:
        entry = new_variant(impl.framework, impl.mode)
        variants.append(entry)
        if not selected(impl.framework, allowed):
            entry["status"], entry["reason"] = "skipped", NOT_SELECTED
            continue
        log(f"  {workload.id} {entry['label']}: build and check")
        try:
            module = frameworks.load(impl.framework)
            built = impl.build(module, profile)
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
        prepared[entry["key"]] = built
    if prepared:
        log(f"  {workload.id}: timing {len(prepared)} variants in {profile.rounds} rounds")
        timings, failures = time_alternating({k: p.call for k, p in prepared.items()}, profile)
        for entry in variants:
            if entry["key"] in timings:
                entry["status"] = "ok"
                entry["metrics"]["time_s"] = per_unit(timings[entry["key"]],
                                                      prepared[entry["key"]].units)
            elif entry["key"] in failures:
                record_failure(entry, failures[entry["key"]])
    del prepared
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


def run_suite(only=None, profile="full", frameworks_allowed=None, log=_log_to_stderr, load=0):
    """Run workloads (ids in ``only``, default all) and return the results as a dict.

    ``frameworks_allowed`` restricts the frameworks (names from ``frameworks.FRAMEWORKS``);
    ``log`` receives progress lines (``None`` for silence); ``load``: processes that keep a core
    busy each while the workloads run (``machine_load.BusyProcesses``).
    """
    profile = profiles.get(profile)
    started = time.perf_counter()
    if log is None:
        def log(message):
            return None
    else:
        def log(message, _emit=log):
            _emit(f"[{time.perf_counter() - started:6.1f} s] {message}")
    ids = list(WORKLOADS) if not only else [i.upper() for i in only]
    unknown = [i for i in ids if i not in WORKLOADS]
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; expected some of {list(WORKLOADS)}")
    allowed = set(frameworks_allowed) if frameworks_allowed else None
    if allowed:
        bad = allowed - set(frameworks.FRAMEWORKS)
        if bad:
            raise ValueError(f"unknown framework(s) {sorted(bad)}; "
                             f"expected some of {list(frameworks.FRAMEWORKS)}")
    results = {"workloads": {}}
    with BusyProcesses(load):
        _run_workloads(ids, profile, allowed, log, results)
    results["meta"] = metadata(profile, allowed)
    results["meta"]["load"] = load
    results["meta"]["wall_s"] = time.perf_counter() - started
    return results


def _run_workloads(ids, profile, allowed, log, results):
    for workload_id in ids:
        workload = WORKLOADS[workload_id]
        log(f"{workload.id}: {workload.title}")
        began = time.perf_counter()
        with LoadMonitor() as load:
            if workload.kind == "time":
                variants = run_timed(workload, profile, allowed, log)
            else:
                variants = workload.run(workload, profile, allowed, log)
        entry = {"id": workload.id, "title": workload.title, "shapes": workload.shapes,
                 "kind": workload.kind, "metrics": list(workload.metrics),
                 "ratio_metrics": list(workload.ratio_metrics), "notes": workload.notes,
                 "no_ratio": list(workload.extra.get("no_ratio", ())),
                 "variants": variants, "wall_s": time.perf_counter() - began,
                 "other_load_cpus": load.other_cpus}
        entry["ratios"] = ratios(entry)
        results["workloads"][workload.id] = entry
