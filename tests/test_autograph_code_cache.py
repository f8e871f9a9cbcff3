"""Functions AutoGraph converted are kept in the cache directory and reused by a new process."""
import os

import numpy as np
import pytest

import hybridtf as tf
from hybridtf.autograph import code_cache, converter, operators


def _negate_if_negative(x):
    if x < 0:
        x = -x
    return x * 2.0


def _entries(root):
    folder = root / "autograph"
    return sorted(os.listdir(folder)) if folder.exists() else []


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDTF_CACHE_DIR", str(tmp_path))
    return tmp_path


def _refusing_to_convert(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("converted again instead of loading the stored code")
    monkeypatch.setattr(converter, "convert_to_ast", refuse)


def test_a_conversion_is_stored_and_loaded_instead_of_converting_again(cache_root, monkeypatch):
    first = converter.convert(_negate_if_negative, operators)
    assert len(_entries(cache_root)) == 1
    _refusing_to_convert(monkeypatch)
    again = converter.convert(_negate_if_negative, operators)
    assert again.__code__ == first.__code__
    assert again.ag_source == first.ag_source
    assert "if_stmt" in again.ag_source
    for value in (-3.0, 2.5):
        np.testing.assert_allclose(again(tf.constant(value)).numpy(), abs(value) * 2.0)


def test_the_key_names_the_source_the_free_variables_and_the_converter(
        cache_root, monkeypatch):
    base = code_cache.key("def f(x):\n    return x\n", "f", ["a"], "<autograph f>")
    assert base == code_cache.key("def f(x):\n    return x\n", "f", ["a"], "<autograph f>")
    others = {code_cache.key("def f(x):\n    return -x\n", "f", ["a"], "<autograph f>"),
              code_cache.key("def f(x):\n    return x\n", "f", ["b"], "<autograph f>"),
              code_cache.key("def f(x):\n    return x\n", "f", ["a"], "<autograph g.f>")}
    assert base not in others and len(others) == 3
    monkeypatch.setattr(code_cache, "_converter_digest", "another converter")
    assert code_cache.key("def f(x):\n    return x\n", "f", ["a"], "<autograph f>") != base


def test_functions_with_the_same_source_and_other_closures_share_the_code(cache_root,
                                                                          monkeypatch):
    def make(scale):
        def scaled(x):
            return x * scale
        return scaled
    doubled = converter.convert(make(2.0), operators)
    _refusing_to_convert(monkeypatch)
    tripled = converter.convert(make(3.0), operators)   # loaded: its own cells, same code
    assert len(_entries(cache_root)) == 1
    assert doubled(tf.constant(1.5)).numpy() == 3.0
    assert tripled(tf.constant(1.5)).numpy() == 4.5


def test_a_damaged_entry_is_converted_again_and_replaced(cache_root):
    converter.convert(_negate_if_negative, operators)
    [name] = _entries(cache_root)
    path = cache_root / "autograph" / name
    path.write_bytes(b"\x00not marshal data")
    converted = converter.convert(_negate_if_negative, operators)
    np.testing.assert_allclose(converted(tf.constant(-4.0)).numpy(), 8.0)
    assert code_cache.load(name.split(".")[0]) is not None   # written again, whole


def test_an_unwritable_cache_directory_only_costs_the_conversion(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")   # the cache directory's place is taken by a file
    monkeypatch.setenv("HYBRIDTF_CACHE_DIR", str(blocked))
    converted = converter.convert(_negate_if_negative, operators)
    np.testing.assert_allclose(converted(tf.constant(-1.0)).numpy(), 2.0)
