"""``python -m benchmarks``: run the suite, print the table, write JSON (and a PNG)."""
import argparse
import datetime
import os
import sys

# Only modules that import no NumPy and no framework here: --threads must act before they load.
from benchmarks import frameworks

WORKLOAD_IDS = ("W0", "W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "E1", "K1", "K2", "D0",
                "C1", "C2", "M1", "R1", "D1")
GPU_WORKLOAD_IDS = ("W1", "W2", "W3", "W4", "W5", "W6")

DEFAULT_RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="hybridtf side by side with NumPy, hand-fused Numba, TensorFlow, JAX and "
                    "PyTorch (each where installed) on the workloads of BENCHMARKS.md.")
    speed = parser.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true",
                       help="every workload briefly (for development; under two minutes)")
    speed.add_argument("--smoke", action="store_true",
                       help="every code path once, figures meaningless (what the tests run)")
    parser.add_argument("--only", metavar="IDS",
                        help=f"comma-separated workloads, e.g. W1,W3 (of {','.join(WORKLOAD_IDS)}; "
                             f"with --device gpu, of {','.join(GPU_WORKLOAD_IDS)})")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="cpu (default): every workload on the CPU; gpu: the GPU variants of "
                             "W1-W6 (hybridtf, JAX and PyTorch on the GPU, each where it has "
                             "one); without a GPU it says so and runs nothing")
    parser.add_argument("--frameworks", metavar="NAMES",
                        help=f"comma-separated frameworks to run (of "
                             f"{','.join(frameworks.FRAMEWORKS)}); default: all installed")
    parser.add_argument("--json", metavar="PATH",
                        help="raw figures as JSON (default: benchmarks/results/<date>.json)")
    parser.add_argument("--plot", metavar="PATH",
                        help="bar chart of the hybridtf/peer ratios as PNG (needs matplotlib)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="pin the suite and its child processes to N CPUs and set the "
                             "frameworks' thread counts to N (default: their own defaults)")
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="run N processes that keep a core busy each while the workloads "
                             "run (a machine where other work runs; default 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser.parse_args(argv)


def _split(text):
    return [part.strip() for part in text.split(",") if part.strip()] if text else None


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    profile = "quick" if args.quick else "smoke" if args.smoke else "full"
    if args.threads is not None:
        try:
            frameworks.limit_threads(args.threads)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.device == "gpu":
        frameworks.use_device("gpu")   # before any framework loads
        from benchmarks import devices
        allowed = _split(args.frameworks)
        candidates = [f for f in devices.GPU_FRAMEWORKS if allowed is None or f in allowed]
        if not candidates:
            print(f"error: --device gpu runs {', '.join(devices.GPU_FRAMEWORKS)}; --frameworks "
                  "selected none of them", file=sys.stderr)
            return 2
        without = devices.gpu_frameworks_without_gpu(allowed)
        if len(without) == len(candidates):
            print("No GPU found, so the GPU variants (--device gpu) were not run: "
                  + "; ".join(without.values()) + ".")
            return 0
    from benchmarks import report
    from benchmarks.suite import run_suite
    try:
        results = run_suite(only=_split(args.only), profile=profile,
                            frameworks_allowed=_split(args.frameworks),
                            log=None if args.quiet else _progress, load=args.load,
                            device=args.device)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.format_results(results))
    json_path = args.json or os.path.join(
        DEFAULT_RESULTS_DIR, datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + ".json")
    report.write_json(results, json_path)
    print(f"\nraw figures: {json_path}")
    if args.plot:
        if report.write_plot(results, args.plot):
            print(f"ratio chart: {args.plot}")
        else:
            print("ratio chart skipped: matplotlib is not installed")
    mismatched = any(v["status"] == "mismatch" for w in results["workloads"].values()
                     for v in w["variants"])
    return 1 if mismatched else 0


def _progress(message):
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
