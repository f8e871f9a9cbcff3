"""Where a workload runs: on the CPU (the default) or on the GPU (``--device gpu``).

A workload's builders take ``device`` (``CPU`` or ``GPU``) and ask ``placement(framework,
module, device)`` how their framework puts arrays there and waits for it. On the CPU nothing
changes: no scope, no waiting (the figures of ``--device cpu`` are what they always were). On
the GPU:

- hybridtf creates its tensors and variables under ``tf.device('/GPU:0')``, so its ops and
  decorated functions run there, and a timed call ends with ``numba.cuda.synchronize()``
  (hybridtf's GPU arrays are Numba's; kernel launches return before the kernels finish);
- JAX puts its arrays on ``jax.devices('gpu')[0]`` (its calls already end with
  ``block_until_ready``) and computes float32 products at full precision;
- PyTorch puts its tensors on ``cuda`` and a timed call ends with ``torch.cuda.synchronize()``;
  its matmuls and convolutions do not use TF32 either.

Every framework thus computes the same float32 arithmetic as the NumPy reference, which the
agreement check holds them to. A framework that has no GPU raises ``Unavailable`` with what was
checked (the suite skips its variants with that line).
"""
import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from benchmarks import frameworks
from benchmarks.frameworks import Unavailable

CPU = "cpu"
GPU = "gpu"
DEVICES = (CPU, GPU)

# The frameworks that have GPU variants (NumPy computes the reference on the CPU).
GPU_FRAMEWORKS = ("hybridtf", "jax", "torch")


def _as_is(array):
    return array


@dataclass(frozen=True)
class Placement:
    """How one framework runs on one device.

    ``scope()``: a context in which the framework creates its arrays on the device;
    ``put(array)``: a NumPy array as the framework's array on the device;
    ``wait``: waits until the device has finished the work queued so far (None: nothing to wait
    for); ``device``: the framework's own device object, where it has one (PyTorch).
    """
    scope: Callable[[], Any] = contextlib.nullcontext
    put: Callable[[Any], Any] = _as_is
    wait: Optional[Callable[[], None]] = None
    device: Any = None

    def timed(self, call):
        """``call`` as a timed call: it returns once the device has computed its result."""
        wait = self.wait
        if wait is None:
            return call

        def waited():
            result = call()
            wait()
            return result
        return waited


def placement(framework, module, device):
    """The ``Placement`` of ``framework`` (its top-level ``module`` loaded) on ``device``."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; expected one of {list(DEVICES)}")
    return _PLACEMENTS[framework](module, device)


def _hybridtf(tf, device):
    if device == CPU:
        return Placement()
    if not tf.config.list_logical_devices("GPU"):
        if tf.config.list_physical_devices("GPU"):
            why = "its GPU is hidden by tf.config.set_visible_devices"
        else:
            why = ("tf.config.list_physical_devices('GPU') is empty: Numba's CUDA driver finds "
                   "no GPU")
        raise Unavailable(f"hybridtf has no GPU ({why})")
    from numba import cuda
    return Placement(scope=lambda: tf.device("/GPU:0"), wait=cuda.synchronize)


def _jax(jax, device):
    if device == CPU:
        return Placement(put=jax.numpy.asarray)
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError as exc:   # JAX's way of saying that it has no such backend
        raise Unavailable(f"JAX has no GPU (jax.devices('gpu'): {exc})") from exc
    # JAX's default multiplies float32 matrices in TF32 on recent GPUs.
    jax.config.update("jax_default_matmul_precision", "highest")
    return Placement(scope=lambda: jax.default_device(gpu),
                     put=lambda array: jax.device_put(array, gpu))


def _torch(torch, device):
    if device == CPU:
        return Placement(put=torch.from_numpy, device=torch.device("cpu"))
    if not torch.cuda.is_available():
        raise Unavailable("PyTorch has no GPU (torch.cuda.is_available() is False)")
    # PyTorch's default convolves float32 in TF32 on recent GPUs (matmuls: not since 1.12).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = torch.device("cuda")
    return Placement(put=lambda array: torch.from_numpy(array).to(cuda),
                     wait=torch.cuda.synchronize, device=cuda)


_PLACEMENTS = {"hybridtf": _hybridtf, "jax": _jax, "torch": _torch}


def tf_placement(tf, device):
    """``placement`` for a TF-style builder, whose ``tf`` is ``hybridtf`` or ``tensorflow``
    (TensorFlow runs on the CPU only: the GPU variants leave it out)."""
    if device == CPU:
        return Placement()
    return placement("hybridtf", tf, device)


def gpu_frameworks_without_gpu(frameworks_allowed):
    """``{framework: why it has no GPU}`` for each selected framework of ``GPU_FRAMEWORKS``
    without one (not installed counts); the frameworks not in it have a GPU."""
    missing = {}
    for name in GPU_FRAMEWORKS:
        if frameworks_allowed is not None and name not in frameworks_allowed:
            continue
        try:
            placement(name, frameworks.load(name), GPU)
        except (Unavailable, frameworks.Missing) as exc:
            missing[name] = str(exc)
    return missing


def gpu_details():
    """The GPU that Numba (and so hybridtf) uses: its name, compute capability and peak memory
    bandwidth (``peak_bandwidth``) from its memory clock and bus width where the driver reports
    them; otherwise the peak is None and ``peak_unknown`` says why."""
    from numba import cuda
    if not cuda.is_available():
        return {"name": None, "peak_bandwidth_bytes_s": None,
                "peak_unknown": "Numba finds no CUDA GPU"}
    gpu = cuda.current_context().device
    name = getattr(gpu, "name", None) or "Numba's CUDA simulator"
    details = {"name": name.decode() if isinstance(name, bytes) else name,
               "compute_capability": list(gpu.compute_capability),
               "memory_clock_khz": getattr(gpu, "MEMORY_CLOCK_RATE", None),
               "memory_bus_bits": getattr(gpu, "GLOBAL_MEMORY_BUS_WIDTH", None),
               "peak_bandwidth_bytes_s": None}
    if details["memory_clock_khz"] and details["memory_bus_bits"]:
        details["peak_bandwidth_bytes_s"] = peak_bandwidth(details["memory_clock_khz"],
                                                           details["memory_bus_bits"])
    else:
        details["peak_unknown"] = ("Numba does not report this device's memory clock and bus "
                                   "width")
    return details


def peak_bandwidth(memory_clock_khz, memory_bus_bits):
    """Bytes per second a memory of this clock and bus width moves at most: two transfers per
    clock (double data rate) of the bus's width."""
    return 2.0 * memory_clock_khz * 1e3 * memory_bus_bits / 8


def bandwidth_metrics(time_s, bytes_moved, peak_bytes_s):
    """W1's memory figures from a timing: bytes read and written per median time, and that as
    a share of the peak (absent when the peak is unknown)."""
    achieved = bytes_moved / time_s["median"]
    metrics = {"bandwidth_bytes_s": {"median": achieved}}
    if peak_bytes_s:
        metrics["bandwidth_share"] = {"median": achieved / peak_bytes_s}
    return metrics
