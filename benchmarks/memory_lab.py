"""The memory lab on the GPU: bandwidth per direction and memory kind (gpulab's path against raw
cudaMemcpy in the same run), S1's access patterns, the pointer-chase staircase against the
device's cache sizes, shared-memory banks and constant memory; and the host's own staircase.

    python benchmarks/memory_lab.py [--max-bytes 1073741824] [--managed-max-bytes 268435456]
"""

import argparse

import gpulab as gl
from common import require_gpu, save

MiB = 1 << 20


def pinned_verdict(tables, min_bytes):
    """gpulab / cudaMemcpy for pinned H2D and D2H at the sizes the copy engine dominates."""
    out = {}
    for direction in ("h2d", "d2h"):
        rows = [r for r in tables[f"{direction}_pinned"]
                if r["method"] == "gpulab" and r["bytes"] >= min_bytes]
        out[direction] = {r["bytes"]: r["ratio_to_cudaMemcpy"] for r in rows}
        out[f"{direction}_min_ratio"] = min(out[direction].values())
        out[f"{direction}_gbps_at_max"] = max(rows, key=lambda r: r["bytes"])["gbps"]
    return out


def staircase_steps(chase, l2_bytes):
    """Median ns per load in the bands below, between and above the caches."""
    def band(lo, hi):
        values = sorted(r["ns_per_load"] for r in chase if lo <= r["bytes"] < hi)
        return values[len(values) // 2] if values else None
    return {"below_128KiB": band(0, 128 << 10), "1MiB_to_16MiB": band(1 * MiB, 16 * MiB),
            "l2_bytes": l2_bytes, "above_2x_l2": band(2 * l2_bytes, 1 << 40),
            "above_256MiB": band(256 * MiB, 1 << 40)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-bytes", type=int, default=1 << 30)
    parser.add_argument("--managed-max-bytes", type=int, default=256 * MiB)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    require_gpu()
    info = gl.device_info()
    print(f"{info['name']}: L2 {info['l2_cache_bytes'] / MiB:.0f} MiB, shared per SM "
          f"{info['shared_mem_per_sm'] >> 10} KiB")
    tables = {}
    for direction in ("h2d", "d2h"):
        for memory in ("pageable", "pinned", "mapped", "managed"):
            cap = args.managed_max_bytes if memory == "managed" else args.max_bytes
            t = gl.memory.bandwidth_test(direction, memory, max_bytes=cap, repeat=args.repeat,
                                         progress=False)
            tables[f"{direction}_{memory}"] = t
            print(t)
    tables["d2d_device"] = gl.memory.bandwidth_test("d2d", "device", max_bytes=args.max_bytes,
                                                    repeat=args.repeat, progress=False)
    intact = all(r["intact"] for t in tables.values() for r in t)
    verdict = pinned_verdict(tables, 64 * MiB)
    print("pinned gpulab / cudaMemcpy:", verdict, "all intact:", intact)

    access = gl.memory.access_pattern(progress=False)
    print(access)
    chase = gl.memory.pointer_chase(progress=False)
    print(chase)
    steps = staircase_steps(chase, info["l2_cache_bytes"])
    print("staircase:", steps)
    banks = gl.memory.bank_conflicts(progress=False)
    print(banks)
    constant = gl.memory.constant_memory()
    print(constant)
    host_chase = gl.memory.pointer_chase(where="cpu", progress=False)
    host_bw = gl.memory.host_bandwidth(progress=False)
    print(host_chase)
    print(host_bw)
    save("memory_lab", {"max_bytes": args.max_bytes, "managed_max_bytes": args.managed_max_bytes,
                        "repeat": args.repeat},
         {"summary": {"pinned_vs_cudaMemcpy": verdict, "all_intact": intact,
                      "staircase": steps, "cache_sizes": gl.memory.cache_sizes(),
                      "chain_ok": all(chase.column("chain_ok"))},
          "bandwidth": {k: t.to_dict() for k, t in tables.items()},
          "access_pattern": access.to_dict(), "pointer_chase": chase.to_dict(),
          "bank_conflicts": banks.to_dict(), "constant_memory": constant.to_dict(),
          "host_pointer_chase": host_chase.to_dict(), "host_bandwidth": host_bw.to_dict()})


if __name__ == "__main__":
    main()
