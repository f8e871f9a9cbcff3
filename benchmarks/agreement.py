"""Do two frameworks compute the same thing? Checked before anything is timed.

Results are NumPy arrays or nests (dicts, lists) of them. Each leaf is compared to the reference
leaf by its relative max error, ``max|a - ref| / max|ref|``: scale-aware, insensitive to the
few elements of a result that happen to be near zero, and still failing on any real difference
in what was computed.

Weights after a few Adam steps need one allowance: Adam moves every weight by about the learning
rate whatever the size of its gradient, so a unit whose pre-activation sits within rounding of
relu's kink in one framework and not in another legitimately ends up a learning rate apart in a
whole column. ``Tolerance(rtol, quantile=0.99)`` therefore bounds the 99th percentile of the
error instead of its maximum: a real bug (a wrong gradient, a wrong update) moves far more than
1% of the elements.
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    quantile: float = 1.0


def flatten(result, prefix=""):
    """``[(path, array)]`` for every leaf of a nest of dicts and lists."""
    if isinstance(result, dict):
        items = []
        for name in sorted(result):
            items += flatten(result[name], f"{prefix}.{name}" if prefix else str(name))
        return items
    if isinstance(result, (list, tuple)):
        items = []
        for index, value in enumerate(result):
            items += flatten(value, f"{prefix}[{index}]")
        return items
    return [(prefix or "result", np.asarray(result))]


def relative_error(value, reference, quantile=1.0):
    """``max|value - reference| / max|reference|`` (absolute error when the reference is 0);
    with ``quantile`` < 1 that quantile of the elementwise error instead of the max."""
    value = np.asarray(value, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if value.shape != reference.shape:
        return float("inf")
    if not np.all(np.isfinite(value)) or not np.all(np.isfinite(reference)):
        same = np.array_equal(np.isnan(value), np.isnan(reference)) and np.array_equal(
            value[~np.isnan(value)], reference[~np.isnan(reference)])
        return 0.0 if same else float("inf")
    if value.size == 0:
        return 0.0
    scale = float(np.max(np.abs(reference)))
    difference = np.abs(value - reference)
    error = float(np.max(difference) if quantile >= 1.0 else np.quantile(difference, quantile))
    return error / scale if scale > 0 else error


def compare(result, reference, tolerance):
    """Compare a result with the reference; returns a dict with ``ok`` and the worst leaf.

    ``tolerance`` is a number or a ``Tolerance``, or a dict from a leaf-path prefix (e.g.
    ``"loss"``) to one of those, with ``"*"`` as the default.
    """
    ours = flatten(result)
    theirs = flatten(reference)
    if [p for p, _ in ours] != [p for p, _ in theirs]:
        return {"ok": False, "max_rel_err": float("inf"), "worst": "structure",
                "detail": f"result has leaves {[p for p, _ in ours]}, "
                          f"reference has {[p for p, _ in theirs]}"}
    worst_ratio, worst = -1.0, None
    for (path, value), (_, expected) in zip(ours, theirs):
        tol = _tolerance_for(path, tolerance)
        if np.shape(value) != np.shape(expected):
            return {"ok": False, "max_rel_err": float("inf"), "worst": path,
                    "detail": f"{path}: shape {np.shape(value)} != reference {np.shape(expected)}"}
        err = relative_error(value, expected, tol.quantile)
        ratio = err / tol.rtol if tol.rtol > 0 else (0.0 if err == 0 else float("inf"))
        if ratio > worst_ratio:
            worst_ratio, worst = ratio, (path, err, tol)
    path, err, tol = worst if worst else ("result", 0.0, _tolerance_for("", tolerance))
    out = {"ok": bool(worst_ratio <= 1.0), "max_rel_err": err, "tolerance": tol.rtol,
           "worst": path}
    if tol.quantile < 1.0:
        out["quantile"] = tol.quantile
    return out


def _tolerance_for(path, tolerance):
    if isinstance(tolerance, dict):
        best = None
        for prefix in tolerance:
            if prefix != "*" and path.startswith(prefix) and (
                    best is None or len(prefix) > len(best)):
                best = prefix
        tolerance = tolerance[best] if best is not None else tolerance["*"]
    return tolerance if isinstance(tolerance, Tolerance) else Tolerance(float(tolerance))
