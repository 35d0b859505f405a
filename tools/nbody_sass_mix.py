"""Instruction mix of the n-body kernels' inner loops, from `cuobjdump -sass` output.

    cuobjdump -sass build/.../cuda_nbody_accel.cu.o > nbody.sass
    python3 tools/nbody_sass_mix.py nbody.sass

For each kernel, the innermost loop that holds the most MUFU.RSQ (one per interaction; one per
pair, two interactions, in variant 7's nbody_pairs) is the inner loop: its instructions divided
by its interactions give the issue slots per interaction, which bound the rate: an SM issues 4
warp instructions (128 thread instructions) per clock, and runs 128 FP32 lanes and 16 MUFU
lanes."""

import re
import sys
from collections import Counter

FUNCTION = re.compile(r"Function : (\S+)")
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
BRANCH_TARGET = re.compile(r"0x([0-9a-f]+)")


def kernels(text):
    """{demangled-ish name: [(address, opcode, operands)]}."""
    out, name = {}, None
    for line in text.splitlines():
        m = FUNCTION.search(line)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        m = INSTRUCTION.search(line)
        if m and name:
            out[name].append((int(m.group(1), 16), m.group(3), m.group(4)))
    return out


def inner_loop(code):
    """The instructions of the innermost backward-branch loop with the most MUFU.RSQ (a loop
    around it, such as variant 6's tile loop, also holds them, and so may the tile's own
    scaling loop, with fewer)."""
    loops = []
    for i, (addr, op, args) in enumerate(code):
        if not op.startswith("BRA"):
            continue
        t = BRANCH_TARGET.search(args)
        if not t or int(t.group(1), 16) > addr:
            continue
        target = int(t.group(1), 16)
        body = [c for c in code if target <= c[0] <= addr]
        if any(c[1].startswith("MUFU.RSQ") for c in body):
            loops.append((target, addr, body))
    innermost = [body for lo, hi, body in loops
                 if not any(lo <= lo2 and hi2 <= hi and (lo2, hi2) != (lo, hi)
                            for lo2, hi2, _ in loops)]
    return max(innermost, key=lambda body: sum(c[1].startswith("MUFU.RSQ") for c in body),
               default=[])


def short(name):
    m = re.search(r"(nbody_(?:naive_unrolled|naive|tiled_soa|tiled|multibody|scaled|pairs|sum_splits|"
                  r"energy_\w+?))(?:ILi(\d+)E(?:Li(\d+)E)?)?E", name)
    if not m:
        return name
    args = [a for a in m.group(2, 3) if a]
    return m.group(1) + (f"<{','.join(args)}>" if args else "")


KEYS = ["FFMA", "FMUL", "FADD", "MUFU.RSQ", "LDS", "LDG", "SHFL", "other"]


def interactions_per_rsqrt(name):
    """2 for nbody_pairs, whose rsqrt serves both bodies of a pair; 1 for the others."""
    return 2 if "nbody_pairs" in name else 1


def mix(body):
    counts = Counter()
    for _, op, _ in body:
        base = op.split(".")[0]
        key = "MUFU.RSQ" if op.startswith("MUFU.RSQ") else base if base in KEYS else "other"
        counts[key] += 1
    return counts


def main(path):
    with open(path) as f:
        text = f.read()
    print(f"{'kernel':34s} {'inter':>5s} " + " ".join(f"{k:>8s}" for k in KEYS) + "    slots")
    for name, code in kernels(text).items():
        body = inner_loop(code)
        rsq = sum(op.startswith("MUFU.RSQ") for _, op, _ in body)
        if not rsq:
            continue
        inter = rsq * interactions_per_rsqrt(name)
        c = mix(body)
        per = [c[k] / inter for k in KEYS]
        print(f"{short(name):34s} {inter:5d} " + " ".join(f"{p:8.2f}" for p in per)
              + f" {len(body) / inter:8.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
