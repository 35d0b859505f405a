"""The reduce ladder on the GPU, in the style of Harris's and S1's tables, and S0's block-size
sweep, against the measured copy bandwidth and torch.sum / cupy.sum in the same run.

  * ladder at 2^22 int32 (Harris's and S0's size) and at 2^28 float32 (S1's "268M floats"):
    time, GB/s, step speedup, cumulative speedup, fraction of copy, for every variant at its
    default block, with torch.sum and cupy.sum as rows and the CPU variants at the same size;
  * S0's block-size sweep: GB/s of variants 0-5 at blocks 32..1024, 2^22 int32;
  * variant 12's own block sweep at 2^28 float32 (how its default was chosen).

Every GPU time is CUDA events with the L2 flushed before each repetition.

    python benchmarks/reduce_ladder.py [--repeat 30] [--quick]
"""

import argparse
import time

import numpy as np

import gpulab as gl
from common import require_gpu, save

# Seeds' orderings, slowest to fastest: Harris's kernels (S0 ch. 5), and S1's table.
SEED_ORDERS = {"harris (S0)": [0, 1, 2, 3, 4, 5, 6], "S1": [8, 9, 10, 7]}


def repeat_for(fn, args, kw, repeat):
    """Fewer repetitions for the slow rungs (S1's AtomicGlobal takes ~100 ms at 2^28)."""
    t0 = time.perf_counter()
    fn(*args, **kw)
    gl.synchronize()
    seconds = time.perf_counter() - t0
    return max(3, min(repeat, int(2.0 / max(seconds, 1e-6))))


def bench_rung(x, v, repeat):
    """The BenchResult of rung v on device array x at its default block (fewer repetitions for
    the slow rungs), with torch.sum and cupy.sum beside the best rung."""
    kw = {"variant": v.id}
    if "block" in v.tunables:
        kw["block"] = v.tunables["block"]["default"]
    return gl.bench(gl.reduce, x, repeat=repeat_for(gl.reduce, (x,), kw, repeat), peers=v.best,
                    **kw)


def ladder(x_host, repeat, label):
    x = gl.to_device(x_host)
    rows, previous, first = [], None, None
    for v in gl.variants("reduce"):
        if v.backend != "cuda":
            continue
        rows.append(bench_rung(x, v, repeat))
    cpu = [gl.bench(gl.reduce, x_host, variant=v.id, repeat=3, warmup=1)
           for v in gl.variants("reduce") if v.backend == "cpu" and v.supports("sum", x.dtype)]
    table = []
    for r in rows:
        first = first or r.median_ms
        table.append({"row": f"{r.variant} {r.variant_name}", "variant": r.variant,
                      "block": r.params.get("block"), "ms": r.median_ms, "gbps": r.gbps,
                      "step": (previous / r.median_ms) if previous else 1.0,
                      "cumulative": first / r.median_ms, "frac_copy": r.frac_copy})
        previous = r.median_ms
    best = next(r for r in rows if r.variant == 12)
    for name, p in best.peers.items():
        table.append({"row": f"{name}.sum", "variant": None, "block": None, "ms": p["median_ms"],
                      "gbps": p["gbps"], "step": None, "cumulative": first / p["median_ms"],
                      "frac_copy": p["gbps"] / best.gbps * best.frac_copy})
    for r in cpu:
        table.append({"row": f"{r.variant} {r.variant_name} (CPU, NumPy in)", "variant": r.variant,
                      "block": None, "ms": r.median_ms, "gbps": r.gbps, "step": None,
                      "cumulative": first / r.median_ms, "frac_copy": None})
    print(f"\n== ladder: {label}")
    print(f"{'variant':34s} {'block':>5s} {'ms':>10s} {'GB/s':>9s} {'step':>6s} {'cumul.':>8s} "
          f"{'x copy':>7s}")
    for t in table:
        fmt = lambda v, f: format(v, f) if v is not None else "-"  # noqa: E731
        print(f"{t['row']:34s} {fmt(t['block'], '>5d'):>5s} {t['ms']:10.4f} {t['gbps']:9.1f} "
              f"{fmt(t['step'], '6.2f'):>6s} {t['cumulative']:8.1f} "
              f"{fmt(t['frac_copy'], '7.3f'):>7s}")
    orders = {}
    by_id = {r.variant: r.median_ms for r in rows}
    for name, ids in SEED_ORDERS.items():
        inversions = [(a, b) for a, b in zip(ids, ids[1:]) if by_id[b] > by_id[a]]
        orders[name] = {"ids": ids, "inversions": inversions}
        print(f"{name} order {ids}: " + (f"inversions {inversions}" if inversions else "rises"))
    return {"table": table, "orders": orders, "runs": [r.to_dict() for r in rows + cpu]}


def block_sweep(x, variants, repeat):
    grid = {}
    for vid in variants:
        v = gl.registry.find("reduce", vid)
        grid[vid] = {}
        for block in v.tunables["block"]["values"]:
            r = gl.bench(gl.reduce, x, variant=vid, block=block, repeat=repeat)
            grid[vid][block] = r.gbps
        print(f"variant {vid:2d}: " + "  ".join(f"{b}: {g:7.1f}" for b, g in grid[vid].items()))
    return grid


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="2^24 instead of 2^28 floats")
    args = parser.parse_args()
    require_gpu()
    rng = np.random.default_rng(2)
    ceil = gl.ceilings("gpu")
    print(f"{gl.device_info()['name']}: copy ceiling {ceil['copy_gbps']:.0f} GB/s")
    ints = rng.integers(-1000, 1001, 1 << 22, dtype=np.int32)
    floats = rng.standard_normal(1 << (24 if args.quick else 28), dtype=np.float32)
    small = ladder(ints, args.repeat, "2^22 int32 sum")
    large = ladder(floats, args.repeat, f"2^{24 if args.quick else 28} float32 sum")
    print("\n== S0 block sweep, GB/s at 2^22 int32")
    sweep = block_sweep(gl.to_device(ints), range(6), args.repeat)
    print(f"\n== variant 12 block sweep, GB/s at {floats.size} float32")
    sweep12 = block_sweep(gl.to_device(floats), [12], args.repeat)
    rows = {t["row"]: t for t in large["table"]}
    v12, v13 = rows["12 vec16_single_pass"], rows["13 cub_device_reduce"]
    summary = {"copy_gbps": ceil["copy_gbps"], "v12_gbps": v12["gbps"],
               "v12_frac_copy": v12["frac_copy"], "v13_gbps": v13["gbps"]}
    if "torch.sum" in rows:
        summary["torch_gbps"] = rows["torch.sum"]["gbps"]
        summary["v12_over_torch"] = rows["torch.sum"]["ms"] / v12["ms"]
        summary["v13_over_torch"] = rows["torch.sum"]["ms"] / v13["ms"]
    if "cupy.sum" in rows:
        summary["cupy_gbps"] = rows["cupy.sum"]["gbps"]
        summary["v12_over_cupy"] = rows["cupy.sum"]["ms"] / v12["ms"]
    print(summary)
    save("reduce_ladder", {"sizes": {"int32": ints.size, "float32": floats.size},
                           "repeat": args.repeat, "flush_l2": True},
         {"ceilings": ceil, "summary": summary, "ladder_int32": small, "ladder_float32": large,
          "block_sweep_s0": sweep, "block_sweep_v12": sweep12})


if __name__ == "__main__":
    main()
