"""``OpDef``: an op's one entry, and ``Kernel``: its implementation on one backend.

An entry declares everything eager execution, tracing, the tape, the graph interpreter and the
compilers know about an op:

* ``name``;
* ``kind`` -- how every compiler treats it, one of ``KINDS``:

  - "elementwise": ``scalar`` (an ``ops.elementwise.ScalarOp``) applied to each element under
    NumPy's broadcasting; compilers fuse it into generated loops;
  - "reduction": a sum, mean, max or min over axes (``reduction`` says which), which a fused
    loop may take as its epilogue (an accumulator);
  - "view": its output holds its input's elements, in order, in the output's shape (a reshape),
    so that a compiler may compute it as a view when the shapes are known;
  - "alias": its output is its input itself;
  - "control_flow": it runs subgraphs (FuncGraphs) held in the attrs named by ``subgraphs``;
    when stateful it passes the call index (``attrs["call_index"]``) on to the random ops
    inside.  ``control_flow`` names the form a compiler may render natively: "while" (attrs
    ``cond``, ``body``, ``cond_map``, ``body_map``, ``n_state``, ``maximum_iterations``; inputs:
    the loop state, then the outer values the parts use) or "cond" (attrs ``branches``,
    ``maps``; inputs: the predicate, then the outer values);
  - "opaque": anything else -- a compiler calls its kernel;
* ``infer(specs, attrs)`` -- the shape/dtype rule: from input ``Spec`` s (shape tuple whose dims
  may be None, NumPy dtype) to output specs, raising ``InvalidArgumentError`` (naming the op, the
  shapes and the dtypes) for bad input.  It runs before any kernel;
* ``check_values(arrays, attrs)`` -- value-dependent checks (index ranges, integer division by
  zero) that must pass before a kernel may touch memory; ``float_safe_checks``: they concern
  only integer operands and read only the second one (a divisor, an exponent);
* ``grad(record, grads)`` -- the gradient rule, written with hybridtf's public ops so it runs
  eagerly, under a second tape (higher-order gradients) and inside a trace alike;
* ``num_outputs`` (None: as many as ``infer`` returns), ``stateful`` (runs in program order,
  never pruned or folded), ``random_stream`` (draws from the counter-based stream that
  ``attrs["counter"]`` names; each call of a traced function draws a new one: the graph's runner
  combines the counter with the call index), ``shape_only`` (reads only its inputs' shapes and
  dtypes, never their values, so it can be computed when the shapes are known);
* ``kernels`` -- one ``Kernel`` per backend name ("cpu"), so a new backend adds kernels without
  touching the rest of the entry.  ``has_kernel`` tells whether a backend has one.

Kernels run with NumPy's floating-point warnings off, wherever they are called (eagerly, by the
graph interpreter, by a compiled driver): TF's kernels give IEEE results (inf, NaN) silently.  A
kernel that runs the user's own Python code (``py_function``) is built with ``quiet_fp=False``,
so that code keeps the user's NumPy settings.
"""
from collections import namedtuple

from ops import deferred_compiles

from hybridtf.framework import devices, fp_errors
from hybridtf.framework.errors import NotFoundError

Spec = namedtuple("Spec", "shape dtype")

KINDS = ("elementwise", "reduction", "view", "alias", "control_flow", "opaque")
REDUCTIONS = ("sum", "mean", "max", "min")   # the accumulators a fused loop knows
# The reductions of opaque ops: named for the compilers that reduce in kernels of their own
OPAQUE_REDUCTIONS = ("prod", "any", "all")
CONTROL_FLOW = ("while", "cond")             # the natively rendered control-flow forms


class Kernel:
    """One backend's implementation of an op: ``run(arrays, attrs)`` computes the op's outputs
    (one array, or a sequence of ``num_outputs``) from its input arrays.

    A kernel may also offer *forms*: entry points a compiler calls instead of ``run`` where it
    knows more than the arrays at hand (None where the kernel has none):

    * ``ufunc(dtype)`` -- the op as a NumPy ufunc for inputs of ``dtype``, with NumPy's
      broadcasting; the caller silences floating-point warnings (``fp_errors``);
    * ``flat_loop(variant)`` -- a binary op over a contiguous array and a scalar by a flat
      loop: ``variant`` "as" takes (array, scalar, out), "sa" (scalar, array, out);
    * ``literal_pays(position, value)`` -- whether a fused loop should write the single-valued
      constant ``value``, input ``position`` of the op, as a literal (LLVM then emits much
      cheaper code) rather than read it from an argument;
    * ``direct(*arrays, *direct_args(attrs))`` -- the kernel without its generic calling
      convention, for inputs whose shapes and dtypes were checked when traced (attributes as
      positional Python values);
    * ``rows(*arrays, *direct_args(attrs), start, stop, out)`` -- rows ``start:stop`` of a 2-D
      float output written into ``out``, so that a loop consuming the output by rows can
      compute it a block of rows at a time;
    * ``constant(arrays, attrs)`` -- ``run``'s result as a compile-time constant, which may be
      a read-only view: a fill as a zero-strided view of its one value, so that a constant of
      any size costs one element;
    * ``reference(arrays, attrs)`` -- the op in NumPy, or None for inputs it does not cover:
      ``run_now`` runs it while ``run``'s compiled code is not ready (``ops.deferred_compiles``).
      It gives ``run``'s results up to rounding (bit for bit where its docstring says so);
    * ``reference_ufunc(dtype)`` -- the ufunc form's reference: a NumPy function computing the
      op as ``ufunc(dtype)`` does (bit for bit where ``ops.elementwise`` says so), or None.
    """

    __slots__ = ("run", "ufunc", "flat_loop", "literal_pays", "direct", "direct_args", "rows",
                 "constant", "reference", "reference_ufunc")

    def __init__(self, run, quiet_fp=True, ufunc=None, flat_loop=None, literal_pays=None,
                 direct=None, direct_args=None, rows=None, constant=None, reference=None,
                 reference_ufunc=None):
        self.run = fp_errors.quietly(run) if quiet_fp else run
        self.reference = fp_errors.quietly(reference) if reference is not None else None
        self.reference_ufunc = reference_ufunc
        self.ufunc = ufunc
        self.flat_loop = flat_loop
        self.literal_pays = literal_pays
        self.direct = direct
        self.direct_args = direct_args
        self.rows = rows
        self.constant = constant

    def run_now(self, arrays, attrs):
        """``run``; but while the compiled code it calls is not ready (its first call with an
        empty kernel cache), ``reference``, as that code compiles in the background."""
        if self.reference is None or not deferred_compiles.allowed():
            return self.run(arrays, attrs)
        return deferred_compiles.run_or_substitute(self.run, self._deferral_key,
                                                   self._run_reference, arrays, attrs)

    def _deferral_key(self, arrays, attrs):
        return (id(self), tuple((a.shape, a.dtype.str, a.flags.c_contiguous, a.flags.writeable)
                                for a in arrays), repr(attrs))

    def _run_reference(self, arrays, attrs, key):
        result = self.reference(arrays, attrs)
        if result is None:   # inputs the reference does not cover
            return self.run(arrays, attrs)   # compiles now
        # the kernel run once in the background compiles all it calls (on copies: the caller
        # may write to its arrays, an index among them, meanwhile)
        copies = [deferred_compiles.like(a) for a in arrays]
        deferred_compiles.compile_later(key, lambda: self.run(copies, attrs))
        return result

    def __repr__(self):
        forms = [name for name in self.__slots__[1:] if getattr(self, name) is not None]
        return f"<Kernel {getattr(self.run, '__qualname__', self.run)!r} forms={forms}>"


class OpDef:
    """An op's entry (see the module docstring).  ``kernels`` maps backend names to a
    ``Kernel`` or to a plain ``run(arrays, attrs)`` function (made a ``Kernel``, quiet unless
    ``quiet_fp=False``)."""

    __slots__ = ("name", "kind", "kernels", "infer", "grad", "check_values", "num_outputs",
                 "scalar", "stateful", "reduction", "float_safe_checks", "random_stream",
                 "shape_only", "subgraphs", "control_flow", "cpu_ufuncs")

    def __init__(self, name, kind, kernels, infer, grad=None, *, check_values=None,
                 num_outputs=1, scalar=None, stateful=False, quiet_fp=True, reduction=None,
                 float_safe_checks=False, random_stream=False, shape_only=False, subgraphs=(),
                 control_flow=None):
        self.name = name
        self.kind = kind
        self.kernels = {backend: kernel if isinstance(kernel, Kernel)
                        else Kernel(kernel, quiet_fp=quiet_fp)
                        for backend, kernel in kernels.items()}
        self.infer = infer
        self.grad = grad
        self.check_values = check_values
        self.num_outputs = num_outputs
        self.scalar = scalar            # the ops.elementwise.ScalarOp of an elementwise op
        self.stateful = stateful
        # the reduction over axes (attrs ``axis``, ``keepdims``) the op computes: one of
        # REDUCTIONS for kind "reduction", of OPAQUE_REDUCTIONS for an opaque op
        self.reduction = reduction
        self.float_safe_checks = float_safe_checks
        self.random_stream = random_stream
        self.shape_only = shape_only
        self.subgraphs = tuple(subgraphs)
        self.control_flow = control_flow
        # The CPU kernel's ufuncs by dtype, filled by eager execution's elementwise fast paths.
        self.cpu_ufuncs = {}

    def has_kernel(self, backend):
        """Whether this op has a kernel for ``backend`` (a ``framework.devices.Backend``)."""
        return backend.name in self.kernels

    def kernel(self, backend):
        """This op's ``Kernel`` for ``backend``; NotFoundError naming the op, the device and
        the devices it has kernels for when it has none (eager placement, ``eager.placement``,
        asks ``has_kernel`` first)."""
        kernel = self.kernels.get(backend.name)
        if kernel is None:
            known = devices.backends()
            names = sorted(known[name].device_name if name in known else name
                           for name in self.kernels)
            raise NotFoundError(
                None, self.name, f"{self.name}: no kernel for device {backend.device_name}; "
                f"this op has kernels for {', '.join(names) or 'no device'}. Copy its inputs "
                "to one of those devices.")
        return kernel

    def __repr__(self):
        return f"<OpDef {self.name} ({self.kind})>"
