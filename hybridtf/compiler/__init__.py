"""The graph compiler: a ``FuncGraph`` lowered to fused loops plus opaque steps.

``compile_graph(graph, backend)`` returns a ``CompiledGraph`` whose ``run(input_arrays,
call_index)`` has exactly ``interpreter.run``'s semantics: every node runs (opaque nodes through
their value checks and kernels, in program order), stateful nodes keep their order, outputs are
returned and assigned variables written back at the end.  Its steps:

1. ``fold`` -- the values fixed at compile time computed once (``fold.fold_constants``);
2. ``lower`` -- the rest grouped into fused elementwise/reduction loops and opaque steps
   (``plan.lower``), with the single-valued constants the loops take as arguments;
3. the backend's ``prepare`` -- its own choices and its kernels rendered (a subclass of
   ``render.LoopRenderer``), then ``finish`` -- the kernels loaded, the driver built, the
   kernels warmed up.

Steps 1 and 2 are the same for every backend; ``BACKENDS`` names the backends that build
(``cpu``: Numba loops and a Python driver; ``cuda``: ``@cuda.jit`` kernels and a driver keeping
values on the GPU).  Everything the compiler knows about an op comes
from the op's registry entry (``registry.opdef``): its kind, its flags and its kernel for the
backend with that kernel's forms.
"""
from hybridtf.compiler import cpu, cuda
from hybridtf.compiler import fold as fold_lib
from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler.compiled import (CompilationError, CompilationWarning, CompiledGraph,
                                        Lowered, describe, failures_named)
from hybridtf.framework import devices

# backend name (a ``framework.devices.Backend``'s) -> its compiler: ``prepare(lowered)``
BACKENDS = {"cpu": cpu, "cuda": cuda}

__all__ = ["BACKENDS", "CompilationError", "CompilationWarning", "CompiledGraph", "Lowered",
           "backend_for_device", "compile_graph", "describe", "fold", "lower", "prepare"]


def compile_graph(graph, backend="cpu", warm_up=True):
    """Compiles ``graph`` for ``backend`` (a key of ``BACKENDS``); its kernels compile now when
    ``warm_up`` (on dummy arrays)."""
    return prepare(graph, backend).finish(warm_up)


def prepare(graph, backend="cpu"):
    """Steps 1 and 2 and the backend's rendering, without loading or compiling anything: the
    result's ``stored`` says whether its kernels were compiled before (so that finishing is
    quick), and ``finish(warm_up)`` returns the ``CompiledGraph``."""
    compiler = BACKENDS.get(backend)
    if compiler is None:
        raise ValueError(f"compile_graph: no compiler for backend {backend!r}; the backends "
                         f"compiled are {sorted(BACKENDS)}.")
    with failures_named(()):
        folded, folded_nodes = fold(graph)
        lowered = lower(graph, folded, folded_nodes)
    return compiler.prepare(lowered)


def backend_for_device(device_name):
    """The name of the backend that compiles graphs placed on ``device_name`` (a full device
    name, as ``FuncGraph.device``)."""
    for name, backend in devices.backends().items():
        if backend.device_name == device_name and name in BACKENDS:
            return name
    raise ValueError(f"No compiler for graphs on device {device_name!r}; the backends compiled "
                     f"are {sorted(BACKENDS)}.")


def fold(graph):
    """(id(tensor) -> array of every value folded now, the ids of the folded nodes)."""
    return fold_lib.fold_constants(graph)


def lower(graph, folded, folded_nodes):
    """The ``Lowered`` graph: the plan of the nodes not folded, and the single-valued constants
    (captures and uniform folded values) the fused loops take as arguments."""
    return Lowered(graph, plan_lib.lower(graph, skip=folded_nodes), folded,
                   fold_lib.single_values(graph, folded))
