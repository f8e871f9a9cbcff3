"""Structures of tensors: flatten a nest of lists/tuples/namedtuples/dicts and pack it back.

Dicts (any ``Mapping``) are flattened in sorted key order, as TF does, and rebuilt with the
user's key order and mapping type; anything else (None, strings, sets, arrays, tensors) is a
leaf.  ``tf.nest`` is this module with TF's signatures; inside hybridtf, ``map_structure`` and
``assert_same_structure`` compare shapes only unless asked to check types too.
"""
import collections
import collections.abc


def is_nested(value):
    """True for the sequences nest descends into: lists, tuples (namedtuples too) and mappings."""
    return isinstance(value, (list, tuple, collections.abc.Mapping))


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _items(value):
    if isinstance(value, collections.abc.Mapping):
        return [value[k] for k in _sorted_keys(value)]
    return list(value)


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        raise TypeError(f"nest only supports dicts with sortable keys (flattened in sorted key "
                        f"order); got keys {list(mapping)!r}.") from None


def flatten(structure, expand_composites=False):
    """The leaves of ``structure`` in a deterministic order (dicts by sorted key).

    ``expand_composites`` is accepted for TF compatibility: hybridtf has no composite tensors.
    """
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
        if isinstance(template, collections.defaultdict):
            return type(template)(template.default_factory, result)
        try:
            return type(template)(result)
        except TypeError:
            return result
    if _is_namedtuple(template):
        return type(template)(*children)
    if isinstance(template, tuple):
        return tuple(children)
    return list(children)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """Packs the leaves in ``flat_sequence`` into the shape of ``structure`` (the inverse of
    ``flatten``)."""
    if isinstance(flat_sequence, (str, bytes)) or not isinstance(flat_sequence,
                                                                 collections.abc.Iterable):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence!r}\ninto a structure, but "
                        f"found incompatible type `{type(flat_sequence)}` instead.")
    flat_sequence = list(flat_sequence)
    if not is_nested(structure):
        if len(flat_sequence) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  "
                             f"{structure!r}\nHowever the input is a sequence of length "
                             f"{len(flat_sequence)}.\n  {flat_sequence!r}\nnest cannot "
                             "guarantee that it is safe to map one to the other.")
        return flat_sequence[0]
    count = len(flatten(structure))
    if count != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {count} atoms, but "
                         f"flat_sequence had {len(flat_sequence)} items.  Structure: "
                         f"{structure!r}, flat_sequence: {flat_sequence!r}.")
    packed, _ = _pack(structure, flat_sequence, 0)
    return packed


def _pack(structure, flat, index):
    children = []
    for item in _items(structure):
        if is_nested(item):
            child, index = _pack(item, flat, index)
        else:
            child, index = flat[index], index + 1
        children.append(child)
    return _rebuild(structure, children), index


def map_structure(func, *structures, check_types=False, expand_composites=False):
    """Applies ``func`` to corresponding leaves of ``structures``, which must have the same
    nested structure (and, with ``check_types``, the same sequence types); the result has the
    structure of the first."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func!r}")
    if not structures:
        raise ValueError("Must provide at least one structure")
    for other in structures[1:]:
        assert_same_structure(structures[0], other, check_types=check_types)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])


class _Leaf:
    """Stands for a leaf when a structure is shown in an error message."""

    def __repr__(self):
        return "."


def _skeleton(structure):
    return repr(pack_sequence_as(structure, [_Leaf()] * len(flatten(structure))))


def _describe(value):
    return f"type={type(value).__name__} str={value!r}"


def _same_sequence_type(a, b):
    if isinstance(a, collections.abc.Mapping) and isinstance(b, collections.abc.Mapping):
        return True   # any two mappings with the same keys, as TF
    if _is_namedtuple(a) and _is_namedtuple(b):
        # Two namedtuple classes of the same name and fields count as the same, as in TF.
        return type(a) is type(b) or (type(a).__name__ == type(b).__name__
                                      and a._fields == b._fields)
    return type(a) is type(b)


def _mismatch(a, b, check_types):
    """(error type, what differs) for the first difference between ``a`` and ``b``, or None."""
    if is_nested(a) != is_nested(b):
        seq, leaf = (a, b) if is_nested(a) else (b, a)
        return ValueError, (f'Substructure "{_describe(seq)}" is a sequence, while substructure '
                            f'"{_describe(leaf)}" is not')
    if not is_nested(a):
        return None
    if check_types and not _same_sequence_type(a, b):
        return TypeError, (f"The two structures don't have the same sequence type. First "
                           f"structure {_describe(a)} has type {type(a).__name__}, while second "
                           f"structure {_describe(b)} has type {type(b).__name__}")
    if isinstance(a, collections.abc.Mapping) and isinstance(b, collections.abc.Mapping):
        if _sorted_keys(a) != _sorted_keys(b):
            return ValueError, (f"The two dictionaries don't have the same set of keys. First "
                                f"structure has keys {_sorted_keys(a)!r}, while second structure "
                                f"has keys {_sorted_keys(b)!r}")
    ia, ib = _items(a), _items(b)
    if len(ia) != len(ib):
        return ValueError, (f"The two structures don't have the same number of elements. First "
                            f"structure: {_describe(a)}. Second structure: {_describe(b)}")
    for x, y in zip(ia, ib):
        found = _mismatch(x, y, check_types)
        if found is not None:
            return found
    return None


def assert_same_structure(nest1, nest2, check_types=False, expand_composites=False):
    """Raises ValueError if the two structures nest differently (a sequence where the other has
    a leaf, different lengths, different dict keys), and with ``check_types`` a TypeError if
    their sequence types differ (a list against a tuple, two different namedtuples)."""
    found = _mismatch(nest1, nest2, check_types)
    if found is None:
        return
    error, detail = found
    raise error(f"The two structures don't have the same nested structure.\n\n"
                f"First structure: {_describe(nest1)}\n\nSecond structure: {_describe(nest2)}\n\n"
                f"More specifically: {detail}\nEntire first structure:\n{_skeleton(nest1)}\n"
                f"Entire second structure:\n{_skeleton(nest2)}")
