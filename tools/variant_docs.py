"""Writes docs/variants.md from the variant registry (the C tables in csrc/labs/<lab>/variants.c),
so that the docs never copy the table by hand. tests/core/test_registry.py fails when the file is
stale.

    python3 tools/variant_docs.py           # rewrite docs/variants.md
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "docs", "variants.md")


def render():
    import gpulab as gl
    lines = ["# Variants", "",
             "Generated from the registry by `tools/variant_docs.py`; do not edit by hand.",
             "The same records come from `gl.variants()`.", ""]
    lab = None
    for op in gl.registry.ops():
        first = gl.variants(op)[0]
        if first.lab != lab:
            lab = first.lab
            lines += [f"## The {lab} lab", ""]
        lines += [f"### {op}", "",
                  "| id | name | backend | what it changes | seed | dtypes | tunables | kernels | "
                  "notes |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for v in gl.variants(op):
            tunables = "; ".join(f"{k}: {', '.join(map(str, t['values']))} "
                                 f"(default {t['default'] or '0: chosen per call'})"
                                 for k, t in v.tunables.items()) or "-"
            notes = ", ".join(n for n, on in (("best", v.best), ("deterministic", v.deterministic),
                                                   ("racy", v.racy))
                              if on) or "-"
            dtypes = ("; ".join(f"{mode}: {', '.join(d) or 'none'}" for mode, d in v.support.items())
                      if v.support else ", ".join(v.dtypes))
            kernels = ", ".join(f"`{k}`" + (" (some calls)" if k in v.sometimes else "")
                                for k in v.kernels) or "-"
            if v.library:
                kernels += f" (calls {v.library})"
            lines.append(f"| {v.id} | `{v.name}` | {v.backend} | {v.summary} | {v.seed} | "
                         f"{dtypes} | {tunables} | {kernels} | {notes} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, ROOT)  # document this tree's registry
    os.makedirs(os.path.dirname(PATH), exist_ok=True)
    with open(PATH, "w") as f:
        f.write(render())
    print(f"wrote {PATH}", file=sys.stderr)
