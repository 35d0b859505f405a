"""The scan lab's ladders on the GPU, in one run, against the copy ceiling and the peers:

  * scan: every CUDA variant at 2^28 float32 and at 2^28 int32 (sums into int64), the one-block
    variants at 2^24 (their limit); torch.cumsum and cupy.cumsum on the same arrays;
  * compact: every CUDA variant at 2^28 float32 with a mask keeping half; torch.masked_select and
    CuPy's boolean indexing with the same mask; and without a mask (x != 0, half zero);
  * nonzero: every CUDA variant at 2^28 float32 with half the elements zero.

Rates count one read of x (and of the mask) and one write of the result, as gl.bench's cost models
do; frac_copy is that rate over the device-to-device copy measured in this process (gl.ceilings()).
GPU times are CUDA events on device arrays (gl.bench), L2 flushed before each repetition. The
targets: the best scan >= 0.9x copy and >= 1.3x torch.cumsum at 2^28 float32; the best compaction >=
2x torch.masked_select keeping half.

    python benchmarks/scan_lab.py [--repeat 20] [--log2n 28]
"""

import argparse

import numpy as np

import gpulab as gl
from common import require_gpu, save

ONE_BLOCK = ("hillis_steele", "blelloch")


def cuda_variants(op):
    return [v for v in gl.variants(op) if v.backend == "cuda"]


def row(r, **extra):
    peers = {name: p["median_ms"] for name, p in (r.peers or {}).items()}
    return {**extra, "variant": r.variant_name, "n": r.size, "median_ms": r.median_ms,
            "min_ms": r.min_ms, "max_ms": r.max_ms, "gbps": r.gbps, "frac_copy": r.frac_copy,
            "peers_ms": peers,
            **{f"over_{name}": ms / r.median_ms for name, ms in peers.items()}}


def scan_ladder(log2n, repeat, dtype):
    rng = np.random.default_rng(1)
    n = 1 << log2n
    if dtype == np.float32:
        host = rng.standard_normal(n).astype(np.float32)
    else:
        host = rng.integers(-1000, 1000, n).astype(dtype)
    x = gl.to_device(host)
    small = gl.to_device(host[: min(n, 1 << 24)])
    rows = []
    for v in cuda_variants("scan"):
        arg = small if v.name in ONE_BLOCK else x
        r = gl.bench(gl.scan, arg, variant=v.id, repeat=repeat, peers=v.best or v.name == "cub")
        rows.append(row(r, dtype=np.dtype(dtype).name))
    return rows


def compact_ladder(log2n, repeat, masked_only=False):
    """compact with a mask keeping half, then (unless masked_only) without a mask and nonzero,
    every CUDA rung, with the peers."""
    rng = np.random.default_rng(2)
    n = 1 << log2n
    host = rng.random(n, dtype=np.float32)
    x, mask = gl.to_device(host), gl.to_device(host > 0.5)
    rows = []
    for v in cuda_variants("compact"):
        r = gl.bench(gl.compact, x, mask, variant=v.id, repeat=repeat, peers=True)
        rows.append(row(r, op="compact", keep=0.5))
    if masked_only:
        return rows
    zeros = host.copy()
    zeros[zeros <= 0.5] = 0
    xz = gl.to_device(zeros)
    for v in cuda_variants("compact"):
        r = gl.bench(gl.compact, xz, variant=v.id, repeat=repeat, peers=True)
        rows.append(row(r, op="compact_x_nonzero", keep=0.5))
    for v in cuda_variants("nonzero"):
        r = gl.bench(gl.nonzero, xz, variant=v.id, repeat=repeat, peers=True)
        rows.append(row(r, op="nonzero", keep=0.5))
    return rows


def best_scan(scans):
    """The headline scan row: the best rung, decoupled_lookback, at float32."""
    return next(r for r in scans if r.get("dtype") == "float32"
                and r["variant"] == "decoupled_lookback")


def best_compact(selects):
    """The fastest of the lab's own compaction rungs (not CUB's), with a mask."""
    return min((r for r in selects if r["op"] == "compact" and r["variant"] != "cub"),
               key=lambda r: r["median_ms"])


def summarize(scans, selects):
    lookback = best_scan(scans)
    single = best_compact(selects)
    return {
        "scan_f32_frac_copy": {r["variant"]: r["frac_copy"] for r in scans
                               if r["dtype"] == "float32"},
        "scan_best_over_torch_cumsum": lookback.get("over_torch"),
        "scan_best_over_cupy_cumsum": lookback.get("over_cupy"),
        "compact_frac_copy": {r["variant"]: r["frac_copy"] for r in selects
                              if r["op"] == "compact"},
        "compact_best_variant": single["variant"],
        "compact_best_over_torch_masked_select": single.get("over_torch"),
        "targets": {"scan >= 0.9x copy": lookback["frac_copy"] >= 0.9,
                    "scan >= 1.3x torch.cumsum": (lookback.get("over_torch") or 0) >= 1.3,
                    "compact >= 2x torch.masked_select": (single.get("over_torch") or 0) >= 2},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--log2n", type=int, default=28)
    args = parser.parse_args()
    require_gpu()
    settings = {"repeat": args.repeat, "n": 1 << args.log2n, "one_block_n": 1 << 24}
    ceilings = gl.ceilings()
    print(gl.device_info()["name"], settings, "copy", ceilings["copy_gbps"], "GB/s")
    scans = scan_ladder(args.log2n, args.repeat, np.float32)
    scans += scan_ladder(args.log2n, args.repeat, np.int32)
    print(gl.Table(scans))
    selects = compact_ladder(args.log2n, args.repeat)
    print(gl.Table(selects))
    summary = summarize(scans, selects)
    print(summary)
    save("scan_lab", settings, {"copy_gbps": ceilings["copy_gbps"], "summary": summary,
                                "scan": scans, "compact": selects})


if __name__ == "__main__":
    main()
