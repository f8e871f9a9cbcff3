"""What a workload is: an id, a title, and one implementation per framework variant."""
from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass(frozen=True)
class Impl:
    """One framework variant of a workload.

    ``build(module, profile)`` receives the framework's top-level module (``numpy``, ``numba``,
    ``tensorflow``, ``jax``, ``torch`` or ``hybridtf``) and returns a ``harness.Prepared``.
    """
    framework: str
    mode: str
    build: Callable


@dataclass(frozen=True)
class Workload:
    """A workload of the suite.

    ``kind`` is ``"time"`` (seconds per call, timed in-process in alternating rounds) or
    ``"process"`` (measured in fresh subprocesses by ``run``: C1 and M1).
    ``tolerance`` is what ``agreement.compare`` accepts between a variant and the reference (the
    first variant in ``impls`` that builds, normally NumPy).
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
