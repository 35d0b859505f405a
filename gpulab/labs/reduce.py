"""The reduce lab: sum, min and max of a whole array, the ladder every seed teaches, from Harris's
first kernel to CUB; and dot and norm2 on the lab's best path (S3)."""

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, nbytes, numel, op

# The names gpulab lifts to its top level (gl.reduce, ...).
EXPORTS = ("reduce", "dot", "norm2")

# reduce's op= names, and the CuPy and PyTorch functions that do the same.
_PEER_FUNCTIONS = {"sum": ("sum", "sum"), "min": ("min", "amin"), "max": ("max", "amax")}


def _reduce_cost(x, op="sum", **_):
    # every element read once; one combining operation per element
    return Cost(bytes=nbytes(x), flops=numel(x))


def _cupy_reduce(x, op="sum", **_):
    cupy = _peers.cupy_with_cub()
    cx = _peers.as_peer("cupy", x)
    fn = getattr(cupy, _PEER_FUNCTIONS[op][0])
    return lambda: fn(cx)


def _torch_reduce(x, op="sum", **_):
    import torch
    tx = _peers.as_peer("torch", x)
    fn = getattr(torch, _PEER_FUNCTIONS[op][1])
    return lambda: fn(tx)


def _reduce_example(n, rng):
    return (rng.standard_normal(n, dtype=np.float32),)


@op("reduce", cost=_reduce_cost, size=lambda x, **_: numel(x), example=_reduce_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 24},
    peers={"cupy": _cupy_reduce, "torch": _torch_reduce})
def reduce(x, op="sum", variant=None, block=None, stream=None):
    """Reduces all of x with op: "sum", "min" or "max".

    x: float32, float64 or int32, any length >= 0; an N-d array is flattened when it is
    C-contiguous (otherwise ValueError). float sums keep their dtype; int32 sums return int64
    and int32 min/max return int32, as NumPy does. The sum of nothing is 0; min and max of
    nothing raise ValueError. min and max propagate NaN.

    NumPy in: a NumPy scalar (on the GPU when there is one). Device arrays in (gpulab, CuPy,
    PyTorch): runs asynchronously on `stream` and returns a 0-d DeviceArray; `.item()` or
    `.get()` brings the value back.
    `variant`: None (the best where it runs), an id or a name from ``gl.variants("reduce")``;
    a variant that cannot do (op, dtype), such as atomics on float min, raises ValueError.
    `block`: threads per block for the CUDA variants that take one (32..1024, powers of two).
    """
    return _core.reduce(x, op, variant, stream, block)


def _dot_cost(x, y, **_):
    return Cost(bytes=2 * nbytes(x), flops=2 * numel(x))


def _cupy_dot(x, y, **_):
    import cupy
    cx, cy = _peers.as_peer("cupy", x), _peers.as_peer("cupy", y)
    return lambda: cupy.dot(cx, cy)


def _torch_dot(x, y, **_):
    import torch
    tx, ty = _peers.as_peer("torch", x), _peers.as_peer("torch", y)
    return lambda: torch.dot(tx, ty)


def _dot_example(n, rng):
    return (rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32))


@op("dot", cost=_dot_cost, size=lambda x, y, **_: numel(x), example=_dot_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 24},
    peers={"cupy": _cupy_dot, "torch": _torch_dot})
def dot(x, y, variant=None, stream=None):
    """sum(x * y) for float32 or float64 arrays of the same length (flattened when
    C-contiguous). float32 accumulates in float64, so the only rounding of note is the last.
    Placement rules as for reduce: NumPy in, NumPy scalar out; device in, 0-d DeviceArray."""
    return _core.dot(x, y, variant, stream)


def _norm2_cost(x, **_):
    return Cost(bytes=nbytes(x), flops=2 * numel(x))


def _cupy_norm2(x, **_):
    cupy = _peers.cupy_with_cub()
    cx = _peers.as_peer("cupy", x)
    return lambda: cupy.linalg.norm(cx)


def _torch_norm2(x, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    return lambda: torch.linalg.vector_norm(tx)


@op("norm2", cost=_norm2_cost, size=lambda x, **_: numel(x), example=_reduce_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 24},
    peers={"cupy": _cupy_norm2, "torch": _torch_norm2})
def norm2(x, variant=None, stream=None):
    """The L2 norm sqrt(sum(x * x)) of a float32 or float64 array (flattened when
    C-contiguous). float32 accumulates in float64: no overflow or underflow of the squares.
    Placement rules as for reduce."""
    return _core.norm2(x, variant, stream)
