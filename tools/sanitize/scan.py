"""The scan lab's kernels under compute-sanitizer: every CUDA variant of scan, compact and
nonzero, at sizes that end exactly on, one short of and one past the tiles of the vectorized
kernels (4096 4-byte or 2048 8-byte elements; decoupled_lookback's own, 6144 and 9216, for it)
and the chunks of the one-block kernels (2 x
block), plus tiny and odd ones; on device inputs at every size and on NumPy inputs at a few
(the binding's own buffers and copies). Every result is checked against NumPy; integer-valued
data make every summation order exact, so every check is exact. See _common.py.

Kept small on purpose (about 900 calls): the lab's part of tools/gpu-check-lab.sh runs this under
four tools and the plants within 330 s. tools/sanitize/ops.py adds every block of every variant
on the ops' float examples.

    python3 tools/sanitize/scan.py [--inputs both|device] [--only op:id,...]
"""

import sys

import numpy as np

from _common import done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import scan as ref  # noqa: E402

# tools/gpu-check.sh runs 2 processes a tool (--shard k/2): in one,
# racecheck's took 493 s on the H200, beside the other drivers.
SANITIZE_SHARDS = 2

SIZES = (1, 33, 1025, 2049, 4095, 4096, 4097, 3 * 4096 + 1, 100_003)
NUMPY_SIZES = (1, 4097, 100_003)
DTYPES = (np.float32, np.float64, np.int32, np.int64)
# (op, dtype, inclusive) at the default block: every dtype, both tile shapes (4- and 8-byte),
# the packed and the split tile status, inclusive and exclusive, all three ops
# decoupled_lookback's own tiles (int32 sums into int64: 256 x 6 x 4; 4 bytes: 256 x 9 x 4) -1,
# exactly, +1
LOOK_BACK_TILE_SIZES = (6143, 6144, 6145, 9215, 9216, 9217)
# Past 500 tiles, where the look-back kernels sleep before and between their reads
# (glc_look_back_walk in cuda/scan/tile.cuh): one size, for the kernels that look back, in a few
# cases (600 of decoupled_lookback's 4-byte tiles)
LOOK_BACK_SIZE = 600 * 9216 + 3
LOOK_BACK_SCANS = ("decoupled_lookback",)
LOOK_BACK_COMPACTIONS = ("single_pass", "staged")
SCAN_CASES = (("sum", np.float32, True), ("sum", np.float64, False), ("sum", np.int32, True),
              ("sum", np.int64, False), ("max", np.float32, False), ("min", np.int64, True))


def other_blocks(v):
    """The smallest and largest block besides the default (ops.py runs every block)."""
    values = v.tunables.get("block", {}).get("values")
    if not values:
        return []
    return sorted({min(values), max(values)} - {v.tunables["block"]["default"]})


class Runner:
    def __init__(self, args):
        self.args, self.calls = args, 0

    def variants(self, op):
        return [v for v in gl.variants(op)
                if v.backend == "cuda" and wanted(self.args, f"{op}:{v.id}")]

    def call(self, what, n, fn, check, host_args, **kw):
        """fn on device copies, and on the NumPy arrays at NUMPY_SIZES; check(result)."""
        runs = [("device", lambda: fn(*[gl.to_device(a) for a in host_args], **kw).get())]
        if self.args.inputs == "both" and n in NUMPY_SIZES:
            runs.append(("numpy", lambda: fn(*host_args, **kw)))
        for where, go in runs:
            got = go()
            settle()
            try:
                check(got)
            except AssertionError as e:
                sys.exit(f"mismatch: {what} n={n} {where} {kw}: {e}")
            self.calls += 1


def exact_scan_check(x, op, inclusive):
    want, out_dtype = ref.reference(x, op, inclusive)

    def check(got):
        assert got.dtype == out_dtype, (got.dtype, out_dtype)
        np.testing.assert_array_equal(got, want.astype(out_dtype))

    return check


def scans(runner, rng):
    for v in runner.variants("scan"):
        sizes = SIZES + (LOOK_BACK_TILE_SIZES if v.name in LOOK_BACK_SCANS else ())
        for n in sizes:
            for op, dtype, inclusive in SCAN_CASES:
                x = rng.integers(-8, 9, n).astype(dtype)
                runner.call(f"scan {v.name} {op} {np.dtype(dtype).name}", n, gl.scan,
                            exact_scan_check(x, op, inclusive), (x,), op=op, inclusive=inclusive,
                            variant=v.id)
            for block in other_blocks(v):
                x = rng.integers(-8, 9, n).astype(np.float32)
                runner.call(f"scan {v.name} block={block}", n, gl.scan,
                            exact_scan_check(x, "sum", True), (x,), variant=v.id, block=block)


def look_backs(runner, rng):
    """The look-back kernels at LOOK_BACK_SIZE: sums of float32 (the packed tile status) and of
    int32 into int64 (the split one), and a compaction keeping half."""
    n = LOOK_BACK_SIZE
    for v in runner.variants("scan"):
        if v.name in LOOK_BACK_SCANS:
            for dtype, inclusive in ((np.float32, True), (np.int32, False)):
                x = rng.integers(-8, 9, n).astype(dtype)
                runner.call(f"scan {v.name} sum {np.dtype(dtype).name}", n, gl.scan,
                            exact_scan_check(x, "sum", inclusive), (x,), inclusive=inclusive,
                            variant=v.id)
    for v in runner.variants("compact"):
        if v.name in LOOK_BACK_COMPACTIONS:
            x = rng.integers(-1, 2, n).astype(np.float32)
            mask = rng.random(n) < 0.5
            runner.call(f"compact {v.name} float32 keep=0.5", n, gl.compact,
                        lambda got, x=x, m=mask: ref.assert_compact_equal(got, x, m), (x, mask),
                        variant=v.id)


def selections(runner, rng):
    for v in runner.variants("compact"):
        for n in SIZES:
            for dtype in DTYPES:
                x = rng.integers(-1, 2, n).astype(dtype)  # a third zeros
                keeps = (0.0, 0.5, 1.0) if dtype == np.float32 else (0.5,)
                for keep in keeps:
                    mask = rng.random(n) < keep
                    runner.call(f"compact {v.name} {np.dtype(dtype).name} keep={keep}", n,
                                gl.compact,
                                lambda got, x=x, m=mask: ref.assert_compact_equal(got, x, m),
                                (x, mask), variant=v.id)
            x = rng.integers(-1, 2, n).astype(np.float32)
            runner.call(f"compact {v.name} x != 0", n, gl.compact,
                        lambda got, x=x: ref.assert_compact_equal(got, x), (x,), variant=v.id)
    for v in runner.variants("nonzero"):
        for n in SIZES:
            for dtype in (np.float32, np.int64):
                x = rng.integers(-1, 2, n).astype(dtype)
                runner.call(f"nonzero {v.name} {np.dtype(dtype).name}", n, gl.nonzero,
                            lambda got, x=x: ref.assert_nonzero_equal(got, x), (x,),
                            variant=v.id)


def main():
    args, rng = start(__doc__)
    runner = Runner(args)
    scans(runner, rng)
    selections(runner, rng)
    look_backs(runner, rng)
    done("sanitize/scan", runner.calls)


if __name__ == "__main__":
    main()
