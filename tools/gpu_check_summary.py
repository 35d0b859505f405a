"""Writes gpu_check.json from the logs of tools/gpu-check.sh: each step's verdict, the test counts,
the sanitizer summaries of every driver under every tool, the fuzz and the planted bugs, and the
device, driver and commit they were taken on.

    python3 tools/gpu_check_summary.py LOG_DIR OUT_FILE [STEPS...]
"""

import datetime
import glob
import json
import os
import re
import sys


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def last(pattern, text, default=None):
    found = re.findall(pattern, text, re.M)
    return found[-1] if found else default


def sanitizers(log_dir):
    """{tool: {driver: {summary, calls, driver_said, finished}}} from
    sanitize-<tool>-<driver>.log, or from its shards' sanitize-<tool>-<driver>.<k>.log: their
    summaries and what the driver said in shard order, their calls summed (None if a shard did
    not finish), and how many runs (1, or each shard) reached the sanitizer's summary."""
    out = {}
    paths = glob.glob(os.path.join(log_dir, "sanitize-*.log"))
    for path in sorted(paths, key=lambda p: [int(t) if t.isdigit() else t
                                             for t in re.split(r"(\d+)", p)]):
        tool, driver = os.path.basename(path)[len("sanitize-"):-len(".log")].split("-", 1)
        driver, _, shard = driver.partition(".")
        text = read(path)
        calls = last(r"(\d+) CUDA calls checked", text)
        said = last(r"^(sanitize/\S+: .*)$", text)
        entry = out.setdefault(tool, {}).setdefault(
            driver, {"summary": [], "calls": 0, "driver_said": None if shard else said,
                     "finished": 0})
        summary = [l.strip("= ").strip() for l in text.splitlines() if "SUMMARY" in l]
        entry["summary"] += summary
        entry["finished"] += bool(summary)
        entry["calls"] = entry["calls"] + int(calls) if calls and entry["calls"] is not None \
            else None
        if shard:
            entry["shards"] = entry.get("shards", 0) + 1
            entry["driver_said"] = (entry["driver_said"] or []) + [said]
    return out


def main(log_dir, out_file, steps_run):
    steps = {}
    for line in read(os.path.join(log_dir, "steps.txt")).splitlines():
        m = re.match(r"(PASS|FAIL) (\S+) \((\d+) s\)", line)
        if m:
            steps[m.group(2)] = {"verdict": m.group(1), "seconds": int(m.group(3))}
    smi = read(os.path.join(log_dir, "nvidia-smi.txt"))
    gpu = re.findall(r"\|\s+\d+\s+(NVIDIA[^|]*?)\s{2,}", smi)
    result = {
        "meta": {"timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                 "commit": os.environ.get("GPULAB_COMMIT"), "device": gpu[0] if gpu else None,
                 "driver": last(r"Driver Version: (\S+)", smi),
                 "settings": "tools/gpu-check.sh " + " ".join(steps_run)},
        "results": {
            "steps": steps,
            "pytest": last(r"^=*\s*(\d+ passed.*?) in [\d.]+s", read(
                os.path.join(log_dir, "pytest.log"))),
            "sanitizers": sanitizers(log_dir),
            "fuzz": last(r"^(fuzz_ops: .*)$", read(os.path.join(log_dir, "fuzz.log"))),
            "mutation": last(r"^(mutation_check: .*)$", read(os.path.join(log_dir,
                                                                          "mutation.log"))),
        },
    }
    with open(out_file, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
