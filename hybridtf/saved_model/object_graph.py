"""The object graph of a SavedModel: which objects, variables and functions an object holds.

Starting from the saved object, attributes are walked (and the lists, tuples and dicts in them)
the way ``tf.Module`` finds its variables: tf.Modules and Keras objects (layers, optimizers,
metrics) are descended into, variables and ``tf.function`` s are leaves, and
anything holding none of them is left out.  Decorated methods are found on the class and bound
to the instance, so each object's own traces are saved.  Each object is saved once; a second
path to it refers to the same node.
"""
import inspect

from hybridtf.polymorphic_function import ConcreteFunction, Function
from hybridtf.module import Module, camel_to_snake
from hybridtf.saved_model.restored_function import RestoredFunction


def is_variable(value):
    return getattr(value, "_is_variable", False)


class ObjectGraph:
    """``nodes``: JSON-able descriptions, root first; ``variables``: the tracked variables in
    node order; ``functions``: ``(name, [ConcreteFunction])`` per tf.function found."""

    def __init__(self, root):
        self.nodes = []
        self.variables = []
        self.functions = []
        self._root = root
        self._memo = {}         # id(object) -> node index
        self._open = set()      # node indices being filled (an object reached again is a cycle)
        self._cyclic = set()    # node indices reached through a cycle: never dropped
        self._keep = []         # keeps visited objects alive so ids stay unique
        if self._visit(root) is None:
            raise TypeError("tf.saved_model.save: the object to save has nothing to save")

    # ---- walking ----------------------------------------------------------------------------
    def _visit(self, obj):
        found = self._memo.get(id(obj))
        if found is not None:
            if found in self._open:
                self._cyclic.add(found)
            return found
        if is_variable(obj):
            self.variables.append(obj)
            return self._add(obj, {"kind": "variable", "variable": len(self.variables) - 1})
        if isinstance(obj, (Function, ConcreteFunction, RestoredFunction)):
            self.functions.append((_function_name(obj), obj))
            return self._add(obj, {"kind": "function", "function": len(self.functions) - 1})
        if isinstance(obj, (list, tuple, dict)):
            return self._container(obj)
        if obj is self._root or self._descends_into(obj):
            return self._object(obj)
        return None

    def _add(self, obj, node):
        index = len(self.nodes)
        self.nodes.append(node)
        self._memo[id(obj)] = index
        self._keep.append(obj)
        return index

    def _reserve(self, obj):
        index = self._add(obj, None)
        self._open.add(index)
        return index

    def _finish(self, obj, index, node, keep):
        self._open.discard(index)
        if keep or index in self._cyclic or obj is self._root:
            self.nodes[index] = node
            return index
        # Nothing to save below this object: it is the last node added (its children added
        # none, or it would be kept), so it can simply be removed.
        del self._memo[id(obj)]
        self.nodes.pop()
        return None

    def _container(self, obj):
        index = self._reserve(obj)
        if isinstance(obj, dict):
            items = []
            for key, value in obj.items():
                if not isinstance(key, str):
                    continue
                child = self._visit(value)
                if child is not None:
                    items.append([key, child])
            node = {"kind": "dict", "items": items}
        else:
            children = [self._visit(v) for v in obj]
            items = [c for c in children if c is not None]
            node = {"kind": "tuple" if isinstance(obj, tuple) else "list", "items": items}
        return self._finish(obj, index, node, bool(items))

    def _object(self, obj):
        index = self._reserve(obj)
        children = []
        for name, value in _attributes(obj):
            child = self._visit(value)
            if child is not None:
                children.append([name, child])
        node = {"kind": "object", "class": type(obj).__qualname__,
                "name": _object_name(obj), "children": children}
        return self._finish(obj, index, node, bool(children) or isinstance(obj, Module))

    @staticmethod
    def _descends_into(obj):
        if isinstance(obj, Module):
            return True
        if isinstance(obj, type) or inspect.isroutine(obj) or inspect.ismodule(obj):
            return False
        # Keras objects that are not tf.Modules (optimizers, metrics, ...) hold variables too;
        # other objects (tapes, graphs, arbitrary user state) are not part of a SavedModel.
        module = getattr(type(obj), "__module__", "") or ""
        return module.startswith("hybridtf.keras.") and hasattr(obj, "__dict__")


def _attributes(obj):
    """(name, value) of an object's instance attributes and its decorated methods (bound to
    it), sorted by name."""
    found = {}
    ignored = getattr(obj, "_TF_MODULE_IGNORED_PROPERTIES", ())
    for name, value in getattr(obj, "__dict__", {}).items():
        if name not in ignored:
            found[name] = value
    for klass in type(obj).__mro__:
        for name, value in vars(klass).items():
            if isinstance(value, Function) and name not in found:
                found[name] = getattr(obj, name)
    return sorted(found.items(), key=lambda item: item[0])


def _function_name(fn):
    return getattr(fn, "_name", None) or getattr(fn, "name", "function")


def _object_name(obj):
    # A tf.Module whose subclass skipped ``super().__init__()`` has no name (as in TF, where
    # it still saves): it is named after its class, like an unnamed module.
    name = obj.__dict__.get("_name") if isinstance(obj, Module) else None
    return name if isinstance(name, str) else camel_to_snake(type(obj).__name__)


def concrete_functions_of(fn):
    """Every trace of ``fn`` worth saving: those made so far, and for a function with an
    input_signature the trace of that signature (made now if it was never called)."""
    if isinstance(fn, ConcreteFunction):
        return [fn]
    if isinstance(fn, RestoredFunction):
        return fn.concrete_functions
    if fn.input_signature is not None:
        fn.get_concrete_function()
    found = {}
    for concrete in list(fn._cache.values()) + [c for _, c in fn._relaxed]:
        found.setdefault(id(concrete), concrete)
    return list(found.values())
