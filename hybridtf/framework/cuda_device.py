"""The CUDA backend: tensors on an NVIDIA GPU hold Numba device arrays.

It registers itself with ``framework.devices`` when Numba finds a GPU (or runs its CUDA simulator,
``NUMBA_ENABLE_CUDASIM=1``, which stands in for one), as ``/GPU:0``: hybridtf places ops on the
first GPU only.  Its arrays are C-contiguous device arrays (every CUDA kernel of ``ops.cuda``
returns one); tensors of strings never go to the GPU.  Without a GPU nothing here runs beyond the
import of ``numba.cuda``.
"""
import warnings

import numpy as np

from numba import cuda

from ops.cuda.launch import SIMULATED

from hybridtf.framework import devices

NAME = "/job:localhost/replica:0/task:0/device:GPU:0"


def _array_types():
    if SIMULATED:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        return (FakeCUDAArray,)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return (DeviceNDArray,)


def _from_host(array):
    array = np.asarray(array)   # (NumPy scalars too; ascontiguousarray would make 0-d 1-d)
    return cuda.to_device(array if array.flags.c_contiguous else array.copy())


def _to_host(array):
    return array.copy_to_host()


def _copy(array):
    copied = cuda.device_array(array.shape, array.dtype)
    copied.copy_to_device(array)   # device to device
    return copied


def _asarray(array):
    # Kernels take C-contiguous arrays; views that are not (rare: every kernel returns a new
    # contiguous array) are made so through the host.
    if array.is_c_contiguous():
        return array
    return _from_host(_to_host(array))


_CUDA_ERROR_OUT_OF_MEMORY = 2   # the driver API's CUresult


def _out_of_memory(error):
    # Numba raises CudaAPIError with the driver's code once freeing its pending deallocations
    # did not make room.
    return isinstance(error, MemoryError) or getattr(error, "code", None) == \
        _CUDA_ERROR_OUT_OF_MEMORY


def _details():
    gpu = cuda.current_context().device
    name = getattr(gpu, "name", None) or "CUDA simulator"   # the simulator's device has none
    if isinstance(name, bytes):
        name = name.decode()
    return {"device_name": name, "compute_capability": tuple(gpu.compute_capability)}


def _gpu_present():
    try:
        return cuda.is_available()
    except Exception as error:  # noqa: BLE001 - a broken driver installation: no GPU, as in TF
        warnings.warn(f"hybridtf: the CUDA driver could not be initialised ({type(error).__name__}"
                      f": {error}); ops run on the CPU only.", RuntimeWarning, stacklevel=2)
        return False


BACKEND = None
if _gpu_present():
    BACKEND = devices.register(devices.Backend(
        "cuda", NAME, _array_types(), asarray=_asarray, to_host=_to_host, from_host=_from_host,
        copy=_copy, out_of_memory=_out_of_memory, details=_details))
