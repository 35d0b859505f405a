"""The sort lab's ladder on the GPU, in one run, against the copy ceiling and the peers:

  * sort: every CUDA variant on int32 keys at 2^20 and 2^28 (lsd_radix at 4 and 8 bits; bitonic
    at 2^28 too, its limit; quicksort_cdp up to its limit of 2^24: --log2n 24), and on float32,
    int64 and float64 keys at 2^28 (the 8-byte keys say whether the best rung, variant=None's
    onesweep, depends on the key's size); cupy.sort (CUB's radix sort) and
    torch.sort(stable=True) on the same arrays;
  * sort_pairs: every CUDA variant on int32 and float32 keys with float32 values at 2^28;
    torch.sort with a gather of the values, and cupy.argsort with two gathers.

Gkeys/s is keys / median time. frac_bound is the variant's own bandwidth bound over its time: the
bytes its passes must move (BYTES_PER_KEY below: the model of docs/labs/sort.md) at the copy rate
measured in this process (gl.ceilings()), over the median time. GPU times are CUDA events on device
arrays (gl.bench), L2 flushed before each repetition. The target: the best radix sort >= 2x
torch.sort and >= 1.0x CUB (cupy.sort) at 2^28 int32.

    python benchmarks/sort_lab.py [--repeat 10] [--log2n 28] [--quick]
"""

import numpy as np

import gpulab as gl
from common import ladder_args, save

# Bytes a key moves through DRAM under each variant's model, for key_bytes-byte keys (the figures
# below are for 4-byte keys; values: 4 more bytes read and written a pass). lsd_radix: each pass
# reads the keys twice (histogram, scatter) and writes them once, 12 B, 32 / bits passes. bitonic: 8
# B pairs read and written by each of its global steps (plus the shared ones, a read and a write a
# stage), counted by bitonic_bytes. onesweep and cub (CUB's onesweep): the keys read once for all
# histograms, then a read and a write a pass of 8 bits: 4 + 4 x 8 = 36 B (8-byte keys: 8 + 8 x 16 =
# 136 B). merge_path: a read and a write by the tile sort and by each of its ceil(log2(n / 2048))
# merge passes: 8 B each. quicksort_cdp: 8 B records read and written by each partition level down
# to 2048-key segments and by the shared-memory sort of those, plus making them and the gather: 184
# B at 2^20 (its time is one block's partition of the top segment, not these bytes:
# docs/labs/sort.md).
def radix_bytes(bits, key_bytes=4, value_bytes=0):
    passes = 8 * key_bytes // bits
    return passes * (3 * key_bytes + 2 * value_bytes)


def bitonic_bytes(n, key_bytes=4):
    log_n = max(1, (n - 1).bit_length())
    chunk = 11  # 2048 pairs in shared memory
    global_steps = sum(max(0, s - chunk) for s in range(1, log_n + 1))
    shared_passes = 1 + max(0, log_n - chunk)
    pair = key_bytes + 4
    return 2 * pair * (global_steps + shared_passes) + 2 * key_bytes + 4  # + prepare, gather


def quicksort_cdp_bytes(n, key_bytes=4):
    levels = max(0, (-(-n // 2048) - 1).bit_length())  # partitions down to 2048-key segments
    record = key_bytes + 4
    # records made (key read, record written); each level and the shared sort read and write
    # them; the gather reads the index and the key and writes the key
    return key_bytes + record + 2 * record * (levels + 1) + 4 + 2 * key_bytes


def model_bytes(v, n, bits=None, value_bytes=0, key_bytes=4):
    if v.name == "lsd_radix":
        return radix_bytes(bits or 8, key_bytes, value_bytes)
    if v.name == "bitonic":
        return bitonic_bytes(n, key_bytes) + 2 * value_bytes
    if v.name == "merge_path":
        return (1 + max(0, (n - 1).bit_length() - 11)) * (2 * key_bytes + 2 * value_bytes)
    if v.name == "quicksort":  # 3 key reads and writes a level (count, scatter): 12 B for 4-byte
        # keys; ~1.2 log2(n/2048) levels + 1 leaf
        return (3 * key_bytes + 2 * value_bytes) * (1.2 * max(1.0, np.log2(n / 2048)) + 1)
    if v.name == "quicksort_cdp":
        return quicksort_cdp_bytes(n, key_bytes) + 2 * value_bytes
    return key_bytes + key_bytes * (2 * key_bytes + 2 * value_bytes)  # a pass a key byte


# Variants that refuse longer inputs (a ValueError from csrc/labs/sort/sort.c): skipped beyond.
MAX_KEYS = {"quicksort_cdp": 1 << 24}


def cuda_variants(op, n):
    return [v for v in gl.variants(op) if v.backend == "cuda" and n <= MAX_KEYS.get(v.name, n)]


def row(r, v, n, copy_gbps, bits=None, value_bytes=0, key_bytes=4, **extra):
    peers = {name: p["median_ms"] for name, p in (r.peers or {}).items()}
    model = model_bytes(v, n, bits, value_bytes, key_bytes)
    bound_ms = model * n / (copy_gbps * 1e6)
    return {**extra, "variant": v.name if bits is None else f"{v.name}/{bits}", "n": n,
            "median_ms": r.median_ms, "min_ms": r.min_ms, "max_ms": r.max_ms,
            "gkeys_per_s": n / (r.median_ms * 1e6),
            "bytes_per_key": model,
            "frac_bound": bound_ms / r.median_ms, "peers_ms": peers,
            **{f"over_{name}": ms / r.median_ms for name, ms in peers.items()}}


def keys_of(n, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, n, dtype=dtype)


def distribution(kind, n, rng):
    """n int32 keys: "uniform" over all of int32; "and2", the AND of two uniform keys (each bit
    set with probability 1/4: fewer distinct digits a pass); "presorted", ascending with ties
    (a running sum of steps 0-7, made in one pass rather than sorted); "equal", one value."""
    if kind == "uniform":
        return keys_of(n, np.int32, rng)
    if kind == "and2":
        return keys_of(n, np.int32, rng) & keys_of(n, np.int32, rng)
    if kind == "presorted":
        steps = rng.integers(0, 8, n, dtype=np.int64)
        return (np.cumsum(steps) - (1 << 30)).astype(np.int32)
    if kind == "equal":
        return np.full(n, 12345, np.int32)
    raise ValueError(f"kind: unknown key distribution {kind!r}")


def sort_rows(x, repeat, copy_gbps, names=None, peers=lambda v: True, **extra):
    """Every CUDA rung of sort (only those named in `names`, if given) on device keys x, at
    each of its bits; the peers where peers(v). extra goes into each row."""
    n, dtype = x.size, np.dtype(x.dtype)
    rows = []
    for v in cuda_variants("sort", n):
        if names is not None and v.name not in names:
            continue
        for bits in v.tunables.get("bits", {}).get("values", [None]):
            kw = {} if bits is None else {"bits": bits}
            r = gl.bench(gl.sort, x, variant=v.id, repeat=repeat, peers=peers(v), **kw)
            rows.append(row(r, v, n, copy_gbps, bits, key_bytes=dtype.itemsize,
                            dtype=dtype.name, op="sort", **extra))
    return rows


def sort_ladder(log2n, repeat, dtype, copy_gbps):
    rng = np.random.default_rng(3)
    n = 1 << log2n
    return sort_rows(gl.to_device(keys_of(n, dtype, rng)), repeat, copy_gbps)


def pairs_ladder(log2n, repeat, copy_gbps, key_dtype=np.int32):
    rng = np.random.default_rng(4)
    n = 1 << log2n
    keys = gl.to_device(keys_of(n, key_dtype, rng))
    values = gl.to_device(rng.standard_normal(n).astype(np.float32))
    rows = []
    for v in cuda_variants("sort_pairs", n):
        for bits in v.tunables.get("bits", {}).get("values", [None]):
            kw = {} if bits is None else {"bits": bits}
            r = gl.bench(gl.sort_pairs, keys, values, variant=v.id, repeat=repeat, peers=True,
                         **kw)
            rows.append(row(r, v, n, copy_gbps, bits, 4, dtype=f"{np.dtype(key_dtype)}+float32",
                            op="sort_pairs"))
    return rows


# The radix rungs, whose best the targets hold against cupy.sort and torch.sort
RADIX = ("lsd_radix", "onesweep")


def best_radix(rows):
    """The fastest radix rung's row among rows, or None."""
    radix = [r for r in rows if r["variant"].startswith(RADIX)]
    return min(radix, key=lambda r: r["median_ms"]) if radix else None


def summarize(rows, n):
    big = [r for r in rows if r["op"] == "sort" and r["dtype"] == "int32" and r["n"] == n]
    best = best_radix(big)
    cub = next((r for r in big if r["variant"] == "cub"), None)
    return {
        "gkeys_per_s": {f"{r['op']} {r['dtype']} 2^{r['n'].bit_length() - 1} {r['variant']}":
                        r["gkeys_per_s"] for r in rows},
        "best_radix": best and best["variant"],
        "best_radix_over_torch": best and best.get("over_torch"),
        "best_radix_over_cupy": best and best.get("over_cupy"),
        "cub_over_cupy": cub and cub.get("over_cupy"),
        "targets": {"radix >= 2x torch.sort": bool(best and (best.get("over_torch") or 0) >= 2),
                    "radix >= 1x cupy.sort": bool(best and (best.get("over_cupy") or 0) >= 1)},
    }


def main():
    args = ladder_args(quick_help="2^16 and 2^12 keys", extra=lambda parser: parser.add_argument(
        "--log2n", type=int, default=28))
    if args.quick:
        args.log2n = 16
    small = 12 if args.quick else 20
    settings = {"repeat": args.repeat, "n": 1 << args.log2n, "small_n": 1 << small}
    copy_gbps = gl.ceilings()["copy_gbps"]
    print(gl.device_info()["name"], settings, "copy", copy_gbps, "GB/s")
    rows = sort_ladder(small, args.repeat, np.int32, copy_gbps)
    rows += sort_ladder(args.log2n, args.repeat, np.int32, copy_gbps)
    for dtype in (np.float32, np.int64, np.float64):
        rows += sort_ladder(args.log2n, args.repeat, dtype, copy_gbps)
    rows += pairs_ladder(args.log2n, args.repeat, copy_gbps)
    rows += pairs_ladder(args.log2n, args.repeat, copy_gbps, np.float32)
    print(gl.Table(rows))
    summary = summarize(rows, 1 << args.log2n)
    print(summary)
    save("sort_lab", settings, {"copy_gbps": copy_gbps, "summary": summary, "rows": rows})


if __name__ == "__main__":
    main()
