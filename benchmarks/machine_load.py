"""How busy other processes kept the machine while a workload ran.

On a shared machine the figures of multi-threaded frameworks swing by orders of magnitude when
another process holds a core (a parallel region waits for its descheduled thread). The report
shows this measure next to each workload so that a reader can tell noise from a regression.
"""
import os
import subprocess
import sys
import time

# A process that keeps one core busy, as any other program running on the machine would.
_BUSY_LOOP = "while True:\n    pass\n"


def _busy_seconds():
    """CPU seconds the whole machine spent busy since boot (Linux /proc/stat), or None."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_seconds():
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _process_seconds(pid):
    """CPU seconds a running process has used (0 where /proc does not say)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime


class LoadMonitor:
    """``with LoadMonitor(helpers) as load: ...`` then ``load.other_cpus``: CPUs' worth of work
    done by other processes, on average, during the block (None where /proc/stat is
    unavailable).  ``helpers()``, where given, lists the pids of this run's own processes that
    are still running (the frameworks' processes): their work is not other processes'."""

    def __init__(self, helpers=None):
        self._helpers = helpers or (lambda: [])

    def _helpers_seconds(self):
        return {pid: _process_seconds(pid) for pid in self._helpers()}

    def __enter__(self):
        self._start = (time.perf_counter(), _busy_seconds(), _own_seconds())
        self._helpers_start = self._helpers_seconds()
        self.other_cpus = None
        return self

    def __exit__(self, *exc_info):
        wall0, busy0, own0 = self._start
        wall, busy, own = time.perf_counter() - wall0, _busy_seconds(), _own_seconds() - own0
        own += sum(seconds - self._helpers_start.get(pid, 0.0)
                   for pid, seconds in self._helpers_seconds().items())
        if busy is not None and busy0 is not None and wall > 0:
            self.other_cpus = max(0.0, (busy - busy0 - own) / wall)
        return False


class BusyProcesses:
    """``with BusyProcesses(n): ...`` runs ``n`` processes that each keep one core busy during
    the block (``--load n``): every variant of every workload is timed on a machine where
    other work runs, the usual case on a laptop or a shared server."""

    def __init__(self, count):
        if count < 0:
            raise ValueError(f"--load must be >= 0, got {count}")
        self.count = count
        self._processes = []

    def __enter__(self):
        for _ in range(self.count):
            self._processes.append(subprocess.Popen(
                [sys.executable, "-c", _BUSY_LOOP], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc_info):
        for process in self._processes:
            process.kill()
        for process in self._processes:
            process.wait()
        self._processes = []
        return False
