"""NVTX ranges, so that Nsight Systems and Nsight Compute timelines read in gpulab's words.

- Every op opens a range named after itself and its variant ("saxpy variant=2",
  "reduce variant=default"; no brackets, which Nsight Compute's range filters reserve)
  when a profiler is attached: the Nsight tools load their NVTX tool through
  NVTX_INJECTION64_PATH (CUDA_INJECTION64_PATH for the CUDA side) in the profiled process's
  environment, and gpulab looks for them once, at import. Without one, the ops are the plain
  functions: no wrapper, so no cost at all. GPULAB_NVTX=1 turns the ranges on regardless (for
  a tool that gpulab does not recognise), GPULAB_NVTX=0 off.
- `gl.nvtx_range(name)` marks a user's own code; with no tool attached it costs two calls
  that NVTX3 resolves to no-ops.

    with gl.nvtx_range("my step"):
        gl.saxpy(2.0, x, y)

    nsys profile --trace=cuda,nvtx python my_script.py
    ncu --nvtx --nvtx-include "saxpy variant=2/" python my_script.py
"""

import contextlib
import functools
import inspect
import os

from . import _core

TOOL_VARIABLES = ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")


def wanted(environ=os.environ) -> bool:
    """Whether ops open ranges in this process: GPULAB_NVTX if set, else whether a profiler's
    injection variable is."""
    forced = environ.get("GPULAB_NVTX", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    if forced:
        raise ValueError(f"GPULAB_NVTX must be 0 or 1, got {forced!r}")
    return any(environ.get(name) for name in TOOL_VARIABLES)


ENABLED = wanted()


@contextlib.contextmanager
def nvtx_range(name: str):
    """An NVTX range around the block: nested ranges nest in the profiler's timeline."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    _core._nvtx_push(name)
    try:
        yield
    finally:
        _core._nvtx_pop()


def ranged(fn, op_name: str):
    """fn, wrapped in a range named "op variant=v" on every call."""
    push, pop = _core._nvtx_push, _core._nvtx_pop
    params = list(inspect.signature(fn).parameters)
    at = params.index("variant") if "variant" in params else None

    @functools.wraps(fn)
    def call(*args, **kwargs):
        variant = kwargs.get("variant", args[at] if at is not None and len(args) > at else None)
        push(f"{op_name} variant={'default' if variant is None else variant}")
        try:
            return fn(*args, **kwargs)
        finally:
            pop()

    return call
