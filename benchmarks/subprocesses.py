"""Fresh-process measurements for C1, C2, M1 and R1, the parent's side.

``run_child`` starts ``python -m benchmarks.child ...`` (see child.py) and reads back its one
result line. Running each framework in its own process keeps one framework's imports, caches and
memory out of another's figures.
"""
import json
import os
import subprocess
import sys
import time

MARKER = "BENCHMARK-RESULT "
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_child(arguments, env=None, timeout=600.0, module="benchmarks.child", launcher=()):
    """Run the child ``python -m module`` with ``arguments`` (under ``launcher``, e.g.
    ``["mpiexec", "-n", "2"]``); returns its result dict plus ``process_s`` (wall time of the
    whole process, interpreter start included). A crash or a time-out becomes
    ``{"status": "error", "reason": ...}``."""
    command = [*launcher, sys.executable, "-m", module, *arguments]
    start = time.perf_counter()
    try:
        process = subprocess.run(command, cwd=REPO_ROOT, env=child_environment(env),
                                 capture_output=True, text=True, timeout=timeout,
                                 stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - start
    for line in reversed(process.stdout.splitlines()):
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER):])
            result["process_s"] = wall
            return result
    tail = (process.stderr or process.stdout).strip().splitlines()[-5:]
    return {"status": "error",
            "reason": f"child exited with {process.returncode} and no result: " + " | ".join(tail)}


def child_environment(env=None):
    """``env`` (default: this process's environment) with the repository first on
    PYTHONPATH, so that a child imports ``benchmarks`` and ``hybridtf`` from this checkout."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    return env


def cache_environment(root):
    """Environment whose on-disk compilation caches all live under ``root``."""
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = os.path.join(root, "numba")
    env["HYBRIDTF_CACHE_DIR"] = os.path.join(root, "hybridtf")
    env["JAX_COMPILATION_CACHE_DIR"] = os.path.join(root, "jax")
    return env
