"""The multi lab's committed results as tables and one figure: all-reduce
bus bandwidth against torch.distributed, Jacobi strong speedup and weak efficiency, and where a
sweep's time goes. Reads benchmarks/results/multi_*.json; needs no GPU. notebooks/multi_gpu.ipynb
imports it; run alone it writes multi_scaling.png (or --out).

    python3 benchmarks/plot_multi.py [--out multi_scaling.png]
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
MIB = 1 << 20
# The untagged files are 2-GPU runs, the _x4 files 4 GPUs of the same kind.
ALLREDUCE = {2: "multi_allreduce.json", 4: "multi_allreduce_x4.json"}
STRONG = ["multi_jacobi.json", "multi_jacobi_x4_strong.json"]
# x4_weak2d was measured alone; x4_weak beside a pytest shard on GPU 0 (its note): its 3D rows
WEAK = ["multi_jacobi.json", "multi_jacobi_x4_weak.json", "multi_jacobi_x4_weak2d.json"]


def _load(name, folder):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def load(folder=RESULTS):
    """{"allreduce": {gpus: results}, "strong": rows, "weak": rows, "reduce": results or None,
    "device": str}; Jacobi rows of a later file replace an earlier one's with the same
    (dim, mode, exchange, overlap, gpus, problem)."""
    data = {"allreduce": {}, "strong": [], "weak": [], "reduce": None, "device": None}
    for gpus, name in ALLREDUCE.items():
        got = _load(name, folder)
        if got:
            data["allreduce"][gpus] = got["results"]
            data["device"] = data["device"] or got["meta"].get("device")
    for mode, names in (("strong", STRONG), ("weak", WEAK)):
        rows = {}
        for name in names:
            got = _load(name, folder)
            for r in (got or {}).get("results", []):
                if r["mode"] == mode:
                    key = (r["dim"], r["exchange"], r["overlap"], r["gpus"], tuple(r["problem"]))
                    rows[key] = r
        data[mode] = list(rows.values())
    got = _load("multi_reduce_x4.json", folder)
    data["reduce"] = got["results"] if got else None
    return data


def base_size(row):
    """The grid of a strong row; one GPU's share of a weak row."""
    shape = list(row["problem"])
    if row["mode"] == "weak":
        shape[0] //= row["gpus"]
    return "x".join(str(n) for n in shape)


def short(row):
    """16384x16384 -> 16384^2, 512x512x512 -> 512^3 (square and cubic grids; others as they are)."""
    shape = base_size(row).split("x")
    return f"{shape[0]}^{len(shape)}" if len(set(shape)) == 1 else "x".join(shape)


def series(rows, key):
    """{(grid, exchange): [(gpus, key)]} of the overlapped rows, sorted by GPU count."""
    out = {}
    for r in rows:
        if r["overlap"]:
            out.setdefault((base_size(r), r["exchange"]), []).append((r["gpus"], r[key]))
    return {k: sorted(v) for k, v in sorted(out.items())}


def tables(data):
    """The figures as text, for a machine without matplotlib."""
    lines = []
    for gpus, res in sorted(data["allreduce"].items()):
        for mode in ("one_process", "one_process_per_gpu"):
            ratios = res.get(f"{mode}_vs_torch") or []
            sizes = [row["bytes"] // MIB for row in res[mode]]
            lines.append(f"all-reduce {gpus} GPUs, {mode} / torch: " + ", ".join(
                f"{s} MiB {r:.3f}" for s, r in zip(sizes, ratios)))
    for mode, key in (("strong", "speedup"), ("weak", "efficiency")):
        for (grid, exchange), points in series(data[mode], key).items():
            lines.append(f"Jacobi {mode} {grid} {exchange}: " + ", ".join(
                f"{n} GPU {v:.3f}" for n, v in points))
    if data["reduce"]:
        for mode in ("weak", "strong"):
            lines.append(f"partitioned reduce {mode}: " + ", ".join(
                f"{r['gpus']} GPU {r['total_ms']:.3f} ms (E {r['efficiency']:.3f})"
                for r in data["reduce"][mode]))
    return "\n".join(lines)


def figure(data):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    ax = axes[0, 0]
    for gpus, res in sorted(data["allreduce"].items()):
        style = "-" if gpus == 2 else "--"
        for mode, label in (("one_process", "gpulab, one process"),
                            ("one_process_per_gpu", "gpulab, process per GPU"),
                            ("torch_distributed", "torch.distributed")):
            rows = res.get(mode)
            if isinstance(rows, list):
                ax.plot([r["bytes"] / MIB for r in rows], [r["bus_gbps"] for r in rows],
                        style, marker="o", ms=3, label=f"{label} ({gpus} GPUs)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("MiB (float32 sum)")
    ax.set_ylabel("bus bandwidth GB/s")
    ax.set_title("all-reduce (NCCL underneath all three)")
    ax.legend(fontsize=7)
    for ax, mode, key in ((axes[0, 1], "strong", "speedup"), (axes[1, 0], "weak", "efficiency")):
        top = 1
        for (grid, exchange), points in series(data[mode], key).items():
            ax.plot([n for n, _ in points], [v for _, v in points],
                    "-" if exchange == "p2p" else "--", marker="o", label=f"{grid} {exchange}")
            top = max(top, max(n for n, _ in points))
        ideal = list(range(1, top + 1))
        ax.plot(ideal, ideal if mode == "strong" else [1] * len(ideal), "k:", label="ideal")
        if mode == "weak":
            ax.axhline(0.9, color="r", lw=0.8, label="target 0.9")
            ax.set_ylim(0.8, 1.02)
        ax.set_xticks(ideal)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("S(N) = T(1)/T(N)" if mode == "strong" else "E(N) = T(1)/T(N)")
        ax.set_title(f"Jacobi {mode} scaling, overlap on")
        ax.legend(fontsize=7)
    ax = axes[1, 1]
    rows = sorted((r for r in data["strong"] if r["overlap"] and r["exchange"] == "p2p"),
                  key=lambda r: (r["dim"], tuple(r["problem"]), r["gpus"]))
    one = {tuple(r["problem"]): r["total_ms"] for r in rows if r["gpus"] == 1}
    rows = [r for r in rows if r["gpus"] > 1 and tuple(r["problem"]) in one]
    labels = [f"{short(r)}\n{r['gpus']} GPUs" for r in rows]
    ideal = [one[tuple(r["problem"])] / r["gpus"] for r in rows]
    compute = [r["compute_ms"] / t for r, t in zip(rows, ideal)]
    exposed = [(r.get("exposed_ms") or 0.0) / t for r, t in zip(rows, ideal)]
    ax.bar(labels, compute, label="compute (slowest GPU's sweeps)")
    ax.bar(labels, exposed, bottom=compute, label="exposed (total - compute)")
    ax.axhline(1.0, color="k", ls=":", label="ideal T(1)/N")
    ax.set_ylabel("time over the ideal T(1)/N")
    ax.set_title("strong scaling, p2p: where the time over ideal goes")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7)
    fig.suptitle(f"gpulab multi lab on {data['device'] or 'the lent GPUs'} (2 and 4 of one host)")
    fig.tight_layout()
    return fig


def main():
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="multi_scaling.png")
    args = parser.parse_args()
    data = load()
    print(tables(data))
    figure(data).savefig(args.out, dpi=110)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
