"""What the compiler's steps hand each other: a lowered graph, which a backend compiles, and the
compiled graph it returns."""


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
