"""Ops of ``tf.summary``: writing one summary, and flushing or closing a summary writer.

All three are stateful: inside a traced function they run on every call, in program order,
like ``tf.print``.  The writer and what to do with the values reach the op as attributes fixed
when the op is created (in a traced function: when it is traced, as TF captures the default
writer then), so the registry needs nothing of the summary package.
"""
import numpy as np

from hybridtf.registry import OpDef, Spec, checks, register


def _write_eager(arrays, attrs):
    # arrays: [step, data] and, when recording depends on a run-time value, [condition].
    return np.asarray(bool(attrs["record"](*arrays)))


def _write_infer(specs, attrs):
    step = specs[0]
    if step.shape is not None and len(step.shape) != 0:
        checks.fail("write_summary", f"step must be a scalar, got shape "
                                     f"{checks.fmt_shape(step.shape)}.")
    return [Spec((), np.dtype(np.bool_))]


WRITE_SUMMARY = register(OpDef("write_summary", "opaque", {"cpu": _write_eager}, _write_infer,
                               stateful=True))


def _flush_eager(arrays, attrs):
    attrs["writer"].flush()
    return ()


def _close_eager(arrays, attrs):
    attrs["writer"].close()
    return ()


def _no_outputs(specs, attrs):
    return []


FLUSH_SUMMARY_WRITER = register(OpDef("flush_summary_writer", "opaque", {"cpu": _flush_eager},
                                      _no_outputs, num_outputs=0, stateful=True))
CLOSE_SUMMARY_WRITER = register(OpDef("close_summary_writer", "opaque", {"cpu": _close_eager},
                                      _no_outputs, num_outputs=0, stateful=True))
