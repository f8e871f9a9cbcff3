"""``tf.Module``: a named container that finds the variables and submodules it holds.

Variables and modules are found by walking the instance's attributes (and the lists, tuples
and dicts in them) in sorted attribute order: a module's own leaves first, then its submodules'
leaves, depth first, each object once -- the order TF 2 uses.
"""
import functools
import re

from hybridtf.framework import deferred_restoration, nest
from hybridtf.framework.name_scope import name_scope as _name_scope

_VALID_IDENTIFIER = re.compile(r"^[a-zA-Z_]([a-zA-Z0-9_])*$")


# An underscore goes before a capital that follows a lowercase letter or digit, or that starts
# a capitalised word (not at the start).
_WORD_START = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")


def camel_to_snake(name):
    """``"DemoModule"`` -> ``"demo_module"``, ``"MyMLP2Layer"`` -> ``"my_mlp2_layer"``."""
    return _WORD_START.sub(r"_\1", name).lower()


def _is_variable(obj):
    return getattr(obj, "_is_variable", False)


class Module:
    """Base class for objects that own variables and other modules (``tf.Module``).

    ``name`` defaults to the class name in snake case and must be a Python identifier.
    ``with self.name_scope:`` prefixes the names of variables created inside with the module's
    scope, e.g. ``demo_module/Variable:0``.
    """

    # Attributes the walk skips (subclasses add to this).
    _TF_MODULE_IGNORED_PROPERTIES = frozenset(("_self_unconditional_checkpoint_dependencies",
                                               "_self_unconditional_dependency_names"))

    def __init__(self, name=None):
        if name is None:
            name = camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _VALID_IDENTIFIER.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid "
                             "Python identifiers (e.g. a valid class name).")
        self._name = name
        with _name_scope(name) as scope_name:
            self._scope_name = scope_name
        self._module_name_scope = _name_scope(self._scope_name)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        deferred_restoration.dependencies_added(self)    # checkpoint values waiting for it

    @property
    def name(self):
        """The module's name, as given or derived from the class name."""
        return self._name

    @property
    def name_scope(self):
        """A ``tf.name_scope`` for this module: ``with self.name_scope:`` enters it."""
        return self._module_name_scope

    @property
    def variables(self):
        """Every variable owned by this module and its submodules, each once."""
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self):
        """The trainable variables owned by this module and its submodules."""
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and v.trainable))

    @property
    def non_trainable_variables(self):
        """The variables of this module and its submodules that are not trainable."""
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and not v.trainable))

    @property
    def submodules(self):
        """Every module held by this module, directly or through other modules, each once."""
        return tuple(self._flatten(predicate=lambda m: isinstance(m, Module)))

    def _flatten(self, recursive=True, predicate=None):
        """The objects held by this module (and, if recursive, by its submodules) that match."""
        predicate = predicate or (lambda _: True)
        return _walk(self, recursive, predicate, seen={id(self)}, stack=[])

    @classmethod
    def with_name_scope(cls, method):
        """Decorates a method so that it runs inside the module's name scope."""
        @functools.wraps(method)
        def method_with_name_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return method_with_name_scope

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at {hex(id(self))}>"


def _walk(module, recursive, predicate, seen, stack):
    submodules = []
    attributes = vars(module)
    ignored = getattr(module, "_TF_MODULE_IGNORED_PROPERTIES", ())
    for key in sorted(attributes):
        if key in ignored:
            continue
        for leaf in nest.flatten(attributes[key]):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                yield leaf
            if recursive and isinstance(leaf, Module):
                submodules.append(leaf)
    if id(module) in stack:  # a cycle: stop descending
        return
    stack.append(id(module))
    for submodule in submodules:
        yield from _walk(submodule, recursive, predicate, seen, stack)
    stack.pop()
