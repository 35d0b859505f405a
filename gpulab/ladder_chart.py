"""One op's ladder as a bar chart (the HTML report's): each variant's rate against the ceiling
that bounds the op where it ran, as the main job's tables print it: GB/s and fraction of the
copy rate for a memory-bound op, GFLOP/s and fraction of the FMA rate for a compute-bound one;
the peers (CuPy, PyTorch) as reference lines. Needs matplotlib."""

from .bench import format_fraction, format_rate
from .roofline_model import ROOF_KEYS, tensor_roof_key
from .roofline_plot import new_figure

BAR_COLORS = {"memory": "#7fa7cf", "compute": "#d99a8c"}
BEST_COLORS = {"memory": "#1f4e79", "compute": "#8b1a1a"}
PEER_STYLES = {"torch": {"color": "#6a3d9a", "ls": "--"}, "cupy": {"color": "#33a02c", "ls": ":"}}


def ceiling_of(result, ceil):
    """(name, rate, unit) of the ceiling that bounds result (a result dict) under ceil: for a
    compute-bound one, the tensor-core rate of its dtype (float16, bfloat16; TF32 for a matmul
    variant named tf32) where it was measured, FP64 FMA for float64, else FP32 FMA."""
    if result["bound"] == "compute":
        tensor = tensor_roof_key(result)
        if tensor and ceil.get(tensor):
            name = next(name for key, name, _ in ROOF_KEYS if key == tensor)
            return name, ceil[tensor], "GFLOP/s"
        if str(result.get("dtype")) == "float64" and ceil.get("fma64_gflops"):
            return "FP64 FMA", ceil["fma64_gflops"], "GFLOP/s"
        return "FP32 FMA", ceil["fma_gflops"], "GFLOP/s"
    return ("DRAM copy" if ceil.get("where") == "cpu" else "HBM copy"), ceil["copy_gbps"], "GB/s"


def rate_of(result):
    """The rate the chart shows for a result dict: GFLOP/s when compute-bound, else GB/s."""
    return result["gflops"] if result["bound"] == "compute" else result["gbps"]


def peer_rates(results):
    """{peer: rate} in the chart's unit, from the best variant's run (else the first run) that
    timed the peers: a peer did the same work, so its rate is the op's cost over its time."""
    timed = [r for r in results if r.get("peers")]
    if not timed:
        return {}
    source = next((r for r in timed if r.get("best")), timed[0])
    work = source["flops"] if source["bound"] == "compute" else source["bytes"]
    return {name: work / p["median_ms"] / 1e6 for name, p in sorted(source["peers"].items())}


def _bar_text(result, ceiling_name, ceiling_rate, unit):
    rate = rate_of(result)
    text = f"{format_rate(rate)} {unit} · {format_fraction(rate / ceiling_rate)} of {ceiling_name}"
    if result["bound"] == "compute" and result.get("unit"):
        text += f" · {format_rate(result['unit_rate'])} {result['unit']}"
    return text


def _panel(ax, title, results, ceil):
    """Draws one place's ladder into ax; returns a function that widens the x axis to fit
    the bars' texts, to call once the layout is done."""
    results = sorted(results, key=lambda r: r["variant"])
    name, ceiling, unit = ceiling_of(results[0], ceil)
    bound = results[0]["bound"]
    values = [rate_of(r) for r in results]
    peers = peer_rates(results)
    rows = range(len(results))
    colors = [BEST_COLORS[bound] if r.get("best") else BAR_COLORS[bound] for r in results]
    ax.barh(rows, values, color=colors, height=0.66, zorder=2)
    ax.set_yticks(list(rows), [f"{r['variant']} {r['variant_name']}" + (" (best)" if r.get("best")
                                                                          else "")
                               for r in results], fontsize=8.5)
    ax.invert_yaxis()  # the ladder reads top down, as gl.variants() lists it
    ax.axvline(ceiling, color=BEST_COLORS[bound], lw=1.8, zorder=3,
               label=f"{name} {format_rate(ceiling)} {unit}")
    for peer, rate in peers.items():
        style = PEER_STYLES.get(peer, {"color": "#555555", "ls": "-."})
        ax.axvline(rate, lw=1.4, zorder=3, label=f"{peer} {format_rate(rate)} {unit}", **style)
    right = max([ceiling, *values, *peers.values()])
    texts = [ax.text(value + right * 0.01, row, _bar_text(result, name, ceiling, unit),
                     va="center", fontsize=7.5, zorder=4,
                     bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.8})
             for row, value, result in zip(rows, values, results)]
    ax.set_xlim(0, right * 1.05)
    ax.set_xlabel(unit)
    ax.set_title(title, fontsize=9.5)
    ax.grid(True, axis="x", color="#e3e3e3", zorder=0)
    # outside, right of the axes: inside it would cover the text of some bar
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, framealpha=0.95)
    return lambda: ax.set_xlim(0, _room_for(ax, texts, values, right * 1.05))


def _room_for(ax, texts, values, least):
    """The x limit at which every bar's text, starting at its bar's end, ends inside the axes:
    the texts keep their width in pixels whatever the limit, so bar end v and a text w pixels
    wide in axes W pixels wide need a limit of v * W / (W - w)."""
    renderer = ax.figure.canvas.get_renderer()
    width = ax.get_window_extent(renderer).width
    limit = least
    for text, value in zip(texts, values):
        free = width - text.get_window_extent(renderer).width - 8
        if free > width * 0.2:  # else the text cannot fit beside any bar: leave it out over
            limit = max(limit, value * 1.01 * width / free)
    return limit


def ladder_figure(op, panels):
    """A Figure of op's ladder: panels is a list of (title, result dicts, ceilings dict), one
    per place the op ran (the GPU, the CPU), drawn side by side. Each result dict needs
    BenchResult's fields plus 'best' (True for the variant gl.variants() marks best)."""
    if not panels:
        raise ValueError(f"panels: no results of {op} to chart")
    bars = max(len(results) for _, results, _ in panels)
    fig = new_figure(width=7.2 * len(panels), height=1.5 + 0.34 * bars)
    make_room = [_panel(fig.add_subplot(1, len(panels), i + 1), title, results, ceil)
                 for i, (title, results, ceil) in enumerate(panels)]
    fig.suptitle(op, fontsize=12, fontweight="bold")
    # the room for the bars' texts depends on the axes' width, which the layout sets, and the
    # layout on the ticks, which the room sets: twice settles both
    for _ in range(2):
        fig.tight_layout()
        for room in make_room:
            room()
    return fig
