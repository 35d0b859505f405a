"""Calls every CUDA variant of every op on small awkward sizes, NumPy and device inputs, every
block size, so that compute-sanitizer (memcheck, racecheck, synccheck) sees each kernel. Checks
every result against the test suite's NumPy references (tests/references/, with their
tolerances); exits non-zero on a mismatch."""

import os
import sys

import numpy as np

import gpulab as gl
from gpulab._op import OPS

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests"))
from references import all_checks  # noqa: E402

CHECKS = all_checks()

SIZES = (0, 1, 33, 257, 1025, 100_003)


def check(got, ref, what):
    if not np.allclose(got, ref, rtol=1e-5, atol=1e-5):
        sys.exit(f"mismatch: {what}")


def verify(name, got, args, what):
    try:
        CHECKS[name](got, *args)
    except AssertionError as e:
        sys.exit(f"mismatch: {what}: {e}")


def reduce_modes(rng):
    """reduce's other instantiations: min and max, and int32, wherever a variant has them."""
    calls = 0
    for v in gl.variants("reduce"):
        if v.backend != "cuda":
            continue
        for dtype in (np.float32, np.int32):
            for n in SIZES[1:]:
                x = rng.integers(-1000, 1000, n).astype(dtype)
                for op in ("sum", "min", "max"):
                    if v.supports(op, dtype):
                        want = getattr(np, op)(x.astype(np.int64))
                        check(gl.reduce(x, op, variant=v.id), want, f"reduce {v.name} {op} n={n}")
                        check(gl.reduce(gl.to_device(x), op, variant=v.id).item(), want,
                              f"reduce {v.name} {op} device n={n}")
                        calls += 2
    return calls


def main():
    if not gl.cuda_available():
        sys.exit(f"no GPU: {gl._core._gpu_status()}")
    rng = np.random.default_rng(7)
    calls = 0
    for name, fn in OPS.items():
        spec = fn.__gpulab_op__
        for v in gl.variants(name):
            if v.backend != "cuda":
                continue
            blocks = v.tunables.get("block", {}).get("values", [None])
            for n in SIZES:
                for dtype in (np.float32, np.float64):
                    if np.dtype(dtype).name not in v.dtypes:
                        continue  # refused by design (nbody_accel is float32 only)
                    args = [a.astype(dtype) if isinstance(a, np.ndarray) else a
                            for a in spec.example(n, rng)]
                    dev = [gl.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
                    for block in blocks:
                        kw = {"variant": v.id} if block is None else {"variant": v.id,
                                                                      "block": block}
                        verify(name, fn(*args, **kw), args, f"{name} {v.name} numpy n={n} {kw}")
                        verify(name, fn(*dev, **kw).get(), args,
                               f"{name} {v.name} device n={n} {kw}")
                        calls += 2
    calls += reduce_modes(rng)
    x = rng.standard_normal(4097)
    check(gl.to_device(x).get(), x, "round trip")
    print(f"sanitize_all: {calls} CUDA variant calls checked")


if __name__ == "__main__":
    main()
