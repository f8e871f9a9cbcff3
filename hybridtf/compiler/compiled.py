"""What the compiler's steps hand each other: a lowered graph, which a backend compiles, and the
compiled graph it returns; and how a failure to compile is reported."""
import contextlib


class CompilationError(Exception):
    """A step of compiling a graph failed: ``ops`` names the ops of the part that failed (a
    fused loop's members, or one opaque step), ``reason`` says why."""

    def __init__(self, ops, reason):
        self.ops = tuple(ops)
        self.reason = reason
        super().__init__(f"compiling {', '.join(self.ops) or 'the graph'} failed: {reason}")


@contextlib.contextmanager
def failures_named(ops):
    """Turns an error raised inside into a ``CompilationError`` naming ``ops`` (one raised by
    a step nested inside, naming its own ops, passes through)."""
    try:
        yield
    except CompilationError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure of a compiler step is reported as one
        raise CompilationError(ops, f"{type(err).__name__}: {err}") from err


def op_names(nodes):
    """The names of ``nodes``' ops, each once, in order."""
    return tuple(dict.fromkeys(node.op.name for node in nodes))


class CompilationWarning(RuntimeWarning):
    """A traced function could not be compiled and runs on the graph interpreter instead:
    correct, but slower.  The warning names the ops and the reason; it is a bug in hybridtf's
    compiler, worth reporting with the function (``warnings.simplefilter("error",
    CompilationWarning)`` makes it an error)."""


class Lowered:
    """A graph lowered for every backend alike: ``plan`` (``plan.lower``: fused groups and
    opaque steps), ``folded`` (id(tensor) -> the array of each value folded at compile time,
    ``fold.fold_constants``) and ``constants`` (id(tensor) -> the one value of each
    single-valued constant, ``fold.single_values``)."""

    def __init__(self, graph, plan, folded, constants):
        self.graph = graph
        self.plan = plan
        self.folded = folded
        self.constants = constants


class CompiledGraph:
    """A compiled graph: ``run(input_arrays, call_index)``, the generated kernel source and the
    driver source."""

    def __init__(self, graph, run, kernel_source, driver_source, lease):
        self.graph = graph
        self.run = run
        self.kernel_source = kernel_source
        self.driver_source = driver_source
        # the generated module's ops.codegen.ModuleLease: held as long as this graph lives
        self.lease = lease
        self.module = None if lease is None else lease.module


def describe(compiled):
    """Text for ``ConcreteFunction.kernel_source``: the kernel module and the driver."""
    parts = []
    if compiled.kernel_source:
        parts.append(compiled.kernel_source.rstrip("\n"))
    else:
        parts.append("# (no fused kernels: every node runs on its kernel)")
    parts.append("# ---- driver (Python) ----\n" + compiled.driver_source.rstrip("\n"))
    return "\n\n".join(parts) + "\n"
