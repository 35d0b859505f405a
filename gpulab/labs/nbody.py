"""The n-body lab (S0 ch. 7): softened all-pairs gravity and a leapfrog integrator, with the ladder
of CUDA and CPU variants of ``gl.variants("nbody_accel")``.

Units and conventions:
- Positions and velocities are (N, 3) float32 arrays, masses (N,) float32. float64 input is
  refused with a TypeError that names the argument (the kernels are float32, and a silent
  conversion would hide a copy and the loss of precision): pass ``x.astype(np.float32)``.
- The acceleration of body i is ``G * sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2)``.
  The softening eps must be > 0: it is what makes the i = j term zero, so no kernel tests j != i.
- N = 0 gives empty results; N may be any size up to 2**24, not only multiples of a block.
- Placement follows the rest of gpulab: NumPy in, NumPy out (on the GPU when there is one and the
  variant is a CUDA one); device arrays (gpulab, CuPy, PyTorch) in, DeviceArrays out,
  asynchronously on ``stream``.

The op's size (bench, sweep, the main job) is the number of pair interactions N^2, so that
size / time is interactions per second; its flops are 20 per interaction (the GPU Gems
convention; S0 counts about 16).
"""

import math

import numpy as np

from .. import _core
from .. import peers as _peers
from .._op import Cost, Unit, op

# The names gpulab lifts to its top level (gl.nbody_accel, ...).
EXPORTS = ("nbody_accel", "nbody_step", "nbody_energy", "NBody", "plummer")

FLOPS_PER_INTERACTION = 20


def _bodies(pos):
    return int(pos.shape[0])


def _accel_cost(pos, mass, eps, G=1.0, **_):
    n = _bodies(pos)
    # positions and masses read once (16 B), accelerations written once (12 B)
    return Cost(bytes=28 * n, flops=FLOPS_PER_INTERACTION * n * n)


def _accel_size(pos, mass, eps, G=1.0, **_):
    return _bodies(pos) ** 2


def _accel_example(n, rng):
    """About n interactions: round(sqrt(n)) bodies of a Plummer sphere, with eps = 0.05."""
    bodies = 0 if n <= 0 else max(1, int(round(math.sqrt(n))))
    pos, _, mass = plummer(bodies, seed=int(rng.integers(1 << 31)))
    return pos, mass, 0.05


def _peer_chunk(n):
    # rows of the (rows, n, 3) difference tensor per pass: at most 2^27 pairs (1.5 GiB) at once
    return max(1, min(n, (1 << 27) // max(n, 1)))


def _all_pairs(xp, rsqrt, p, m, eps, G):
    """The vectorized all-pairs acceleration a NumPy-style user would write, chunked over i."""
    n = p.shape[0]
    out = xp.empty_like(p)
    step = _peer_chunk(n)
    eps2 = eps * eps
    for i0 in range(0, n, step):
        d = p[None, :, :] - p[i0:i0 + step, None, :]
        inv = rsqrt((d * d).sum(-1) + eps2)
        s = m[None, :] * inv * inv * inv
        out[i0:i0 + step] = G * (s[:, :, None] * d).sum(1)
    return out


def _torch_accel(pos, mass, eps, G=1.0, **_):
    import torch
    p, m = _peers.as_peer("torch", pos), _peers.as_peer("torch", mass)
    return lambda: _all_pairs(torch, torch.rsqrt, p, m, eps, G)


def _cupy_accel(pos, mass, eps, G=1.0, **_):
    import cupy
    p, m = _peers.as_peer("cupy", pos), _peers.as_peer("cupy", mass)
    return lambda: _all_pairs(cupy, lambda x: 1 / cupy.sqrt(x), p, m, eps, G)


@op("nbody_accel", cost=_accel_cost, size=_accel_size, example=_accel_example,
    demo_size={"gpu": 16384 ** 2, "cpu": 2048 ** 2},
    peers={"torch": _torch_accel, "cupy": _cupy_accel},
    unit=Unit("G interactions/s", _accel_size))
def nbody_accel(pos, mass, eps, G=1.0, variant=None, out=None, stream=None, block=None,
                unroll=None, bodies=None):
    """Softened all-pairs accelerations, (N, 3) float32.

    `pos` (N, 3) and `mass` (N,) are float32; `eps` > 0 is the softening length. `variant`:
    None (the best where it runs), an id or a name of ``gl.variants("nbody_accel")``. Tunables,
    each variant accepting those its record lists: `block` (threads per block), `unroll` (j-loop
    unroll of variants 1, 3, 4), `bodies` (bodies per thread of variants 5 and 6). `out`: an (N, 3)
    float32 array where the operands live."""
    return _core.nbody_accel(pos, mass, eps, G, variant, out, stream, block, unroll, bodies)


def nbody_step(pos, vel, mass, dt, eps, steps=1, G=1.0, variant=None, stream=None, block=None,
               unroll=None, bodies=None):
    """`steps` leapfrog (kick-drift-kick) steps of `dt`; returns the new (pos, vel).

    The accelerations are those of nbody_accel with the same variant and tunables (one extra
    evaluation at the start of each call). With device arrays every step runs on the device,
    without a round trip to the host, asynchronously on `stream`; the inputs are not modified."""
    return _core.nbody_step(pos, vel, mass, dt, eps, steps, G, variant, stream, block, unroll,
                            bodies)


def nbody_energy(pos, vel, mass, eps, G=1.0, stream=None, parts=False):
    """Total energy: kinetic sum m v^2 / 2 plus the softened potential
    -G sum_{i<j} m_i m_j / sqrt(r_ij^2 + eps^2) (each pair once). Computed on the GPU when the
    operands are device arrays or a GPU is usable (float32 pair terms, float64 sums), else on the
    CPU in float64. Returns a float, or (kinetic, potential) with parts=True."""
    kinetic, potential = _core.nbody_energy(pos, vel, mass, eps, G, stream)
    return (kinetic, potential) if parts else kinetic + potential


def plummer(n, seed=None):
    """(pos, vel, mass) of a Plummer sphere of n bodies in N-body units (G = 1, total mass 1,
    total energy -1/4), in the centre-of-mass frame; float32.

    The recipe of Aarseth, Henon & Wielen (1974): radii from the inverted cumulative mass
    (cut at 10 scale radii), speeds by von Neumann rejection from the isotropic distribution
    function, random directions; then scaled from Plummer units (E = -3 pi / 64) to N-body
    units by the length 3 pi / 16."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    n = int(n)
    rng = np.random.default_rng(seed)
    radius = np.empty(n)
    filled = 0
    while filled < n:  # cut the infinite tail: r < 10 keeps 99.9 % of the mass
        x = rng.uniform(0.0, 1.0, n - filled)
        r = 1.0 / np.sqrt(np.maximum(x, 1e-300) ** (-2.0 / 3.0) - 1.0)
        r = r[r < 10.0]
        radius[filled:filled + r.size] = r
        filled += r.size
    q = np.empty(n)
    filled = 0
    while filled < n:  # g(q) = q^2 (1 - q^2)^(7/2) <= 0.1 on [0, 1]
        x4 = rng.uniform(0.0, 1.0, 2 * (n - filled) + 8)
        x5 = rng.uniform(0.0, 0.1, x4.size)
        keep = x4[x5 < x4 ** 2 * (1.0 - x4 ** 2) ** 3.5][:n - filled]
        q[filled:filled + keep.size] = keep
        filled += keep.size
    speed = q * np.sqrt(2.0) * (1.0 + radius ** 2) ** -0.25
    pos = radius[:, None] * _unit_vectors(rng, n)
    vel = speed[:, None] * _unit_vectors(rng, n)
    mass = np.full(n, 1.0 / n) if n else np.empty(0)
    if n:
        pos -= (mass[:, None] * pos).sum(0) / mass.sum()
        vel -= (mass[:, None] * vel).sum(0) / mass.sum()
    length = 3.0 * np.pi / 16.0
    pos *= length
    vel /= np.sqrt(length)
    return pos.astype(np.float32), vel.astype(np.float32), mass.astype(np.float32)


def _unit_vectors(rng, n):
    z = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(0.0, 2.0 * np.pi, n)
    s = np.sqrt(1.0 - z * z)
    return np.stack([s * np.cos(phi), s * np.sin(phi), z], axis=1)


class NBody:
    """A system that keeps its state where it runs, for notebooks:

        sim = gl.NBody(*gl.plummer(4096, seed=1), eps=0.05)
        e0 = sim.energy()
        sim.step(dt=1e-3, steps=1000)
        sim.positions()        # NumPy (N, 3)

    With a CUDA variant (the default when a GPU is usable) the state lives on the device and
    step() never copies it back; positions(), velocities() and energy() fetch what they need."""

    def __init__(self, pos, vel, mass, eps, G=1.0, variant=None, **tunables):
        self.eps, self.G, self.tunables, self.time = eps, G, dict(tunables), 0.0
        if variant is None:
            backend = "cuda" if _core.cuda_available() else "cpu"
            variant = next(v.id for v in _variants() if v.backend == backend and v.best)
        record = next((v for v in _variants() if variant in (v.id, v.name)), None)
        if record is None:
            known = ", ".join(f"{v.id} {v.name}" for v in _variants())
            raise ValueError(f"variant: nbody_accel has no variant {variant!r}; known: {known}")
        self.variant = record.id
        self.on_device = record.backend == "cuda"
        # validates shapes, dtypes, eps and the device (NoDeviceError) before anything moves
        nbody_step(pos, vel, mass, 0.0, eps, 0, G, self.variant, **self.tunables)
        place = _core.to_device if self.on_device else np.asarray
        self._pos, self._vel, self._mass = (place(a) for a in (pos, vel, mass))

    @property
    def n(self):
        return int(self._mass.shape[0])

    def step(self, dt, steps=1):
        """Advances `steps` leapfrog steps of dt (on the device for a CUDA variant)."""
        self._pos, self._vel = nbody_step(self._pos, self._vel, self._mass, dt, self.eps, steps,
                                          self.G, self.variant, **self.tunables)
        self.time += dt * steps
        return self

    def _host(self, a):
        return a.get() if self.on_device else a.copy()

    def positions(self):
        return self._host(self._pos)

    def velocities(self):
        return self._host(self._vel)

    def energy(self, parts=False):
        return nbody_energy(self._pos, self._vel, self._mass, self.eps, self.G, parts=parts)

    def momentum(self):
        """Total momentum sum m v (float64, on the host)."""
        return (self._host(self._mass).astype(np.float64)[:, None]
                * self.velocities().astype(np.float64)).sum(0)

    def __repr__(self):
        where = "device" if self.on_device else "host"
        return (f"NBody(n={self.n}, eps={self.eps}, variant={self.variant}, t={self.time:g}, "
                f"{where})")


def _variants():
    from ..registry import variants
    return variants("nbody_accel")
