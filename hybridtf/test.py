"""``tf.test``: what a test asks about the GPUs of the machine."""
from hybridtf.config.devices import list_logical_devices
from hybridtf.framework import cuda_device


def is_built_with_cuda():
    """True: hybridtf's CUDA backend is part of every install (Numba's CUDA target)."""
    return True


def is_built_with_gpu_support():
    return True


def gpu_device_name():
    """'/device:GPU:0' when a GPU is visible, else ''."""
    gpus = list_logical_devices("GPU")
    return gpus[0].name if gpus else ""


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """Whether a GPU is visible (deprecated in TF in favour of
    ``tf.config.list_physical_devices('GPU')``); with ``min_cuda_compute_capability`` (a
    (major, minor) pair), whether its compute capability is at least that."""
    if not gpu_device_name():
        return False
    if min_cuda_compute_capability is None:
        return True
    return tuple(cuda_device.BACKEND.details()["compute_capability"]) >= tuple(
        min_cuda_compute_capability)
