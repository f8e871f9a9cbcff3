"""The tape stack: which ops to record for differentiation, and the records themselves.

A tape tracks tensors by ``id``; every tracked tensor is kept alive by the tape (through its
``watched`` dict or a record's outputs), so ids are never reused while they matter.  An op is
recorded on an active tape when one of its inputs is tracked by that tape and the op has a
gradient; its floating-point outputs then become tracked.  Integer and bool results are never
tracked, so gradients through them are None, as in TF.
"""

from hybridtf.framework import context

# The thread's execution context: ``STATE.active`` are its recording tapes, innermost last
# (like TF's, a tape records only the ops of its own thread).
STATE = context.STATE


class Record:
    """One recorded op: what ran, on which inputs, producing which outputs.

    ``needed`` is set by the backward pass before it calls ``grad_fn``: which inputs it wants
    gradients for (None: all of them), so that a rule may skip computing the others (a
    matmul's product for a constant operand); see ``needs``.
    """

    __slots__ = ("op", "inputs", "outputs", "attrs", "grad_fn", "needed")

    def __init__(self, op, inputs, outputs, attrs, grad_fn):
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.grad_fn = grad_fn  # (record, output_grads) -> input grads
        self.needed = None

    def needs(self, index):
        """Whether the gradient being computed needs the gradient of input ``index`` (a rule
        may return None for one that is not needed)."""
        needed = self.needed
        return needed is None or needed[index]


def differentiable(value):
    """True for floating (and complex) tensors and variables: the ones gradients flow through."""
    array = value._value
    kind = (array.dtype if array is not None else value._np_dtype).kind
    return kind == "f" or kind == "c"


class Tape:
    """The data of one GradientTape: tracked tensors, watched variables and records."""

    __slots__ = ("persistent", "watch_accessed_variables", "tracked", "variables", "records",
                 "variable_reads")

    def __init__(self, persistent, watch_accessed_variables):
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables
        self.tracked = {}          # id -> tensor or variable
        self.variables = {}        # id -> watched variable, in order of watching
        self.records = []
        self.variable_reads = {}   # id(read tensor) -> variable, to record each read once

    def watch(self, value):
        if getattr(value, "_is_variable", False):
            self.variables.setdefault(id(value), value)
        self.tracked[id(value)] = value

    def record(self, op, inputs, outputs, attrs, grad_fn):
        tracked = self.tracked
        for x in inputs:
            if id(x) in tracked:
                break
        else:
            return
        self.records.append(Record(op, inputs, outputs, attrs, grad_fn))
        for y in outputs:
            if differentiable(y):
                tracked[id(y)] = y

    def record_variable_read(self, variable, read):
        if id(variable) not in self.variables:
            if not (self.watch_accessed_variables and variable.trainable):
                return
            self.watch(variable)
        if id(read) in self.variable_reads:
            return
        self.variable_reads[id(read)] = variable
        self.records.append(Record(None, (variable,), (read,), None, _read_variable_grad))
        self.tracked[id(read)] = read


def _read_variable_grad(record, grads):
    return grads


def record(op, inputs, outputs, attrs, grad_fn):
    """Offers an executed op to every active tape."""
    for tape in STATE.active:
        tape.record(op, inputs, outputs, attrs, grad_fn)


record_variable_read = context.record_variable_read


class watch_variable_reads:
    """Context manager collecting the variables read inside it, in order of first read."""

    def __enter__(self):
        self.variables = {}
        STATE.variable_watchers.append(self.variables)
        return self

    def __exit__(self, *exc):
        STATE.variable_watchers.remove(self.variables)
        return False


class stop_recording:
    """Context manager: ops inside are recorded on no tape of this thread."""

    def __init__(self):
        self._saved = None

    def __enter__(self):
        self._saved = list(STATE.active)
        STATE.active.clear()
        return self

    def __exit__(self, *exc):
        STATE.active[:] = self._saved
        return False
