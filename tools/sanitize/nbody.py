"""Every n-body kernel: every CUDA variant of nbody_accel with every combination of its tunables,
at awkward N (one body, at the origin and off it; under, at and over the 256-body tile; variants 5
and 6's split j range; variant 7's blocks of 2, 1, 4 and 8 warps, with short last bands), plus
nbody_step and nbody_energy; tools/sanitize/ops.py leaves nbody_accel to
this driver (OPS_COVERED). Every result checked against the CPU. See _common.py.

    python3 tools/sanitize/nbody.py [--inputs both|device]
"""

import itertools
import sys

import numpy as np

from _common import done, gl, settle, start, wanted

# tools/gpu-check.sh runs 2 processes a tool (--shard k/2): in one,
# racecheck's took 498 s on the H200, beside the other drivers.
SANITIZE_SHARDS = 2
# ops.py leaves these ops here: this driver runs each CUDA variant with every tunable that ops.py
# would, from NumPy and device inputs, at shapes chosen for its kernels
OPS_COVERED = ("nbody_accel",)

SIZES = (1, 33, 256, 300)
# Variant 7's band shapes (bands of ceil(chunks / 64) chunks of 256 bodies; as many warps as
# divide a band): 2 warps and a last band of 1 chunk; 1 warp, 3 rounds; 4 warps; 8 warps, short
# last band.
PAIR_SIZES = (16385, 40000, 65536, 114689)
EPS = 0.05


def close(got, ref, what):
    scale = np.abs(ref).max() if ref.size else 0.0
    if not np.allclose(got, ref, rtol=1e-4, atol=1e-5 * scale):
        sys.exit(f"wrong result: {what}")


def main():
    args, _ = start(__doc__)
    calls = 0
    # A lone body off the origin feels nothing (gl.plummer's lone body sits at the origin, where
    # variant 6's i = j term, the rounding error of its scaled position, is 0 anyway).
    lone = gl.to_device(np.array([[1e3, -2.5, 0.3]], np.float32))
    lone_mass = gl.to_device(np.array([0.37], np.float32))
    for v in gl.variants("nbody_accel"):
        if v.backend == "cuda" and wanted(args, str(v.id)):
            got = gl.nbody_accel(lone, lone_mass, EPS, variant=v.id)
            settle()
            close(got.get(), np.zeros((1, 3)), f"{v.id} a lone body off the origin")
            calls += 1
    for n in SIZES + (1000,):
        pos, vel, mass = gl.plummer(n, seed=n)
        dpos, dvel, dmass = gl.to_device(pos), gl.to_device(vel), gl.to_device(mass)
        ref = gl.nbody_accel(pos, mass, EPS, variant=102)
        for v in gl.variants("nbody_accel"):
            splits_j = v.id in (5, 6)  # only these split the j range at n = 1000
            if v.backend != "cuda" or (n == 1000 and not splits_j) or not wanted(args, str(v.id)):
                continue
            names = sorted(v.tunables)
            for values in itertools.product(*(v.tunables[k]["values"] for k in names)):
                kw = dict(zip(names, values))
                got = gl.nbody_accel(dpos, dmass, EPS, variant=v.id, **kw)
                settle()
                close(got.get(), ref, f"{v.id} {n} {kw} device")
                calls += 1
                if args.inputs == "both":
                    got = gl.nbody_accel(pos, mass, EPS, variant=v.id, **kw)
                    settle()
                    close(got, ref, f"{v.id} {n} {kw} numpy")
                    calls += 1
            p, w = gl.nbody_step(dpos, dvel, dmass, 1e-3, EPS, steps=2, variant=v.id)
            settle()
            rp, rw = gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=2, variant=102)
            close(p.get(), rp, f"step {v.id} {n}")
            close(w.get(), rw, f"step {v.id} {n} vel")
            calls += 1
        if args.only:
            continue
        e = gl.nbody_energy(dpos, dvel, dmass, EPS)
        settle()
        k, u = gl.nbody_energy(pos, vel, mass, EPS, parts=True)
        if not np.isclose(e, k + u, rtol=1e-6):
            sys.exit(f"energy mismatch at n={n}")
        calls += 2
    if wanted(args, "7"):
        for n in PAIR_SIZES:
            pos, _, mass = gl.plummer(n, seed=n)
            ref = gl.nbody_accel(pos, mass, EPS, variant=102)
            got = gl.nbody_accel(gl.to_device(pos), gl.to_device(mass), EPS, variant=7)
            settle()
            close(got.get(), ref, f"7 {n} device")
            calls += 1
    gl.synchronize()
    done("sanitize/nbody", calls)


if __name__ == "__main__":
    main()
