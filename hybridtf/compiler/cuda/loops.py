"""The GPU's control-flow kernels: a pure ``while_loop`` or ``cond`` runs as ONE ``@cuda.jit``
kernel, with no host round trip between its iterations.

A loop or branch qualifies when it is pure (no stateful op, no variable inside) and its parts
(a loop's condition and body, a cond's branches) hold only fused elementwise groups,
reductions (``OpDef.reduction``: sum, mean, max, min, prod, any, all, over any axes), views,
aliases and control flow that qualifies in turn, every value of a static shape and of at most
MAX_ELEMENTS elements.  Anything else keeps the step path (its node runs on its kernel, part by
part, the loop test read back to the host every iteration).

The kernel is launched as a single block, so that ``cuda.syncthreads()`` is a barrier between
its statements (a barrier over a whole grid needs a cooperative launch).  Each statement
spreads over the block's threads and is followed by a barrier: a group's loop (the
``CudaRenderer``'s body as a device function), a pass of a reduction (``ops.cuda.reduce``'s
block reductions, in shared memory), a copy (``ops.cuda.block``).  Every thread reads a loop's
test, or a branch's predicate, from device memory after a barrier, so all of them take the same
path and meet at the same barriers; nested loops and branches are written inline.

Values live on the device: each intermediate in a scratch array carved out of one pool per
dtype, which the driver allocates for each call (so that calls share nothing); constants (the
parts' captured and folded values, the groups' packed constants) in one pool per dtype, copied
to the device once.  Loop state lives in arrays of its own -- for the outermost node, its
outputs: the body's new values are copied into them at the end of an iteration (through
temporaries where a new value is another state's old one).  The kernel's source holds the
values' sizes, so that a retrace for other shapes renders another kernel.

One block has a small share of a GPU's bandwidth (a pass of a block of 256 threads over 64K
float32 values takes a few microseconds, about what the step path's launches and host round trip
cost per statement), so larger values keep the step path, where each statement is a kernel over
the whole GPU.
"""
import numpy as np
from numba import types
from numba.np.numpy_support import from_dtype

from ops.cuda import reduce as cuda_reduce
from ops.cuda.launch import THREADS

from hybridtf.compiler import fold as fold_lib
from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler import render as render_lib
from hybridtf.compiler.cuda.render import stored_values
from hybridtf.framework import devices
from hybridtf.registry import checks

# The most elements of any value of a loop run as one block (see the module docstring).
MAX_ELEMENTS = 1 << 16
# The smallest block: one warp.
_WARP = 32
# A kernel's parameters may take 4 KB; an array takes 40 bytes and 16 per dimension.
MAX_PARAMETER_BYTES = 4096
SYNC = "cuda.syncthreads()"


class LoopKernel:
    """A loop or branch rendered as one kernel: ``kernel`` (its ``render.Kernel``: name,
    source), ``functions`` (the group device functions it calls), ``threads`` (its block's
    size), ``constants`` (the host arrays of its constant pools) and ``scratch`` ((dtype, size)
    of each scratch pool).  The kernel takes the node's inputs (rank 0 as arrays of one
    element), the constant pools, the scratch pools and the node's outputs."""

    def __init__(self, node, kernel, functions, threads, constants, scratch):
        self.node = node
        self.kernel = kernel
        self.functions = functions
        self.threads = threads
        self.constants = constants
        self.scratch = scratch

    def signature(self):
        """The Numba types of the kernel's arguments (C-contiguous device arrays)."""
        tensors = [(t._static_dtype, len(t._static_shape) or 1) for t in self.node.inputs]
        pools = [(a.dtype, 1) for a in self.constants] + [(d, 1) for d, _ in self.scratch]
        outputs = [(t._static_dtype, len(t._static_shape) or 1) for t in self.node.outputs]
        return tuple(types.Array(from_dtype(np.dtype(dtype)), rank, "C")
                     for dtype, rank in tensors + pools + outputs)


class _NotNative(Exception):
    """Raised while rendering a node that does not qualify: it keeps the step path."""


def render(node, renderer):
    """The ``LoopKernel`` of a pure while loop or cond ``node`` that qualifies (see the module
    docstring), its groups rendered by ``renderer`` (a ``CudaRenderer``); None otherwise."""
    if node.op.stateful or node.op.control_flow not in ("while", "cond"):
        return None
    try:
        return _Builder(renderer, _threads(node)).kernel(node)
    except _NotNative:
        return None


def _subgraphs(node):
    for attr in node.op.subgraphs:
        graphs = node.attrs[attr]
        yield from graphs if isinstance(graphs, (list, tuple)) else [graphs]


def _tensors(node):
    """Every tensor a node reads or computes, with those of its subgraphs, at any depth."""
    yield from node.inputs
    yield from node.outputs
    for graph in _subgraphs(node):
        yield from graph.inputs
        for inner in graph.nodes:
            yield from _tensors(inner)


def _threads(node):
    """The block size for ``node``'s kernel: a power of two from a warp to THREADS, no more
    than its largest value needs; _NotNative for a value of unknown shape, of a dtype a kernel
    does not compute, or over MAX_ELEMENTS."""
    largest = 1
    for t in _tensors(node):
        shape, dtype = t._static_shape, t._static_dtype
        if (not plan_lib.known(shape) or dtype == object or dtype.kind not in "biuf"
                or dtype == np.float16):
            raise _NotNative
        size = int(np.prod(shape))
        if size > MAX_ELEMENTS:
            raise _NotNative
        largest = max(largest, size)
    return max(_WARP, min(THREADS, cuda_reduce.pow2_at_least(largest)))


def _shape(t):
    """The shape of ``t``'s array in a kernel (rank 0: one element)."""
    return tuple(t._static_shape) or (1,)


def _same_specs(tensors, others):
    return len(tensors) == len(others) and all(
        tuple(a._static_shape) == tuple(b._static_shape) and a._static_dtype == b._static_dtype
        for a, b in zip(tensors, others))


def _indented(lines):
    return ["    " + line for line in lines]


class _Pool:
    """Arrays carved out of one flat array per dtype, named ``<prefix>_<dtype>``; ``values``:
    the contents of each (for constants), else None."""

    def __init__(self, prefix, constant):
        self.prefix = prefix
        self.constant = constant
        self.sizes = {}    # dtype -> elements carved so far
        self.values = {}   # dtype -> the flat contents carved so far (constants)

    def carve(self, dtype, size, values=None):
        """(the pool's name, the slice of ``size`` elements carved for an array of ``dtype``)."""
        dtype = np.dtype(dtype)
        start = self.sizes.get(dtype, 0)
        self.sizes[dtype] = start + size
        if self.constant:
            self.values.setdefault(dtype, []).append(np.asarray(values, dtype).reshape(-1))
        return self.name(dtype), f"{start}:{start + size}"

    def name(self, dtype):
        return f"{self.prefix}_{np.dtype(dtype).name}"

    def dtypes(self):
        return sorted(self.sizes, key=lambda d: d.name)


class _Builder:
    """Writes one node's kernel: its statements, and the views it carves from its pools."""

    def __init__(self, renderer, threads):
        self.renderer = renderer
        self.threads = threads
        self.functions = []       # group device functions called
        self.names = {}           # id(tensor) -> its array in the kernel
        self.base = {}            # array name -> the name of the array it is a view of
        self.sources = {}         # id(tensor) -> host value of a constant, bound on first use
        self.views = []           # the lines carving the arrays, before any statement
        self.constants = _Pool("k", constant=True)
        self.scratch = _Pool("w", constant=False)
        self.shared = set()       # the reductions' accumulator kinds ("float", "int")
        self.counters = 0         # loop counters (maximum_iterations) named so far

    # ---- arrays ---------------------------------------------------------------------------
    def array(self, shape, dtype, pool, values=None):
        """A new array of ``shape`` (the kernel's: rank 0 as (1,)) carved from ``pool``."""
        size = int(np.prod(shape))
        pool_name, part = pool.carve(dtype, size, values)
        name = f"t{len(self.views)}"
        reshape = f".reshape({tuple(shape)!r})" if len(shape) > 1 else ""
        self.views.append(f"{name} = {pool_name}[{part}]{reshape}")
        self.base[name] = name
        return name

    def fresh(self, t):
        """A new scratch array for ``t``'s value."""
        name = self.names[id(t)] = self.array(_shape(t), t._static_dtype, self.scratch)
        return name

    def name(self, t):
        """``t``'s array in the kernel (a constant's carved now, on first use)."""
        name = self.names.get(id(t))
        if name is None:
            if id(t) not in self.sources:
                raise _NotNative   # (a value the plan reads before computing it: none)
            value = self.sources[id(t)]
            name = self.names[id(t)] = self.array(_shape(t), t._static_dtype, self.constants,
                                                  value)
        return name

    def constant(self, values):
        """A constant array of ``values`` (a group's packed constants)."""
        return self.array(values.shape, values.dtype, self.constants, values)

    @staticmethod
    def flat(name, shape):
        """``name`` (an array of ``shape``) as a flat array."""
        return name if len(shape) <= 1 else f"{name}.reshape({int(np.prod(shape))})"

    def copy(self, src, dst, t):
        """The statement copying array ``src`` into ``dst``, both of ``t``'s shape."""
        shape = _shape(t)
        return f"block_copy({self.flat(src, shape)}, {self.flat(dst, shape)})"

    # ---- the kernel -----------------------------------------------------------------------
    def kernel(self, node):
        inputs = [f"u{i}" for i in range(len(node.inputs))]
        outputs = [f"o{i}" for i in range(len(node.outputs))]
        for argument in inputs + outputs:
            self.base[argument] = argument
        if node.op.control_flow == "while":
            statements = self.while_loop(node, inputs, outputs)
        else:
            statements = self.cond(node, inputs, outputs)
        constant_dtypes, scratch_dtypes = self.constants.dtypes(), self.scratch.dtypes()
        params = (inputs + [self.constants.name(d) for d in constant_dtypes]
                  + [self.scratch.name(d) for d in scratch_dtypes] + outputs)
        pools = len(constant_dtypes) + len(scratch_dtypes)
        ranks = ([len(_shape(t)) for t in node.inputs] + [1] * pools
                 + [len(_shape(t)) for t in node.outputs])
        if sum(40 + 16 * rank for rank in ranks) > MAX_PARAMETER_BYTES:
            raise _NotNative
        head = [f"sh_{kind} = cuda.shared.array({THREADS}, np.{kind}64)"
                for kind in sorted(self.shared)]
        lines = _indented(head + self.views + statements)
        name, source = self.renderer.function("loop", ", ".join(params), lines)
        kernel = render_lib.Kernel(name, source, list(node.inputs),
                                   [not t._static_shape for t in node.inputs],
                                   list(node.outputs), [])
        kernel.control_flow = True   # compiled from its signature: never run on dummy values
        # (each pool one element longer: none is empty)
        constants = [np.concatenate(self.constants.values[d] + [np.zeros(1, d)])
                     for d in constant_dtypes]
        scratch = [(d, self.scratch.sizes[d] + 1) for d in scratch_dtypes]
        return LoopKernel(node, kernel, self.functions, self.threads, constants, scratch)

    # ---- statements -------------------------------------------------------------------------
    def part(self, graph, inputs, outer):
        """(statements, the arrays of the part's outputs) of ``graph`` (a loop's condition or
        body, a branch) whose inputs are the arrays ``inputs`` and outer inputs ``outer``."""
        if graph.variables or any(node.op.stateful for node in graph.nodes):
            raise _NotNative
        for placeholder, name in zip(graph.inputs, inputs):
            self.names[id(placeholder)] = name
        for (_, placeholder), name in zip(graph.outer_inputs, outer):
            self.names[id(placeholder)] = name
        folded, folded_nodes = fold_lib.fold_constants(graph)
        constants = fold_lib.single_values(graph, folded)
        for tensor, placeholder in graph.captures:
            self.sources[id(placeholder)] = devices.to_host(tensor._value)
        self.sources.update(folded)
        lines = []
        for kind, item in plan_lib.lower(graph, skip=folded_nodes).items:
            if kind == "group":
                lines += self.group(item, constants)
            else:
                lines += self.step(item)
        return lines, [self.name(t) for t in graph.outputs]

    def group(self, group, constants):
        """A fused group's loop (its stored values), then its reductions."""
        lines = []
        if stored_values(group):
            kernel = self.renderer.render(group, constants, device=True)
            self.functions.append(kernel)
            args = [self.name(t) for t in kernel.args]
            args += [self.constant(a) for a in render_lib.pack_arrays(kernel, constants)]
            args += [self.fresh(t) for t in kernel.outputs]
            lines += [f"{kernel.name}({', '.join(args)})", SYNC]
        for node in group.reductions:
            if any(t is node.outputs[0] for t in group.outputs):
                lines += self.reduction(node)
        return lines

    def step(self, node):
        """A node of a part that is not fused: a reduction, a view, an alias, or nested
        control flow; _NotNative for any other."""
        op = node.op
        if op.control_flow in ("while", "cond") and not op.stateful:
            inputs = [self.name(t) for t in node.inputs]
            outputs = [self.fresh(t) for t in node.outputs]
            if op.control_flow == "while":
                return self.while_loop(node, inputs, outputs)
            return self.cond(node, inputs, outputs)
        if op.reduction in cuda_reduce.REDUCTIONS and len(node.inputs) == 1:
            return self.reduction(node)
        if op.kind in ("view", "alias") and len(node.inputs) == 1:
            source = self.name(node.inputs[0])
            out = node.outputs[0]
            if op.kind == "alias" or _shape(out) == _shape(node.inputs[0]):
                self.names[id(out)] = source
                return []
            name = self.names[id(out)] = f"t{len(self.views)}"
            self.views.append(f"{name} = {source}.reshape({_shape(out)!r})")
            self.base[name] = self.base[source]
            return []
        raise _NotNative

    def reduction(self, node):
        """The passes of a reduction (``ops.cuda.reduce.reduction_passes``), each by the whole
        block."""
        x, = node.inputs
        out = node.outputs[0]
        shape = tuple(x._static_shape)
        axes = checks.axes(node.op.name, node.attrs["axis"], len(shape))
        count = int(np.prod([shape[i] for i in axes]))
        reduction = cuda_reduce.reduction_for(node.op.reduction, np.dtype(x._static_dtype),
                                              count)
        kind = "float" if reduction.floating else "int"
        self.shared.add(kind)
        source = self.flat(self.name(x), _shape(x))
        result = self.flat(self.fresh(out), _shape(out))
        init = render_lib.literal(reduction.init, reduction.acc_dtype)
        passes = cuda_reduce.reduction_passes(shape, axes)
        lines = []
        for n, (rows, run, cols) in enumerate(passes):
            last = n == len(passes) - 1
            dest = result if last else self.array((rows * cols,), reduction.acc_dtype,
                                                  self.scratch)
            tx_n, ty_n = cuda_reduce.thread_tiling(run, cols, self.threads)
            finish = reduction.finish if last else cuda_reduce.STORE
            args = (f"{source}, {dest}, sh_{kind}, {rows}, {run}, {cols}, {tx_n}, {ty_n}, "
                    f"{reduction.op}, {init}, {finish}, {reduction.count}")
            if kind == "int":
                span, half = cuda_reduce.wrap_args(np.dtype(out._static_dtype) if last
                                                   else reduction.acc_dtype)
                args += f", {span}, {half}"
            lines += [f"block_reduce_{kind}({args})", SYNC]
            source = dest
        return lines

    def while_loop(self, node, inputs, outputs):
        """A while loop whose state lives in ``outputs``, started from ``inputs``."""
        attrs = node.attrs
        n = attrs["n_state"]
        cond, body = attrs["cond"], attrs["body"]
        state = list(node.inputs[:n])
        if not (_same_specs(node.outputs, state) and _same_specs(body.outputs, state)
                and len(cond.outputs) == 1 and int(np.prod(_shape(cond.outputs[0]))) == 1):
            raise _NotNative
        outer = inputs[n:]
        lines = [self.copy(a, s, t) for a, s, t in zip(inputs, outputs, state)]
        lines += [SYNC] if lines else []
        test_lines, (test,) = self.part(cond, outputs, [outer[i] for i in attrs["cond_map"]])
        body_lines, new = self.part(body, outputs, [outer[i] for i in attrs["body_map"]])
        update = self.update(outputs, new, state)
        if not body_lines and not update:
            update = [SYNC]   # every thread reads the test before the next one is written
        limit = attrs["maximum_iterations"]
        counter = f"i{self.counters}"
        self.counters += 1
        if limit is not None:
            lines.append(f"{counter} = 0")
        lines.append(f"while {counter} < {int(limit)}:" if limit is not None else "while True:")
        lines += _indented(test_lines)
        lines += _indented([f"if not {self.flat(test, _shape(cond.outputs[0]))}[0]:",
                            "    break"])
        lines += _indented(body_lines + update)
        if limit is not None:
            lines.append(f"    {counter} += 1")
        return lines

    def update(self, state, new, tensors):
        """The statements making the arrays ``state`` hold the body's results ``new``: copies,
        first into temporaries for results that are the old value of another state."""
        owner = {self.base[s]: j for j, s in enumerate(state)}
        temporaries, copies = [], []
        for j, (s, value, t) in enumerate(zip(state, new, tensors)):
            previous = owner.get(self.base.get(value, value))
            if previous == j:
                continue   # the state itself (or a view of it of its own shape): unchanged
            if previous is not None:
                temporary = self.array(_shape(t), t._static_dtype, self.scratch)
                temporaries.append(self.copy(value, temporary, t))
                value = temporary
            copies.append(self.copy(value, s, t))
        lines = temporaries + [SYNC] if temporaries else []
        return lines + copies + [SYNC] if copies else lines

    def cond(self, node, inputs, outputs):
        """A two-branch conditional whose results are copied into ``outputs``."""
        attrs = node.attrs
        branches, maps = attrs["branches"], attrs["maps"]
        predicate = node.inputs[0]
        if len(branches) != 2 or int(np.prod(_shape(predicate))) != 1:
            raise _NotNative
        outer = inputs[1:]
        lines = []
        for keyword, graph, positions in zip(
                (f"if {self.flat(inputs[0], _shape(predicate))}[0]:", "else:"), branches, maps):
            if not _same_specs(graph.outputs, node.outputs):
                raise _NotNative
            branch, results = self.part(graph, [], [outer[i] for i in positions])
            copies = [self.copy(r, o, t) for r, o, t in zip(results, outputs, node.outputs)]
            branch += copies + [SYNC] if copies else []
            lines += [keyword] + _indented(branch or ["pass"])
        return lines
