"""The op registry: every op is declared once, here, and read by eager execution, the tape,
tracing, the graph interpreter and the compilers (see ``opdef`` for what an entry declares).
"""
from hybridtf.registry.opdef import Kernel, OpDef, Spec  # noqa: F401

OPS = {}


def register(op):
    if op.name in OPS:
        raise ValueError(f"Op {op.name!r} is already registered.")
    OPS[op.name] = op
    return op
