"""The compiler's CPU backend: fused Numba loops, native control flow and a Python driver.

``prepare(lowered)`` takes a graph lowered for every backend alike (``compiled.Lowered``) through
the CPU's steps 1 and 2, and the ``Rendered`` result's ``finish`` through steps 3 to 5:

1. ``parts.Choices`` -- which groups split over the kernel threads, which variable updates
   they write in place, which matrix products they compute in parts;
2. ``render_kernels`` -- each group as an ``@njit`` loop (``cpu.render``), each pure while
   loop or cond as a native kernel (``cpu.loops``);
3. ``load`` -- all of a graph's functions in one module written by
   ``ops.codegen.lease_source`` (keyed by a hash of its source, so equal plans share a file, a
   module and Numba's disk cache; the module stays loaded while a compiled graph holds its
   lease);
4. ``driver.DriverBuilder`` -- the straight-line Python that runs the steps;
5. ``warm_up`` -- every kernel compiled before the first call.
"""
import numba
import numpy as np

from ops.codegen import lease_source, mark_compiled, was_compiled

from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler.compiled import CompiledGraph, failures_named, op_names
from hybridtf.compiler.cpu import loops, parts
from hybridtf.compiler.cpu.driver import DriverBuilder, cpu_kernel, static_args
from hybridtf.compiler.cpu.render import RENDERER

GENERATED_PREFIX = "graph"   # generated modules are named graph_<hash>


class RenderedKernels:
    """A plan's rendered kernels: ``groups`` (step index -> ``render.Kernel``), ``loops`` (step
    index -> ``loops.ControlFlowKernel``), ``all`` (every function of the module, in order)."""

    def __init__(self):
        self.groups = {}
        self.loops = {}
        self.all = []
        self.ops_of = {}   # kernel name -> the names of the ops it computes (for errors)

    def add(self, functions, names):
        self.all += functions
        for function in functions:
            self.ops_of[function.name] = names

    def op_names(self):
        """The names of the ops of every kernel, each once."""
        return tuple(dict.fromkeys(n for names in self.ops_of.values() for n in names))

    def source(self):
        """The module's source, or "" when there is nothing to compile."""
        return RENDERER.module_source(self.all) if self.all else ""


class Rendered:
    """A graph rendered for the CPU, its module not loaded yet: ``stored`` tells whether that
    module's kernels were compiled into the kernel cache before (so ``finish`` is quick)."""

    def __init__(self, lowered):
        self.lowered = lowered
        with failures_named(()):
            self.choices = parts.Choices(lowered.plan, lowered.graph)
        self.kernels = render_kernels(lowered, self.choices)
        self.source = self.kernels.source()
        self.stored = not self.source or was_compiled(GENERATED_PREFIX, self.source)

    def finish(self, warm_up=True):
        """The ``CompiledGraph``: the module loaded, the driver built, the kernels compiled now
        when ``warm_up`` (on dummy arrays)."""
        kernels = self.kernels
        with failures_named(kernels.op_names()):
            lease = load(self.source)
        module = None if lease is None else lease.module
        with failures_named(()):
            driver_source, run = DriverBuilder(self.lowered, self.choices, kernels,
                                               module).build()
        if warm_up and kernels.all:
            _warm_up(kernels, module)
            _warm_up_products(self.choices.products.values())
            mark_compiled(GENERATED_PREFIX, self.source)
        return CompiledGraph(self.lowered.graph, run, self.source, driver_source, lease)


def prepare(lowered):
    """Steps 1 and 2 for the CPU: ``lowered``'s choices made and kernels rendered."""
    return Rendered(lowered)


def render_kernels(lowered, choices):
    """Renders every group that computes something (a part kernel where ``choices`` splits
    it) and every native loop or branch of the plan."""
    kernels = RenderedKernels()
    for index, (kind, item) in enumerate(lowered.plan.items):
        if kind == "group" and item.outputs:
            names = op_names(item.members + item.reductions)
            with failures_named(names):
                kernel = kernels.groups[index] = RENDERER.render(
                    item, lowered.constants, choices.in_place.get(index), choices.part_form(item))
            kernels.add([kernel], names)
        elif kind == "step":
            names = op_names([item])
            with failures_named(names):
                loop = loops.render(item)
            if loop is not None:
                kernels.loops[index] = loop
                kernels.add(loop.kernels + [loop.kernel], names)
    return kernels


def load(source):
    """The ``ops.codegen.ModuleLease`` of the module ``source``, or None without one."""
    return lease_source(GENERATED_PREFIX, source) if source else None


def _warm_up_products(products):
    """Compiles the ``rows`` form of each matrix product computed inside a part kernel, for the
    arguments ``parts.split_call_with_product`` passes it (C-contiguous operands, an empty range
    of rows): only a compiled plan calls it, so a first call that loads the plan from the cache
    would otherwise compile it (0.4 s) before the cache has it."""
    for node in products:
        if not all(plan_lib.known(t._static_shape) for t in node.inputs):
            continue   # compiled on its first call
        signature = tuple(_array_type(t) for t in node.inputs) + tuple(
            numba.typeof(a) for a in (*static_args(node), 0, 0)) + (_array_type(node.outputs[0]),)
        with failures_named(op_names([node])):
            cpu_kernel(node.op).rows.compile(signature)


def _array_type(tensor):
    """The Numba type of a C-contiguous array of ``tensor``'s static rank and dtype: what
    ``numba.typeof`` gives for such an array, without making one (a dummy of a weight's shape
    is megabytes of memory the process would touch for nothing)."""
    return numba.types.Array(_scalar_type(tensor), len(tensor._static_shape), "C")


def _scalar_type(tensor):
    return numba.from_dtype(np.dtype(tensor._static_dtype))


def _warm_up(kernels, module):
    """Compiles each kernel for C-contiguous arguments of its static shapes and dtypes, so that
    a kernel that fails to compile is found before any step of a call has run.  Loop and branch
    kernels are compiled from their signature (with the kernels they call): run on dummy values
    a loop might never stop."""
    done = set()
    for loop in kernels.loops.values():
        signature = tuple(_array_type(t) for t in loop.kernel.args) + tuple(
            numba.typeof(a) for a in loop.captured)
        with failures_named(kernels.ops_of[loop.kernel.name]):
            getattr(module, loop.kernel.name).compile(signature)
    for kernel in kernels.all:
        if kernel.control_flow:
            continue
        key = (kernel.name, tuple((len(t._static_shape), t._static_dtype) for t in kernel.args))
        if key in done:
            continue
        done.add(key)
        signature = [_scalar_type(t) if scalar else _array_type(t)
                     for t, scalar in zip(kernel.args, kernel.scalar_args)]
        # a pack: its tensors' scalars in one 1-D array
        signature += [numba.types.Array(_scalar_type(pack[0]), 1, "C") for pack in kernel.packs]
        if kernel.parts:   # its outputs, and an empty range of rows
            signature += [_array_type(t) for t in kernel.outputs if id(t) not in kernel.in_place]
            signature += [numba.typeof(0)] * 2
        function = getattr(module, kernel.name)
        # Compiled (or loaded) for the types a call gives, not run: running a kernel on dummy
        # arrays of the full shapes would cost more than the rest of the trace.
        signature = tuple(signature)
        if signature not in function.overloads:
            with failures_named(kernels.ops_of[kernel.name]):
                function.compile(signature)
