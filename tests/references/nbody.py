"""The n-body lab's reference: softened all-pairs accelerations in float64."""

import numpy as np


def nbody_reference(pos, mass, eps, G=1.0, rows=None):
    """Softened all-pairs accelerations in float64 (chunked over i to bound memory), of every
    body or of the bodies `rows` only (each from all N)."""
    p, m = pos.astype(np.float64), mass.astype(np.float64)
    rows = np.arange(len(p)) if rows is None else np.asarray(rows)
    out = np.empty((len(rows), 3))
    step = max(1, (1 << 22) // max(len(p), 1))
    for i0 in range(0, len(rows), step):
        d = p[None, :, :] - p[rows[i0:i0 + step], None, :]
        r2 = (d * d).sum(-1) + float(eps) ** 2
        out[i0:i0 + step] = G * ((m[None, :] * r2 ** -1.5)[:, :, None] * d).sum(1)
    return out


def assert_nbody_close(got, pos, mass, eps, G=1.0, rtol=1e-5):
    """Relative L2 error of the (N, 3) float32 result against the float64 reference < rtol."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.float32 and got.shape == pos.shape
    assert np.isfinite(got).all(), "non-finite accelerations (NaN poison left?)"
    ref = nbody_reference(pos, mass, eps, G)
    norm = np.linalg.norm(ref)
    err = np.linalg.norm(got.astype(np.float64) - ref)
    assert err <= rtol * norm or (norm == 0 and err == 0), (
        f"relative L2 error {err / norm if norm else err:.3g} > {rtol:g} at N={len(pos)}")


CHECKS = {
    "nbody_accel": lambda got, pos, mass, eps: assert_nbody_close(got, pos, mass, eps),
}
