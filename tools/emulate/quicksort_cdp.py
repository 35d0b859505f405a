"""Runs the sort lab's quicksort with dynamic parallelism (variant 6 of sort, argsort and
sort_pairs: cuda/sort/quicksort_cdp.cu) on the CPU: its kernels, its host code and its tree of
device-side launches, through sort_host.cpp's block emulation and the device runtime that
quicksort_cdp_host.cpp adds (child grids queued and run after their parent block, in a random
order, before the host launch returns; the pending-launch pool and the nesting limit). Every key
dtype, keys alone, argsort and values, both directions, random, sorted, reversed, all-equal and
few-distinct keys, sizes around the shared-memory sort's limit and the tile, the depth limit hit
and launches that fail, bit for bit against a stable sort. Needs g++ (C++20) and the CUDA headers;
exits non-zero when a result is wrong.

    python3 tools/emulate/quicksort_cdp.py [--source FILE] [--first]

--source runs another copy of quicksort_cdp.cu (a planted bug); --first stops at the first wrong
sort.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(ROOT, "cuda", "sort", "quicksort_cdp.cu")
NAMESPACE = "namespace quicksort_cdp {"
# kernel<T><<<grid, block, shared, stream>>>(args...)
DEVICE_LAUNCH = re.compile(r"([A-Za-z_]\w*(?:<[^<>;()]*>)?)\s*<<<([^;]*?)>>>\s*\(")


def kernel_source(path):
    """The file from its namespace to its end, each launch from the device made a call of
    emu_device_launch (g++ has no <<< >>>) and each __shared__ variable the running block's
    copy."""
    with open(path) as f:
        text = f.read()
    if NAMESPACE not in text:
        sys.exit(f"emulate: {path} has no `{NAMESPACE}` any more: update tools/emulate")
    text, launches = DEVICE_LAUNCH.subn(r"emu_device_launch(\1, \2, ", text[text.index(NAMESPACE):])
    if launches == 0:
        sys.exit(f"emulate: {path} launches nothing from the device any more: update tools/emulate")
    return host_toolchain.per_block_shared(text)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", default=SOURCE)
    parser.add_argument("--first", action="store_true")
    args = parser.parse_args(argv)
    cxx, include = host_toolchain.require()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "quicksort_cdp_gen.inc"), "w") as f:
            f.write(kernel_source(args.source))
        for name in ("sort_host.cpp", "quicksort_cdp_host.cpp"):
            shutil.copy(os.path.join(HERE, name), work)
        exe = os.path.join(work, "quicksort_cdp_host")
        # -U_FORTIFY_SOURCE: sort_host.cpp's fibers switch stacks with _longjmp, which a
        # fortified build refuses (as sort.py says)
        subprocess.run([cxx, "-std=c++20", "-O1", "-U_FORTIFY_SOURCE", "-pthread", "-w",
                        f"-I{include}", *host_toolchain.cccl_flags(include), f"-I{ROOT}",
                        f"-I{work}", f"-I{HERE}", os.path.join(work, "quicksort_cdp_host.cpp"),
                        "-o", exe], check=True)
        try:
            code = subprocess.run([exe, *(["first"] if args.first else [])],
                                  timeout=600).returncode
        except subprocess.TimeoutExpired:
            print("emulate: FAIL: the emulation ran past its time")
            return 1
        if code < 0:  # a record never written (poison) names an index far outside every buffer
            print(f"emulate: FAIL: the emulation died of signal {-code} (a wild access)")
            return 1
        return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
