"""The sparse lab's defaults: the row statistics (NumPy on the host, one kernel on the device, the
same numbers), the rule variant=None follows on the device for spmv, spmm and cg (checked on the
lab's matrices), the cache that keeps the gl.CSR made from a scipy or CuPy matrix on that matrix
(no second conversion or analysis; replaced arrays wrapped anew), and the default's results
against the float64 reference (gpu)."""

import numpy as np
import pytest

import gpulab as gl
from conftest import rng_for
from references import sparse as ref

sp = pytest.importorskip("scipy.sparse")
S = gl.sparse


def stats_by_hand(indptr):
    lengths = np.diff(np.asarray(indptr, np.int64))
    return (lengths.size, int(lengths.sum()), int(lengths.max()) if lengths.size else 0,
            int((lengths == 0).sum()), float(sum(int(n) * int(n) for n in lengths)))


def stats_cases(rng):
    """(label, CSR) of every shape the statistics meet: the awkward matrices of
    references/sparse.py (0 rows, all empty, empty rows, one huge row, 1 x 1, ...) with int32
    and int64 indices, and random lengths with a long tail."""
    for label, _, A in ref.typed_cases(rng):
        if A.dtype == np.float64:
            yield label, A
    for seed in range(3):
        lengths = rng.integers(0, 6, 2000)
        lengths[rng.integers(0, 2000, 5)] = rng.integers(100, 3000, 5)
        indptr, indices, data = ref.raw_csr(2000, 4000, lengths, rng)
        yield f"long tail {seed}", gl.CSR(indptr, indices, data, shape=(2000, 4000))


def test_host_row_stats_match_their_definition():
    for label, A in stats_cases(rng_for("defaults-stats")):
        st = A.row_stats()
        assert tuple(st) == stats_by_hand(A.indptr), label
        lengths = np.diff(np.asarray(A.indptr, np.int64))
        if lengths.sum():
            assert st.mean == pytest.approx(lengths.mean(), rel=1e-12), label
            assert st.cv == pytest.approx(lengths.std() / lengths.mean(), rel=1e-9, abs=1e-12)
            assert st.weighted_mean == pytest.approx((lengths ** 2).sum() / lengths.sum())
        assert A.max_row == st.max_row


# The lab's matrices by their statistics (benchmarks/results/sparse_lab.json, advice): the
# power-law matrix 2^22 x 2^22 of mean 15, and the 5-point Laplacian of 4096^2 rows.
POWERLAW_LAB = S.RowStats(4194304, 62891975, 1348, 0,
                          4194304 * (62891975 / 4194304) ** 2 * (1 + 1.3090791202095458 ** 2))
POISSON_LAB = S.RowStats(16777216, 83869696, 5, 0,
                         16777216 * 4.9990234375 ** 2 * (1 + 0.006249694578256062 ** 2))


def one_huge_row():
    lengths = np.full(10000, 3)
    lengths[1234] = 8000
    indptr, indices, data = ref.raw_csr(10000, 10000, lengths, rng_for("defaults-huge"))
    return gl.CSR(indptr, indices, data, shape=(10000, 10000))


def test_spmv_default_rule():
    for A in (S.poisson2d(64), S.poisson3d(12), S.banded(1000, (-2, 0, 3)),
              S.banded(500, range(-7, 8))):
        choice = S.default_variant("spmv", A)
        assert choice["variant"] == "csr_scalar" and choice["lanes"] is None, choice
        assert "short regular rows" in choice["reason"]
    assert S.spmv_default(POISSON_LAB).variant == "csr_scalar"
    # the lab's power-law matrix: rows vary, no row long enough to hold the kernel's end
    lab = S.spmv_default(POWERLAW_LAB)
    assert lab.variant == "csr_subwarp" and lab.lanes == 8, lab
    # one row of ~5500 (8000 drawn, duplicates summed) among 10000 rows of 3 or fewer: one
    # group would walk it long after the rest
    H = one_huge_row()
    huge = S.default_variant("spmv", H)
    assert H.max_row > 5000 and f"longest row ({H.max_row} " in huge["reason"], huge
    assert huge["variant"] == "csr_hybrid" and huge["lanes"] == S.subwarp_lanes(H.row_stats()), huge
    # a small power-law matrix: its longest row (281) outlasts 240 k nonzeros' stream
    small = S.default_variant("spmv", S.powerlaw(20000, 12, seed=4))
    assert small["variant"] == "csr_merge_path", small
    # R-MAT-like: mean 16, most rows tiny, rows of ~10^5: csr_hybrid, never cuSPARSE
    rmat = S.RowStats(1 << 22, 16 << 22, 160000, 1 << 21, float(16 << 22) * 3000)
    assert S.spmv_default(rmat).variant == "csr_hybrid"
    empty = gl.CSR(np.zeros(4, np.int64), np.array([], np.int64), np.array([]), shape=(3, 3))
    assert S.default_variant("spmv", empty)["variant"] == "csr_scalar"


def test_hub_sorted_default_rule():
    """csr_hub_sorted replaces csr_hybrid alone, from HUB_MIN_COLUMNS columns and a share of
    HUB_MIN_SHARE in the HUB_COLUMNS most used columns, with csr_hybrid's lanes."""
    hybrid = S.Choice("csr_hybrid", 8, "long rows")
    assert S.hub_sorted_default(hybrid, S.HUB_MIN_COLUMNS, S.HUB_MIN_SHARE).variant == \
        "csr_hub_sorted"
    picked = S.hub_sorted_default(hybrid, 1 << 22, 0.53)
    assert picked.lanes == 8 and "53% of the nonzeros" in picked.reason, picked
    for cols, share in ((S.HUB_MIN_COLUMNS - 1, 0.9), (1 << 22, 0.2), (1 << 22, None)):
        assert S.hub_sorted_default(hybrid, cols, share) is hybrid
    subwarp = S.Choice("csr_subwarp", 8, "rows vary")
    assert S.hub_sorted_default(subwarp, 1 << 22, 0.9) is subwarp


def test_subwarp_lanes_follow_the_mean():
    """Half the mean row length (rounded up), as a power of two in 2..32: csr.cu's rule."""
    assert S.subwarp_lanes(POISSON_LAB) == 2
    assert S.subwarp_lanes(POWERLAW_LAB) == 8  # mean 15 (weighted mean 40.7)
    for mean, lanes in ((1, 2), (5, 2), (6, 4), (11, 4), (12, 8), (22, 8), (23, 16), (45, 16),
                        (46, 32), (10 ** 6, 32)):
        st = S.RowStats(1000, 1000 * mean, mean, 0, 1000.0 * mean * mean)
        assert S.subwarp_lanes(st) == lanes, (mean, S.subwarp_lanes(st))


def test_spmm_and_cg_default_rules():
    for A in (S.poisson2d(16), S.powerlaw(2000, 12, seed=1)):
        assert S.default_variant("spmm", A)["variant"] == "register_tiled"
    for A in (S.poisson2d(32), S.poisson3d(8), S.banded(300, (-4, 0, 4))):
        choice = S.default_variant("cg", A)
        assert choice["variant"] == "dia_fused" and ref.dia_refusal(A) is None, choice
    many = S.banded(400, range(-20, 21))  # 41 diagonals
    assert ref.dia_refusal(many) == "more"
    assert S.default_variant("cg", many)["variant"] == "fused"
    # 3 diagonals, but two of them hold a single entry: DIA's 3 n values outweigh CSR
    n = 1000
    corners = gl.CSR(sp.csr_matrix((np.ones(n + 2), (np.r_[np.arange(n), 0, n - 1],
                                                      np.r_[np.arange(n), n - 1, 0])),
                                   shape=(n, n)))
    assert ref.dia_refusal(corners) == "bytes"
    choice = S.default_variant("cg", corners)
    assert choice["variant"] == "fused" and "bytes" in choice["reason"], choice
    assert S.default_variant("cg", S.powerlaw(3000, 10, seed=2))["variant"] == "fused"
    with pytest.raises(ValueError, match="op must be one of spmv, spmm, cg"):
        S.default_variant("gemm", S.poisson2d(4))
    with pytest.raises(ValueError, match="A must be square for cg"):
        S.default_variant("cg", gl.CSR(np.array([0, 1, 2]), np.array([0, 1]), np.ones(2),
                                       shape=(2, 3)))


def test_choice_is_kept_on_the_matrix(monkeypatch):
    A = S.poisson2d(16)
    assert S.default_variant("cg", A)["variant"] == "dia_fused"
    monkeypatch.setattr(S, "cg_default", lambda *a: pytest.fail("chosen twice"))
    monkeypatch.setattr(S, "dia_offsets", lambda *a: pytest.fail("diagonals counted twice"))
    assert S.default_variant("cg", A)["variant"] == "dia_fused"


def test_host_operands_keep_the_c_default():
    """NumPy in, CPU out: variant=None is the C default (openmp), no device choice is made."""
    A = S.poisson2d(8)
    x = np.arange(64, dtype=np.float64)
    ref.check_spmv(gl.spmv(A, x), A, x)
    assert A._choices == {}


def counting(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counted(*args, **kw):
        calls.append(args)
        return original(*args, **kw)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_scipy_matrix_is_converted_once(monkeypatch, fmt):
    m = sp.random(120, 90, 0.1, format=fmt, random_state=5)
    x = np.linspace(-1, 1, 90)
    conversions = counting(monkeypatch, S.CSR, "_from_host")
    analyses = counting(monkeypatch, S, "host_row_stats")
    for _ in range(3):
        ref.check_spmv(gl.spmv(m, x), gl.CSR(m.tocsr()), x)
    # gl.CSR(m.tocsr()) above converts each time: the cache is for matrices passed to the ops
    assert len(conversions) == 3 + 1 and len(analyses) == 1
    assert gl.spmm(m, np.ones((90, 2))).shape == (120, 2) and len(analyses) == 1


def test_replaced_arrays_are_wrapped_anew():
    m = sp.random(50, 50, 0.2, format="csr", random_state=6)
    x = np.ones(50)
    first = gl.spmv(m, x)
    kept = m._gpulab_csr[1]
    m.data = m.data * 2  # a new array: the cached copy no longer holds m's values
    assert np.allclose(gl.spmv(m, x), 2 * first) and m._gpulab_csr[1] is not kept
    again = m._gpulab_csr[1]
    m.indices = m.indices.copy()
    gl.spmv(m, x)
    assert m._gpulab_csr[1] is not again
    m.resize((60, 50))  # a new shape (and new arrays)
    assert gl.spmv(m, x).shape == (60,)


# ---------------------------------------------------------------- on the device


def device_csr(A):
    return A.to_device() if not A.on_device else A


@pytest.mark.gpu
def test_device_row_stats_equal_the_host_ones():
    """csr_stats (cuda/sparse/stats.cu) against NumPy on every case, int32 and int64 indices:
    0 rows, 1 row, empty rows, all empty, one long row, a long tail."""
    for label, A in stats_cases(rng_for("defaults-device-stats")):
        host = A.row_stats()
        D = gl.CSR(*(gl.to_device(a) for a in (A.indptr, A.indices, A.data)), shape=A.shape)
        assert D.row_stats() == host, (label, D.row_stats(), host)


@pytest.mark.gpu
def test_device_diagonals_equal_the_host_ones():
    rng = rng_for("defaults-device-diagonals")
    mats = [S.poisson2d(20), S.poisson3d(6), S.banded(300, range(-16, 16)),
            S.banded(300, range(-16, 17)), S.banded(300, range(-40, 41)),
            S.powerlaw(3000, 8, seed=3)]
    for _, A in stats_cases(rng):
        mats.append(A)
    for A in mats:
        want = min(len(S.dia_offsets(A)), S.CG_DIA_MAX_DIAGONALS + 1)
        D = gl.CSR(*(gl.to_device(a) for a in (A.indptr, A.indices, A.data)), shape=A.shape)
        assert D.diagonals() == want, (A, D.diagonals(), want)


@pytest.mark.gpu
def test_device_call_path_never_copies_indptr(monkeypatch):
    monkeypatch.setattr(S.CSR, "row_lengths", lambda self: pytest.fail("indptr copied"))
    A = S.powerlaw(5000, 10, seed=7).to_device()
    x = np.linspace(0, 1, A.shape[1])
    y = gl.spmv(A, gl.to_device(x)).get()
    ref.check_spmv(y, S.powerlaw(5000, 10, seed=7), x)
    P = S.poisson2d(16, shift=1.0).to_device()
    assert gl.cg(P, gl.to_device(np.ones(256))).converged


@pytest.mark.gpu
def test_every_default_matches_the_reference():
    """variant=None on device operands, for each matrix kind the rule tells apart."""
    rng = rng_for("defaults-results")
    mats = {"poisson2d": S.poisson2d(40), "banded": S.banded(2000, (-3, 0, 1, 5)),
            "powerlaw": S.powerlaw(20000, 12, seed=4), "one_huge_row": one_huge_row()}
    seen = set()
    for name, A in mats.items():
        for dtype in (np.float32, np.float64):
            H = A.astype(dtype)
            D = H.to_device()
            seen.add(S.default_variant("spmv", D)["variant"])
            x = rng.standard_normal(H.shape[1]).astype(dtype)
            ref.check_spmv(gl.spmv(D, gl.to_device(x)).get(), H, x)
            B = rng.standard_normal((H.shape[1], 5)).astype(dtype)
            ref.check_spmm(gl.spmm(D, gl.to_device(B)).get(), H, B)
    assert seen == {"csr_scalar", "csr_merge_path", "csr_hybrid"}
    # csr_subwarp, the rule's pick for the lab's power-law matrix, with its lanes by rule
    H = S.powerlaw(20000, 12, seed=4)
    x = rng.standard_normal(H.shape[1])
    ref.check_spmv(gl.spmv(H.to_device(), gl.to_device(x), variant="csr_subwarp").get(), H, x)
    for A in (S.poisson2d(24, shift=0.5), S.banded(500, (-1, 0, 1)).astype(np.float64)):
        A = gl.CSR(A.indptr, A.indices, np.abs(A.data) + (A.indices == np.repeat(
            np.arange(A.shape[0]), np.diff(A.indptr))) * 4.0, shape=A.shape)
        b = rng.standard_normal(A.shape[0])
        for M in ("jacobi", None):
            ref.check_cg(gl.cg(A.to_device(), gl.to_device(b), M=M).x.get(), A, b, M=M)


@pytest.mark.gpu
def test_cupy_matrix_is_analysed_once(monkeypatch):
    cupy = pytest.importorskip("cupy")
    import cupyx.scipy.sparse as cs
    host = S.powerlaw(3000, 10, seed=8)
    m = cs.csr_matrix((cupy.asarray(host.data), cupy.asarray(host.indices),
                       cupy.asarray(host.indptr)), shape=host.shape)
    x = cupy.linspace(-1, 1, host.shape[1])
    stats = counting(monkeypatch, S._core, "csr_stats")
    diagonals = counting(monkeypatch, S._core, "csr_diagonals")
    for _ in range(3):
        ref.check_spmv(cupy.asnumpy(cupy.asarray(gl.spmv(m, x))), host, cupy.asnumpy(x))
    assert len(stats) == 1 and len(diagonals) == 0
    A = m._gpulab_csr[1]
    assert A.data.__cuda_array_interface__["data"][0] == m.data.data.ptr  # a view, not a copy
    m.data = m.data * 2  # replaced: wrapped and analysed anew, the product follows
    y = cupy.asnumpy(cupy.asarray(gl.spmv(m, x)))
    assert len(stats) == 2 and m._gpulab_csr[1] is not A
    ref.check_spmv(y / 2, host, cupy.asnumpy(x))


@pytest.mark.gpu
def test_power_law_graph_default_is_hub_sorted_and_ordered_once(monkeypatch):
    """An R-MAT graph (scale 18: 88% of its nonzeros in its 32K most used columns, rows past
    csr_hybrid's chunk) runs csr_hub_sorted by default, its column order computed once; a
    matrix with a long row but columns drawn evenly keeps csr_hybrid and drops the order."""
    rng = rng_for("defaults-hub-sorted")
    orders = counting(monkeypatch, S._core, "csr_hub_order")
    G = S.rmat(18, 16, seed=3)
    choice = S.default_variant("spmv", G)
    assert choice["variant"] == "csr_hub_sorted" and choice["lanes"] == 8, choice
    host = gl.CSR(G.indptr.get(), G.indices.get(), G.data.get(), shape=G.shape)
    x = rng.standard_normal(G.shape[1]).astype(np.float32)
    for _ in range(2):
        ref.check_spmv(gl.spmv(G, gl.to_device(x)).get(), host, x)
    assert len(orders) == 1 and G._column_order is not None
    rows, cols = 1 << 15, 1 << 20
    lengths = rng.integers(0, 40, rows)
    lengths[7] = 12000
    indptr, indices, data = ref.raw_csr(rows, cols, lengths, rng)
    E = gl.CSR(indptr, indices, data, shape=(rows, cols)).to_device()
    even = S.default_variant("spmv", E)
    assert even["variant"] == "csr_hybrid" and len(orders) == 2 and E._column_order is None, even
