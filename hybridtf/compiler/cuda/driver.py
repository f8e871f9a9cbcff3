"""The CUDA driver: runs a lowered graph's steps in order, every value on the device.

A fused group launches its kernel (``cuda.render``) on new device arrays for its stored values;
a loop or branch rendered as one kernel (``cuda.loops``) launches it as one block, on new device
arrays for its outputs and its scratch pools; every other node -- matrix products,
convolutions, reductions, random draws, other control flow -- runs exactly as the graph
interpreter runs it (``interpreter.run_node``): with its CUDA kernel, or on the CPU with its
inputs copied there when it has none (soft placement, as eager ops).
Captured and folded values go to the device once, when the driver is built.  Variables are read
from, and their new values written back to, their device arrays; nothing returns to the host
inside a call but what a CPU-only op needs.
"""
from ops.cuda.launch import THREADS, blocks_for, empty

from hybridtf.compiler import render as render_lib
from hybridtf.framework import devices
from hybridtf.graph import interpreter


class Driver:
    """``run(inputs, call_index)`` of a lowered graph (a ``compiled.Lowered``) on ``backend``,
    with its group ``kernels`` (step index -> ``render.Kernel``) and its loops and branches
    rendered as one kernel each (``loops``: step index -> ``loops.LoopKernel``), loaded from
    ``module``."""

    def __init__(self, lowered, backend, kernels, module, loops=None):
        loops = loops or {}
        self.graph = lowered.graph
        self.backend = backend
        self.bound = {}   # id(tensor) -> device array of the captures and folded values
        for tensor, placeholder in self.graph.captures:
            self.bound[id(placeholder)] = devices.on_backend(backend, tensor._value)
        for key, value in lowered.folded.items():
            self.bound[key] = devices.on_backend(backend, value)
        self.steps = []
        self.listing = []   # one line per step: the driver's source for kernel_source
        self.value_names = {}   # id(tensor) -> its name in the listing
        for index, (kind, item) in enumerate(lowered.plan.items):
            if kind == "group":
                kernel = kernels.get(index)
                if kernel is not None:
                    packs = [backend.from_host(a)
                             for a in render_lib.pack_arrays(kernel, lowered.constants)]
                    self.steps.append(_launch(getattr(module, kernel.name), kernel, packs,
                                              backend))
                    self.listing.append(f"{self.names(kernel.outputs)} = "
                                        f"{kernel.name}({self.names(kernel.args)})")
                for node in item.reductions:
                    self.steps.append(_node_step(node, backend))
                    self.listing.append(self.node_line(node))
            elif index in loops:
                loop = loops[index]
                self.steps.append(_loop_step(getattr(module, loop.kernel.name), loop, backend))
                self.listing.append(f"{self.names(item.outputs) or '_'} = {loop.kernel.name}("
                                    f"{self.names(item.inputs)})  # {item.op.name}: one kernel, "
                                    f"one block of {loop.threads} threads")
            else:
                self.steps.append(_node_step(item, backend))
                self.listing.append(self.node_line(item))
        self.updated = self.graph.updated_variables()

    def names(self, tensors):
        """The listing's names of ``tensors``, comma-separated."""
        return ", ".join(self.value_names.setdefault(id(t), f"x{len(self.value_names)}")
                         for t in tensors)

    def node_line(self, node):
        return f"{self.names(node.outputs) or '_'} = {node.op.name}({self.names(node.inputs)})"

    def source(self):
        """A readable listing of the steps (what ``kernel_source`` shows as the driver)."""
        head = f"def run({self.names(self.graph.inputs)}):  # every value on the device"
        lines = self.listing + [f"return {self.names(self.graph.outputs)}"]
        return head + "\n" + "".join(f"    {line}\n" for line in lines)

    def run(self, inputs, call_index):
        graph = self.graph
        values = dict(self.bound)
        for placeholder, array in zip(graph.inputs, inputs):
            values[id(placeholder)] = array
        updated = {id(variable) for variable, _ in self.updated}
        backend = self.backend
        for variable, placeholder in graph.variables:
            # The variables the graph updates are read directly (the caller holds their locks);
            # those it only reads are handed out to it.  One held on the host is copied.
            array = variable._value if id(variable) in updated else variable._shared_array()
            values[id(placeholder)] = devices.on_backend(backend, array)
        for step in self.steps:
            step(values, call_index)
        for variable, tensor in self.updated:
            # Device arrays are never written in place (a new value is a new array), so the
            # variable may share its new array with the caller or another variable.
            variable._set(devices.on_backend(devices.backend_of(variable._value),
                                             values[id(tensor)]))
        return [values[id(t)] for t in graph.outputs]


def _launch(function, kernel, packs, backend):
    # Rank-0 values travel as arrays of one element (see cuda.render).
    shapes = [tuple(t._static_shape) or (1,) for t in kernel.outputs]

    def step(values, call_index):
        outputs = [empty(shape, t._static_dtype) for shape, t in zip(shapes, kernel.outputs)]
        # (an input may be on the host: the output of an op that ran on the CPU)
        arrays = [devices.on_backend(backend, values[id(t)]) for t in kernel.args]
        arrays = [a.reshape(1) if scalar else a for a, scalar in zip(arrays, kernel.scalar_args)]
        function[blocks_for(outputs[0].size), THREADS](*arrays, *packs, *outputs)
        for t, array in zip(kernel.outputs, outputs):
            values[id(t)] = array if t._static_shape else array.reshape(())
    return step


def _loop_step(function, loop, backend):
    node = loop.node
    launch = function[1, loop.threads]
    constants = [backend.from_host(a) for a in loop.constants]   # on the device once
    shapes = [tuple(t._static_shape) or (1,) for t in node.outputs]

    def step(values, call_index):
        arrays = [devices.on_backend(backend, values[id(t)]) for t in node.inputs]
        arrays = [a.reshape(1) if scalar else a
                  for a, scalar in zip(arrays, loop.kernel.scalar_args)]
        # New scratch for every call, so that calls running side by side share nothing.
        scratch = [empty(size, dtype) for dtype, size in loop.scratch]
        outputs = [empty(shape, t._static_dtype) for shape, t in zip(shapes, node.outputs)]
        launch(*arrays, *constants, *scratch, *outputs)
        for t, array in zip(node.outputs, outputs):
            values[id(t)] = array if t._static_shape else array.reshape(())
    return step


def _node_step(node, backend):
    def step(values, call_index):
        interpreter.run_node(node, values, call_index, backend)
    return step
