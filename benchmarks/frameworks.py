"""The frameworks the suite compares: loading them, naming them, and reading their results.

A peer that is not installed raises ``Unavailable`` (the suite skips it with a line saying so).
A hybridtf feature that does not exist yet raises ``Missing`` (the suite reports it as missing;
it never runs eager code under a decorated name to fill the gap).
"""
import importlib
import importlib.metadata
import importlib.util
import os

# Order of columns in tables and of variants within a workload.
FRAMEWORKS = ("numpy", "numba", "tensorflow", "jax", "torch", "hybridtf")
PEERS = tuple(f for f in FRAMEWORKS if f != "hybridtf")

_LABELS = {
    ("numpy", "eager"): "NumPy",
    ("numba", "fused"): "Numba fused",
    ("tensorflow", "eager"): "TF eager",
    ("tensorflow", "function"): "TF function",
    ("jax", "jit"): "JAX jit",
    ("jax", "eager"): "JAX eager",
    ("torch", "eager"): "PyTorch eager",
    ("hybridtf", "eager"): "hybridtf eager",
    ("hybridtf", "function"): "hybridtf function",
    ("hybridtf", "mpi"): "hybridtf MPI",
    ("hybridtf", "step"): "hybridtf step",
    ("torch", "ddp"): "PyTorch DDP (gloo)",
}


class Unavailable(Exception):
    """A peer framework that is not installed (or does not import) here."""


class Missing(Exception):
    """A hybridtf feature that does not exist yet."""


class NotImportable(Missing):
    """hybridtf itself does not import (reported like a missing feature by the suite; the
    tests treat it as a failure)."""


def label(framework, mode):
    """Short human name of a variant, e.g. ``TF function``."""
    return _LABELS.get((framework, mode), f"{framework} {mode}")


def key(framework, mode):
    """Stable identifier of a variant, e.g. ``tensorflow/function``."""
    return f"{framework}/{mode}"


_loaded = {}
_device = "cpu"   # where the frameworks loaded from now on run the workloads (use_device)


def use_device(device):
    """Sets where the frameworks loaded from now on run the workloads, "cpu" or "gpu", and
    returns the previous setting; set before the frameworks load. For "cpu", hybridtf and
    TensorFlow see no GPU (they would place ops there by default) and JAX runs on its CPU
    backend; for "gpu", the workloads place their arrays (``benchmarks.devices``)."""
    global _device
    previous, _device = _device, device
    return previous


def _prepare_environment():
    # Keep peers' start-up chatter off the table; set before their first import.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if _device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    else:
        # JAX, PyTorch and hybridtf share the GPU: JAX takes memory as it needs it rather
        # than 75% of the GPU's at its start.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    # The workloads time compiled steps: a traced function compiles on its first call (by
    # default hybridtf runs it on the interpreter while compiling in the background; C1, which
    # times the first result, sets this to "0").
    os.environ.setdefault("HYBRIDTF_SYNCHRONOUS_COMPILATION", "1")


def load(name):
    """Import a framework by name and return its top-level module.

    Raises ``Unavailable`` for a peer that is not installed, ``Missing`` when hybridtf does not
    import yet.
    """
    if name in _loaded:
        result = _loaded[name]
        if isinstance(result, Exception):
            raise result
        return result
    _prepare_environment()
    try:
        module = importlib.import_module(name)
        if name == "jax":
            importlib.import_module("jax.numpy")
        if name == "hybridtf" and getattr(module, "__file__", None) is None:
            # A directory without __init__.py imports as an empty namespace package.
            raise NotImportable("hybridtf does not import yet (hybridtf/__init__.py is missing)")
    except Missing as exc:
        _loaded[name] = exc
        raise
    except Exception as exc:  # noqa: BLE001 - any import failure makes the framework unusable
        if name == "hybridtf":
            error = NotImportable(f"hybridtf does not import: {type(exc).__name__}: {exc}")
        elif isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.split(".")[0] == name:
            error = Unavailable(f"{name} is not installed")
        else:
            error = Unavailable(f"{name} does not import: {type(exc).__name__}: {exc}")
        _loaded[name] = error
        raise error from exc
    if _device == "cpu":
        _hide_gpus(name, module)
    _loaded[name] = module
    return module


def _hide_gpus(name, module):
    """CPU figures stay CPU figures on a machine with a GPU."""
    if name == "hybridtf":
        module.config.set_visible_devices(module.config.list_physical_devices("CPU"))
    elif name == "tensorflow":
        module.config.set_visible_devices([], "GPU")


# Distributions that provide each framework, for versions of frameworks this run did not import.
_DISTRIBUTIONS = {"tensorflow": ("tensorflow", "tensorflow-cpu"), "jax": ("jax",),
                  "torch": ("torch",), "numpy": ("numpy",), "numba": ("numba",),
                  "hybridtf": ("hybridtf",)}


def version(name):
    """The framework's version; from the module when this run imported it, else from the
    installed distribution (without importing: TensorFlow alone takes seconds). None when it
    is not installed or did not import."""
    loaded = _loaded.get(name)
    if isinstance(loaded, Exception):
        return None
    if loaded is not None:
        return getattr(loaded, "__version__", "unknown")
    if importlib.util.find_spec(name) is None:
        return None
    for distribution in _DISTRIBUTIONS.get(name, (name,)):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def require(module, *paths):
    """Raise ``Missing`` naming every dotted attribute path absent from ``module``.

    ``require(tf, "nn.conv2d", "Variable.assign_sub")`` checks ``tf.nn.conv2d`` and
    ``tf.Variable.assign_sub``.  For TensorFlow this always passes; for hybridtf it turns a
    not-yet-written API into a precise "missing" line instead of a crash in the middle of a run.
    """
    absent = []
    for path in paths:
        obj = module
        for part in path.split("."):
            try:
                obj = getattr(obj, part)
            except Exception:  # noqa: BLE001 - a raising __getattr__ counts as absent too
                absent.append(f"{module.__name__}.{path}")
                break
    if absent:
        raise Missing("missing: " + ", ".join(absent))


def decorate(tf, fn, decorated):
    """``tf.function(fn)`` for the decorated variant, ``fn`` itself for the eager one."""
    if not decorated:
        return fn
    require(tf, "function")
    return tf.function(fn)


def to_numpy(value):
    """A framework's result as a NumPy array (or a Python structure of them), always a copy:
    a framework may hand out a view of a buffer that its next step overwrites."""
    import numpy as np
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_numpy(v) for v in value]
    if hasattr(value, "detach"):  # torch
        return np.array(value.detach().cpu().numpy())
    if hasattr(value, "numpy"):  # TensorFlow, hybridtf
        return np.array(value.numpy())
    return np.array(value)  # NumPy, NumPy scalars, JAX arrays


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


def limit_threads(count):
    """Confine this process and its children to ``count`` CPUs, before any framework loads.

    The process is pinned to the first ``count`` CPUs it may use (OpenMP, TensorFlow's and XLA's
    pools size themselves from that mask) and the usual thread-count variables are set (NumPy's
    BLAS, Numba, MKL). On a machine shared with other work this trades peak speed for figures
    that do not depend on whether a second core happened to be free: a two-thread barrier
    whose second thread has been descheduled costs a whole scheduler slice.
    """
    if count < 1:
        raise ValueError(f"--threads must be at least 1, got {count}")
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(cpus[:count]))
    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(count)


def thread_settings():
    """Thread counts the peers use by default; recorded next to the figures."""
    settings = {"cpu_count": os.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        settings["cpus_usable"] = len(os.sched_getaffinity(0))
    for var in THREAD_VARIABLES + ("XLA_FLAGS",):
        if var in os.environ:
            settings[var] = os.environ[var]
    torch = _loaded.get("torch")
    if torch is not None and not isinstance(torch, Exception):
        settings["torch_threads"] = torch.get_num_threads()
    numba = _loaded.get("numba")
    if numba is not None and not isinstance(numba, Exception):
        settings["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    return settings


def blas_kernels():
    """The BLAS that hybridtf's kernels call (SciPy's OpenBLAS) and the kernels it picked for
    this processor (what ``OPENBLAS_CORETYPE`` forces, where the environment sets it)."""
    if importlib.util.find_spec("scipy") is None:
        return {}
    importlib.import_module("scipy.linalg.cython_blas")
    threadpoolctl = importlib.import_module("threadpoolctl")
    found = [info for info in threadpoolctl.threadpool_info()
             if info["user_api"] == "blas" and "scipy.libs" in info["filepath"]]
    kernels = {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}
    if found:
        kernels.update(library=found[0]["internal_api"], version=found[0]["version"],
                       architecture=found[0].get("architecture"))
    return kernels
