"""Generated kernel modules, written as real files so that Numba's ``cache=True`` works.

Numba cannot cache functions built with ``exec``; it can cache functions defined in a module
file.  Kernels that are generated from templates (elementwise loops here, fused graph kernels in
the compiler) are therefore rendered to source, written once to a cache directory under a name
derived from a hash of the source, and imported from there.  Equal sources share one file, one
module and one compiled kernel.
"""
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading

_LOCK = threading.Lock()
_MODULES = {}


def _library_digest():
    """A hash of the kernel library's sources.  Generated modules call its functions, and
    Numba's cache only notices changes to the module it compiled: folding this into their
    names makes a changed library compile fresh modules instead of reusing stale code."""
    digest = hashlib.sha256()
    directory = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            with open(os.path.join(directory, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


_LIBRARY_DIGEST = _library_digest()


def cache_dir():
    """The directory for generated modules and compiled kernels.

    ``HYBRIDTF_CACHE_DIR`` overrides the default, ``$XDG_CACHE_HOME/hybridtf`` (``~/.cache``).
    """
    root = os.environ.get("HYBRIDTF_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "hybridtf")
    return root


def _write_atomically(path, text):
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_source(prefix, source):
    """Import ``source`` as a module stored at ``<cache_dir>/generated/<prefix>_<hash>.py``.

    The same source (with the same kernel library) always maps to the same file and module
    object, so Numba's on-disk cache (which is keyed by file and function) is reused across
    processes.
    """
    digest = hashlib.sha256((_LIBRARY_DIGEST + source).encode()).hexdigest()[:16]
    name = f"{prefix}_{digest}"
    module = _MODULES.get(name)
    if module is not None:
        return module
    with _LOCK:
        module = _MODULES.get(name)
        if module is not None:
            return module
        path = os.path.join(cache_dir(), "generated", name + ".py")
        try:
            with open(path) as f:
                current = f.read()
        except OSError:
            current = None
        if current != source:
            _write_atomically(path, source)
        module_name = "hybridtf_generated." + name
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        _MODULES[name] = module
        return module
