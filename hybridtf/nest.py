"""``tf.nest``: flatten, pack and map nested structures of lists, tuples, namedtuples and dicts.

Dicts are flattened in sorted key order (their keys must be sortable) and rebuilt with their
own key order and type; any other object is a leaf.  ``check_types`` (default True, as in TF)
also requires matching sequence types: a list does not match a tuple, nor one namedtuple class
another (two classes of the same name and fields do match); any two mappings match.
``expand_composites`` is accepted for compatibility: hybridtf has no composite tensors.
"""
from hybridtf.framework import nest as _nest
from hybridtf.framework.nest import flatten, is_nested, pack_sequence_as  # noqa: F401


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError if ``nest1`` and ``nest2`` nest differently, and TypeError if
    ``check_types`` and their sequence types differ."""
    _nest.assert_same_structure(nest1, nest2, check_types=check_types)


def map_structure(func, *structure, **kwargs):
    """``func`` applied to the corresponding leaves of every structure, packed in the structure
    of the first.  Keyword arguments: ``check_types`` (default True), ``expand_composites``."""
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError("Only valid keyword arguments are `check_types` and "
                         f"`expand_composites`, not: `{'`, `'.join(kwargs)}`")
    return _nest.map_structure(func, *structure, check_types=check_types)
