"""Scan variant 5 side by side on the GPU: each given copy of cuda/scan/shuffle.cu is built (all
at once, with nvcc -arch=sm_90) beside a driver (scan_ab_main.cu) that runs, in one process, an
inclusive sum of 2^k float32 by variant 5 (glc_scan_shuffle), cub::DeviceScan::InclusiveSum on
the same data and a device-to-device cudaMemcpy of x (the copy ceiling), each timed by events
over 9 runs with the L2 flushed before each (medians), after one run of ours and of CUB checked
exactly against a host scan; then the same for int32 summed into int64. One line per (copy,
size): ms, GB/s (one read of x and one write of y) and the fraction of the copy's GB/s. The runs
alternate between the copies, twice, so that a drift of the clock shows. For trying a change to
variant 5 against the kernel before it (first used for the pipelined look-back:
docs/labs/scan.md); scan_lab.py is the benchmark of record.

    python3 tools/probe/scan_ab.py [--log2n 26 --log2n 28] [--int32-log2n 28] [NAME=PATH ...]

With no NAME=PATH, this tree's cuda/scan/shuffle.cu alone (as "tree"). The device machine has no
git: put another revision's file in the tree first (git show REV:cuda/scan/shuffle.cu > f).
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

import nvcc_driver

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def build(name, source, work):
    """The driver linked with one shuffle.cu; returns (name, executable or None, log)."""
    return nvcc_driver.build(name, work, "scan", [
        os.path.join(HERE, "scan_ab_main.cu"), source,
        os.path.join(ROOT, "cuda", "scan", "one_block.cu")])


def cases(args):
    """(log2n, dtype) in the order they run: the float32 sizes, then the int32 ones."""
    return [(k, "f32") for k in args.log2n] + [(k, "i32") for k in args.int32_log2n]


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2n", type=int, action="append",
                        help="log2 of the float32 elements (repeat it; default 26 and 28)")
    parser.add_argument("--int32-log2n", type=int, action="append",
                        help="log2 of the int32 elements summed into int64 (repeat it; default "
                             "28; 0 for none)")
    parser.add_argument("sources", nargs="*", metavar="NAME=PATH")
    args = parser.parse_args(argv)
    args.log2n = args.log2n or [26, 28]
    args.int32_log2n = [k for k in (args.int32_log2n or [28]) if k > 0]
    for k in args.log2n + args.int32_log2n:
        if not 1 <= k <= 30:
            parser.error(f"log2n {k}: from 1 to 30 (2^30 int32 and their int64 sums take 12 GiB)")
    args.sources = [s.split("=", 1) if "=" in s else ("", s) for s in args.sources] or [
        ("tree", os.path.join(ROOT, "cuda", "scan", "shuffle.cu"))]
    names = [name for name, _ in args.sources]
    for name, path in args.sources:
        if not name or not os.path.isfile(path):
            parser.error(f"{name}={path}: not a name and a file")
        if "/" in name or names.count(name) > 1:
            parser.error(f"{name}: names must be distinct and without '/' (each is an "
                         "executable's name)")
    return args


def main(argv):
    args = parse(argv)
    failed = False
    with tempfile.TemporaryDirectory() as work:
        with concurrent.futures.ThreadPoolExecutor(len(args.sources)) as pool:
            built = list(pool.map(lambda s: build(s[0], s[1], work), args.sources))
        for name, exe, log in built:
            if exe is None:
                print(f"{name}: build failed\n{log[-2000:]}")
                failed = True
        for log2n, dtype in cases(args):
            for _ in range(2):
                for name, exe, _log in built:
                    if exe is not None:
                        failed |= subprocess.run([exe, str(log2n), dtype, name]).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
