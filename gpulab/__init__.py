"""gpulab: a GPU computing lab you can call from Python.

Each classic GPU algorithm comes with its whole optimization ladder of variants, which can be
called, timed (bench), swept (sweep) and checked against NumPy:

    import gpulab as gl
    gl.saxpy(2.0, x, y, variant=2)         # NumPy in, NumPy out
    d = gl.to_device(x)                    # stays on the GPU
    gl.bench(gl.saxpy, 2.0, d, d, variant=2, peers=True)
    gl.reduce(x, variant=5)                # the complete unroll; NumPy scalar out
    gl.variants("saxpy")                   # the ladder
"""

from . import _core
from . import memory, streams
from ._core import (CudaError, DeviceArray, Event, NoDeviceError, Stream, build_info,
                    cuda_available, elapsed_ms, empty, from_dlpack, as_device, pinned_empty,
                    pinned_usage, pool_usage, release_memory, synchronize, to_device,
                    zeros)
from .bench import BenchResult, bench
from .ceilings import ceilings
from .nbody import NBody, nbody_accel, nbody_energy, nbody_step, plummer
from .provenance import driver_release
from .reduce import dot, norm2, reduce
from .registry import Variant, variants
from .saxpy import matadd, saxpy
from .sweep import SweepResults, sweep
from .table import Table

__version__ = "0.1.0"


def device_info(device=0):
    """The device's properties (deviceQuery's), its theoretical peaks, the CUDA driver and
    runtime versions, and the kernel driver's release. Raises NoDeviceError when there is no
    usable GPU."""
    return {**_core.device_info(device), "driver_release": driver_release()}


__all__ = [
    "CudaError", "NoDeviceError", "DeviceArray", "Stream", "Event", "elapsed_ms", "synchronize",
    "build_info", "cuda_available", "device_info", "to_device", "empty", "zeros", "as_device",
    "from_dlpack", "pinned_empty", "pinned_usage", "pool_usage", "release_memory", "variants",
    "Variant", "bench", "BenchResult", "sweep", "SweepResults", "ceilings", "saxpy", "matadd",
    "reduce", "dot", "norm2",
    "nbody_accel", "nbody_step", "nbody_energy", "NBody", "plummer",
    "memory", "streams", "Table",
]
