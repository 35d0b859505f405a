"""gl.sparse.rmat, the Graph500 R-MAT generator: the NumPy path's matrix (shape, dtypes, edge
count, reproducibility, the skew of its degrees and the scatter of its hubs, the quadrant
probabilities), its argument errors, and on the GPU the device path's matrix equal to the NumPy
path's for the same seed."""

import numpy as np
import pytest

import gpulab as gl
from gpulab.labs import sparse as sparse_lab

from conftest import GPU


def host(*args, **kwargs):
    return gl.sparse.rmat(*args, device=False, **kwargs)


def degrees(A):
    return np.diff(np.asarray(A.indptr, np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shape_dtypes_and_canonical_rows(dtype):
    A = host(8, 4, seed=1, dtype=dtype)
    assert A.shape == (256, 256) and not A.on_device
    assert A.dtype == np.dtype(dtype) and A.index_dtype == np.dtype(np.int32)
    assert A.indices.dtype == np.int32 and A.indptr.shape == (257,)
    assert 0 < A.nnz <= 4 * 256
    # every row's columns strictly increase: repeats were merged, nothing left unsorted
    rows = np.repeat(np.arange(256), degrees(A))
    same_row = rows[1:] == rows[:-1]
    assert np.all(np.diff(A.indices.astype(np.int64))[same_row] > 0)


@pytest.mark.parametrize("scale, edge_factor", [(1, 1), (5, 3), (9, 16), (12, 2)])
def test_values_count_every_edge(scale, edge_factor):
    A = host(scale, edge_factor, seed=scale)
    assert A.data.sum(dtype=np.float64) == edge_factor << scale
    assert np.all(A.data >= 1) and np.all(A.data == np.round(A.data))


def test_same_seed_same_matrix_other_seed_other_matrix():
    A, B, C = host(10, seed=7), host(10, seed=7), host(10, seed=8)
    for x, y in zip((A.indptr, A.indices, A.data), (B.indptr, B.indices, B.data)):
        np.testing.assert_array_equal(x, y)
    assert A.nnz != C.nnz or not np.array_equal(A.indices, C.indices)


def test_graph500_degrees_are_skewed():
    d = degrees(host(14, seed=0))
    assert d.max() > 20 * d.mean()


def test_permutation_scatters_the_hubs():
    hubs = [int(np.argmax(degrees(host(10, seed=s)))) for s in range(10)]
    assert sum(h != 0 for h in hubs) >= 8
    assert len(set(hubs)) >= 5


def test_equal_quadrants_give_a_near_uniform_graph():
    d = degrees(host(14, a=0.25, b=0.25, c=0.25, seed=0))
    assert d.max() < 3 * d.mean() and d.std() < 0.5 * d.mean()


def test_quadrant_probabilities_at_scale_one():
    # one level: edges land in the four quadrants with probabilities a, b, c, d, the labels
    # possibly swapped by the permutation (the same one for rows and columns)
    a, b, c, d = 0.5, 0.25, 0.15, 0.1
    edges = 1 << 17
    A = host(1, edges // 2, a=a, b=b, c=c, seed=3, dtype=np.float64).toarray() / edges
    p0 = int(np.argmax(np.diag(A)))
    p1 = 1 - p0
    np.testing.assert_allclose([A[p0, p0], A[p0, p1], A[p1, p0], A[p1, p1]], [a, b, c, d],
                               atol=0.01)


def test_one_quadrant_puts_every_edge_on_one_entry():
    # a = 1: every edge is (0, 0) before the permutation, so one self-loop holds them all
    A = host(6, 5, a=1.0, b=0.0, c=0.0, seed=2)
    assert A.nnz == 1 and A.data[0] == 5 * 64
    row = int(np.flatnonzero(degrees(A))[0])
    assert A.indices[0] == row
    B = host(6, 5, a=0.0, b=1.0, c=0.0, seed=2)  # every edge (0, n - 1): off the diagonal
    assert B.nnz == 1 and B.indices[0] != int(np.flatnonzero(degrees(B))[0])


@pytest.mark.parametrize("scale", [1, 2, 3, 7, 10, 13])
def test_feistel_is_a_permutation(scale):
    n = 1 << scale
    p = sparse_lab._feistel(np.arange(n, dtype=np.uint64), scale, 0x1234567890ABCDEF)
    np.testing.assert_array_equal(np.sort(p), np.arange(n, dtype=np.uint64))
    if scale >= 7:
        assert np.count_nonzero(p == np.arange(n, dtype=np.uint64)) < n // 8


@pytest.mark.parametrize("kwargs, error", [
    ({"scale": 0}, ValueError),
    ({"scale": 32}, ValueError),
    ({"scale": 2.5}, TypeError),
    ({"scale": "8"}, TypeError),
    ({"scale": 4, "edge_factor": 0}, ValueError),
    ({"scale": 4, "edge_factor": 1.5}, TypeError),
    ({"scale": 30, "edge_factor": 1 << 20}, ValueError),
    ({"scale": 4, "a": 0.6, "b": 0.3, "c": 0.2}, ValueError),
    ({"scale": 4, "a": -0.1}, ValueError),
    ({"scale": 4, "c": float("nan")}, ValueError),
    ({"scale": 4, "b": "0.2"}, TypeError),
    ({"scale": 4, "seed": -1}, ValueError),
    ({"scale": 4, "seed": 1 << 64}, ValueError),
    ({"scale": 4, "dtype": np.int32}, TypeError),
    ({"scale": 4, "dtype": np.complex64}, TypeError),
])
@pytest.mark.parametrize("device", [False, True])
def test_argument_errors(kwargs, error, device):
    with pytest.raises(error):
        gl.sparse.rmat(**kwargs, device=device)


@pytest.mark.skipif(GPU, reason="the fallback is taken only without a GPU")
def test_device_true_without_a_gpu_builds_on_the_host():
    A = gl.sparse.rmat(6, 2, seed=4)
    assert not A.on_device
    np.testing.assert_array_equal(A.indices, host(6, 2, seed=4).indices)


@pytest.mark.gpu
@pytest.mark.parametrize("scale, edge_factor, seed, dtype", [
    (1, 1, 0, np.float32), (2, 3, 1, np.float64), (7, 16, 2, np.float32),
    (12, 16, 3, np.float64), (15, 8, 4, np.float32), (16, 16, 5, np.float32)])
def test_device_matrix_equals_the_host_one(scale, edge_factor, seed, dtype):
    D = gl.sparse.rmat(scale, edge_factor, seed=seed, dtype=dtype)
    H = host(scale, edge_factor, seed=seed, dtype=dtype)
    assert D.on_device and D.shape == H.shape
    assert D.index_dtype == H.index_dtype and D.dtype == H.dtype
    for d, h in zip((D.indptr, D.indices, D.data), (H.indptr, H.indices, H.data)):
        np.testing.assert_array_equal(d.get(), h)


@pytest.mark.gpu
def test_device_matrix_with_uneven_quadrants_equals_the_host_one():
    args = dict(scale=11, edge_factor=5, a=0.45, b=0.05, c=0.3, seed=1 << 63)
    D, H = gl.sparse.rmat(**args), host(**args)
    for d, h in zip((D.indptr, D.indices, D.data), (H.indptr, H.indices, H.data)):
        np.testing.assert_array_equal(d.get(), h)


@pytest.mark.gpu
def test_spmv_on_the_device_matrix_matches_scipy():
    sp = pytest.importorskip("scipy.sparse")
    D = gl.sparse.rmat(14, 16, seed=9, dtype=np.float64)
    x = np.random.default_rng(0).standard_normal(D.shape[1])
    y = gl.spmv(D, gl.to_device(x)).get()
    ref = sp.csr_matrix((D.data.get(), D.indices.get(), D.indptr.get()), shape=D.shape) @ x
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12 * np.abs(x).sum())


@pytest.mark.gpu
def test_more_than_free_device_memory_is_refused():
    with pytest.raises(ValueError,
                       match=r"rmat needs .*bytes of workspace.*; .* free on the device"):
        gl.sparse.rmat(31, 1 << 16)
