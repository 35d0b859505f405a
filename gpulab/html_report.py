"""The main job's results as one self-contained HTML page (python -m gpulab --html FILE): the
device, the measured ceilings, the roofline of every op's best variant, every lab's ladder as
a bar chart with its table, and where the numbers came from. Images are embedded as base64
PNG and the styles inline, so the file can be mailed or committed and opened anywhere, with
nothing fetched. Needs matplotlib."""

import base64
import datetime
import html
import io
import json

from . import registry
from ._op import Cost
from .bench import bound_of, format_fraction, format_rate
from .report import device_rows

MATPLOTLIB_MISSING = "--html needs matplotlib, which is not installed: pip install matplotlib"

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 0 24px 48px; color: #1a1a1a; line-height: 1.4; }
header { border-bottom: 2px solid #1f4e79; margin-bottom: 8px; }
h1 { margin: 20px 0 4px; } h2 { margin-top: 36px; border-bottom: 1px solid #ccc; }
h3 { margin: 24px 0 6px; } nav a { margin-right: 14px; }
.sub { color: #555; margin: 0 0 12px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef2f7; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { font-weight: 600; background: #f5f8fc; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0; }
.note { color: #555; font-size: 13px; max-width: 1000px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
"""


def matplotlib_missing():
    """MATPLOTLIB_MISSING when matplotlib cannot be imported, else None: the main job asks
    before it runs, so that --html never costs a whole run to fail."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return MATPLOTLIB_MISSING
    return None


def _esc(value):
    return html.escape(str(value), quote=True)


def _table(header, rows, numeric=(), row_classes=None):
    """An HTML table; the columns whose index is in numeric are right-aligned."""
    out = ["<table><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in header) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        cells = "".join(f'<td class="num">{_esc(c)}</td>' if j in numeric else f"<td>{_esc(c)}</td>"
                        for j, c in enumerate(row))
        out.append(f"<tr{cls}>{cells}</tr>")
    return "\n".join(out + ["</table>"])


def _png(fig, alt):
    """fig as an <img> with the PNG inline (a data: URI)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", facecolor="white")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _where(result):
    return "gpu" if result["backend"] == "cuda" else "cpu"


def _as_dicts(results, ceilings):
    """Result dicts (BenchResult.to_dict() or as saved), each with 'best': whether the
    registry marks its variant the best where it runs, and 'bound' (computed from the
    ceilings for a file saved before results had it)."""
    out = []
    for r in results:
        d = dict(r.to_dict() if hasattr(r, "to_dict") else r)
        if "bound" not in d and _where(d) in ceilings:
            d["bound"] = bound_of(Cost(d["bytes"], d["flops"]), ceilings[_where(d)])
        try:
            d["best"] = registry.find(d["op"], d["variant"]).best
        except ValueError:  # a saved result of a variant this build does not have
            d["best"] = False
        out.append(d)
    return out


def _best_of_each_op(results):
    """Per op, the result of the variant the registry marks best, else the fastest."""
    best = {}
    for r in results:
        current = best.get(r["op"])
        if current is None or (r["best"], -r["median_ms"]) > (current["best"],
                                                              -current["median_ms"]):
            best[r["op"]] = r
    return list(best.values())


# ---------------------------------------------------------------- sections


def _device_section(meta):
    info = meta.get("device_info")
    if info:
        rows = device_rows({**info, "driver_release": meta.get("driver")})
    else:
        rows = [("GPU", f"none: {meta.get('why_no_gpu', 'no CUDA device')}")]
    cpu = meta.get("ceilings", {}).get("cpu")
    if cpu:
        rows += [("CPU", cpu.get("device", "?")), ("OpenMP threads", cpu.get("threads", "?"))]
    return _table(["property", "value"], rows)


def _ceilings_section(ceilings):
    rows, methods = [], []
    for where in ("gpu", "cpu"):
        c = ceilings.get(where)
        if not c:
            continue
        rows.append([where.upper(), c.get("device", "?"), format_rate(c["copy_gbps"]),
                     format_rate(c["l2_copy_gbps"]) if c.get("l2_copy_gbps") else "",
                     format_rate(c["fma_gflops"]),
                     format_rate(c["fma64_gflops"]) if c.get("fma64_gflops") else "",
                     f"{c['fma_gflops'] / c['copy_gbps']:.3g}"])
        methods.append(f"<p class=\"note\"><b>{where.upper()}</b>: {_esc(c.get('method', ''))}</p>")
    header = ["where", "device", "copy GB/s", "L2 copy GB/s", "FP32 FMA GFLOP/s",
              "FP64 FMA GFLOP/s", "balance flop/B"]
    return _table(header, rows, numeric=(2, 3, 4, 5, 6)) + "\n" + "\n".join(methods)


def _roofline_section(results, ceilings):
    from .roofline_model import roofline
    from .roofline_plot import draw
    parts = []
    for where in ("gpu", "cpu"):
        mine = [r for r in results if _where(r) == where]
        if not mine or where not in ceilings:
            continue
        best = _best_of_each_op(mine)
        tab = roofline(best, ceilings=ceilings[where], where=where, table=True)
        fig = draw(tab)
        parts.append(f"<h3>{where.upper()}: {_esc(tab.meta['device'])}</h3>")
        parts.append(_png(fig, f"roofline of {where}"))
        rows = [[row["label"], row["dtype"], f"{row['ai']:.4g}", format_rate(row["gflops"]),
                 format_rate(row["attainable"]), format_fraction(row["fraction"]), row["bound"],
                 row["roof"]] for row in tab]
        parts.append(_table(["best variant", "dtype", "AI flop/B", "GFLOP/s",
                             "attainable GFLOP/s", "of roof", "bound", "roofs"], rows,
                            numeric=(2, 3, 4, 5)))
        parts += [f'<p class="note">{_esc(note)}</p>' for note in tab.meta["notes"]]
    return "\n".join(parts) or '<p class="note">No results.</p>'


def _results_table(results, ceil):
    from .ladder_chart import ceiling_of, rate_of
    peers = sorted({p for r in results for p in r.get("peers") or {}})
    header = ["id", "variant", "ms", "rate", "of ceiling", *[f"x {p}" for p in peers]]
    rows, classes = [], []
    for r in sorted(results, key=lambda r: r["variant"]):
        name, rate, unit = ceiling_of(r, ceil)
        text = f"{format_rate(rate_of(r))} {unit}"
        if r["bound"] == "compute" and r.get("unit"):
            text += f", {format_rate(r['unit_rate'])} {r['unit']}"
        rows.append([r["variant"], r["variant_name"], f"{r['median_ms']:.4f}", text,
                     f"{format_fraction(rate_of(r) / rate)} of {name}",
                     *[f"{r['peers'][p]['speedup']:.2f}" if p in (r.get("peers") or {}) else ""
                       for p in peers]])
        classes.append("best" if r["best"] else "")
    return _table(header, rows, numeric=(0, 2, 3), row_classes=classes)


def _ladders_section(results, ceilings):
    from .ladder_chart import ladder_figure
    by_lab = {}
    for r in results:
        try:
            lab = registry.variants(r["op"])[0].lab
        except ValueError:
            lab = "other"
        by_lab.setdefault(lab, {}).setdefault(r["op"], []).append(r)
    parts = []
    for lab, ops in by_lab.items():
        parts.append(f'<h3 id="lab-{_esc(lab)}">Lab: {_esc(lab)}</h3>')
        for op, mine in ops.items():
            panels = []
            for where in ("gpu", "cpu"):
                here = [r for r in mine if _where(r) == where]
                if here and where in ceilings:
                    size = ", ".join(sorted({f"n = {r['size']:,} {r['dtype']}" for r in here}))
                    panels.append((f"{where.upper()}: {ceilings[where].get('device', '?')} "
                                   f"({size})", here, ceilings[where]))
            if not panels:
                continue
            parts.append(_png(ladder_figure(op, panels), f"{op} ladder"))
            for title, here, ceil in panels:
                peers = any(r.get("peers") for r in here)
                parts.append(f'<p class="note">{_esc(title)}' + (
                    "; x peer = peer time / ours, &gt;1 means gpulab is faster" if peers else "")
                    + "</p>")
                parts.append(_results_table(here, ceil))
    return "\n".join(parts) or '<p class="note">No results.</p>'


def _provenance_section(meta):
    build = meta.get("build") or {}
    rows = [("commit", meta.get("commit") or "unknown"), ("timestamp", meta.get("timestamp", "")),
            ("command", " ".join(meta.get("argv") or [])),
            ("settings", json.dumps(meta.get("settings", {}), sort_keys=True)),
            ("device", meta.get("device", "")), ("NVIDIA driver", meta.get("driver") or "n/a"),
            ("CUDA driver / runtime", f"{meta.get('cuda_driver', 'n/a')} / "
                                      f"{meta.get('cuda_runtime', 'n/a')}"),
            ("Python / NumPy", f"{meta.get('python', '?')} / {meta.get('numpy', '?')}"),
            ("peers", ", ".join(f"{k} {v}" for k, v in (meta.get("peers") or {}).items()
                                if v) or "none importable")]
    rows += [(f"build: {k}", v) for k, v in sorted(build.items())]
    return _table(["what", "value"], rows)


def build(meta, results):
    """The page, as a string, for the main job's metadata (gpulab.provenance.metadata plus its
    'ceilings' by where) and its results (BenchResults or result dicts)."""
    ceilings = meta.get("ceilings") or {}
    results = _as_dicts(results, ceilings)
    device = meta.get("device", "?")
    when = meta.get("timestamp") or datetime.datetime.now(datetime.timezone.utc).isoformat()
    sections = [("device", "Device", _device_section(meta)),
                ("ceilings", "Ceilings", _ceilings_section(ceilings)),
                ("roofline", "Roofline (best variant of each op)",
                 _roofline_section(results, ceilings)),
                ("ladders", "Ladders", _ladders_section(results, ceilings)),
                ("provenance", "Provenance", _provenance_section(meta))]
    nav = " ".join(f'<a href="#{key}">{_esc(title)}</a>' for key, title, _ in sections)
    body = "\n".join(f'<section id="{key}"><h2>{_esc(title)}</h2>\n{content}\n</section>'
                     for key, title, content in sections)
    commit = (meta.get("commit") or "unknown")[:12]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpulab report: {_esc(device)}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>gpulab report</h1>
<p class="sub">{_esc(device)} · commit {_esc(commit)} · {_esc(when)} ·
{len(results)} results</p>
<nav>{nav}</nav>
</header>
{body}
</body>
</html>
"""


def write(path, meta, results):
    """Writes build(meta, results) to path (UTF-8); returns path."""
    page = build(meta, results)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
