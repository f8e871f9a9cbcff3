"""The op registry: every op is declared once, here, and read by eager execution, the tape and
(later) tracing and the compiler.

An ``OpDef`` carries:

* ``eager(arrays, attrs)`` -- computes the outputs from NumPy inputs by calling into ``ops/``;
* ``infer(specs, attrs)`` -- the shape/dtype rule: from input ``Spec`` s (shape tuple whose dims
  may be None, NumPy dtype) to output specs, raising ``InvalidArgumentError`` (naming the op, the
  shapes and the dtypes) for bad input.  Eager execution runs it before the kernel;
* ``check_values(arrays, attrs)`` -- value-dependent checks (index ranges, integer division by
  zero) that must pass before a kernel may touch memory;
* ``grad(record, grads)`` -- the gradient rule, written with hybridtf's public ops so it runs
  eagerly, under a second tape (higher-order gradients) and inside a trace alike;
* ``kind`` -- how the compiler treats it: "elementwise", "reduction" or "opaque".

``eager`` runs with NumPy's floating-point warnings off, wherever it is called (eagerly, by the
graph interpreter, by a compiled driver): TF's kernels give IEEE results (inf, NaN) silently.
An op that runs the user's own Python code (``py_function``) passes ``quiet_fp=False``, so that
code keeps the user's NumPy settings.
"""
from collections import namedtuple

from hybridtf.framework import fp_errors

Spec = namedtuple("Spec", "shape dtype")

OPS = {}


class OpDef:
    __slots__ = ("name", "kind", "eager", "infer", "grad", "check_values", "num_outputs",
                 "scalar", "stateful", "fast")

    def __init__(self, name, kind, eager, infer, grad=None, check_values=None, num_outputs=1,
                 scalar=None, stateful=False, quiet_fp=True):
        self.name = name
        self.kind = kind
        self.eager = fp_errors.quietly(eager) if quiet_fp else eager
        self.infer = infer
        self.grad = grad
        self.check_values = check_values
        self.num_outputs = num_outputs
        self.scalar = scalar          # the ops.elementwise.ScalarOp of an elementwise op
        self.stateful = stateful
        self.fast = {}                # per-dtype eager kernels, filled on first use

    def __repr__(self):
        return f"<OpDef {self.name} ({self.kind})>"


def register(op):
    if op.name in OPS:
        raise ValueError(f"Op {op.name!r} is already registered.")
    OPS[op.name] = op
    return op
