"""The sparse lab's references: float64 products from scipy.sparse, and the rounding bound the
variants are held to (spmm: the same bound for each column of C, a product A B[:, j]).

The bound. Row i of y = A x is a dot product of K_i terms (K_i: the entries row i stores), which
every variant sums in some order (serially, over warp lanes, across merge-path shares through
atomics, across COO runs). As for linalg's matvec (Higham 3.1, see references/linalg.py):

    |y_i - y64_i| <= (gamma_K(u) + gamma_K(u64)) * (|A| |x|)_i + tiny,    K = K_i + 1,

with y64 scipy's float64 product of the same stored values, u = eps / 2 of the dtype and tiny
its smallest normal. The +1 covers an input whose duplicate entries the CSR constructor summed
first (in the data's dtype): (a + b) x is a x + b x with one more rounding. A row with no
entries must give exactly 0.
"""

import numpy as np

from .linalg import assert_within, gamma

# S3 section 5.4's 4 x 4 example; row 2 stores its columns unsorted (0, 3, 2).
S3_INDPTR = np.array([0, 2, 3, 6, 7])
S3_INDICES = np.array([0, 2, 1, 0, 3, 2, 3])
S3_DATA = np.array([10.0, 3.0, 5.0, 2.0, 7.0, 1.0, 4.0])


def raw_csr(rows, cols, row_lengths, rng, duplicates=False, unsorted=True):
    """(indptr, indices, data) with the given row lengths; random columns, shuffled within each
    row (unsorted); with duplicates, every third entry repeats its row's first column."""
    lengths = np.asarray(row_lengths, np.int64)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = rng.integers(0, max(cols, 1), int(lengths.sum()))
    if duplicates:
        for r in range(rows):
            a, b = indptr[r], indptr[r + 1]
            indices[a + 2:b:3] = indices[a] if b > a else 0
    if not unsorted:
        for r in range(rows):
            indices[indptr[r]:indptr[r + 1]].sort()
    data = rng.standard_normal(indices.size)
    data[data == 0] = 0.5
    return indptr, indices, data


def cases(rng):
    """(name, indptr, indices, data, shape) of the awkward matrices."""
    out = [("s3_4x4", S3_INDPTR, S3_INDICES, S3_DATA, (4, 4)),
           ("0x0", np.array([0]), np.array([], np.int64), np.array([]), (0, 0)),
           ("0x5", np.array([0]), np.array([], np.int64), np.array([]), (0, 5)),
           ("all_empty_7x3", np.zeros(8, np.int64), np.array([], np.int64), np.array([]), (7, 3))]
    lengths = rng.integers(0, 4, 300)
    lengths[::7] = 0  # empty rows
    out.append(("empty_rows", *raw_csr(300, 50, lengths, rng), (300, 50)))
    huge = np.ones(200, np.int64)
    huge[77] = 5000  # one huge row among short ones
    out.append(("one_huge_row", *raw_csr(200, 6000, huge, rng), (200, 6000)))
    out.append(("tall_1000x3", *raw_csr(1000, 3, rng.integers(0, 4, 1000), rng), (1000, 3)))
    out.append(("wide_3x4099", *raw_csr(3, 4099, [1000, 0, 4099], rng), (3, 4099)))
    out.append(("duplicates", *raw_csr(100, 40, rng.integers(1, 30, 100), rng, duplicates=True),
                (100, 40)))
    out.append(("merge_edges_1x1", np.array([0, 1]), np.array([0]), np.array([3.0]), (1, 1)))
    out.append(("long_rows", *raw_csr(40, 300, rng.integers(30, 300, 40), rng), (40, 300)))
    return out


def typed_cases(rng):
    """(label, raw, A) for every matrix of cases() with int32 and int64 indices and float32 and
    float64 values: raw = (indptr, indices, data, shape) as given (data in the value dtype, for
    the check functions), A the gl.CSR built from them."""
    import gpulab as gl
    for name, indptr, indices, data, shape in cases(rng):
        for index in (np.int32, np.int64):
            for dtype in (np.float32, np.float64):
                typed = data.astype(dtype)
                A = gl.CSR(indptr.astype(index), indices.astype(index), typed, shape=shape)
                label = f"{name} {np.dtype(index)} {np.dtype(dtype)}"
                yield label, (indptr, indices, typed, shape), A


def scipy_csr(indptr, indices, data, shape):
    """The same matrix in scipy, float64."""
    import scipy.sparse as sp
    return sp.csr_matrix((np.asarray(data, np.float64), np.asarray(indices, np.int64),
                          np.asarray(indptr, np.int64)), shape=shape)


def check_spmv_arrays(got, indptr, indices, data, shape, x, dtype):
    """got against scipy's float64 product of the raw arrays (duplicates and unsorted columns
    as given)."""
    got = np.asarray(got)
    assert got.dtype == dtype, (got.dtype, dtype)
    ref = scipy_csr(indptr, indices, data, shape)
    x64 = np.asarray(x, np.float64)
    want = np.asarray(ref @ x64, np.float64).reshape(-1)
    absolute = scipy_csr(indptr, indices, np.abs(np.asarray(data, np.float64)), shape)
    scale = np.asarray(absolute @ np.abs(x64), np.float64).reshape(-1)
    k = np.diff(np.asarray(indptr, np.int64)) + 1
    bound = (gamma(k, dtype) + gamma(k, np.float64)) * scale + np.finfo(dtype).tiny
    empty = k == 1
    assert np.all(got[empty] == 0), "rows without entries must give exact zeros"
    assert_within(got, want, bound, f"spmv {shape} {np.dtype(dtype)}")


def check_spmv(got, A, x):
    check_spmv_arrays(got, A.indptr, A.indices, A.data, A.shape, x, A.dtype)


def check_spmm_arrays(got, indptr, indices, data, shape, B, dtype):
    """Each column of got against scipy's float64 product, with spmv's bound for that column."""
    got = np.asarray(got)
    B = np.asarray(B)
    assert got.shape == (shape[0], B.shape[1]), (got.shape, shape, B.shape)
    for j in range(B.shape[1]):
        check_spmv_arrays(np.ascontiguousarray(got[:, j]), indptr, indices, data, shape, B[:, j],
                          dtype)


def check_spmm(got, A, B):
    check_spmm_arrays(got, A.indptr, A.indices, A.data, A.shape, B, A.dtype)


def cg_reference(A, b, x0=None, rtol=1e-5, atol=0.0, maxiter=None, jacobi=False, check_every=1):
    """The CG every variant runs (cuda/sparse/cg.cu's variant 0), in float64 NumPy on the stored
    values of A: r0 = b - A x0, z = M^-1 r, p0 = z0; each iteration alpha = r.z / p.Ap, x += alpha
    p, r -= alpha Ap, beta = r.z_new / r.z, p = z + beta p; it stops once ||r|| <= max(rtol ||b||,
    atol), tested after every iteration. Returns (x, iterations, residuals: ||r|| at iteration
    0, every check_every-th and the last)."""
    m = scipy_csr(A.indptr, A.indices, A.data, A.shape)
    b = np.asarray(b, np.float64)
    n = b.size
    maxiter = 10 * n if maxiter is None else maxiter
    x = np.zeros(n) if x0 is None else np.asarray(x0, np.float64).copy()
    dinv = 1.0 / m.diagonal() if jacobi else np.ones(n)
    r = b - m @ x
    z = dinv * r
    p = z.copy()
    rz, rr = r @ z, r @ r
    tol2 = max(rtol * np.sqrt(b @ b), atol) ** 2
    residuals = [np.sqrt(rr)]
    k = 0
    while rr > tol2 and k < maxiter:
        k += 1
        q = m @ p
        alpha = rz / (p @ q)
        x += alpha * p
        r -= alpha * q
        z = dinv * r
        rz_new, rr = r @ z, r @ r
        if rr <= tol2 or k % check_every == 0 or k == maxiter:
            residuals.append(np.sqrt(rr))
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, k, np.array(residuals)


def cg_bound(A, k, dtype):
    """How far the k-th iterate of a variant may lie from cg_reference's, in the 2-norm relative
    to ||x_k||: each iteration's rounding (u of the dtype times the operation count of a row, the
    longest row's entries plus the vector updates' handful), carried through the next iterations
    and amplified at most by A's condition number, which the tests keep small (A + shift I). The
    factor 4 kappa (k + 1) (K + 8) u is the sum over iterations of u (K + 8) kappa each, doubled
    for the dots' reassociation and with room for the alpha and beta ratios' own rounding."""
    K = max(A.max_row, 1)
    kappa = cg_condition(A)
    return 4 * kappa * (k + 1) * (K + 8) * np.finfo(dtype).eps / 2


def cg_condition(A):
    """A bound on the 2-norm condition number of a symmetric A from Gershgorin's discs (large
    when a disc reaches zero)."""
    if A.shape[0] == 0:
        return 1.0
    m = scipy_csr(A.indptr, A.indices, A.data, A.shape)
    d = m.diagonal()
    off = np.asarray(abs(m).sum(axis=1)).reshape(-1) - np.abs(d)
    lo, hi = np.min(d - off), np.max(d + off)
    return hi / lo if lo > 0 else 1e12


def check_cg(got, A, b, x0=None, rtol=1e-5, atol=0.0, maxiter=None, M="jacobi"):
    """got (a CgResult, or its x alone) against cg_reference's iterate after as many iterations:
    x within cg_bound; the iteration count within 2 of the reference's, the residual history
    starting at ||r0|| and ending at or below the tolerance when converged."""
    x = np.asarray(getattr(got, "x", got))
    dtype = np.dtype(A.dtype)
    assert x.dtype == dtype and x.shape == (A.shape[0],), (x.dtype, x.shape)
    jacobi = M == "jacobi"
    k = getattr(got, "iterations", None)
    want, k_ref, res_ref = cg_reference(A, b, x0, rtol, atol, maxiter, jacobi)
    if k is not None and k != k_ref:
        assert abs(k - k_ref) <= 2, f"cg: {k} iterations, the float64 reference {k_ref}"
        want = cg_reference(A, b, x0, 0.0, 0.0, k, jacobi)[0]
    scale = max(np.linalg.norm(want), np.finfo(dtype).tiny)
    err = np.linalg.norm(x.astype(np.float64) - want) / scale
    bound = cg_bound(A, k_ref if k is None else k, dtype)
    assert err <= bound, f"cg {A.shape} {dtype}: relative error {err:.3g} > bound {bound:.3g}"
    if hasattr(got, "residuals") and len(res_ref):
        res = np.asarray(got.residuals)
        assert res.dtype == np.float64 and res.size >= 1
        rel = abs(res[0] - res_ref[0]) / max(res_ref[0], np.finfo(np.float64).tiny)
        assert rel <= 1e-5 if dtype == np.float32 else rel <= 1e-12, ("||r0||", res[0], res_ref[0])
        if got.converged:
            tol = max(rtol * np.linalg.norm(np.asarray(b, np.float64)), atol)
            assert res[-1] <= tol * (1 + 1e-6), (res[-1], tol)


CHECKS = {"spmv": check_spmv, "spmm": check_spmm, "cg": check_cg}


DIA_MAX_DIAGONALS = 32  # cuda/sparse/sparse.h's GLC_CG_DIA_MAX_DIAGONALS


def dia_refusal(A):
    """Why cg variant dia_fused refuses A, from its stored arrays: "more" (more than 32 distinct
    offsets col - row), "bytes" (k diagonals of n values would take more bytes than the CSR
    arrays: nnz values and indices and n + 1 row pointers), or None when it takes A."""
    indptr = np.asarray(A.indptr, np.int64)
    rows = np.repeat(np.arange(A.shape[0], dtype=np.int64), np.diff(indptr))
    k = np.unique(np.asarray(A.indices, np.int64) - rows).size
    if k > DIA_MAX_DIAGONALS:
        return "more"
    value, index = np.dtype(A.dtype).itemsize, np.dtype(A.index_dtype).itemsize
    if k * A.shape[0] * value > A.nnz * (value + index) + (A.shape[0] + 1) * index:
        return "bytes"
    return None
