"""The public op modules, as gradient rules see them.

A gradient rule lives in its op's entry (one op, one place) and is written with the public ops
(``M.reduce_sum``, ``A.reshape``, ...), the same functions users call, so its own ops are taped
and traced like any others.  The public ops are defined in ``hybridtf.api``, a layer above the
registry, so the registry cannot import them.  Instead each name below is a namespace that
``hybridtf.api`` binds to its module when it loads (dependency inversion): a registry module
writes ``from hybridtf.registry.public_ops import math_ops as M`` and uses ``M.reduce_sum`` in
its rules (the tape's gradient accumulation in ``eager.backprop`` uses them the same way).
``execute`` is bound to eager execution, for rules that run an op of their own entry with
attributes the public functions do not take.

Rules run only when a gradient (or a graph) is computed, long after ``hybridtf.api`` has loaded;
a rule that runs earlier gets an error that says so.
"""


class PublicOps:
    """A namespace standing for one public op module; attributes resolve once bound.

    A resolved attribute is cached on the namespace, so a rule's ``M.reduce_sum`` costs one
    instance-dictionary lookup after its first use.
    """

    def __init__(self, name):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        # Reached only for attributes not yet cached in the instance dictionary.
        if attr.startswith("__"):
            raise AttributeError(attr)
        module = self.__dict__["_module"]
        if module is None:
            raise RuntimeError(
                f"Gradient rule used hybridtf.api.{self._name}.{attr} before hybridtf.api was "
                "loaded; import hybridtf (or hybridtf.api) before computing gradients.")
        value = getattr(module, attr)
        setattr(self, attr, value)
        return value

    def _bind(self, module):
        cached = [k for k in self.__dict__ if k not in ("_name", "_module")]
        for k in cached:
            del self.__dict__[k]
        self._module = module

    def __repr__(self):
        return f"<public ops {self._name}: {'bound' if self._module is not None else 'unbound'}>"


array_ops = PublicOps("array_ops")
check_ops = PublicOps("check_ops")
collective_ops = PublicOps("collective_ops")
control_flow_ops = PublicOps("control_flow_ops")
image_ops = PublicOps("image_ops")
linalg_ops = PublicOps("linalg_ops")
logging_ops = PublicOps("logging_ops")
manip_ops = PublicOps("manip_ops")
math_ops = PublicOps("math_ops")
nn_ops = PublicOps("nn_ops")
scatter_ops = PublicOps("scatter_ops")
segment_ops = PublicOps("segment_ops")
execute = PublicOps("execute")


def bind(**modules):
    """Binds each named namespace to its module (called by ``hybridtf.api`` as it loads)."""
    for name, module in modules.items():
        namespace = globals().get(name)
        if not isinstance(namespace, PublicOps):
            raise ValueError(f"No public-op namespace named {name!r}.")
        namespace._bind(module)
