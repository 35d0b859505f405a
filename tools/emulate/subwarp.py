"""Runs the csr_subwarp SpMV kernel's own source on the CPU (variant 8 of spmv), every lanes value
of its row in the variant table, int32 and int64 indices, float32 and float64 values, through the
host emulation in subwarp_host.cpp: a check of its indexing, its guards (rows past the last,
nonzeros past a row's end), its group shuffle (mask, width) and its lanes rule, for machines
without a GPU. Needs g++ (C++20) and the CUDA headers; exits non-zero when a result is wrong.

    python3 tools/emulate/subwarp.py
"""

import os
import shutil
import subprocess
import sys
import tempfile

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(ROOT, "cuda", "sparse", "csr.cu")
SHARED = os.path.join(ROOT, "cuda", "sparse", "kernels.cuh")


def cut(text, start, end):
    if start not in text or end not in text:
        sys.exit(f"emulate: {start!r} or {end!r} is gone from cuda/sparse: update tools/emulate")
    return text[text.index(start):text.index(end)]


def strided_sum_source():
    """strided_sum and its unroll, as cuda/sparse/kernels.cuh has them (csr_subwarp and
    csr_hybrid sum through it)."""
    with open(SHARED) as f:
        return cut(f.read(), "// Gathers of x in flight", "// The failed-call names")


def kernel_source(path=KERNEL):
    """strided_sum, the kernel and its lanes rule (without the launchers), as kernels.cuh and
    csr.cu have them."""
    with open(path) as f:
        text = f.read()
    kernel = strided_sum_source() + cut(text, "// A group of L lanes per row",
                                        "// csr_subwarp's lanes per row when")
    rule = cut(text, "inline int subwarp_lanes(", "template <int L, typename I, typename T>\nint launch")
    return kernel + "\n" + rule


def lanes_values():
    sys.path.insert(0, ROOT)
    import gpulab as gl
    v = next(v for v in gl.variants("spmv") if v.name == "csr_subwarp")
    return v.tunables["lanes"]["values"]


def main(kernel=KERNEL):
    cxx, include = host_toolchain.require()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "kernel_gen.inc"), "w") as f:
            f.write(kernel_source(kernel))
        with open(os.path.join(work, "configs.inc"), "w") as f:
            f.writelines(f"SUITE({lanes})\n" for lanes in lanes_values())
        shutil.copy(os.path.join(HERE, "subwarp_host.cpp"), work)
        exe = os.path.join(work, "subwarp_host")
        subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-w", f"-I{include}", f"-I{HERE}",
                        os.path.join(work, "subwarp_host.cpp"), "-o", exe], check=True)
        try:
            # a lane that leaves before its group's shuffle waits forever at the barrier
            return subprocess.run([exe], timeout=300).returncode
        except subprocess.TimeoutExpired:
            print("emulate: the kernel hung (a lane missing from its group's shuffle?)")
            return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
