"""The concepts lab's references: divergence, warp_reduce, counter, sin and lookup.

The checks take only (got, *args), not the variant, so for the ops with deliberate races they
check what every variant promises: warp_reduce's sums are exact wherever no trial went wrong,
counter's count lies in [1, expected]. tests/labs/test_concepts.py checks the exact variants
exactly."""

import numpy as np

import gpulab as gl

EPS32 = float(np.finfo(np.float32).eps)


def assert_divergence_close(got, x, key, iterations=128):
    """Within divergence_reference's bound of the float64 closed form; non-finite inputs give
    the float64 result's non-finite value."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.float32 and got.shape == x.shape
    ref, bound = gl.concepts.divergence_reference(x, key, iterations)
    got64 = got.astype(np.float64)
    finite = np.isfinite(ref)
    assert np.array_equal(np.isnan(got64[~finite]), np.isnan(ref[~finite]))
    assert np.array_equal(got64[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)])
    err = np.abs(got64[finite] - ref[finite])
    bad = np.flatnonzero(~(err <= bound[finite]))
    assert bad.size == 0, (f"{bad.size} of {x.size} elements off; first: got "
                           f"{got64[finite][bad[0]]!r}, want {ref[finite][bad[0]]!r} "
                           f"(bound {bound[finite][bad[0]]:.3g})")


def assert_warp_reduce_consistent(got, x, trials=1):
    """(2, blocks) int32: wrong counts in [0, trials], and every block whose last sum is not
    the exact one counted at least one wrong trial. The block size is read from the shape."""
    assert isinstance(got, np.ndarray)
    n = np.asarray(x).size
    assert got.dtype == np.int32 and got.ndim == 2 and got.shape[0] == 2
    blocks = got.shape[1]
    if n == 0:
        assert blocks == 0
        return
    # the block size that gives this many blocks (it raises when none does)
    ref = gl.concepts.warp_reduce_reference(x, gl.concepts.block_of(n, blocks))
    sums, wrong = got
    assert ((0 <= wrong) & (wrong <= trials)).all(), f"wrong counts outside [0, {trials}]"
    unexplained = np.flatnonzero((sums != ref) & (wrong == 0))
    assert unexplained.size == 0, (f"block {unexplained[0]}: sum {sums[unexplained[0]]}, exact "
                                   f"{ref[unexplained[0]]}, yet no trial counted wrong")


def assert_warp_reduce_exact(got, x, trials=1):
    """The correct variants: every sum exact and no trial wrong."""
    assert_warp_reduce_consistent(got, x, trials)
    if got.shape[1]:
        block = gl.concepts.block_of(np.asarray(x).size, got.shape[1])
        np.testing.assert_array_equal(got[0], gl.concepts.warp_reduce_reference(x, block))
        assert not got[1].any(), f"{int(got[1].sum())} wrong block sums from a correct variant"


def assert_counter_bounded(got, x):
    """A count in [1, expected] (0 when nothing counts): what a racy counter can give."""
    got = np.asarray(got)
    assert got.shape == () and got.dtype == np.int64
    expected = int(np.count_nonzero(x))
    if expected == 0:
        assert int(got) == 0
    else:
        assert 1 <= int(got) <= expected, f"count {int(got)} outside [1, {expected}]"


def assert_counter_exact(got, x):
    assert_counter_bounded(got, x)
    assert int(got) == int(np.count_nonzero(x))


def sin_bound(x, intrinsic=True):
    """The absolute error allowed for float32 sin(x): 2 ulps of 1 for every variant, and for
    __sinf the CUDA Programming Guide's 2^-21.41 plus the error of its range reduction. That
    reduction is one float32 multiply by 1/(2 pi), rounded toward zero (FMUL.RZ before MUFU.SIN
    in the sm_90 SASS): a relative error of about 1.33 * 2^-23 in x / (2 pi), so an angle error
    of about |x| * 2^-22.6, bounded here by |x| * 2^-22. Past |x| ~ 2^22 that exceeds 1: __sinf
    promises nothing there, and neither does this bound."""
    x64 = np.abs(np.asarray(x, dtype=np.float64))
    bound = np.full(x64.shape, 2 * EPS32)
    if intrinsic:
        bound = np.maximum(bound, 2 ** -21.41 + x64 * 2 ** -22)
    return bound


def assert_sin_close(got, x, intrinsic=True):
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.float32 and got.shape == x.shape
    with np.errstate(invalid="ignore"):  # sin(inf) is NaN, as it should be
        ref = np.sin(x.astype(np.float64))
    err = np.abs(got.astype(np.float64) - ref)
    finite = np.isfinite(x)
    odd = got[~finite]
    if intrinsic:  # __sinf's documented bounds say nothing of inf and NaN: only "a sine or NaN"
        assert (np.isnan(odd) | (np.abs(odd) <= 1)).all(), "__sinf of inf or NaN out of [-1, 1]"
    else:
        assert np.isnan(odd).all(), "sin of inf or NaN must be NaN"
    bound = sin_bound(x, intrinsic)
    bad = np.flatnonzero(~(err[finite] <= bound[finite]))
    assert bad.size == 0, (f"{bad.size} of {x.size} off; first at x = {x[finite][bad[0]]!r}: "
                           f"error {err[finite][bad[0]]:.3g} > {bound[finite][bad[0]]:.3g}")


def assert_sin_ulp(got, x, ulps=1):
    """Within `ulps` float32 ulps of the true value (sinf's and libm's promise): the error over
    the spacing of float32 numbers at the true value."""
    ref = np.sin(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - ref) / ulp
    worst = int(np.argmax(err)) if err.size else 0
    assert err.size == 0 or err[worst] <= ulps, (f"{err[worst]:.2f} ulp at x = {x.flat[worst]!r}: "
                                                 f"got {got.flat[worst]!r}")


def assert_lookup_exact(got, table, idx):
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.float32 and got.shape == idx.shape
    want = np.take(table, idx, mode="clip") if idx.size else np.zeros(idx.shape, np.float32)
    np.testing.assert_array_equal(got, want)


CHECKS = {
    "divergence": lambda got, x, key, iterations=128: assert_divergence_close(
        got, x, key, iterations),
    "warp_reduce": lambda got, x, trials=1: assert_warp_reduce_consistent(got, x, trials),
    "counter": lambda got, x: assert_counter_bounded(got, x),
    "sin": lambda got, x: assert_sin_close(got, x),
    "lookup": lambda got, table, idx: assert_lookup_exact(got, table, idx),
}
