"""Onesweep side by side on the GPU: each given copy of cuda/sort/onesweep.cu is built (all at
once, with nvcc) beside a driver (onesweep_ab_main.cu) that sorts 2^k random int32 keys with it
and with cub::DeviceRadixSort::SortKeys in the same process, each timed by events over 9 runs
with the L2 flushed before each (medians), after one run of ours checked against std::sort (in
order and the same keys past 2^26). The runs alternate between the copies, twice, so that a
drift of the clock shows. For trying one change to variant 4 at a time against the one before
it (docs/labs/sort.md); sort_lab.py is the benchmark of record.

    python3 tools/probe/onesweep_ab.py [--log2n 26 --log2n 28] [NAME=PATH ...]

With no NAME=PATH, this tree's cuda/sort/onesweep.cu alone (as "tree"). The device machine has
no git: put another revision's file in the tree first (git show REV:cuda/sort/onesweep.cu > f).
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
    """The driver linked with one onesweep.cu; returns (name, executable or None, log)."""
    return nvcc_driver.build(name, work, "sort", [os.path.join(HERE, "onesweep_ab_main.cu"), source])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2n", type=int, action="append",
                        help="log2 of the keys (repeat it for several sizes; default 26)")
    parser.add_argument("sources", nargs="*", metavar="NAME=PATH")
    args = parser.parse_args(argv)
    args.log2n = args.log2n or [26]
    sources = [s.split("=", 1) for s in args.sources] or [
        ("tree", os.path.join(ROOT, "cuda", "sort", "onesweep.cu"))]
    for name, path in sources:
        if not name or not os.path.isfile(path):
            parser.error(f"{name}={path}: not a name and a file")
    failed = False
    with tempfile.TemporaryDirectory() as work:
        with concurrent.futures.ThreadPoolExecutor(len(sources)) as pool:
            built = list(pool.map(lambda s: build(s[0], s[1], work), sources))
        for name, exe, log in built:
            if exe is None:
                print(f"{name}: build failed\n{log[-2000:]}")
                failed = True
        for log2n in args.log2n:
            for _ in range(2):
                for name, exe, _log in built:
                    if exe is not None:
                        failed |= subprocess.run([exe, str(log2n), name]).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
