"""Runs the multistage SGEMM kernel's own source on the CPU (variant 12 of matmul), every
configuration of its row in the variant table, through the host emulation in
multistage_host.cpp: a check of its indexing, guards and pipeline order for machines without a
GPU. Needs g++ (C++20) and the CUDA headers; exits non-zero when a result is wrong.

    python3 tools/emulate/multistage.py
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(ROOT, "cuda", "linalg", "matmul_multistage.cu")
TILES = os.path.join(ROOT, "cuda", "linalg", "sgemm_tiles.cuh")


def replace(text, old, new):
    if old not in text:
        sys.exit(f"emulate: {old!r} is no longer in the source: update tools/emulate")
    return text.replace(old, new)


def kernel_source():
    """The shared tiles header and the kernel (without its host launcher), with the device-only
    parts swapped for the emulation's functions."""
    with open(TILES) as f:
        tiles = f.read()
    tiles = replace(tiles, "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800", "#if 0")
    tiles = replace(tiles, '#include "cuda/core/launch.cuh"', "")
    tiles = re.sub(r"// Grid of column tiles.*?\n}\n", "", tiles, flags=re.S)
    tiles = re.sub(r"// 1 when the current device runs cp.async.*?\n}\n", "", tiles, flags=re.S)
    with open(KERNEL) as f:
        kernel = f.read()
    start = kernel.index("namespace {")
    end = kernel.index("template <int BM, int WARPS, int BK, int STAGES>\nint launch_multistage")
    kernel = kernel[start:end] + "}  // namespace\n"
    kernel = replace(kernel, "extern __shared__ __align__(16) float stages[];",
                     "float *stages = emu_shared;")
    kernel = re.sub(r"__launch_bounds__\([^)]*\)", "", kernel)
    kernel = replace(kernel, "cp_async4(", "emu_cp_async4(")
    kernel = replace(kernel, "cp_async16(", "emu_cp_async16(")
    kernel = replace(kernel, "cp_async_commit()", "emu_commit()")
    kernel = re.sub(r"cp_async_wait<([^>]*)>\(\)", r"emu_wait(\1)", kernel)
    return tiles + "\n" + kernel


def configurations():
    sys.path.insert(0, ROOT)
    import gpulab as gl
    from gpulab.labs.linalg import matmul_configurations
    v = next(v for v in gl.variants("matmul") if v.name == "multistage")
    return [(kw["bm"], kw["warps"], kw["bk"], kw["stages"]) for kw in matmul_configurations(v)]


def main():
    cxx, include = host_toolchain.require()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "kernel_gen.inc"), "w") as f:
            f.write(kernel_source())
        with open(os.path.join(work, "configs.inc"), "w") as f:
            f.writelines(f"SUITE({bm}, {w}, {bk}, {st})\n" for bm, w, bk, st in configurations())
        shutil.copy(os.path.join(HERE, "multistage_host.cpp"), work)
        exe = os.path.join(work, "multistage_host")
        subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-w", f"-I{include}", f"-I{ROOT}",
                        f"-I{work}", f"-I{HERE}", os.path.join(work, "multistage_host.cpp"),
                        "-o", exe],
                       check=True)
        return subprocess.run([exe]).returncode


if __name__ == "__main__":
    sys.exit(main())
