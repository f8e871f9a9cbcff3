"""The two execution tiers of a traced graph: the interpreter at once, the compiled plan when ready.

A new trace runs at once on the graph interpreter, whose node kernels are compiled already (and
cached on disk), while its fused kernels compile on a background thread; calls switch to the
compiled plan when it is ready. Both tiers compute the same values: the interpreter runs every
node through its kernel, the compiled plan runs the same kernels or fused loops of the same
scalar functions (``compiler`` documents the semantics both keep).

With synchronous compilation (``tf.config.experimental.set_synchronous_compilation(True)``, or
``HYBRIDTF_SYNCHRONOUS_COMPILATION=1`` in the environment), the first call compiles before it
runs, as benchmarks and tests that time or inspect the compiled plan want.

A graph the compiler fails on stays on the interpreter, and the next call warns once with
``compiler.CompilationWarning`` (from the caller's thread, so that warning filters apply).
"""
import os
import threading
import warnings

from hybridtf import compiler
from hybridtf.framework.variables import UpdateLock
from hybridtf.graph import interpreter

_SYNCHRONOUS = [os.environ.get("HYBRIDTF_SYNCHRONOUS_COMPILATION", "") not in ("", "0")]


def set_synchronous_compilation(enabled):
    """With True, a traced function compiles on its first call, before running; with False (the
    default), it runs on the graph interpreter until its kernels, compiled in the background,
    are ready."""
    _SYNCHRONOUS[0] = bool(enabled)


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
                if self._outcome is None and synchronous_compilation():
                    self._outcome = self._compile()
                if self._outcome is not None:
                    self._install(*self._outcome)
                elif self._compiling is None:
                    self._compiling = threading.Thread(
                        target=self._compile_in_background, daemon=True,
                        name=f"hybridtf-compile-{self._name}")
                    return self._first_call
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
            thread.join()
        with self._lock:
            if self._final is None:
                if self._outcome is None:
                    self._outcome = self._compile()
                self._install(*self._outcome)
        return self._final

    def _compile_in_background(self):
        outcome = self._compile()
        with self._lock:
            self._outcome = outcome

    def _compile(self):
        try:
            compiled = compiler.compile_graph(
                self._graph, compiler.backend_for_device(self._graph.device))
        except Exception as err:  # noqa: BLE001 - lowering is an optimisation: never fatal
            return None, err
        return compiled, None

    def _install(self, compiled, error):
        """Makes the outcome of compiling final (under the lock)."""
        self.compiled = compiled
        if compiled is None:
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
