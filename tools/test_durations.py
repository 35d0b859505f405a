"""Writes tests/durations.json from the GPU machine's pytest logs (tools/gpu-check.sh's test
step prints every test of 1 s or more): what tests/conftest.py's GPULAB_SHARD deals out by cost.

    python3 tools/test_durations.py LOG... [--out tests/durations.json]

"modules": a module whose setup took MODULE_SETUP_S or more (a module-scoped fixture, such as
the main job run once for all of test_cli.py's tests): its tests stay in one shard, which pays
the setup once. "tests": each other test's call, in seconds. The largest figure seen wins."""

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE_SETUP_S = 5.0
TEST_MIN_S = 1.0
LINE = re.compile(r"^([0-9.]+)s (setup|call|teardown)\s+(\S+)")


def durations(texts):
    modules, tests = {}, {}
    for text in texts:
        for line in text.splitlines():
            m = LINE.match(line)
            if not m:
                continue
            seconds, when, nodeid = float(m.group(1)), m.group(2), m.group(3)
            if when == "setup" and seconds >= MODULE_SETUP_S:
                module = nodeid.split("::")[0]
                modules[module] = max(modules.get(module, 0.0), seconds)
            elif when == "call" and seconds >= TEST_MIN_S:
                tests[nodeid] = max(tests.get(nodeid, 0.0), seconds)
    return {"modules": dict(sorted(modules.items())), "tests": dict(sorted(tests.items()))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "durations.json"))
    args = parser.parse_args(argv)
    texts = []
    for path in args.logs:
        with open(path, errors="replace") as f:
            texts.append(f.read())
    found = durations(texts)
    if not found["tests"]:
        sys.exit(f"no test durations in {args.logs}: were they run with --durations?")
    with open(args.out, "w") as f:
        json.dump(found, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(found['modules'])} modules, {len(found['tests'])} tests")


if __name__ == "__main__":
    main()
