"""The sparse lab's conjugate gradients (gl.cg): every variant's first iterates against the float64
NumPy CG of the same algorithm (tests/references/sparse.py), its solutions against
scipy.sparse.linalg.cg, with and without the Jacobi preconditioner, float32 and float64, int32 and
int64 indices, from NumPy and from device inputs; x0; the residual history and check_every;
sizes 0 and 1; breakdown; the errors, which name their argument. dia_fused (A by its
diagonals) takes the problems with at most 32 diagonals and refuses the others with a ValueError
(tests/references/sparse.py's dia_refusal says which)."""

import numpy as np
import pytest

import gpulab as gl
from conftest import placed, rng_for, variant_where_params
from references import sparse as ref

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")

CG_VW = variant_where_params("cg")
MS = [None, "jacobi"]


def spd_problems(rng, dtype, index):
    """(label, A, b): small symmetric positive definite matrices of modest condition number --
    the shifted 2D and 3D Laplacians, a random SPD banded one with a varying diagonal (Jacobi
    differs from none), one with rows of 9 to 40 entries (merge-path shares cut rows in three
    or more parts), and a shifted Laplacian whose every entry is stored as two halves, columns
    reversed within each row (summed, as scipy does) -- and a random b."""
    out = [("poisson2d_7+1", gl.sparse.poisson2d(7, dtype=dtype, shift=1.0)),
           ("poisson3d_5+2", gl.sparse.poisson3d(5, dtype=dtype, shift=2.0))]
    P = gl.sparse.poisson2d(6, dtype=dtype, shift=1.0)
    halves_indptr = np.concatenate(([0], np.cumsum(2 * np.diff(P.indptr))))
    rows = [slice(P.indptr[i], P.indptr[i + 1]) for i in range(P.shape[0])]
    halves_indices = np.concatenate([np.tile(P.indices[r][::-1], 2) for r in rows])
    halves_data = np.concatenate([np.tile(P.data[r][::-1] / 2, 2) for r in rows]).astype(dtype)
    out.append(("poisson2d_6_halves", gl.CSR(halves_indptr, halves_indices, halves_data,
                                             shape=P.shape)))
    n = 301
    B = sp.random(n, n, density=0.03, random_state=np.random.RandomState(int(rng.integers(1 << 30))))
    S = B + B.T
    d = np.asarray(abs(S).sum(axis=1)).reshape(-1) + rng.uniform(0.5, 4.0, n)
    out.append(("random_spd_301", gl.CSR((S + sp.diags(d)).tocsr().astype(dtype))))
    band = sp.diags([np.full(n - k, -0.1) for k in range(1, 20)], list(range(1, 20)))
    dense_rows = band + band.T + sp.diags(rng.uniform(4.0, 8.0, n))
    out.append(("rows_of_39", gl.CSR(dense_rows.tocsr().astype(dtype))))
    for label, A in out:
        A = gl.CSR(A.indptr.astype(index), A.indices.astype(index), A.data, shape=A.shape)
        yield label, A, rng.standard_normal(A.shape[0]).astype(dtype)



def run(v, where, A, b, **kw):
    """gl.cg's result with x on the host; None where dia_fused refuses A (after checking that it
    does, with a ValueError that says why)."""
    refusal = ref.dia_refusal(A) if v.name == "dia_fused" else None
    if refusal:
        with pytest.raises(ValueError, match="at most 32" if refusal == "more" else "more bytes"):
            gl.cg(A.to_device() if where == "device" else A, placed(where, b), variant=v.id, **kw)
        return None
    res = gl.cg(A.to_device() if where == "device" else A, placed(where, b), variant=v.id, **kw)
    assert isinstance(res, gl.CgResult)
    assert isinstance(res.x, gl.DeviceArray if where == "device" else np.ndarray)
    host = res.get()  # x copied to the host, the rest as it was
    assert isinstance(host.x, np.ndarray) and host.iterations == res.iterations
    return host


@pytest.mark.parametrize("v, where", CG_VW)
def test_first_iterates_match_the_float64_reference(v, where):
    """x after k = 1..4 iterations (rtol = atol = 0: no early stop) within cg_bound of the NumPy
    CG's x_k: the variants run the same algorithm."""
    rng = rng_for("cg-iterates", v.id, where)
    for dtype in (np.float32, np.float64):
        for index in (np.int32, np.int64):
            for label, A, b in spd_problems(rng, dtype, index):
                for M in MS:
                    for k in (1, 2, 4):
                        res = run(v, where, A, b, rtol=0.0, maxiter=k, M=M)
                        if res is None:
                            continue
                        assert res.iterations == k and not res.converged, (label, M, k, res)
                        assert res.residuals.size == k + 1
                        try:
                            ref.check_cg(res, A, b, None, 0.0, 0.0, k, M)
                        except AssertionError as e:
                            raise AssertionError(f"{label} {np.dtype(dtype)} {M} k={k}: {e}")


@pytest.mark.parametrize("v, where", CG_VW)
def test_solution_matches_scipy(v, where):
    """Solved to rtol: converged, ||r|| at or below the tolerance, the iterations within 2 of the
    float64 reference's, and x within the error the tolerance allows of scipy's solution
    (||x - x*|| / ||x*|| <= kappa rtol, with room for scipy's own stop)."""
    rng = rng_for("cg-scipy", v.id, where)
    for dtype, rtol in ((np.float64, 1e-10), (np.float32, 1e-4)):
        for label, A, b in spd_problems(rng, dtype, np.int32):
            m = ref.scipy_csr(A.indptr, A.indices, A.data, A.shape)
            b64 = b.astype(np.float64)
            want, info = spla.cg(m, b64, rtol=rtol * 1e-2, atol=0.0, maxiter=10 * A.shape[0])
            assert info == 0
            for M in MS:
                res = run(v, where, A, b, rtol=rtol, M=M)
                if res is None:
                    continue
                assert res.converged and not res.breakdown, (label, M, res.iterations)
                _, k_ref, _ = ref.cg_reference(A, b, rtol=rtol, jacobi=M == "jacobi")
                assert abs(res.iterations - k_ref) <= 2, (label, M, res.iterations, k_ref)
                assert res.residuals[-1] <= rtol * np.linalg.norm(b64) * (1 + 1e-6)
                true_residual = np.linalg.norm(b64 - m @ res.x.astype(np.float64))
                slack = 1.0 if dtype == np.float64 else 10.0  # float32's r drifts from b - A x
                assert true_residual <= slack * rtol * np.linalg.norm(b64) * 1.01, (label, M)
                err = np.linalg.norm(res.x - want) / np.linalg.norm(want)
                assert err <= 4 * ref.cg_condition(A) * rtol * slack, (label, M, err)


@pytest.mark.parametrize("v, where", CG_VW)
def test_x0_and_check_every(v, where):
    """From x0 the solve starts at r0 = b - A x0 (the reference's first iterates); check_every
    spaces the residual history (0, c, 2c, ..., the last) and changes neither the iterations nor
    x, which stops at the same iteration whatever the host learns when."""
    rng = rng_for("cg-x0", v.id, where)
    A = gl.sparse.poisson2d(9, shift=0.5)
    b = rng.standard_normal(81)
    x0 = rng.standard_normal(81)
    res = gl.cg(A.to_device() if where == "device" else A, placed(where, b), x0=placed(where, x0),
                variant=v.id, rtol=0.0, maxiter=3, M=None)
    x = res.x.get() if where == "device" else res.x
    ref.check_cg(res._replace(x=x), A, b, x0, 0.0, 0.0, 3, None)
    base = run(v, where, A, b, rtol=1e-9, M="jacobi")
    assert base.converged
    for c in (1, 3, 7, 1000):
        res = run(v, where, A, b, rtol=1e-9, M="jacobi", check_every=c)
        assert res.iterations == base.iterations
        assert res.x.tobytes() == base.x.tobytes() or v.backend == "cuda"
        np.testing.assert_allclose(res.x, base.x, rtol=1e-12, atol=1e-14)
        want = list(range(0, res.iterations, c)) + [res.iterations]
        assert res.residuals.size == len(want), (c, res.residuals.size, want)
        np.testing.assert_allclose(res.residuals, base.residuals[want], rtol=1e-9)


@pytest.mark.parametrize("v, where", CG_VW)
def test_sizes_0_and_1_and_breakdown(v, where):
    for dtype in (np.float32, np.float64):
        A0 = gl.CSR(np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0, dtype), shape=(0, 0))
        res = run(v, where, A0, np.zeros(0, dtype))
        assert res.x.shape == (0,) and res.x.dtype == dtype and res.converged
        assert res.iterations == 0
        A1 = gl.CSR(np.array([0, 1]), np.array([0]), np.array([4.0], dtype), shape=(1, 1))
        res = run(v, where, A1, np.array([2.0], dtype), rtol=1e-6)
        assert res.converged and res.iterations == 1 and res.x[0] == dtype(0.5)
        res = run(v, where, A1, np.array([0.0], dtype))  # b = 0: x = 0 at once
        assert res.converged and res.iterations == 0 and res.x[0] == 0
    # diag(1, -1), b = (1, 1): p.Ap = 0 at the first iteration
    Ai = gl.CSR(np.array([0, 1, 2]), np.array([0, 1]), np.array([1.0, -1.0]), shape=(2, 2))
    res = run(v, where, Ai, np.ones(2), M=None)
    assert res.breakdown and not res.converged and res.iterations == 0


@pytest.mark.parametrize("v, where", CG_VW)
def test_phases(v, where):
    A = gl.sparse.poisson2d(12, shift=1.0)
    b = np.ones(144)
    res = run(v, where, A, b, rtol=0.0, maxiter=5, phases=True)
    assert set(res.phases) == {"operator", "reductions", "updates"}
    assert all(t >= 0 for t in res.phases.values())
    if v.backend == "cuda":
        assert all(t > 0 for t in res.phases.values()), res.phases
    assert run(v, where, A, b, rtol=0.0, maxiter=5).phases is None


def test_errors_name_their_argument():
    A = gl.sparse.poisson2d(4)
    b = np.ones(16)
    with pytest.raises(ValueError, match="square"):
        gl.cg(gl.CSR(np.array([0, 1, 2]), np.array([0, 1]), np.ones(2), shape=(2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="b must have"):
        gl.cg(A, np.ones(15))
    with pytest.raises(TypeError, match="b"):
        gl.cg(A, np.ones(16, np.float32))
    with pytest.raises(ValueError, match="x0 must have"):
        gl.cg(A, b, x0=np.ones(3))
    with pytest.raises(ValueError, match="M must be"):
        gl.cg(A, b, M="ilu")
    with pytest.raises(ValueError, match="maxiter"):
        gl.cg(A, b, maxiter=-1)
    with pytest.raises(ValueError, match="check_every"):
        gl.cg(A, b, check_every=0)
    with pytest.raises(ValueError, match="rtol"):
        gl.cg(A, b, rtol=-1.0)
    zero = gl.CSR(np.array([0, 2, 3]), np.array([0, 1, 0]), np.array([0.0, 1.0, 1.0]), shape=(2, 2))
    for v in gl.variants("cg"):
        if v.backend == "cpu":
            with pytest.raises(ValueError, match=r"A\[0, 0\] is zero"):
                gl.cg(zero, np.ones(2), variant=v.id)
            assert gl.cg(zero, np.ones(2), variant=v.id, M=None, maxiter=2).iterations <= 2


@pytest.mark.gpu
@pytest.mark.parametrize("v", [v for v in gl.variants("cg") if v.backend == "cuda"],
                         ids=lambda v: v.name)
def test_zero_diagonal_on_the_device(v):
    zero = gl.CSR(np.array([0, 2, 3]), np.array([0, 1, 0]), np.array([1.0, 1.0, 0.0]), shape=(2, 2))
    with pytest.raises(ValueError, match=r"A\[1, 1\] is zero"):
        gl.cg(zero, np.ones(2), variant=v.id)


@pytest.mark.gpu
def test_variants_agree_on_poisson():
    """On the 2D Poisson problem (condition number ~ 10^3) every variant converges within 2
    iterations of the float64 reference in float64, and within 10% of them in float32 (whose
    rounding delays CG's convergence by a few iterations at this condition number)."""
    A = gl.sparse.poisson2d(48)
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    _, k_ref, _ = ref.cg_reference(A, b, rtol=1e-6)
    for dtype in (np.float64, np.float32):
        Ad = A.astype(dtype)
        for v in gl.variants("cg"):
            res = gl.cg(Ad, b.astype(dtype), rtol=1e-6, variant=v.id)
            slack = 2 if dtype == np.float64 else max(6, k_ref // 10)
            assert res.converged and abs(res.iterations - k_ref) <= slack, \
                (v.name, np.dtype(dtype), res.iterations, k_ref)


def band(n, offsets, dtype):
    """A symmetric positive definite band matrix: -0.05 on the diagonals at +-offsets under a
    diagonal of 4 that dominates them."""
    off = sp.diags([np.full(n - k, -0.05) for k in offsets], list(offsets))
    return gl.CSR((off + off.T + sp.diags(np.full(n, 4.0))).tocsr().astype(dtype))


@pytest.mark.gpu
def test_dia_fused_on_its_shapes_and_refusals():
    """dia_fused's kernel for each bound on the diagonals (1 diagonal: the 4 kernel; 9: 16; 31:
    32) follows the float64 reference's first iterates and converges; 33 diagonals, and 3
    diagonals too empty to take fewer bytes than CSR, are refused with a ValueError."""
    v = next(v for v in gl.variants("cg") if v.name == "dia_fused")
    rng = np.random.default_rng(17)
    T = sp.diags([-np.ones(29), 2.5 * np.ones(30), -np.ones(29)], [-1, 0, 1])
    shapes = [("one", gl.CSR(sp.diags(rng.uniform(1, 2, 40)).tocsr())),
              ("nine_point", gl.CSR(sp.kron(T, T).tocsr())),
              ("band_31", band(300, range(1, 16), np.float64))]
    for dtype in (np.float64, np.float32):
        for label, A in shapes:
            A = A.astype(dtype)
            assert ref.dia_refusal(A) is None, label
            b = rng.standard_normal(A.shape[0]).astype(dtype)
            for M in MS:
                for k in (1, 3):
                    res = gl.cg(A, b, rtol=0.0, maxiter=k, M=M, variant=v.id)
                    ref.check_cg(res, A, b, None, 0.0, 0.0, k, M)
                res = gl.cg(A, b, rtol=1e-5, M=M, variant=v.id)
                assert res.converged, (label, M)
                ref.check_cg(res, A, b, None, 1e-5, 0.0, None, M)
    wide = band(300, range(1, 17), np.float64)
    assert ref.dia_refusal(wide) == "more"
    with pytest.raises(ValueError, match="at most 32"):
        gl.cg(wide, np.ones(300), variant=v.id)
    corner = sp.diags(np.full(100, 3.0)).tolil()
    corner[0, 99] = corner[99, 0] = 0.5
    corner = gl.CSR(corner.tocsr())
    assert ref.dia_refusal(corner) == "bytes"
    with pytest.raises(ValueError, match="3 diagonals of 100 rows would take more bytes"):
        gl.cg(corner, np.ones(100), variant=v.id)


def test_dia_offsets_and_the_dia_byte_model():
    """gl.sparse.dia_offsets lists the distinct col - row of the stored entries, sorted; dia_fused's
    byte model is its k diagonals and 9 vector passes (11 with Jacobi), by id or by name."""
    A = gl.sparse.poisson2d(4)
    assert gl.sparse.dia_offsets(A).tolist() == [-4, -1, 0, 1, 4]
    halves = gl.CSR(np.array([0, 2, 3]), np.array([1, 1, 0]), np.array([0.5, 0.5, 1.0]),
                    shape=(2, 2))
    assert gl.sparse.dia_offsets(halves).tolist() == [-1, 1]
    n, v = A.shape[0], A.dtype.itemsize
    for variant in (4, "dia_fused"):
        assert gl.sparse.cg_iteration_bytes(A, False, variant) == v * n * (5 + 9)
        assert gl.sparse.cg_iteration_bytes(A, True, variant) == v * n * (5 + 11)
    assert gl.sparse.cg_iteration_bytes(A) == gl.sparse.spmv_bytes(A) + v * n * 8
