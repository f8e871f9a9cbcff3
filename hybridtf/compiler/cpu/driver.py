"""The CPU driver: straight-line Python that runs a lowered graph's steps in order.

The driver is one generated function ``run(inputs, call_index)``.  Its *slots* -- the values of
the graph -- are local variables ``x0``, ``x1``, ...; folded values are globals ``f0``, ...; what
it calls is bound as globals named by role and step index:

* ``k<i>``: the fused kernel of group ``i`` (``k<i>_p<j>``: its packed constants);
* ``l<i>``: the native loop or branch of step ``i`` (``l<i>_<j>``: the arrays its parts close
  over);
* ``u<i>``: the ufunc of an elementwise step; ``m<i>``: a kernel's ``direct`` form;
* ``e<i>``: an op's kernel, ``a<i>`` its attributes, ``c<i>`` its value checks, ``i<i>`` the
  shape check of inputs the trace could not check;
* ``var<n>`` / ``upd<n>``: the variables read and the variables written back.

So a call costs little more than the kernel calls.  The variables a graph updates are read
directly (their caller holds their locks: ``ConcreteFunction``) and written back at the end with
the ownership protocol of ``framework.variables``; variables it only reads are handed out to it.
"""
import re

import numpy as np

from hybridtf.compiler import plan as plan_lib
from hybridtf.compiler import render as render_lib
from hybridtf.compiler.cpu import parts
from hybridtf.framework import devices, fp_errors
from hybridtf.graph import interpreter
from hybridtf.registry import Spec

INDENT = "    "
# The driver's local values: its slots, and the argument list and results of a kernel step.
_LOCAL_VALUE = re.compile(r"\b(?:x\d+|arr|res)\b")


class DriverBuilder:
    """Builds the driver of ``lowered`` (a ``compiled.Lowered``) for the CPU: ``choices`` (a
    ``parts.Choices``), ``kernels`` (a ``cpu.RenderedKernels``) and their loaded ``module``."""

    def __init__(self, lowered, choices, kernels, module):
        self.lowered = lowered
        self.plan = lowered.plan
        self.choices = choices
        self.kernels = kernels
        self.module = module
        self.env = {"_np": np, "_asarray": np.asarray, "_array": np.array,
                    "_split_call": parts.split_call,
                    "_split_call_with_product": parts.split_call_with_product,
                    "_empty": np.empty, "_shares": np.may_share_memory}
        self.slots = {}             # id(tensor) -> the driver's name for its value
        self.lines = ["def run(inputs, call_index):"]
        self.variable_names = {}    # id(placeholder) -> the global naming its variable
        self.fresh = set()          # ids of values the driver alone holds: fused kernels' outputs
        self.readers = self.plan.readers()

    # ---- names ----------------------------------------------------------------------------
    def bind(self, name, value):
        """Binds ``value`` as the driver's global ``name``; returns the name."""
        self.env[name] = value
        return name

    def slot(self, t):
        """The local variable holding ``t``'s value."""
        return self.slots[id(t)]

    def new_slot(self, t):
        """A new local variable for ``t``'s value."""
        name = f"x{len(self.slots)}"
        self.slots[id(t)] = name
        return name

    def emit(self, *lines):
        """Appends statements to the body of ``run``."""
        self.lines += [INDENT + line for line in lines]

    # ---- the steps ------------------------------------------------------------------------
    def build(self):
        """(the driver's source, its ``run``)."""
        self.read_inputs()
        for index, (kind, item) in enumerate(self.plan.items):
            if kind == "group":
                if item.outputs:   # else pure and unused: nothing to compute
                    self.group_step(index)
            else:
                self.node_step(index, item)
        steps_end = len(self.lines)
        self.write_back()
        self.return_outputs()
        self.free_dead_values(steps_end)
        source = "\n".join(self.lines) + "\n"
        code = compile(source, f"<hybridtf driver {self.lowered.graph.name}>", "exec")
        exec(code, self.env)
        return source, self.env["run"]

    def free_dead_values(self, steps_end):
        """Deletes each local value after the statement that reads it last, so that its memory
        goes back to the allocator while the run goes on and the next steps reuse it instead of
        touching new pages.  The seed CNN's train step at batch 64 (measured): 46.6 -> 24-26 MB
        of arrays at its peak, 10-12k -> 5-7.5k pages faulted in by a process's first run, and
        a steady step 10% quicker (its arrays stay in the caches).  ``steps_end``: where the
        steps' lines end; values that the write-back and the return read stay to the end."""
        statements = []   # each a line of the body with the indented block it opens
        for line in self.lines[1:steps_end]:
            if line.startswith(INDENT * 2):
                statements[-1].append(line)
            else:
                statements.append([line])
        ending = self.lines[steps_end:]
        # (a captured value's slot is one of the driver's globals)
        local = {name for name in self.slots.values() if name not in self.env} | {"arr", "res"}
        last_read = {}
        for index, statement in enumerate(statements):
            for name in _LOCAL_VALUE.findall("\n".join(statement)):
                if name in local:
                    last_read[name] = index
        for name in _LOCAL_VALUE.findall("\n".join(ending)):
            last_read.pop(name, None)
        dead = {}
        for name, index in last_read.items():
            dead.setdefault(index, []).append(name)
        self.lines = self.lines[:1]
        for index, statement in enumerate(statements):
            self.lines += statement
            if index in dead:
                self.emit("del " + ", ".join(dead[index]))
        self.lines += ending

    def read_inputs(self):
        """The inputs, the captures, the folded values and the variables' arrays into slots."""
        graph = self.lowered.graph
        if graph.inputs:
            names = [self.new_slot(t) for t in graph.inputs]
            self.emit("".join(n + ", " for n in names) + "= inputs")
        for tensor, placeholder in graph.captures:
            self.bind(self.new_slot(placeholder), tensor._value)
        for n, (key, value) in enumerate(self.lowered.folded.items()):
            self.slots[key] = self.bind(f"f{n}", value)
        updated = {id(variable) for variable, _ in graph.updated_variables()}
        for n, (variable, placeholder) in enumerate(graph.variables):
            name = self.new_slot(placeholder)
            self.variable_names[id(placeholder)] = self.bind(f"var{n}", variable)
            read = "_value" if id(variable) in updated else "_shared_array()"
            self.emit(f"{name} = var{n}.{read}")

    def group_step(self, index):
        """A fused group's kernel, after copy-on-write of the variables it overwrites."""
        kernel = self.kernels.groups[index]
        outs = [self.new_slot(t) for t in kernel.outputs]
        self.fresh.update(id(t) for t in kernel.outputs)
        for i in kernel.in_place.values():
            self.copy_on_write(index, kernel.args[i])
        self.emit(*self.group_call(kernel, f"k{index}", outs,
                                   self.choices.products.get(index)))

    def copy_on_write(self, index, placeholder):
        """Copy-on-write, as in TF: a variable's array is overwritten only while nothing else
        refers to it -- the variable has not handed it out, and no view of it that is read
        later shares its memory; otherwise the kernel writes over a copy, which becomes the
        variable's new array."""
        target = self.slot(placeholder)
        views = plan_lib.views_read_from(self.plan, placeholder, index, self.readers)
        self.emit("if " + "".join(f"_shares({target}, {self.slot(t)}) or " for t in views)
                  + f"not {self.variable_names[id(placeholder)]}._claim_in_place({target}):",
                  f"{INDENT}{target} = _array({target})")

    def group_call(self, kernel, fname, outs, product=None):
        """Driver lines computing ``kernel``'s outputs into the slots ``outs``; ``product``: the
        matmul node whose output the part kernel computes block by block."""
        self.bind(fname, getattr(self.module, kernel.name))
        args = []
        for t, scalar in zip(kernel.args, kernel.scalar_args):
            if product is not None and t is product.outputs[0]:
                args.append("None")
                continue
            s = self.slot(t)
            args.append(f"{s}[()]" if scalar else s)
        for j, array in enumerate(render_lib.pack_arrays(kernel, self.lowered.constants)):
            args.append(self.bind(f"{fname}_p{j}", array))   # the kernel's constants
        if not kernel.parts:
            target = outs[0] if len(outs) == 1 else "".join(o + ", " for o in outs)
            return [f"{target} = {fname}({', '.join(args)})"]
        code = []
        for t, o in zip(kernel.outputs, outs):
            if id(t) in kernel.in_place:
                code.append(f"{o} = {args[kernel.in_place[id(t)]]}")
            else:
                self.bind(f"{o}_dtype", t._static_dtype)
                code.append(f"{o} = _empty({tuple(t._static_shape)!r}, {o}_dtype)")
                args.append(o)
        shape = kernel.outputs[0]._static_shape
        tail = f"{shape[0]}, {self.choices.rows_per_part(shape)})"
        packed = "".join(a + ", " for a in args)
        if product is None and not self.choices.large(shape):
            code.append(f"{fname}({packed}0, {shape[0]})")   # too small to split: one call
            return code
        if product is None:
            code.append(f"_split_call({fname}, ({packed}), " + tail)
            return code
        row_args = [not scalar and len(t._static_shape) == len(shape)
                    and t._static_shape[0] == shape[0]
                    for t, scalar in zip(kernel.args, kernel.scalar_args)]
        row_args += [False] * len(kernel.packs)
        row_args += [True] * (len(args) - len(row_args))   # the outputs
        at = next(i for i, t in enumerate(kernel.args) if t is product.outputs[0])
        self.bind(f"{fname}_rows", cpu_kernel(product.op).rows)
        operands = "".join(self.slot(t) + ", " for t in product.inputs)
        code.append(f"_split_call_with_product({fname}, ({packed}), "
                    f"{tuple(row_args)!r}, {at}, {fname}_rows, ({operands}), "
                    f"{static_args(product)!r}, {product.outputs[0]._static_shape[1]}, "
                    + tail)
        return code

    def node_step(self, index, node):
        """A step of one node, the cheapest way the CPU has: a native loop or branch, a ufunc,
        nothing (a product computed inside the parts of the group that reads it), a direct
        call, or else its kernel."""
        if index in self.kernels.loops:
            self.loop_step(index, node)
        elif self.ufunc_step(index, node) or id(node) in self.choices.deferred:
            return
        elif not self.direct_step(index, node):
            self.kernel_step(index, node)

    def loop_step(self, index, node):
        """A native loop or branch (``cpu.loops``)."""
        loop = self.kernels.loops[index]
        self.bind(f"l{index}", getattr(self.module, loop.kernel.name))
        args = [self.slot(t) for t in node.inputs]
        for n, array in enumerate(loop.captured):
            args.append(self.bind(f"l{index}_{n}", array))
        self.emit(f"res = l{index}({', '.join(args)})")
        for i, t in enumerate(node.outputs):
            self.emit(f"{self.new_slot(t)} = res[{i}]")

    def ufunc_step(self, index, node):
        """An elementwise op whose CPU kernel is a ufunc chosen by dtype: chosen now.  False
        when it has none."""
        ufunc = _bound_ufunc(node)
        if ufunc is None:
            return False
        self.bind(f"u{index}", ufunc)
        if node.op.check_values is not None:
            self.bind(f"c{index}", node.op.check_values)
            self.bind(f"a{index}", node.attrs)
            self.emit(f"arr = {self.input_arrays(node)}", f"c{index}(arr, a{index})")
            call_args = "*arr"
        else:
            call_args = ", ".join(self.slot(t) for t in node.inputs)
        self.emit(f"{self.new_slot(node.outputs[0])} = u{index}({call_args})")
        return True

    def direct_step(self, index, node):
        """A node whose inputs' shapes were all checked when it was traced, computed without
        going through its kernel's ``run``: views (kind "view") as reshapes, aliases (kind
        "alias") as their input, and kernels with a ``direct`` form (a matmul straight into
        BLAS).  False for any other node."""
        op = node.op
        direct = cpu_kernel(op).direct
        if op.kind not in ("view", "alias") and (direct is None or op.check_values is not None):
            return False
        if not all(plan_lib.known(t._static_shape)
                   for t in list(node.inputs) + list(node.outputs)):
            return False
        args = [self.slot(t) for t in node.inputs]
        if op.kind == "view":
            value = f"_np.reshape({args[0]}, {tuple(node.outputs[0]._static_shape)!r})"
        elif op.kind == "alias":
            value = args[0]
        else:
            self.bind(f"m{index}", direct)
            value = f"m{index}({', '.join(args + [repr(v) for v in static_args(node)])})"
        self.emit(f"{self.new_slot(node.outputs[0])} = {value}")
        return True

    def kernel_step(self, index, node):
        """An op's kernel through its generic calling convention, as the interpreter runs it:
        shape checks the trace could not make, value checks, then ``run``."""
        op = node.op
        self.bind(f"e{index}", cpu_kernel(op).run)
        self.bind(f"a{index}", node.attrs)
        self.emit(f"arr = {self.input_arrays(node)}")
        if node.unknown_input_shapes:
            # Shapes the trace could not check are checked on every call, before the kernel.
            self.bind(f"i{index}", interpreter.infer_shapes)
            self.bind(f"e{index}_node", node)
            self.emit(f"i{index}(e{index}_node, arr)")
        attrs = f"a{index}"
        if op.random_stream:
            self.emit(f"attrs = dict(a{index}, counter=(a{index}['counter'] << 32)"
                      " + call_index)")
            attrs = "attrs"
        elif op.stateful and op.kind == "control_flow":
            # Stateful branches / loop bodies pass the call index on to their random ops.
            self.emit(f"attrs = dict(a{index}, call_index=call_index)")
            attrs = "attrs"
        if op.check_values is not None:
            self.bind(f"c{index}", op.check_values)
            self.emit(f"c{index}(arr, {attrs})")
        outs = [self.new_slot(t) for t in node.outputs]
        if op.num_outputs == 1:
            self.emit(f"{outs[0]} = e{index}(arr, {attrs})" if outs
                      else f"e{index}(arr, {attrs})")
        else:
            self.emit(f"res = e{index}(arr, {attrs})")
            if outs:
                self.emit("res = tuple(res)", *(f"{o} = res[{i}]" for i, o in enumerate(outs)))

    def input_arrays(self, node):
        return "[" + "".join(f"_asarray({self.slot(t)}), " for t in node.inputs) + "]"

    def write_back(self):
        """The updated variables' new values, each the variable's own array where nothing else
        gets it."""
        graph = self.lowered.graph
        updated = graph.updated_variables()
        kept = list(graph.outputs) + [t for _, t in updated]
        for n, (variable, tensor) in enumerate(updated):
            self.bind(f"upd{n}", variable)
            value = self.slot(tensor)
            if id(tensor) not in self.fresh:
                self.emit(f"upd{n}._set(_array({value}), True)")   # a copy of its own
                continue
            # A new array: the variable's own (a later call may overwrite it in place) unless
            # the caller or another variable gets it, or a view of it, too.
            owned = "False"
            if sum(t is tensor for t in kept) == 1:
                views = plan_lib.views_read_from(self.plan, tensor, len(self.plan.items),
                                                 self.readers)
                shared = " or ".join(f"_shares({value}, {self.slot(t)})" for t in views)
                owned = f"not ({shared})" if views else "True"
            self.emit(f"upd{n}._set({value}, {owned})")

    def return_outputs(self):
        """The outputs; a folded one is copied: the caller gets an array of its own."""
        folded = self.lowered.folded
        self.emit("return [" + "".join(
            (f"_array({self.slot(t)})" if id(t) in folded else self.slot(t)) + ", "
            for t in self.lowered.graph.outputs) + "]")


def cpu_kernel(op):
    return op.kernel(devices.CPU)


def static_args(node):
    """The attributes a kernel's ``direct`` and ``rows`` forms take, as Python values."""
    direct_args = cpu_kernel(node.op).direct_args
    return tuple(direct_args(node.attrs)) if direct_args is not None else ()


def _bound_ufunc(node):
    """The ufunc an elementwise step's CPU kernel would pick for its static dtype (its ``ufunc``
    form), as a compiled driver calls it, or None: silently (IEEE results without NumPy's
    warnings, as TF), and with operands whose shapes were unknown while tracing and do not
    broadcast rejected by the op's shape rule (NumPy checks before running any loop)."""
    op = node.op
    if op.kind != "elementwise" or op.stateful or not node.inputs or op.num_outputs != 1:
        return None
    form = cpu_kernel(op).ufunc
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
