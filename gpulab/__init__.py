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

import sys as _sys

from . import _core
from ._core import (CudaError, DeviceArray, Event, NoDeviceError, OutOfMemoryError, Stream,
                    build_info, cuda_available, elapsed_ms, empty, from_dlpack, as_device,
                    pinned_empty, pinned_usage, pool_usage, release_memory, synchronize,
                    to_device, zeros)
from . import labs as _labs
from . import store
from .bench import BenchResult, bench
from .ceilings import ceilings
from .compare import compare
from .inspection import inspect
from .nvtx import nvtx_range
from .provenance import driver_release
from .registry import Variant, VariantList, variants
from .roofline_model import roofline
from .sweep import SweepResults, SweepSkippedWarning, sweep
from .table import Table

__version__ = "0.1.0"


def device_info(device=0):
    """The device's properties (deviceQuery's), its theoretical peaks, the CUDA driver and
    runtime versions, and the kernel driver's release. Raises NoDeviceError when there is no
    usable GPU."""
    return {**_core.device_info(device), "driver_release": driver_release()}


def gpu_status():
    """None when a CUDA GPU is usable; otherwise the NoDeviceError that a CUDA variant would
    raise, whose ``reason`` is "no driver", "no GPU" or "not built" and whose text says why."""
    return _core._gpu_status()


__all__ = [
    "CudaError", "NoDeviceError", "OutOfMemoryError", "DeviceArray", "Stream", "Event",
    "elapsed_ms", "synchronize",
    "build_info", "cuda_available", "gpu_status", "device_info", "to_device", "empty", "zeros",
    "as_device",
    "from_dlpack", "pinned_empty", "pinned_usage", "pool_usage", "release_memory", "variants",
    "Variant", "VariantList", "bench", "BenchResult", "sweep", "SweepResults",
    "SweepSkippedWarning", "ceilings", "Table", "inspect",
    "nvtx_range", "store", "compare", "roofline",
]



def _lift_labs():
    """Each lab's public names, from the registry's list of labs: gl.saxpy, gl.reduce, ... and,
    for a lab used as a namespace, the module itself (gl.memory; `import gpulab.memory` too)."""
    for name, module in _labs.load().items():
        for export in module.EXPORTS:
            globals()[export] = getattr(module, export)
            __all__.append(export)
        if name not in module.EXPORTS:
            globals()[name] = module
            _sys.modules[f"{__name__}.{name}"] = module
            __all__.append(name)


_lift_labs()
