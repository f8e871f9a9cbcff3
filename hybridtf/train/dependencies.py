"""The object graph a checkpoint saves: which objects depend on which, under what names.

The rules are TF 2's:

* a variable is a leaf holding one value;
* a ``tf.Module`` depends on its attributes, in the order they were first assigned;
* a list or tuple on its items (named ``"0"``, ``"1"``, ... by position), a dict on its values
  (named by their keys, which must be strings);
* a Keras layer or model on its attributes (Keras's bookkeeping left out) and on weights that
  no attribute holds (named after the weight); as in Keras 3, a Sequential model holds its
  layers under ``_functional/_operations/<i>`` and a functional model under
  ``_operations/<i>``, ``i`` counting the input layer as 0; a compiled model also depends on
  its ``optimizer``;
* a Keras optimizer on ``_iterations``, ``_learning_rate`` (when it is a variable),
  ``_variables/<i>`` (all its variables in creation order, so slot ``i`` is the ``i``-th made)
  and ``_trainable_variables/<i>`` (the variables it updates), as Keras 3's do.

Only trackable values count: variables, modules, optimizers, checkpoints, and containers holding
any of them.  Each object is saved once; its checkpoint key is its first path from the root in
breadth-first order, the names joined by ``/`` (``.`` written ``..`` and ``/`` written ``.S``),
and a variable's value is stored under ``<path>/.ATTRIBUTES/VARIABLE_VALUE``.
"""
from hybridtf.keras.layers.base_layer import _NOT_TRACKED, Layer
from hybridtf.keras.layers.input_layer import InputLayer
from hybridtf.keras.models import Model, Sequential
from hybridtf.keras.optimizers.optimizer import Optimizer
from hybridtf.module import Module

VALUE_SUFFIX = ".ATTRIBUTES/VARIABLE_VALUE"
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"

# Where hybridtf's models keep their layers; saved under Keras 3's names instead.
_LAYER_STORAGE = frozenset(("_self_tracked_layers", "_functional_layers"))


def is_variable(value):
    return getattr(value, "_is_variable", False)


def _is_object(value):
    return isinstance(value, (Module, Optimizer)) or hasattr(type(value),
                                                             "_checkpoint_dependencies")


def is_trackable(value, _seen=None):
    """Whether a checkpoint saves ``value``: a variable, a module, an optimizer, a checkpoint,
    or a list, tuple or dict holding one of them."""
    if is_variable(value) or _is_object(value):
        return True
    if isinstance(value, (list, tuple, dict)):
        seen = _seen if _seen is not None else set()
        if id(value) in seen:
            return False
        seen.add(id(value))
        items = value.values() if isinstance(value, dict) else value
        return any(is_trackable(item, seen) for item in items)
    return False


def is_persistent(value):
    """Variables and objects: what a restoration matches by identity and can wait on.  Lists,
    dicts and the views below are only the way to them."""
    return is_variable(value) or (_is_object(value) and not isinstance(value, _View))


class _View:
    """A node of Keras 3's layout that hybridtf's objects have no attribute for."""

    def __init__(self, dependencies):
        self._dependencies = dependencies

    def _checkpoint_dependencies(self):
        return self._dependencies


def dependencies(obj):
    """``[(name, child)]``: the trackable objects ``obj`` depends on, in order."""
    if is_variable(obj):
        return []
    if isinstance(obj, dict):
        return _dict_items(obj)
    if isinstance(obj, (list, tuple)):
        return [(str(i), item) for i, item in enumerate(obj) if is_trackable(item)]
    own = getattr(type(obj), "_checkpoint_dependencies", None)
    if own is not None:
        return [(name, value) for name, value in own(obj) if is_trackable(value)]
    if isinstance(obj, Optimizer):
        return _optimizer_dependencies(obj)
    if isinstance(obj, Layer):
        return _layer_dependencies(obj)
    if isinstance(obj, Module):
        ignored = getattr(obj, "_TF_MODULE_IGNORED_PROPERTIES", ())
        return [(name, value) for name, value in vars(obj).items()
                if name not in ignored and is_trackable(value)]
    return []


def _dict_items(mapping):
    items = []
    for key, value in mapping.items():
        if not is_trackable(value):
            continue
        if not isinstance(key, str):
            raise ValueError(f"Unable to save the object {mapping!r}: the dictionary contains "
                             f"the non-string key {key!r}, which maps to a trackable object. "
                             "A checkpoint names each value by its key; use string keys.")
        items.append((key, value))
    return items


def _optimizer_dependencies(optimizer):
    found = [("_iterations", optimizer.iterations)]
    rate = optimizer._learning_rate
    if is_variable(rate):
        found.append(("_learning_rate", rate))
    found.append(("_variables", list(optimizer.variables)))
    found.append(("_trainable_variables", list(optimizer._trained.values())))
    return [(name, value) for name, value in found if is_trackable(value)]


def _layer_dependencies(layer):
    found = []
    held = set()
    for name, value in vars(layer).items():
        if name in _NOT_TRACKED or name in _LAYER_STORAGE or not is_trackable(value):
            continue
        found.append((name, value))
        held.update(id(leaf) for leaf in _leaves(value))
    names = {name for name, _ in found}
    # Weights made with add_weight but kept in no attribute: named after the weight.
    for weight in layer._trainable_weights + layer._non_trainable_weights:
        if id(weight) not in held:
            held.add(id(weight))
            name = _unique(weight.name.split(":")[0].split("/")[-1], names)
            found.append((name, weight))
    if isinstance(layer, Sequential):
        operations = list(layer._self_tracked_layers)
        if not operations or not isinstance(operations[0], InputLayer):
            operations.insert(0, None)    # Keras 3 numbers the input layer 0, made or not
        found.append(("_functional", _View([("_operations", operations)])))
    elif isinstance(layer, Model) and layer._is_graph_network:
        found.append(("_operations", list(layer._functional_layers)))
    if isinstance(layer, Model) and isinstance(vars(layer).get("optimizer"), Optimizer):
        found.append(("optimizer", layer.optimizer))
    return found


def _leaves(value, seen=None):
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    yield value
    if isinstance(value, (list, tuple, dict)):
        for item in (value.values() if isinstance(value, dict) else value):
            yield from _leaves(item, seen)


def _unique(name, used):
    candidate, n = name, 1
    while candidate in used:
        candidate, n = f"{name}_{n}", n + 1
    used.add(candidate)
    return candidate


# ---- the graph of one save --------------------------------------------------------------------
def escape(name):
    """A dependency's name as it appears in checkpoint keys."""
    return name.replace(".", "..").replace("/", ".S")


def path_key(path):
    """The checkpoint key of an object reached by the names ``path``."""
    return "/".join(escape(name) for name in path)


def value_key(path):
    """The checkpoint key of the value of the variable reached by ``path``."""
    return f"{path_key(path)}/{VALUE_SUFFIX}" if path else VALUE_SUFFIX


def pretty_path(path):
    """``(root).model.dense.kernel``: how TF names an object in messages."""
    return ".".join(("(root)",) + tuple(path))


class ObjectGraph:
    """The objects reachable from ``root``, in breadth-first order (``objects[0]`` is root).

    ``children[i]`` lists ``(name, node index)`` of object ``i``'s dependencies; ``paths[i]``
    is the first path that reached it.  Each object is one node, however many paths lead to
    it.
    """

    def __init__(self, root):
        self.objects = [root]
        self.children = []
        self.paths = [()]
        index = {id(root): 0}
        position = 0
        while position < len(self.objects):      # the list is the breadth-first queue
            obj = self.objects[position]
            entries = []
            for name, child in dependencies(obj):
                node = index.get(id(child))
                if node is None:
                    node = index[id(child)] = len(self.objects)
                    self.objects.append(child)    # also keeps ids unique while we walk
                    self.paths.append(self.paths[position] + (name,))
                entries.append((name, node))
            self.children.append(entries)
            position += 1

    def variable_nodes(self):
        """The node indices of the variables, in node order."""
        return [i for i, obj in enumerate(self.objects) if is_variable(obj)]

    def description(self):
        """The JSON-able graph a checkpoint stores: per node its children and, for a variable,
        the key of its value."""
        nodes = []
        for i, obj in enumerate(self.objects):
            node = {"children": [[name, child] for name, child in self.children[i]]}
            if is_variable(obj):
                node["key"] = value_key(self.paths[i])
            nodes.append(node)
        return nodes
