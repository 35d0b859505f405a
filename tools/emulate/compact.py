"""Runs the staged compaction kernels' own source on the CPU (variants 3 and 4 of compact and
nonzero, cuda/scan/compact.cu; variant 4's count scanned on the host; and count_true, the
binding's sizing pass) through the host emulation in compact_host.cpp: every dtype, with a mask,
without one (x != 0) and nonzero, over one tile and several, their sizes +-1, masks keeping
nothing, everything, one element or a random share, with x, the mask and the result on and off
16-byte boundaries, the look-back across blocks that run at once. A check of its flags, block
scan, staging and write-out for machines without a GPU. Needs g++ (C++20) and the CUDA headers;
exits non-zero when a result is wrong.

    python3 tools/emulate/compact.py [--quick] [compact.cu]
"""

import os
import shutil
import subprocess
import sys
import tempfile

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
    """Variants 3 and 4's parts of compact.cu, each __shared__ variable a reference to the running
    block's slot of emu_shared (compact_host.cpp)."""
    with open(path) as f:
        text = f.read()
    parts = []
    for start, end in PARTS:
        if start not in text or end not in text:
            sys.exit(f"emulate: {start!r} or {end!r} is no longer in compact.cu: update "
                     "tools/emulate")
        parts.append(text[text.index(start):text.index(end)])
    return host_toolchain.per_block_shared("\n".join(parts))


def main(*args):
    quick = "--quick" in args
    paths = [a for a in args if a != "--quick"]
    cxx, include = host_toolchain.require()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "kernel_gen.inc"), "w") as f:
            f.write(kernel_source(*paths))
        shutil.copy(os.path.join(HERE, "compact_host.cpp"), work)
        exe = os.path.join(work, "compact_host")
        cccl = host_toolchain.cccl_flags(include)  # tile.cuh's <cuda/atomic>
        subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-w", f"-I{include}", *cccl,
                        f"-I{HERE}", f"-I{ROOT}", f"-I{work}",
                        os.path.join(work, "compact_host.cpp"), "-o", exe], check=True)
        try:
            # a thread that misses a barrier or a warp collective hangs its block
            return subprocess.run([exe] + (["quick"] if quick else []), timeout=900).returncode
        except subprocess.TimeoutExpired:
            print("emulate: the kernel hung (a thread missing from a barrier or a collective?)")
            return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
