"""The concepts lab's kernels under compute-sanitizer: every CUDA variant of divergence,
warp_reduce, counter, sin and lookup at its smallest, default and largest block (ops.py runs every
block on the ops' examples), at awkward sizes, on NumPy and device inputs, with the inputs that
matter to each (keys per lane and per warp, indices past both ends of the table, NaN and
infinities for sin, two streams taking turns with the constant table). Every result checked:
exactly where the variant is exact, within its bounds where it races. See _common.py.

    python3 tools/sanitize/concepts.py [--inputs both|device] [--only op:id,...]
    python3 tools/sanitize/concepts.py --expect-race [--only warp_reduce:0]

Default: every variant that must come out clean under every tool. That includes the racy counter
(GPU variant 0): its race is in global memory, which racecheck does not look at, and memcheck and
initcheck must still find its accesses in bounds.

--expect-race: only warp_reduce's lockstep variants, the deliberate shared-memory races (a last
warp without __syncwarp). Their sums are checked for consistency only (a wrong sum must have been
counted wrong). Under racecheck this run must report hazards, and under memcheck, initcheck and
synccheck it must be clean: tests/labs/test_concepts.py runs both on the GPU machine.
"""

import sys

import numpy as np

from _common import SIZES, KERNEL_SIZES, done, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import concepts as ref  # noqa: E402

# warp_reduce's racy variants race in shared memory, where racecheck sees them
SHARED_MEMORY_RACES = ("warp_reduce",)


def expect_race_argument(parser):
    parser.add_argument("--expect-race", action="store_true",
                        help="run only the deliberate shared-memory races (racecheck must "
                             "report them)")


def blocks(v):
    """The smallest, the default and the largest block: tools/sanitize/ops.py runs every block
    on the ops' examples; this driver's own inputs need only the edges."""
    values = v.tunables.get("block", {}).get("values")
    if not values:
        return [None]
    return sorted({min(values), v.tunables["block"]["default"], max(values)})


class Runner:
    """Runs one op's CUDA variants on device and NumPy inputs and checks each result."""

    def __init__(self, args):
        self.args, self.calls = args, 0

    def variants(self, op):
        for v in gl.variants(op):
            if v.backend != "cuda" or not wanted(self.args, f"{op}:{v.id}"):
                continue
            shared_race = v.racy and op in SHARED_MEMORY_RACES
            if shared_race == self.args.expect_race:
                yield v

    def sizes(self):
        return SIZES if self.args.inputs == "both" else KERNEL_SIZES

    def run(self, fn, v, host_args, check, what, **kw):
        """fn on device copies of host_args, and on host_args themselves with --inputs both,
        at the edge block sizes of v; check(got) raises AssertionError on a wrong result."""
        dev_args = [gl.to_device(a) if isinstance(a, np.ndarray) else a for a in host_args]
        for block in blocks(v):
            call = dict(kw, variant=v.id, block=block)
            runs = [("device", lambda: fn(*dev_args, **call))]
            if self.args.inputs == "both":
                runs.append(("numpy", lambda: fn(*host_args, **call)))
            for where, make in runs:
                got = make()
                settle()
                got = got.get() if isinstance(got, gl.DeviceArray) else got
                try:
                    check(got)
                except AssertionError as e:
                    sys.exit(f"wrong result: {fn.__name__} {v.name} {where} {what} block={block}:"
                             f" {e}")
                self.calls += 1


def divergence(r, rng):
    c = gl.concepts
    for n in r.sizes():
        x = rng.standard_normal(n).astype(np.float32)
        for lanes in (1, 32):
            key = c.lane_pattern(n, lanes, 8) - 2  # negative and >= 4 too: key & 3 masks them
            want = c.divergence(x, key, 5, variant=100)
            for v in r.variants("divergence"):
                def check(got):
                    ref.assert_divergence_close(got, x, key, 5)
                    np.testing.assert_array_equal(got, want)  # fmaf on both: the same bits
                r.run(c.divergence, v, [x, key], check, f"n={n} lanes={lanes}", iterations=5)


def warp_reduce(r, rng):
    c = gl.concepts
    for n in r.sizes():
        x = rng.integers(-1000, 1000, size=n, dtype=np.int32)
        if n == 257:  # sums that wrap around 2**32, as NumPy's int32 sums do
            x = rng.integers(2**30, 2**31 - 1, size=n, dtype=np.int32)
        for v in r.variants("warp_reduce"):
            exact = not v.racy
            def check(got):
                if exact:
                    ref.assert_warp_reduce_exact(got, x, 2)
                else:
                    ref.assert_warp_reduce_consistent(got, x, 2)
            r.run(c.warp_reduce, v, [x], check, f"n={n}", trials=2)


def counter(r, rng):
    c = gl.concepts
    for n in r.sizes():
        x = rng.integers(0, 4, size=n, dtype=np.int32)
        for v in r.variants("counter"):
            exact = not v.racy
            def check(got):
                (ref.assert_counter_exact if exact else ref.assert_counter_bounded)(got, x)
            r.run(c.counter, v, [x], check, f"n={n}")


def sin(r, rng):
    c = gl.concepts
    for n in r.sizes():
        x = rng.uniform(-100, 100, size=n).astype(np.float32)
        specials = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -1e-40, np.pi])
        x[:min(n, specials.size)] = specials[:n]
        for v in r.variants("sin"):
            intrinsic = v.name == "intrinsic_sinf"
            r.run(c.sin, v, [x], lambda got: ref.assert_sin_close(got, x, intrinsic), f"n={n}")


def lookup(r, rng):
    c = gl.concepts
    for size in (1, 7, 256, c.MAX_TABLE):
        table = rng.standard_normal(size).astype(np.float32)
        # every size with the smallest and the largest table, two with the others
        for n in r.sizes() if size in (1, c.MAX_TABLE) else (1025, 100_003):
            for lanes in (1, 32):
                # indices past both ends, so that a clip that lets one through reads outside
                idx = c.lane_pattern(n, lanes, size + 16, shuffle=True, seed=n) - 8
                for v in r.variants("lookup"):
                    r.run(c.lookup, v, [table, idx],
                          lambda got: ref.assert_lookup_exact(got, table, idx),
                          f"table={size} n={n} lanes={lanes}")
    # Two streams take turns with the one __constant__ table: each call must see its own.
    if r.args.expect_race or not wanted(r.args, "lookup:0"):
        return
    streams = [gl.Stream(), gl.Stream()]
    tables = [rng.standard_normal(300).astype(np.float32) for _ in streams]
    idx = rng.integers(0, 300, size=100_003, dtype=np.int32)
    outs = [[c.lookup(gl.to_device(t, stream=s), gl.to_device(idx, stream=s), variant=0, stream=s)
             for t, s in zip(tables, streams)] for _ in range(4)]
    for s in streams:
        s.synchronize()
    for round_outs in outs:
        for got, t in zip(round_outs, tables):
            if not np.array_equal(got.get(), t[idx]):
                sys.exit("wrong result: lookup constant on two streams read the other's table")
            r.calls += 1


def main():
    args, rng = start(__doc__, expect_race_argument)
    r = Runner(args)
    for demo in (divergence, warp_reduce, counter, sin, lookup):
        demo(r, rng)
    if r.calls == 0:
        sys.exit("no call matched --only")
    done("sanitize/concepts" + (" --expect-race" if args.expect_race else ""), r.calls)


if __name__ == "__main__":
    main()
