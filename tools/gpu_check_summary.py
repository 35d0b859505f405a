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
    """{tool: {driver: {summary, calls}}} from sanitize-<tool>-<driver>.log."""
    out = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "sanitize-*.log"))):
        tool, driver = os.path.basename(path)[len("sanitize-"):-len(".log")].split("-", 1)
        text = read(path)
        calls = last(r"(\d+) CUDA calls checked", text)
        out.setdefault(tool, {})[driver] = {
            "summary": [l.strip("= ").strip() for l in text.splitlines() if "SUMMARY" in l],
            "calls": int(calls) if calls else None,
            "driver_said": last(r"^(sanitize/\S+: .*)$", text)}
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
