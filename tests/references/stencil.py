"""The stencil lab's references: the stencil on numpy.pad in float64, Jacobi sweeps in float64,
and the bounds the variants are held to.

The stencil's bound. A cell's output is a sum of k products w_t u_t (k the nonzero weights),
accumulated in the grid's dtype in some order, the weights first rounded to that dtype (a
relative error of u each). So (Higham 3.1)

    |out - out64| <= (gamma_k(u) + u + gamma_k(u64)) * sum_t |w_t| |u_t| + tiny,

u = eps / 2 of the dtype. The fixed policy's shell copies its input: exact.

Jacobi's bound. An iterate is an average of its neighbours plus h^2 f / 2d, so its size never
exceeds S = max|u0| + k max|h^2 f| / 2d after k sweeps. One sweep in floating point adds at most
(2d + 2) u (S + max|h^2 f|) to a cell, and the sweep's map is non-expansive in the max-norm, so
the errors of k sweeps add up: |u_k - u64_k| <= k (2d + 2) eps (S + max|h^2 f|), eps = 2u.
"""

import itertools
import math

import numpy as np

PAD_MODES = {"zero": "constant", "clamp": "edge", "periodic": "wrap", "reflect": "symmetric",
             "fixed": "constant"}


def weights_array(weights, ndim):
    if isinstance(weights, str):
        from gpulab.labs.stencil import named_weights
        return named_weights(weights)
    return np.asarray(weights, np.float64)


def shell_mask(shape, r):
    """True for the cells within r of a face (those the fixed policy copies)."""
    mask = np.zeros(shape, bool)
    for axis, n in enumerate(shape):
        index = np.arange(n)
        edge = (index < r) | (index >= n - r)
        mask |= edge.reshape([-1 if a == axis else 1 for a in range(len(shape))])
    return mask


def correlate(u64, w, boundary):
    """sum_k w[k] u[i + k - r] over the nonzero weights, u padded by numpy.pad."""
    r = w.shape[0] // 2
    padded = np.pad(u64, r, mode=PAD_MODES[boundary]) if u64.size else u64
    out = np.zeros(u64.shape)
    if u64.size == 0:
        return out
    for k in itertools.product(*(range(s) for s in w.shape)):
        if w[k] != 0:
            out += w[k] * padded[tuple(slice(o, o + n) for o, n in zip(k, u64.shape))]
    return out


def stencil_reference(u, weights, boundary="zero"):
    u64 = np.asarray(u, np.float64)
    w = weights_array(weights, u64.ndim)
    out = correlate(u64, w, boundary)
    if boundary == "fixed" and u64.size:
        shell = shell_mask(u64.shape, w.shape[0] // 2)
        out[shell] = u64[shell]
    return out


def check_stencil(got, u, weights, boundary="zero"):
    u = np.asarray(u)
    got = np.asarray(got)
    assert got.dtype == u.dtype and got.shape == u.shape, (got.dtype, got.shape, u.shape)
    w = weights_array(weights, u.ndim)
    want = stencil_reference(u, w, boundary)
    k = int(np.count_nonzero(w))
    unit = np.finfo(u.dtype).eps / 2
    gamma = k * unit / (1 - k * unit) + unit + k * 2.0 ** -53
    bound = gamma * correlate(np.abs(u.astype(np.float64)), np.abs(w), boundary) + \
        np.finfo(u.dtype).tiny
    if boundary == "fixed" and u.size:
        bound[shell_mask(u.shape, w.shape[0] // 2)] = 0.0  # copied: exact
    err = np.abs(got.astype(np.float64) - want)
    bad = np.flatnonzero(~(err <= bound))
    assert bad.size == 0, (f"stencil {u.shape} {u.dtype} {boundary}: {bad.size} of {u.size} "
                           f"outside the bound; first at {np.unravel_index(bad[0], u.shape)}: got "
                           f"{got.flat[bad[0]]!r}, want {want.flat[bad[0]]!r}")


# ---------------------------------------------------------------- jacobi


def jacobi_reference(f, u0, h, sweeps):
    """(u after `sweeps` float64 Jacobi sweeps, the max-norm residual of each sweep's start)."""
    f64 = np.asarray(f, np.float64)
    u = np.array(u0, np.float64)
    ndim = u.ndim
    inner = (slice(1, -1),) * ndim
    updates = []
    if any(n < 3 for n in u.shape):
        return u, [0.0] * sweeps
    for _ in range(sweeps):
        total = h * h * f64[inner]
        for axis in range(ndim):
            lo = tuple(slice(0, -2) if a == axis else slice(1, -1) for a in range(ndim))
            hi = tuple(slice(2, None) if a == axis else slice(1, -1) for a in range(ndim))
            total = total + u[lo] + u[hi]
        new = u.copy()
        new[inner] = total / (2 * ndim)
        updates.append(float(np.max(np.abs(new - u))) * 2 * ndim / (h * h))
        u = new
    return u, updates


def jacobi_bound(f, u0, h, sweeps, dtype):
    ndim = np.ndim(f)
    hf = h * h * float(np.max(np.abs(f))) if np.size(f) else 0.0
    s = (float(np.max(np.abs(u0))) if np.size(u0) else 0.0) + sweeps * hf / (2 * ndim)
    return sweeps * (2 * ndim + 2) * np.finfo(dtype).eps * (s + hf) + np.finfo(dtype).tiny


def check_jacobi(got, f, u0=None, h=1.0, iters=None, tol=None, check_every=50):
    f = np.asarray(f)
    u0 = np.zeros_like(f) if u0 is None else np.asarray(u0)
    u = np.asarray(got.u)
    assert u.dtype == f.dtype and u.shape == f.shape, (u.dtype, u.shape, f.shape)
    if tol is None:
        assert got.sweeps == iters, (got.sweeps, iters)
        assert len(got.residuals) == math.ceil(iters / check_every), len(got.residuals)
    want, updates = jacobi_reference(f, u0, h, got.sweeps)
    bound = jacobi_bound(f, u0, h, got.sweeps, f.dtype)
    err = np.abs(u.astype(np.float64) - want)
    assert np.all(err <= bound), \
        f"jacobi {f.shape} {f.dtype}: max error {err.max() if err.size else 0:.3g} > {bound:.3g}"
    # check i is the residual of sweep min((i + 1) check_every, sweeps); the iterates' error
    # reaches it twice, scaled by 2d / h^2
    checked = [updates[min((i + 1) * check_every, got.sweeps) - 1]
               for i in range(len(got.residuals))]
    scale = 2 * f.ndim / (h * h)
    assert np.allclose(got.residuals, checked, rtol=1e-3, atol=4 * bound * scale), \
        (got.residuals, checked)
    if tol is not None and got.converged:
        assert got.residuals[-1] <= tol


CHECKS = {"stencil": check_stencil, "jacobi": check_jacobi}
