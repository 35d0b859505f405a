"""The saxpy lab's inputs and references: saxpy and matadd."""

import numpy as np

from . import nonzero_normal, rng_for


def saxpy_inputs(n, dtype, seed=0):
    rng = rng_for("saxpy", n, np.dtype(dtype).name, seed)
    a = float(rng.uniform(0.5, 4.0) * rng.choice([-1.0, 1.0]))
    return a, nonzero_normal(rng, n, dtype), nonzero_normal(rng, n, dtype)


def matadd_inputs(shape, dtype, seed=0):
    rng = rng_for("matadd", shape, np.dtype(dtype).name, seed)
    return nonzero_normal(rng, shape, dtype), nonzero_normal(rng, shape, dtype)


def assert_saxpy_close(got, a, x, y, c=2.0):
    """|got - ref| <= c*eps*(|a*x| + |y|) elementwise, with ref in float64.

    c = 2: a is rounded to the dtype (eps/2 of |a*x|), a*x is rounded (eps/2) and so is the sum
    (eps/2 of |a*x| + |y|); FMA contraction only removes one rounding."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert not np.isnan(got).any(), "some output elements were never written (NaN poison left)"
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    ref = a * x64 + y64
    eps = np.finfo(x.dtype).eps
    bound = c * eps * (np.abs(a * x64) + np.abs(y64))
    err = np.abs(got.astype(np.float64) - ref)
    bad = np.flatnonzero(err > bound)
    assert bad.size == 0, (f"{bad.size} of {x.size} elements off; first at {bad[0]}: got "
                           f"{got[bad[0]]!r}, want {ref[bad[0]]!r} (bound {bound[bad[0]]:.3g})")


def assert_matadd_close(got, A, B, c=1.0):
    """|got - ref| <= c*eps*(|A| + |B|) elementwise (one rounding), ref in float64."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == A.dtype and got.shape == A.shape
    assert not np.isnan(got).any(), "some output elements were never written (NaN poison left)"
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = A64 + B64
    eps = np.finfo(A.dtype).eps
    bound = c * eps * (np.abs(A64) + np.abs(B64))
    bad = np.argwhere(np.abs(got.astype(np.float64) - ref) > bound)
    assert len(bad) == 0, (f"{len(bad)} of {A.size} elements off; first at {tuple(bad[0])}: got "
                           f"{got[tuple(bad[0])]!r}, want {ref[tuple(bad[0])]!r}")


CHECKS = {
    "saxpy": lambda got, a, x, y: assert_saxpy_close(got, a, x, y),
    "matadd": lambda got, A, B: assert_matadd_close(got, A, B),
}
