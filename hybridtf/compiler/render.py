"""Rendering a fused group as the source of one loop function: what every backend shares.

``LoopRenderer`` writes a group's loop nest -- its loads, the ops' scalar functions, the stores,
the reductions' accumulators -- as Python source; a backend's renderer (``compiler.cpu.render``)
subclasses it and sets what differs between backends: the module header, the decorator that
compiles a function, the options a loop with reductions compiles with, and the kernel of the op
it asks about constants (``literal_pays``).

The source depends only on the group's structure -- ops, dtypes, ranks, which dimensions of each
input broadcast, and the few constants worth a literal (``literal_pays``) -- not on the sizes of
the dimensions, which are read from the arguments, nor on the values of other constants, which
are arguments too.  Equal structures render to equal text, so they share one function (and one
compiled specialisation per argument type), within a graph and, through the file cache of
``ops.codegen``, across graphs and processes: a function retraced for a new Python number reuses
the kernel compiled for the previous one.
"""
import hashlib
import math

import numpy as np

from hybridtf.compiler.plan import reduced_axes


def _np_type(dtype):
    dtype = np.dtype(dtype)
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def literal(value, dtype):
    """Source text for a scalar constant of ``dtype``, exact for every value of that dtype."""
    dtype = np.dtype(dtype)
    value = np.asarray(value, dtype).reshape(-1)[0]
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind == "f":
        v = float(value)
        if math.isnan(v):
            text = "np.nan"
        elif math.isinf(v):
            text = "np.inf" if v > 0 else "-np.inf"
        else:
            text = repr(v)
        return f"{_np_type(dtype)}({text})"
    return f"{_np_type(dtype)}({int(value)})"


# The accumulator's start, by the reduction an op declares: the value of the reduction of nothing.
_REDUCTION_START = {"sum": "0.0", "mean": "0.0", "max": "-np.inf", "min": "np.inf"}


class Kernel:
    """A rendered group: the function's name and source, and what the driver passes it."""

    def __init__(self, name, source, args, scalar_args, outputs, imports, in_place=None,
                 parts=False, packs=()):
        self.name = name
        self.source = source
        self.args = args                # external tensors passed as arguments, in order
        self.scalar_args = scalar_args  # per argument: True when passed as a scalar (rank 0)
        self.outputs = outputs          # tensors computed, in order
        self.imports = imports          # scalar function names used
        self.control_flow = False       # a native loop or branch (see compiler.cpu.loops)
        # id(output) -> the argument whose array it overwrites (see render)
        self.in_place = in_place or {}
        # a part kernel: (args..., packs..., the outputs not in place..., lo, hi) fills rows
        # lo..hi of its outputs (the first axis) and returns nothing
        self.parts = parts
        # the single-valued constants it reads, one list per dtype, passed after ``args`` as
        # one array each (see pack_arrays)
        self.packs = list(packs)


def pack_arrays(kernel, constants):
    """The arrays a call of ``kernel`` passes after its arguments: its constants' values
    (``constants``: id(tensor) -> value), one array per dtype."""
    return [np.array([constants[id(t)] for t in pack], pack[0]._static_dtype)
            for pack in kernel.packs]


class Operands:
    """What a rendered function reads, as every backend's renderer keeps it: ``names``
    (id(tensor), or ("literal", id) -> the expression standing for its value), the tensors
    passed as arguments (``args``, their names ``arg_names``, ``scalar_args``: rank 0), the
    constants read from one pack argument per dtype (``packs``), and the lines that run before
    the loop (``pre``).  ``constants``: id(tensor) -> the one value of each single-valued
    constant."""

    def __init__(self, constants):
        self.constants = constants
        self.names = {}
        self.args, self.arg_names, self.scalar_args = [], [], []
        self.packs = {}   # dtype -> the constants read from its pack argument, in order
        self.pre = []

    def known(self, t, as_literal=False):
        """The expression of ``t`` already named, or of a constant (as a literal where
        ``as_literal``, else read from its pack); None for a tensor to pass as an argument."""
        key = ("literal", id(t)) if as_literal else id(t)
        if key in self.names:
            return self.names[key]
        if as_literal:
            value = literal(self.constants[id(t)], t._static_dtype)
        elif id(t) in self.constants:
            dtype = np.dtype(t._static_dtype)
            pack = self.packs.setdefault(dtype, [])
            value = f"p{list(self.packs).index(dtype)}[{len(pack)}]"
            pack.append(t)
        else:
            return None
        self.names[key] = f"c{len(self.names)}"
        self.pre.append(f"    {self.names[key]} = {value}")
        return self.names[key]

    def argument(self, t):
        """A new argument for ``t``; its name."""
        name = f"a{len(self.args)}"
        self.args.append(t)
        self.arg_names.append(name)
        self.scalar_args.append(len(t._static_shape) == 0)
        return name

    def read_once(self, t, expr):
        """``t``'s one value, read by ``expr`` before the loop; the name it gets."""
        name = self.names[id(t)] = f"s{len(self.names)}"
        self.pre.append(f"    {name} = {expr}")
        return name


class LoopRenderer:
    """Renders fused groups as loop functions and gathers them into one module's source.

    A backend's subclass sets:

    * ``backend`` -- the ``framework.devices.Backend`` whose op kernels it asks (``literal_pays``);
    * ``header`` -- the module's first lines (imports, the decorator's definition);
    * ``scalar_module`` -- the module whose ``f`` each op's scalar function ``f_f`` is (or
      ``scalar_lines``, binding them otherwise);
    * ``decorator`` -- the line compiling a function, ``{options}`` standing for its options;
    * ``reduction_options`` -- the options of a loop with reductions (reassociation);

    and may change ``bounds``: the range a loop runs over along an axis.
    """

    backend = None
    header = ""
    scalar_module = ""
    decorator = "{options}"
    reduction_options = ""

    # Constants are kernel arguments, so that traces differing only in a constant's value (a
    # Python number passed to a decorated function, a learning rate) share one source and one
    # compiled kernel.  A kernel takes them packed, one array per dtype (``Kernel.packs``),
    # because each scalar argument adds about 35 ns to a call's dispatch and a chain of small
    # ops has dozens.  A constant is a literal only where the backend's compiler then emits much
    # cheaper code, as the op's kernel for that backend says (its ``literal_pays`` form: a
    # power's small exponents, a power-of-two divisor).
    def literal_pays(self, node, position, value):
        """Whether a single-valued constant ``value``, input ``position`` of ``node``, is
        rendered as a literal (see above) rather than passed as an argument."""
        if value is None:
            return False
        form = node.op.kernel(self.backend).literal_pays
        return form is not None and form(position, value)

    def member_line(self, n, node, value_of, operands, imports):
        """The line computing member ``n`` of a group, ``node``, into ``v<n>`` (the name its
        output gets in ``operands.names``): its scalar function (added to ``imports``) on its
        inputs' expressions (``value_of(tensor, as_literal)``), in its output's dtype."""
        ins = [value_of(t, self.literal_pays(node, i, operands.constants.get(id(t))))
               for i, t in enumerate(node.inputs)]
        f = "f_" + node.op.scalar.name
        if f not in imports:
            imports.append(f)
        t = node.outputs[0]
        operands.names[id(t)] = f"v{n}"
        return f"v{n} = {_np_type(t._static_dtype)}({f}({', '.join(ins)}))"

    def bounds(self, axis, parts):
        """The ``range`` arguments of the loop over ``axis``: a part kernel (``parts``) runs
        rows ``lo`` to ``hi`` of the first axis, taken as its last two arguments."""
        return "lo, hi" if parts and axis == 0 else f"n{axis}"

    def function(self, prefix, signature, lines, options=""):
        """(name, source) of a compiled function with ``signature`` whose body is ``lines``
        (indented): named by a hash of its text, so that equal functions share one name."""
        text = "\n".join(lines)
        digest = hashlib.sha256((signature + options + "\n" + text).encode()).hexdigest()[:12]
        name = f"{prefix}_{digest}"
        source = f"{self.decorator.format(options=options)}\ndef {name}({signature}):\n{text}\n"
        return name, source

    def render(self, group, constants, in_place=None, parts=False):
        """The ``Kernel`` of ``group``.  ``constants``: id(tensor) -> the one value (a NumPy
        scalar) of each single-valued constant; the kernel reads each from its dtype's pack
        argument (``Kernel.packs``), or as a literal where ``literal_pays``.

        ``in_place``: id(output) -> an input tensor of the group's shape and the output's dtype,
        whose array the output overwrites: the input is read at the loop index only, and every
        value is stored after every load of its iteration, so each element is read before it is
        written.  ``parts``: render a part kernel (see Kernel; a group without reductions, of
        rank >= 1).
        """
        in_place = in_place or {}
        shape = group.shape
        rank = len(shape)
        operands = Operands(constants)
        names, args, scalar_args, arg_names, packs, pre = (
            operands.names, operands.args, operands.scalar_args, operands.arg_names,
            operands.packs, operands.pre)
        body, post = [], []
        imports = []
        idx = [f"i{k}" for k in range(rank)]
        sizes = [None] * rank

        def value_of(t, as_literal=False):
            known = operands.known(t, as_literal)
            if known is not None:
                return known
            a = operands.argument(t)
            s = t._static_shape
            if len(s) == 0:
                names[id(t)] = a
                return a
            offset = rank - len(s)
            index = []
            for j, d in enumerate(s):
                k = offset + j
                if d == 1:
                    index.append("0")
                else:
                    index.append(idx[k])
                    if sizes[k] is None:
                        sizes[k] = f"{a}.shape[{j}]"
            expr = f"{a}[{', '.join(index)}]"
            if all(i == "0" for i in index):
                return operands.read_once(t, expr)
            names[id(t)] = expr
            return expr

        outputs = group.outputs
        out_ids = {id(t): n for n, t in enumerate(outputs)}
        for key, target in in_place.items():
            value_of(target)   # an argument, even if nothing else reads it
        stores = []   # in-place stores: after every load of the iteration
        for n, node in enumerate(group.members):
            body.append(self.member_line(n, node, value_of, operands, imports))
            t = node.outputs[0]
            v = names[id(t)]
            if id(t) in in_place:
                stores.append(f"{value_of(in_place[id(t)])} = {v}")
            elif id(t) in out_ids:
                o = f"o{out_ids[id(t)]}"
                body.append(f"{o}[{', '.join(idx)}] = {v}" if rank else f"{o}[()] = {v}")
        reduction_axes = [reduced_axes(node) for node in group.reductions]
        row_sums = []   # (start, add, finish) of sums along the innermost axis
        for r, (node, axes) in enumerate(zip(group.reductions, reduction_axes)):
            src = value_of(node.inputs[0])
            kept = [k for k in range(rank) if k not in axes]
            # A partial reduction accumulates into an array over the kept axes.
            target = f"acc{r}[{', '.join(idx[k] for k in kept)}]" if kept else f"acc{r}"
            reduction = node.op.reduction
            if not kept:
                pre.append(f"    acc{r} = {_REDUCTION_START[reduction]}")
            if reduction in ("max", "min"):
                better = ">" if reduction == "max" else "<"
                body.append(f"v = {src}")
                # NaN wins, as in TF: once the accumulator is NaN no comparison replaces it
                body.append(f"if v {better} {target} or v != v:")
                body.append(f"    {target} = v")
            elif kept and axes == [rank - 1]:
                # A sum along the innermost loop runs in a local (one the vectorizer can split
                # into lanes), added to the accumulator once per row: an accumulator in an
                # array is loaded and stored at every element, one element at a time.
                row_sums.append((f"t{r} = 0.0", f"t{r} += {src}", f"{target} += t{r}"))
            else:
                body.append(f"{target} += {src}")
        body += [add for _, add, _ in row_sums]
        body += stores
        for k in range(rank):
            if sizes[k] is None:
                sizes[k] = str(shape[k])
        shape_text = "(" + "".join(f"n{k}, " for k in range(rank)) + ")"
        dims = [f"    n{k} = {sizes[k]}" for k in range(rank)]
        for r, axes in enumerate(reduction_axes):
            kept = [k for k in range(rank) if k not in axes]
            if kept:
                dims.append(f"    acc{r} = np.full(({''.join(f'n{k}, ' for k in kept)}), "
                            f"{_REDUCTION_START[group.reductions[r].op.reduction]}, np.float64)")
        allocs = []
        results = []
        out_params = []
        for n, t in enumerate(outputs):
            o = f"o{n}"
            if id(t) in in_place:
                results.append(value_of(in_place[id(t)]).split("[")[0])
                continue
            if parts:
                out_params.append(o)
                continue
            node = t.node
            if node in group.reductions:
                r = group.reductions.index(node)
                axes = reduction_axes[r]
                kept = [k for k in range(rank) if k not in axes]
                count = " * ".join(f"n{k}" for k in axes) or "1"
                value = (f"acc{r} / np.float64({count})" if node.op.reduction == "mean"
                         else f"acc{r}")
                dtype = _np_type(t._static_dtype)
                if kept:
                    # Sizes come from the loop, so the source stays independent of them.
                    keepdims = len(t._static_shape) == rank
                    oshape = "".join(("1" if k in axes else f"n{k}") + ", " for k in range(rank)
                                     if keepdims or k not in axes)
                    post.append(f"    {o} = ({value}).astype({dtype}).reshape(({oshape}))")
                else:
                    oshape = t._static_shape
                    post.append(f"    {o} = np.empty({tuple(oshape)!r}, {dtype})")
                    post.append(f"    {o}[{', '.join('0' for _ in oshape) or '()'}] = "
                                f"{dtype}({value})")
            else:
                allocs.append(f"    {o} = np.empty({shape_text}, {_np_type(t._static_dtype)})")
            results.append(o)

        lines = dims + pre + allocs
        indent = "    "
        for k in range(rank):
            if k == rank - 1:
                lines += [indent + start for start, _, _ in row_sums]
            lines.append(f"{indent}for i{k} in range({self.bounds(k, parts)}):")
            indent += "    "
        lines += [indent + line for line in body]
        lines += [indent[:-4] + finish for _, _, finish in row_sums]
        lines += post
        if not parts:
            ret = (results[0] if len(results) == 1
                   else "(" + "".join(r + ", " for r in results) + ")")
            lines.append(f"    return {ret}")
        pack_params = [f"p{j}" for j in range(len(packs))]
        signature = ", ".join(arg_names + pack_params + out_params
                              + (["lo", "hi"] if parts else []))
        options = self.reduction_options if group.reductions else ""
        name, source = self.function("fused", signature, lines, options)
        return Kernel(name, source, args, scalar_args, outputs, imports,
                      {key: next(i for i, a in enumerate(args) if a is t)
                       for key, t in in_place.items()}, parts, packs.values())

    def scalar_lines(self, functions):
        """The module's lines binding each name ``f_<op>`` of ``functions`` to the op's scalar
        function."""
        return [f"from {self.scalar_module} import "
                + ", ".join(f"{f[2:]} as {f}" for f in functions)]

    def module_source(self, kernels):
        """The source of one module holding ``kernels`` (each function once)."""
        imports = sorted({f for k in kernels for f in k.imports})
        lines = [self.header.rstrip("\n")]
        if imports:
            lines += self.scalar_lines(imports)
        seen = set()
        for k in kernels:
            if k.name in seen:
                continue
            seen.add(k.name)
            lines += ["", "", k.source.rstrip("\n")]
        return "\n".join(lines) + "\n"
