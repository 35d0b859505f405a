"""Every CUDA variant of every op of the registry, with every block size it takes, at the sizes of
_common.SIZES, float32, float64 and int32 where the variant and the op's example take them, on
NumPy and device inputs; each result checked against the test suite's NumPy references
(tests/references/). Deliberate races (Variant.racy) are left to their lab's driver, and so are
the ops a lab's driver declares in OPS_COVERED (it runs them with every tunable this one would, at
its own shapes) unless --only names them. Shards are dealt by each variant's count of calls, and
the driver ends with the seconds each op took. Run under compute-sanitizer by
tools/gpu-check.sh; see _common.py.

    python3 tools/sanitize/ops.py [--inputs both|device]
"""

import sys
import time

import numpy as np

from _common import (KERNEL_SIZES, SIZES, covered_elsewhere, deal, done, followed, gl,
                     references, require, settle, start, wanted)
from gpulab._op import OPS

# tools/gpu-check.sh runs 6 processes a tool (--shard k/6): with every op in it, each shard of 6
# ran 47 to past 575 s on the H200 beside the other drivers, dealt in turn; now dealt by calls.
SANITIZE_SHARDS = 6


def main():
    args, rng = start(__doc__)
    checks = references()
    from references import check_variant
    sizes = SIZES if args.inputs == "both" else KERNEL_SIZES
    plan = planned(args, rng, sizes)
    if getattr(args, "shard", (0, 1))[1] > 1:
        deal(args, {key: sum(len(blocks) for _, _, blocks in runs)
                    for key, (_, runs) in plan.items()})
    calls, seconds = 0, {}
    for key, (v, runs) in plan.items():
        if not wanted(args, key):
            continue
        fn, t0 = OPS[v.op], time.perf_counter()
        spec = fn.__gpulab_op__
        for n, dtype, blocks in runs:
            host = in_dtype(spec.example(n, rng), dtype)
            dev = [gl.to_device(a) if isinstance(a, np.ndarray) else a for a in host]
            for block in blocks:
                kw = {"variant": v.id} if block is None else {"variant": v.id, "block": block}
                got = fn(*dev, **kw)
                settle()
                # one that returns several arrays (sort_pairs) is read by each; a result object
                # (CgResult, a NamedTuple; JacobiResult) by its get()
                fetched = tuple(g.get() for g in got) if type(got) is tuple else got.get()
                results = [("device", fetched)]
                if args.inputs == "both":
                    results.append(("numpy", fn(*host, **kw)))
                    settle()
                for where, got in results:
                    try:
                        check_variant(checks, v, got, *host)
                    except AssertionError as e:
                        sys.exit(f"mismatch: {v.op} {v.name} {where} n={n} {kw}: {e}")
                    calls += 1
        seconds[v.op] = seconds.get(v.op, 0.0) + time.perf_counter() - t0
    if not args.only:
        x = rng.standard_normal(4097)
        require(np.array_equal(gl.to_device(x).get(), x), "round trip")
    print("seconds by op: " + ", ".join(f"{op} {t:.1f}" for op, t in
                                        sorted(seconds.items(), key=lambda kv: -kv[1])))
    done("sanitize/ops", calls)


def in_dtype(example, dtype):
    """The example's arrays (and array-like operands with an astype, such as gl.CSR) of dtype's
    kind, in dtype; the others (the int32 keys and indices of a float op) as they are."""
    kind = np.dtype(dtype).kind
    return [a.astype(dtype) if hasattr(a, "astype") and hasattr(a, "dtype")
            and np.dtype(a.dtype).kind == kind else a for a in example]


def planned(args, rng, sizes):
    """{"op:id": (variant, [(n, dtype, blocks)])}: every run of every variant this driver checks,
    in the registry's order, before any is made (so that shards can be dealt by their cost).
    A dtype runs where the variant takes it and the op's example has an array of it (an example
    at n = 33 tells: its dtypes do not change with n)."""
    elsewhere, left = covered_elsewhere(), set()
    plan = {}
    for name, fn in OPS.items():
        spec = fn.__gpulab_op__
        for v in gl.variants(name):
            key = f"{name}:{v.id}"
            # a deliberate race (v.racy) is its lab's driver's: it may not run clean here
            if v.backend != "cuda" or v.racy or (args.only and key not in args.only) or \
                    not followed(v):
                continue
            if name in elsewhere and key not in args.only:
                if name not in left:
                    left.add(name)
                    print(f"{name}: left to {elsewhere[name]} (its OPS_COVERED)")
                continue
            dtypes = []
            for dtype in (np.float32, np.float64, np.int32):
                if np.dtype(dtype).name not in v.dtypes:
                    continue  # refused by design (nbody_accel is float32 only)
                example = in_dtype(spec.example(33, rng), dtype)
                # no example in dtype (reduce's int32: tools/sanitize/reduce.py)
                if any(isinstance(a, np.ndarray) and a.dtype == dtype for a in example):
                    dtypes.append(dtype)
            blocks = v.tunables.get("block", {}).get("values", [None])
            plan[key] = (v, [(n, d, blocks) for n in sizes for d in dtypes])
    return plan


if __name__ == "__main__":
    main()
