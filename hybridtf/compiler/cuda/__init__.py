"""The compiler's CUDA backend: fused groups as ``@cuda.jit`` kernels, and a driver that keeps
every value on the device.

``prepare(lowered)`` renders each group of the plan (``cuda.render``), and each pure while loop
or cond that qualifies as one kernel (``cuda.loops``), into one module written by
``ops.codegen.lease_source`` (equal plans share a file, a module and Numba's disk cache);
``finish`` loads it and builds the ``cuda.driver.Driver``, whose other steps run each node with
its CUDA kernel.  What is not fused yet, and runs as steps: reductions (on their block-reduction
kernels), control flow that does not qualify (its nodes' kernels, as the interpreter runs
them).
"""
import numpy as np

from ops.codegen import lease_source, mark_compiled, was_compiled
from ops.cuda.launch import empty

from hybridtf.compiler.compiled import CompiledGraph, failures_named, op_names
from hybridtf.compiler.cuda import loops
from hybridtf.compiler.cuda.driver import Driver
from hybridtf.compiler.cuda.render import CudaRenderer, stored_values
from hybridtf.framework import cuda_device

GENERATED_PREFIX = "cudagraph"   # generated modules are named cudagraph_<hash>


class Rendered:
    """A graph rendered for the GPU, its module not loaded yet (``stored``: its kernels were
    compiled into the cache before): ``kernels`` (step index -> a group's ``render.Kernel``),
    ``loops`` (step index -> a loop's or branch's ``loops.LoopKernel``)."""

    def __init__(self, lowered):
        self.lowered = lowered
        renderer = CudaRenderer()
        self.kernels = {}
        self.loops = {}
        self.ops_of = {}
        functions = []
        for index, (kind, item) in enumerate(lowered.plan.items):
            if kind == "group" and stored_values(item):
                names = op_names(item.members)
                with failures_named(names):
                    kernel = renderer.render(item, lowered.constants)
                self.kernels[index] = kernel
                self.ops_of[kernel.name] = names
                functions.append(kernel)
            elif kind == "step":
                names = op_names([item])
                with failures_named(names):
                    loop = loops.render(item, renderer)
                if loop is not None:
                    self.loops[index] = loop
                    self.ops_of[loop.kernel.name] = names
                    functions += loop.functions + [loop.kernel]
        unique = list({k.name: k for k in functions}.values())
        self.source = renderer.module_source(unique) if unique else ""
        self.stored = not self.source or was_compiled(GENERATED_PREFIX, self.source)

    def finish(self, warm_up=True):
        """The ``CompiledGraph``: the module loaded, the driver built, each kernel compiled
        now when ``warm_up`` (launched once on zero arrays of its shapes)."""
        ops = tuple(dict.fromkeys(n for names in self.ops_of.values() for n in names))
        with failures_named(ops):
            lease = lease_source(GENERATED_PREFIX, self.source) if self.source else None
        module = None if lease is None else lease.module
        with failures_named(()):
            driver = Driver(self.lowered, cuda_device.BACKEND, self.kernels, module,
                            self.loops)
        if warm_up and (self.kernels or self.loops) and not cuda_device.SIMULATED:
            _warm_up(self.kernels.values(), module, self.ops_of)
            _compile_loops(self.loops.values(), module, self.ops_of)
            mark_compiled(GENERATED_PREFIX, self.source)
        return CompiledGraph(self.lowered.graph, driver.run, self.source, driver.source(),
                             lease)


def prepare(lowered):
    """The graph rendered for the GPU (see ``Rendered``)."""
    return Rendered(lowered)


def _warm_up(kernels, module, ops_of):
    """Compiles each kernel (Numba compiles a CUDA kernel on its first launch) before any step
    of a call runs, so that one failing to compile is found first."""
    done = set()
    for kernel in kernels:
        if kernel.name in done:
            continue
        done.add(kernel.name)
        args = [cuda_device.BACKEND.from_host(np.zeros(t._static_shape or (1,), t._static_dtype))
                for t in kernel.args]
        args += [cuda_device.BACKEND.from_host(np.zeros(len(p), p[0]._static_dtype))
                 for p in kernel.packs]
        args += [empty(t._static_shape or (1,), t._static_dtype) for t in kernel.outputs]
        with failures_named(ops_of[kernel.name]):
            getattr(module, kernel.name)[1, 32](*args)


def _compile_loops(loop_kernels, module, ops_of):
    """Compiles each loop's kernel from its signature: run on dummy values, a loop might never
    stop."""
    for loop in loop_kernels:
        with failures_named(ops_of[loop.kernel.name]):
            getattr(module, loop.kernel.name).compile(loop.signature())
