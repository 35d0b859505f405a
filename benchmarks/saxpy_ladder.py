"""The saxpy ladder at 2^28 float32 elements (1 GiB per array) on the GPU, with every block
size, against the measured copy bandwidth and CuPy/PyTorch in the same run.

    python benchmarks/saxpy_ladder.py [--log2n 28] [--repeat 30]
"""

import argparse

import numpy as np

import gpulab as gl
from common import require_gpu, save


def ladder(x, y, repeat):
    """Every CUDA rung at every block size on device arrays x, y (to_dict() of each result,
    printed as it comes), with CuPy and PyTorch beside each rung's default block."""
    results = []
    for v in gl.variants("saxpy"):
        if v.backend != "cuda":
            continue
        for block in v.tunables["block"]["values"]:
            r = gl.bench(gl.saxpy, 2.5, x, y, variant=v.id, block=block, repeat=repeat,
                         peers=block == v.tunables["block"]["default"])
            results.append(r.to_dict())
            print(r)
    return results


def summarize(results, ceil):
    """The fastest (rung, block) of ladder()'s results, against copy and each peer."""
    best = max(results, key=lambda r: r["gbps"])
    summary = {"best_variant": best["variant"], "best_block": best["params"].get("block"),
               "best_gbps": best["gbps"], "copy_gbps": ceil["copy_gbps"],
               "best_frac_copy": best["frac_copy"]}
    for r in results:
        for name, p in r["peers"].items():
            summary[f"{name}_gbps"] = p["gbps"]
    summary["best_over_peers"] = {k[:-5]: best["gbps"] / v for k, v in summary.items()
                                  if k.endswith("_gbps") and k not in ("best_gbps", "copy_gbps")}
    return summary


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2n", type=int, default=28)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    require_gpu()
    n = 1 << args.log2n
    rng = np.random.default_rng(1)
    x = gl.to_device(rng.standard_normal(n, dtype=np.float32))
    y = gl.to_device(rng.standard_normal(n, dtype=np.float32))
    ceil = gl.ceilings("gpu")
    print(f"{gl.device_info()['name']}: copy ceiling {ceil['copy_gbps']:.0f} GB/s")
    results = ladder(x, y, args.repeat)
    summary = summarize(results, ceil)
    print(summary)
    save("saxpy_ladder", {"n": n, "dtype": "float32", "repeat": args.repeat,
                          "flush_l2": True}, {"ceilings": ceil, "summary": summary,
                                              "runs": results})


if __name__ == "__main__":
    main()
