"""Timing: warm-up, calibration, and alternating rounds of samples.

The machine is shared and noisy, so no variant is timed in one block: every round takes one sample
of each variant, in an order rotated from round to round, so that a slow spell of the machine
hits all variants alike. A sample repeats the call enough times to last ``min_sample_s`` and is
recorded as time per call; the report uses the median of the samples and shows min and max.
"""
import gc
import itertools
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

# Before each sample the worker threads of the framework timed last must have gone idle, or they
# take a core from the next one: OpenBLAS's spin for about 0.1 s after a parallel call, OpenMP,
# Eigen and XLA pools for less.  ``settle`` waits until the process's CPU time stops advancing.
SETTLE_POLL_S = 0.005
SETTLE_MAX_S = 0.5
MAX_NUMBER = 1_000_000


@dataclass
class Prepared:
    """One variant of one workload, built and ready to run.

    ``call`` runs the timed unit once and returns only when its result is computed (JAX's
    asynchronous dispatch is waited for). ``check`` returns the NumPy result compared between
    frameworks before any timing; for train steps it runs ``check_steps`` steps from the initial
    weights and returns the losses and the final weights.  ``units``: the figures are per unit
    of the workload, a call's time divided by this.
    """
    call: Callable[[], Any]
    check: Optional[Callable[[], Any]] = None
    units: int = 1   # what one call does, in the workload's unit (K1: train steps of one fit)

    def result(self):
        from benchmarks.frameworks import to_numpy
        return to_numpy(self.check() if self.check is not None else self.call())


def settle():
    """Waits (at most SETTLE_MAX_S) until no thread of this process is using a CPU."""
    deadline = time.perf_counter() + SETTLE_MAX_S
    while True:
        cpu = time.process_time()
        time.sleep(SETTLE_POLL_S)
        if time.process_time() - cpu < 0.2 * SETTLE_POLL_S or time.perf_counter() > deadline:
            return


def _run(fn, number):
    start = time.perf_counter()
    for _ in itertools.repeat(None, number):
        fn()
    return time.perf_counter() - start


def calibrate(fn, min_sample_s, max_number=MAX_NUMBER):
    """How many calls make one sample last at least ``min_sample_s``."""
    number = 1
    while True:
        elapsed = _run(fn, number)
        if elapsed >= min_sample_s or number >= max_number:
            return number
        if elapsed <= 0:
            number *= 10
        else:
            # Aim 20% above the target so that a sample rarely falls short of it.
            number = int(number * min(10.0, 1.2 * min_sample_s / elapsed)) + 1
        number = min(number, max_number)


def summarize(samples):
    """Median, min and max of a list of numbers (empty -> Nones)."""
    if not samples:
        return {"samples": [], "median": None, "min": None, "max": None}
    return {"samples": list(samples), "median": statistics.median(samples),
            "min": min(samples), "max": max(samples)}


def per_unit(timing, units):
    """A ``time_alternating`` timing of calls of ``units`` units each, per unit."""
    if units == 1:
        return timing
    out = summarize([sample / units for sample in timing["samples"]])
    out["number"] = timing["number"]
    out["units_per_call"] = units
    return out


class TimedCall:
    """A prepared variant's call, timed in this process (``time_alternating``'s interface; a
    framework's own process offers the same: ``framework_processes.RemoteVariant``)."""

    def __init__(self, call):
        self.call = call
        self._round = None

    def calibrate(self, profile):
        """Warm-up calls, then how many calls make one sample."""
        for _ in range(profile.warmup_calls):
            self.call()
        return calibrate(self.call, profile.min_sample_s)

    def sample(self, number, round_index):
        """Seconds that ``number`` calls take, once the process's threads have gone idle (a
        garbage collection first, once a round)."""
        if round_index != self._round:
            self._round = round_index
            gc.collect()
        settle()
        return _run(self.call, number)


def time_alternating(variants, profile):
    """Time several variants against each other.

    ``variants`` maps a name to a ``TimedCall`` (or an object with its two methods) of a
    variant that has already run once (compiled, traced, checked). Returns ``(timings,
    failures)``: ``timings[name]`` is ``{"samples": [s per call], "median", "min", "max",
    "number"}``; ``failures[name]`` is the exception that stopped a variant during warm-up or
    timing (the others go on without it).
    """
    names = list(variants)
    failures = {}
    numbers = {}
    for name in names:
        try:
            numbers[name] = variants[name].calibrate(profile)
        except Exception as exc:  # noqa: BLE001 - reported per variant, the run goes on
            failures[name] = exc
    names = [name for name in names if name not in failures]
    samples = {name: [] for name in names}
    spent = {name: 0.0 for name in names}
    for round_index in range(profile.rounds):
        active = [name for name in names if name not in failures]
        if not active:
            break
        shift = round_index % len(active)
        for name in active[shift:] + active[:shift]:
            if len(samples[name]) >= profile.min_rounds and spent[name] >= profile.max_variant_s:
                continue  # a slow variant has had its share of the time
            try:
                elapsed = variants[name].sample(numbers[name], round_index)
            except Exception as exc:  # noqa: BLE001
                failures[name] = exc
                continue
            spent[name] += elapsed
            samples[name].append(elapsed / numbers[name])
    timings = {}
    for name in names:
        if name not in failures:
            timings[name] = summarize(samples[name])
            timings[name]["number"] = numbers[name]
    return timings, failures


def harness_overhead(profile):
    """Seconds per call that the timing loop itself adds (calling an empty lambda)."""
    def noop():
        return None
    number = calibrate(noop, profile.min_sample_s)
    return min(_run(noop, number) / number for _ in range(3))
