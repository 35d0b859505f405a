"""The stencil lab's kernels under compute-sanitizer: every CUDA variant of the stencil with every
boundary policy, on 1D, 2D and 3D grids of awkward shapes (one cell, 1 x N and N x 1, radius
larger than the grid, one past a tile, radius 1 to 4, the named star stencils that take variant
4's star kernels, rows of a multiple of 4 for their 16-byte paths), float32 and float64, with the
default block shape (every policy) and the smallest and largest ones (clamp and fixed); and every
CUDA variant of the Jacobi solver on 2D and 3D grids, with odd sweep counts and check intervals
and every temporal depth. Each result is checked against tests/references/stencil.py. The
generic ops.py reaches neither the policies nor the tunables: this driver does. See _common.py.

    python3 tools/sanitize/stencil.py [--inputs both|device] [--only stencil:id,jacobi:id,...]
"""

import sys

import numpy as np

from _common import done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import stencil as ref  # noqa: E402

# ops.py leaves these ops here: this driver runs each CUDA variant with every tunable that ops.py
# would, from NumPy and device inputs, at shapes chosen for its kernels
OPS_COVERED = ("stencil", "jacobi")
BOUNDARIES = ("zero", "clamp", "periodic", "reflect", "fixed")
# (shape, weights): radius r random weights, or a name
STENCIL_CASES = [((1,), 1), ((5,), 4), ((1027,), 3), ((3, 3), 1), ((1, 19), 2), ((23, 1), 1),
                 ((3, 5), 4), ((33, 70), 1), ((17, 41), 3), ((2, 3, 4), 1), ((5, 9, 35), 2),
                 ((36, 10, 33), 1), ((34, 37), "laplace5"), ((9, 11, 35), "laplace7"),
                 ((10, 13), "box9"), ((33, 132), "laplace5"), ((35, 6, 36), "laplace7"),
                 ((3, 4), "laplace5"), ((3, 3, 4), "laplace7")]
JACOBI_CASES = [((3, 3), 3, 2), ((1, 7), 2, 1), ((33, 70), 9, 4), ((70, 130), 17, 17),
                ((9, 4), 3, 3), ((35, 68), 9, 4),
                ((3, 4, 5), 3, 2), ((18, 9, 35), 11, 5), ((19, 5, 36), 7, 3), ((3, 3, 4), 2, 1)]


def weights(shape, w, rng):
    if isinstance(w, str):
        return w
    out = rng.uniform(0.5, 1.5, (2 * w + 1,) * len(shape))
    out[rng.random(out.shape) < 0.2] = 0.0
    return out


def block_shapes(v):
    """The default, and the smallest and largest of each tunable with the other at its default."""
    shapes = [{}]
    for name, other in (("bx", "by"), ("by", "bx")):
        values = v.tunables.get(name, {}).get("values", [])
        for value in (min(values), max(values)) if values else ():
            default = v.tunables[other]["default"]
            if value * default <= 1024:
                shapes.append({name: value})
    return shapes


def runs(args, fn, host, kw):
    out = [("device", fn(*[gl.to_device(a) if isinstance(a, np.ndarray) else a for a in host],
                         **kw))]
    settle()
    out[0] = ("device", out[0][1].get())
    if args.inputs == "both":
        out.append(("numpy", fn(*host, **kw)))
        settle()
    return out


def main():
    args, rng = start(__doc__)
    calls = 0
    for v in gl.variants("stencil"):
        if v.backend != "cuda" or not wanted(args, f"stencil:{v.id}"):
            continue
        for i, (shape, w) in enumerate(STENCIL_CASES):
            dtype = np.float64 if i % 3 == 2 else np.float32
            u = rng.standard_normal(shape).astype(dtype)
            wts = weights(shape, w, rng)
            for boundary in BOUNDARIES:
                for blocks in block_shapes(v):
                    # every policy at the default block; the other blocks under two policies
                    # (the loads through the index map, and the fixed copies) keep the run short
                    if (len(shape) == 1 and blocks.get("by", 1) > 1) or \
                            (blocks and boundary not in ("clamp", "fixed")):
                        continue
                    kw = dict(boundary=boundary, variant=v.id, **blocks)
                    for where, got in runs(args, gl.stencil, (u, wts), kw):
                        try:
                            ref.check_stencil(got, u, wts, boundary)
                        except AssertionError as e:
                            sys.exit(f"mismatch: stencil {v.name} {where} {shape} {boundary} "
                                     f"{blocks}: {e}")
                        calls += 1
    for v in gl.variants("jacobi"):
        if v.backend != "cuda" or not wanted(args, f"jacobi:{v.id}"):
            continue
        depths = v.tunables.get("depth", {}).get("values", [None])
        for i, (shape, iters, check_every) in enumerate(JACOBI_CASES):
            if v.name == "temporal" and len(shape) == 3:
                continue
            dtype = np.float64 if i % 2 else np.float32
            f = rng.standard_normal(shape).astype(dtype)
            u0 = rng.standard_normal(shape).astype(dtype)
            for depth in depths:
                kw = dict(h=0.5, iters=iters, check_every=check_every, variant=v.id, depth=depth)
                for where, got in runs(args, gl.jacobi, (f, u0), kw):
                    try:
                        ref.check_jacobi(got, f, u0, 0.5, iters, None, check_every)
                    except AssertionError as e:
                        sys.exit(f"mismatch: jacobi {v.name} {where} {shape} depth={depth}: {e}")
                    calls += 1
    done("sanitize/stencil", calls)


if __name__ == "__main__":
    main()
