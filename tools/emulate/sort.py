"""Runs the sort lab's own kernels on the CPU: the LSD radix sort (variant 1 of sort, argsort and
sort_pairs), the bitonic network (variant 0), the merge-path merge sort (variant 3), the
onesweep radix sort (variant 4) and the quicksort (variant 5): their kernels and host code,
passes, stages and buffers included, through the host emulation in sort_host.cpp, for every key
dtype, both digit widths, keys alone, argsort, 4- and 8-byte values, ascending and descending, at
sizes that leave a last radix block ending mid-round, a network with global steps, merge passes
over odd numbers of runs and onesweep tiles over two waves of blocks that run at once (the
look-back meets predecessors with nothing or only an aggregate published), and onesweep on keys
that differ in some bytes only (the passes of the others skipped on the device: all skipped and
the inputs copied, one pass from the inputs to the outputs, an even and an odd number of passes;
with at most one pass to run its spare buffers must stay unwritten): a check of their indexing,
guards, scan, look-back, routes and stability, for machines without a GPU. The quicksort runs
on random, sorted, reversed, all-equal and few-distinct keys with the float specials, at sizes of
one, two, a leaf +-1 and several levels, and once with a level limit of 1 and 2 so that its
merge-sort fallback runs too. Needs g++ (C++20) and the CUDA headers; exits non-zero when a
result is wrong.

    python3 tools/emulate/sort.py [--only radix|bitonic|merge|onesweep|quicksort] [--radix FILE]
        [--bitonic FILE] [--merge FILE] [--onesweep FILE] [--quicksort FILE]

--radix, --bitonic, --merge, --onesweep and --quicksort run other copies of the sources (a
planted bug).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import host_toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SORT = os.path.join(ROOT, "cuda", "sort")


def kernel_source(path):
    """A kernel file from its anonymous namespace to its end: everything but its includes."""
    with open(path) as f:
        text = f.read()
    if "namespace {" not in text:
        sys.exit(f"emulate: {path} has no anonymous namespace any more: update tools/emulate")
    return text[text.index("namespace {"):]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--radix", default=os.path.join(SORT, "radix.cu"))
    parser.add_argument("--bitonic", default=os.path.join(SORT, "bitonic.cu"))
    parser.add_argument("--merge", default=os.path.join(SORT, "merge.cu"))
    parser.add_argument("--onesweep", default=os.path.join(SORT, "onesweep.cu"))
    parser.add_argument("--quicksort", default=os.path.join(SORT, "quicksort.cu"))
    parser.add_argument("--only", default="all",
                        choices=("radix", "bitonic", "merge", "onesweep", "quicksort", "all"))
    args = parser.parse_args(argv)
    cxx, include = host_toolchain.require()
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "kernel_gen.inc"), "w") as f:
            f.write(host_toolchain.per_block_shared("\n".join(
                kernel_source(path) for path in (args.radix, args.bitonic, args.merge,
                                                 args.onesweep, args.quicksort))))
        shutil.copy(os.path.join(HERE, "sort_host.cpp"), work)
        exe = os.path.join(work, "sort_host")
        # -U_FORTIFY_SOURCE: a fortified _longjmp refuses the jump between fiber stacks.
        subprocess.run([cxx, "-std=c++20", "-O1", "-U_FORTIFY_SOURCE", "-pthread", "-w",
                        f"-I{include}", *host_toolchain.cccl_flags(include), f"-I{ROOT}",
                        f"-I{work}", f"-I{HERE}", os.path.join(work, "sort_host.cpp"), "-o",
                        exe], check=True)
        try:
            return subprocess.run([exe, args.only], timeout=500).returncode
        except subprocess.TimeoutExpired:
            print("emulate: FAIL: the emulation ran past its time")
            return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
