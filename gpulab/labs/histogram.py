"""The histogram lab: NumPy's np.histogram with equal bins, a bincount-like path for integer data,
and S4 section 8's per-channel RGB histogram.

    counts, edges = gl.histogram(x, 256, range=(0.0, 1.0))   # like np.histogram
    counts, edges = gl.histogram(u8, 256)                    # bincount of bytes
    gl.histogram_counts(x, 256)                              # the counts alone (the op)
    gl.histogram_rgb(img)                                    # (3, 256) int64

Float data (float32, float64) follows np.histogram exactly, edges included: the range given, or
for range=None the data's smallest and largest values (found on the device for device arrays,
on the host for NumPy arrays; NaN or Inf there raise ValueError, as NumPy does; equal ones widen
by 0.5 each way; empty data takes (0, 1)); values outside the range and NaN are not counted; the
last bin is closed. The bin of a value is NumPy's own: an estimate from NumPy's arithmetic in
NumPy's dtypes, corrected by one against the edges, so values on an edge land where NumPy puts
them. The edges have NumPy's dtype (float32 for float32 data with a range of Python floats).

Integer data (uint8, int8, uint16, int16, int32) takes unit-width bins only: bin k counts the
value lo + k, and the value lo + bins joins the last bin (np.histogram's closed last bin). range
defaults to (0, bins) -- not to the data's min and max as in NumPy -- and must otherwise be two
integers with hi - lo == bins. Then the counts equal np.histogram(x, bins, range) exactly, and
np.bincount(x, minlength=bins) for uint8 with bins=256. For other bins of integer data, pass
x.astype(np.float64).

NumPy in, NumPy out (on the GPU when there is one and the variant is a CUDA one); device arrays
in, DeviceArrays out, asynchronously on `stream`, except that range=None for float data waits
for the data range to come back (the edges depend on it).
"""

import math
import numbers

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, nbytes, numel, op
from ._prepared import Prepared, scalar_key

EXPORTS = ("histogram", "histogram_counts", "histogram_rgb")

_CONSTANTS = _core._histogram_constants()
MAX_BINS = _CONSTANTS["max_bins"]
RGB_BINS = _CONSTANTS["rgb_bins"]
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
INT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32))
# the signed integer types whose differences NumPy takes in the unsigned type (_unsigned_subtract)
_UNSIGNED_OF = {np.dtype(s): np.dtype(u) for s, u in
                ((np.int8, np.uint8), (np.int16, np.uint16), (np.int32, np.uint32),
                 (np.int64, np.uint64))}


# ---------------------------------------------------------------- arguments


def _dtype_of(x):
    """x's dtype as NumPy's, for NumPy, gpulab, CuPy and PyTorch arrays; None when x has none."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        try:
            return np.dtype(str(dtype).replace("torch.", ""))
        except TypeError:
            return None


def _bins_arg(bins):
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral):
        raise TypeError(f"bins must be an int (the number of equal-width bins), not "
                        f"{type(bins).__name__}")
    bins = int(bins)
    if not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be in [1, {MAX_BINS}], got {bins}")
    return bins


def _range_arg(range):
    try:
        first, last = range
    except (TypeError, ValueError):
        raise TypeError(f"range must be None or a pair (lo, hi), not {range!r}") from None
    for end in (first, last):
        if isinstance(end, bool) or not isinstance(end, (numbers.Real, np.floating, np.integer)):
            raise TypeError(f"range must hold two real numbers, got {range!r}")
    if first > last:
        raise ValueError(f"range: max must be larger than min, got {range!r}")
    if not (np.isfinite(first) and np.isfinite(last)):
        raise ValueError(f"range: supplied range of [{first}, {last}] is not finite")
    return first, last


def _integer_lo(range, bins):
    """lo of the unit-width bins [lo, lo + bins] of integer data."""
    if range is None:
        return 0
    first, last = _range_arg(range)
    ends = []
    for end in (first, last):
        if isinstance(end, (numbers.Integral, np.integer)):
            ends.append(int(end))
        elif float(end).is_integer():
            ends.append(int(end))
        else:
            raise ValueError(f"range: integer data takes integer ends (unit-width bins), got "
                             f"{range!r}; pass x.astype(numpy.float64) for other bins")
    lo, hi = ends
    if hi - lo != bins:
        raise ValueError(f"range: integer data takes unit-width bins, hi - lo == bins = {bins}, "
                         f"got {range!r}; pass x.astype(numpy.float64) for other bins")
    if not -2**62 <= lo <= 2**62:
        raise ValueError(f"range: {lo} is out of range for integer data")
    return lo


def _unsigned_subtract(a, b):
    """a - b as NumPy's histogram takes it (numpy.lib._histograms_impl._unsigned_subtract)."""
    dt = np.result_type(a, b)
    unsigned = _UNSIGNED_OF.get(np.dtype(dt))
    if unsigned is None:
        return np.subtract(a, b, dtype=dt)
    return np.subtract(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), casting="unsafe",
                       dtype=unsigned)


def _float_ends(x, dtype, range, variant, stream):
    """np.histogram's outer edges (_get_outer_edges): the range, or the data's extremes."""
    if range is not None:
        first, last = _range_arg(range)
    elif _size_of(x) == 0:
        first, last = 0, 1
    else:
        lo, hi, has_nan = _core.histogram_data_range(x, variant, stream)
        first, last = dtype.type(lo), dtype.type(hi)
        if has_nan:
            first = last = dtype.type(np.nan)
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"x: autodetected range of [{first}, {last}] is not finite; pass "
                             "range=")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


# Edges and binning parameters by what defines them: NumPy's histogram_bin_edges costs ~25 us a
# call, as much as a small histogram's kernels.
_PREPARED = Prepared()


def _integer_edges(dtype, bins, lo):
    return _PREPARED.get(("integer", dtype, bins, lo), lambda: np.histogram_bin_edges(
        np.empty(0, dtype), bins, range=(lo, lo + bins)))


def _float_params(dtype, first, last, bins):
    """The edges and the parameters of the kernels' binning (cuda/histogram/histogram.h), taken
    from NumPy's own dtype rules for these ends and this data (the same types and values of the
    ends, the same answer: kept in _PREPARED)."""
    return _PREPARED.get(("float", dtype, bins, scalar_key(first), scalar_key(last)),
                         lambda: _float_params_of(dtype, first, last, bins))


def _float_params_of(dtype, first, last, bins):
    probe = np.empty(0, dtype)
    try:
        edges = np.histogram_bin_edges(probe, bins, range=(first, last))
    except ValueError as e:
        raise ValueError(f"bins: {e}") from None
    bin_type = edges.dtype
    if bin_type not in FLOAT_DTYPES:
        raise ValueError(f"range: ends of dtype {bin_type} are not supported (float32/float64)")
    # keep = (x >= first) & (x <= last), each compared in NumPy's promoted type
    lo_keep = float(np.asarray(first).astype(np.result_type(probe, first)))
    hi_keep = float(np.asarray(last).astype(np.result_type(probe, last)))
    lo_diff = float(np.asarray(first).astype(bin_type))
    denom = _unsigned_subtract(last, first)
    div_type = np.result_type(np.empty(0, bin_type), denom)
    if div_type not in FLOAT_DTYPES:
        raise ValueError(f"range: the ends {first!r}, {last!r} give NumPy a {div_type} division")
    params = (lo_keep, hi_keep, lo_diff, float(denom), int(bin_type == np.float64),
              int(div_type == np.float64), np.ascontiguousarray(edges))
    return params, edges


def _size_of(x):
    size = getattr(x, "size", None)
    if callable(getattr(x, "numel", None)):
        return int(x.numel())
    return int(size) if size is not None else 0


def _place_like(x, edges, stream):
    """A copy of edges where x lives: NumPy for NumPy x, a DeviceArray (on stream) for device x."""
    if edges is None or isinstance(x, np.ndarray):
        return None if edges is None else edges.copy()
    return _core.to_device(edges, stream)


def _counts_and_edges(x, bins, range, variant, stream, block, edges=True):
    """(counts, edges); edges (read-only, shared: copy before handing out) None when not asked
    for and not needed."""
    bins = _bins_arg(bins)
    dtype = _dtype_of(x)
    if dtype in FLOAT_DTYPES:
        first, last = _float_ends(x, dtype, range, variant, stream)
        params, edges = _float_params(dtype, first, last, bins)
        counts = _core.histogram(x, bins, 0, params, variant, stream, block)
        return counts, edges
    if dtype in INT_DTYPES:
        lo = _integer_lo(range, bins)
        counts = _core.histogram(x, bins, lo, None, variant, stream, block)
        return counts, _integer_edges(dtype, bins, lo) if edges else None
    # anything else: the binding says what x must be (type, dtype) in its own words
    if range is not None:
        _range_arg(range)
    return _core.histogram(x, bins, 0, None, variant, stream, block), None


# ---------------------------------------------------------------- histogram


def _histogram_cost(x, bins=10, *_, **__):
    # every element read once and binned once; the counts written once (int64)
    return Cost(bytes=nbytes(x) + 8 * int(bins), flops=numel(x))


def _histogram_example(n, rng):
    """Random bytes into 256 bins: the bincount of bytes, the lab's headline case."""
    return (rng.integers(0, 256, size=n, dtype=np.uint8), 256)


def _peer_range(x, bins, range):
    dtype = _dtype_of(x)
    if dtype in INT_DTYPES:
        lo = _integer_lo(range, bins)
        return lo, lo + bins
    return range


def _cupy_histogram(x, bins=10, range=None, **_):
    cupy = _peers.cupy_with_cub()
    cx = _peers.as_peer("cupy", x)
    if _dtype_of(x) in INT_DTYPES and _peer_range(x, bins, range)[0] == 0:
        return lambda: cupy.bincount(cx, minlength=bins)
    r = _peer_range(x, bins, range)
    return lambda: cupy.histogram(cx, bins, range=r)


def _torch_histogram(x, bins=10, range=None, **_):
    import torch
    tx = _peers.as_peer("torch", x)
    if _dtype_of(x) in INT_DTYPES and _peer_range(x, bins, range)[0] == 0:
        return lambda: torch.bincount(tx, minlength=bins)
    lo, hi = _peer_range(x, bins, range) or (float(tx.min()), float(tx.max()))
    return lambda: torch.histc(tx, bins, lo, hi)


@op("histogram", cost=_histogram_cost, size=lambda x, *_, **__: numel(x),
    example=_histogram_example, demo_size={"gpu": 1 << 28, "cpu": 1 << 24},
    peers={"cupy": _cupy_histogram, "torch": _torch_histogram})
def histogram_counts(x, bins=10, range=None, variant=None, stream=None, block=None):
    """The counts of histogram(x, bins, range): int64, `bins` of them (a DeviceArray for device
    x). This is the op that gl.bench, gl.sweep and gl.variants("histogram") know."""
    return _counts_and_edges(x, bins, range, variant, stream, block, edges=False)[0]


def histogram(x, bins=10, range=None, variant=None, stream=None, block=None):
    """(counts, edges) as np.histogram(x, bins, range) gives them, for float32/float64 data, and
    for integer data in unit-width bins (see the module's text for the exact rules). counts:
    int64; edges: bins + 1 values of NumPy's edge dtype. x: any shape (flattened),
    C-contiguous. bins: 1 to MAX_BINS = 65536."""
    counts, edges = _counts_and_edges(x, bins, range, variant, stream, block)
    return counts, _place_like(x, edges, stream)


histogram.__gpulab_op__ = histogram_counts.__gpulab_op__  # gl.bench(gl.histogram, ...) works


# ---------------------------------------------------------------- histogram_rgb


def _rgb_cost(img, **_):
    # every channel value read once; 3 x 256 int64 counts written
    return Cost(bytes=nbytes(img) + 8 * 3 * RGB_BINS, flops=numel(img))


def _rgb_example(n, rng):
    """A random uint8 image of about n values (n / 3 pixels, nearly square)."""
    pixels = max(1, n // 3)
    h = max(1, math.isqrt(pixels))
    return (rng.integers(0, 256, size=(h, max(1, pixels // h), 3), dtype=np.uint8),)


def _torch_rgb(img, **_):
    import torch
    t = _peers.as_peer("torch", img)
    offsets = torch.arange(3, device=t.device) * RGB_BINS
    return lambda: torch.bincount((t.reshape(-1, 3).long() + offsets).flatten(),
                                  minlength=3 * RGB_BINS).reshape(3, RGB_BINS)


def _cupy_rgb(img, **_):
    cupy = _peers.cupy_with_cub()
    c = _peers.as_peer("cupy", img)
    offsets = cupy.arange(3) * RGB_BINS
    return lambda: cupy.bincount((c.reshape(-1, 3).astype(cupy.int64) + offsets).ravel(),
                                 minlength=3 * RGB_BINS).reshape(3, RGB_BINS)


@op("histogram_rgb", cost=_rgb_cost, size=lambda img, **_: numel(img), example=_rgb_example,
    demo_size={"gpu": 3 * 8192 * 8192, "cpu": 3 * 1024 * 1024},
    peers={"torch": _torch_rgb, "cupy": _cupy_rgb})
def histogram_rgb(img, variant=None, stream=None, block=None):
    """Per-channel histograms of an (H, W, 3) RGB image: a (3, 256) int64 array, row c the
    histogram of channel c. uint8 values v count in bin v; float32 values (meant in [0, 1), as
    S4's) in bin floor(v * 256), clamped to [0, 255] (so 1.0 and above join bin 255, negatives
    bin 0); NaN is not counted."""
    return _core.histogram_rgb(img, variant, stream, block)


def reference_rgb(img):
    """The NumPy reference of histogram_rgb (the rule above)."""
    img = np.asarray(img)
    flat = img.reshape(-1, 3)
    out = np.zeros((3, RGB_BINS), np.int64)
    for c in range(3):
        v = flat[:, c]
        if v.dtype == np.uint8:
            bins = v.astype(np.int64)
        else:
            v = v[~np.isnan(v)]
            bins = np.clip(np.floor(v.astype(np.float32) * np.float32(256)), 0, 255).astype(np.int64)
        out[c] = np.bincount(bins, minlength=RGB_BINS)
    return out
