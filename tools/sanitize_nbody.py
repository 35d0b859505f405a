"""Runs every n-body kernel for compute-sanitizer (memcheck, racecheck, synccheck): every CUDA
variant of nbody_accel with every combination of its tunables, on NumPy and device operands, at
awkward N (padding, several tiles, variant 5's split j range), plus nbody_step and nbody_energy.
tools/sanitize_all.py covers nbody_accel only at its defaults; the step and energy kernels are
not ops of the registry. Checks every result against the CPU; exits non-zero on a mismatch.

    compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/sanitize_nbody.py
"""

import itertools
import sys

import numpy as np

import gpulab as gl

SIZES = (33, 300)
EPS = 0.05


def close(got, ref, what):
    scale = np.abs(ref).max() if ref.size else 0.0
    if not np.allclose(got, ref, rtol=1e-4, atol=1e-5 * scale):
        sys.exit(f"mismatch: {what}")


def main():
    if not gl.cuda_available():
        sys.exit(f"no GPU: {gl._core._gpu_status()}")
    calls = 0
    for n in SIZES + (1000,):
        pos, vel, mass = gl.plummer(n, seed=n)
        dpos, dvel, dmass = gl.to_device(pos), gl.to_device(vel), gl.to_device(mass)
        ref = gl.nbody_accel(pos, mass, EPS, variant=102)
        for v in gl.variants("nbody_accel"):
            if v.backend != "cuda" or (n == 1000 and v.id != 5):
                continue
            names = sorted(v.tunables)
            for values in itertools.product(*(v.tunables[k]["values"] for k in names)):
                kw = dict(zip(names, values))
                close(gl.nbody_accel(pos, mass, EPS, variant=v.id, **kw), ref, f"{v.id} {n} {kw}")
                close(gl.nbody_accel(dpos, dmass, EPS, variant=v.id, **kw).get(), ref,
                      f"{v.id} {n} {kw} device")
                calls += 2
            p, w = gl.nbody_step(dpos, dvel, dmass, 1e-3, EPS, steps=2, variant=v.id)
            rp, rw = gl.nbody_step(pos, vel, mass, 1e-3, EPS, steps=2, variant=102)
            close(p.get(), rp, f"step {v.id} {n}")
            close(w.get(), rw, f"step {v.id} {n} vel")
            calls += 1
        e = gl.nbody_energy(dpos, dvel, dmass, EPS)
        k, u = gl.nbody_energy(pos, vel, mass, EPS, parts=True)
        if not np.isclose(e, k + u, rtol=1e-6):
            sys.exit(f"energy mismatch at n={n}")
        calls += 2
    gl.synchronize()
    print(f"sanitize_nbody: {calls} n-body calls checked")


if __name__ == "__main__":
    main()
