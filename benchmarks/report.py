"""Turning results into a terminal table, a JSON file and (with matplotlib) a PNG of the ratios."""
import json
import os

from benchmarks import frameworks
from benchmarks.records import NOT_SELECTED
from benchmarks.targets import evaluate

REASON_WIDTH = 100
BUSY_MACHINE_CPUS = 0.3  # other processes' load above which a workload's figures are flagged

# How each metric is shown: column title and unit kind.
METRIC_FORMATS = {
    "time_s": ("median", "time"),
    "cold_first_call_s": ("cold 1st call", "time"),
    "warm_first_call_s": ("warm 1st call", "time"),
    "cold_import_s": ("cold import", "time"),
    "warm_import_s": ("warm import", "time"),
    "cold_process_s": ("cold process", "time"),
    "warm_process_s": ("warm process", "time"),
    "cold_first_step_s": ("cold 1st step", "time"),
    "warmup_first_step_s": ("after warmup", "time"),
    "warm_first_step_s": ("warm 1st step", "time"),
    "batch64_first_step_s": ("batch 64", "time"),
    "narrow_first_step_s": ("Dense700/Conv48", "time"),
    "eager_step_s": ("eager step", "time"),
    "batch64_over_eager": ("b64 x eager", "ratio"),
    "narrow_over_eager": ("700/48 x eager", "ratio"),
    "warmup_command_s": ("warmup cmd", "time"),
    "peak_rss_mib": ("peak RSS", "mib"),
    "rss_mark_mib": ("RSS @mark", "mib"),
    "rss_end_mib": ("RSS @end", "mib"),
    "growth_mib": ("growth", "mib"),
    "step_s": ("step", "time"),
    "loop_s": ("loop", "time"),
    "trace_s": ("per trace", "time"),
    "cache_files": ("cache files", "count"),
    "w3_images_s_1": ("W3 n=1", "rate"),
    "w3_images_s_2": ("W3 n=2", "rate"),
    "w3_efficiency": ("W3 eff.", "fraction"),
    "w3_images_s_2_alone": ("W3 n=2 no all-red.", "rate"),
    "w4_images_s_1": ("W4 n=1", "rate"),
    "w4_images_s_2": ("W4 n=2", "rate"),
    "w4_efficiency": ("W4 eff.", "fraction"),
    "w4_images_s_2_alone": ("W4 n=2 no all-red.", "rate"),
    "bandwidth_bytes_s": ("bandwidth", "bandwidth"),
    "bandwidth_share": ("of peak", "fraction"),
}


def format_time(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_value(value, kind):
    if value is None:
        return "-"
    if kind == "time":
        return format_time(value)
    if kind == "mib":
        return f"{value:.1f} MiB"
    if kind == "count":
        return f"{value:.0f}"
    if kind == "rate":
        return f"{value:.0f} img/s"
    if kind == "bandwidth":
        return f"{value / 1e9:.3g} GB/s"
    if kind == "fraction":
        return f"{value:.1%}"
    if kind == "ratio":
        return format_ratio(value)
    return f"{value:.3g}"


def format_ratio(ratio):
    return "-" if ratio is None else f"{ratio:.3g}x"


def _shorten(text, width=REASON_WIDTH):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _check_text(variant):
    agreement = variant.get("agreement")
    if not agreement:
        return ""
    if agreement.get("reference") is True:
        return "reference"
    return f"ok {agreement['max_rel_err']:.1e}" if agreement["ok"] else "MISMATCH"


def _table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip()
              for row in rows]
    return lines


def _variant_rows(workload):
    """Rows of the per-workload table, and the lines for variants that were not measured."""
    rows, notes = [], []
    metrics = workload["metrics"]
    further = [m for m in metrics if m != "time_s"]   # a timed workload's columns after time
    for variant in workload["variants"]:
        if variant["status"] == "skipped" and variant["reason"] == NOT_SELECTED:
            continue  # the user asked for this; the summary says it once
        if variant["status"] != "ok":
            notes.append(f"{variant['label']}: {variant['status']}"
                         + (f" - {_shorten(variant['reason'])}" if variant.get("reason") else ""))
            continue
        if workload["kind"] == "time":
            timing = variant["metrics"]["time_s"]
            rows.append([variant["label"], format_time(timing["median"]),
                         f"{format_time(timing['min'])} - {format_time(timing['max'])}",
                         f"{len(timing['samples'])}x{timing['number']}"]
                        + [_metric_text(variant, metric) for metric in further]
                        + [_check_text(variant)])
        else:
            cells = [variant["label"]]
            for metric in metrics:
                value = variant["metrics"].get(metric)
                cells.append(format_value(value["median"] if value else None,
                                          METRIC_FORMATS[metric][1]))
            rows.append(cells + [_check_text(variant)])
    if workload["kind"] == "time":
        header = (["variant", "median", "min - max", "samples"]
                  + [METRIC_FORMATS[m][0] for m in further] + ["check"])
    else:
        header = ["variant"] + [METRIC_FORMATS[m][0] for m in metrics] + ["check"]
    return rows, header, notes


def _metric_text(variant, metric):
    """A further metric of a timed variant (W1's bandwidth on the GPU); "unknown" where the
    run could not compute it (the share of an unknown peak)."""
    value = variant["metrics"].get(metric)
    return "unknown" if value is None else format_value(value["median"],
                                                        METRIC_FORMATS[metric][1])


def _device_lines(meta):
    """What the GPU variants ran on (nothing for a CPU run)."""
    gpu = meta.get("gpu")
    if gpu is None:
        return []
    if gpu.get("name") is None:
        return [f"device: GPU variants; Numba's GPU: none ({gpu.get('peak_unknown')})"]
    capability = ".".join(str(part) for part in gpu.get("compute_capability") or ())
    peak = gpu.get("peak_bandwidth_bytes_s")
    if peak:
        bandwidth = (f"peak memory bandwidth {peak / 1e9:.4g} GB/s (memory clock "
                     f"{gpu['memory_clock_khz'] / 1e3:.0f} MHz, {gpu['memory_bus_bits']}-bit "
                     f"bus, double data rate)")
    else:
        bandwidth = f"peak memory bandwidth unknown ({gpu.get('peak_unknown')})"
    return [f"device: GPU variants on {gpu['name']} (compute capability {capability}), "
            f"{bandwidth}"]


def _ratio_lines(workload):
    lines = []
    for metric in workload["ratio_metrics"]:
        pairs = [r for r in workload["ratios"] if r["metric"] == metric]
        if not pairs:
            continue
        labels = {v["key"]: v["label"] for v in workload["variants"]}
        ours = list(dict.fromkeys(r["hybridtf"] for r in pairs))
        peers = list(dict.fromkeys(r["peer"] for r in pairs))
        lookup = {(r["hybridtf"], r["peer"]): r["ratio"] for r in pairs}
        which = f" ({METRIC_FORMATS[metric][0]})" if metric != "time_s" else ""
        title = f"ratio hybridtf / peer{which}, < 1: hybridtf ahead"
        lines.append("  " + title)
        rows = [[labels[o]] + [format_ratio(lookup.get((o, p))) for p in peers] for o in ours]
        lines += ["    " + line for line in _table(rows, [""] + [labels[p] for p in peers])]
    return lines


def _blas_line(blas):
    forced = blas.get("OPENBLAS_CORETYPE")
    return (f"hybridtf's BLAS: {blas.get('library', 'unknown')} {blas.get('version') or ''} "
            f"with its {blas.get('architecture') or 'unknown'} kernels "
            f"({'forced by OPENBLAS_CORETYPE=' + forced if forced else 'its own choice'})")


def format_results(results):
    """The whole report as text."""
    meta = results["meta"]
    versions = ", ".join(f"{name} {meta['versions'][name] or 'not available'}"
                         for name in frameworks.FRAMEWORKS)
    lines = [f"hybridtf benchmarks - profile {meta['profile']['name']}, {meta['date']}, "
             f"Python {meta['python']}, {meta['platform']}, "
             f"{meta['threads'].get('cpu_count')} CPUs",
             f"versions: {versions}",
             _blas_line(meta.get("blas") or {}),
             f"timing-loop overhead per call: {format_time(meta['harness_overhead_s'])} "
             f"(included in every figure); suite wall time {meta['wall_s']:.0f} s",
             "timed workloads: each framework in a process of its own"
             if meta.get("framework_processes", True) else
             "timed workloads: every framework in one process (figures affect one another)",
             *_device_lines(meta), ""]
    if meta.get("load"):
        lines[-1:-1] = [f"loaded: {meta['load']} busy process(es) kept a core each busy "
                        "while the workloads ran (--load)"]
    for workload in results["workloads"].values():
        lines.append(f"{workload['id']}  {workload['title']}  [{workload['shapes']}]")
        other = workload.get("other_load_cpus")
        if other is not None and other > BUSY_MACHINE_CPUS:
            lines.append(f"  (busy machine: other processes used {other:.1f} CPUs meanwhile; "
                         f"figures are noisy, --threads 1 is steadier)")
        rows, header, notes = _variant_rows(workload)
        if rows:
            lines += ["  " + line for line in _table(rows, header)]
        lines += ["  " + note for note in notes]
        lines += _ratio_lines(workload)
        if workload.get("notes"):
            lines.append("  note: " + workload["notes"])
        lines.append("")
    lines += summary_lines(results)
    return "\n".join(lines)


def summary_lines(results):
    """Skipped peers, hybridtf's missing features and errors, mismatches, targets."""
    skipped, missing, errors, mismatches = {}, {}, [], []
    for workload in results["workloads"].values():
        for variant in workload["variants"]:
            reason = variant.get("reason") or ""
            if variant["status"] == "skipped":
                skipped.setdefault(reason, set()).add(variant["label"])
            elif variant["status"] == "missing":
                missing.setdefault(reason, []).append(f"{workload['id']} {variant['label']}")
            elif variant["status"] == "error":
                errors.append(f"{workload['id']} {variant['label']}: {reason}")
            elif variant["status"] == "mismatch":
                mismatches.append(f"{workload['id']} {variant['label']}: {reason}")
    lines = []
    if skipped:
        lines.append("Skipped:")
        lines += [f"  {', '.join(sorted(labels))}: {reason}" for reason, labels in skipped.items()]
    if missing:
        lines.append("hybridtf features reported missing:")
        lines += [f"  {reason}  [{', '.join(where)}]" for reason, where in missing.items()]
    if errors:
        lines.append("Errors (see the JSON file for tracebacks):")
        lines += ["  " + _shorten(e, 160) for e in errors]
    if mismatches:
        lines.append("RESULTS DISAGREE (not timed):")
        lines += ["  " + m for m in mismatches]
    targets = evaluate(results)
    if targets:
        lines.append("Targets (BENCHMARKS.md):")
        for row in targets:
            if row["value"] is None:
                value = ""
            elif row["absolute"]:
                value = f" {row['value']:.3g}"
            else:
                value = f" {format_ratio(row['value'])}"
            why = f" - {_shorten(row['why'], 80)}" if row["why"] else ""
            lines.append(f"  {row['workload']} {row['text']}: {row['status']}{value}{why}")
    return lines


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def write_json(results, path):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    payload = dict(results)
    payload["targets"] = evaluate(results)
    with open(path, "w") as out:
        json.dump(payload, out, indent=1, default=_plain)
        out.write("\n")


def write_plot(results, path):
    """Bar chart of every hybridtf/peer ratio (log scale). Returns False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    bars = []
    for workload in results["workloads"].values():
        labels = {v["key"]: v["label"] for v in workload["variants"]}
        for ratio in workload["ratios"]:
            metric = ratio["metric"]
            metric = "" if metric == "time_s" else f" [{METRIC_FORMATS[metric][0]}]"
            bars.append((f"{workload['id']}{metric}: {labels[ratio['hybridtf']]} / "
                         f"{labels[ratio['peer']]}", ratio["ratio"]))
    height = max(2.5, 0.28 * len(bars) + 1.2)
    figure, axes = plt.subplots(figsize=(9, height))
    if bars:
        names = [b[0] for b in bars][::-1]
        values = [b[1] for b in bars][::-1]
        colors = ["tab:green" if v <= 1.0 else "tab:red" for v in values]
        # Bars grow from 1 (parity): left for hybridtf ahead, right for behind.
        axes.barh(range(len(bars)), [v - 1.0 for v in values], left=1.0, color=colors)
        axes.set_yticks(range(len(bars)))
        axes.set_yticklabels(names, fontsize=8)
        axes.set_xscale("log")
        axes.axvline(1.0, color="black", linewidth=1)
        axes.set_xlabel("hybridtf / peer (median; < 1: hybridtf faster or smaller)")
    else:
        axes.axis("off")
        axes.text(0.5, 0.5, "no ratios: no hybridtf variant was measured in this run",
                  ha="center", va="center")
    meta = results["meta"]
    axes.set_title(f"hybridtf vs peers - profile {meta['profile']['name']}, {meta['date']}")
    figure.tight_layout()
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True
