"""The reduce lab's references: reduce, dot and norm2, with tolerances derived from the problem."""

import numpy as np


def reduce_bound(x, weights=None, dtype=None, sequential=False):
    """The rounding bound of a float reduction: c * eps * sum|x|, c = log2(n) + 2 (a tree of sums
    rounds each term at most log2(n) times; sequential sums of signed random data cancel their
    errors as well). sequential: terms of one sign summed in a loop, whose errors add up like a
    random walk of n steps: c gains sqrt(n). weights: the products x*y of a dot."""
    x64 = np.abs(np.asarray(x, dtype=np.float64)).ravel()
    if weights is not None:
        x64 = x64 * np.abs(np.asarray(weights, dtype=np.float64)).ravel()
    n = max(x64.size, 1)
    eps = np.finfo(dtype or np.asarray(x).dtype).eps
    return (np.log2(n) + 2 + (np.sqrt(n) if sequential else 0)) * eps * x64.sum()


def assert_reduce_close(got, x, op="sum"):
    """got is reduce(x, op): its dtype follows NumPy's rules; min/max are exact (NaN if any);
    float sums lie within reduce_bound of the float64 sum; int32 sums are exact int64."""
    x = np.asarray(x)
    got = np.asarray(got)
    assert got.shape == ()
    want_dtype = np.int64 if (x.dtype == np.int32 and op == "sum") else x.dtype
    assert got.dtype == want_dtype, f"dtype {got.dtype}, expected {np.dtype(want_dtype)}"
    if op in ("min", "max"):
        ref = getattr(np, op)(x)
        if np.isnan(ref):
            assert np.isnan(got), f"{op} of data with NaN gave {got}, expected NaN"
        else:
            assert got == ref, f"{op}: got {got!r}, want {ref!r}"
        return
    if x.dtype.kind == "i":
        ref = x.sum(dtype=np.int64)
        assert int(got) == int(ref), f"sum: got {got}, want {ref}"
        return
    ref = x.astype(np.float64).sum()
    bound = reduce_bound(x)
    assert abs(float(got) - ref) <= bound, f"sum: got {got!r}, want {ref!r} (bound {bound:.3g})"


def assert_dot_close(got, x, y):
    got = np.asarray(got)
    assert got.shape == () and got.dtype == x.dtype
    ref = np.dot(x.astype(np.float64), y.astype(np.float64))
    # float64 accumulation: the float32 result is off by its own rounding, plus float64's
    bound = np.finfo(x.dtype).eps * abs(ref) + reduce_bound(x, y, np.float64, sequential=True)
    assert abs(float(got) - ref) <= bound, f"dot: got {got!r}, want {ref!r} (bound {bound:.3g})"


def assert_norm2_close(got, x):
    got = np.asarray(got)
    assert got.shape == () and got.dtype == x.dtype
    ref = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    bound = np.finfo(x.dtype).eps * ref + reduce_bound(x, x, np.float64, sequential=True) / max(
        ref, 1e-300)
    assert abs(float(got) - ref) <= bound, f"norm2: got {got!r}, want {ref!r} (bound {bound:.3g})"


CHECKS = {
    "reduce": lambda got, x: assert_reduce_close(got, x),
    "dot": lambda got, x, y: assert_dot_close(got, x, y),
    "norm2": lambda got, x: assert_norm2_close(got, x),
}
