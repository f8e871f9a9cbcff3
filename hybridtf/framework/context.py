"""The execution context of each thread: the graphs being traced and the tapes recording.

It lives at the bottom of the layers because values at the bottom need it: a variable read is
symbolic while a function is traced and is recorded on the active tapes.  The objects it holds
are defined higher up (``graph.func_graph.FuncGraph``, ``eager.tape.Tape``); this module only
keeps them, and a variable talks to them through their methods (``read_variable``,
``assign_variable``, ``record_variable_read``).
"""
import threading


class _ThreadContext(threading.local):
    """Per-thread state: as in TF, a trace or a tape sees only the ops of its own thread."""

    def __init__(self):
        # The graphs being traced, innermost last (empty when executing eagerly).
        self.graphs = []
        # The tapes currently recording, innermost last.  Checked on every op.
        self.active = []
        # Collectors of the variables read while they are open (custom_gradient needs them).
        self.variable_watchers = []


STATE = _ThreadContext()


def tracing_graphs():
    """The graphs being traced in this thread, innermost last (empty when executing eagerly)."""
    return STATE.graphs


def current_graph():
    """The graph being traced in this thread, or None when executing eagerly."""
    graphs = STATE.graphs
    return graphs[-1] if graphs else None


def record_variable_read(variable, read):
    """Offers a variable read to every active tape and variable watcher of this thread."""
    for tape in STATE.active:
        tape.record_variable_read(variable, read)
    for watcher in STATE.variable_watchers:
        watcher.setdefault(id(variable), variable)
