"""The sparse lab: every spmv and spmm variant against scipy.sparse (float64) on S3's 4 x 4 example
and on awkward matrices (empty rows, one huge row, all empty, 0 x 0, rectangular, unsorted and
duplicate columns), with int32 and int64 indices, float32 and float64 data, from NumPy and from
device inputs; the CSR type's construction and canonicalization; the generated matrices; the format
advice; the errors, which name their argument; the name -> id numbering of cuda/sparse/sparse.h; and
the default SpMV past 2^31 nonzeros (gpu, large)."""

import subprocess
import sys

import numpy as np
import pytest

import gpulab as gl
from conftest import child_env, emulator, fetched, placed, rng_for, variant_where_params
from references import sparse as ref

sp = pytest.importorskip("scipy.sparse")

SPMV_VW = variant_where_params("spmv")
SPMM_VW = variant_where_params("spmm")
# B's column counts: one, odd, the register tile (4) and one past it, a warp and one past it
SPMM_KS = [1, 3, 4, 5, 32, 33]




@pytest.mark.parametrize("v, where", SPMV_VW)
def test_spmv_against_scipy(v, where):
    rng = rng_for("spmv", v.id, where)
    for label, raw, A in ref.typed_cases(rng):
        x = rng.standard_normal(A.shape[1]).astype(A.dtype)
        y = fetched(where, gl.spmv(A.to_device() if where == "device" else A, placed(where, x),
                               variant=v.id))
        try:
            ref.check_spmv_arrays(y, *raw, x, A.dtype)
        except AssertionError as e:
            raise AssertionError(f"{label}: {e}")


@pytest.mark.parametrize("v, where", SPMM_VW)
def test_spmm_against_scipy(v, where):
    rng = rng_for("spmm", v.id, where)
    for label, raw, A in ref.typed_cases(rng):
        dA = A.to_device() if where == "device" else A
        for k in SPMM_KS if label.split()[0] in ("s3_4x4", "empty_rows", "one_huge_row") else [3]:
            B = rng.standard_normal((A.shape[1], k)).astype(A.dtype)
            C = fetched(where, gl.spmm(dA, placed(where, B), variant=v.id))
            try:
                ref.check_spmm_arrays(C, *raw, B, A.dtype)
            except AssertionError as e:
                raise AssertionError(f"{label} k={k}: {e}")


def test_spmm_empty_b():
    A = gl.CSR(ref.S3_INDPTR, ref.S3_INDICES, ref.S3_DATA, shape=(4, 4))
    for v in gl.variants("spmm"):
        if v.backend == "cpu":
            C = gl.spmm(A, np.zeros((4, 0)), variant=v.id)
            assert C.shape == (4, 0) and C.dtype == np.float64


def test_s3_example_exact():
    """S3's 4 x 4 example (row 2's columns unsorted) with small integers: every CPU variant gives
    the exact product."""
    A = gl.CSR(ref.S3_INDPTR, ref.S3_INDICES, ref.S3_DATA, shape=(4, 4))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    want = np.array([10 + 9, 10, 2 + 28 + 3, 16.0])
    for v in gl.variants("spmv"):
        if v.backend == "cpu":
            assert np.array_equal(gl.spmv(A, x, variant=v.id), want), v.name


@pytest.mark.gpu
@pytest.mark.parametrize("v", [v for op in ("spmv", "spmm") for v in gl.variants(op)
                               if v.backend == "cuda"], ids=lambda v: f"{v.op}-{v.name}")
def test_every_block(v):
    """Every block size each CUDA variant takes, on 3000 rows of 0-69 entries (spmm: B of 37
    columns, past a warp and not a multiple of the register tile)."""
    rng = rng_for("blocks", v.op, v.id)
    indptr, indices, data = ref.raw_csr(3000, 500, rng.integers(0, 70, 3000), rng)
    A = gl.CSR(indptr, indices, data.astype(np.float32), shape=(3000, 500))
    x = rng.standard_normal(500 if v.op == "spmv" else (500, 37)).astype(np.float32)
    check = ref.check_spmv if v.op == "spmv" else ref.check_spmm
    for block in v.tunables.get("block", {}).get("values", [None]):
        check(getattr(gl, v.op)(A, x, variant=v.id, block=block), A, x)


@pytest.mark.gpu
def test_csr_subwarp_every_lanes_value():
    """csr_subwarp (8) with each lanes value and each block, on the awkward matrices of every
    index and value dtype: rows of lengths around every group size, a row of thousands, empty
    rows, and row counts that do not fill the last block's groups."""
    v = next(v for v in gl.variants("spmv") if v.name == "csr_subwarp")
    rng = rng_for("subwarp-lanes")
    cases = list(ref.typed_cases(rng))
    for lanes in v.tunables["lanes"]["values"]:
        for block in v.tunables["block"]["values"]:
            for label, raw, A in cases:
                x = rng.standard_normal(A.shape[1]).astype(A.dtype)
                y = gl.spmv(A, x, variant=v.id, block=block, lanes=lanes)
                try:
                    ref.check_spmv_arrays(y, *raw, x, A.dtype)
                except AssertionError as e:
                    raise AssertionError(f"lanes {lanes} block {block} {label}: {e}")


@pytest.mark.gpu
def test_csr_hybrid_long_rows_in_chunks():
    """csr_hybrid (9): rows of lengths around its 2048-nonzero chunk (one short of a chunk, one,
    one past, two and a tail, many) among short and empty rows, every lanes value, with device
    and host inputs, int32 and int64 indices, float32 and float64 values; and a matrix with no
    long row, which is csr_subwarp's one launch."""
    v = next(v for v in gl.variants("spmv") if v.name == "csr_hybrid")
    rng = rng_for("hybrid-chunks")
    lengths = np.array([0, 3, 2047, 1, 2048, 0, 2049, 4096, 4097, 5, 20001, 2, 0], np.int64)
    cols = 30011
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = np.concatenate([rng.choice(cols, size=n, replace=False) for n in lengths])
    short = (indptr[:4].copy(), indices[:2050].copy())
    for raw_indptr, raw_indices in ((indptr, indices), short):
        for index in (np.int32, np.int64):
            for dtype in (np.float32, np.float64):
                data = rng.standard_normal(raw_indices.size).astype(dtype)
                shape = (raw_indptr.size - 1, cols)
                A = gl.CSR(raw_indptr.astype(index), raw_indices.astype(index), data, shape=shape)
                x = rng.standard_normal(cols).astype(dtype)
                for lanes in v.tunables["lanes"]["values"] + [None]:
                    for y in (gl.spmv(A, x, variant=v.id, lanes=lanes),
                              gl.spmv(A, gl.to_device(x), variant=v.id, lanes=lanes).get()):
                        try:
                            ref.check_spmv_arrays(y, raw_indptr, raw_indices, data, shape, x,
                                                  dtype)
                        except AssertionError as e:
                            raise AssertionError(f"lanes {lanes} {np.dtype(index)} "
                                                 f"{np.dtype(dtype)} rows {shape[0]}: {e}")


def test_lanes_is_csr_subwarp_s_tunable():
    """lanes: 2, 4, 8, 16 or 32 (None: from the row statistics; 0: csr.cu's rule from the mean
    row length), for csr_subwarp alone;
    other values are refused before anything runs."""
    v = next(v for v in gl.variants("spmv") if v.name == "csr_subwarp")
    assert v.id == 8 and v.kernels == ("spmv_csr_subwarp", "csr_stats") and not v.best
    assert v.tunables["lanes"]["values"] == [2, 4, 8, 16, 32]
    A = gl.CSR(np.array([0, 1, 2]), np.array([0, 1]), np.array([2.0, 3.0], np.float32))
    x = np.ones(2, np.float32)
    with pytest.raises(ValueError, match="no 'lanes' tunable"):
        gl.spmv(A, x, variant="serial", lanes=4)
    for wrong in (1, 3, 64, -2):
        with pytest.raises(ValueError, match="allowed: 2, 4, 8, 16, 32"):
            gl.spmv(A, x, variant="csr_subwarp", lanes=wrong)
    if gl.cuda_available():  # 0 is the default's own value: the rule, as None gives
        assert np.array_equal(gl.spmv(A, x, variant="csr_subwarp", lanes=0), [2.0, 3.0])


SUBWARP_EMULATOR, needs_toolchain = emulator("subwarp.py")


@needs_toolchain
def test_csr_subwarp_kernel_emulated_on_the_cpu():
    """csr_subwarp's own source, every lanes value of its table row, int32 and int64 indices,
    float32 and float64 values, run on the CPU by tools/emulate/subwarp.py (a std::thread per
    CUDA thread, the group shuffle at a barrier of its lanes with its mask and width checked,
    arrays followed by NaN): rows around L, 2L, 4L and 8L, a row of 3001, empty rows, all empty,
    1 x N, N x 1, no rows, blocks of 32-128; and the lanes rule."""
    done = subprocess.run([sys.executable, SUBWARP_EMULATOR], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "all ok" in done.stdout, done.stdout[-2000:] + done.stderr


HYBRID_EMULATOR, _ = emulator("hybrid.py")


@needs_toolchain
def test_csr_hybrid_kernels_emulated_on_the_cpu():
    """csr_hybrid's own source (both kernels and the chunk list's capacity), every lanes value
    of its table row, int32 and int64 indices, float32 and float64 values, run on the CPU by
    tools/emulate/hybrid.py: rows around one, two and three chunks, long first and last rows,
    hubs among short rows, short rows alone and no rows; the list never written past its
    capacity, y never past its end."""
    done = subprocess.run([sys.executable, HYBRID_EMULATOR], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "all ok" in done.stdout, done.stdout[-2000:] + done.stderr


@pytest.mark.gpu
def test_csr_hub_sorted_column_order(monkeypatch):
    """csr_hub_sorted's order: the columns by descending count, ties by column (a stable sort),
    then the indices relabelled; the share of the nonzeros in the HUB_COLUMNS most used
    columns; computed once per matrix and kept, whatever the variant's later calls; the
    product against the reference, int32 and int64, with hub rows past csr_hybrid's chunk."""
    rng = rng_for("hub-sorted")
    rows, cols = 300, 5000
    lengths = rng.integers(0, 12, rows)
    lengths[[3, 150]] = [4100, 2049]
    weights = 1.0 / np.arange(1, cols + 1) ** 1.2  # a few columns take most entries
    weights = rng.permutation(weights / weights.sum())
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = rng.choice(cols, size=int(indptr[-1]), p=weights)
    calls = []
    original = gl.sparse._core.csr_hub_order
    monkeypatch.setattr(gl.sparse._core, "csr_hub_order",
                        lambda *a: calls.append(a) or original(*a))
    for index in (np.int32, np.int64):
        data = rng.standard_normal(indices.size).astype(np.float32)
        A = gl.CSR(indptr.astype(index), indices.astype(index), data, shape=(rows, cols))
        D = A.to_device()
        order, share = D.column_order()
        counts = np.bincount(A.indices, minlength=cols)  # canonical: duplicates summed
        new_to_old = np.argsort(-counts, kind="stable")
        old_to_new = np.empty(cols, np.int64)
        old_to_new[new_to_old] = np.arange(cols)
        got = order.get()
        assert got.dtype == index and got.size == cols + A.nnz
        assert np.array_equal(got[:cols], new_to_old)
        assert np.array_equal(got[cols:], old_to_new[A.indices])
        assert share == np.sort(counts)[::-1][:gl.sparse.HUB_COLUMNS].sum() / A.nnz
        x = rng.standard_normal(cols).astype(np.float32)
        for lanes in (None, 2, 32):
            ref.check_spmv(gl.spmv(D, gl.to_device(x), variant="csr_hub_sorted",
                                   lanes=lanes).get(), A, x)
            ref.check_spmv(gl.spmv(A, x, variant=10, lanes=lanes), A, x)  # NumPy in and out
    assert len(calls) == 2  # one order per matrix, kept for every later call


@pytest.mark.gpu
def test_csr_hub_sorted_order_that_cannot_fit_is_refused():
    """An order the device cannot hold (2^40 columns) is a ValueError naming the bytes, raised
    before any allocation; the next call works."""
    A = gl.CSR(gl.to_device(np.array([0, 1], np.int64)), gl.to_device(np.array([7], np.int64)),
               gl.to_device(np.ones(1, np.float32)), shape=(1, 1 << 40))
    with pytest.raises(ValueError, match="csr_hub_sorted's column order needs .* bytes kept .* free on the device"):
        A.column_order()
    assert A._column_order is None
    B = gl.CSR(np.array([0, 2]), np.array([0, 3]), np.ones(2, np.float32), shape=(1, 4))
    assert np.array_equal(gl.spmv(B, np.arange(4, dtype=np.float32), variant=10), [3.0])


def test_csr_hub_order_arguments_are_checked_first():
    with pytest.raises(ValueError, match="cols must be >= 0 and top >= 1, got 4 and 0"):
        gl.sparse._core.csr_hub_order(np.zeros(1, np.int32), 4, 0, None)
    with pytest.raises(ValueError, match="got -1 and 8"):
        gl.sparse._core.csr_hub_order(np.zeros(1, np.int32), -1, 8, None)
    with pytest.raises(ValueError, match="call to_device"):
        gl.CSR(np.array([0, 1]), np.array([0]), np.ones(1)).column_order()


@pytest.mark.gpu
def test_csr_hub_sorted_needs_its_order():
    """The order only goes through gl.spmv: _core.spmv refuses csr_hub_sorted without one, and
    an order for another variant."""
    A = gl.CSR(np.array([0, 1]), np.array([0]), np.ones(1, np.float32), shape=(1, 1))
    x = np.ones(1, np.float32)
    args = (A.data, A.indices, A.indptr, x)
    with pytest.raises(ValueError, match="needs the matrix's column order"):
        gl.sparse._core.spmv(*args, 10, None, 1, 1, None, None)
    with pytest.raises(ValueError, match="column_order is for spmv variant 'csr_hub_sorted'"):
        gl.sparse._core.spmv(*args, 9, None, 1, 1, None, None, A.indices)


@pytest.mark.gpu
def test_spmv_from_cupy_without_a_copy():
    cupy = pytest.importorskip("cupy")
    import cupyx.scipy.sparse as cs
    m = cs.csr_matrix(cupy.asarray(sp.random(50, 40, 0.1, format="csr", random_state=1).toarray()))
    A = gl.CSR(m)
    assert A.on_device and A.data.__cuda_array_interface__["data"][0] == m.data.data.ptr
    x = np.arange(40, dtype=np.float64)
    y = gl.spmv(A, gl.to_device(x)).get()
    assert np.allclose(y, m.get() @ x)


# ---------------------------------------------------------------- the CSR type


def test_csr_canonicalizes_as_scipy_does():
    rng = rng_for("canonical")
    indptr, indices, data = ref.raw_csr(60, 20, rng.integers(0, 25, 60), rng, duplicates=True)
    want = sp.csr_matrix((data.copy(), indices.copy(), indptr.copy()), shape=(60, 20))
    want.sum_duplicates()
    A = gl.CSR(indptr, indices, data, shape=(60, 20))
    assert np.array_equal(A.indptr, want.indptr) and np.array_equal(A.indices, want.indices)
    assert np.allclose(A.data, want.data, rtol=1e-15, atol=0)
    assert np.allclose(A.toarray(), want.toarray())


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_csr_from_scipy_formats(fmt):
    m = sp.random(30, 17, 0.2, format=fmt, random_state=3, dtype=np.float32)
    A = gl.CSR(m)
    assert A.shape == (30, 17) and A.dtype == np.float32 and A.nnz == m.nnz
    assert np.array_equal(A.toarray(), m.toarray())
    x = np.arange(17, dtype=np.float32)
    ref.check_spmv(gl.spmv(m, x, variant="serial"), A, x)


def test_csr_index_dtypes():
    A32 = gl.CSR(ref.S3_INDPTR.astype(np.int32), ref.S3_INDICES.astype(np.int32), ref.S3_DATA)
    assert A32.index_dtype == np.int32 and A32.indices.dtype == np.int32 and A32.shape == (4, 4)
    A64 = gl.CSR(ref.S3_INDPTR.astype(np.int32), ref.S3_INDICES.astype(np.int64), ref.S3_DATA)
    assert A64.index_dtype == np.int64 and A64.indices.dtype == np.int64
    assert gl.CSR((ref.S3_INDPTR, ref.S3_INDICES, ref.S3_DATA, (4, 9))).shape == (4, 9)
    assert gl.CSR(ref.S3_INDPTR, ref.S3_INDICES, np.arange(7)).dtype == np.float64


def test_csr_errors_name_the_argument():
    with pytest.raises(ValueError, match="indptr must start at 0"):
        gl.CSR(np.array([0, 2, 1]), np.array([0, 1]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="indices must lie in 0..2"):
        gl.CSR(np.array([0, 1]), np.array([3]), np.array([1.0]), shape=(1, 3))
    with pytest.raises(ValueError, match="indices .* and data .* one entry per nonzero"):
        gl.CSR(np.array([0, 1]), np.array([0]), np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="data must be float32 or float64"):
        gl.CSR(np.array([0, 1]), np.array([0]), np.array([1 + 1j]))
    with pytest.raises(TypeError, match="indptr must hold integers"):
        gl.CSR(np.array([0.0, 1.0]), np.array([0]), np.array([1.0]))
    with pytest.raises(ValueError, match="shape"):
        gl.CSR(np.array([0, 1]), np.array([0]), np.array([1.0]), shape=(2, 2))
    with pytest.raises(TypeError, match="A must be a scipy.sparse"):
        gl.spmv(np.ones((2, 2)), np.ones(2))


@pytest.mark.gpu
def test_device_offsets_are_checked():
    """A device matrix's indptr is analysed on the device once (csr_stats, for max_row and the
    default) and checked there: a decreasing row is a ValueError."""
    A = gl.CSR(gl.to_device(np.array([0, 2, 1], np.int32)),
               gl.to_device(np.array([0, 1], np.int32)), gl.to_device(np.ones(2, np.float32)),
               shape=(2, 2))
    with pytest.raises(ValueError, match="indptr must start at 0, never decrease and end at nnz"):
        gl.spmv(A, gl.to_device(np.ones(2, np.float32)))


def test_spmv_errors_name_the_argument():
    A = gl.CSR(ref.S3_INDPTR.astype(np.int32), ref.S3_INDICES.astype(np.int32),
               ref.S3_DATA.astype(np.float32))
    with pytest.raises(ValueError, match="x must have A's 4 columns"):
        gl.spmv(A, np.ones(5, np.float32), variant="serial")
    with pytest.raises(TypeError, match="x must have data's dtype float32"):
        gl.spmv(A, np.ones(4, np.float64), variant="serial")
    with pytest.raises(ValueError, match="x must be 1-D"):
        gl.spmv(A, np.ones((4, 1), np.float32), variant="serial")
    with pytest.raises(ValueError, match="stream"):
        gl.spmv(A, np.ones(4, np.float32), variant="openmp", stream=0)
    with pytest.raises(ValueError, match="B must have A's 4 columns as its rows, got 5"):
        gl.spmm(A, np.ones((5, 2), np.float32), variant="serial")
    with pytest.raises(ValueError, match="B must be 2-D"):
        gl.spmm(A, np.ones(4, np.float32), variant="serial")
    with pytest.raises(TypeError, match="B must have data's dtype float32"):
        gl.spmm(A, np.ones((4, 2)), variant="openmp")
    from gpulab import _core
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="indices must have indptr's dtype int32"):
        _core.spmv(A.data, A.indices.astype(np.int64), A.indptr, x, "serial", None, 4, 3, None, None)
    with pytest.raises(TypeError, match="indptr"):
        _core.spmv(A.data, A.indices, A.indptr.astype(np.int16), x, "serial", None, 4, 3, None, None)
    with pytest.raises(ValueError, match="indices must have one entry per value"):
        _core.spmv(A.data, A.indices[:3], A.indptr, x, "serial", None, 4, 3, None, None)
    with pytest.raises(ValueError, match="max_row"):
        _core.spmv(A.data, A.indices, A.indptr, x, "serial", None, 4, 99, None, None)
    with pytest.raises(ValueError, match="indptr must have rows"):
        _core.spmv(A.data, A.indices, A.indptr[:0], x, "serial", None, 4, 3, None, None)


# ---------------------------------------------------------------- matrices and advice


def test_generated_matrices_match_their_definitions():
    P = gl.sparse.poisson2d(5)
    dense = P.toarray()
    assert P.shape == (25, 25) and P.nnz == 25 + 4 * 20
    assert np.array_equal(dense, dense.T) and np.all(np.diag(dense) == 4)
    assert dense[6, 7] == -1 and dense[6, 11] == -1 and dense[4, 5] == 0  # no wrap at a row end
    assert np.all(np.linalg.eigvalsh(dense) > 0)
    Q = gl.sparse.poisson3d(4)
    assert Q.shape == (64, 64) and Q.nnz == 64 + 6 * 48 and Q.max_row == 7
    B = gl.sparse.banded(10, (-2, 0, 3))
    mask = B.toarray() != 0
    i, j = np.nonzero(mask)
    assert set(j - i) == {-2, 0, 3} and B.nnz == 8 + 10 + 7
    W = gl.sparse.powerlaw(20000, 12, seed=4)
    lengths = W.row_lengths()
    assert 9 < lengths.mean() < 13 and lengths.max() > 8 * lengths.mean()
    assert np.array_equal(W.indptr, gl.sparse.powerlaw(20000, 12, seed=4).indptr)


def test_format_advice_follows_s3_rule():
    ell = gl.sparse_format_advice(gl.sparse.poisson2d(64))
    assert ell["format"] == "ell" and "alike" in ell["reason"] and ell["max"] == 5
    assert ell["p90"] == 5 and abs(ell["mean"] - (5 * 64 * 64 - 4 * 64) / 4096) < 1e-12
    csr = gl.sparse_format_advice(gl.sparse.powerlaw(20000, 12, seed=4))
    assert csr["format"] == "csr" and "vary" in csr["reason"] and csr["cv"] > 0.5
    empty = gl.sparse_format_advice(gl.CSR(np.zeros(4, np.int64), np.array([], np.int64),
                                           np.array([]), shape=(3, 3)))
    assert empty["format"] == "csr" and "no nonzeros" in empty["reason"]
    m = sp.random(30, 30, 0.2, format="coo", random_state=0)
    assert gl.sparse_format_advice(m)["nnz"] == m.nnz


def test_byte_model_counts_each_format():
    A = gl.CSR(ref.S3_INDPTR.astype(np.int32), ref.S3_INDICES.astype(np.int32),
               ref.S3_DATA.astype(np.float32))
    base = 4 * (5 + 7) + 4 * (7 + 4 + 4)
    assert gl.sparse.spmv_bytes(A, 0) == base
    assert gl.sparse.spmv_bytes(A, 3) == base + 2 * 4 * 3 * 8  # 4 rows x width 3, written + read
    assert gl.sparse.spmv_bytes(A, 6) == base + 2 * 4 * 7
    assert gl.sparse.spmv_bytes(A, 5) == base + 2 * 32 * 3 * 8 + 8 * 4


# ---------------------------------------------------------------- the ladder


def test_ladder_order_and_ids():
    """cuda/sparse/sparse.h's numbering, which the notebook, the benchmarks and
    docs/labs/sparse.md cite."""
    assert [(v.id, v.name) for v in gl.variants("spmv")] == [
        (0, "csr_scalar"), (1, "csr_vector"), (2, "csr_merge_path"), (3, "ell_column_major"),
        (4, "ell_row_major"), (5, "sell_c_sigma"), (6, "coo_segmented"), (7, "cusparse"),
        (8, "csr_subwarp"), (9, "csr_hybrid"), (10, "csr_hub_sorted"), (100, "serial"),
        (101, "openmp")]
    assert [v.name for v in gl.variants("spmv") if v.best] == ["csr_merge_path", "openmp"]
    assert [(v.id, v.name) for v in gl.variants("spmm")] == [
        (0, "row_per_block"), (1, "register_tiled"), (2, "cusparse"), (100, "serial"),
        (101, "openmp")]
    assert [(v.id, v.name) for v in gl.variants("cg")] == [
        (0, "textbook"), (1, "device_scalars"), (2, "fused"), (3, "pipelined"), (4, "dia_fused"),
        (100, "serial")]
    assert [v.name for v in gl.variants("cg") if v.best] == ["fused", "serial"]


CUSPARSE_MISSING = r"""
import numpy as np
import gpulab as gl
A = gl.CSR(np.array([0, 1, 2]), np.array([0, 1]), np.array([2.0, 3.0]))
for call in (lambda: gl.spmv(A, np.ones(2), variant="cusparse"),
             lambda: gl.spmm(A, np.ones((2, 3)), variant="cusparse")):
    try:
        call()
    except gl.CudaError as e:
        assert e.code == 301 and "GPULAB_CUSPARSE's library not found" in str(e), e
        assert not e.sticky
        print("refused")
    else:
        raise AssertionError("a cuSPARSE variant ran without cuSPARSE")
assert np.array_equal(gl.spmv(A, np.ones(2), variant="csr_vector"), [2.0, 3.0])
assert np.array_equal(gl.spmm(A, np.ones((2, 1)), variant="register_tiled"), [[2.0], [3.0]])
print("others run")
"""


@pytest.mark.gpu
def test_a_missing_cusparse_fails_only_its_variants():
    """libcusparse is opened on first use: where it is missing, the cuSPARSE variants of spmv and
    spmm raise CudaError (cudaErrorFileNotFound, not sticky) naming the library; the others
    run."""
    done = subprocess.run([sys.executable, "-c", CUSPARSE_MISSING],
                          env=child_env(GPULAB_CUSPARSE="/nonexistent/libcusparse.so.12"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("refused") == 2 and "others run" in done.stdout


def test_import_needs_no_scipy():
    """scipy is optional for the library: gpulab imports and runs spmv with it hidden."""
    code = ("import sys; sys.modules['scipy'] = None; import numpy as np, gpulab as gl; "
            "A = gl.sparse.poisson2d(3); print(gl.spmv(A, np.ones(9), variant='serial').sum())")
    done = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == 4 * 9 - 2 * 2 * 3 * 2  # row sums of the 5-point Laplacian


# ---------------------------------------------------------------- past 2^31 nonzeros

BIG_NNZ = 2**31 + 2**20


def _device_bytes_needed():
    # int64 indices built as arange % cols (two int64 arrays at once), float32 data, indptr
    return BIG_NNZ * (8 + 8 + 4) + (2**24 + 1) * 8


@pytest.mark.gpu
def test_default_spmv_past_2_31_nonzeros():
    """The default SpMV (merge path) on 2^31 + 2^20 nonzeros: int64 offsets all the way."""
    cupy = pytest.importorskip("cupy", reason="builds the 26 GB matrix on the device")
    free = cupy.cuda.runtime.memGetInfo()[0]
    need = _device_bytes_needed()
    if free < need * 1.1:
        pytest.skip(f"needs {need / 2**30:.0f} GiB of free device memory, has {free / 2**30:.0f}")
    rows = 2**24
    per_row = BIG_NNZ // rows
    lengths = np.full(rows, per_row, np.int64)
    lengths[: BIG_NNZ - per_row * rows] += 1
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    assert indptr[-1] == BIG_NNZ > 2**31
    cols = 4096
    # built on the device: column k % cols and value 1, so y_i = row i's length exactly
    d_indices = (cupy.arange(BIG_NNZ, dtype=cupy.int64) % cols)
    d_data = cupy.ones(BIG_NNZ, cupy.float32)
    A = gl.CSR(cupy.asarray(indptr), d_indices, d_data, shape=(rows, cols))
    x = np.ones(cols, np.float32)
    y = gl.spmv(A, gl.to_device(x)).get()
    assert np.array_equal(y, lengths.astype(np.float32))


def test_canonical_host_arrays_are_copied_without_sorting(monkeypatch):
    """Rows whose columns strictly increase are taken as they are (copied), without the sort
    that canonicalizes other input; a repeat or a descent inside a row still goes through it.
    A row may start below the previous row's last column."""
    from gpulab.labs import sparse as S
    indptr, indices = np.array([0, 2, 2, 5]), np.array([3, 5, 0, 1, 4])
    data = np.arange(1.0, 6.0)
    assert S._canonical(indptr, indices)
    sorts = []
    real = np.lexsort
    monkeypatch.setattr(np, "lexsort", lambda keys: sorts.append(1) or real(keys))
    A = gl.CSR(indptr, indices, data, shape=(3, 6))
    assert not sorts and A.indices is not indices and A.index_dtype == indices.dtype
    assert np.array_equal(A.indices, indices) and np.array_equal(A.data, data)
    for bad in ([3, 3, 0, 1, 4], [5, 3, 0, 1, 4], [3, 5, 0, 4, 1]):
        assert not S._canonical(indptr, np.array(bad))
        B = gl.CSR(indptr, np.array(bad), data, shape=(3, 6))
        want = np.zeros((3, 6))
        np.add.at(want, (np.repeat(np.arange(3), np.diff(indptr)), np.array(bad)), data)
        assert np.array_equal(B.toarray(), want) and S._canonical(B.indptr, B.indices)
    assert len(sorts) == 3
