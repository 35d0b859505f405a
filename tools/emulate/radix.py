"""Runs the LSD radix sort's own source on the CPU (variant 1 of sort, argsort and sort_pairs):
radix.cu's kernels and its host code, the passes and their buffers included, through the host
emulation in radix_host.cpp, for every key dtype, both digit widths, keys alone, argsort, 4- and
8-byte values, ascending and descending, at sizes that leave a last block ending mid-round: a
check of its indexing, its guards, its scan and its stability, for machines without a GPU. Needs
g++ (C++20) and the CUDA headers; exits non-zero when a result is wrong.

    python3 tools/emulate/radix.py [radix.cu]     # another copy of the source (a planted bug)
"""

import os
import shutil
import subprocess
import sys
import tempfile

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(ROOT, "cuda", "sort", "radix.cu")


def kernel_source(path=KERNEL):
    """radix.cu from its anonymous namespace to its end: everything but its includes."""
    with open(path) as f:
        text = f.read()
    if "namespace {" not in text:
        sys.exit("emulate: radix.cu has no anonymous namespace any more: update tools/emulate")
    return text[text.index("namespace {"):]


def main(kernel=KERNEL):
    cxx, include = host_toolchain.require()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "kernel_gen.inc"), "w") as f:
            f.write(kernel_source(kernel))
        shutil.copy(os.path.join(HERE, "radix_host.cpp"), work)
        exe = os.path.join(work, "radix_host")
        subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-w", f"-I{include}", f"-I{ROOT}",
                        f"-I{work}", f"-I{HERE}", os.path.join(work, "radix_host.cpp"), "-o",
                        exe], check=True)
        try:
            # a lane that leaves before its warp's match or shuffle waits forever at the barrier
            return subprocess.run([exe], timeout=500).returncode
        except subprocess.TimeoutExpired:
            print("emulate: the kernel hung (a lane missing from a warp's intrinsic?)")
            return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
