"""The histogram lab's references: np.histogram and np.bincount. Counts are integers and every
variant is exact, so the checks are equalities, not tolerances."""

import numpy as np

import gpulab as gl


def numpy_histogram(x, bins=10, range=None):
    """What gl.histogram promises: np.histogram itself for float data; for integer data the
    unit-width bins [lo, lo + bins] with range defaulting to (0, bins)."""
    x = np.asarray(x)
    if x.dtype.kind in "iu" and range is None:
        range = (0, bins)
    return np.histogram(x.ravel(), bins, range=range)


def assert_counts_equal(got, want):
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == np.int64, got.dtype
    assert got.shape == want.shape, (got.shape, want.shape)
    diff = np.flatnonzero(got != want)
    assert diff.size == 0, (f"{diff.size} of {want.size} bins differ; first: bin {diff[0]} got "
                            f"{got[diff[0]]}, want {want[diff[0]]}")


def check_histogram(got, x, bins=10, range=None):
    assert_counts_equal(got, numpy_histogram(x, bins, range)[0])


def check_histogram_rgb(got, img):
    assert_counts_equal(got, gl.labs.histogram.reference_rgb(img))


CHECKS = {"histogram": check_histogram, "histogram_rgb": check_histogram_rgb}
