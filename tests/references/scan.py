"""The scan lab's references: scan (np.cumsum, np.maximum/minimum.accumulate), compact (boolean
indexing) and nonzero (np.flatnonzero), with the float sums' rounding bound.

The bound. Every variant computes prefix i as some tree of sums over x[0..i]; a tree whose
longest root-to-leaf path has d additions rounds each term at most d times, so
    |y[i] - s[i]| <= d * eps * sum(|x[0..i]|)   (first order; s the exact prefix, float64 here).
d <= i for every tree (np.cumsum's serial loop is the worst), which is the bound CHECKS uses
for any variant. scan_depth(n, variant, block) is the smaller d of each variant, which the lab's
tests use: the one-block variants carry a running total from chunk to chunk (n / chunk steps),
the tiled ones chain tile prefixes (the look-back, up to one step per tile) or scan partials,
and inside a tile the thread's serial run, the warp's shuffles and the fold over warps add a
few dozen steps at most."""

import math

import numpy as np

def identity(op, dtype):
    dtype = np.dtype(dtype)
    if op == "sum":
        return dtype.type(0)
    if dtype.kind == "f":
        return dtype.type(-np.inf if op == "max" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if op == "max" else info.max)


def result_dtype(dtype, op):
    dtype = np.dtype(dtype)
    return np.dtype(np.int64) if (dtype == np.int32 and op == "sum") else dtype


def _sum_dtype(dtype):
    """The reference's accumulator: int64 for integers, float64 for float32, and for float64
    np.longdouble (x86-64: a 64-bit significand; elsewhere it may be float64 itself): a float64
    serial cumsum of 5 million values rounds by more than the bound the variants are held to
    (1.4-2x it at 3 and 1.6 million with scan_depth's d, found on the H100 when the tests' sizes
    grew), so it cannot be their reference."""
    if dtype.kind != "f":
        return np.dtype(np.int64)
    return np.dtype(np.longdouble if dtype == np.float64 else np.float64)


def reference(x, op="sum", inclusive=True):
    """The scan (float sums in _sum_dtype: wider than the result), and the result dtype."""
    x = np.asarray(x).ravel()
    out_dtype = result_dtype(x.dtype, op)
    if op == "sum":
        work = x.astype(_sum_dtype(x.dtype))
        ref = np.cumsum(work)
    else:
        ufunc = np.maximum if op == "max" else np.minimum
        ref = ufunc.accumulate(x) if x.size else x.copy()
    if not inclusive and ref.size:
        ref = np.concatenate([np.array([identity(op, out_dtype)], dtype=ref.dtype), ref[:-1]])
    return ref, out_dtype


def _log2(n):
    return math.ceil(math.log2(n + 1))


def scan_depth(n, variant=None, block=None):
    """A bound on the additions along any path of variant's sum tree for n elements (None: any
    variant: n). variant: the gl.Variant record or None."""
    if variant is None or variant.backend == "cpu" or n < 2:
        return max(n, 1)
    b = block or variant.tunables.get("block", {}).get("default", 256)
    name = variant.name
    if name == "hillis_steele":
        return math.ceil(n / b) + _log2(b) + 2
    if name == "blelloch":
        return math.ceil(n / (2 * b)) + 2 * _log2(2 * b) + 2
    if name == "scan_then_propagate":
        return 4 * _log2(n) + 2 * _log2(2 * b) + 8
    if name == "reduce_then_scan":
        tiles = math.ceil(n / (16 * b))
        return math.ceil(tiles / (2 * b)) + 5 * _log2(2 * b) + 24
    if name == "warp_shuffle":
        return math.ceil(n / 2048 / 2048) + 2 * _log2(2048) + 64
    if name == "decoupled_lookback":
        # a prefix and an aggregate a tile; tiles hold at least 2048 elements (8-byte: 256 x 4
        # x 2; int32 into int64: 256 x 6 x 4; 4-byte in and out: 256 x 9 x 4 = 9216); the
        # aggregate's own sum (the thread's run over its rounds, 36 at most, the warp's
        # shuffles, 5, the warps, 8) and an element's path inside its tile (its run, 4, 5, 8,
        # the rounds, 9) fit the 64
        return 2 * math.ceil(n / 2048) + 64
    return 2 * math.ceil(n / 256) + 64  # CUB: a look-back over tiles of at least 256


def scan_bound(x, depth):
    """eps * min(depth, i) * sum(|x[0..i]|) for each i (x's float dtype)."""
    x = np.asarray(x).ravel()
    eps = np.finfo(x.dtype).eps
    steps = np.minimum(np.arange(1, x.size + 1, dtype=np.float64), depth)
    return eps * steps * np.cumsum(np.abs(x.astype(np.float64)))


def assert_scan_close(got, x, op="sum", inclusive=True, depth=None):
    """got = scan(x, op, inclusive): dtype as np.cumsum's, 1-D of x's size; integers and max/min
    exact (NaN where NumPy has NaN); float sums within scan_bound (depth None: n, any tree)."""
    x = np.asarray(x)
    got = np.asarray(got)
    ref, out_dtype = reference(x, op, inclusive)
    assert got.dtype == out_dtype, f"dtype {got.dtype}, expected {out_dtype}"
    assert got.shape == (x.size,), f"shape {got.shape}, expected {(x.size,)}"
    if x.size == 0:
        return
    if op != "sum" or x.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref, err_msg=f"{op} scan (inclusive={inclusive})")
        return
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan), \
        f"NaN at {np.flatnonzero(np.isnan(got) != nan)[:5]} differs from NumPy's"
    inf = np.isinf(ref)
    assert np.array_equal(got[inf], ref[inf]), "infinities differ from NumPy's"
    finite = ~(nan | inf)
    bound = scan_bound(x, depth if depth is not None else x.size)
    if not inclusive:
        bound = np.concatenate([[0.0], bound[:-1]])
    err = np.abs(got[finite].astype(ref.dtype) - ref[finite]).astype(np.float64)
    bad = np.flatnonzero(err > bound[finite])
    assert bad.size == 0, (
        f"sum scan: {bad.size} prefixes off, first at {np.flatnonzero(finite)[bad[0]]}: got "
        f"{got[finite][bad[0]]!r}, want {ref[finite][bad[0]]!r}, bound {bound[finite][bad[0]]:.3g}")


def assert_compact_equal(got, x, mask=None):
    x = np.asarray(x)
    keep = (x != 0) if mask is None else np.asarray(mask)
    want = x[keep].ravel()
    got = np.asarray(got)
    assert got.dtype == x.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def assert_nonzero_equal(got, x):
    got = np.asarray(got)
    want = np.flatnonzero(np.asarray(x))
    assert got.dtype == np.int64 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


CHECKS = {
    "scan": lambda got, x: assert_scan_close(got, x),
    "compact": lambda got, x, mask=None: assert_compact_equal(got, x, mask),
    "nonzero": lambda got, x: assert_nonzero_equal(got, x),
}
