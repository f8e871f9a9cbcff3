"""The two execution tiers of a traced graph: the interpreter at once, the compiled plan when ready.

A new trace whose fused kernels were never compiled runs at once on the graph interpreter, whose
node kernels are compiled already (and cached on disk), while its fused kernels compile on a
background thread; calls switch to the compiled plan when it is ready. A trace whose kernels are
in the kernel cache (the same graph, shapes and dtypes in an earlier process) loads them on its
first call instead: that is quicker than the interpreter's first step. Both tiers compute the
same values: the interpreter runs every node through its kernel, the compiled plan runs the same
kernels or fused loops of the same scalar functions (``compiler`` documents the semantics both
keep).

A process waits at exit for the compiles still running, so that their kernels reach the cache.
A compile the caller waits for (a synchronous one, or this wait at exit) that takes longer than
about a second is announced with one line (``ops.compile_notice``); the background compile,
which nobody waits for, is not.

With synchronous compilation (``tf.config.experimental.set_synchronous_compilation(True)``, or
``HYBRIDTF_SYNCHRONOUS_COMPILATION=1`` in the environment), the first call compiles before it
runs, as benchmarks and tests that time or inspect the compiled plan want.

A graph the compiler fails on stays on the interpreter and warns once with
``compiler.CompilationWarning``: on its first call when preparing it fails, on the call after a
failed background compile otherwise (always from the caller's thread, so that warning filters
apply).
"""
import atexit
import os
import threading
import warnings
import weakref

from ops import compile_notice, deferred_compiles

from hybridtf import compiler
from hybridtf.framework import devices
from hybridtf.framework.variables import UpdateLock
from hybridtf.graph import interpreter

_SYNCHRONOUS = [os.environ.get("HYBRIDTF_SYNCHRONOUS_COMPILATION", "") not in ("", "0")]
_COMPILING = weakref.WeakKeyDictionary()   # background compiles started -> function name


@atexit.register
def _finish_compiling():
    # A compile cut short at exit is lost, and the next process would compile again: let the
    # ones in flight finish, so that their kernels are in the cache.
    compiling = {thread: name for thread, name in list(_COMPILING.items())
                 if thread.is_alive()}
    names = sorted({f"'{name}'" for name in compiling.values()})
    what = "it" if len(names) == 1 else "them"
    compile_notice.join(compiling, f"hybridtf: finishing compiling tf.function {', '.join(names)} "
                                   f"before exiting, so that the next runs load {what} from the "
                                   f"cache")


def set_synchronous_compilation(enabled):
    """With True, a traced function compiles on its first call, before running, and so does
    every kernel an op calls; with False (the default), a traced function runs on the graph
    interpreter until its kernels, compiled in the background, are ready, and an op whose
    kernels are not compiled yet runs its reference form meanwhile (``ops.deferred_compiles``)."""
    _SYNCHRONOUS[0] = bool(enabled)
    deferred_compiles.set_allowed(not enabled)


def synchronous_compilation():
    """Whether traced functions compile on their first call (see
    ``set_synchronous_compilation``)."""
    return _SYNCHRONOUS[0]


class ExecutionTiers:
    """How one graph runs: ``run()`` returns the ``run(arrays, call_index)`` to use now.

    ``compiled`` is the ``compiler.CompiledGraph`` once ready (None before, or when the compiler
    failed: ``compile_error`` says why)."""

    def __init__(self, graph, name):
        self._graph = graph
        self._name = name
        self._lock = threading.Lock()
        self._final = None          # the run to use from now on, once decided
        self._compiling = None      # the background thread
        self._outcome = None        # (CompiledGraph or None, error or None), set by the thread
        self._interpreted = self._locked(
            lambda arrays, call_index: interpreter.run(graph, arrays, call_index))
        self.compiled = None
        self.compile_error = None

    def run(self):
        """The run callable for this call: the compiled plan when ready, else the interpreter."""
        final = self._final
        if final is not None:
            return final
        with self._lock:
            if self._final is None:
                if self._outcome is None and self._compiling is None:
                    rendered, error = self._render()
                    if rendered is None:
                        self._outcome = None, error
                    elif rendered.stored or synchronous_compilation():
                        # compiled before (its kernels load from the cache), or asked for
                        self._outcome = self._finish_while_waited_for(rendered)
                    else:
                        self._compiling = threading.Thread(
                            target=self._finish_in_background, args=(rendered,), daemon=True,
                            name=f"hybridtf-compile-{self._name}")
                        _COMPILING[self._compiling] = self._name
                        return self._first_call
                if self._outcome is not None:
                    self._install(*self._outcome)
            return self._final or self._interpreted

    def _first_call(self, arrays, call_index):
        # The compiler starts once the first result is out: compiling holds the GIL most of
        # the time, and the first result is what the caller waits for.
        try:
            return self._interpreted(arrays, call_index)
        finally:
            self._compiling.start()

    def wait(self):
        """The compiled tier's run, compiling now if needed (waits for a background compile):
        for ``kernel_source`` and callers that need the compiled plan itself."""
        thread = self._compiling
        if thread is not None:
            compile_notice.join([thread], f"hybridtf: waiting for tf.function '{self._name}' "
                                          f"to finish compiling (cached for the next runs)")
        with self._lock:
            if self._final is None:
                if self._outcome is None:
                    rendered, error = self._render()
                    self._outcome = ((None, error) if rendered is None
                                     else self._finish_while_waited_for(rendered))
                self._install(*self._outcome)
        return self._final

    def _finish_in_background(self, rendered):
        # the caller runs on the interpreter meanwhile
        with compile_notice.silenced(), deferred_compiles.handing_back_the_interpreter():
            outcome = self._finish(rendered)
        with self._lock:
            self._outcome = outcome

    def _render(self):
        """(the graph prepared for its backend, None), or (None, the error), or (None, None)
        for a graph on the CPU reading variables held on a GPU: the interpreter is its tier."""
        if self._reads_other_devices():
            return None, None
        try:
            backend = compiler.backend_for_device(self._graph.device)
            return compiler.prepare(self._graph, backend), None
        except Exception as err:  # noqa: BLE001 - lowering is an optimisation: never fatal
            return None, err

    def _finish_while_waited_for(self, rendered):
        """``_finish`` for a caller that waits: announced if it takes long."""
        if rendered.stored:
            message = (f"hybridtf: loading the kernels of tf.function '{self._name}' from the "
                       f"kernel cache")
        else:
            message = (f"hybridtf: compiling tf.function '{self._name}'; its kernels are cached "
                       f"for the next runs")
        with compile_notice.announce(message):
            return self._finish(rendered)

    def _reads_other_devices(self):
        # The CPU's compiled code takes host arrays only; the interpreter copies the values of
        # variables and captures held on another device.  (The CUDA driver copies them itself.)
        if self._graph.backend is not devices.CPU:
            return False
        held = [v._value for v, _ in self._graph.variables]
        held += [t._value for t, _ in self._graph.captures]
        return any(type(a) not in devices.CPU_TYPES for a in held)

    @staticmethod
    def _finish(rendered):
        """(CompiledGraph, None), or (None, the error)."""
        try:
            return rendered.finish(), None
        except Exception as err:  # noqa: BLE001 - lowering is an optimisation: never fatal
            return None, err

    def _install(self, compiled, error):
        """Makes the outcome of compiling final (under the lock)."""
        self.compiled = compiled
        if compiled is None and error is None:   # see _render
            self.compile_error = (f"the graph runs on {self._graph.device}, with variables or "
                                  "captured values on a GPU")
            self._final = self._interpreted
        elif compiled is None:
            self.compile_error = f"{type(error).__name__}: {error}"
            self._final = self._interpreted
            warnings.warn(compiler.CompilationWarning(
                f"tf.function {self._name}: {error}. It runs on the graph interpreter instead: "
                "correct, but slower. This is a bug in hybridtf's compiler; please report it "
                "with the function."), stacklevel=4)
        else:
            self._final = self._locked(compiled.run)

    def _locked(self, run):
        """``run`` holding the locks of the variables the graph updates, from its reads to its
        write-backs."""
        updated = [v for v, _ in self._graph.updated_variables()]
        if not updated:
            return run
        lock = UpdateLock(updated)

        def run_holding_locks(arrays, call_index):
            with lock:
                return run(arrays, call_index)
        return run_holding_locks
