"""The concepts lab on the GPU: each demo's effect, with numbers, in one run.

  * divergence: time of each variant with keys that change per lane, per half-warp, per warp
    and never, and each time over the same variant's time with uniform keys;
  * warp_reduce: wrong block sums of each variant over many trials and launches (honestly 0
    where the GPU keeps the lockstep), and the time per trial;
  * counter: the racy counter's final count over repeated launches (lost updates), and every
    variant's time;
  * sin: speed of sinf, __sinf and the peers on [-pi, pi] and on [-1e6, 1e6] (sinf's slow
    reduction), and the error of each over ranges from [-pi, pi] out to [-1e6, 1e6];
  * lookup: constant, global (__ldg) and shared tables with indices uniform per warp and
    different per lane, for a small and a large table.

GPU times are CUDA events on device arrays (gl.bench), L2 flushed before each repetition.

    python benchmarks/concepts_lab.py [--repeat 20] [--quick]
"""

import argparse
import math

import numpy as np

import gpulab as gl
from common import require_gpu, save

C = gl.concepts
# keys that agree per `lanes` consecutive elements; "uniform" is one key for the whole array
GRANULARITIES = {"per_lane": 1, "per_half_warp": 16, "per_warp": 32, "uniform": None}


def cuda_variants(op):
    return [v for v in gl.variants(op) if v.backend == "cuda"]


def timing(r):
    return {"median_ms": r.median_ms, "min_ms": r.min_ms, "max_ms": r.max_ms}


def divergence(n, iterations, repeat):
    rng = np.random.default_rng(1)
    x = gl.to_device(rng.standard_normal(n).astype(np.float32))
    rows = []
    for name, lanes in GRANULARITIES.items():
        key = C.lane_pattern(n, lanes or n, 4)
        dkey = gl.to_device(key)
        for v in cuda_variants("divergence"):
            r = gl.bench(C.divergence, x, dkey, iterations=iterations, variant=v.id,
                         repeat=repeat, flush_l2=False)
            rows.append({"variant": v.name, "keys": name,
                         "paths_per_warp": len(set(key[:32].tolist())),
                         "gflops": r.gflops, **timing(r)})
    uniform = {r["variant"]: r["median_ms"] for r in rows if r["keys"] == "uniform"}
    free = {r["keys"]: r["median_ms"] for r in rows if r["variant"] == "branch_free"}
    for r in rows:
        r["over_uniform"] = r["median_ms"] / uniform[r["variant"]]
        r["over_branch_free"] = r["median_ms"] / free[r["keys"]] if free else None
    return rows


def warp_reduce(n, trials, launches, repeat):
    rng = np.random.default_rng(2)
    x_host = rng.integers(-1000, 1000, size=n, dtype=np.int32)
    x = gl.to_device(x_host)
    rows = []
    for v in cuda_variants("warp_reduce"):
        for block in (64, 256, 1024):
            wrong, sums_wrong = [], 0
            for _ in range(launches):
                sums, bad = C.warp_reduce(x, trials=trials, variant=v.id, block=block).get()
                wrong.append(int(bad.sum()))
                sums_wrong += int((sums != C.warp_reduce_reference(x_host, block)).sum())
            blocks = -(-n // block)
            r = gl.bench(C.warp_reduce, x, trials=trials, variant=v.id, block=block,
                         repeat=max(3, repeat // 4))
            rows.append({"variant": v.name, "racy": v.racy, "block": block, "blocks": blocks,
                         "trials": trials, "launches": launches,
                         "block_sums": blocks * trials * launches,
                         "wrong": sum(wrong), "wrong_per_launch": wrong,
                         "wrong_fraction": sum(wrong) / (blocks * trials * launches),
                         "last_sums_wrong": sums_wrong,
                         "us_per_trial": r.median_ms * 1e3 / trials, **timing(r)})
    return rows


def counter(n, launches, repeat):
    x = gl.to_device(np.ones(n, np.int32))  # S4's case: every thread increments
    rows = []
    for v in cuda_variants("counter"):
        counts = [int(C.counter(x, variant=v.id).item()) for _ in range(launches)]
        r = gl.bench(C.counter, x, variant=v.id, repeat=repeat, peers=v.best)
        rows.append({"variant": v.name, "racy": v.racy, "expected": n, "counts": counts,
                     "lost_min": n - max(counts), "lost_max": n - min(counts),
                     "lost_fraction_median": (n - float(np.median(counts))) / n,
                     "g_increments_per_s": n / r.median_ms / 1e6,
                     "peers": {k: p["median_ms"] for k, p in r.peers.items()}, **timing(r)})
    return rows


def sin(n, repeat):
    """Speed on [-pi, pi], where both variants may be bound by memory, and on [-1e6, 1e6],
    where sinf takes its slow (Payne-Hanek) reduction beyond |x| ~ 1e5; then the errors."""
    rng = np.random.default_rng(3)
    speed = []
    for lo, hi in ((-math.pi, math.pi), (-1e6, 1e6)):
        x = gl.to_device(rng.uniform(lo, hi, n).astype(np.float32))
        for v in cuda_variants("sin"):
            r = gl.bench(C.sin, x, variant=v.id, repeat=repeat, peers=True)
            speed.append({"variant": v.name, "range": f"[{lo:g}, {hi:g}]", "gbps": r.gbps,
                          "frac_copy": r.frac_copy, "g_sin_per_s": r.unit_rate,
                          "peers": {k: p["median_ms"] for k, p in r.peers.items()},
                          **timing(r)})
    errors = []
    for lo, hi in ((-math.pi, math.pi), (-100.0, 100.0), (-1e4, 1e4), (-1e6, 1e6)):
        errors += list(C.sin_error(lo, hi, 1 << 22))
    return speed, errors


def lookup(n, repeat):
    rows = []
    for size in (256, C.MAX_TABLE):
        rng = np.random.default_rng(size)
        table = gl.to_device(rng.standard_normal(size).astype(np.float32))
        for access, lanes in (("uniform", 32), ("divergent", 1)):
            idx = gl.to_device(C.lane_pattern(n, lanes, size, shuffle=True, seed=size))
            for v in cuda_variants("lookup"):
                r = gl.bench(C.lookup, table, idx, variant=v.id, repeat=repeat)
                rows.append({"variant": v.name, "table": size, "indices": access,
                             "gbps": r.gbps, "frac_copy": r.frac_copy, **timing(r)})
    for r in rows:
        same = [o for o in rows if o["variant"] == r["variant"] and o["table"] == r["table"]]
        uniform = next(o for o in same if o["indices"] == "uniform")
        r["over_uniform"] = r["median_ms"] / uniform["median_ms"]
    return rows


def summarize(div, wr, cnt, sin_speed, sin_err, lut):
    def pick(rows, **match):
        return next(r for r in rows if all(r[k] == v for k, v in match.items()))

    return {
        "divergence_over_uniform": {
            v: {k: pick(div, variant=v, keys=k)["over_uniform"] for k in GRANULARITIES}
            for v in ("branch_per_key", "branch_free", "all_paths_select")},
        "warp_reduce_wrong_fraction": {
            f"{r['variant']}@{r['block']}": r["wrong_fraction"] for r in wr},
        "counter_lost_fraction_median": {r["variant"]: r["lost_fraction_median"] for r in cnt},
        "counter_ms": {r["variant"]: r["median_ms"] for r in cnt},
        "sin_intrinsic_speedup": {
            span: pick(sin_speed, variant="sinf", range=span)["median_ms"]
            / pick(sin_speed, variant="intrinsic_sinf", range=span)["median_ms"]
            for span in sorted({r["range"] for r in sin_speed})},
        "sin_max_abs_error": {f"{r['name']}[{r['lo']:g},{r['hi']:g}]": r["max_abs_error"]
                              for r in sin_err},
        "lookup_divergent_over_uniform": {
            f"{r['variant']}@{r['table']}": r["over_uniform"] for r in lut
            if r["indices"] == "divergent"},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer trials")
    args = parser.parse_args()
    require_gpu()
    scale = 4 if args.quick else 1
    settings = {"repeat": args.repeat, "divergence_n": (1 << 22) // scale, "iterations": 512,
                "warp_reduce_n": (1 << 20) // scale, "trials": 1000 // scale, "launches": 5,
                "counter_n": (1 << 24) // scale, "counter_launches": 10,
                "sin_n": (1 << 26) // scale, "lookup_n": (1 << 24) // scale}
    print(gl.device_info()["name"], settings)
    div = divergence(settings["divergence_n"], settings["iterations"], args.repeat)
    print(gl.Table(div))
    wr = warp_reduce(settings["warp_reduce_n"], settings["trials"], settings["launches"],
                     args.repeat)
    print(gl.Table([{k: v for k, v in r.items() if k != "wrong_per_launch"} for r in wr]))
    cnt = counter(settings["counter_n"], settings["counter_launches"], args.repeat)
    print(gl.Table([{k: v for k, v in r.items() if k != "counts"} for r in cnt]))
    sin_speed, sin_err = sin(settings["sin_n"], args.repeat)
    print(gl.Table(sin_speed))
    print(gl.Table(sin_err))
    lut = lookup(settings["lookup_n"], args.repeat)
    print(gl.Table(lut))
    summary = summarize(div, wr, cnt, sin_speed, sin_err, lut)
    print(summary)
    save("concepts_lab", settings, {"summary": summary, "divergence": div, "warp_reduce": wr,
                                    "counter": cnt, "sin_speed": sin_speed, "sin_error": sin_err,
                                    "lookup": lut})


if __name__ == "__main__":
    main()
