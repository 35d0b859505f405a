"""Draws a roofline (gpulab.roofline_model.points' RooflineTable) with matplotlib, on log-log axes:
slanted memory roofs, flat compute roofs and the main ridge point (named in a legend), and the
points, labelled where the labels do not overlap. Imported only when matplotlib is there."""

import math

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

# The roofs a point is held to (HBM copy, FP32 FMA) are drawn bold; the others (L2, FP64, the
# tensor cores') dashed or dotted, as the ceilings of data in cache, of float64 work and of the
# tensor-core work (float16, bfloat16, TF32).
ROOF_STYLES = {
    "copy_gbps": {"color": "#1f4e79", "lw": 2.4, "ls": "-"},
    "l2_copy_gbps": {"color": "#2e75b6", "lw": 1.4, "ls": "--"},
    "fma_gflops": {"color": "#8b1a1a", "lw": 2.4, "ls": "-"},
    "fma64_gflops": {"color": "#c55a11", "lw": 1.4, "ls": "--"},
    "tensor_f16_gflops": {"color": "#375623", "lw": 1.6, "ls": "--"},
    "tensor_bf16_gflops": {"color": "#70ad47", "lw": 1.4, "ls": ":"},
    "tensor_tf32_gflops": {"color": "#7030a0", "lw": 1.4, "ls": "-."},
}
POINT_MARKERS = {"float32": "o", "float64": "s", "float16": "D", "bfloat16": "v"}
# Where a label may go around its point (offset in points, alignment), in order of preference.
LABEL_SPOTS = [(dx, dy, "left" if dx > 0 else "right", "bottom" if dy > 0 else "top")
               for distance in (5, 16, 28, 40, 52) for dy in (distance, -distance)
               for dx in (6, -6)]
# More points than this are labelled op[id] alone (the table and gl.variants(op) give the
# names): a full ladder stacks a dozen points at one intensity.
FULL_LABELS_UP_TO = 10
# A label this far from its point gets a leader line back to it.
LEADER_POINTS = 20


def new_figure(width=8.5, height=5.8):
    """A Figure on the Agg canvas, outside pyplot: nothing global changes, nothing is shown
    twice in Jupyter, and it renders without a display."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def draw(tab, ax=None):
    """Draws tab's roofs and points into ax (or a new Figure); returns the Figure it made, or
    ax."""
    fig = None
    if ax is None:
        fig = new_figure()
        ax = fig.add_subplot()
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.1, top=0.92)
    roofs = tab.meta["roofs"]
    memory = [r for r in roofs if r["kind"] == "memory"]
    compute = [r for r in roofs if r["kind"] == "compute"]
    plotted = [row for row in tab if row["ai"] > 0 and row["gflops"] > 0]
    unplotted = [row for row in tab if row not in plotted]
    hbm, fp32 = memory[0]["value"], compute[0]["value"]
    ridge = fp32 / hbm

    x_lo, x_hi = _x_range([row["ai"] for row in plotted] + list(tab.meta["ridges"].values()))
    top, fastest = max(r["value"] for r in compute), max(r["value"] for r in memory)
    low = min([hbm * x_lo] + [row["gflops"] for row in plotted])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(low / 3, top * 4)

    for r in memory:  # slanted: up to where it meets the highest compute roof
        x_end = min(top / r["value"], x_hi)
        ax.plot([x_lo, x_end], [r["value"] * x_lo, r["value"] * x_end], **ROOF_STYLES[r["key"]],
                zorder=2, label=f"{r['name']} {_unit(r['value'], 'memory')}")
    for r in compute:  # flat: from where it meets the fastest memory roof
        ax.plot([r["value"] / fastest, x_hi], [r["value"]] * 2, **ROOF_STYLES[r["key"]], zorder=2,
                label=f"{r['name']} {_unit(r['value'], 'compute')}")
    ax.plot([ridge, ridge], [low / 3, fp32], color="#555555", lw=0.9, ls=":", zorder=1,
            label=f"ridge {ridge:.3g} flop/B ({compute[0]['name']} / {memory[0]['name']})")
    # the roofs are named in a legend, in the upper left, which a roofline leaves empty: a
    # label along a slanted roof would sit on the memory-bound points, which hug it
    ax.legend(loc="upper left", fontsize=8, framealpha=0.95)

    colors = {}
    for row in plotted:
        color = colors.setdefault(row["op"], f"C{len(colors) % 10}")
        ax.scatter([row["ai"]], [row["gflops"]], s=46, color=color, edgecolor="black",
                   linewidth=0.6, marker=POINT_MARKERS.get(row["dtype"], "^"), zorder=4)
    full = len(plotted) <= FULL_LABELS_UP_TO
    _label_points(ax, plotted, colors,
                  [row["label"] if full else f"{row['op']}[{row['variant']}]" for row in plotted])
    if unplotted:
        lines = [f"{row['label']}: {row['gbps']:.4g} GB/s, {row['fraction']:.2f} of copy"
                 for row in unplotted]
        ax.text(0.99, 0.02, "No flops, so not on the log axis:\n" + "\n".join(lines),
                transform=ax.transAxes, ha="right", va="bottom", fontsize=8,
                bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#999999"})

    ax.set_xlabel("Arithmetic intensity (flop/byte, from each op's cost model)")
    ax.set_ylabel("Performance (GFLOP/s)")
    ax.set_title(f"Roofline: {tab.meta['device']} ({tab.meta['where']})", fontsize=11)
    ax.grid(True, which="major", color="#dddddd", lw=0.6, zorder=0)
    return fig if fig is not None else ax


def _x_range(values):
    """Decades around every intensity and ridge, at least 0.01 to 1000 flop/B (S4's VADD and
    GEMM both fall inside)."""
    lo = min([0.01] + [v / 3 for v in values if v > 0])
    hi = max([1000.0] + [v * 3 for v in values])
    return 10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi))


def _unit(value, kind):
    if kind == "memory":
        return f"{value / 1e3:.3g} TB/s" if value >= 1e3 else f"{value:.3g} GB/s"
    return f"{value / 1e3:.3g} TFLOP/s" if value >= 1e3 else f"{value:.3g} GFLOP/s"


def _renderer(fig):
    try:
        return fig.canvas.get_renderer()
    except AttributeError:  # a canvas without one (some interactive backends): no avoidance
        return None


def _overlap(a, b):
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width * height if width > 0 and height > 0 else 0.0


def _label_points(ax, rows, colors, labels):
    """Puts each row's label by its point, at the first of LABEL_SPOTS where it overlaps no
    earlier label, point, line or the legend and stays in the axes (else at the spot that
    overlaps least)."""
    renderer = _renderer(ax.figure)
    frame = ax.get_window_extent(renderer) if renderer is not None else None
    taken = []
    if renderer is not None:  # each marker, the legend and the roofs' lines are in the way
        for row in rows:
            x, y = ax.transData.transform((row["ai"], row["gflops"]))
            taken.append(Bbox.from_bounds(x - 4, y - 4, 8, 8))
        legend = ax.get_legend()
        if legend is not None:
            taken.append(legend.get_window_extent(renderer))
        taken += _line_boxes(ax)
    for row, label in sorted(zip(rows, labels), key=lambda p: (p[0]["ai"], p[0]["gflops"])):
        best, best_cost = None, None
        for dx, dy, ha, va in LABEL_SPOTS:
            far = max(abs(dx), abs(dy)) >= LEADER_POINTS
            text = ax.annotate(label, (row["ai"], row["gflops"]), xytext=(dx, dy),
                               textcoords="offset points", ha=ha, va=va, fontsize=7.5,
                               color=colors[row["op"]], zorder=5,
                               arrowprops={"arrowstyle": "-", "color": "#888888", "lw": 0.5,
                                           "shrinkA": 1, "shrinkB": 4} if far else None)
            if renderer is None:
                best = text
                break
            box = text.get_window_extent(renderer)
            outside = box.width * box.height - _overlap(box, frame)
            cost = sum(_overlap(box, other) for other in taken) + 4 * outside
            if best_cost is None or cost < best_cost:
                if best is not None:
                    best.remove()
                best, best_cost, best_box = text, cost, box
            else:
                text.remove()
            if cost == 0:
                break
        if renderer is not None:
            taken.append(best_box)


def _line_boxes(ax, step=6.0):
    """Small boxes every `step` pixels along each line drawn in ax, so that a label that
    would cross a roof counts as overlapping it."""
    boxes = []
    for line in ax.get_lines():
        xy = ax.transData.transform(list(zip(*line.get_data())))
        for (x0, y0), (x1, y1) in zip(xy[:-1], xy[1:]):
            n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
            boxes += [Bbox.from_bounds(x0 + (x1 - x0) * i / n - 1.5, y0 + (y1 - y0) * i / n - 1.5,
                                       3, 3) for i in range(n + 1)]
    return boxes
