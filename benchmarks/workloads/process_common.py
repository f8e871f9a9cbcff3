"""Shared by C1, M1 and R1: which variants run in child processes, and checking their results."""
import importlib.util

from benchmarks.agreement import compare
from benchmarks.records import NOT_SELECTED, new_variant, selected

# W3 variants measured in fresh processes; NumPy is the floor (interpreter + NumPy + one step).
VARIANTS = (("numpy", "eager"), ("tensorflow", "eager"), ("tensorflow", "function"),
            ("jax", "jit"), ("torch", "eager"), ("hybridtf", "eager"), ("hybridtf", "function"))


def variants(profile, informational):
    """The variants a profile runs: all of them, or all but the ``informational`` ones (each
    costs a framework import in a fresh process: seconds for TensorFlow)."""
    if profile.all_process_variants:
        return VARIANTS
    return tuple(v for v in VARIANTS if v not in informational)


def installed(framework):
    """Cheap check in the parent; hybridtf is always tried (the child reports what is missing)."""
    return framework == "hybridtf" or importlib.util.find_spec(framework) is not None


def start_variant(framework, mode, allowed):
    """A new variant record, already marked skipped when it cannot run here."""
    entry = new_variant(framework, mode)
    if not selected(framework, allowed):
        entry["status"], entry["reason"] = "skipped", NOT_SELECTED
    elif not installed(framework):
        entry["status"], entry["reason"] = "skipped", f"{framework} is not installed"
    return entry


def absorb_failure(entry, result):
    """Copy a child's non-ok status into the record; True when the variant failed."""
    if result.get("status") == "ok":
        return False
    entry["status"] = result.get("status", "error")
    entry["reason"] = result.get("reason")
    if "traceback" in result:
        entry["traceback"] = result["traceback"]
    return True


def check_first_loss(entry, loss, reference, tolerance=1e-4):
    """Agreement on the first W3 step's loss; returns the reference (set by the first ok one)."""
    return check_value(entry, "first loss", loss, reference, tolerance)


def check_value(entry, what, value, reference, tolerance=1e-4):
    """Agreement of a variant's ``value`` with ``reference`` ((key, value), or None: this
    variant's becomes the reference); returns the reference."""
    if reference is None:
        entry["agreement"] = {"ok": True, "reference": True}
        return (entry["key"], value)
    entry["agreement"] = compare(value, reference[1], tolerance)
    entry["agreement"]["reference"] = reference[0]
    if not entry["agreement"]["ok"]:
        entry["status"] = "mismatch"
        entry["reason"] = (f"{what} {value:.6g} disagrees with {reference[0]}'s "
                           f"{reference[1]:.6g}")
    return reference
