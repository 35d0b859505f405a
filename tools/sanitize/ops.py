"""Every CUDA variant of every op of the registry, with every block size it takes, at the sizes of
_common.SIZES, float32, float64 and int32 where the variant and the op's example take them, on
NumPy and device inputs; each result checked against the test suite's NumPy references
(tests/references/). Deliberate races (Variant.racy) are left to their lab's driver. Run under
compute-sanitizer by tools/gpu-check.sh; see _common.py.

    python3 tools/sanitize/ops.py [--inputs both|device]
"""

import sys

import numpy as np

from _common import (KERNEL_SIZES, SIZES, done, followed, gl, references, require, settle, start,
                     wanted)
from gpulab._op import OPS

# tools/gpu-check.sh runs 6 processes a tool (--shard k/6): in one,
# every tool's ran past 520 s on the H200, beside the other drivers.
SANITIZE_SHARDS = 6


def main():
    args, rng = start(__doc__)
    checks = references()
    from references import check_variant
    calls = 0
    for name, fn in OPS.items():
        spec = fn.__gpulab_op__
        for v in gl.variants(name):
            # a deliberate race (v.racy) is its lab's driver's: it may not run clean here
            if (v.backend != "cuda" or v.racy or not wanted(args, f"{name}:{v.id}")
                    or not followed(v)):
                continue
            blocks = v.tunables.get("block", {}).get("values", [None])
            for n in (SIZES if args.inputs == "both" else KERNEL_SIZES):
                for dtype in (np.float32, np.float64, np.int32):
                    if np.dtype(dtype).name not in v.dtypes:
                        continue  # refused by design (nbody_accel is float32 only)
                    # the example's arrays (and array-like operands with an astype, such as
                    # gl.CSR) of dtype's kind take dtype; others (the int32 keys and indices of
                    # a float op) stay as they are
                    kind = np.dtype(dtype).kind
                    host = [a.astype(dtype) if hasattr(a, "astype") and hasattr(a, "dtype")
                            and np.dtype(a.dtype).kind == kind else a
                            for a in spec.example(n, rng)]
                    if not any(isinstance(a, np.ndarray) and a.dtype == dtype for a in host):
                        continue  # no example in dtype (reduce's int32: tools/sanitize/reduce.py)
                    dev = [gl.to_device(a) if isinstance(a, np.ndarray) else a for a in host]
                    for block in blocks:
                        kw = {"variant": v.id} if block is None else {"variant": v.id,
                                                                      "block": block}
                        got = fn(*dev, **kw)
                        settle()
                        # one that returns several arrays (sort_pairs) is read by each; a
                        # result object (CgResult, a NamedTuple; JacobiResult) by its get()
                        fetched = (tuple(g.get() for g in got) if type(got) is tuple
                                   else got.get())
                        runs = [("device", fetched)]
                        if args.inputs == "both":
                            runs.append(("numpy", fn(*host, **kw)))
                            settle()
                        for where, got in runs:
                            try:
                                check_variant(checks, v, got, *host)
                            except AssertionError as e:
                                sys.exit(f"mismatch: {name} {v.name} {where} n={n} {kw}: {e}")
                            calls += 1
    if not args.only:
        x = rng.standard_normal(4097)
        require(np.array_equal(gl.to_device(x).get(), x), "round trip")
    done("sanitize/ops", calls)


if __name__ == "__main__":
    main()
