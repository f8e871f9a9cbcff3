"""Converted functions kept in the cache directory, so that a new process does not convert again.

Converting a function (parsing its source, rewriting the tree, compiling the result) takes
about 3 ms for a train step of 20 lines, on every first call of a ``tf.function`` in a new
process.  The conversion depends on nothing but the function's source, its name and free
variables, and the converter itself; the code it produced is stored under a hash of those
(with Python's bytecode version, since code objects are tied to it) in ``autograph/`` of the
cache directory (``ops.cache_directory``: private, bounded in size, written in one step).
"""
import contextlib
import hashlib
import importlib.util
import marshal
import os
import types

from ops import cache_directory

_PART = "autograph"
_converter_digest = None


def _converter_sources_digest():
    """A hash of the converter's source: a change to it converts afresh."""
    global _converter_digest
    if _converter_digest is None:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "converter.py"),
                  "rb") as f:
            _converter_digest = hashlib.sha256(f.read()).hexdigest()
    return _converter_digest


def key(source, name, freevars, filename):
    """The cache key of converting the function ``name`` defined by ``source`` (dedented),
    with the free variables ``freevars``, into code named ``filename``."""
    text = "\0".join([importlib.util.MAGIC_NUMBER.hex(), _converter_sources_digest(), source,
                      name, " ".join(freevars), filename])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(entry_key):
    return os.path.join(cache_directory.cache_dir(), _PART, entry_key + ".marshal")


def load(entry_key):
    """(code, converted source text) stored under ``entry_key``, or None."""
    path = _path(entry_key)
    try:
        with open(path, "rb") as f:
            code, text = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):   # none yet, or damaged: convert again
        return None
    if not (isinstance(code, types.CodeType) and isinstance(text, str)):
        return None
    cache_directory.use_file(path)
    return code, text


def store(entry_key, code, text):
    """Stores the converted ``code`` and its source ``text`` under ``entry_key``; a cache
    directory that cannot be written only means converting again next time."""
    with contextlib.suppress(OSError):
        cache_directory.write_file(_path(entry_key), marshal.dumps((code, text)))
