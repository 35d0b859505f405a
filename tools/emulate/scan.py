"""Runs scan variant 5's own kernel on the CPU (decoupled_lookback in cuda/scan/shuffle.cu, on
its own tile shape: 256 threads x 9 rounds where input and accumulator are 4 bytes, 256 x 6 for
int32 sums into int64, 256 x 4 otherwise) through the host emulation in scan_host.cpp, twice:
the tile copied into shared memory in bulk by thread 0 (sm_90's way), then by each thread for its
own vectors (sm_80's). Each time float32, float64, int32 (max/min in int32, sums into int64) and
int64, sum, max and min, inclusive and exclusive, at 1 and 33 elements, a tile +-1, three tiles
+-1, seven tiles and fifty (sums), x and y on and off 16-byte boundaries, 3 blocks running at once
with some claims of a tile id stalled, so that look-backs meet predecessors that have published
nothing or only their aggregate. A check of the tile's indexing, copies, scan, look-back and
stores for machines without a GPU. Needs g++ (C++20) and the CUDA headers; exits non-zero when a
result is wrong.

    python3 tools/emulate/scan.py [--quick] [--part K/N] [shuffle.cu]

--part K/N: only the suites (a dtype and an operator each, 12 in all) whose index is K modulo N,
under both copies.
"""

import os
import sys

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(ROOT, "cuda", "scan", "shuffle.cu")
# the parts of shuffle.cu the kernels need: the tiles' loads and stores, and variant 5
PARTS = (("// ---- the tiles' loads and stores", "// ---- end of the tiles' loads and stores"),
         ("// ---- variant 5 (", "// ---- end of variant 5 ----"))


def kernel_source(path=KERNEL):
    """Variant 5's parts of shuffle.cu, each __shared__ variable a reference to the running
    block's slot of emu_shared (scan_host.cpp)."""
    return host_toolchain.kernel_parts(path, PARTS)


def main(*args):
    quick, part, paths = host_toolchain.emulator_args(args)
    failed = 0
    for copies, defines in (("bulk copy by thread 0", ()),
                            ("copies by each thread", ("EMU_STAGE_PER_THREAD",))):
        print(f"-- the tile into shared memory: {copies}", flush=True)
        failed |= host_toolchain.build_and_run("scan_host.cpp", kernel_source(*paths),
                                               (["quick"] if quick else []) + part,
                                               timeout=1800,
                                               defines=defines)
    return failed


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
