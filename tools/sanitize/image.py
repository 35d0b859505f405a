"""The image lab's kernels under compute-sanitizer: every CUDA variant of the filters (through
gaussian, box and filter2d) in every boundary mode it supports, float32 and uint8, one and three
channels, on shapes around the tiles (1 x 1, a row, a column, odd, 64 x 64 and one past it, an
image smaller than the kernel), with each radius bucket of the fused variant (4, 8, 16, 32) and a
non-separable kernel for the direct variants; and every Mandelbrot variant (the dynamic-parallelism
one under memcheck only: the other tools do not follow device-side launches) on views whose squares are uniform,
subdivided and evaluated, at sizes that clip the squares. Every result checked against
tests/references/image.py. The generic ops.py reaches one example per op: this driver reaches
the modes, dtypes, radii and views. See _common.py.

    python3 tools/sanitize/image.py [--inputs both|device] [--only gaussian:id,mandelbrot:id,...]
"""

import sys

import numpy as np

from _common import done, followed, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import image as ref  # noqa: E402

# the last has tiles of variant 3 inside the image at every radius (its 16-byte load path)
SHAPES = [(1, 1), (1, 37), (29, 1), (7, 9), (65, 129), (200, 204)]
# float32 with one and three channels, uint8 with one: each load and store path once
KINDS = [(np.float32, 1), (np.float32, 3), (np.uint8, 1)]
MODES = ["reflect", "nearest", "constant", "wrap", "mirror"]
# (op, parameter, modes): the radius buckets of variant 3, 4 (box 3, sigma 1), 8 (sigma 2), 16
# (sigma 3.5) and 32 (sigma 7.5); every mode at two of them (the index maps do not depend on
# the radius), one mode at the others
FILTERS = [("gaussian", 2.0, MODES), ("box", 3, MODES), ("gaussian", 1.0, ["wrap"]),
           ("gaussian", 3.5, ["reflect"]), ("gaussian", 7.5, ["constant"]),
           ("filter2d", [[1.0, 0.0, -2.0], [0.5, 3.0, 0.0], [1.0, 1.0, 1.0]], MODES)]
VIEWS = [(300, 200, (-2.0, 1.0), (-1.5, 1.5), 256), (257, 255, (-0.7437, -0.7435),
                                                      (0.1317, 0.1319), 512),
         (1, 1, (-2.0, 1.0), (-1.5, 1.5), 10), (513, 17, (-2.0, 0.5), (-1.25, 1.25), 64)]


def runs(args, fn, host_args, device_args, **kw):
    out = [("device", fn(*device_args, **kw))]
    settle()
    out[0] = ("device", out[0][1].get())
    if args.inputs == "both":
        out.append(("numpy", fn(*host_args, **kw)))
        settle()
    return out


def filters(args, rng):
    calls = 0
    for v in gl.variants("gaussian"):
        if v.backend != "cuda":
            continue
        for op, param, modes in FILTERS:
            if not wanted(args, f"{op}:{v.id}"):
                continue
            separable = op != "filter2d"
            if v.id in (2, 3) and not separable:
                continue
            if v.id in (0, 1) and op == "gaussian" and param > 3:
                continue  # more than 625 taps: the direct variants refuse it
            check = getattr(ref, f"check_{op}")
            for mode in modes:
                for dtype, channels in KINDS:
                    if v.id == 1 and (mode == "mirror" or channels != 1):
                        continue
                    for shape in SHAPES:
                        full = shape if channels == 1 else shape + (channels,)
                        img = (rng.integers(0, 256, full, dtype=np.uint8) if dtype == np.uint8
                               else rng.standard_normal(full).astype(np.float32))
                        fn = getattr(gl, op)
                        for where, got in runs(args, fn, (img, param),
                                               (gl.to_device(img), param), mode=mode,
                                               variant=v.id):
                            try:
                                check(got, img, param, mode)
                            except AssertionError as e:
                                sys.exit(f"mismatch: {op} {v.name} {where} {mode} "
                                         f"{np.dtype(dtype).name} {full}: {e}")
                            calls += 1
    return calls


def mandelbrot(args):
    calls = 0
    for v in gl.variants("mandelbrot"):
        if v.backend != "cuda" or not wanted(args, f"mandelbrot:{v.id}") or not followed(v):
            continue
        for w, h, xlim, ylim, max_iter in VIEWS:
            lims = [np.array(lim, np.float64) for lim in (xlim, ylim)]
            want = ref.mandelbrot_reference(w, h, xlim, ylim, max_iter)
            if v.id != 0:
                want = ref.mariani_silver_emulation(want)
            for where, got in runs(args, gl.mandelbrot, (w, h, *lims),
                                   (w, h, *[gl.to_device(a) for a in lims]),
                                   max_iter=max_iter, variant=v.id):
                if not np.array_equal(got, want):
                    sys.exit(f"mismatch: mandelbrot {v.name} {where} {w}x{h} {xlim} {ylim}: "
                             f"{np.count_nonzero(got != want)} dwells differ")
                calls += 1
    return calls


def main():
    args, rng = start(__doc__)
    calls = filters(args, rng) + mandelbrot(args)
    done("sanitize/image", calls)


if __name__ == "__main__":
    main()
