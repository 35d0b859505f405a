"""Runs the csr_hybrid SpMV kernels' own source on the CPU (variant 9 of spmv, cuda/sparse/hybrid.cu)
through the host emulation in hybrid_host.cpp: every lanes value of its row in the variant table,
int32 and int64 indices, float32 and float64 values, rows around one, two and three chunks, long
first and last rows, hubs among short rows, short rows only (the single launch) and no rows. A
check of the split between its two kernels, its chunk list and the list's bound, for machines
without a GPU. Needs g++ (C++20) and the CUDA headers; exits non-zero when a result is wrong.

    python3 tools/emulate/hybrid.py [hybrid.cu]
"""

import os
import sys

import host_toolchain
from subwarp import strided_sum_source

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(ROOT, "cuda", "sparse", "hybrid.cu")
# the constants, the chunk type and both kernels, without the launchers
PARTS = (("constexpr int kHybridChunk", "template <int L, typename I, typename T>\nint launch_hybrid"),)


def lanes_values():
    sys.path.insert(0, ROOT)
    import gpulab as gl
    v = next(v for v in gl.variants("spmv") if v.name == "csr_hybrid")
    return v.tunables["lanes"]["values"]


def main(kernel=KERNEL):
    configs = "".join(f"SUITE({lanes})\n" for lanes in lanes_values())
    text = strided_sum_source() + host_toolchain.kernel_parts(kernel, PARTS)
    return host_toolchain.build_and_run("hybrid_host.cpp", text, [], timeout=600,
                                        files={"configs.inc": configs})


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
