"""Keras 3's HDF5 weights layout: ``model.weights.h5`` files that Keras reads, and reading
the ones Keras writes.

Keras 3 stores each layer's *own* variables (trainable ones first, then non-trainable ones,
each in creation order) as datasets ``0``, ``1``, ... of a group ``<path>/vars``, where
``<path>`` says how the layer is reached from the model:

* a Sequential or functional model lists its layers under ``layers/``;
* other layers and subclassed models are walked attribute by attribute, in sorted order with
  ``_private`` names last; a model's ``layers`` (its direct layers) and ``optimizer`` are
  attributes too;
* a layer in a list, tuple or dict (values) is named after its class in snake case, made
  unique within the container (``dense``, ``dense_1``, ...; a nested container is
  ``container``, ``container_1``, ...);
* a layer reached a second time is stored only where it was reached first.

The model itself is the root (its own variables under ``vars``); a compiled model's
optimizer is ``optimizer/vars`` (``iterations``, the learning rate, then the slots).  Each
``vars`` group carries the object's name as its ``name`` attribute.  hybridtf walks its models
the same way, so the same architecture finds the same paths in either framework.  A
``tf.Module`` that is not a layer (which Keras has no counterpart for) is walked like a layer,
its own variables being those held directly in its attributes.
"""
import io
import re
import warnings

import h5py
import numpy as np

from hybridtf.keras.layers.base_layer import _NOT_TRACKED, Layer
from hybridtf.keras.models import Model, Sequential
from hybridtf.keras.optimizers.optimizer import Optimizer
from hybridtf.module import Module
from hybridtf.saved_model.array_file import UnreadableFileError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"

# Instance attributes in which hybridtf's models keep their layers for ``layers``: walked as
# ``layers``, as Keras does, not under these names.
_LAYER_STORAGE = frozenset(("_self_tracked_layers", "_functional_layers"))


# ---- the walk ------------------------------------------------------------------------------------
def _keras_snake_case(class_name):
    """Keras 3's snake case of a class name (``BatchNormalization`` -> ``batch_normalization``,
    ``Conv2D`` -> ``conv2d``)."""
    name = re.sub(r"\W+", "", class_name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _class_name(obj):
    if type(obj) is Model and obj._is_graph_network:
        return "Functional"       # Keras's class for ``keras.Model(inputs, outputs)``
    return type(obj).__name__


def _is_saveable(value):
    return isinstance(value, (Module, Optimizer))


def _sort_key(name):
    return ("~" + name) if name.startswith("_") else name     # private names last, as Keras


def _user_properties(obj):
    """Properties defined by the user's own classes (not hybridtf's): Keras walks them too."""
    names = set()
    for cls in type(obj).__mro__:
        if cls.__module__.startswith("hybridtf.") or cls is object:
            continue
        names.update(name for name, value in vars(cls).items() if isinstance(value, property))
    return names


def _children(obj):
    """``(attribute, value)`` pairs in the order Keras 3 visits them."""
    if isinstance(obj, Model) and (isinstance(obj, Sequential) or obj._is_graph_network):
        yield "layers", obj.layers
    if not isinstance(obj, Module):
        return
    names = {name for name in vars(obj)
             if name not in _NOT_TRACKED and name not in _LAYER_STORAGE}
    names |= _user_properties(obj)
    if isinstance(obj, Model):
        names.add("layers")
        if isinstance(obj.__dict__.get("optimizer"), Optimizer):
            names.add("optimizer")
    for name in sorted(names, key=_sort_key):
        value = obj.__dict__["optimizer"] if name == "optimizer" else getattr(obj, name, None)
        yield name, value


def _own_variables(obj):
    if isinstance(obj, Layer):
        return list(obj._trainable_weights) + list(obj._non_trainable_weights)
    if isinstance(obj, Optimizer):
        return list(obj.variables)
    if isinstance(obj, Module):
        own = []
        for name in sorted(vars(obj)):
            value = vars(obj)[name]
            if getattr(value, "_is_variable", False):
                own.append(value)
            elif isinstance(value, (list, tuple, dict)):
                own.extend(v for v in _container_items(value) if getattr(v, "_is_variable", False))
        return own
    return list(obj)        # a plain list of weights, for objects that only have ``weights``


def _container_items(container):
    return list(container.values()) if isinstance(container, dict) else list(container)


def entries(root, weights):
    """``[(path, object, own variables)]`` for every object holding weights in ``root``, at
    the paths Keras 3 uses (the root's path is ``""``).

    ``weights`` (all of ``root``'s weights) is checked to be covered, so that a weight held
    in a way the walk does not reach is an error rather than silently left out.
    """
    found, visited = [], set()

    def visit(obj, path):
        if id(obj) in visited:
            return
        visited.add(id(obj))
        found.append((path, obj, _own_variables(obj)))
        for name, value in _children(obj):
            child_path = f"{path}/{name}" if path else name
            if _is_saveable(value):
                visit(value, child_path)
            elif isinstance(value, (list, tuple, dict)):
                visit_container(value, child_path, set())

    def visit_container(container, path, seen_containers):
        if id(container) in seen_containers:
            return
        seen_containers.add(id(container))
        used = {}
        for item in _container_items(container):
            if _is_saveable(item):
                visit(item, f"{path}/{_unique(_keras_snake_case(_class_name(item)), used)}")
            elif isinstance(item, (list, tuple, dict)):
                visit_container(item, f"{path}/{_unique('container', used)}", seen_containers)

    if _is_saveable(root):
        visit(root, "")
    else:
        found.append(("", root, list(weights)))
    covered = {id(v) for _, _, own in found for v in own}
    missing = [getattr(w, "name", "?") for w in weights if id(w) not in covered]
    if missing:
        raise ValueError(f"save_weights: the weights {missing} of {_name(root)} are not held "
                         "by a layer or module attribute, so they cannot be placed in the "
                         "Keras weights layout; save to a name without '.h5' instead.")
    return found


def _unique(name, used):
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


def _name(obj):
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) else type(obj).__name__


def _group_path(path):
    return f"{path}/vars" if path else "vars"


# ---- writing -------------------------------------------------------------------------------------
def write(root, weights, file):
    """Writes the weights of ``root`` (a model, layer or module; ``weights`` are all of them)
    to ``file`` (a path or a binary file object open for reading and writing) in Keras 3's
    layout."""
    arrays = []
    for path, obj, own in entries(root, weights):
        values = []
        for variable in own:
            value = np.asarray(variable.numpy())
            if value.dtype.hasobject:
                raise TypeError(f"save_weights: weight {getattr(variable, 'name', '?')!r} of "
                                f"{_name(obj)} has dtype {variable.dtype.name}, which cannot "
                                "be saved; only numeric and boolean weights can.")
            values.append(value)
        arrays.append((path, obj, values))
    with h5py.File(file, "w") as f:
        for path, obj, values in arrays:
            group = f.create_group(_group_path(path))
            group.attrs["name"] = _name(obj)
            for i, value in enumerate(values):
                # A checksum per chunk, so that damaged data is an error rather than silently
                # different weights (HDF5 applies it when Keras reads the file too).  Scalars
                # and empty arrays cannot be chunked.
                checked = value.ndim > 0 and value.size > 0
                group.create_dataset(str(i), data=value, fletcher32=checked,
                                     chunks=value.shape if checked else None)


# ---- reading -------------------------------------------------------------------------------------
def stored_optimizer_size(data):
    """How many optimizer variables the weights file ``data`` (bytes) holds: 0 when it holds
    none or is not in this layout."""
    if not data.startswith(HDF5_MAGIC):
        return 0
    try:
        with h5py.File(io.BytesIO(data), "r") as f:
            group = f.get("optimizer/vars")
            return len(group) if isinstance(group, h5py.Group) else 0
    except OSError:
        return 0        # damaged: reading the weights reports it, naming the file


def read_into(root, weights, file, display_path, who="load_weights"):
    """Loads a Keras 3 layout file into ``root``: checks every layer's variables against the
    file first, then assigns them all (nothing is assigned when one does not match).

    ``file``: a path or a binary file object; ``display_path`` names it in errors.  A
    compiled model's optimizer state is loaded when the file holds one of the same size, and
    skipped with a warning (as Keras does) when it does not.
    """
    if isinstance(root, Layer) and not root.built:
        raise ValueError(f"{who}: {_name(root)!r} has no weights yet: build it (call it on "
                         "data, or call build()) before loading weights into it.")
    try:
        with h5py.File(file, "r") as f:
            assignments, optimizer_state = _read_all(f, root, weights, display_path, who)
    except OSError as err:
        raise UnreadableFileError(display_path, f"{who}: the weights file {display_path!r} is "
                                  f"truncated or corrupted and cannot be read ({err}). Save "
                                  "the weights again, or restore the file from a copy.") from None
    for variable, value in assignments:
        variable.assign(value)
    if optimizer_state is not None:
        optimizer, values = optimizer_state
        optimizer.set_weights(values)


def _read_all(f, root, weights, display_path, who):
    if "layer_names" in f.attrs:
        raise UnreadableFileError(
            display_path, f"{who}: {display_path!r} is a Keras 2 (legacy) HDF5 weights file; "
            "hybridtf reads the Keras 3 layout. Load it with Keras 2 and save it again with "
            "Keras 3 or hybridtf.")
    if not isinstance(f.get("vars"), h5py.Group):
        raise UnreadableFileError(
            display_path, f"{who}: {display_path!r} is an HDF5 file but not a Keras weights "
            "file (it has no 'vars' group).")
    assignments, optimizer_state = [], None
    for path, obj, own in entries(root, weights):
        stored = _stored_values(f, path, display_path, who)
        if isinstance(obj, Optimizer):
            optimizer_state = _optimizer_state(obj, own, stored, display_path)
            continue
        if len(stored) != len(own):
            raise ValueError(
                f"{who}: {_describe(obj, path)} has {len(own)} variables "
                f"{[_short(v) for v in own]}, but the weights file {display_path!r} holds "
                f"{len(stored)} at {_group_path(path)!r}.{_hint(own, path)}")
        for i, (variable, value) in enumerate(zip(own, stored)):
            assignments.append((variable, _checked(variable, value, i, obj, path,
                                                   display_path, who)))
    return assignments, optimizer_state


def _stored_values(f, path, display_path, who):
    group = f.get(_group_path(path))
    if group is None:
        return []
    if not isinstance(group, h5py.Group):
        raise UnreadableFileError(display_path, f"{who}: {display_path!r} is not a Keras "
                                  f"weights file: {_group_path(path)!r} is not a group.")
    values = []
    for i in range(len(group)):
        dataset = group.get(str(i))
        if not isinstance(dataset, h5py.Dataset):
            raise UnreadableFileError(
                display_path, f"{who}: the weights file {display_path!r} is damaged: "
                f"{_group_path(path)!r} has no dataset {str(i)!r}. Save the weights again.")
        if dataset.attrs.get("dtype") == "bfloat16":
            raise UnreadableFileError(
                display_path, f"{who}: {display_path!r} holds a bfloat16 weight at "
                f"{_group_path(path)}/{i}; hybridtf has no bfloat16 dtype. Save the model "
                "with float32 weights.")
        values.append(np.asarray(dataset[()]))
    return values


def _checked(variable, value, index, obj, path, display_path, who):
    if not variable.shape.is_compatible_with(value.shape):
        raise ValueError(f"{who}: variable #{index} {_short(variable)!r} of "
                         f"{_describe(obj, path)} has shape {tuple(variable.shape.as_list())} "
                         f"but the weights file {display_path!r} holds shape "
                         f"{tuple(value.shape)} at {_group_path(path)}/{index}.")
    target = np.dtype(variable.dtype.as_numpy_dtype)
    if value.dtype != target and not np.can_cast(value.dtype, target, "same_kind"):
        raise ValueError(f"{who}: variable #{index} {_short(variable)!r} of "
                         f"{_describe(obj, path)} has dtype {variable.dtype.name} but the "
                         f"weights file {display_path!r} holds {value.dtype.name} at "
                         f"{_group_path(path)}/{index}.")
    return value.astype(target, copy=False)


def _optimizer_state(optimizer, own, stored, display_path):
    if not stored:
        return None
    if len(stored) != len(own) or any(tuple(v.shape.as_list()) != tuple(s.shape)
                                      for v, s in zip(own, stored)):
        warnings.warn(f"Skipping variable loading for optimizer '{optimizer.name}', because it "
                      f"has {len(own)} variables whereas the saved optimizer in "
                      f"{display_path!r} has {len(stored)} variables (build the optimizer on "
                      "the model's variables first to load its state).", stacklevel=4)
        return None
    return optimizer, stored


def _describe(obj, path):
    kind = "optimizer" if isinstance(obj, Optimizer) else "layer"
    where = f" (at {path!r})" if path else ""
    return f"{kind} {_name(obj)!r}{where}"


def _short(variable):
    return getattr(variable, "name", "?").split(":")[0].rsplit("/", 1)[-1]


def _hint(own, path):
    if not own:
        return (" It has no weights yet: build the model (call it on data, or call build()) "
                "before loading.")
    return " The file was saved from a model with a different structure."
