"""The histogram lab on the GPU, in one run: every CUDA rung of histogram on 2^28 uint8 bytes
into 256 bins, uniform and with 90% of the samples in one bin; on 2^28 float32 values into 256
bins over (0, 1); and histogram_rgb on an 8192 x 8192 RGB image (uint8). Each beside the copy
ceiling (gl.ceilings()) and the peers in the same run: torch.bincount / torch.histc and
cupy.bincount / cupy.histogram (the RGB peers: bincount with per-channel offsets).

GB/s counts the input read once and the int64 counts written once (the ops' cost models). GPU times
are CUDA events on device arrays (gl.bench), L2 flushed before each repetition; every result is
checked against NumPy before it is timed. Targets: uniform uint8 >= 2000 GB/s, 90%-skewed >= 1000
GB/s, RGB >= 1500 GB/s.

    python benchmarks/histogram_lab.py [--repeat 20] [--quick]
"""

import argparse

import numpy as np

import gpulab as gl
from common import require_gpu, save


def cuda_variants(op):
    return [v for v in gl.variants(op) if v.backend == "cuda"]


def row(case, r, copy_gbps):
    out = {"case": case, "variant": r.variant, "name": r.variant_name, "median_ms": r.median_ms,
           "min_ms": r.min_ms, "max_ms": r.max_ms, "gbps": r.gbps,
           "frac_copy": r.gbps / copy_gbps}
    for peer, p in (r.peers or {}).items():
        out[f"{peer}_gbps"] = p["gbps"]
        out[f"over_{peer}"] = p["median_ms"] / r.median_ms
    return out


def ladder(case, fn, host, args, want, repeat, copy_gbps, **kw):
    x = gl.to_device(host)
    rows = []
    for v in cuda_variants(fn.__gpulab_op__.name):
        if host.dtype.name not in v.dtypes:
            continue  # CUB's rung takes integer data only
        got = fn(x, *args, variant=v.id, **kw)
        got = got.get() if isinstance(got, gl.DeviceArray) else got
        if not np.array_equal(got, want):
            raise SystemExit(f"{case}: variant {v.id} ({v.name}) gives wrong counts")
        r = gl.bench(fn, x, *args, variant=v.id, repeat=repeat, peers=True, **kw)
        rows.append(row(case, r, copy_gbps))
        print(f"{case:>14} {v.id} {v.name:<20} {r.gbps:8.1f} GB/s  "
              f"({r.gbps / copy_gbps:.2f} of copy)")
    return rows


def byte_ladders(n, rng, repeat, copy_gbps):
    """The uint8 cases into 256 bins: n uniform bytes, then the same with 90% of them set to one
    value (u8_uniform, u8_skewed90), every CUDA rung of each."""
    uniform = rng.integers(0, 256, n, dtype=np.uint8)
    rows = ladder("u8_uniform", gl.histogram_counts, uniform, (256,),
                  np.bincount(uniform, minlength=256), repeat, copy_gbps)
    skewed = uniform.copy()
    skewed[rng.random(n, dtype=np.float32) < 0.9] = 77
    rows += ladder("u8_skewed90", gl.histogram_counts, skewed, (256,),
                   np.bincount(skewed, minlength=256), repeat, copy_gbps)
    return rows


def best_rows(rows):
    """{case: its fastest row}, whichever rung it is."""
    return {case: max((r for r in rows if r["case"] == case), key=lambda r: r["gbps"])
            for case in dict.fromkeys(r["case"] for r in rows)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="2^24 elements and a 2048^2 image")
    args = parser.parse_args()
    require_gpu()
    n = 1 << (24 if args.quick else 28)
    side = 2048 if args.quick else 8192
    settings = {"repeat": args.repeat, "n": n, "image": [side, side, 3], "bins": 256}
    ceil = gl.ceilings("gpu")
    copy = ceil["copy_gbps"]
    print(gl.device_info()["name"], settings, f"copy {copy:.0f} GB/s")
    rng = np.random.default_rng(11)
    rows = byte_ladders(n, rng, args.repeat, copy)
    floats = rng.random(n, dtype=np.float32)
    rows += ladder("f32_uniform", gl.histogram_counts, floats, (256, (0.0, 1.0)),
                   np.histogram(floats, 256, (0.0, 1.0))[0], args.repeat, copy)
    del floats
    img = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
    rows += ladder("rgb_8192", gl.histogram_rgb, img, (), gl.labs.histogram.reference_rgb(img),
                   args.repeat, copy)
    print(gl.Table(rows))
    best = {case: r["gbps"] for case, r in best_rows(rows).items()}
    targets = {"u8_uniform": 2000, "u8_skewed90": 1000, "rgb_8192": 1500}
    summary = {"copy_gbps": copy, "best_gbps": best,
               "targets_met": {case: best[case] >= t for case, t in targets.items()}}
    print(summary)
    save("histogram_lab", {**settings, "ceilings": ceil}, {"summary": summary, "rows": rows})


if __name__ == "__main__":
    main()
