"""The scan lab's kernels under compute-sanitizer: every CUDA variant of scan (each op, dtype,
inclusive and exclusive, the smallest, default and largest block), compact (with a mask keeping
none, some and all, and without one) and nonzero, at _common's sizes plus sizes that end exactly
on, one short of and one past the tiles of the vectorized kernels (4096 4-byte or 2048 8-byte
elements) and the one-block chunks (2 x block), on NumPy and device inputs. Every result is
checked against NumPy; integer-valued data make every summation order exact, so every result is
compared exactly. See _common.py.

    python3 tools/sanitize/scan.py [--inputs both|device] [--only op:id,...]
"""

import sys

import numpy as np

from _common import KERNEL_SIZES, SIZES, done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import scan as ref  # noqa: E402

# tile ends: 4-byte tiles of 4096 and 8-byte tiles of 2048 elements, one chunk of 2 x 1024
TILE_SIZES = (2047, 2048, 2049, 4095, 4097, 3 * 4096, 3 * 4096 + 1, 5 * 2048 - 1)
DTYPES = (np.float32, np.float64, np.int32, np.int64)


def blocks(v):
    """The smallest, default and largest block (ops.py runs every block on the example)."""
    values = v.tunables.get("block", {}).get("values")
    if not values:
        return [None]
    return sorted({min(values), v.tunables["block"]["default"], max(values)})


class Runner:
    def __init__(self, args):
        self.args, self.calls = args, 0

    def variants(self, op):
        return [v for v in gl.variants(op) if v.backend == "cuda" and wanted(self.args, f"{op}:{v.id}")]

    def call(self, what, fn, check, host_args, **kw):
        """fn on device copies (and on NumPy arrays with --inputs both); check(result)."""
        runs = [("device", lambda: fn(*[a if a is None else gl.to_device(a) for a in host_args],
                                      **kw).get())]
        if self.args.inputs == "both":
            runs.append(("numpy", lambda: fn(*host_args, **kw)))
        for where, go in runs:
            got = go()
            settle()
            try:
                check(got)
            except AssertionError as e:
                sys.exit(f"mismatch: {what} {where} {kw}: {e}")
            self.calls += 1


def sizes(args):
    return (SIZES if args.inputs == "both" else KERNEL_SIZES) + TILE_SIZES


def scan_cases(default_block):
    """(op, dtype, inclusive): at the default block, sums of every dtype and max/min of one
    4-byte and one 8-byte type (both tile shapes, the packed and the split tile status); at the
    other blocks, a float32 and an int32 sum (int64 accumulators)."""
    if not default_block:
        return [("sum", np.float32, True), ("sum", np.int32, False)]
    cases = [("sum", dtype, inclusive) for dtype in DTYPES for inclusive in (True, False)]
    cases += [(op, dtype, inclusive) for op in ("max", "min") for dtype in (np.float32, np.int64)
              for inclusive in (True, False)]
    return cases


def scans(runner, rng):
    for v in runner.variants("scan"):
        for block in blocks(v):
            kw = {"variant": v.id} if block is None else {"variant": v.id, "block": block}
            default = block is None or block == v.tunables["block"]["default"]
            for n in sizes(runner.args):
                for op, dtype, inclusive in scan_cases(default):
                    x = rng.integers(-8, 9, n).astype(dtype)
                    want, out_dtype = ref.reference(x, op, inclusive)

                    def check(got, want=want, out_dtype=out_dtype):
                        assert got.dtype == out_dtype
                        np.testing.assert_array_equal(got, want.astype(out_dtype))

                    runner.call(f"scan {v.name} {op} {np.dtype(dtype).name} n={n}", gl.scan,
                                check, (x,), op=op, inclusive=inclusive, **kw)


def selections(runner, rng):
    for v in runner.variants("compact"):
        for n in sizes(runner.args):
            for dtype in DTYPES:
                x = rng.integers(-1, 2, n).astype(dtype)  # a third zeros
                for keep in (0.0, 0.5, 1.0):
                    mask = rng.random(n) < keep
                    runner.call(f"compact {v.name} {np.dtype(dtype).name} n={n} keep={keep}",
                                gl.compact, lambda got, x=x, m=mask: ref.assert_compact_equal(
                                    got, x, m), (x, mask), variant=v.id)
                runner.call(f"compact {v.name} {np.dtype(dtype).name} n={n} x != 0", gl.compact,
                            lambda got, x=x: ref.assert_compact_equal(got, x), (x,),
                            variant=v.id)
    for v in runner.variants("nonzero"):
        for n in sizes(runner.args):
            for dtype in DTYPES:
                x = rng.integers(-1, 2, n).astype(dtype)
                runner.call(f"nonzero {v.name} {np.dtype(dtype).name} n={n}", gl.nonzero,
                            lambda got, x=x: ref.assert_nonzero_equal(got, x), (x,),
                            variant=v.id)


def main():
    args, rng = start(__doc__)
    runner = Runner(args)
    scans(runner, rng)
    selections(runner, rng)
    done("sanitize/scan", runner.calls)


if __name__ == "__main__":
    main()
