"""The n-body lab against a float64 NumPy reference: every variant with every tunable value its
record allows, at awkward N; the integrator's conservation of energy and momentum; the device
path; argument errors; determinism.

Energy test settings (documented in docs/labs/nbody.md): a Plummer sphere in N-body units
(G = M = 1, E = -1/4), softening eps = 0.05, leapfrog step dt = 1e-3, 1000 steps (about a third of
a crossing time 2*sqrt(2)); relative drift |E(T) - E(0)| / |E(0)| <= 1e-3."""

import functools
import itertools

import numpy as np
import pytest

import gpulab as gl
from conftest import GPU, rng_for
from references.nbody import assert_nbody_close, nbody_reference

SIZES = [1, 2, 3, 31, 33, 127, 257, 1000, 4099]
EPS = 0.05


@functools.lru_cache(maxsize=None)
def bodies(n, seed=0):
    """A Plummer sphere of n bodies with masses that differ (uniform in [0.5, 1.5] / n)."""
    pos, vel, _ = gl.plummer(n, seed=seed)
    rng = rng_for("nbody-mass", n, seed)
    mass = (rng.uniform(0.5, 1.5, n) / max(n, 1)).astype(np.float32)
    return pos, vel, mass


@functools.lru_cache(maxsize=None)
def reference(n):
    pos, _, mass = bodies(n)
    return nbody_reference(pos, mass, EPS)


def check(got, n):
    pos, _, mass = bodies(n)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (n, 3)
    ref = reference(n)
    err, norm = np.linalg.norm(got.astype(np.float64) - ref), np.linalg.norm(ref)
    if norm == 0:  # one body: no force at all
        assert err == 0
    else:
        assert err < 1e-5 * norm, f"relative L2 error {err / norm:.3g} at N={n}"


def tunable_params():
    """(variant, tunables) for every variant and every combination of its tunables' values."""
    params = []
    for v in gl.variants("nbody_accel"):
        names = sorted(v.tunables)
        for values in itertools.product(*(v.tunables[k]["values"] for k in names)):
            kw = dict(zip(names, values))
            marks = [pytest.mark.gpu] if v.backend == "cuda" else []
            tag = "-".join(f"{k}{x}" for k, x in kw.items()) or "default"
            params.append(pytest.param(v, kw, id=f"{v.id}-{v.name}-{tag}", marks=marks))
    return params


CUDA = [v for v in gl.variants("nbody_accel") if v.backend == "cuda"]
CPU = [v for v in gl.variants("nbody_accel") if v.backend == "cpu"]


def by_backend(backend):
    vs = CUDA if backend == "cuda" else CPU
    marks = [pytest.mark.gpu] if backend == "cuda" else []
    return [pytest.param(v, id=f"{v.id}-{v.name}", marks=marks) for v in vs]


ALL = by_backend("cuda") + by_backend("cpu")


# ---------------------------------------------------------------- accelerations


@pytest.mark.parametrize("v, kw", tunable_params())
def test_accel_matches_reference(v, kw):
    for n in SIZES:
        pos, _, mass = bodies(n)
        out = np.full((n, 3), np.nan, np.float32)
        assert gl.nbody_accel(pos, mass, EPS, variant=v.id, out=out, **kw) is out
        check(out, n)


@pytest.mark.parametrize("v", ALL)
def test_accel_g_scales_and_momentum_balances(v):
    """G scales the result; sum_i m_i a_i = 0 (Newton's third law) to float32 rounding."""
    pos, _, mass = bodies(1000)
    a1 = gl.nbody_accel(pos, mass, EPS, variant=v.id).astype(np.float64)
    a3 = gl.nbody_accel(pos, mass, EPS, G=3.0, variant=v.id).astype(np.float64)
    np.testing.assert_allclose(a3, 3.0 * a1, rtol=1e-6, atol=1e-6 * np.abs(a1).max())
    force = mass[:, None].astype(np.float64) * a1
    total = np.abs(force.sum(0))
    # each a_i is a sum of N terms rounded in float32: the sum of the forces cancels to about
    # eps32 * sqrt(N) of the forces' magnitude
    assert (total <= 1e-5 * np.abs(force).sum(0)).all(), total


@pytest.mark.parametrize("v", by_backend("cpu"))
def test_cpu_variants_agree_with_naive_closely(v):
    pos, _, mass = bodies(4099)
    naive = gl.nbody_accel(pos, mass, EPS, variant=100)
    got = gl.nbody_accel(pos, mass, EPS, variant=v.id)
    np.testing.assert_allclose(got, naive, rtol=1e-4, atol=1e-5 * np.abs(naive).max())


@pytest.mark.gpu
@pytest.mark.parametrize("v", by_backend("cuda"))
def test_device_in_device_out(v):
    for n in (1, 33, 1000, 4099):
        pos, _, mass = bodies(n)
        dpos, dmass = gl.to_device(pos), gl.to_device(mass)
        got = gl.nbody_accel(dpos, dmass, EPS, variant=v.id)
        assert isinstance(got, gl.DeviceArray) and got.shape == (n, 3)
        assert got.dtype == np.float32
        check(got.get(), n)
        out = gl.to_device(np.full((n, 3), np.nan, np.float32))
        assert gl.nbody_accel(dpos, dmass, EPS, variant=v.id, out=out) is out
        check(out.get(), n)
        np.testing.assert_array_equal(dpos.get(), pos)


@pytest.mark.gpu
@pytest.mark.parametrize("v", by_backend("cuda"))
def test_user_stream_and_foreign_arrays(v):
    torch = pytest.importorskip("torch")
    pos, vel, mass = bodies(1000)
    stream = gl.Stream(non_blocking=True)
    got = gl.nbody_accel(gl.to_device(pos, stream=stream), gl.to_device(mass, stream=stream), EPS,
                         variant=v.id, stream=stream)
    assert got.__cuda_array_interface__["stream"] == stream.handle
    stream.synchronize()
    check(got.get(), 1000)
    tp, tm = torch.from_numpy(pos).cuda(), torch.from_numpy(mass).cuda()
    check(gl.nbody_accel(tp, tm, EPS, variant=v.id).get(), 1000)
    p2, v2 = gl.nbody_step(tp, torch.from_numpy(vel).cuda(), tm, 1e-3, EPS, steps=3, variant=v.id)
    assert isinstance(p2, gl.DeviceArray) and isinstance(v2, gl.DeviceArray)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", [5, 6, 7])
def test_multibody_split_is_bit_identical_run_to_run(variant):
    """Variants 5 and 6 split the j range over blocks at this N and add the parts in a fixed
    order; variant 7's blocks of band pairs add into partial sums in an order its barriers fix."""
    pos, _, mass = bodies(20000)
    dpos, dmass = gl.to_device(pos), gl.to_device(mass)
    runs = [gl.nbody_accel(dpos, dmass, EPS, variant=variant).get() for _ in range(3)]
    assert all(r.tobytes() == runs[0].tobytes() for r in runs[1:])
    assert_nbody_close(runs[0], pos, mass, EPS)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [16385, 40000, 65536, 131072])
def test_pairs_once_at_every_band_shape(n):
    """Variant 7 makes bands of ceil(chunks / 64) chunks of 256 bodies, and blocks of as many
    warps as divide a band: 16385 bodies make 33 bands of 2 chunks, the last one short (2
    warps), 40000 make 53 of 3 (1 warp, 3 rounds), 65536 make 64 of 4 (4 warps), 131072 64 of 8
    (8 warps). Each pair is computed once, so every body's sum must still hold every other body:
    sampled bodies against float64, all of them against variant 6 (which computes each
    interaction on its own), and the momentum balance."""
    pos, _, mass = bodies(n)
    dpos, dmass = gl.to_device(pos), gl.to_device(mass)
    got = gl.nbody_accel(dpos, dmass, EPS, variant=7).get()
    rows = rng_for("nbody-pairs", n).choice(n, 256, replace=False)
    rows = np.union1d(rows, [0, n - 1])
    ref = nbody_reference(pos, mass, EPS, rows=rows)
    err = np.linalg.norm(got[rows].astype(np.float64) - ref) / np.linalg.norm(ref)
    assert err < 1e-5, f"relative L2 error {err:.3g} on sampled bodies at N={n}"
    other = gl.nbody_accel(dpos, dmass, EPS, variant=6).get().astype(np.float64)
    assert np.linalg.norm(got - other) < 1e-5 * np.linalg.norm(other)
    force = mass[:, None].astype(np.float64) * got
    assert (np.abs(force.sum(0)) <= 1e-5 * np.abs(force).sum(0)).all()


@pytest.mark.gpu
def test_pairs_once_takes_no_tunables():
    pos, _, mass = bodies(33)
    for name in ("block", "unroll", "bodies"):
        with pytest.raises(ValueError, match=f"no '{name}' tunable"):
            gl.nbody_accel(pos, mass, EPS, variant=7, **{name: 128})


@pytest.mark.parametrize("v", ALL)
def test_lone_body_feels_nothing_and_masses_of_any_sign(v):
    """A lone body feels no force wherever it sits: variant 6's i = j term is the rounding error
    of its scaled position, which it takes back out exactly. Zero and negative masses follow the
    reference (variant 6 scales by sign(m) / sqrt|m|)."""
    for where in ([0.0, 0.0, 0.0], [1e3, -2.5, 0.3], [-7.25e-3, 4e4, 1.0]):
        got = gl.nbody_accel(np.array([where], np.float32), np.array([0.37], np.float32), EPS,
                             variant=v.id)
        assert (got == 0).all(), f"a lone body at {where} got {got}"
    pos, _, mass = bodies(1000)
    mass = mass.copy()
    mass[::7] = 0
    mass[3::11] *= -1
    assert_nbody_close(gl.nbody_accel(pos, mass, EPS, variant=v.id), pos, mass, EPS)


@pytest.mark.parametrize("v", ALL)
def test_deterministic_flag_is_honest(v):
    assert v.deterministic
    pos, _, mass = bodies(4099)
    runs = [gl.nbody_accel(pos, mass, EPS, variant=v.id) for _ in range(2)]
    assert runs[0].tobytes() == runs[1].tobytes()


@pytest.mark.parametrize("v", ALL)
def test_empty_input(v):
    pos, vel, mass = (np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32),
                      np.zeros(0, np.float32))
    got = gl.nbody_accel(pos, mass, EPS, variant=v.id)
    assert got.shape == (0, 3) and got.dtype == np.float32
    p, w = gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=5, variant=v.id)
    assert p.shape == (0, 3) and w.shape == (0, 3)
    assert gl.nbody_energy(pos, vel, mass, EPS) == 0.0


# ---------------------------------------------------------------- integrator


def leapfrog_reference(pos, vel, mass, dt, eps, steps):
    p, v = pos.astype(np.float64), vel.astype(np.float64)
    a = nbody_reference(p, mass, eps)
    for _ in range(steps):
        v += 0.5 * dt * a
        p += dt * v
        a = nbody_reference(p, mass, eps)
        v += 0.5 * dt * a
    return p, v


@pytest.mark.parametrize("v", ALL)
def test_step_matches_float64_leapfrog(v):
    pos, vel, mass = bodies(257)
    p, w = gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=10, variant=v.id)
    rp, rv = leapfrog_reference(pos, vel, mass, 1e-3, EPS, 10)
    assert p.dtype == np.float32 and p.shape == (257, 3)
    assert np.linalg.norm(p - rp) <= 1e-6 * np.linalg.norm(rp)
    assert np.linalg.norm(w - rv) <= 1e-5 * np.linalg.norm(rv)


@pytest.mark.parametrize("v", ALL)
def test_step_zero_steps_and_inputs_untouched(v):
    pos, vel, mass = bodies(33)
    p0, v0 = pos.copy(), vel.copy()
    p, w = gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=0, variant=v.id)
    np.testing.assert_array_equal(p, pos)
    np.testing.assert_array_equal(w, vel)
    assert p is not pos and w is not vel
    gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=2, variant=v.id)
    np.testing.assert_array_equal(pos, p0)
    np.testing.assert_array_equal(vel, v0)


def drift_and_momentum(variant, n, steps, dt=1e-3):
    pos, vel, mass = gl.plummer(n, seed=2026)
    sim = gl.NBody(pos, vel, mass, eps=EPS, variant=variant)
    e0, p0 = sim.energy(), sim.momentum()
    sim.step(dt, steps)
    drift = abs(sim.energy() - e0) / abs(e0)
    # momentum scale: sum_i m_i |v_i|
    scale = (mass[:, None] * np.abs(vel)).sum()
    return drift, np.abs(sim.momentum() - p0).max() / scale, sim


@pytest.mark.gpu
def test_energy_drift_plummer_4096_on_gpu():
    drift, momentum, sim = drift_and_momentum(None, 4096, 1000)
    assert sim.on_device and sim.time == pytest.approx(1.0)
    assert drift <= 1e-3, f"relative energy drift {drift:.3g} over 1000 steps"
    assert momentum <= 1e-5, f"momentum changed by {momentum:.3g} of sum m|v|"


@pytest.mark.parametrize("v", by_backend("cpu"))
def test_energy_drift_small_on_cpu(v):
    drift, momentum, sim = drift_and_momentum(v.id, 256, 200)
    assert not sim.on_device
    assert drift <= 1e-3, f"relative energy drift {drift:.3g} over 200 steps"
    assert momentum <= 1e-5, f"momentum changed by {momentum:.3g} of sum m|v|"


def test_integrator_detects_a_wrong_step():
    """The drift bound can fail: the same check on a deliberately wrong (first-order Euler)
    integrator drifts far beyond it, so the 1e-3 bound is a real test."""
    pos, vel, mass = gl.plummer(256, seed=2026)
    p, w = pos.astype(np.float64), vel.astype(np.float64)

    def energy(p, w):
        return gl.nbody_energy(p.astype(np.float32), w.astype(np.float32), mass, EPS)

    e0 = energy(p, w)
    for _ in range(200):
        a = nbody_reference(p, mass, EPS)
        p = p + 1e-2 * w
        w = w + 1e-2 * a
    assert abs(energy(p, w) - e0) / abs(e0) > 1e-3


# ---------------------------------------------------------------- energy


def energy_reference(pos, vel, mass, eps, G=1.0):
    p, v, m = pos.astype(np.float64), vel.astype(np.float64), mass.astype(np.float64)
    kinetic = 0.5 * (m * (v * v).sum(1)).sum()
    d = p[None, :, :] - p[:, None, :]
    inv = 1.0 / np.sqrt((d * d).sum(-1) + eps * eps)
    np.fill_diagonal(inv, 0.0)
    potential = -0.5 * G * (m[:, None] * m[None, :] * inv).sum()
    return kinetic, potential


@pytest.mark.parametrize("n", [1, 2, 33, 1000])
def test_energy_matches_reference(n):
    pos, vel, mass = bodies(n)
    k, w = gl.nbody_energy(pos, vel, mass, EPS, G=2.0, parts=True)
    rk, rw = energy_reference(pos, vel, mass, EPS, G=2.0)
    assert k == pytest.approx(rk, rel=1e-6)
    assert w == pytest.approx(rw, rel=1e-6, abs=1e-12)
    assert gl.nbody_energy(pos, vel, mass, EPS, G=2.0) == pytest.approx(rk + rw, rel=1e-6)


@pytest.mark.gpu
def test_energy_on_device():
    pos, vel, mass = bodies(4099)
    got = gl.nbody_energy(gl.to_device(pos), gl.to_device(vel), gl.to_device(mass), EPS)
    assert got == pytest.approx(sum(energy_reference(pos, vel, mass, EPS)), rel=1e-6)


# ---------------------------------------------------------------- initial conditions, NBody


def test_plummer_is_in_nbody_units():
    pos, vel, mass = gl.plummer(4096, seed=1)
    assert pos.shape == vel.shape == (4096, 3) and mass.shape == (4096,)
    assert pos.dtype == vel.dtype == mass.dtype == np.float32
    assert mass.sum() == pytest.approx(1.0, rel=1e-5)
    assert np.abs((mass[:, None] * pos).sum(0)).max() < 1e-5
    assert np.abs((mass[:, None] * vel).sum(0)).max() < 1e-5
    k, w = gl.nbody_energy(pos, vel, mass, 1e-4, parts=True)
    assert k + w == pytest.approx(-0.25, rel=0.1)  # sampling noise and the r < 10 cut
    assert -2 * k / w == pytest.approx(1.0, rel=0.1)  # virial equilibrium
    again = gl.plummer(4096, seed=1)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(again, (pos, vel, mass)))


def test_plummer_errors():
    with pytest.raises(ValueError, match="n must be >= 0"):
        gl.plummer(-1)
    with pytest.raises(TypeError, match="n must be an int"):
        gl.plummer(10.0)
    assert gl.plummer(0)[0].shape == (0, 3)


def test_nbody_class_on_cpu():
    pos, vel, mass = gl.plummer(64, seed=3)
    sim = gl.NBody(pos, vel, mass, eps=EPS, variant="openmp_simd")
    assert sim.n == 64 and not sim.on_device and "n=64" in repr(sim)
    sim.step(1e-3, 5).step(1e-3)
    p, w = gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=6, variant=102)
    # split calls redo the first evaluation of a, which is the same: identical trajectories
    np.testing.assert_allclose(sim.positions(), p, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sim.velocities(), w, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="variant"):
        gl.NBody(pos, vel, mass, eps=EPS, variant=99)
    with pytest.raises(ValueError, match="eps"):
        gl.NBody(pos, vel, mass, eps=0.0, variant=100)


@pytest.mark.gpu
def test_gpu_and_cpu_trajectories_agree():
    pos, vel, mass = gl.plummer(1000, seed=5)
    gpu = gl.NBody(pos, vel, mass, eps=EPS).step(1e-3, 20)
    cpu = gl.NBody(pos, vel, mass, eps=EPS, variant=102).step(1e-3, 20)
    assert gpu.on_device
    np.testing.assert_allclose(gpu.positions(), cpu.positions(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- errors


def test_float64_is_refused_naming_the_argument():
    pos, vel, mass = bodies(10)
    for bad, name in ((pos.astype(np.float64), "pos"), (mass.astype(np.float64), "mass")):
        args = (bad, mass) if name == "pos" else (pos, bad)
        with pytest.raises(TypeError, match=f"{name} has dtype float64.*float32 only"):
            gl.nbody_accel(*args, EPS, variant=100)
    with pytest.raises(TypeError, match="vel has dtype float64"):
        gl.nbody_step(pos, vel.astype(np.float64), mass, 1e-3, EPS, variant=100)
    with pytest.raises(TypeError, match="pos has dtype int32"):
        gl.nbody_energy(pos.astype(np.int32), vel, mass, EPS)


def test_bad_shapes():
    pos, vel, mass = bodies(10)
    with pytest.raises(ValueError, match=r"pos must have shape \(N, 3\), got \(10, 2\)"):
        gl.nbody_accel(pos[:, :2].copy(), mass, EPS, variant=100)
    with pytest.raises(ValueError, match=r"pos must have shape \(N, 3\), got \(30,\)"):
        gl.nbody_accel(pos.ravel(), mass, EPS, variant=100)
    with pytest.raises(ValueError, match=r"mass must have shape \(10,\)"):
        gl.nbody_accel(pos, mass[:9], EPS, variant=100)
    with pytest.raises(ValueError, match=r"vel must have shape \(10, 3\) like pos"):
        gl.nbody_step(pos, vel[:5], mass, 1e-3, EPS, variant=100)
    with pytest.raises(ValueError, match="C-contiguous"):
        gl.nbody_accel(np.asfortranarray(pos), mass, EPS, variant=100)
    with pytest.raises(ValueError, match=r"out must have shape \(10, 3\)"):
        gl.nbody_accel(pos, mass, EPS, variant=100, out=np.empty((9, 3), np.float32))
    with pytest.raises(TypeError, match="pos must be a NumPy array"):
        gl.nbody_accel(pos.tolist(), mass, EPS, variant=100)


def test_bad_scalars_and_tunables():
    pos, vel, mass = bodies(10)
    for eps in (0.0, -0.1, float("nan"), float("inf"), 1e-30):
        with pytest.raises(ValueError, match="eps"):
            gl.nbody_accel(pos, mass, eps, variant=100)
    with pytest.raises(TypeError, match="eps must be a real number"):
        gl.nbody_accel(pos, mass, "0.1", variant=100)
    for G in (float("nan"), 1e300, -3.5e38):
        with pytest.raises(ValueError, match="G must be finite as a float32"):
            gl.nbody_accel(pos, mass, EPS, G=G, variant=100)
        with pytest.raises(ValueError, match="G must be finite as a float32"):
            gl.nbody_energy(pos, vel, mass, EPS, G=G)
    with pytest.raises(ValueError, match="steps must be >= 0"):
        gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=-1, variant=100)
    with pytest.raises(TypeError, match="steps must be an int"):
        gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=2.0, variant=100)
    for dt in (float("inf"), 3.5e38):
        with pytest.raises(ValueError, match="dt must be finite"):
            gl.nbody_step(pos, vel, mass, dt, EPS, variant=100)
    with pytest.raises(ValueError, match="no variant 42"):
        gl.nbody_accel(pos, mass, EPS, variant=42)
    with pytest.raises(ValueError, match="block"):
        gl.nbody_accel(pos, mass, EPS, variant=100, block=128)
    with pytest.raises(ValueError, match="unroll=3 is out of range"):
        gl.nbody_accel(pos, mass, EPS, variant=1, unroll=3)
    with pytest.raises(ValueError, match="has no 'unroll' tunable"):
        gl.nbody_accel(pos, mass, EPS, variant=0, unroll=2)
    with pytest.raises(ValueError, match="has no 'bodies' tunable"):
        gl.nbody_accel(pos, mass, EPS, variant=3, bodies=2)
    with pytest.raises(ValueError, match="block=512 is out of range"):
        gl.nbody_accel(pos, mass, EPS, variant=5, block=512)


@pytest.mark.skipif(GPU, reason="checks the behaviour without a usable GPU")
def test_cuda_variants_without_gpu():
    pos, vel, mass = bodies(10)
    for call in (lambda: gl.nbody_accel(pos, mass, EPS, variant=5),
                 lambda: gl.nbody_step(pos, vel, mass, 1e-3, EPS, variant=2),
                 lambda: gl.NBody(pos, vel, mass, EPS, variant=0)):
        with pytest.raises(gl.NoDeviceError, match="100 naive"):
            call()


@pytest.mark.gpu
def test_device_errors():
    pos, vel, mass = bodies(10)
    dpos, dmass = gl.to_device(pos), gl.to_device(mass)
    with pytest.raises(ValueError, match="mixed devices"):
        gl.nbody_accel(dpos, mass, EPS)
    with pytest.raises(TypeError, match="runs on the CPU"):
        gl.nbody_accel(dpos, dmass, EPS, variant=101)
    with pytest.raises(TypeError, match="pos has dtype float64"):
        gl.nbody_accel(gl.to_device(pos.astype(np.float64)), dmass, EPS)
    with pytest.raises(ValueError, match="out must be a device array"):
        gl.nbody_accel(dpos, dmass, EPS, out=np.empty((10, 3), np.float32))
