"""What the NVTX ranges cost per op call, with no profiler attached: the host wall time of an
asynchronous 1 K-element saxpy on device arrays, in a process where the ops are plain functions
(the default without a profiler) and in one where GPULAB_NVTX=1 wraps them in ranges, which
NVTX3 then resolves to no-ops. Interleaved child processes, several of each.

    python benchmarks/nvtx_overhead.py [--calls 20000] [--processes 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from common import require_gpu, save

CHILD = """
import json, statistics, sys, time
import numpy as np
import gpulab as gl
calls = int(sys.argv[1])
x = gl.to_device(np.ones(1024, np.float32))
samples = []
for r in range(6):
    t0 = time.perf_counter()
    for _ in range(calls):
        gl.saxpy(2.0, x, x, variant=2, out=x)
    gl.synchronize()
    if r:
        samples.append((time.perf_counter() - t0) / calls * 1e6)
print(json.dumps({"wrapped": hasattr(gl.saxpy, "__wrapped__"),
                  "per_call_us": statistics.median(samples)}))
"""


def child(calls, nvtx):
    env = dict(os.environ)
    for name in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH"):
        env.pop(name, None)
    env["GPULAB_NVTX"] = "1" if nvtx else "0"
    done = subprocess.run([sys.executable, "-c", CHILD, str(calls)], env=env,
                          capture_output=True, text=True, check=True)
    out = json.loads(done.stdout)
    assert out["wrapped"] == nvtx, out
    return out["per_call_us"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--processes", type=int, default=5)
    args = parser.parse_args()
    require_gpu()
    plain, ranged = [], []
    for _ in range(args.processes):
        plain.append(child(args.calls, False))
        ranged.append(child(args.calls, True))
    result = {
        "plain_us": plain, "ranged_us": ranged,
        "plain_median_us": statistics.median(plain),
        "ranged_median_us": statistics.median(ranged),
        "range_cost_us": statistics.median(ranged) - statistics.median(plain),
    }
    print(f"saxpy 1 K, async on device arrays: {result['plain_median_us']:.3f} us per call "
          f"plain, {result['ranged_median_us']:.3f} us with NVTX ranges and no tool "
          f"({result['range_cost_us']:+.3f} us); without a profiler the ops are plain, so "
          "the ranges cost nothing there")
    save("nvtx_overhead", vars(args), result)


if __name__ == "__main__":
    main()
