"""Runs the staged compaction kernels' own source on the CPU (variants 3 and 4 of compact and
nonzero, cuda/scan/compact.cu; variant 4's count scanned on the host; and count_true, the
binding's sizing pass) through the host emulation in compact_host.cpp: every dtype, with a mask,
without one (x != 0) and nonzero, over one tile and several, their sizes +-1, masks keeping
nothing, everything, one element or a random share, with x, the mask and the result on and off
16-byte boundaries, the look-back across blocks that run at once. A check of its flags, block
scan, staging and write-out for machines without a GPU. Needs g++ (C++20) and the CUDA headers;
exits non-zero when a result is wrong.

    python3 tools/emulate/compact.py [--quick] [--part K/N] [compact.cu]

--part K/N: only the suites (a variant and a dtype each, 8 in all) whose index is K modulo N.
"""

import os
import sys

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(ROOT, "cuda", "scan", "compact.cu")
# the parts of compact.cu the kernels need: the look-back tiles' start and offset, and variants 3
# and 4
PARTS = (("// ---- the look-back tiles' start and offset", "// ---- end of the look-back tiles'"),
         ("// ---- variant 3, staged", "// ---- end of variant 3 ----"),
         ("// ---- variant 4, counted_staged", "// ---- end of variant 4 ----"),
         ("// ---- the binding's sizing pass", "// ---- end of the sizing pass"))


def kernel_source(path=KERNEL):
    """Variants 3 and 4's parts of compact.cu, each __shared__ variable a reference to the
    running block's slot of emu_shared (compact_host.cpp)."""
    return host_toolchain.kernel_parts(path, PARTS)


def main(*args):
    quick, part, paths = host_toolchain.emulator_args(args)
    return host_toolchain.build_and_run("compact_host.cpp", kernel_source(*paths),
                                        (["quick"] if quick else []) + part, timeout=900)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
