"""The graph compiler: a ``FuncGraph`` lowered to fused Numba loops plus opaque steps.

``compile_graph(graph)`` returns a ``CompiledGraph`` whose ``run(input_arrays, call_index)`` has
exactly ``interpreter.run``'s semantics: every node runs (opaque nodes through their value checks
and eager kernels, in program order), stateful nodes keep their order, outputs are returned and
assigned variables written back at the end.

* ``plan.lower`` groups elementwise nodes into fused loops (see its docstring);
* ``render`` renders each group as an ``@njit(cache=True)`` function; all of a graph's functions
  go into one module written by ``ops.codegen.load_source`` (keyed by a hash of its source, so
  equal plans share a file and Numba's disk cache);
* the driver is straight-line Python generated for the plan (slots are local variables; kernels,
  attrs and captures are bound as globals), so a call costs little more than the kernel calls.
"""
import numpy as np

from ops import linalg as linalg_kernels
from ops.codegen import load_source

from hybridtf.compiler import fold as fold_lib
from hybridtf.compiler import loops as loops_lib
from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler import render as render_lib
from hybridtf.graph import interpreter
from hybridtf.registry import elementwise as registry_elementwise
from hybridtf.registry import OPS

# The eager functions registry.elementwise defines: kernel_for(name, dtype)(*arrays).
_ELEMENTWISE_EAGER = {name: op.eager for name, op in OPS.items()
                      if op.kind == "elementwise" and op.scalar is not None}

class CompiledGraph:
    """A lowered graph: ``run``, the generated kernel source and the driver source."""

    def __init__(self, graph, run, kernel_source, driver_source, module):
        self.graph = graph
        self.run = run
        self.kernel_source = kernel_source
        self.driver_source = driver_source
        self.module = module


def _is_random(node):
    attrs = node.attrs
    return node.op.stateful and attrs is not None and "counter" in attrs


def _is_control_flow(node):
    # Stateful branches / loop bodies pass the call index on to the random ops inside them.
    attrs = node.attrs
    return node.op.stateful and attrs is not None and ("branches" in attrs or "body" in attrs)


def compile_graph(graph, warm_up=True):
    """Lowers ``graph``; compiles its kernels now when ``warm_up`` (on dummy arrays)."""
    folded, folded_nodes = fold_lib.fold_constants(graph)
    the_plan = plan_lib.lower(graph, skip=folded_nodes)

    constants = loops_lib.small_constants(graph)
    for key, value in folded.items():
        if fold_lib.uniform_value(value) is not None:
            constants[key] = value   # inlined as a literal of its one value

    kernels = []
    group_kernels = {}  # step index -> Kernel
    loop_kernels = {}   # step index -> ControlFlowKernel (a native loop or branch)
    for step_index, (kind, item) in enumerate(the_plan.items):
        if kind == "group" and item.outputs:
            kernel = group_kernels[step_index] = render_lib.render(item, constants)
            kernels.append(kernel)
        elif kind == "step":
            loop = loops_lib.render(item)
            if loop is not None:
                loop_kernels[step_index] = loop
                kernels += loop.kernels + [loop.kernel]
    module = None
    source = ""
    if kernels:
        source = render_lib.module_source(kernels)
        module = load_source("graph", source)

    # ---- the driver ---------------------------------------------------------------------------
    env = {"_np": np, "_asarray": np.asarray, "_array": np.array}
    slots = {}
    lines = ["def run(inputs, call_index):"]

    def slot(t):
        return slots[id(t)]

    def new_slot(t):
        name = f"x{len(slots)}"
        slots[id(t)] = name
        return name

    if graph.inputs:
        names = [new_slot(t) for t in graph.inputs]
        lines.append("    " + "".join(n + ", " for n in names) + "= inputs")
    for n, (tensor, placeholder) in enumerate(graph.captures):
        name = new_slot(placeholder)
        env[name] = tensor._value
    for n, (key, value) in enumerate(folded.items()):
        slots[key] = f"f{n}"
        env[f"f{n}"] = value
    for n, (variable, placeholder) in enumerate(graph.variables):
        name = new_slot(placeholder)
        env[f"var{n}"] = variable
        lines.append(f"    {name} = var{n}._value")

    fresh = set()   # ids of values the driver alone holds: fused kernels' outputs
    for step_index, (kind, item) in enumerate(the_plan.items):
        if kind == "group":
            if not item.outputs:
                continue   # pure and unused: nothing to compute
            kernel = group_kernels[step_index]
            fname = f"k{step_index}"
            env[fname] = getattr(module, kernel.name)
            args = []
            for t, scalar in zip(kernel.args, kernel.scalar_args):
                s = slot(t)
                args.append(f"{s}[()]" if scalar else s)
            outs = [new_slot(t) for t in kernel.outputs]
            fresh.update(id(t) for t in kernel.outputs)
            target = outs[0] if len(outs) == 1 else "".join(o + ", " for o in outs)
            lines.append(f"    {target} = {fname}({', '.join(args)})")
            continue
        node = item
        op = node.op
        loop = loop_kernels.get(step_index)
        if loop is not None:
            env[f"l{step_index}"] = getattr(module, loop.kernel.name)
            args = [slot(t) for t in node.inputs]
            for n, array in enumerate(loop.captured):
                env[f"l{step_index}_{n}"] = array
                args.append(f"l{step_index}_{n}")
            lines.append(f"    res = l{step_index}({', '.join(args)})")
            for i, t in enumerate(node.outputs):
                lines.append(f"    {new_slot(t)} = res[{i}]")
            continue
        ufunc = _bound_ufunc(node)
        if ufunc is not None:
            # An elementwise op whose eager kernel is a ufunc chosen by dtype: chosen now.
            env[f"u{step_index}"] = ufunc
            if op.check_values is not None:
                env[f"c{step_index}"] = op.check_values
                env[f"a{step_index}"] = node.attrs
                arrays = "[" + "".join(f"_asarray({slot(t)}), " for t in node.inputs) + "]"
                lines.append(f"    arr = {arrays}")
                lines.append(f"    c{step_index}(arr, a{step_index})")
                call_args = "*arr"
            else:
                call_args = ", ".join(slot(t) for t in node.inputs)
            lines.append(f"    {new_slot(node.outputs[0])} = u{step_index}({call_args})")
            continue
        direct = _direct_call(node, [slot(t) for t in node.inputs], env, step_index)
        if direct is not None:
            lines.append(f"    {new_slot(node.outputs[0])} = {direct}")
            continue
        env[f"e{step_index}"] = op.eager
        env[f"a{step_index}"] = node.attrs
        arrays = "[" + "".join(f"_asarray({slot(t)}), " for t in node.inputs) + "]"
        lines.append(f"    arr = {arrays}")
        if node.unknown_input_shapes:
            # Shapes the trace could not check are checked on every call, before the kernel.
            env[f"i{step_index}"] = interpreter.infer_shapes
            lines.append(f"    i{step_index}(e{step_index}_node, arr)")
            env[f"e{step_index}_node"] = node
        attrs = f"a{step_index}"
        if _is_random(node):
            lines.append(f"    attrs = dict(a{step_index}, counter=(a{step_index}['counter'] << 32)"
                         " + call_index)")
            attrs = "attrs"
        elif _is_control_flow(node):
            lines.append(f"    attrs = dict(a{step_index}, call_index=call_index)")
            attrs = "attrs"
        if op.check_values is not None:
            env[f"c{step_index}"] = op.check_values
            lines.append(f"    c{step_index}(arr, {attrs})")
        outs = [new_slot(t) for t in node.outputs]
        if op.num_outputs == 1:
            if outs:
                lines.append(f"    {outs[0]} = e{step_index}(arr, {attrs})")
            else:
                lines.append(f"    e{step_index}(arr, {attrs})")
        else:
            lines.append(f"    res = e{step_index}(arr, {attrs})")
            if outs:
                lines.append("    res = tuple(res)")
                for i, o in enumerate(outs):
                    lines.append(f"    {o} = res[{i}]")

    for n, (variable, tensor) in enumerate(_updated(graph)):
        env[f"upd{n}"] = variable
        value = slot(tensor) if id(tensor) in fresh else f"_array({slot(tensor)})"
        lines.append(f"    upd{n}._set({value})")
    # A folded output is copied: the caller gets an array of its own.
    lines.append("    return [" + "".join((f"_array({slot(t)})" if id(t) in folded else slot(t))
                                         + ", " for t in graph.outputs) + "]")
    driver_source = "\n".join(lines) + "\n"
    code = compile(driver_source, f"<hybridtf driver {graph.name}>", "exec")
    exec(code, env)
    run = env["run"]

    if warm_up and kernels:
        _warm_up(kernels, module, loop_kernels.values())
    return CompiledGraph(graph, run, source, driver_source, module)



def _direct_call(node, args, env, step_index):
    """Source computing a node whose inputs' shapes were all checked when it was traced without
    going through its eager function: reshapes as views, matmuls straight into BLAS."""
    name = node.op.name
    if not all(plan_lib.known(t._static_shape) for t in list(node.inputs) + list(node.outputs)):
        return None
    if name == "reshape":
        return f"_np.reshape({args[0]}, {tuple(node.outputs[0]._static_shape)!r})"
    if name in ("identity", "stop_gradient"):
        return args[0]
    if name == "matmul" and node.attrs is not None:
        env[f"m{step_index}"] = linalg_kernels.matmul
        return (f"m{step_index}({args[0]}, {args[1]}, {bool(node.attrs['transpose_a'])}, "
                f"{bool(node.attrs['transpose_b'])})")
    return None


def _bound_ufunc(node):
    """The ufunc an elementwise step's eager kernel would pick for its static dtype, or None."""
    op = node.op
    if op.kind != "elementwise" or op.stateful or not node.inputs or op.num_outputs != 1:
        return None
    if op.eager is not _ELEMENTWISE_EAGER.get(op.name) or op.scalar is None:
        return None
    dtype = node.inputs[-1]._static_dtype
    if dtype == object or dtype.kind not in "biuf":
        return None
    try:
        return registry_elementwise.kernel_for(op.name, dtype)
    except Exception:
        return None


def _updated(graph):
    return graph.updated_variables()


def _warm_up(kernels, module, loops):
    """Compiles each kernel for C-contiguous arguments of its static shapes and dtypes, so that
    a kernel that fails to compile is found before any step of a call has run.  Loop and branch
    kernels are compiled from their signature (with the kernels they call): run on dummy values
    a loop might never stop."""
    import numba

    done = set()
    for loop in loops:
        dummies = [np.zeros(t._static_shape, t._static_dtype) for t in loop.kernel.args]
        signature = tuple(numba.typeof(a) for a in dummies + list(loop.captured))
        getattr(module, loop.kernel.name).compile(signature)
    for kernel in kernels:
        if kernel.control_flow:
            continue
        key = (kernel.name, tuple((len(t._static_shape), t._static_dtype) for t in kernel.args))
        if key in done:
            continue
        done.add(key)
        args = []
        for t, scalar in zip(kernel.args, kernel.scalar_args):
            dummy = np.zeros(t._static_shape, t._static_dtype)
            args.append(dummy[()] if scalar else dummy)
        getattr(module, kernel.name)(*args)


def describe(compiled):
    """Text for ``ConcreteFunction.kernel_source``: the kernel module and the driver."""
    parts = []
    if compiled.kernel_source:
        parts.append(compiled.kernel_source.rstrip("\n"))
    else:
        parts.append("# (no fused kernels: every node runs on its eager kernel)")
    parts.append("# ---- driver (Python) ----\n" + compiled.driver_source.rstrip("\n"))
    return "\n\n".join(parts) + "\n"
