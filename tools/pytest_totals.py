"""The totals of several pytest logs (the shards of one suite, tools/gpu-check.sh) as one pytest
summary line, which tools/gpu_check_summary.py reads like a single run's:

    python3 tools/pytest_totals.py pytest-0.log pytest-1.log ...
    ==== 3690 passed, 2 failed, 240 skipped in 412.3s (4 shards, the longest) ====
"""

import re
import sys

OUTCOMES = ("passed", "failed", "skipped", "deselected", "xfailed", "xpassed", "warnings",
            "errors")


def totals(texts):
    """{outcome: count} summed over the logs' last summary lines, and the longest duration."""
    counts, longest = dict.fromkeys(OUTCOMES, 0), 0.0
    for text in texts:
        lines = [line for line in text.splitlines()
                 if re.search(r"\d+ (passed|failed|errors?|skipped)\b.* in [\d.]+s", line)]
        if not lines:
            counts["errors"] += 1  # a shard that never finished counts as an error
            continue
        last = lines[-1]
        for number, word in re.findall(r"(\d+) (\w+)", last.split(" in ")[0]):
            word = {"error": "errors", "warning": "warnings"}.get(word, word)
            if word in counts:
                counts[word] += int(number)
        longest = max(longest, float(re.search(r" in ([\d.]+)s", last).group(1)))
    return counts, longest


def main(paths):
    texts = []
    for path in paths:
        with open(path, errors="replace") as f:
            texts.append(f.read())
    counts, longest = totals(texts)
    parts = [f"{n} {word}" for word, n in counts.items() if n or word == "passed"]
    print(f"==== {', '.join(parts)} in {longest:.2f}s ({len(paths)} shards, the longest) ====")


if __name__ == "__main__":
    main(sys.argv[1:])
