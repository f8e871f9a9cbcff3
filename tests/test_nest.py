"""tf.nest: flatten, pack_sequence_as, map_structure, assert_same_structure and is_nested, with
TF's ordering, rebuilding and errors (the expected values are TF 2.21's)."""
import collections
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hybridtf as tf

P = collections.namedtuple("P", "a b")
Q = collections.namedtuple("Q", "a b")

leaves = st.one_of(st.integers(), st.none(), st.text(max_size=3))
structures = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2), inner, max_size=3),
        st.tuples(inner, inner).map(lambda t: P(*t))),
    max_leaves=10)


@given(structures)
def test_pack_sequence_as_inverts_flatten(structure):
    flat = tf.nest.flatten(structure)
    assert tf.nest.pack_sequence_as(structure, flat) == structure
    tf.nest.assert_same_structure(structure, tf.nest.map_structure(lambda v: 0, structure))


@given(structures)
def test_map_structure_maps_every_leaf_in_place(structure):
    tagged = tf.nest.map_structure(lambda v: types.SimpleNamespace(leaf=v), structure)
    assert tf.nest.flatten(tagged) == [types.SimpleNamespace(leaf=v)
                                       for v in tf.nest.flatten(structure)]
    assert tf.nest.map_structure(lambda a, b: a.leaf, tagged, structure) == structure


def test_flatten_order_and_leaves():
    assert tf.nest.flatten({"b": 1, "a": [2, 3]}) == [2, 3, 1]
    assert tf.nest.flatten(collections.OrderedDict([("b", 1), ("a", 2)])) == [2, 1]
    assert tf.nest.flatten(types.MappingProxyType({"b": 1, "a": 2})) == [2, 1]
    assert tf.nest.flatten(None) == [None]
    assert tf.nest.flatten("abc") == ["abc"]
    assert tf.nest.flatten({1, 2}) == [{1, 2}]
    assert tf.nest.flatten([1], expand_composites=True) == [1]
    array = np.array([1, 2])
    assert tf.nest.flatten(array)[0] is array
    t = tf.constant([1, 2])
    assert tf.nest.flatten([t])[0] is t
    with pytest.raises(TypeError, match="sortable keys"):
        tf.nest.flatten({1: 1, "a": 2})


def test_is_nested():
    assert [tf.nest.is_nested(v) for v in ([], (), {}, P(1, 2))] == [True] * 4
    assert not any(tf.nest.is_nested(v) for v in ("a", None, np.zeros(2), {1}, tf.constant(1)))


def test_pack_sequence_as_rebuilds_types_and_key_order():
    packed = tf.nest.pack_sequence_as(collections.OrderedDict([("b", 1), ("a", 2)]), [10, 20])
    assert type(packed) is collections.OrderedDict
    assert list(packed.items()) == [("b", 20), ("a", 10)]
    packed = tf.nest.pack_sequence_as({"b": 1, "a": 2}, [10, 20])
    assert list(packed.items()) == [("b", 20), ("a", 10)]
    assert tf.nest.pack_sequence_as(P(1, [2, 3]), [4, 5, 6]) == P(4, [5, 6])
    template = collections.defaultdict(list, x=1)
    packed = tf.nest.pack_sequence_as(template, [7])
    assert type(packed) is collections.defaultdict and packed.default_factory is list
    assert packed == {"x": 7}


def test_pack_sequence_as_errors():
    with pytest.raises(ValueError, match="Structure had 2 atoms, but flat_sequence had 3 items"):
        tf.nest.pack_sequence_as([1, [2]], [1, 2, 3])
    with pytest.raises(ValueError, match="nest cannot guarantee that it is safe"):
        tf.nest.pack_sequence_as(1, [1, 2])
    with pytest.raises(TypeError, match="Attempted to pack value:\n  5\ninto a structure"):
        tf.nest.pack_sequence_as([1], 5)


def test_map_structure():
    assert tf.nest.map_structure(lambda x, y: x + y, (1, [2]), (3, [4])) == (4, [6])
    assert tf.nest.map_structure(lambda x: x * 2, {"b": 1, "a": 2}) == {"b": 2, "a": 4}
    assert tf.nest.map_structure(lambda x: x, []) == []
    with pytest.raises(TypeError, match="don't have the same sequence type"):
        tf.nest.map_structure(lambda x, y: x + y, (1, 2), [3, 4])
    assert tf.nest.map_structure(lambda x, y: x + y, (1, 2), [3, 4], check_types=False) == (4, 6)
    assert tf.nest.map_structure(lambda x, y: x + y, {"b": 1, "a": 2},
                                 collections.OrderedDict([("a", 1), ("b", 2)])) == \
        {"b": 3, "a": 3}
    with pytest.raises(ValueError, match="Only valid keyword arguments are `check_types` and "
                                         "`expand_composites`, not: `foo`"):
        tf.nest.map_structure(lambda x: x, (1, 2), foo=1)
    with pytest.raises(ValueError, match="Must provide at least one structure"):
        tf.nest.map_structure(lambda x: x)
    with pytest.raises(TypeError, match="func must be callable, got: 1"):
        tf.nest.map_structure(1, (1, 2))


def test_assert_same_structure_messages():
    with pytest.raises(ValueError) as info:
        tf.nest.assert_same_structure([1, [2]], [1, 2])
    assert str(info.value) == (
        "The two structures don't have the same nested structure.\n\n"
        "First structure: type=list str=[1, [2]]\n\nSecond structure: type=list str=[1, 2]\n\n"
        'More specifically: Substructure "type=list str=[2]" is a sequence, while substructure '
        '"type=int str=2" is not\nEntire first structure:\n[., [.]]\n'
        "Entire second structure:\n[., .]")
    with pytest.raises(ValueError, match="don't have the same number of elements"):
        tf.nest.assert_same_structure([[1, 2], [3]], [[1], [2, 3]])
    with pytest.raises(ValueError, match="don't have the same set of keys.*\\['a'\\].*\\['b'\\]"):
        tf.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(TypeError, match="Entire first structure:\nP\\(a=., b=.\\)"):
        tf.nest.assert_same_structure(P(1, 2), Q(1, 2))
    with pytest.raises(TypeError, match="sequence type"):
        tf.nest.assert_same_structure(P(1, 2), (1, 2))


def test_assert_same_structure_accepts():
    tf.nest.assert_same_structure(P(1, 2), (1, 2), check_types=False)
    tf.nest.assert_same_structure({"a": 1}, collections.OrderedDict(a=1))
    tf.nest.assert_same_structure(1, "a")   # two leaves
    Same = collections.namedtuple("P", "a b")   # another class of the same name and fields
    tf.nest.assert_same_structure(P(1, 2), Same(3, 4))
    tf.nest.assert_same_structure([1], [2], expand_composites=True)


def test_internal_callers_keep_shape_only_comparisons():
    # hybridtf's own uses (tf.function arguments, loop variables) compare shapes, not types.
    from hybridtf.framework import nest
    assert nest.map_structure(lambda x, y: x + y, (1, 2), [3, 4]) == (4, 6)
    nest.assert_same_structure((1, 2), [3, 4])
