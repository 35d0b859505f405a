"""The saxpy lab: saxpy, the seeds' first kernel, and matadd, S0's first 2-D launch."""

import numpy as np

from .. import _core
from .._op import Cost, nbytes, numel, op
from .. import peers as _peers

# The names gpulab lifts to its top level (gl.saxpy, ...).
EXPORTS = ("saxpy", "matadd")


def _saxpy_cost(a, x, y, **_):
    # read x and y, write out; one multiply and one add per element
    return Cost(bytes=3 * nbytes(x), flops=2 * numel(x))


_cupy_saxpy_kernel = None


def _cupy_saxpy(a, x, y, **_):
    global _cupy_saxpy_kernel
    import cupy
    if _cupy_saxpy_kernel is None:
        # one fused pass, as a user who cares about speed would write it in CuPy
        _cupy_saxpy_kernel = cupy.ElementwiseKernel("T a, T x, T y", "T z", "z = a * x + y",
                                                     "gpulab_peer_saxpy")
    cx, cy = _peers.as_peer("cupy", x), _peers.as_peer("cupy", y)
    ca = cx.dtype.type(a)
    return lambda: _cupy_saxpy_kernel(ca, cx, cy)


def _torch_saxpy(a, x, y, **_):
    import torch
    tx, ty = _peers.as_peer("torch", x), _peers.as_peer("torch", y)
    return lambda: torch.add(ty, tx, alpha=a)


def _saxpy_example(n, rng):
    return (2.5, rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32))


@op("saxpy", cost=_saxpy_cost, size=lambda a, x, y, **_: numel(x), example=_saxpy_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 24},
    peers={"cupy": _cupy_saxpy, "torch": _torch_saxpy})
def saxpy(a, x, y, variant=None, out=None, stream=None, block=None):
    """out = a*x + y for 1-D float32 or float64 arrays of equal length.

    NumPy in, NumPy out (on the GPU when one is there, copying in and out); device arrays
    (gpulab, CuPy, PyTorch) in: runs asynchronously on `stream` and returns a DeviceArray.
    `variant`: None (the best where it runs), an id or a name from ``gl.variants("saxpy")``.
    `block`: threads per block for CUDA variants (32..1024, powers of two).
    """
    return _core.saxpy(a, x, y, variant, out, stream, block)


def _matadd_cost(A, B, **_):
    return Cost(bytes=3 * nbytes(A), flops=numel(A))


def _torch_matadd(A, B, **_):
    import torch
    tA, tB = _peers.as_peer("torch", A), _peers.as_peer("torch", B)
    return lambda: torch.add(tA, tB)


def _cupy_matadd(A, B, **_):
    import cupy
    cA, cB = _peers.as_peer("cupy", A), _peers.as_peer("cupy", B)
    return lambda: cupy.add(cA, cB)


def _matadd_example(n, rng):
    side = max(1, int(round(n ** 0.5)))
    return (rng.standard_normal((side, side), dtype=np.float32),
            rng.standard_normal((side, side), dtype=np.float32))


@op("matadd", cost=_matadd_cost, size=lambda A, B, **_: numel(A), example=_matadd_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 24},
    peers={"cupy": _cupy_matadd, "torch": _torch_matadd})
def matadd(A, B, variant=None, out=None, stream=None):
    """C = A + B for 2-D float32 or float64 arrays of equal shape (S0's first 2-D launch:
    16x16 blocks). Same placement rules as saxpy."""
    return _core.matadd(A, B, variant, out, stream)
