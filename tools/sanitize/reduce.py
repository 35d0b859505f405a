"""The reduce lab's other instantiations: min and max, and int32 (sum to int64, min, max), for
every CUDA variant that has them, at the sizes of _common.SIZES; tools/sanitize/ops.py covers the
float sums. Exact results (integers) checked against NumPy. See _common.py.

    python3 tools/sanitize/reduce.py [--inputs both|device]
"""

import numpy as np

from _common import SIZES, close, done, gl, settle, start


def main():
    args, rng = start(__doc__)
    calls = 0
    for v in gl.variants("reduce"):
        if v.backend != "cuda":
            continue
        for dtype in (np.float32, np.float64, np.int32):
            for n in SIZES[1:]:
                x = rng.integers(-1000, 1000, n).astype(dtype)
                for op in ("sum", "min", "max"):
                    if (op == "sum" and dtype != np.int32) or not v.supports(op, dtype):
                        continue
                    want = getattr(np, op)(x.astype(np.int64))
                    got = gl.reduce(gl.to_device(x), op, variant=v.id)
                    settle()
                    close(got.item(), want, f"reduce {v.name} {op} {np.dtype(dtype).name} device n={n}")
                    calls += 1
                    if args.inputs == "both":
                        got = gl.reduce(x, op, variant=v.id)
                        settle()
                        close(got, want, f"reduce {v.name} {op} {np.dtype(dtype).name} numpy n={n}")
                        calls += 1
    done("sanitize/reduce", calls)


if __name__ == "__main__":
    main()
