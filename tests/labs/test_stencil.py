"""The stencil lab: every stencil variant and boundary policy against float64 numpy.pad on odd
shapes (3x3 up, non-multiples of a tile, 1xN and Nx1, radius 1 to 4), S3 6.4's distinct-values
fixture, from NumPy and device inputs and with every block shape; the Jacobi solver against a
direct solve of the same discrete problem, its residual history monotone; the errors, which
name their argument; and the name -> id numbering of cuda/stencil/stencil.h."""

import math

import numpy as np
import pytest

import gpulab as gl
from conftest import fetched, placed, rng_for, variant_params, variant_where_params
from references import stencil as ref

STENCIL_VW = variant_where_params("stencil")
JACOBI_VW = variant_where_params("jacobi")
BOUNDARIES = ["zero", "clamp", "periodic", "reflect", "fixed"]

# (shape, radius): 1D short, odd and long; 2D from 3x3 up, 1xN and Nx1, one past a 32 x 8 tile
# and not a multiple of one; 3D with one and two cells along an axis, one past a tile, radius 2;
# radius up to 4 on grids smaller than the stencil
CASES = [((1,), 1), ((2,), 3), ((7,), 1), ((33,), 3), ((1025,), 4), ((2100,), 2),
         ((3, 3), 1), ((1, 17), 1), ((17, 1), 2), ((5, 7), 4), ((33, 9), 1), ((9, 65), 2),
         ((70, 41), 3), ((3, 3, 3), 1), ((1, 1, 5), 1), ((2, 5, 3), 1), ((4, 9, 33), 1),
         ((9, 10, 35), 2), ((5, 4, 6), 3), ((40, 3, 7), 1)]


def weights_for(shape, r, rng):
    """Random weights of either sign, a few of them zero (zeros are skipped, not read)."""
    w = rng.uniform(0.5, 1.5, (2 * r + 1,) * len(shape)) * rng.choice([-1.0, 1.0],
                                                                       (2 * r + 1,) * len(shape))
    w[rng.random(w.shape) < 0.2] = 0.0
    return w




@pytest.mark.parametrize("v, where", STENCIL_VW)
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("shape, r", CASES, ids=[f"{s}-r{r}" for s, r in CASES])
def test_stencil_matches_numpy(v, where, boundary, shape, r):
    rng = rng_for("stencil", v.id, boundary, shape, r)
    dtype = np.float64 if sum(shape) % 2 else np.float32
    u = rng.standard_normal(shape).astype(dtype)
    w = weights_for(shape, r, rng)
    got = gl.stencil(placed(where, u), w, boundary=boundary, variant=v.id)
    ref.check_stencil(fetched(where, got), u, w, boundary)


# rows of a multiple of 4 (and 2) take the star kernels' 16-byte path
NAMED = [("laplace5", (37, 29)), ("box9", (3, 40)), ("laplace7", (6, 11, 34)),
         ("laplace5", (1, 9)), ("laplace7", (3, 3, 3)), ("laplace5", (35, 516)),
         ("laplace7", (35, 6, 132))]


@pytest.mark.parametrize("v", variant_params("stencil"))
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("name, shape", NAMED)
def test_named_stencils(v, boundary, name, shape):
    """The named stencils (laplace5 and laplace7 take the Hopper rung's star kernels)."""
    u = rng_for(name, shape).standard_normal(shape).astype(np.float32)
    ref.check_stencil(gl.stencil(u, name, boundary=boundary, variant=v.id), u, name, boundary)


def star_weights(ndim, rng, zero_axis=False):
    """Radius-1 star weights of either sign (variant 4's star kernels take them, with 16-byte
    vectors where the rows are a multiple of 4 floats); zero_axis: one
    axis weight zero, which must keep them off the star kernel (a zero weight reads nothing)."""
    w = np.zeros((3,) * ndim)
    centre = (1,) * ndim
    w[centre] = rng.uniform(-2, 2)
    for axis in range(ndim):
        for side in (0, 2):
            at = list(centre)
            at[axis] = side
            w[tuple(at)] = rng.uniform(0.5, 1.5) * rng.choice([-1.0, 1.0])
    if zero_axis:
        w[(0,) + (1,) * (ndim - 1)] = 0.0
    return w


@pytest.mark.parametrize("v", variant_params("stencil"))
@pytest.mark.parametrize("shape", [(3, 3), (4, 70), (65, 3), (33, 34), (3, 3, 3), (34, 5, 7),
                                   (4, 66, 35), (3, 4), (9, 40), (35, 8), (3, 3, 4),
                                   (4, 7, 36), (37, 5, 8)])
@pytest.mark.parametrize("zero_axis", [False, True])
def test_star_weights(v, shape, zero_axis):
    rng = rng_for("star", shape, zero_axis)
    u = rng.standard_normal(shape).astype(np.float32)
    w = star_weights(len(shape), rng, zero_axis)
    if zero_axis:  # an infinity where only the zero weight would read it
        u[(0,) * len(shape)] = np.inf
    for boundary in ("zero", "fixed"):
        got = gl.stencil(u, w, boundary=boundary, variant=v.id)
        check_u = u
        if zero_axis:  # the same cells infinite or NaN; the others as if the infinity were 0
            finite = np.isfinite(ref.stencil_reference(u, w, boundary))
            assert np.array_equal(np.isfinite(got), finite)
            check_u = np.where(np.isinf(u), 0, u).astype(u.dtype)
            stand_in = ref.stencil_reference(check_u, w, boundary).astype(u.dtype)
            got = np.where(finite, got, stand_in)
        ref.check_stencil(got, check_u, w, boundary)


def powers_of_two(shape):
    """S3 6.4's fixture: distinct values per coordinate, here 2^(flat index), so that a sum of
    neighbours shows exactly which cells went into it (exact in float32 for up to 24 cells)."""
    return (2.0 ** np.arange(math.prod(shape))).reshape(shape).astype(np.float32)


@pytest.mark.parametrize("v", variant_params("stencil"))
def test_s3_corner_depends_only_on_its_neighbours(v):
    """S3 6.4: nx = 3, ny = 2, zero padding; the corner (0, 0) is (0, 0) + (1, 0) + (0, 1)."""
    u = powers_of_two((2, 3))  # ny = 2 rows, nx = 3 columns
    ones = gl.named_weights("laplace5").copy()
    ones[1, 1] = 1.0
    got = gl.stencil(u, ones, boundary="zero", variant=v.id)
    assert got[0, 0] == u[0, 0] + u[0, 1] + u[1, 0]  # 1 + 2 + 8
    assert got[1, 2] == u[1, 2] + u[1, 1] + u[0, 2]


@pytest.mark.parametrize("v", variant_params("stencil"))
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("shape, r", [((2, 3), 1), ((3, 4), 2), ((1, 5), 1), ((4, 1), 1),
                                      ((2, 2, 3), 1), ((7,), 3)])
def test_distinct_values_exactly(v, boundary, shape, r):
    """Every cell's sum of ones over the stencil is exact on the powers of two: each policy
    reads exactly the cells numpy.pad's mode says, no more, no fewer, at every edge and corner."""
    u = powers_of_two(shape)
    w = np.ones((2 * r + 1,) * len(shape))
    got = gl.stencil(u, w, boundary=boundary, variant=v.id)
    want = ref.stencil_reference(u, w, boundary)
    assert np.array_equal(got.astype(np.float64), want), (got, want)


@pytest.mark.parametrize("v", variant_params("stencil"))
@pytest.mark.parametrize("shape", [(0,), (0, 5), (5, 0), (0, 0, 3), (1,), (1, 1), (1, 1, 1)])
def test_stencil_empty_and_single(v, shape):
    u = np.full(shape, 1.5, np.float32)
    for boundary in BOUNDARIES:
        w = np.ones((3,) * len(shape))
        got = gl.stencil(u, w, boundary=boundary, variant=v.id)
        ref.check_stencil(got, u, w, boundary)


@pytest.mark.parametrize("v", variant_params("stencil"))
def test_policies_are_scipy_ndimage_modes(v):
    """zero, clamp, periodic and reflect are scipy.ndimage.correlate's constant, nearest, wrap and
    reflect (the edge cell repeated), radius larger than the grid included."""
    ndi = pytest.importorskip("scipy.ndimage")
    rng = rng_for("scipy modes", v.id)
    for shape, r in [((7, 9), 2), ((3,), 4), ((4, 3, 5), 1)]:
        u = rng.standard_normal(shape)
        w = rng.standard_normal((2 * r + 1,) * len(shape))
        for boundary, mode in [("zero", "constant"), ("clamp", "nearest"), ("periodic", "wrap"),
                               ("reflect", "reflect")]:
            got = gl.stencil(u, w, boundary=boundary, variant=v.id)
            want = ndi.correlate(u, w, mode=mode)
            assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (shape, boundary)


def test_cpu_variants_agree_bit_for_bit():
    u = rng_for("cpu agree").standard_normal((61, 77)).astype(np.float32)
    w = weights_for(u.shape, 2, rng_for("cpu agree w"))
    for boundary in BOUNDARIES:
        a = gl.stencil(u, w, boundary=boundary, variant="serial")
        b = gl.stencil(u, w, boundary=boundary, variant="openmp_simd")
        assert a.tobytes() == b.tobytes(), boundary


def block_shape_params():
    out = []
    for v in gl.variants("stencil"):
        for name in ("bx", "by"):
            for value in v.tunables.get(name, {}).get("values", []):
                out.append(pytest.param(v, name, value, id=f"{v.id}-{v.name}-{name}{value}",
                                        marks=[pytest.mark.gpu]))
    return out


@pytest.mark.parametrize("v, name, value", block_shape_params())
def test_every_block_shape(v, name, value):
    other = {"bx": "by", "by": "bx"}[name]
    limit = 1024 // value
    kw = {name: value, other: min(v.tunables[other]["values"], key=lambda x: abs(x - limit))}
    if kw["bx"] * kw["by"] > 1024:
        kw[other] = min(v.tunables[other]["values"])
    rng = rng_for("blocks", v.id, name, value)
    for shape, r in [((37, 70), 1), ((5, 9, 67), 1), ((2, 3, 4), 2)]:
        u = rng.standard_normal(shape).astype(np.float32)
        w = weights_for(shape, r, rng)
        for boundary in ("clamp", "fixed"):
            ref.check_stencil(gl.stencil(u, w, boundary=boundary, variant=v.id, **kw), u, w,
                              boundary)


def star_weights_3d(rng):
    """Random radius-1 star weights in 3D: nonzero on the axes, zero off them (the hopper
    rung's star kernel takes these)."""
    w = np.zeros((3, 3, 3))
    for index in [(1, 1, 1), (0, 1, 1), (2, 1, 1), (1, 0, 1), (1, 2, 1), (1, 1, 0), (1, 1, 2)]:
        w[index] = rng.uniform(0.5, 1.5) * rng.choice([-1, 1])
    return w


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hopper_rows_per_thread(rows, dtype):
    """The hopper rung's 3D star kernel with each thread owning 1, 2 or 4 rows along y: ny that
    the rows divide and ny that leaves the last thread fewer rows, every boundary policy, and
    the in-plane neighbours taken from the thread's own rows."""
    rng = rng_for("rows", rows, np.dtype(dtype).name)
    for shape, by in [((5, 9, 68), None), ((6, 7, 64), 2), ((3, 16, 8), 1), ((4, 1, 16), None)]:
        u = rng.standard_normal(shape).astype(dtype)
        for w in (star_weights_3d(rng), "laplace7"):
            for boundary in BOUNDARIES:
                out = gl.stencil(u, w, boundary=boundary, variant="hopper", rows=rows, by=by)
                ref.check_stencil(out, u, w, boundary)


def test_rows_is_the_hopper_rungs_alone():
    u = np.zeros((4, 4, 4), np.float32)
    with pytest.raises(ValueError, match="no 'rows' tunable"):
        gl.stencil(u, "laplace7", variant="serial", rows=2)
    with pytest.raises(ValueError, match="rows=3 is out of range"):
        gl.stencil(u, "laplace7", variant="hopper", rows=3)


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("stencil", backend="cuda"))
@pytest.mark.parametrize("name", ["bx", "by"])
def test_one_block_side_alone_leaves_room_for_the_other(v, name):
    """bx=1024 with by left to the variant (or by=32 with bx left) runs: the default side
    shrinks to fit 1024 threads (fuzz_ops found bx=1024 failing as a CudaError)."""
    largest = max(v.tunables[name]["values"])
    rng = rng_for("one side", v.id, name)
    for shape in [(37, 70), (5, 9, 67)]:
        u = rng.standard_normal(shape).astype(np.float32)
        w = weights_for(shape, 1, rng)
        ref.check_stencil(gl.stencil(u, w, boundary="reflect", variant=v.id, **{name: largest}),
                          u, w, "reflect")


@pytest.mark.gpu
@pytest.mark.parametrize("v", variant_params("stencil", backend="cuda"))
def test_stencil_large_1d_and_3d(v):
    """Grid-stride paths: more rows than gridDim.y holds (N x 1), and a 1D grid past 2^20."""
    rng = rng_for("large", v.id)
    for shape, r in [((70000, 1), 1), (((1 << 21) + 3,), 3), ((3, 70000, 2), 1)]:
        u = rng.standard_normal(shape).astype(np.float32)
        w = weights_for(shape, r, rng)
        ref.check_stencil(gl.stencil(u, w, boundary="periodic", variant=v.id), u, w, "periodic")


# ---------------------------------------------------------------- errors


def test_stencil_errors_name_their_argument():
    u = np.zeros((5, 6), np.float32)
    with pytest.raises(ValueError, match="boundary"):
        gl.stencil(u, "laplace5", boundary="mirror")
    with pytest.raises(TypeError, match="boundary"):
        gl.stencil(u, "laplace5", boundary=1)
    with pytest.raises(ValueError, match="weights"):
        gl.stencil(u, "laplace7")
    with pytest.raises(ValueError, match="weights"):
        gl.stencil(u, "sobel")
    with pytest.raises(ValueError, match="weights"):
        gl.stencil(u, np.ones((3, 5)))
    with pytest.raises(ValueError, match="weights"):
        gl.stencil(u, np.ones((11, 11)))  # radius 5
    with pytest.raises(ValueError, match="weights"):
        gl.stencil(u, np.ones((2, 2)))
    with pytest.raises(ValueError, match="weights"):
        gl.stencil(u, np.ones(3))
    with pytest.raises(TypeError, match="weights"):
        gl.stencil(u, np.ones((3, 3), complex))
    with pytest.raises(ValueError, match="u must be"):
        gl.stencil(np.zeros((2, 2, 2, 2), np.float32), np.ones((3, 3, 3, 3)))
    with pytest.raises(TypeError, match="u"):
        gl.stencil(np.zeros((4, 4), np.int32), "laplace5")
    with pytest.raises(ValueError, match="C-contiguous"):
        gl.stencil(np.zeros((6, 6), np.float32)[:, ::2], "laplace5")
    with pytest.raises(ValueError, match="bx"):
        gl.stencil(u, "laplace5", variant="naive", bx=48)
    with pytest.raises(ValueError, match="1024"):
        gl.stencil(u, "laplace5", variant="naive", bx=1024, by=2)
    with pytest.raises(ValueError, match="stream"):
        gl.stencil(u, "laplace5", variant="serial", stream=gl.Stream() if gl.cuda_available()
                   else 1)


@pytest.mark.gpu
def test_1d_grids_take_one_row_of_threads():
    with pytest.raises(ValueError, match="by"):
        gl.stencil(np.zeros(9, np.float32), np.ones(3), variant="naive", by=8)


def test_ids_match_the_header():
    """cuda/stencil/stencil.h's enums: the ladders' numbering."""
    assert [(v.id, v.name) for v in gl.variants("stencil")] == [
        (0, "naive"), (1, "shared_tiles"), (2, "streaming"), (3, "interior_boundary"),
        (4, "hopper"), (100, "serial"), (101, "openmp_simd")]
    assert [(v.id, v.name) for v in gl.variants("jacobi")] == [
        (0, "per_sweep"), (1, "fused"), (2, "temporal"), (3, "graph"), (100, "serial")]


# ---------------------------------------------------------------- jacobi


def direct_solve(f, u0, h):
    """The same discrete problem solved directly: -laplace_h(u) = f on the interior, u = u0 on
    the faces, as one dense linear system of the interior unknowns."""
    shape = f.shape
    inner = tuple(n - 2 for n in shape)
    count = math.prod(inner)
    index = -np.ones(shape, int)
    index[(slice(1, -1),) * f.ndim] = np.arange(count).reshape(inner)
    A = np.zeros((count, count))
    b = np.zeros(count)
    for cell in np.ndindex(*inner):
        at = tuple(c + 1 for c in cell)
        i = index[at]
        A[i, i] = 2 * f.ndim
        b[i] = h * h * f[at]
        for axis in range(f.ndim):
            for step in (-1, 1):
                nb = list(at)
                nb[axis] += step
                nb = tuple(nb)
                if index[nb] >= 0:
                    A[i, index[nb]] -= 1
                else:
                    b[i] += u0[nb]
    u = np.array(u0, np.float64)
    u[(slice(1, -1),) * f.ndim] = np.linalg.solve(A, b).reshape(inner)
    return u


@pytest.mark.parametrize("v, where", JACOBI_VW)
@pytest.mark.parametrize("shape", [(12, 15), (6, 7, 8)])
def test_jacobi_converges_to_the_direct_solve(v, where, shape):
    if v.name == "temporal" and len(shape) == 3:
        pytest.skip("temporal blocking is 2D only (test_temporal_refuses_3d)")
    rng = rng_for("direct", shape)
    f = rng.standard_normal(shape)
    u0 = rng.standard_normal(shape)  # the faces' values are the Dirichlet data
    h = 0.25
    r = gl.jacobi(placed(where, f), placed(where, u0), h=h, iters=20000, tol=1e-9, check_every=10,
                  variant=v.id)
    assert r.converged and r.residuals[-1] <= 1e-9
    u = fetched(where, r.u)
    want = direct_solve(f, u0, h)
    # the error is A^-1 times the residual; for these grids ||A^-1|| h^-2 is below 10
    assert np.max(np.abs(u - want)) <= 1e-8 * max(1.0, np.max(np.abs(want))), \
        np.max(np.abs(u - want))
    faces = ref.shell_mask(shape, 1)
    assert np.array_equal(u[faces], u0[faces])  # the boundary never moves
    res = r.residuals
    assert np.all(res[1:] <= res[:-1] * (1 + 1e-9)), res  # monotone: the update never grows


@pytest.mark.parametrize("v, where", JACOBI_VW)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, iters, check_every",
                         [((3, 3), 5, 2), ((1, 9), 3, 1), ((9, 2), 4, 5), ((33, 70), 37, 10),
                          ((70, 33), 8, 8), ((65, 130), 41, 7), ((3, 3, 3), 4, 3),
                          ((5, 9, 17), 23, 6), ((2, 8, 8), 3, 2), ((0, 4), 3, 2),
                          ((19, 36), 13, 4), ((9, 4), 5, 5), ((64, 128), 9, 9),
                          ((5, 9, 16), 7, 3), ((18, 4, 4), 4, 4)])
def test_jacobi_sweeps_match_numpy(v, where, dtype, shape, iters, check_every):
    """A fixed number of sweeps, checked every check_every: u and each check's residual against
    float64 sweeps (odd counts leave u in either grid; 65 x 130 is past a temporal tile; rows of
    a multiple of 4 take the 16-byte sweep, 9 x 4 with both faces inside one vector)."""
    if v.name == "temporal" and len(shape) == 3:
        return
    rng = rng_for("sweeps", shape, iters)
    f = rng.standard_normal(shape).astype(dtype)
    u0 = rng.standard_normal(shape).astype(dtype)
    r = gl.jacobi(placed(where, f), placed(where, u0), h=0.7, iters=iters, check_every=check_every,
                  variant=v.id)
    ref.check_jacobi(r.get(), f, u0, 0.7, iters, None, check_every)
    assert r.sweeps == iters and not r.converged


@pytest.mark.parametrize("v", variant_params("jacobi"))
def test_jacobi_residual_history_is_monotone_in_float32(v):
    n = 48
    f = np.ones((n, n), np.float32)
    r = gl.jacobi(f, iters=3000, check_every=50, variant=v.id)
    res = r.residuals
    assert len(res) == 60
    assert np.all(np.diff(res) <= 1e-6 * res[0]), res
    assert res[-1] < 0.1 * res[0]


@pytest.mark.parametrize("v", variant_params("jacobi"))
def test_jacobi_tol_stops_at_the_first_check_below_it(v):
    f = np.ones((20, 20))
    full = gl.jacobi(f, iters=4000, check_every=25, variant=v.id)
    tol = full.residuals[9] * 1.0001  # the 10th check's residual
    r = gl.jacobi(f, iters=4000, tol=tol, check_every=25, variant=v.id)
    assert r.converged and r.sweeps == 250 and len(r.residuals) == 10
    assert np.array_equal(r.residuals, full.residuals[:10])
    tol_only = gl.jacobi(f, tol=tol, check_every=25, variant=v.id)
    assert tol_only.sweeps == 250


def test_jacobi_result_unpacks():
    u, residuals = gl.jacobi(np.ones((5, 5)), iters=10, check_every=3)
    assert u.shape == (5, 5) and residuals.shape == (4,)
    assert "sweeps=10" in repr(gl.jacobi(np.ones((5, 5)), iters=10))


def test_jacobi_errors():
    f = np.ones((6, 6))
    with pytest.raises(ValueError, match="iters or tol"):
        gl.jacobi(f)
    with pytest.raises(ValueError, match="tol"):
        gl.jacobi(f, tol=-1.0)
    with pytest.raises(ValueError, match="iters"):
        gl.jacobi(f, iters=-3)
    with pytest.raises(ValueError, match="check_every"):
        gl.jacobi(f, iters=3, check_every=0)
    with pytest.raises(ValueError, match="h must"):
        gl.jacobi(f, iters=3, h=0.0)
    with pytest.raises(ValueError, match="f must be 2-D or 3-D"):
        gl.jacobi(np.ones(6), u0=np.ones(6), iters=3)
    with pytest.raises(ValueError, match="u0"):
        gl.jacobi(f, u0=np.ones((6, 7)), iters=3)
    with pytest.raises(TypeError, match="u0"):
        gl.jacobi(f, u0=np.ones((6, 6), np.float32), iters=3)
    with pytest.raises(ValueError, match="depth"):
        gl.jacobi(f, iters=3, variant="serial", depth=4)


@pytest.mark.gpu
def test_temporal_refuses_3d():
    with pytest.raises(ValueError, match="2-D"):
        gl.jacobi(np.ones((5, 5, 5), np.float32), iters=3, variant="temporal")
    r = gl.jacobi(np.ones((5, 5, 5), np.float32), iters=3)  # variant=None picks fused for 3D
    assert r.sweeps == 3


@pytest.mark.gpu
@pytest.mark.parametrize("shape, dtype", [((1024, 257), np.float32), ((40, 61, 67), np.float64)])
def test_a_large_numpy_f_without_u0_solves_on_the_gpu_and_comes_back_as_numpy(shape, dtype):
    """From 1 MiB a NumPy f with u0=None goes to the GPU, the zeros made there (not a host array
    of f's size): u is NumPy, bitwise the solve with the host zeros passed in."""
    f = rng_for("numpy-f", len(shape)).standard_normal(shape).astype(dtype)
    assert f.nbytes >= 1 << 20
    got = gl.jacobi(f, iters=9, check_every=4)
    ref_run = gl.jacobi(f, np.zeros_like(f), iters=9, check_every=4)
    assert isinstance(got.u, np.ndarray) and got.u.dtype == dtype
    assert got.u.tobytes() == ref_run.u.tobytes() and got.sweeps == 9
    assert got.residuals.tobytes() == ref_run.residuals.tobytes()
    serial = gl.jacobi(f[:64].copy(), iters=3, variant="serial")  # a CPU variant stays on the host
    assert isinstance(serial.u, np.ndarray)


@pytest.mark.gpu
@pytest.mark.parametrize("depth", [1, 2, 4, 8])
def test_temporal_every_depth(depth):
    rng = rng_for("depth", depth)
    f = rng.standard_normal((77, 150)).astype(np.float32)
    u0 = rng.standard_normal((77, 150)).astype(np.float32)
    for iters, check_every in [(13, 5), (16, 16), (1, 1)]:
        r = gl.jacobi(f, u0, h=0.5, iters=iters, check_every=check_every, variant="temporal",
                      depth=depth)
        ref.check_jacobi(r, f, u0, 0.5, iters, None, check_every)


# ---------------------------------------------------------------- the slab sweeps' C ABI


@pytest.mark.gpu
@pytest.mark.parametrize("shape, cut", [((37, 53), 10), ((3, 9), 2), ((9, 8, 35), 4),
                                        ((21, 5, 3), 20), ((37, 52), 10), ((6, 4), 3),
                                        ((9, 6, 36), 4), ((20, 3, 4), 19)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_slab_sweeps_cover_exactly_their_rows(shape, cut, dtype):
    """glc_jacobi_sweep2d_rows / glc_jacobi_sweep3d_planes (the ABI a multi-GPU lab sweeps its
    slabs with): two calls over [1, cut) and [cut, n - 1) give one full sweep; the rows outside
    the range and the columns on the faces are left untouched; the residual is the largest
    update of the rows swept."""
    rng = rng_for("slab", shape, cut)
    u = rng.standard_normal(shape).astype(dtype)
    f = rng.standard_normal(shape).astype(dtype)
    h = 0.5
    want, _ = ref.jacobi_reference(f, u, h, 1)
    poison = np.full(shape, np.nan, dtype)
    du, df = gl.to_device(u), gl.to_device(f)
    dnew = gl.to_device(poison)
    res = gl.zeros((1,), dtype=dtype)
    gl._core._jacobi_sweep_slab(du, dnew, df, 1, cut, h * h, res)
    first = res.get()[0]
    gl._core._jacobi_sweep_slab(du, dnew, df, cut, shape[0] - 1, h * h, None)
    got = dnew.get()
    inner = (slice(1, -1),) * len(shape)
    bound = ref.jacobi_bound(f, u, h, 1, dtype)
    assert np.all(np.abs(got[inner] - want[inner]) <= bound)
    faces = ref.shell_mask(shape, 1)
    assert np.all(np.isnan(got[faces]))  # nothing outside the interior written
    update = np.abs(want - u)[1:cut][(slice(None),) + inner[1:]]
    assert abs(first - update.max()) <= 2 * bound
    with pytest.raises(gl.CudaError):
        gl._core._jacobi_sweep_slab(du, dnew, df, 0, 2, h * h, None)  # row 0 is a ghost
