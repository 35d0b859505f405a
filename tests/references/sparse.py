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


CHECKS = {"spmv": check_spmv, "spmm": check_spmm}
