"""The record of one variant in the results, and how failures are classified into it."""
import traceback

from benchmarks.frameworks import Missing, Unavailable, key, label


NOT_SELECTED = "not selected (--frameworks)"
UNTIMED = "the CPU reference the GPU variants are checked against; not timed"


def new_variant(framework, mode):
    """A variant's record: status is ``ok``, ``skipped`` (peer not here), ``missing`` (hybridtf
    feature not written yet), ``error`` (it raised), ``mismatch`` (wrong result) or
    ``untimed`` (a reference that is only checked against)."""
    return {"framework": framework, "mode": mode, "key": key(framework, mode),
            "label": label(framework, mode), "status": None, "reason": None,
            "agreement": None, "metrics": {}}


class VariantFailed(Exception):
    """A variant's failure in its framework's own process (``framework_processes``), already
    classified there: ``record`` holds its status, reason and traceback."""

    def __init__(self, record):
        super().__init__(record.get("reason"))
        self.record = record


def record_failure(entry, exc):
    """Classify an exception raised by a variant: a skipped peer, a missing feature, an error."""
    if isinstance(exc, VariantFailed):
        entry.update(exc.record)
    elif isinstance(exc, Unavailable):
        entry["status"], entry["reason"] = "skipped", str(exc)
    elif isinstance(exc, Missing):
        entry["status"], entry["reason"] = "missing", str(exc)
    else:
        entry["status"], entry["reason"] = "error", f"{type(exc).__name__}: {exc}"
        entry["traceback"] = "".join(traceback.format_exception(exc)[-6:])


def selected(framework, allowed):
    """Whether ``--frameworks`` lets this framework run (``allowed`` None: all)."""
    return allowed is None or framework in allowed


def child_result(framework, mode, measure):
    """What a measuring child process reports: ``measure()``'s dict with status "ok", or the
    record of its failure (the parent reports it)."""
    try:
        result = measure()
        result["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 - the parent reports it
        entry = new_variant(framework, mode)
        record_failure(entry, exc)
        result = {k: entry[k] for k in ("status", "reason", "traceback") if k in entry}
    return result
