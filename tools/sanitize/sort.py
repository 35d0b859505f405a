"""The sort lab's kernels under compute-sanitizer: every CUDA variant of sort, argsort and
sort_pairs, for every key dtype, ascending and descending, at sizes that end one short of, on
and one past the radix scatter's round (256 keys) and the bitonic network's shared chunk (2048
pairs: the first size with a global step; quicksort_cdp's shared-memory sort too), one short of
and one past merge_path's tile (2048 keys: the first size with a merge pass; 5000 merges 3 runs,
100_003 49), on onesweep's tile of 4-byte keys with 8-byte values (3840 keys), plus tiny and odd
ones; lsd_radix at both digit widths; the quicksort also on random, sorted and reversed keys of
many values (several levels); onesweep also on keys that differ in some bytes only, so that its
skipped passes, its routes between the buffers and its copy of the inputs run. On device inputs
at every size and on NumPy inputs at a few (the binding's own buffers and copies). Every result
must equal NumPy's stable sort bit for bit (tests/references/sort.py). quicksort_cdp launches
kernels from the device, which memcheck alone follows: under the other three tools it is skipped,
and the driver says so. Under racecheck the sizes stop at 5000 keys (RACECHECK_SIZES), onesweep's
at two whole tiles and a part (its skipped passes' at 3840). See _common.py.

    python3 tools/sanitize/sort.py [--inputs both|device] [--only op:id,...]
"""

import itertools
import sys

import numpy as np

from _common import TOOL, done, followed, gl, references, settle, start, wanted

references()  # puts tests/ on the path
from references import sort as ref  # noqa: E402

# tools/gpu-check.sh runs 4 processes a tool (--shard k/4): in one,
# racecheck's ran past 520 s on the H200, beside the other drivers.
SANITIZE_SHARDS = 4
# ops.py leaves these ops here: this driver runs each CUDA variant with every tunable that ops.py
# would, from NumPy and device inputs, at shapes chosen for its kernels
OPS_COVERED = ("sort", "argsort", "sort_pairs")

SIZES = (1, 2, 33, 255, 256, 257, 2047, 2049, 3840, 5000, 100_003)
# racecheck follows every shared-memory access of every block: over all the sizes it ran past
# 400 s on the H100 (150 s a variant). It looks inside blocks, and at 5000 keys every variant
# already runs several blocks, passes, merges or levels of the same code that 100_003 runs more
# of; the quicksort keeps its 40_000 keys of many levels.
RACECHECK_SIZES = tuple(n for n in SIZES if n <= 5000)
# Onesweep's tiles are 2304 to 6144 keys, and a tile with every key present runs code of its own
# (no index tests): under racecheck it also sorts two whole tiles of keys alone and a part.
ONESWEEP_RACECHECK_SIZES = RACECHECK_SIZES + (12_289,)
QUICKSORT_SIZES = (40_000, 300_001)
# Onesweep on keys whose bits differ in these bytes alone: every pass skipped (the copy), one pass
# from the inputs to the outputs, and two passes (the first from the inputs to the spares).
ONESWEEP_SKIPS = {"all equal": (), "low byte": (0,), "top byte": (-1,), "low and top": (0, -1)}
ONESWEEP_SKIP_SIZES = (3840, 100_003)
NUMPY_SIZES = (1, 2049, 100_003)
DTYPES = (np.int32, np.uint32, np.int64, np.float32, np.float64)


def keys_of(rng, n, dtype):
    """Few distinct values (ties everywhere: stability shows), with NaN, -0.0 and inf for
    floats."""
    x = rng.integers(-3, 4, n).astype(dtype)
    if np.dtype(dtype).kind == "f":
        specials = np.array([np.nan, -np.nan, -0.0, np.inf, -np.inf], dtype)
        pick = rng.random(n) < 0.3
        x[pick] = specials[rng.integers(0, specials.size, int(pick.sum()))]
    return x


def fetched(got):
    """A result on the host: an array, or sort_pairs' keys and values."""
    return tuple(g.get() for g in got) if isinstance(got, tuple) else got.get()


def checked(args, what, n, fn, check, host_args, **kw):
    """Runs fn on device copies of host_args, and on the NumPy arrays themselves at NUMPY_SIZES,
    exiting on a result that check refuses; returns how many calls ran."""
    wheres = ("device", "numpy") if args.inputs == "both" and n in NUMPY_SIZES else ("device",)
    for where in wheres:
        if where == "device":
            got = fetched(fn(*[gl.to_device(a) for a in host_args], **kw))
        else:
            got = fn(*host_args, **kw)
        settle()
        try:
            check(got)
        except AssertionError as e:
            sys.exit(f"mismatch: {what} n={n} {where} {kw}: {e}")
    return len(wheres)


def digit_widths(v):
    return v.tunables.get("bits", {}).get("values", [None])


def op_cases(op, x):
    """(what, fn, check, host arrays, descending) for op on the keys x: sort both ways; argsort
    and sort_pairs (4- and 8-byte values), ascending."""
    name = x.dtype.name
    if op == "sort":
        for d in (False, True):
            yield name, gl.sort, lambda got, d=d: ref.assert_sorted_equal(got, x, d), (x,), d
    elif op == "argsort":
        yield name, gl.argsort, lambda got: ref.assert_argsort_equal(got, x), (x,), False
    else:
        for values in (np.arange(x.size, dtype=np.float32), np.arange(x.size, dtype=np.int64)):
            yield (f"{name} {values.dtype.name} values", gl.sort_pairs,
                   lambda got, w=values: ref.assert_pairs_equal(got, x, w), (x, values), False)


def cases(op, rng, n):
    """op_cases for op at n keys: sort at every dtype; argsort and sort_pairs (the index and value
    paths) at both key widths."""
    for dtype in DTYPES:
        x = keys_of(rng, n, dtype)
        if op == "sort" or dtype in (np.int32, np.float64):
            yield from op_cases(op, x)


def sizes_for(v):
    """The key counts a variant sorts under this run's tool."""
    if TOOL != "racecheck":
        return SIZES
    return ONESWEEP_RACECHECK_SIZES if v.name == "onesweep" else RACECHECK_SIZES


def main():
    args, rng = start(__doc__)
    calls = 0
    for op in ("sort", "argsort", "sort_pairs"):
        for v in gl.variants(op):
            if v.backend != "cuda" or not wanted(args, f"{op}:{v.id}") or not followed(v):
                continue
            for bits in digit_widths(v):
                for n in sizes_for(v):
                    for what, fn, check, arrays, descending in cases(op, rng, n):
                        kw = {"variant": v.id, "descending": descending}
                        if bits is not None:
                            kw["bits"] = bits
                        calls += checked(args, f"{op} {v.name} {what}", n, fn, check, arrays,
                                         **kw)
    # The quicksort on keys of many values, whose levels the few-valued keys above end early
    # (their equal classes finish most keys): several levels of partitions, leaves and single
    # keys, on random, sorted and reversed keys.
    for v in gl.variants("sort"):
        if v.name != "quicksort" or not wanted(args, f"sort:{v.id}"):
            continue
        for n in QUICKSORT_SIZES[:1] if TOOL == "racecheck" else QUICKSORT_SIZES:
            x = rng.integers(-(1 << 31), 1 << 31, n).astype(np.int32)
            shapes = (("random", x), ("sorted", np.sort(x)), ("reversed", np.sort(x)[::-1].copy()))
            for what, keys in shapes:
                calls += checked(args, f"sort quicksort {what}", n, gl.sort,
                                 lambda got, k=keys: ref.assert_sorted_equal(got, k), (keys,),
                                 variant=v.id, descending=False)
                calls += checked(args, f"argsort quicksort {what}", n, gl.argsort,
                                 lambda got, k=keys: ref.assert_argsort_equal(got, k, True),
                                 (keys,), variant=v.id, descending=True)
    # Onesweep's skipped passes: keys that differ in some bytes only, 4- and 8-byte keys.
    for op in ("sort", "argsort", "sort_pairs"):
        for v in gl.variants(op):
            if v.name != "onesweep" or not wanted(args, f"{op}:{v.id}"):
                continue
            for n in ONESWEEP_SKIP_SIZES[:1] if TOOL == "racecheck" else ONESWEEP_SKIP_SIZES:
                for (kind, varying), dtype in itertools.product(ONESWEEP_SKIPS.items(),
                                                                (np.int32, np.float64)):
                    x = ref.keys_differing_in(varying, n, dtype, rng)
                    for what, fn, check, arrays, descending in op_cases(op, x):
                        calls += checked(args, f"{op} onesweep {kind} {what}", n, fn, check,
                                         arrays, variant=v.id, descending=descending)
    done("sanitize/sort", calls)


if __name__ == "__main__":
    main()
