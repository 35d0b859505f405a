"""Writes the generated blocks of the labs' docs pages, docs/labs/<lab>.md, one per lab of
csrc/labs/labs.def: the ladder (from the variant registry, as gl.variants() gives it) and the
figures (from the lab's committed results JSON under benchmarks/results/, with a chart drawn into
docs/labs/img/<lab>.png), plus the index and the targets table in docs/labs/README.md and the
headline figures in README.md (both from benchmarks/results/targets.json). Only the text between
`<!-- generated:NAME -->` and `<!-- /generated:NAME -->` is rewritten; the prose around it is kept
byte for byte. A missing page is created with placeholders for its prose.
tests/core/test_registry.py runs the check.

    python3 tools/lab_docs.py               # rewrite every generated block, redraw the charts
    python3 tools/lab_docs.py --no-charts   # the blocks only (also when matplotlib is missing)
    python3 tools/lab_docs.py --charts-only # the charts only: needs matplotlib, not gpulab
    python3 tools/lab_docs.py --check       # exit 1, naming each stale page, if a block differs
"""

import argparse
import json
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field

# Each lab's latest results files under benchmarks/results/, in page order. sparse_lab.json holds
# a later CG run than sparse_lab_cg.json; the 4-GPU multi files re-measure 1 and 2 GPUs, and
# weak2d is the 2D weak run measured alone. call_overhead and transfer_paths time the core's
# calls and copies: the memory page shows them.
LAB_RESULTS = {
    "saxpy": ["saxpy_ladder.json"],
    "reduce": ["reduce_ladder.json"],
    "nbody": ["nbody_ladder.json"],
    "memory": ["memory_lab.json", "transfer_paths.json", "call_overhead.json"],
    "streams": ["streams_lab.json"],
    "concepts": ["concepts_lab.json"],
    "scan": ["scan_lab.json"],
    "histogram": ["histogram_lab.json"],
    "sort": ["sort_lab.json"],
    "linalg": ["linalg_lab.json"],
    "sparse": ["sparse_lab.json"],
    "stencil": ["stencil_lab.json"],
    "image": ["image_lab.json"],
    "multi": ["multi_allreduce_x4.json", "multi_jacobi_x4_strong.json",
              "multi_jacobi_x4_weak2d.json", "multi_reduce_x4.json"],
}

# {lab: (page title, one line for the index)}
LAB_INFO = {
    "saxpy": ("SAXPY", "The first kernels: one thread per element, grid-stride loops, 16-byte "
                       "vectors; a 2-D launch."),
    "reduce": ("Reduce", "Harris's seven reductions, atomics, shuffles and a single pass that "
                         "reaches the copy rate; dot and norm2."),
    "nbody": ("N-body", "All-pairs gravity, compute-bound: shared-memory tiles, unrolling, SoA, "
                        "several bodies per thread, the mass in the coordinates, each pair once."),
    "memory": ("Memory", "Where the bytes go: host-device paths, coalescing, the cache "
                         "staircase, bank conflicts, constant memory."),
    "streams": ("Streams", "What streams, events and graphs buy: copy/compute overlap, "
                           "concurrent kernels, launch cost."),
    "concepts": ("Concepts", "Small demos of one idea each: divergence, warp lockstep, races and "
                             "atomics, fast math, constant memory."),
    "scan": ("Scan", "Prefix sums from Hillis-Steele to the decoupled look-back, and stream "
                     "compaction on top of them."),
    "histogram": ("Histogram", "Counting with atomics: global, privatized in shared memory, "
                               "warp-aggregated, per-lane columns."),
    "sort": ("Sort", "Bitonic, LSD radix, merge path, onesweep and quicksort with dynamic "
                     "parallelism, against CUB."),
    "linalg": ("Linear algebra", "Matrix-vector, SGEMM from naive to multistage pipelines "
                                 "against cuBLAS, and transpose."),
    "sparse": ("Sparse", "SpMV in CSR, ELL, SELL and COO, SpMM, and conjugate gradients with "
                         "fused kernels."),
    "stencil": ("Stencil", "Halos and tiles for 1-D to 3-D stencils, and Jacobi sweeps with "
                           "temporal blocking and graphs."),
    "image": ("Image", "Separable filters through texture and shared memory, and Mandelbrot "
                       "with dynamic parallelism."),
    "multi": ("Multi-GPU", "Several GPUs with NCCL: all-reduce, a partitioned reduce, and "
                           "Jacobi's strong and weak scaling."),
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABS_DEF = os.path.join(ROOT, "csrc", "labs", "labs.def")
PAGES = os.path.join(ROOT, "docs", "labs")
IMAGES = os.path.join(PAGES, "img")
INDEX = os.path.join(PAGES, "README.md")
README = os.path.join(ROOT, "README.md")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
TARGETS = "targets.json"  # benchmarks/targets.py's full run

PLACEHOLDER = "_To be written._"
BLOCK = re.compile(r"<!-- generated:(\w+) -->\n.*?<!-- /generated:\1 -->", re.S)
MARKER = re.compile(r"<!-- (/?)generated:(\w+) -->")
SEEDS_LINE = "Seeds S0-S4 are the courses listed in [courses.md](../courses.md)."
LEGEND = ("ms: median time. Rates count the op's cost model (bytes or flops) over that time; "
          "\"of copy\" and \"of FMA\" divide by the device-to-device copy and the FMA loop "
          "measured in the same run. \"vs cupy\" and \"vs torch\": the peer's time over ours "
          "(above 1: gpulab is faster).")
PEERS = ("cupy", "torch")


def labs():
    """The lab names in csrc/labs/labs.def's order."""
    with open(LABS_DEF) as f:
        names = re.findall(r"^GL_LAB\((\w+)\)", f.read(), re.M)
    missing = [n for n in names if n not in LAB_RESULTS or n not in LAB_INFO]
    if missing:
        sys.exit(f"tools/lab_docs.py: add {', '.join(missing)} to LAB_RESULTS and LAB_INFO")
    return names


# ---------------------------------------------------------------- markdown pieces


@dataclass
class Table:
    title: str
    header: list
    rows: list  # lists of cell strings


@dataclass
class Chart:
    """One panel of a lab's chart: a horizontal bar per rung, reference lines for the rest."""
    title: str
    unit: str
    bars: list  # [(label, value)]
    refs: dict = field(default_factory=dict)  # {label: value}


def num(v):
    """v as a table cell: three significant digits or so, "-" for nothing."""
    if v is None or v == "":
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        a = abs(v)
        if a == 0:
            return "0"
        if a >= 100:
            return f"{v:.0f}"
        if a >= 10:
            return f"{v:.1f}"
        if a >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return str(v)


def ratio(v):
    return "-" if v is None else num(float(v)) + "x"


def count(n):
    """n as 2^k when it is a power of two of at least 1024, else as it is."""
    if isinstance(n, int) and n >= 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def shape(dims):
    """"4096x4096" for a grid, "n = 2^28" for one dimension."""
    return f"n = {count(dims[0])}" if len(dims) == 1 else "x".join(str(d) for d in dims)


def cell(text):
    """text for a table cell: pipes escaped, and stars, which the summaries use for products
    (2*stride*tid) and markdown would read as emphasis."""
    return str(text).replace("|", "\\|").replace("*", "\\*").replace("\n", " ")


def markdown_table(header, rows):
    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def table(title, rows, columns):
    """A Table of rows (dicts) under columns [(header, row -> cell text)]; columns whose cells
    are all "-" are left out."""
    cells = [[get(r) for _, get in columns] for r in rows]
    keep = [i for i in range(len(columns)) if any(c[i] != "-" for c in cells)]
    return Table(title, [columns[i][0] for i in keep], [[c[i] for i in keep] for c in cells])


def variant_label(row):
    """ "12 `multistage`" from a row's id and name (whichever it has)."""
    name = row.get("variant_name") or row.get("name") or row.get("variant")
    ident = row.get("id", row.get("variant") if isinstance(row.get("variant"), int) else None)
    if isinstance(name, int):
        return str(name)
    return f"{ident} `{name}`" if ident is not None else f"`{name}`"


def current_rungs(rows, op):
    """rows without those of variants that op's ladder no longer has: a results file measured
    before a rung left the ladder keeps its rows, and a page shows only what gl.variants(op)
    lists. Rows as they are where gpulab cannot be imported (--charts-only, whose charts draw
    no removed rung)."""
    try:
        import gpulab as gl
    except ImportError:
        return rows
    names = {v.name for v in gl.variants(op)}
    return [r for r in rows if r["variant"] in names]


def peer_columns(rows):
    """The "vs cupy" / "vs torch" columns of the peers some row was compared with."""
    return [(f"vs {p}", lambda r, p=p: ratio(r.get(f"over_{p}")))
            for p in PEERS if any(r.get(f"over_{p}") is not None for r in rows)]


def add_peer_ratios(rows, key):
    """Sets over_<peer> (the peer's time over ours) on rows whose row[key] holds the peers'
    milliseconds and that lack it."""
    for r in rows:
        for p, ms in (r.get(key) or {}).items():
            if p in PEERS and ms:
                r.setdefault(f"over_{p}", ms / r["median_ms"])
    return rows


def peer_rates(rows, rate):
    """{peer: rate} of the peers timed beside rows: the same work over the peer's time."""
    out = {}
    for r in rows:
        for p, ms in (r.get("peers_ms") or {}).items():
            if p in PEERS and ms and p not in out:
                out[p] = r[rate] * r["median_ms"] / ms
    return out


def ladder_tables(rows, group, label, rate, unit, frac=None, extra=(), more=(), chart=None,
                  ceiling=None, title=None):
    """Tables of rows grouped by group(row) (a title), each row a rung: label, extra columns,
    ms, rate, fraction of the ceiling, more columns, ratios to the peers; and the chart of the
    group titled `chart` (the rate against `ceiling` ((name, value) or None) and the peers'
    rates), titled `title` or as the group."""
    groups = {}
    for r in rows:
        groups.setdefault(group(r), []).append(r)
    tables, charts = [], []
    for name, members in groups.items():
        columns = [("variant", label), *extra, ("ms", lambda r: num(r.get("median_ms"))),
                   (unit, lambda r: num(r.get(rate)))]
        if frac:
            columns.append((frac[1], lambda r: num(r.get(frac[0]))))
        tables.append(table(name, members, columns + list(more) + peer_columns(members)))
        if name == chart:
            refs = dict([ceiling]) if ceiling else {}
            refs.update(peer_rates(members, rate))
            charts.append(Chart(title or name, unit,
                                [(label(r).replace("`", ""), r[rate]) for r in members], refs))
    return tables, charts


# ---------------------------------------------------------------- one formatter per JSON shape
# Each takes a results file's (results, meta) and returns ([Table], [Chart]): the headline rows
# of what that benchmark script saved, and the panels of the lab's chart.


def copy_rate(results, meta):
    for source in (results, results.get("summary", {}), results.get("ceilings", {}),
                   meta.get("settings", {}).get("ceilings", {})):
        if isinstance(source, dict) and source.get("copy_gbps"):
            return source["copy_gbps"]
    return None


def copy_ref(results, meta):
    rate = copy_rate(results, meta)
    return ("D2D copy", rate) if rate else None


def bench_runs(results, meta):
    """gl.bench records (saxpy_ladder, nbody_ladder): per op and size, each variant's fastest
    run, in the unit its bound gives (memory: GB/s of copy; compute: GFLOP/s of FMA, or the
    op's own unit)."""
    ceil = results.get("ceilings", {})
    groups = {}
    for r in results["runs"]:
        n = r.get("n", r["size"])
        groups.setdefault((r["op"], n, r["dtype"], r["backend"]), []).append(r)

    def rate_of(r):
        if r.get("unit"):
            return r["unit_rate"]
        return r["gflops"] if r["bound"] == "compute" else r["gbps"]

    tables, charts = [], {}
    for (op, n, dtype, backend), runs in groups.items():
        best = {}
        for r in runs:
            if r["variant"] not in best or rate_of(r) > rate_of(best[r["variant"]]):
                best[r["variant"]] = r
        rows = list(best.values())
        first = rows[0]
        unit = first.get("unit") or ("GFLOP/s" if first["bound"] == "compute" else "GB/s")
        frac = "frac_fma" if first["bound"] == "compute" else "frac_copy"
        peers = {}
        for r in runs:
            for p, got in (r.get("peers") or {}).items():
                peers.setdefault(p, got["median_ms"])
        columns = [("variant", variant_label),
                   ("params", lambda r: ", ".join(f"{k} {v}" for k, v in r["params"].items())
                    or "default"),
                   ("ms", lambda r: num(r["median_ms"])), (unit, lambda r: num(rate_of(r))),
                   ("of FMA" if frac == "frac_fma" else "of copy", lambda r: num(r.get(frac)))]
        columns += [(f"vs {p}", lambda r, p=p: ratio(peers[p] / r["median_ms"]))
                    for p in PEERS if p in peers]
        title = f"{op}, {dtype}, n = {count(n)}" + (" (CPU)" if backend == "cpu" else "")
        tables.append(table(title, rows, columns))
        if backend == "cuda":
            # the ceiling in the chart's unit: the FMA rate scaled as the op's unit is to flops
            if first["bound"] == "compute":
                ref = ("FMA loop", ceil["fma_gflops"] * rate_of(first) / first["gflops"])
            else:
                ref = ("D2D copy", ceil["copy_gbps"])
            refs = {ref[0]: ref[1]}
            refs.update({p: rate_of(first) * first["median_ms"] / ms for p, ms in peers.items()})
            charts[n] = Chart(title, unit, [(variant_label(r).replace("`", ""), rate_of(r))
                                            for r in rows], refs)
    # one panel: the largest GPU size, where the ladder is furthest from launch overheads
    return tables, [charts[max(charts)]] if charts else []


def reduce_ladder(results, meta):
    """reduce_ladder: the float32 and int32 ladders, each rung's step over the one before and
    its total over rung 0; the peers are rows of their own."""
    sizes = meta["settings"]["sizes"]
    tables, charts = [], []
    for dtype in ("float32", "int32"):
        rows = results[f"ladder_{dtype}"]["table"]
        tables.append(table(f"reduce (sum), {dtype}, n = {count(sizes[dtype])}", rows, [
            ("rung", lambda r: r["row"]), ("block", lambda r: num(r["block"])),
            ("ms", lambda r: num(r["ms"])), ("GB/s", lambda r: num(r["gbps"])),
            ("of copy", lambda r: num(r["frac_copy"])), ("step", lambda r: ratio(r["step"])),
            ("over rung 0", lambda r: ratio(r["cumulative"]))]))
        if dtype == "float32":
            refs = {"D2D copy": results["ceilings"]["copy_gbps"]}
            refs.update({r["row"]: r["gbps"] for r in rows if r["variant"] is None})
            charts.append(Chart(tables[-1].title, "GB/s",
                                [(r["row"], r["gbps"]) for r in rows if r["variant"] is not None],
                                refs))
    return tables, charts


def memory_lab(results, meta):
    tables = []
    rows = []
    for name, got in results["bandwidth"].items():
        top = max(r["bytes"] for r in got["rows"])
        rows += [r for r in got["rows"] if r["bytes"] == top]
    tables.append(table("Host and device copies at the largest size", rows, [
        ("direction", lambda r: r["direction"]), ("memory", lambda r: r["memory"]),
        ("method", lambda r: r["method"]), ("bytes", lambda r: count(r["bytes"])),
        ("ms", lambda r: num(r["median_ms"])), ("GB/s", lambda r: num(r["gbps"])),
        ("vs cudaMemcpy", lambda r: ratio(r.get("ratio_to_cudaMemcpy")))]))
    access = results["access_pattern"]
    tables.append(table(f"Access patterns, n = {count(access['meta']['n'])} ints",
                        access["rows"], [
        ("pattern", lambda r: r["pattern"]), ("ms", lambda r: num(r["median_ms"])),
        ("GB/s", lambda r: num(r["gbps"])),
        ("of coalesced", lambda r: num(r["ratio_to_coalesced"]))]))
    stairs = results["summary"]["staircase"]
    tables.append(table("Pointer chase: ns per dependent load", [
        {"where": "below 128 KiB (L1)", "ns": stairs["below_128KiB"]},
        {"where": "1 to 16 MiB (L2)", "ns": stairs["1MiB_to_16MiB"]},
        {"where": "above twice the L2", "ns": stairs["above_2x_l2"]},
        {"where": "above 256 MiB", "ns": stairs["above_256MiB"]}],
        [("working set", lambda r: r["where"]), ("ns", lambda r: num(r["ns"]))]))
    strides = [r for r in results["bank_conflicts"]["rows"]
               if r["stride"] in (1, 2, 3, 4, 8, 16, 32)]
    tables.append(table("Shared-memory bank conflicts", strides, [
        ("stride", lambda r: str(r["stride"])), ("ways", lambda r: str(r["ways"])),
        ("ms", lambda r: num(r["median_ms"])), ("slowdown", lambda r: ratio(r["slowdown"]))]))
    tables.append(table("Constant against global memory", results["constant_memory"]["rows"], [
        ("memory", lambda r: r["memory"]), ("access", lambda r: r["access"]),
        ("ms", lambda r: num(r["median_ms"])), ("G loads/s", lambda r: num(r["gloads_per_s"])),
        ("time over constant, uniform", lambda r: ratio(r["relative"]))]))
    coalesced = access["rows"][0]["gbps"]
    chart = Chart("Access patterns (memory lab)", "GB/s",
                  [(r["pattern"], r["gbps"]) for r in access["rows"]],
                  {"coalesced": coalesced})
    return tables, [chart]


def transfer_paths(results, meta):
    """transfer_paths: pageable NumPy arrays to and from the device by each path, GB/s."""
    top = results["sizes"][-1]
    paths = sorted({k.split("_", 1)[1] for k in top if k.startswith("h2d_")})
    rows = [{"path": p, "h2d": top.get(f"h2d_{p}"), "d2h": top.get(f"d2h_{p}")} for p in paths]
    title = f"Copies of pageable arrays, {count(top['bytes'])} bytes"
    tables = [table(title, rows, [("path", lambda r: r["path"]),
                                  ("host to device GB/s", lambda r: num(r["h2d"])),
                                  ("device to host GB/s", lambda r: num(r["d2h"]))])]
    refs = {"pinned": top["h2d_pinned"]} if "h2d_pinned" in top else {}
    chart = Chart(f"Host to device, pageable, {count(top['bytes'])} bytes", "GB/s",
                  [(r["path"], r["h2d"]) for r in rows if r["path"] != "pinned"], refs)
    return tables, [chart]


def call_overhead(results, meta):
    """call_overhead: microseconds per call, gpulab against the peers, same calls."""
    calls = [("saxpy, device arrays in (async)", "{}_async_us"),
             ("saxpy, NumPy in and out", "{}_numpy_us"),
             ("reduce, issue only", "reduce_{}_issue_us"),
             ("reduce, result to the host", "reduce_{}_item_us"),
             ("reduce, NumPy in", "reduce_{}_numpy_us")]
    rows = [{"call": c, **{lib: results.get(key.format(lib)) for lib in ("gpulab", *PEERS)}}
            for c, key in calls]
    n = meta["settings"]["n"]
    return [table(f"Host cost of one call, n = {n}, microseconds", rows,
                  [("call", lambda r: r["call"])] +
                  [(lib, lambda r, lib=lib: num(r[lib])) for lib in ("gpulab", *PEERS)])], []


def streams_lab(results, meta):
    sweep = results["intensity_sweep"]
    first = sweep[0]
    tables = [table(f"Copy/compute overlap, n = {count(first['n'])}, {first['chunks']} chunks, "
                    f"{first['streams']} streams", sweep, [
        ("FMAs per element", lambda r: str(r["intensity"])),
        ("serial ms", lambda r: num(r["serial_ms"])),
        ("overlapped ms", lambda r: num(r["overlapped_ms"])),
        ("slowest stage ms", lambda r: num(r["ideal_ms"])),
        ("efficiency", lambda r: num(r["efficiency"])),
        ("speedup", lambda r: ratio(r["speedup"]))])]
    best = results["summary"]["best_overlap"]
    tables.append(table("Best overlap of the chunk and stream sweep", [best], [
        ("chunks", lambda r: str(r["chunks"])), ("streams", lambda r: str(r["streams"])),
        ("order", lambda r: r["order"]), ("overlapped ms", lambda r: num(r["overlapped_ms"])),
        ("efficiency", lambda r: num(r["efficiency"])),
        ("speedup", lambda r: ratio(r["speedup"]))]))
    tables.append(table("Kernel launches against a CUDA graph",
                        results["graph_vs_launch"]["rows"], [
        ("kernels", lambda r: str(r["kernels"])), ("launch us", lambda r: num(r["launch_us"])),
        ("graph us", lambda r: num(r["graph_us"])), ("speedup", lambda r: ratio(r["speedup"])),
        ("instantiate us", lambda r: num(r["instantiate_us"]))]))
    tables.append(table("Concurrent kernels", results["concurrent_kernels"]["rows"], [
        ("kernels", lambda r: str(r["kernels"])), ("each ms", lambda r: num(r["duration_ms"])),
        ("one stream ms", lambda r: num(r["one_stream_ms"])),
        ("a stream each ms", lambda r: num(r["k_streams_ms"])),
        ("speedup", lambda r: ratio(r["speedup"]))]))
    tables.append(table("Matrix-vector product over streams", results["matvec"]["rows"], [
        ("streams", lambda r: str(r["streams"])), ("ms", lambda r: num(r["median_ms"])),
        ("GB/s", lambda r: num(r["gbps"])), ("speedup", lambda r: ratio(r["speedup"]))]))
    chart = Chart("Overlap efficiency (slowest stage / overlapped time)", "efficiency",
                  [(f"{r['intensity']} FMAs", r["efficiency"]) for r in sweep],
                  {"perfect overlap": 1.0})
    return tables, [chart]


def concepts_lab(results, meta):
    tables = [table("divergence: GFLOP/s by how keys split a warp", results["divergence"], [
        ("variant", variant_label), ("keys", lambda r: r["keys"]),
        ("paths per warp", lambda r: str(r["paths_per_warp"])),
        ("ms", lambda r: num(r["median_ms"])), ("GFLOP/s", lambda r: num(r["gflops"])),
        ("time over uniform keys", lambda r: ratio(r["over_uniform"]))])]
    tables.append(table("warp_reduce: block sums that came out wrong", results["warp_reduce"], [
        ("variant", variant_label), ("block", lambda r: str(r["block"])),
        ("wrong fraction", lambda r: num(r["wrong_fraction"])),
        ("us per trial", lambda r: num(r["us_per_trial"]))]))
    counter = add_peer_ratios(results["counter"], "peers")
    tables.append(table("counter: increments lost and increments per second", counter, [
        ("variant", variant_label), ("lost fraction", lambda r: num(r["lost_fraction_median"])),
        ("ms", lambda r: num(r["median_ms"])),
        ("G increments/s", lambda r: num(r["g_increments_per_s"]))] + peer_columns(counter)))
    sin = add_peer_ratios(results["sin_speed"], "peers")
    tables.append(table("sin: speed", sin, [
        ("variant", variant_label), ("range", lambda r: r["range"]),
        ("ms", lambda r: num(r["median_ms"])), ("GB/s", lambda r: num(r["gbps"])),
        ("of copy", lambda r: num(r["frac_copy"]))] + peer_columns(sin)))
    tables.append(table("sin: accuracy", results["sin_error"], [
        ("variant", variant_label), ("range", lambda r: f"±{num(r['hi'])}"),
        ("max abs error", lambda r: num(r["max_abs_error"])),
        ("max ulp", lambda r: num(r["max_ulp"]))]))
    tables.append(table("lookup: table reads by where the table lives", results["lookup"], [
        ("variant", variant_label), ("table", lambda r: str(r["table"])),
        ("indices", lambda r: r["indices"]), ("ms", lambda r: num(r["median_ms"])),
        ("GB/s", lambda r: num(r["gbps"])), ("of copy", lambda r: num(r["frac_copy"])),
        ("time over uniform", lambda r: ratio(r["over_uniform"]))]))
    refs = {p: counter[-1]["g_increments_per_s"] * counter[-1]["median_ms"] / ms
            for p, ms in (counter[-1].get("peers") or {}).items()}
    chart = Chart("counter: G increments/s", "G increments/s",
                  [(r["variant"], r["g_increments_per_s"]) for r in counter], refs)
    return tables, [chart]


def scan_lab(results, meta):
    copy = copy_ref(results, meta)
    tables, charts = ladder_tables(
        results["scan"], lambda r: f"scan, {r['dtype']}", variant_label, "gbps", "GB/s",
        ("frac_copy", "of copy"), extra=[("n", lambda r: count(r["n"]))],
        chart="scan, float32", ceiling=copy)
    more, _ = ladder_tables(
        results["compact"], lambda r: f"{r['op']}, keep {r['keep']}, n = {count(r['n'])}",
        variant_label, "gbps", "GB/s", ("frac_copy", "of copy"))
    return tables + more, charts


def histogram_lab(results, meta):
    rows = results["rows"]
    n = count(meta["settings"]["n"])

    def group(r):  # the rgb case is an image, named by its side
        return f"histogram, {r['case']}" + (f", n = {n}" if r["case"][:3] in ("u8_", "f32")
                                            else "")
    tables, charts = ladder_tables(rows, group, variant_label, "gbps", "GB/s",
                                   ("frac_copy", "of copy"),
                                   chart=f"histogram, u8_uniform, n = {n}",
                                   ceiling=copy_ref(results, meta))
    first = next(r for r in rows if r["case"] == "u8_uniform")
    charts[0].refs.update({p: first[f"{p}_gbps"] for p in PEERS if first.get(f"{p}_gbps")})
    return tables, charts


def sort_lab(results, meta):
    def group(r):
        return f"{r['op']}, {r['dtype']}, n = {count(r['n'])}"
    n = max(r["n"] for r in results["rows"])
    return ladder_tables(results["rows"], group, variant_label, "gkeys_per_s", "G keys/s",
                         ("frac_bound", "of bound"), chart=f"sort, int32, n = {count(n)}",
                         extra=[("bytes per key", lambda r: num(r["bytes_per_key"]))])


def linalg_lab(results, meta):
    tables, _ = ladder_tables(current_rungs(results["matvec"], "matvec"),
                              lambda r: f"matvec, {r['dtype']}, "
                              f"{r['m']}x{r['n']}", variant_label, "gbps", "GB/s",
                              ("frac_copy", "of copy"))
    # 1024^3 is launch-bound; the targets are stated at 4096^3 and 8192^3
    big = [r for r in current_rungs(results["matmul"], "matmul") if r["m"] >= 4096]
    fma = ("FMA loop", results["fma_gflops"])
    more, charts = ladder_tables(big, lambda r: f"matmul, float32, {r['m']}^3", variant_label,
                                 "gflops", "GFLOP/s", ("frac_fma", "of FMA"),
                                 more=[("of cuBLAS", lambda r: num(r.get("frac_cublas")))],
                                 chart="matmul, float32, 4096^3", ceiling=fma)
    cublas = next(r for r in big if r["m"] == 4096 and r["variant"] == "cublas")
    # cuBLAS is the peer here: CuPy and PyTorch call it too
    charts[0].refs = {"FMA loop": fma[1], "cuBLAS": cublas["gflops"]}
    charts[0].bars = [b for b in charts[0].bars if "tf32" not in b[0]]  # other units of work
    trans, _ = ladder_tables(current_rungs(results["transpose"], "transpose"),
                             lambda r: f"transpose, float32, "
                             f"{r['rows']}x{r['cols']}",
                             lambda r: variant_label(r) + (f" tile {r['tile']}" if r.get("tile")
                                                           else ""),
                             "gbps", "GB/s", ("frac_copy", "of copy"))
    return tables + more + trans, charts


def sparse_lab(results, meta):
    tables, charts = [], []
    copy = copy_ref(results, meta)
    for matrix in ("poisson2d", "powerlaw"):
        part = results[matrix]
        rows = [r for r in part["ladder"] if "lanes" not in r]  # lanes: a tunable's sweep
        title = (f"spmv, {matrix}, {count(rows[0]['rows'])} rows, {rows[0]['nnz']} nonzeros "
                 f"(advice: {part['advice']['format']})")
        got, drawn = ladder_tables(rows, lambda r: title, variant_label, "gbps", "GB/s",
                                   ("frac_copy", "of copy"), chart=title, ceiling=copy,
                                   title=f"spmv, {matrix}")
        tables += got
        charts += drawn if matrix == "poisson2d" else []
    spmm = add_peer_ratios(results["spmm"], "peers_ms")
    got, _ = ladder_tables(spmm, lambda r: f"spmm, {r['matrix']}, k = {r['k']}", variant_label,
                           "gflops", "GFLOP/s")
    settings = meta["settings"]
    tables += got + [table(f"cg, {settings['cg_dtype']}, {settings['cg_n']}^2 Poisson, "
                           f"{settings['cg_iterations']} iterations", results["cg"], [
        ("preconditioner", lambda r: r["M"]), ("variant", variant_label),
        ("ms per iteration", lambda r: num(r["ms_per_iteration"])),
        ("GB/s", lambda r: num(r["gbps"])), ("vs cupy", lambda r: ratio(r.get("over_cupy")))])]
    return tables, charts


def stencil_lab(results, meta):
    copy = copy_ref(results, meta)

    def jacobi_label(r):
        return variant_label(r) + (f" depth {r['depth']}" if r.get("depth") else "")
    tables, charts = ladder_tables(
        results["jacobi"], lambda r: f"jacobi, {shape(r['shape'])}, {r['sweeps']} sweeps",
        jacobi_label, "gbps", "GB/s", ("frac_copy", "of copy"),
        extra=[("ms per sweep", lambda r: num(r["ms_per_sweep"]))],
        chart="jacobi, 4096x4096, 200 sweeps", ceiling=copy)
    more, _ = ladder_tables(
        results["stencil"], lambda r: f"stencil, {shape(r['shape'])}, {r['weights']}",
        variant_label, "gbps", "GB/s", ("frac_copy", "of copy"))
    return tables + more, charts


def image_lab(results, meta):
    def filter_group(r):
        detail = {k: r[k] for k in ("sigma", "size", "kernel") if k in r}
        return f"{r['op']}, {r['side']}^2, " + ", ".join(f"{k} {v}" for k, v in detail.items())
    tables, charts = ladder_tables(results["filters"], filter_group, variant_label, "gbps",
                                   "GB/s", chart=filter_group(results["filters"][0]))
    more, _ = ladder_tables(
        results["mandelbrot"], lambda r: f"mandelbrot, {r['side']}^2, {r['max_iter']} iterations",
        variant_label, "gpixels_per_s", "G pixels/s")
    return tables + more, charts


def multi_allreduce(results, meta):
    gpus = results["gpus"]
    modes = [("one_process", "one process"), ("one_process_per_gpu", "process per GPU"),
             ("torch_distributed", "torch.distributed")]
    rows = []
    for i, row in enumerate(results["one_process"]):
        out = {"MiB": row["bytes"] >> 20}
        for key, _ in modes:
            out[key] = results[key][i]["bus_gbps"]
        out["ratio"] = results["one_process_vs_torch"][i]
        rows.append(out)
    t = table(f"all-reduce, float32 sum, {gpus} GPUs: bus GB/s", rows,
              [("MiB", lambda r: str(r["MiB"]))] +
              [(name, lambda r, k=k: num(r[k])) for k, name in modes] +
              [("one process vs torch", lambda r: ratio(r["ratio"]))])
    top = rows[-1]
    chart = Chart(f"all-reduce, {gpus} GPUs, {top['MiB']} MiB", "bus GB/s",
                  [(name, top[k]) for k, name in modes])
    return [t], [chart]


def multi_jacobi(results, meta):
    rows = sorted((r for r in results if r["overlap"]),
                  key=lambda r: (r["mode"], r["dim"], tuple(r["problem"]), r["exchange"],
                                 r["gpus"]))
    mode = rows[0]["mode"]
    sweeps = meta["settings"]["sweeps"]
    t = table(f"multi.jacobi, {mode} scaling, {sweeps} sweeps, halo exchange overlapped", rows, [
        ("grid", lambda r: shape(r["problem"])), ("exchange", lambda r: r["exchange"]),
        ("GPUs", lambda r: str(r["gpus"])), ("total ms", lambda r: num(r["total_ms"])),
        ("compute ms", lambda r: num(r["compute_ms"])),
        ("speedup", lambda r: ratio(r["speedup"])), ("efficiency", lambda r: num(r["efficiency"]))])
    many = [r for r in rows if r["gpus"] > 1]
    chart = Chart(f"multi.jacobi {mode} scaling: efficiency", "efficiency",
                  [(f"{shape(r['problem'])} {r['exchange']}, {r['gpus']} GPUs", r["efficiency"])
                   for r in many], {"ideal": 1.0})
    return [t], [chart]


def multi_reduce(results, meta):
    rows = results["weak"] + results["strong"]
    t = table(f"multi.reduce, float32 sum, {count(results['elements'])} elements per GPU (weak) "
              f"or in all (strong)", rows, [
        ("mode", lambda r: r["mode"]), ("GPUs", lambda r: str(r["gpus"])),
        ("elements", lambda r: count(r["problem"])), ("ms", lambda r: num(r["total_ms"])),
        ("GB/s", lambda r: num(r["gbps"])), ("GB/s per GPU", lambda r: num(r["gbps_per_gpu"])),
        ("efficiency", lambda r: num(r["efficiency"]))])
    return [t], []


FORMATTERS = {
    "saxpy_ladder.json": bench_runs, "nbody_ladder.json": bench_runs,
    "reduce_ladder.json": reduce_ladder, "memory_lab.json": memory_lab,
    "transfer_paths.json": transfer_paths, "call_overhead.json": call_overhead,
    "streams_lab.json": streams_lab, "concepts_lab.json": concepts_lab,
    "scan_lab.json": scan_lab, "histogram_lab.json": histogram_lab, "sort_lab.json": sort_lab,
    "linalg_lab.json": linalg_lab, "sparse_lab.json": sparse_lab,
    "stencil_lab.json": stencil_lab, "image_lab.json": image_lab,
}
FORMATTER_PREFIXES = {"multi_allreduce": multi_allreduce, "multi_jacobi": multi_jacobi,
                      "multi_reduce": multi_reduce}


def formatter(name):
    if name in FORMATTERS:
        return FORMATTERS[name]
    for prefix, fn in FORMATTER_PREFIXES.items():
        if name.startswith(prefix):
            return fn
    sys.exit(f"tools/lab_docs.py: no formatter for benchmarks/results/{name}")


def provenance(name, meta):
    """The line that says where and when a results file was measured."""
    date = re.search(r"\d{4}-\d\d-\d\d", str(meta.get("timestamp", "")))
    commit = str(meta.get("commit", "?"))[:7]
    return (f"[`{name}`](../../benchmarks/results/{name}): {meta.get('device', '?')}, driver "
            f"{meta.get('driver', '?')}, commit `{commit}`, {date.group(0) if date else '?'}.")


# ---------------------------------------------------------------- the targets


NOT_MEASURED = ("Not measured yet: `python3 benchmarks/targets.py` on a GPU writes\n"
                "`benchmarks/results/targets.json`, and `python3 tools/lab_docs.py` then fills "
                "this in.")
DIRECTION = {">=": "≥", "<=": "≤"}


def load_targets():
    """benchmarks/results/targets.json, or None where it is not committed."""
    path = os.path.join(RESULTS, TARGETS)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def quantity(value, what):
    """1.02 and "x torch.sum" -> "1.02x torch.sum"; 0.96 and "of copy" -> "0.96 of copy";
    2150 and "GB/s" -> "2150 GB/s"."""
    text = num(float(value)) if isinstance(value, (int, float)) else str(value)
    return f"{text}{what}" if what.startswith("x ") else f"{text} {what}"


def measured(r):
    return quantity(r["figure"], r["ratio"] or r["unit"])


def target_text(r):
    t = r["target"]
    return f"{DIRECTION[t['op']]} " + quantity(f"{t['value']:g}", r["ratio"] or r["unit"])


def targets_status(data):
    """"22 of 25 targets met", with what makes the run short of a full one."""
    rows = data["results"]["rows"]
    settings = data["meta"]["settings"]
    text = f"{sum(r['met'] for r in rows)} of {len(rows)} targets met"
    if settings.get("quick"):
        text += " (a --quick run: a check of the script, not a measurement)"
    if not settings.get("complete"):
        failed = ", ".join(data["results"].get("errors") or {}) or "none"
        text += f" (a partial run: groups that failed: {failed})"
    return text


def targets_table(data):
    """The markdown of docs/labs/README.md's targets block."""
    if data is None:
        return NOT_MEASURED
    rows = data["results"]["rows"]
    notes = list(dict.fromkeys(r["note"] for r in rows if r.get("note")))
    seconds = sum((data["meta"]["settings"].get("seconds") or {}).values())
    head = (provenance(TARGETS, data["meta"]) + f" {targets_status(data)}; the run took "
            f"{seconds / 60:.1f} minutes.")

    def figure(r):
        mark = f" [{notes.index(r['note']) + 1}]" if r.get("note") else ""
        return measured(r) + mark

    body = markdown_table(
        ["figure", "measured", "target", "met", "best rung", "also measured"],
        [[r["name"], figure(r), target_text(r), "yes" if r["met"] else "no", r["rung"] or "-",
          "; ".join(quantity(v, k) for k, v in r["also"].items()) or "-"] for r in rows])
    foot = "\n".join(f"- [{i}] {n}" for i, n in enumerate(notes, 1))
    return "\n\n".join(p for p in (head, body, foot) if p)


def headline(data):
    """The markdown of README.md's headline block: every figure of the targets table in one
    paragraph, the rows of one measurement together ("sort 2^28 int32 keys (uniform / ...):
    1.1 / ...x cupy.sort"), a star on each figure short of its target."""
    if data is None:
        return NOT_MEASURED
    rows = data["results"]["rows"]
    groups = {}
    for r in rows:
        base, _, case = r["name"].partition(", ")
        cases, values = groups.setdefault(base, ([], {}))
        if case and case not in cases:
            cases.append(case)
        figure = num(float(r["figure"])) + ("" if r["met"] else "\\*")
        values.setdefault(r["ratio"] or r["unit"], []).append(figure)
    parts = []
    for base, (cases, values) in groups.items():
        label = f"{base} ({' / '.join(cases)})" if len(cases) > 1 else \
            f"{base}, {cases[0]}" if cases else base
        parts.append(f"{label}: " + ", ".join(quantity(" / ".join(v), what)
                                             for what, v in values.items()))
    text = (f"On an {data['meta'].get('device', '?')}, {targets_status(data)} (the "
            f"[targets table](docs/labs/README.md#targets) gives each target and how it was "
            f"measured): " + "; ".join(parts) + ".")
    if not all(r["met"] for r in rows):
        text += " A figure marked \\* is short of its target."
    return textwrap.fill(text, 100, break_long_words=False, break_on_hyphens=False)


# ---------------------------------------------------------------- the blocks


def figures(lab):
    """(markdown, charts) of the lab's figures block, from its results files."""
    parts, charts = [LEGEND], []
    for name in LAB_RESULTS[lab]:
        path = os.path.join(RESULTS, name)
        if not os.path.exists(path):
            print(f"warning: {lab}: benchmarks/results/{name} is missing", file=sys.stderr)
            parts.append(f"No committed results: `benchmarks/results/{name}` is missing.")
            continue
        with open(path) as f:
            data = json.load(f)
        tables, drawn = formatter(name)(data["results"], data["meta"])
        parts.append(provenance(name, data["meta"]))
        for t in tables:
            parts.append(f"**{t.title}**\n\n" + markdown_table(t.header, t.rows))
        charts += drawn
    if charts:
        parts.append(f"![{LAB_INFO[lab][0]} lab: each rung's rate against its ceiling and the "
                     f"peers](img/{lab}.png)")
    return "\n\n".join(parts), charts


def variant_row(v):
    tunables = "; ".join(f"{k}: {', '.join(map(str, t['values']))} "
                         f"(default {t['default'] or '0: chosen per call'})"
                         for k, t in v.tunables.items()) or "-"
    notes = ", ".join(n for n, on in (("best", v.best), ("deterministic", v.deterministic),
                                       ("racy", v.racy)) if on) or "-"
    dtypes = ("; ".join(f"{mode}: {', '.join(d) or 'none'}" for mode, d in v.support.items())
              if v.support else ", ".join(v.dtypes))
    kernels = ", ".join(f"`{k}`" + (" (some calls)" if k in v.sometimes else "")
                        for k in v.kernels) or "-"
    if v.library:
        kernels += f" (calls {v.library})"
    return [str(v.id), f"`{v.name}`", v.backend, v.summary, v.seed, dtypes, tunables, kernels,
            notes]


def lab_ops(lab):
    import gpulab as gl
    return [op for op in gl.registry.ops() if gl.variants(op)[0].lab == lab]


def lab_functions(lab):
    """[(name, first sentence of its docstring)] of the public functions of gpulab.labs.<lab>,
    in source order: the API of a lab of measurements, which has no ladder."""
    import importlib
    import inspect
    module = importlib.import_module(f"gpulab.labs.{lab}")
    found = [f for name, f in inspect.getmembers(module, inspect.isfunction)
             if not name.startswith("_") and f.__module__ == module.__name__]
    found.sort(key=lambda f: f.__code__.co_firstlineno)
    out = []
    for f in found:
        doc = " ".join((inspect.getdoc(f) or "").split("\n\n")[0].split())
        end = re.search(r"(?<![.])(?<!e\.g)(?<!i\.e)\.(\s|$)", doc)
        out.append((f.__name__, doc[:end.start() + 1] if end else doc))
    return out


def ladder(lab):
    """The markdown of the lab's ladder block."""
    import gpulab as gl
    parts = [SEEDS_LINE]
    ops = lab_ops(lab)
    for op in ops:
        parts.append(f"### {op}\n\n" + markdown_table(
            ["id", "name", "backend", "what it changes", "seed", "dtypes", "tunables", "kernels",
             "notes"], [variant_row(v) for v in gl.variants(op)]))
    if not ops:
        parts.append(f"This lab has no variant ladder; it measures with these functions of "
                     f"`gl.{lab}`:\n\n" + markdown_table(
                         ["function", "what it gives"],
                         [[f"`gl.{lab}.{name}`", doc] for name, doc in lab_functions(lab)]))
    return "\n\n".join(parts)


def index():
    """The markdown of docs/labs/README.md's index block."""
    rows = []
    for lab in labs():
        ops = (", ".join(f"`{op}`" for op in lab_ops(lab))
               or f"no ladder: the `gl.{lab}` functions")
        title, line = LAB_INFO[lab]
        rows.append([lab, ops, line, f"[{title} lab]({lab}.md)"])
    return markdown_table(["lab", "ops", "what it teaches", "page"], rows)


# ---------------------------------------------------------------- pages


def skeleton(lab):
    title = LAB_INFO[lab][0]
    return (f"# {title} lab\n\n{PLACEHOLDER}\n\n## The ladder\n\n{empty_block('ladder')}\n\n"
            f"## Figures\n\n{empty_block('figures')}\n\n## Findings\n\n{PLACEHOLDER}\n")


INDEX_SKELETON = (
    "# The labs\n\nOne page per lab: what it teaches, its ladder of variants (generated from the "
    "registry), figures from its latest committed results, and what made the top rungs fast. "
    "Seeds S0-S4 are the courses listed in [courses.md](../courses.md).\n\n"
    "<!-- generated:index -->\n<!-- /generated:index -->\n\n## Targets\n\n"
    "<!-- generated:targets -->\n<!-- /generated:targets -->\n")
README_SKELETON = "# gpulab\n\n<!-- generated:headline -->\n<!-- /generated:headline -->\n"


def empty_block(name):
    return f"<!-- generated:{name} -->\n<!-- /generated:{name} -->"


def block(name, body):
    return f"<!-- generated:{name} -->\n\n{body.strip()}\n\n<!-- /generated:{name} -->"


class MarkerError(Exception):
    """A page whose markers the script cannot pair: it says which, rather than guess."""


def blocks_of(path, text, names):
    """{name: block text} of text's generated blocks; raises MarkerError naming the page when a
    marker of `names` is missing, unpaired or repeated."""
    rel = os.path.relpath(path, ROOT)
    seen = [(m.group(1), m.group(2)) for m in MARKER.finditer(text)]
    for name in names:
        opens, closes = seen.count(("", name)), seen.count(("/", name))
        if opens != 1 or closes != 1:
            raise MarkerError(f"{rel}: needs exactly one <!-- generated:{name} --> and one "
                              f"<!-- /generated:{name} --> (found {opens} and {closes}); add "
                              f"the pair where the generated {name} belongs")
    found = {m.group(1): m.group(0) for m in BLOCK.finditer(text)}
    for name in names:
        if name not in found:
            raise MarkerError(f"{rel}: <!-- /generated:{name} --> comes before "
                              f"<!-- generated:{name} -->")
    return found


def pages():
    """[(path, skeleton, {block name: body})] of every page the script writes blocks into, and
    {lab: charts}."""
    out, charts = [], {}
    for lab in labs():
        body, charts[lab] = figures(lab)
        out.append((os.path.join(PAGES, f"{lab}.md"), skeleton(lab),
                    {"ladder": ladder(lab), "figures": body}))
    targets = load_targets()
    out.append((INDEX, INDEX_SKELETON, {"index": index(), "targets": targets_table(targets)}))
    out.append((README, README_SKELETON, {"headline": headline(targets)}))
    return out, charts


def rewrite(text, path, bodies):
    """text with each block of bodies replaced; the rest byte for byte."""
    found = blocks_of(path, text, bodies)
    for name, body in bodies.items():
        text = text.replace(found[name], block(name, body), 1)
    return text


def stale(path, text, bodies):
    """The names of the blocks of text that differ from bodies."""
    found = blocks_of(path, text, bodies)
    return [name for name, body in bodies.items() if found[name] != block(name, body)]


def check():
    """Messages naming each stale or missing page (and chart), empty when all is current."""
    problems = []
    written, charts = pages()
    for path, _, bodies in written:
        rel = os.path.relpath(path, ROOT)
        if not os.path.exists(path):
            problems.append(f"{rel} is missing")
            continue
        with open(path) as f:
            try:
                names = stale(path, f.read(), bodies)
            except MarkerError as e:
                problems.append(str(e))
                continue
        if names:
            problems.append(f"{rel}: stale {', '.join(names)} block")
    for lab, drawn in charts.items():
        if drawn and not os.path.exists(os.path.join(IMAGES, f"{lab}.png")):
            problems.append(f"docs/labs/img/{lab}.png is missing")
    return problems


# ---------------------------------------------------------------- charts


def draw(lab, panels, plt):
    """Draws the lab's panels into docs/labs/img/<lab>.png; returns its path."""
    heights = [0.9 + 0.24 * len(p.bars) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.5, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    styles = [{"color": "#333333", "ls": "-"}, {"color": "#6a3d9a", "ls": "--"},
              {"color": "#33a02c", "ls": ":"}, {"color": "#e31a1c", "ls": "-."}]
    for ax, panel in zip(axes[:, 0], panels):
        labels = [b[0] for b in panel.bars]
        values = [b[1] for b in panel.bars]
        best = max(range(len(values)), key=lambda i: values[i])
        colors = ["#1f4e79" if i == best else "#7fa7cf" for i in range(len(values))]
        y = list(range(len(values)))[::-1]
        ax.barh(y, values, color=colors, height=0.7)
        ax.set_yticks(y)
        ax.set_yticklabels(labels, fontsize=7)
        positive = [v for v in values + list(panel.refs.values()) if v and v > 0]
        if positive and max(positive) / min(positive) > 1000:
            ax.set_xscale("log")  # rungs that span decades: the slow ones stay visible
        for yi, v in zip(y, values):
            ax.text(v, yi, " " + num(float(v)), va="center", fontsize=6)
        for (name, value), style in zip(panel.refs.items(), styles):
            ax.axvline(value, lw=1, label=f"{name} {num(float(value))}", **style)
        if panel.refs:  # outside the axes, where no bar runs under it
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.set_xlabel(panel.unit, fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(panel.title, fontsize=8)
        ax.margins(x=0.12)
    fig.tight_layout()
    os.makedirs(IMAGES, exist_ok=True)
    path = os.path.join(IMAGES, f"{lab}.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def draw_all(charts):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("warning: matplotlib is missing: charts not redrawn", file=sys.stderr)
        return
    for lab, panels in charts.items():
        if panels:
            path = draw(lab, panels, plt)
            print(f"drew {os.path.relpath(path, ROOT)} ({os.path.getsize(path) // 1024} KiB)",
                  file=sys.stderr)


def write():
    written, charts = pages()
    for path, empty, bodies in written:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            text = empty
        new = rewrite(text, path, bodies)
        if new != text:
            with open(path, "w") as f:
                f.write(new)
            print(f"wrote {os.path.relpath(path, ROOT)}", file=sys.stderr)
    return charts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="exit 1, naming each stale page, if a generated block differs")
    mode.add_argument("--no-charts", action="store_true", help="write the blocks only")
    mode.add_argument("--charts-only", action="store_true",
                      help="draw the charts only (needs matplotlib, not gpulab)")
    args = parser.parse_args()
    sys.path.insert(0, ROOT)  # document this tree's registry
    if args.check:
        problems = check()
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            sys.exit("run python3 tools/lab_docs.py to regenerate")
        return
    if args.charts_only:
        draw_all({lab: figures(lab)[1] for lab in labs()})
        return
    try:
        charts = write()
    except MarkerError as e:
        sys.exit(str(e))
    if not args.no_charts:
        draw_all(charts)


if __name__ == "__main__":
    main()
