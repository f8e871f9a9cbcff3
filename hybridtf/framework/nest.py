"""Structures of tensors: flatten a nest of lists/tuples/namedtuples/dicts and pack it back.

Dicts are flattened in sorted key order, as TF does; anything else (None included) is a leaf.
"""
import collections.abc


def is_nested(value):
    return isinstance(value, (list, tuple, dict)) or (
        isinstance(value, collections.abc.Mapping))


def _items(value):
    if isinstance(value, collections.abc.Mapping):
        return [value[k] for k in _sorted_keys(value)]
    return list(value)


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=repr)


def flatten(structure):
    """The leaves of ``structure`` in a deterministic order."""
    if not is_nested(structure):
        return [structure]
    out = []
    _flatten_into(structure, out)
    return out


def _flatten_into(structure, out):
    for item in _items(structure):
        if is_nested(item):
            _flatten_into(item, out)
        else:
            out.append(item)


def _rebuild(template, children):
    if isinstance(template, collections.abc.Mapping):
        keys = _sorted_keys(template)
        values = dict(zip(keys, children))
        # Keep the user's key order and mapping type where we can.
        result = {k: values[k] for k in template}
        try:
            return type(template)(result)
        except TypeError:
            return result
    if isinstance(template, tuple) and hasattr(template, "_fields"):  # namedtuple
        return type(template)(*children)
    if isinstance(template, tuple):
        return tuple(children)
    return list(children)


def pack_sequence_as(structure, flat_sequence):
    """Packs ``flat_sequence`` into the shape of ``structure``."""
    flat_sequence = list(flat_sequence)
    if not is_nested(structure):
        if len(flat_sequence) != 1:
            raise ValueError(f"Structure is a single leaf but got {len(flat_sequence)} values.")
        return flat_sequence[0]
    packed, used = _pack(structure, flat_sequence, 0)
    if used != len(flat_sequence):
        raise ValueError(f"Structure has {used} leaves but got {len(flat_sequence)} values.")
    return packed


def _pack(structure, flat, index):
    children = []
    for item in _items(structure):
        if is_nested(item):
            child, index = _pack(item, flat, index)
        else:
            if index >= len(flat):
                raise ValueError("Too few values to pack into the structure.")
            child, index = flat[index], index + 1
        children.append(child)
    return _rebuild(structure, children), index


def map_structure(func, *structures):
    """Applies ``func`` to corresponding leaves; all structures must match."""
    if not structures:
        raise ValueError("map_structure needs at least one structure.")
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])


def assert_same_structure(a, b):
    if is_nested(a) != is_nested(b):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} vs {b!r}.")
    if not is_nested(a):
        return
    ia, ib = _items(a), _items(b)
    if len(ia) != len(ib) or (isinstance(a, collections.abc.Mapping)
                              and _sorted_keys(a) != _sorted_keys(b)):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} vs {b!r}.")
    for x, y in zip(ia, ib):
        assert_same_structure(x, y)
