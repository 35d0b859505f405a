"""Writes gpu_check.json from the logs of tools/gpu-check.sh: each step's verdict, the test
counts, the sanitizer summaries, and the device, driver and commit they were taken on.

    python3 tools/gpu_check_summary.py LOG_DIR OUT_FILE
"""

import datetime
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


def main(log_dir, out_file):
    summary = read(os.path.join(log_dir, "summary.txt")).splitlines()
    steps = {}
    for line in summary:
        m = re.match(r"(PASS|FAIL) (\S+) \((\d+) s\)", line)
        if m:
            steps[m.group(2)] = {"verdict": m.group(1), "seconds": int(m.group(3))}
    pytest_log = read(os.path.join(log_dir, "pytest.log"))
    counts = re.findall(r"^=*\s*(\d+ passed.*?) in [\d.]+s", pytest_log, re.M)
    sanitizers = {}
    # sanitize_all.py (every op's variants), sanitize_nbody.py (every n-body tunable, step and
    # energy), sanitize_labs.py (the memory and streams lab kernels)
    for script in ("", "nbody-", "labs-"):
        for tool in ("memcheck", "racecheck", "synccheck"):
            text = read(os.path.join(log_dir, f"sanitizer-{script}{tool}.log"))
            lines = [l.strip("= ").strip() for l in text.splitlines() if "SUMMARY" in l]
            checked = re.findall(r"(\d+) [\w -]*calls checked", text)
            if lines or checked:
                sanitizers[script + tool] = {"summary": lines,
                                             "calls": int(checked[0]) if checked else None}
    smi = read(os.path.join(log_dir, "nvidia-smi.txt"))
    driver = re.findall(r"Driver Version: (\S+)", smi)
    gpu = re.findall(r"\|\s+\d+\s+(NVIDIA[^|]*?)\s{2,}", smi)
    result = {
        "meta": {"timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                 "commit": os.environ.get("GPULAB_COMMIT"), "device": gpu[0] if gpu else None,
                 "driver": driver[0] if driver else None,
                 "settings": "tools/gpu-check.sh " + " ".join(sys.argv[3:])},
        "results": {"steps": steps, "pytest": counts[-1] if counts else None,
                    "sanitizers": sanitizers},
    }
    with open(out_file, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
