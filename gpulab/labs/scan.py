"""The scan lab: prefix scans, from Hillis-Steele in one block to the single-pass decoupled
look-back and CUB; and stream compaction (compact, nonzero) on the same tiles.

    gl.scan(x)                          # np.cumsum(x), on the GPU when there is one
    gl.scan(x, op="max")                # np.maximum.accumulate(x)
    gl.scan(x, inclusive=False)         # exclusive: starts at op's identity
    gl.compact(x, mask)                 # x[mask]; without a mask, x[x != 0]
    gl.nonzero(x)                       # np.flatnonzero(x), int64

NumPy in, NumPy out; device arrays in, DeviceArray out (scan asynchronously on `stream`;
compact and nonzero wait for the count of kept elements, as torch.masked_select does, to size
their result).
"""

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, nbytes, numel, op

EXPORTS = ("scan", "compact", "nonzero")


def _result_itemsize(x, op):
    # int32 sums are int64, as np.cumsum's
    itemsize = nbytes(x) // max(numel(x), 1)
    return 8 if (str(x.dtype) in ("int32", "torch.int32") and op == "sum") else itemsize


def _scan_cost(x, op="sum", **_):
    # x read once, y written once; one combining operation per element (work-efficient scans)
    return Cost(bytes=nbytes(x) + numel(x) * _result_itemsize(x, op), flops=numel(x))


_TORCH_SCANS = {"sum": "cumsum", "max": "cummax", "min": "cummin"}


def _torch_scan(x, op="sum", inclusive=True, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    fn = getattr(torch, _TORCH_SCANS[op])
    if op == "sum":
        return lambda: fn(tx, 0)
    return lambda: fn(tx, 0).values


def _cupy_scan(x, op="sum", inclusive=True, **_):
    cupy = _peers.cupy_with_cub()
    cx = _peers.as_peer("cupy", x)
    if op == "sum":
        return lambda: cupy.cumsum(cx)
    ufunc = cupy.maximum if op == "max" else cupy.minimum
    return lambda: ufunc.accumulate(cx)


def _scan_example(n, rng):
    return (rng.standard_normal(n).astype(np.float32),)


@op("scan", cost=_scan_cost, size=lambda x, **_: numel(x), example=_scan_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 22},
    peers={"cupy": _cupy_scan, "torch": _torch_scan})
def scan(x, op="sum", inclusive=True, variant=None, block=None, stream=None):
    """The prefix scan of x with op: "sum" (np.cumsum), "max" (np.maximum.accumulate) or "min"
    (np.minimum.accumulate). x: float32, float64, int32 or int64, any length; an N-d array is
    flattened when C-contiguous (as np.cumsum does without an axis), so the result is 1-D.

    inclusive=True: y[i] = x[0] op ... op x[i]. inclusive=False: the exclusive scan, y[0] = the
    identity (0 for sums, the dtype's lowest value or -inf for max, its highest or +inf for min)
    and y[i] = x[0] op ... op x[i-1]; NumPy has no exclusive scan.

    Dtypes follow np.cumsum: int32 sums give int64 (and never overflow short of 2^63);
    int64 sums wrap around on overflow as NumPy's do; max and min keep the dtype. Integer scans
    and max/min scans are exact. float sums are reassociated by the parallel variants, so
    they differ from np.cumsum's serial order by rounding only: the tests hold every variant to
    |y[i] - s[i]| <= eps * d(n) * sum(|x[:i+1]|), s the float64 scan and d(n) the depth bound of
    tests/references/scan.py. NaN propagates in all three ops as in NumPy (a NaN makes every
    later prefix NaN; +inf and -inf sum to NaN).

    `variant`: None (the best where it runs), an id or a name from ``gl.variants("scan")``.
    Variants 0 and 1 (one block) take up to 2^24 elements and raise ValueError beyond.
    `block`: threads per block of the variants that take one (powers of two, 32..1024).
    """
    return _core.scan(x, op, inclusive, variant, stream, block)


def _compact_cost(x, mask=None, **_):
    # x (and the mask) read once; the kept elements written (counted on the host, once a bench)
    kept = int(np.count_nonzero(_host(x if mask is None else mask)))
    itemsize = nbytes(x) // max(numel(x), 1)
    mask_bytes = 0 if mask is None else numel(mask)
    return Cost(bytes=nbytes(x) + mask_bytes + kept * itemsize, flops=0)


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _torch_compact(x, mask=None, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    tm = _peers.as_peer("torch", mask) if mask is not None else None
    if tm is None:
        return lambda: torch.masked_select(tx, tx != 0)
    return lambda: torch.masked_select(tx, tm)


def _cupy_compact(x, mask=None, **_):
    _peers.cupy_with_cub()  # x[mask] counts through cumsum
    cx = _peers.as_peer("cupy", x)
    cm = _peers.as_peer("cupy", mask) if mask is not None else None
    if cm is None:
        return lambda: cx[cx != 0]
    return lambda: cx[cm]


def _compact_example(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    return (x, x > 0)  # keeps about half


@op("compact", cost=_compact_cost, size=lambda x, *a, **_: numel(x), example=_compact_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 22},
    peers={"cupy": _cupy_compact, "torch": _torch_compact})
def compact(x, mask=None, variant=None, stream=None):
    """The elements of x where mask is True (x[mask]), or without a mask where x != 0
    (x[x != 0]: NaN is kept, -0.0 is not), in order, as a 1-D array of x's dtype. x: float32,
    float64, int32 or int64; mask: a bool array of x's shape, on the same side (NumPy or device)
    as x. On device arrays the result's length must be known before it is returned, so the call
    waits for it, as torch.masked_select does: with a mask the mask's True values are counted
    first and the variant writes straight into the result; without one the variant writes into
    an array of x's length and the kept elements are copied into one of their own."""
    return _core.compact(x, mask, variant, stream)


def _nonzero_cost(x, **_):
    return Cost(bytes=nbytes(x) + 8 * int(np.count_nonzero(_host(x))), flops=0)


def _torch_nonzero(x, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    return lambda: torch.nonzero(tx).flatten()


def _cupy_nonzero(x, **_):
    cupy = _peers.cupy_with_cub()
    cx = _peers.as_peer("cupy", x)
    return lambda: cupy.flatnonzero(cx)


def _nonzero_example(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    x[x < 0] = 0  # about half zero
    return (x,)


@op("nonzero", cost=_nonzero_cost, size=lambda x, **_: numel(x), example=_nonzero_example,
    demo_size={"gpu": 1 << 26, "cpu": 1 << 22},
    peers={"cupy": _cupy_nonzero, "torch": _torch_nonzero})
def nonzero(x, variant=None, stream=None):
    """The indices (int64) of the elements of x that are not zero, in order: np.flatnonzero(x)
    (an N-d array counts in C order). Same dtypes, placement and waiting as compact."""
    return _core.nonzero(x, variant, stream)
