"""spmm's cuSPARSE rung at its best: its first call for a matrix and k times every algorithm
cuSPARSE documents for CSR with row-major B and C and later calls run the fastest. The choice,
named by gl.sparse.cusparse_spmm_algorithm, is one of the documented algorithms and stays put,
and the product is right on the choosing call and after it, for B of 1, 8, 32 and 33 columns,
float32 and float64 values and int32 and int64 indices; more matrices than the table of choices
holds; and the arguments' errors."""

import numpy as np
import pytest

import gpulab as gl
from conftest import rng_for
from references import sparse as ref

pytest.importorskip("scipy.sparse")  # the reference products

DOCUMENTED = {"CUSPARSE_SPMM_ALG_DEFAULT", "CUSPARSE_SPMM_CSR_ALG1", "CUSPARSE_SPMM_CSR_ALG2",
              "CUSPARSE_SPMM_CSR_ALG3"}
KS = (1, 8, 32, 33)


def device_matrix(rng, dtype, index, rows=2000, cols=700, unsorted=False, duplicates=False):
    """(A, raw): a rows x cols matrix of 0-39 entries a row (every seventh row empty), its arrays
    put on the device as they are (a host CSR would sort and merge its columns), and the raw
    arrays for the reference check."""
    lengths = rng.integers(0, 40, rows)
    lengths[::7] = 0
    indptr, indices, data = ref.raw_csr(rows, cols, lengths, rng, duplicates=duplicates,
                                        unsorted=unsorted)
    data = data.astype(dtype)
    arrays = (indptr.astype(index), indices.astype(index), data)
    A = gl.CSR(*(gl.to_device(a) for a in arrays), shape=(rows, cols))
    return A, (indptr, indices, data, (rows, cols))


def check_product(A, raw, k, rng):
    B = rng.standard_normal((A.shape[1], k)).astype(A.dtype)
    C = gl.spmm(A, gl.to_device(B), variant="cusparse")
    ref.check_spmm_arrays(C.get(), *raw, B, A.dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("index", [np.int32, np.int64], ids=["int32", "int64"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_chosen_algorithm_is_documented_and_its_product_right(dtype, index):
    rng = rng_for("cusparse_spmm", np.dtype(dtype).name, np.dtype(index).name)
    A, raw = device_matrix(rng, dtype, index)
    for k in KS:
        check_product(A, raw, k, rng)  # the call that times the algorithms and chooses
        name = gl.sparse.cusparse_spmm_algorithm(A, k)
        assert name in DOCUMENTED, f"k={k}: {name!r}"
        check_product(A, raw, k, rng)  # a later call, by the chosen algorithm alone
        assert gl.sparse.cusparse_spmm_algorithm(A, k) == name, f"k={k}: chosen again"


@pytest.mark.gpu
def test_unsorted_and_repeated_columns():
    """Device matrices are taken as they are: every algorithm the rung may choose sums what a
    row holds, in any order."""
    rng = rng_for("cusparse_spmm", "unsorted")
    A, raw = device_matrix(rng, np.float64, np.int32, unsorted=True, duplicates=True)
    for k in KS:
        check_product(A, raw, k, rng)
        assert gl.sparse.cusparse_spmm_algorithm(A, k) in DOCUMENTED


@pytest.mark.gpu
def test_more_matrices_than_the_table_holds():
    """Twelve matrices in turn, then the first again: choices are replaced, least recently used
    first, and every product stays right."""
    rng = rng_for("cusparse_spmm", "many")
    matrices = [device_matrix(rng, np.float32, np.int32, rows=300 + 10 * i, cols=90)
                for i in range(12)]
    for A, raw in matrices + matrices[:1]:
        check_product(A, raw, 8, rng)
        assert gl.sparse.cusparse_spmm_algorithm(A, 8) in DOCUMENTED


@pytest.mark.gpu
def test_a_matrix_without_nonzeros_calls_no_cusparse():
    A = gl.CSR(*(gl.to_device(a) for a in (np.zeros(6, np.int32), np.zeros(0, np.int32),
                                           np.zeros(0, np.float32))), shape=(5, 4))
    assert gl.sparse.cusparse_spmm_algorithm(A, 3) is None


def test_algorithm_arguments_are_checked():
    A = gl.sparse.poisson2d(3)
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        gl.sparse.cusparse_spmm_algorithm(A, 0)
    with pytest.raises(TypeError, match="k must be an integer, got float"):
        gl.sparse.cusparse_spmm_algorithm(A, 2.0)
