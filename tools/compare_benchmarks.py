"""Compares two sets of benchmark JSON taken in one run (tools/gpu-check.sh with GPULAB_BASELINE):
a baseline tree's and this tree's, file by file. Every timing that both hold at the same place
(median_ms of each bench record, the *_ms, *_us and *_gbps figures of the lab tables) gives a
ratio, after / before; gpulab's own timings are summarised apart from the peers' (CuPy,
PyTorch), whose code did not change, so that their spread shows the run's noise.

    python3 tools/compare_benchmarks.py BEFORE_DIR AFTER_DIR [--out FILE]
"""

import argparse
import glob
import json
import math
import os
import statistics
import sys

PEER_WORDS = ("cupy", "torch", "peer")
SKIPPED_FILES = ("gpu_check.json", "mutation_check.json", "move_comparison.json")


def timings(node, path=""):
    """{path: time-like value} of every timing leaf: keys median_ms, ms, *_ms, *_us, *_ns, and
    rates (*_gbps) as their inverse, so that every ratio reads the same way."""
    out = {}
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("meta", "samples"):
                continue
            child = f"{path}/{key}"
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if value <= 0 or key.startswith(("min_", "max_")):
                    continue
                if key in ("median_ms", "ms") or key.endswith(("_ms", "_us", "_ns")):
                    out[child] = float(value)
                elif key.endswith("_gbps"):
                    out[child] = 1.0 / float(value)
            else:
                out.update(timings(value, child))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.update(timings(value, f"{path}[{i}]"))
    return out


def is_peer(path):
    return any(word in path.lower() for word in PEER_WORDS)


def summary(ratios):
    if not ratios:
        return None
    logs = [math.log(r) for r in ratios]
    return {"count": len(ratios), "geomean": round(math.exp(statistics.fmean(logs)), 4),
            "median": round(statistics.median(ratios), 4), "min": round(min(ratios), 4),
            "max": round(max(ratios), 4)}


def compare(before_dir, after_dir):
    files = {}
    for before_path in sorted(glob.glob(os.path.join(before_dir, "*.json"))):
        name = os.path.basename(before_path)
        after_path = os.path.join(after_dir, name)
        if name in SKIPPED_FILES or not os.path.exists(after_path):
            continue
        with open(before_path) as f:
            before = timings(json.load(f).get("results"))
        with open(after_path) as f:
            after = timings(json.load(f).get("results"))
        common = sorted(set(before) & set(after))
        ours = {p: after[p] / before[p] for p in common if not is_peer(p)}
        peers = {p: after[p] / before[p] for p in common if is_peer(p)}
        worst = sorted(ours.items(), key=lambda kv: -abs(math.log(kv[1])))[:5]
        files[name] = {"gpulab": summary(list(ours.values())),
                       "peers": summary(list(peers.values())),
                       "largest_changes": [{"where": p, "after_over_before": round(r, 4),
                                            "before": before[p], "after": after[p]}
                                           for p, r in worst]}
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--out")
    args = parser.parse_args()
    files = compare(args.before, args.after)
    if not files:
        sys.exit("no benchmark JSON in common")
    for name, f in files.items():
        ours, peers = f["gpulab"], f["peers"]
        line = f"{name}: gpulab after/before"
        line += (f" geomean {ours['geomean']:.3f} (median {ours['median']:.3f}, "
                 f"{ours['min']:.3f}-{ours['max']:.3f}, {ours['count']} timings)") if ours else " -"
        if peers:
            line += (f"; peers {peers['geomean']:.3f} ({peers['min']:.3f}-{peers['max']:.3f}, "
                     f"{peers['count']})")
        print(line)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"meta": {"before": os.path.abspath(args.before),
                                "after": os.path.abspath(args.after),
                                "ratio": "after / before of each timing (lower is faster)"},
                       "results": files}, f, indent=1)


if __name__ == "__main__":
    main()
