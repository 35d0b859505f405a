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
