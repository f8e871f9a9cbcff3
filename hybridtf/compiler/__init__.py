"""The graph compiler: a ``FuncGraph`` lowered to fused Numba loops plus opaque steps.

``compile_graph(graph)`` returns a ``CompiledGraph`` whose ``run(input_arrays, call_index)`` has
exactly ``interpreter.run``'s semantics: every node runs (opaque nodes through their value checks
and CPU kernels, in program order), stateful nodes keep their order, outputs are returned and
assigned variables written back at the end.

* ``plan.lower`` groups elementwise nodes into fused loops (see its docstring);
* ``render`` renders each group as an ``@njit(cache=True)`` function; all of a graph's functions
  go into one module written by ``ops.codegen.lease_source`` (keyed by a hash of its source, so
  equal plans share a file, a module and Numba's disk cache; the module stays loaded while a
  compiled graph holds its lease);
* the driver is straight-line Python generated for the plan (slots are local variables; kernels,
  attrs and captures are bound as globals), so a call costs little more than the kernel calls;
* large groups become part kernels that the driver splits over the kernel threads
  (``ops.threads``), write the variables they update in place while nothing else refers to
  their arrays, and compute a large matrix product that only they read block by block inside
  their parts (see PART_MIN_ELEMENTS and PRODUCT_MIN_ELEMENTS).

Everything it knows about an op comes from the op's registry entry (``registry.opdef``): its
kind, flags and its CPU ``Kernel`` with that kernel's forms.

``run`` reads the variables it updates directly and writes them back at the end: its caller
holds their locks (``ConcreteFunction``).  Variables it only reads are handed out to it.
"""
import numpy as np

from ops import threads
from ops.codegen import lease_source

from hybridtf.compiler import fold as fold_lib
from hybridtf.compiler import loops as loops_lib
from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler import render as render_lib
from hybridtf.framework import devices, fp_errors
from hybridtf.graph import interpreter
from hybridtf.registry import Spec

# Groups of at least PART_MIN_ELEMENTS elements (without reductions) are part kernels: their loop
# splits over the kernel threads by rows of the first axis, in parts of at least PART_ELEMENTS
# (handing out a part costs 20-40 us).  Groups that large also write the variables they update
# in place while nobody else holds their arrays: a memory-bound update then reads and writes
# each array once (measured 2x faster).
PART_MIN_ELEMENTS = 1 << 16
PART_ELEMENTS = 1 << 18


# A matrix product of at least PRODUCT_MIN_ELEMENTS (too big for the caches) consumed only by a
# split group is computed inside the group's parts, a block of rows at a time just before the
# loop reads it (a block of PRODUCT_BLOCK_ELEMENTS stays in L2), so that the product never goes
# out to memory and back.  Smaller products stay whole: BLAS threads them better.
PRODUCT_MIN_ELEMENTS = 1 << 20
PRODUCT_BLOCK_ELEMENTS = 1 << 17


def _split_call(kernel, args, rows, min_rows):
    threads.split(lambda lo, hi: kernel(*args, lo, hi), rows, min_rows)


def _split_call_with_product(kernel, args, row_args, product_at, product_rows, operands,
                             static_args, columns, rows, min_rows):
    """_split_call where args[product_at] is a matrix product of ``columns`` columns, computed
    by blocks of rows within each part: ``product_rows(*operands, *static_args, start, stop,
    out)`` is the product's kernel's ``rows`` form; ``row_args``: whether each argument is
    indexed by the loop's row (and sliced)."""
    operands = [np.ascontiguousarray(x) for x in operands]
    block_rows = max(1, PRODUCT_BLOCK_ELEMENTS // max(columns, 1))

    def part(lo, hi):
        block = np.empty((min(block_rows, hi - lo), columns), operands[0].dtype)
        for start in range(lo, hi, block_rows):
            stop = min(start + block_rows, hi)
            product_rows(*operands, *static_args, start, stop, block)
            call = [x[start:stop] if by_row and x is not None else x
                    for x, by_row in zip(args, row_args)]
            call[product_at] = block[:stop - start]
            kernel(*call, 0, stop - start)

    with threads.single_threaded_blas():
        threads.split(part, rows, min_rows)


class CompiledGraph:
    """A lowered graph: ``run``, the generated kernel source and the driver source."""

    def __init__(self, graph, run, kernel_source, driver_source, lease):
        self.graph = graph
        self.run = run
        self.kernel_source = kernel_source
        self.driver_source = driver_source
        # the generated module's ops.codegen.ModuleLease: held as long as this graph lives
        self.lease = lease
        self.module = None if lease is None else lease.module


def _cpu_kernel(op):
    return op.kernel(devices.CPU)


def _passes_call_index(node):
    # Stateful branches / loop bodies pass the call index on to the random ops inside them.
    return node.op.stateful and node.op.kind == "control_flow"


def compile_graph(graph, warm_up=True):
    """Lowers ``graph``; compiles its kernels now when ``warm_up`` (on dummy arrays)."""
    folded, folded_nodes = fold_lib.fold_constants(graph)
    the_plan = plan_lib.lower(graph, skip=folded_nodes)

    # Single-valued constants are arguments of the fused kernels (a few are literals:
    # render.literal_pays), so a retrace for another Python number reuses the compiled module.
    constants = loops_lib.small_constants(graph)
    for key, value in folded.items():
        one = fold_lib.uniform_value(value)
        if one is not None:
            constants[key] = one

    in_place = plan_lib.in_place_updates(graph, the_plan, PART_MIN_ELEMENTS)
    products = _products_in_parts(the_plan, in_place)   # group index -> matmul node
    deferred = {id(node) for node in products.values()}
    kernels = []
    group_kernels = {}  # step index -> Kernel
    loop_kernels = {}   # step index -> ControlFlowKernel (a native loop or branch)
    for step_index, (kind, item) in enumerate(the_plan.items):
        if kind == "group" and item.outputs:
            kernel = group_kernels[step_index] = render_lib.render(
                item, constants, in_place.get(step_index), _splits(item))
            kernels.append(kernel)
        elif kind == "step":
            loop = loops_lib.render(item)
            if loop is not None:
                loop_kernels[step_index] = loop
                kernels += loop.kernels + [loop.kernel]
    module = lease = None
    source = ""
    if kernels:
        source = render_lib.module_source(kernels)
        lease = lease_source("graph", source)
        module = lease.module

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
    variable_names = {}
    updated = {id(variable) for variable, _ in _updated(graph)}
    for n, (variable, placeholder) in enumerate(graph.variables):
        name = new_slot(placeholder)
        env[f"var{n}"] = variable
        variable_names[id(placeholder)] = f"var{n}"
        read = "_value" if id(variable) in updated else "_shared_array()"
        lines.append(f"    {name} = var{n}.{read}")
    env["_split_call"] = _split_call
    env["_split_call_with_product"] = _split_call_with_product
    env["_empty"] = np.empty
    env["_shares"] = np.may_share_memory
    readers = the_plan.readers()

    def group_call(kernel, fname, outs, indent, product=None):
        """Driver lines computing ``kernel``'s outputs into the slots ``outs``; ``product``: the
        matmul node whose output the part kernel computes block by block."""
        env[fname] = getattr(module, kernel.name)
        args = []
        for t, scalar in zip(kernel.args, kernel.scalar_args):
            if product is not None and t is product.outputs[0]:
                args.append("None")
                continue
            s = slot(t)
            args.append(f"{s}[()]" if scalar else s)
        for j, array in enumerate(render_lib.pack_arrays(kernel, constants)):
            env[f"{fname}_p{j}"] = array   # the kernel's constants (render.literal_pays)
            args.append(f"{fname}_p{j}")
        if not kernel.parts:
            target = outs[0] if len(outs) == 1 else "".join(o + ", " for o in outs)
            return [f"{indent}{target} = {fname}({', '.join(args)})"]
        code = []
        for t, o in zip(kernel.outputs, outs):
            if id(t) in kernel.in_place:
                code.append(f"{indent}{o} = {args[kernel.in_place[id(t)]]}")
            else:
                env[f"{o}_dtype"] = t._static_dtype
                code.append(f"{indent}{o} = _empty({tuple(t._static_shape)!r}, {o}_dtype)")
                args.append(o)
        shape = kernel.outputs[0]._static_shape
        per_row = int(np.prod(shape[1:]))
        tail = f"{shape[0]}, {-(-PART_ELEMENTS // max(per_row, 1))})"
        if product is None:
            code.append(f"{indent}_split_call({fname}, ({''.join(a + ', ' for a in args)}), "
                        + tail)
            return code
        row_args = [not scalar and len(t._static_shape) == len(shape)
                    and t._static_shape[0] == shape[0]
                    for t, scalar in zip(kernel.args, kernel.scalar_args)]
        row_args += [False] * len(kernel.packs)
        row_args += [True] * (len(args) - len(row_args))   # the outputs
        at = next(i for i, t in enumerate(kernel.args) if t is product.outputs[0])
        env[f"{fname}_rows"] = _cpu_kernel(product.op).rows
        operands = "".join(slot(t) + ", " for t in product.inputs)
        packed = "".join(x + ", " for x in args)
        code.append(f"{indent}_split_call_with_product({fname}, ({packed}), "
                    f"{tuple(row_args)!r}, {at}, {fname}_rows, ({operands}), "
                    f"{_static_args(product)!r}, {product.outputs[0]._static_shape[1]}, "
                    + tail)
        return code

    fresh = set()   # ids of values the driver alone holds: fused kernels' outputs
    for step_index, (kind, item) in enumerate(the_plan.items):
        if kind == "group":
            if not item.outputs:
                continue   # pure and unused: nothing to compute
            kernel = group_kernels[step_index]
            outs = [new_slot(t) for t in kernel.outputs]
            fresh.update(id(t) for t in kernel.outputs)
            for i in kernel.in_place.values():
                # Copy-on-write, as in TF: a variable's array is overwritten only while nothing
                # else refers to it -- the variable has not handed it out, and no view of it
                # that is read later shares its memory; otherwise the kernel writes over a
                # copy, which becomes the variable's new array.
                placeholder = kernel.args[i]
                target = slot(placeholder)
                views = plan_lib.views_read_from(the_plan, placeholder, step_index, readers)
                lines.append("    if " + "".join(f"_shares({target}, {slot(t)}) or "
                                                 for t in views)
                             + f"not {variable_names[id(placeholder)]}._claim_in_place({target}):")
                lines.append(f"        {target} = _array({target})")
            lines += group_call(kernel, f"k{step_index}", outs, "    ", products.get(step_index))
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
            # An elementwise op whose CPU kernel is a ufunc chosen by dtype: chosen now.
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
        if id(node) in deferred:
            continue   # computed inside the parts of the group that reads it
        direct = _direct_call(node, [slot(t) for t in node.inputs], env, step_index)
        if direct is not None:
            lines.append(f"    {new_slot(node.outputs[0])} = {direct}")
            continue
        env[f"e{step_index}"] = _cpu_kernel(op).run
        env[f"a{step_index}"] = node.attrs
        arrays = "[" + "".join(f"_asarray({slot(t)}), " for t in node.inputs) + "]"
        lines.append(f"    arr = {arrays}")
        if node.unknown_input_shapes:
            # Shapes the trace could not check are checked on every call, before the kernel.
            env[f"i{step_index}"] = interpreter.infer_shapes
            lines.append(f"    i{step_index}(e{step_index}_node, arr)")
            env[f"e{step_index}_node"] = node
        attrs = f"a{step_index}"
        if op.random_stream:
            lines.append(f"    attrs = dict(a{step_index}, counter=(a{step_index}['counter'] << 32)"
                         " + call_index)")
            attrs = "attrs"
        elif _passes_call_index(node):
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

    kept = list(graph.outputs) + [t for _, t in _updated(graph)]
    for n, (variable, tensor) in enumerate(_updated(graph)):
        env[f"upd{n}"] = variable
        value = slot(tensor)
        if id(tensor) not in fresh:
            lines.append(f"    upd{n}._set(_array({value}), True)")   # a copy of its own
            continue
        # A new array: the variable's own (a later call may overwrite it in place) unless the
        # caller or another variable gets it, or a view of it, too.
        owned = "False"
        if sum(t is tensor for t in kept) == 1:
            views = plan_lib.views_read_from(the_plan, tensor, len(the_plan.items), readers)
            shared = " or ".join(f"_shares({value}, {slot(t)})" for t in views)
            owned = f"not ({shared})" if views else "True"
        lines.append(f"    upd{n}._set({value}, {owned})")
    # A folded output is copied: the caller gets an array of its own.
    lines.append("    return [" + "".join((f"_array({slot(t)})" if id(t) in folded else slot(t))
                                         + ", " for t in graph.outputs) + "]")
    driver_source = "\n".join(lines) + "\n"
    code = compile(driver_source, f"<hybridtf driver {graph.name}>", "exec")
    exec(code, env)
    run = env["run"]

    if warm_up and kernels:
        _warm_up(kernels, module, loop_kernels.values())
    return CompiledGraph(graph, run, source, driver_source, lease)


def _products_in_parts(plan, in_place):
    """group index -> the matrix product node (an op whose CPU kernel has the ``rows`` form)
    whose output only that group reads, when the group is a part kernel of the product's shape:
    the product is then computed inside its parts.  Its operands must be 2-D floats that no
    group overwrites in place, nor views of such (they are read later than planned)."""
    readers = plan.readers()
    overwritten = {id(t) for targets in in_place.values() for t in targets.values()}
    overwritten.update(id(view) for targets in in_place.values() for t in targets.values()
                       for _, view in plan_lib.possible_views(plan, t))
    products = {}
    for kind, node in plan.items:
        if kind != "step" or _cpu_kernel(node.op).rows is None:
            continue
        product = node.outputs[0]
        operands = list(node.inputs) + [product]
        if not all(plan_lib.known(t._static_shape) and len(t._static_shape) == 2
                   and t._static_dtype in (np.float32, np.float64) for t in operands):
            continue
        if any(id(t) in overwritten for t in node.inputs):
            continue
        read_by = set(readers.get(id(product), ()))
        if len(read_by) != 1 or None in read_by:
            continue
        index, = read_by
        kind_g, group = plan.items[index]
        if (kind_g == "group" and group.outputs and _splits(group)
                and tuple(group.shape) == tuple(product._static_shape)
                and int(np.prod(group.shape)) >= PRODUCT_MIN_ELEMENTS):
            products[index] = node
    return products


def _splits(group):
    """Whether a group's loop is rendered as a part kernel, split over the kernel threads."""
    shape = group.shape
    return (not group.reductions and len(shape) >= 1 and shape[0] >= 2
            and int(np.prod(shape)) >= PART_MIN_ELEMENTS)


def _static_args(node):
    """The attributes a kernel's ``direct`` and ``rows`` forms take, as Python values."""
    direct_args = _cpu_kernel(node.op).direct_args
    return tuple(direct_args(node.attrs)) if direct_args is not None else ()


def _direct_call(node, args, env, step_index):
    """Source computing a node whose inputs' shapes were all checked when it was traced without
    going through its kernel's ``run``: views (kind "view") as reshapes, aliases (kind "alias")
    as their input, and kernels with a ``direct`` form (a matmul straight into BLAS)."""
    op = node.op
    direct = _cpu_kernel(op).direct
    if op.kind not in ("view", "alias") and (direct is None or op.check_values is not None):
        return None
    if not all(plan_lib.known(t._static_shape) for t in list(node.inputs) + list(node.outputs)):
        return None
    if op.kind == "view":
        return f"_np.reshape({args[0]}, {tuple(node.outputs[0]._static_shape)!r})"
    if op.kind == "alias":
        return args[0]
    env[f"m{step_index}"] = direct
    return f"m{step_index}({', '.join(list(args) + [repr(v) for v in _static_args(node)])})"


def _bound_ufunc(node):
    """The ufunc an elementwise step's CPU kernel would pick for its static dtype (its ``ufunc``
    form), as a compiled driver calls it, or None: silently (IEEE results without NumPy's
    warnings, as TF), and with operands whose shapes were unknown while tracing and do not
    broadcast rejected by the op's shape rule (NumPy checks before running any loop)."""
    op = node.op
    if op.kind != "elementwise" or op.stateful or not node.inputs or op.num_outputs != 1:
        return None
    form = _cpu_kernel(op).ufunc
    dtype = node.inputs[-1]._static_dtype
    if form is None or dtype == object or dtype.kind not in "biuf" or \
            dtype.name not in op.scalar.dtypes:
        return None
    ufunc = form(dtype)

    def kernel(*arrays):
        token = fp_errors.ignore()
        try:
            return ufunc(*arrays)
        except ValueError:
            op.infer([Spec(np.shape(a), np.asarray(a).dtype) for a in arrays], None)  # raises
            raise
        finally:
            fp_errors.restore(token)
    return kernel


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
        args += [np.zeros(len(pack), pack[0]._static_dtype) for pack in kernel.packs]
        if kernel.parts:   # its outputs, and an empty range of rows
            args += [np.zeros(t._static_shape, t._static_dtype) for t in kernel.outputs
                     if id(t) not in kernel.in_place] + [0, 0]
        function = getattr(module, kernel.name)
        # A retrace (a new Python value) finds its kernels compiled: running them on dummy
        # arrays of the full shapes would cost more than the rest of the trace.
        if tuple(numba.typeof(a) for a in args) not in function.overloads:
            function(*args)


def describe(compiled):
    """Text for ``ConcreteFunction.kernel_source``: the kernel module and the driver."""
    parts = []
    if compiled.kernel_source:
        parts.append(compiled.kernel_source.rstrip("\n"))
    else:
        parts.append("# (no fused kernels: every node runs on its kernel)")
    parts.append("# ---- driver (Python) ----\n" + compiled.driver_source.rstrip("\n"))
    return "\n\n".join(parts) + "\n"
