"""The peers gpulab compares itself with, CuPy and PyTorch, when they are importable.

Each peer is handed gpulab's device arrays zero-copy (DLPack) and runs on its own current
stream; gpulab times it there with the same events it uses for itself."""

import importlib
from typing import Optional


def available(name: str) -> bool:
    try:
        lib = importlib.import_module(name)
    except Exception:
        return False
    if name == "torch":
        return bool(lib.cuda.is_available())
    if name == "cupy":
        try:
            return lib.cuda.runtime.getDeviceCount() > 0
        except Exception:
            return False
    return False


def stream_handle(name: str) -> int:
    """The peer's current CUDA stream, as an int handle."""
    if name == "torch":
        import torch
        return torch.cuda.current_stream().cuda_stream
    import cupy
    return cupy.cuda.get_current_stream().ptr


def as_peer(name: str, array):
    """A zero-copy view of a gpulab device array in the peer library."""
    if name == "torch":
        import torch
        return torch.from_dlpack(array)
    import cupy
    return cupy.from_dlpack(array)


def version(name: str) -> Optional[str]:
    try:
        return importlib.import_module(name).__version__
    except Exception:
        return None


_ACCELERATOR_NAMES = {1: "cub", 2: "cutensor", 3: "cutensornet"}


def cupy_with_cub():
    """CuPy with its CUB accelerator on for reductions and routines (sum, cumsum, histogram,
    sort...), as its users turn it on (CUPY_ACCELERATORS=cub): the peers are called the fastest
    way their users would. Accelerators already on stay on."""
    import cupy
    from cupy._core import _accelerator as acc
    for get, set_ in ((acc.get_reduction_accelerators, acc.set_reduction_accelerators),
                      (acc.get_routine_accelerators, acc.set_routine_accelerators)):
        names = [_ACCELERATOR_NAMES.get(a, a) for a in get()]
        if "cub" not in names:
            set_(["cub"] + names)
    return cupy


def cupy_accelerators() -> Optional[dict]:
    """CuPy's accelerators now on ({"reduction": [...], "routine": [...]}), None without CuPy."""
    try:
        from cupy._core import _accelerator as acc
    except Exception:
        return None
    return {"reduction": [_ACCELERATOR_NAMES.get(a, a) for a in acc.get_reduction_accelerators()],
            "routine": [_ACCELERATOR_NAMES.get(a, a) for a in acc.get_routine_accelerators()]}
