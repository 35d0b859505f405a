"""The partitioned reduce over several GPUs: gl.multi.reduce of float32 data already on the GPUs
(DeviceArray parts, one per GPU), each GPU reducing its part with the reduce lab's best variant and
one NCCL all-reduce combining the partial sums. Weak scaling: --elements per GPU (2^30 by default);
strong: --elements in total, cut by gl.multi.partition.

A time is one call, host clock to host clock (gl.multi.reduce returns the NumPy scalar, so
every GPU is done), the median over --repeat after one warm-up, through gl.multi.scaling.
GB/s counts the bytes read (4 a float32) over that time; the copy ceiling of one GPU is in
gl.ceilings(). The data are ones, so the sum is checked exactly against the element count.

    python3 benchmarks/multi_reduce.py [--repeat 20] [--quick] [--elements 1073741824]
        [--gpus 1,2,4] [--tag x4]
"""

import numpy as np

import gpulab as gl
from common import ladder_args, save
from multi_jacobi import gpu_counts


def arguments(p):
    p.add_argument("--elements", type=int, default=1 << 30,
                   help="float32 elements a GPU (weak) and in all (strong)")
    p.add_argument("--gpus", default=None, help="GPU counts, e.g. 1,2,4 (default: 1, 2, 4, "
                   "... up to every visible GPU)")
    p.add_argument("--tag", default="", help="saved as multi_reduce_TAG.json")


def ones_on(device, n, host):
    return gl.multi.to_device(host[:n], device)


def checked(parts):
    """gl.multi.reduce(parts) of ones: the element count, within float32 rounding (past 2^24
    the partial sums are no longer exact)."""
    got = float(gl.multi.reduce(parts, "sum"))
    want = float(sum(p.size for p in parts))
    if abs(got - want) > 1e-6 * want:
        raise AssertionError(f"gl.multi.reduce of {want:.0f} ones gave {got}")


def main():
    args = ladder_args(repeat=20, quick_help="2^20 elements", extra=arguments)
    counts, _ = gpu_counts(args.gpus)
    n = 1 << 20 if args.quick else args.elements
    host = np.ones(n, np.float32)
    results = {"gpus": counts, "elements": n, "copy_ceiling_gbps": None}
    try:
        results["copy_ceiling_gbps"] = gl.ceilings("gpu")["copy_gbps"]
    except Exception as e:  # a ceiling missing leaves the ratio out, not the measurement
        print(f"no copy ceiling: {e}")
    # weak: GPU g holds n elements, the first N parts used on N GPUs; strong: n in all
    weak_parts = [ones_on(g, n, host) for g in range(max(counts))]
    strong_parts = {k: [ones_on(g, b - a, host) for g, (a, b) in
                        enumerate(gl.multi.partition(n, k))] for k in counts}
    for mode in ("weak", "strong"):

        def run(size, gpus):
            parts = weak_parts[:gpus] if mode == "weak" else strong_parts[gpus]
            checked(parts)

        table = gl.multi.scaling(run, [n], gpus=counts, mode=mode, trials=args.repeat)
        rows = []
        for row in table:
            total = n * row["gpus"] if mode == "weak" else n
            row.update(elements=total, gbps=total * 4 / row["total_ms"] / 1e6,
                       gbps_per_gpu=total * 4 / row["total_ms"] / 1e6 / row["gpus"])
            if results["copy_ceiling_gbps"]:
                row["per_gpu_vs_copy"] = row["gbps_per_gpu"] / results["copy_ceiling_gbps"]
            rows.append(dict(row))
            print(f"{mode:6s} {row['gpus']} GPU {total:12d} float32  {row['total_ms']:8.3f} ms  "
                  f"{row['gbps']:8.1f} GB/s ({row['gbps_per_gpu']:7.1f} a GPU)  "
                  f"S={row['speedup']:.3f} E={row['efficiency']:.3f}", flush=True)
        results[mode] = rows
    gl.multi.close()
    save("multi_reduce" + (f"_{args.tag}" if args.tag else ""),
         {"repeat": args.repeat, "quick": args.quick, "elements": n, "gpus": counts,
          "dtype": "float32", "op": "sum", "data": "DeviceArray parts (ones)"}, results)


if __name__ == "__main__":
    main()
