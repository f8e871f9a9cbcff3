"""What a workload is: an id, a title, and one implementation per framework variant."""
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Optional

from benchmarks.devices import GPU


@dataclass(frozen=True)
class Impl:
    """One framework variant of a workload.

    ``build(module, profile)`` receives the framework's top-level module (``numpy``, ``numba``,
    ``tensorflow``, ``jax``, ``torch`` or ``hybridtf``) and returns a ``harness.Prepared``.
    ``timed``: False for a reference that is only checked against (the NumPy reference of the
    GPU variants, which runs on the CPU).
    """
    framework: str
    mode: str
    build: Callable
    timed: bool = True


@dataclass(frozen=True)
class Workload:
    """A workload of the suite.

    ``kind`` is ``"time"`` (seconds per call, timed in alternating rounds, each framework in
    its own process) or ``"process"`` (measured in fresh subprocesses by ``run``: C1 and M1).
    ``tolerance`` is what ``agreement.compare`` accepts between a variant and the reference (the
    first variant in ``impls`` that builds, normally NumPy).
    ``extra["bytes_moved"]``, where given, returns the bytes one call must read and write: the
    suite adds each timed variant's memory bandwidth (and its share of the GPU's peak).
    """
    id: str
    title: str
    shapes: str
    impls: tuple
    tolerance: object = 1e-5
    kind: str = "time"
    run: Optional[Callable] = None
    metrics: tuple = ("time_s",)
    ratio_metrics: tuple = ("time_s",)
    notes: str = ""
    extra: dict = field(default_factory=dict)


# The variants a workload runs on the GPU (``--device gpu``), by (framework, mode).
GPU_VARIANTS = (("hybridtf", "eager"), ("hybridtf", "function"), ("jax", "jit"),
                ("torch", "eager"))


def on_gpu(workload, **changes):
    """The workload's GPU variants: its own builders of ``GPU_VARIANTS`` called with
    ``device="gpu"``, after its NumPy reference (checked against, not timed). ``changes``
    replace fields of the workload (W1 adds its bandwidth metrics)."""
    impls = []
    for impl in workload.impls:
        if (impl.framework, impl.mode) == ("numpy", "eager"):
            impls.append(replace(impl, timed=False))
        elif (impl.framework, impl.mode) in GPU_VARIANTS:
            impls.append(replace(impl, build=partial(impl.build, device=GPU)))
    return replace(workload, impls=tuple(impls), **changes)
