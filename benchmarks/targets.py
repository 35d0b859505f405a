"""Every lab's headline figure against its target, in one process on the current GPU, saved as
benchmarks/results/targets.json: one row per figure (name, figure, unit, what it is a ratio
against, target with its direction, met), with the device, driver, commit and settings in its
meta. tools/lab_docs.py turns it into the targets table of docs/labs/README.md and README's
headline figures.

Each group measures with its lab benchmark's own functions (benchmarks/<lab>.py): CUDA events
through gl.bench, medians, the L2 flushed before each repetition for the memory-bound ops,
random data, the copy and FMA ceilings of gl.ceilings() measured once in this process, the peers
on the same device arrays in the same run. The best rung is picked as the lab benchmark picks
it (each row says which rung and how). `met` is computed from the figure and the target.

Progress goes to stderr, one line a group with its seconds; the JSON is saved after every group
(meta.settings.complete is false until every group has run without an error), so a run cut
short leaves what it measured. --quick runs small sizes with 3 repetitions, a check of the
script and not a measurement, saved as targets_quick.json.

    python benchmarks/targets.py [--quick] [--only reduce,sort] [--repeat N]
"""

import argparse
import math
import operator
import sys
import time
import traceback

import numpy as np

from common import progress, require_gpu, save  # sets CUPY_ACCELERATORS before CuPy loads
import gpulab as gl
import call_overhead
import histogram_lab
import image_lab
import linalg_lab
import nbody_ladder
import reduce_ladder
import saxpy_ladder
import scan_lab
import sort_lab
import stencil_lab
from gpulab.user_path import DEVICE_PEER_NOTES

DIRECTIONS = {">=": operator.ge, "<=": operator.le}

# Sizes of the targets, and of --quick (a check of the script).
SIZES = {"log2n": 28, "sort_log2n": 28, "sgemm": 4096, "square": 16384, "cube": 512,
         "image": 8192, "bodies": 131072, "sweeps": stencil_lab.SWEEPS_2D, "calls": 20000}
QUICK_SIZES = {"log2n": 20, "sort_log2n": 16, "sgemm": 512, "square": 1024, "cube": 64,
               "image": 1024, "bodies": 4096, "sweeps": 20, "calls": 1000}
# Repetitions of each group: its lab benchmark's default (--repeat overrides them all).
LAB_REPEAT = {"reduce": 30, "saxpy": 30, "scan": 20, "compact": 20, "histogram": 20, "sort": 10,
              "sgemm": 10, "transpose": 10, "matvec": 10, "stencil3d": 10, "jacobi": 10,
              "gaussian": 10, "nbody": 7}
QUICK_REPEAT = 3
# sort_lab.distribution's kinds, and how the rows name them
SORT_KEYS = {"uniform": "uniform", "and2": "AND of two uniform", "presorted": "presorted",
             "equal": "all equal"}


def pow2(n):
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def meets(figure, op, value):
    """Whether figure meets the target `op value` (a NaN or an infinity never does)."""
    return bool(math.isfinite(figure) and DIRECTIONS[op](figure, value))


def row(name, figure, op, value, ratio=None, unit="ratio", rung=None, how=None, also=None,
        note=None, ms=None, peer_ms=None):
    """One figure against its target. ratio: what the figure is a ratio against ("x torch.sum",
    "of copy"), None for an absolute figure in `unit`. also: other figures of the same
    measurement, {label: value}. ms, peer_ms: our and the peer's median times behind it."""
    figure = float(figure)
    return {"name": name, "figure": figure, "unit": unit, "ratio": ratio,
            "target": {"op": op, "value": value}, "met": meets(figure, op, value),
            "rung": rung, "how": how, "also": also or {}, "note": note, "ms": ms,
            "peer_ms": peer_ms}


def peer_ms(peers, name, what):
    """The peer's median ms from a row's peers ({name: ms}); raises naming what is missing."""
    if name not in (peers or {}):
        raise RuntimeError(f"{what} was not timed: is {name} importable here?")
    return peers[name]


def rung_of(r):
    """A BenchResult's rung: id, name and the tunables it was called with."""
    params = ", ".join(f"{k}={v}" for k, v in r.params.items() if v is not None)
    return f"{r.variant} {r.variant_name}" + (f" ({params})" if params else "")


def named(r):
    """A lab table row's rung, with the tunables it was measured at."""
    extra = [f"{k}={r[k]}" for k in ("depth", "tile", "config") if r.get(k) is not None]
    return str(r["variant"]) + (f" ({', '.join(extra)})" if extra else "")


class Run:
    """What every group reads: sizes, repetitions, the ceilings measured in this process."""

    def __init__(self, quick, repeat):
        self.quick, self._repeat = quick, repeat
        self.size = QUICK_SIZES if quick else SIZES
        self.ceil = gl.ceilings("gpu")
        self.info = gl.device_info()

    def repeat(self, group):
        if self._repeat:
            return self._repeat
        return QUICK_REPEAT if self.quick else LAB_REPEAT[group]


# ---------------------------------------------------------------- the groups


def reduce_group(run):
    n = 1 << run.size["log2n"]
    x = gl.to_device(np.random.default_rng(2).standard_normal(n, dtype=np.float32))
    r = reduce_ladder.bench_rung(x, gl.registry.best("reduce", "cuda"), run.repeat("reduce"))
    peers = {k: p["median_ms"] for k, p in r.peers.items()}
    torch = peer_ms(peers, "torch", "torch.sum")
    also = {"of copy": r.frac_copy, "GB/s": r.gbps}
    if "cupy" in peers:
        also["x cupy.sum"] = peers["cupy"] / r.median_ms
    return [row(f"reduce f32 {pow2(n)}", torch / r.median_ms, ">=", 0.98, "x torch.sum",
                rung=rung_of(r), how="reduce_ladder.bench_rung: the best rung (the table's), "
                "its default block", also=also, ms=r.median_ms, peer_ms=torch)]


def saxpy_group(run):
    n = 1 << run.size["log2n"]
    rng = np.random.default_rng(1)
    x = gl.to_device(rng.standard_normal(n, dtype=np.float32))
    y = gl.to_device(rng.standard_normal(n, dtype=np.float32))
    results = saxpy_ladder.ladder(x, y, run.repeat("saxpy"))
    s = saxpy_ladder.summarize(results, run.ceil)
    best = max(results, key=lambda r: r["gbps"])
    also = {"GB/s": s["best_gbps"]}
    also.update({f"x {'torch.add' if k == 'torch' else 'cupy ElementwiseKernel'}": v
                 for k, v in s["best_over_peers"].items()})
    return [row(f"saxpy f32 {pow2(n)}", s["best_frac_copy"], ">=", 0.95, "of copy",
                rung=f"{best['variant']} {best['variant_name']} (block={s['best_block']})",
                how="saxpy_ladder.ladder and summarize: every rung at every block, the fastest",
                also=also, ms=best["median_ms"])]


def scan_group(run):
    log2n = run.size["log2n"]
    best = scan_lab.best_scan(scan_lab.scan_ladder(log2n, run.repeat("scan"), np.float32))
    torch = peer_ms(best["peers_ms"], "torch", "torch.cumsum")
    how = "scan_lab.scan_ladder and best_scan: the lab's best rung, by name"
    name = f"scan f32 {pow2(1 << log2n)}"
    also = {"GB/s": best["gbps"]}
    if "cupy" in best["peers_ms"]:
        also["x cupy.cumsum"] = best["over_cupy"]
    return [row(name, best["frac_copy"], ">=", 0.9, "of copy", rung=best["variant"], how=how,
                also=also, ms=best["median_ms"]),
            row(name, torch / best["median_ms"], ">=", 1.3, "x torch.cumsum",
                rung=best["variant"], how=how, ms=best["median_ms"], peer_ms=torch)]


def compact_group(run):
    log2n = run.size["log2n"]
    best = scan_lab.best_compact(scan_lab.compact_ladder(log2n, run.repeat("compact"),
                                                            masked_only=True))
    torch = peer_ms(best["peers_ms"], "torch", "torch.masked_select")
    also = {"of copy": best["frac_copy"]}
    if "cupy" in best["peers_ms"]:
        also["x cupy x[mask]"] = best["over_cupy"]
    return [row(f"compact f32 {pow2(1 << log2n)}, mask keeping half", torch /
                best["median_ms"], ">=", 2.0, "x torch.masked_select", rung=best["variant"],
                how="scan_lab.compact_ladder and best_compact: the fastest of the lab's own "
                "rungs (not CUB's)", also=also, ms=best["median_ms"], peer_ms=torch)]


def histogram_group(run):
    n = 1 << run.size["log2n"]
    rows = histogram_lab.byte_ladders(n, np.random.default_rng(11), run.repeat("histogram"),
                                      run.ceil["copy_gbps"])
    best = histogram_lab.best_rows(rows)
    out = []
    for case, label, target in (("u8_uniform", "uniform", 2000), ("u8_skewed90", "90% skewed",
                                                                  1000)):
        b = best[case]
        also = {"of copy": b["frac_copy"]}
        also.update({f"x {k[5:]}.bincount": v for k, v in b.items() if k.startswith("over_")})
        out.append(row(f"histogram uint8 {pow2(n)} into 256 bins, {label}", b["gbps"], ">=",
                       target, unit="GB/s", rung=f"{b['variant']} {b['name']}",
                       how="histogram_lab.byte_ladders and best_rows: every rung, checked "
                       "against NumPy, the fastest", also=also, ms=b["median_ms"]))
    return out


def sort_group(run):
    n = 1 << run.size["sort_log2n"]
    rng = np.random.default_rng(3)
    out = []
    how = ("sort_lab.sort_rows and best_radix: the radix rungs (lsd_radix at each bits, "
           "onesweep) and CUB's, the fastest radix rung; the peers beside the table's best rung")
    for kind in SORT_KEYS:
        x = gl.to_device(sort_lab.distribution(kind, n, rng))
        rows = sort_lab.sort_rows(x, run.repeat("sort"), run.ceil["copy_gbps"],
                                  names=sort_lab.RADIX + ("cub",), peers=lambda v: v.best,
                                  keys=kind)
        del x
        best = sort_lab.best_radix(rows)
        timed = next((r for r in rows if r["peers_ms"]), {"peers_ms": {}})
        cub = next((r for r in rows if r["variant"] == "cub"), None)
        also = {"Gkeys/s": best["gkeys_per_s"]}
        if cub:
            also["x CUB rung"] = cub["median_ms"] / best["median_ms"]
        name = f"sort {pow2(n)} int32 keys, {SORT_KEYS[kind]}"
        for peer, label, target in (("cupy", "x cupy.sort", 1.0),
                                    ("torch", "x torch.sort (with indices)", 2.0)):
            note = DEVICE_PEER_NOTES[("sort", peer)]
            ms = peer_ms(timed["peers_ms"], peer, f"{peer}.sort")
            out.append(row(name, ms / best["median_ms"], ">=", target, label,
                           rung=best["variant"], how=how, also=also, note=note,
                           ms=best["median_ms"], peer_ms=ms))
    return out


def sgemm_group(run):
    s = run.size["sgemm"]
    matmul = linalg_lab.matmul_ladder([s], run.repeat("sgemm"),
                                      only=("cublas", "double_buffered", linalg_lab.TOP_RUNG))
    grid = linalg_lab.grid_sweep([s], matmul)
    best = linalg_lab.best_sgemm(matmul, grid, s)
    cublas = next(r for r in matmul if r["variant"] == "cublas")
    cupy = peer_ms(cublas["peers_ms"], "cupy", "cupy.matmul")
    also = {"x cuBLAS rung": best["frac_cublas"], "of FMA": best["frac_fma"],
            "GFLOP/s": best["gflops"]}
    if "torch" in cublas["peers_ms"]:
        also["x torch.matmul"] = cublas["peers_ms"]["torch"] / best["median_ms"]
    return [row(f"SGEMM f32 {s}^3", cupy / best["median_ms"], ">=", 0.9, "x CuPy's cuBLAS",
                rung=named(best), how="linalg_lab.matmul_ladder (cublas, double_buffered, the "
                "top rung), grid_sweep (every configuration of the top rung) and best_sgemm, "
                "as linalg_lab.py --sgemm-grid", also=also,
                note="cupy.matmul, FP32 (CUPY_TF32 unset); our cuBLAS rung and torch.matmul "
                "with TF32 off beside it", ms=best["median_ms"], peer_ms=cupy)]


def transpose_group(run):
    n = run.size["square"]
    rows = linalg_lab.transpose_ladder(n, run.repeat("transpose"))
    best = linalg_lab.best_transpose(rows)
    timed = next((r for r in rows if r["peers_ms"]), {"peers_ms": {}})
    also = {"GB/s": best["gbps"]}
    if "cupy" in timed["peers_ms"]:
        also["x cupy .T.copy()"] = timed["peers_ms"]["cupy"] / best["median_ms"]
    return [row(f"transpose f32 {n}^2", best["frac_copy"], ">=", 0.9, "of copy",
                rung=named(best), how="linalg_lab.transpose_ladder and best_transpose: every "
                "rung at every tile, the fastest", also=also, ms=best["median_ms"])]


def matvec_group(run):
    n = run.size["square"]
    cublas, best = linalg_lab.best_matvec(
        linalg_lab.matvec_ladder(n, run.repeat("matvec"), dtypes=(np.float32,)))
    also = {"of copy": best["frac_copy"]}
    if "torch" in cublas["peers_ms"]:
        also["x torch.mv"] = cublas["peers_ms"]["torch"] / best["median_ms"]
    return [row(f"matvec f32 {n}^2", cublas["median_ms"] / best["median_ms"], ">=", 1.0,
                "x cuBLAS SGEMV", rung=best["variant"], how="linalg_lab.matvec_ladder and "
                "best_matvec: the fastest hand-written rung against the cublas rung (SGEMV)",
                also=also, ms=best["median_ms"], peer_ms=cublas["median_ms"])]


def stencil3d_group(run):
    m = run.size["cube"]
    rows = stencil_lab.stencil_ladder((m, m, m), "laplace7", run.repeat("stencil3d"))
    best = stencil_lab.best(rows)
    timed = next((r for r in rows if r["peers_ms"]), {"peers_ms": {}})
    also = {"GB/s": best["gbps"]}
    also.update({f"x {'cupyx.ndimage' if k == 'cupy' else 'torch conv3d'}": ms / best["median_ms"]
                 for k, ms in timed["peers_ms"].items()})
    return [row(f"stencil 7-point f32 {m}^3", best["frac_copy"], ">=", 0.85, "of copy",
                rung=best["variant"], how="stencil_lab.stencil_ladder and best: every rung, the "
                "fastest (8 B a cell: u read, out written)", also=also, ms=best["median_ms"])]


def jacobi_group(run):
    n, sweeps = run.size["square"], run.size["sweeps"]
    r = stencil_lab.jacobi_ladder((n, n), sweeps, run.repeat("jacobi"), run.ceil["copy_gbps"],
                                  names=("fused",))[0]
    also = {"ms per sweep": r["ms_per_sweep"], "of copy at 8 B a cell": r["grid_frac_copy"]}
    if "cupy" in r["peers_ms"]:
        also["x CuPy ElementwiseKernel sweeps"] = r["over_cupy"]
    return [row(f"Jacobi 2D f32 {n}^2, fused, per sweep", r["frac_copy"], ">=", 0.9,
                "of copy", rung=r["variant"], how=f"stencil_lab.jacobi_ladder(names=('fused',)):"
                f" {sweeps} sweeps a call, residual every {stencil_lab.CHECK_EVERY}; 12 B a cell "
                "a sweep (u and f read, u_new written)", also=also, ms=r["median_ms"])]


def gaussian_group(run):
    side = run.size["image"]
    rows = image_lab.gaussian_ladder(image_lab.filter_image(side), run.repeat("gaussian"))
    fused = image_lab.pick(rows, op="gaussian", variant="fused_separable")
    cupy = peer_ms(fused["peers_ms"], "cupy", "cupyx gaussian_filter")
    also = {"GB/s": fused["gbps"]}
    if "torch" in fused["peers_ms"]:
        also["x torch conv2d"] = fused["over_torch"]
    return [row(f"Gaussian sigma 2 f32 {side}^2", cupy / fused["median_ms"], ">=", 8.0,
                "x cupyx gaussian_filter", rung=fused["variant"],
                how="image_lab.gaussian_ladder: the lab's best rung, by name", also=also,
                note="cupyx.scipy.ndimage.gaussian_filter, mode reflect, truncate 4",
                ms=fused["median_ms"], peer_ms=cupy)]


def nbody_group(run):
    n = run.size["bodies"]
    pos, _, mass = gl.plummer(n, seed=1)
    dpos, dmass = gl.to_device(pos), gl.to_device(mass)
    timed = [(v, t, nbody_ladder.bench_config(dpos, dmass, v, t, run.repeat("nbody")))
             for v, t in nbody_ladder.rows()]
    variant, tunables, r = max(timed, key=lambda vtr: vtr[2].size / vtr[2].median_ms)
    ginter = r.size / r.median_ms / 1e6
    bound = nbody_ladder.issue_limit(run.info, variant, tunables)
    interaction = nbody_ladder.interaction_bound(run.info)
    lim = nbody_ladder.limits(run.info, run.ceil)
    return [row(f"n-body N={n}", ginter / interaction, ">=", 0.9,
                f"of the {nbody_ladder.INTERACTION_SLOTS}-instruction interaction's issue bound",
                rung=rung_of(r),
                how="nbody_ladder.rows and bench_config: every configuration of the ladder, the "
                f"fastest; nbody_ladder.interaction_bound: {nbody_ladder.ISSUE_PER_SM} thread "
                "instructions a clock an SM x SMs x clock over the "
                f"{nbody_ladder.INTERACTION_SLOTS} of one interaction; the kernel's own bound "
                "(nbody_ladder.issue_limit) over the slots per interaction counted in its SASS",
                also={"G interactions/s": ginter, "G/s interaction bound": interaction,
                      "G/s kernel's own issue bound": bound["issue_limit_ginter"],
                      "of the kernel's own issue bound": ginter / bound["issue_limit_ginter"],
                      "slots per interaction": bound["slots_per_interaction"],
                      "of the FP32 FMA limit": ginter / lim["fma_limit_ginter"]},
                note=f"{bound['kernel']}; {run.info['multiprocessors']} SMs at "
                f"{run.info['clock_mhz']:.0f} MHz; no L2 flush (compute-bound)",
                ms=r.median_ms)]


CALLS = {"issue": "gl.reduce(x) on a device array: the host's time to issue the call",
         "item": "gl.reduce(x).item() on a device array: the sum back on the host",
         "numpy": "gl.reduce(x) on a NumPy array: copied in, summed, a NumPy scalar back"}


def call_group(run):
    calls = run.size["calls"]
    x = np.random.default_rng(0).standard_normal(call_overhead.N, dtype=np.float32)
    r = call_overhead.reduce_overhead(x, calls, max(1, calls // 4))
    how = ("call_overhead.reduce_overhead: host perf_counter over a loop of calls, median of 5 "
           "rounds")
    out = []
    for kind, label, target in (("issue", "issued async", 5.0), ("item", ".item()", 12.0),
                                ("numpy", "NumPy in", 25.0)):
        ours = r[f"reduce_gpulab_{kind}_us"]
        also = {f"µs by {lib}": r[f"reduce_{lib}_{kind}_us"] for lib in ("torch", "cupy")
                if f"reduce_{lib}_{kind}_us" in r}
        out.append(row(f"reduce of {call_overhead.N} f32 per call, {label}", ours, "<=", target,
                       unit="µs", rung="variant=None", how=how, also=also, note=CALLS[kind]))
    return out


# name: (function, what it measures)
GROUPS = {
    "reduce": (reduce_group, "reduce float32, best rung, x torch.sum"),
    "saxpy": (saxpy_group, "saxpy float32, best rung and block, of copy"),
    "scan": (scan_group, "scan float32, best rung, of copy and x torch.cumsum"),
    "compact": (compact_group, "compaction keeping half, x torch.masked_select"),
    "histogram": (histogram_group, "histogram uint8 uniform and 90% skewed, GB/s"),
    "sort": (sort_group, "sort int32, 4 key distributions, x cupy.sort and x torch.sort"),
    "sgemm": (sgemm_group, "SGEMM, best hand-written configuration, x CuPy's cuBLAS"),
    "transpose": (transpose_group, "transpose float32, of copy"),
    "matvec": (matvec_group, "matvec float32, x cuBLAS SGEMV"),
    "stencil3d": (stencil3d_group, "3D 7-point stencil, of copy"),
    "jacobi": (jacobi_group, "2D Jacobi, fused, per sweep, of copy"),
    "gaussian": (gaussian_group, "Gaussian sigma 2, x cupyx"),
    "nbody": (nbody_group, "n-body, best configuration, of the interaction's issue bound"),
    "call": (call_group, "reduce of 1K floats per call: async, .item(), NumPy in"),
}


def parse(argv=None):
    groups = "\n".join(f"  {name:10s} {what}" for name, (_, what) in GROUPS.items())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=f"groups:\n{groups}")
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes, {QUICK_REPEAT} repetitions (a check of the script, "
                        "not a measurement), saved as targets_quick.json")
    parser.add_argument("--only", help="comma-separated groups (default: all)")
    parser.add_argument("--repeat", type=int, help="repetitions for every group (default: each "
                        "lab benchmark's own)")
    args = parser.parse_args(argv)
    args.groups = args.only.split(",") if args.only else list(GROUPS)
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown groups {unknown}; known: {', '.join(GROUPS)}")
    return args


def show(r):
    target = f"{r['target']['op']} {r['target']['value']:g}"
    unit = r["ratio"] or r["unit"]
    return (f"{r['name']}: {r['figure']:.3g} {unit} (target {target}: "
            f"{'met' if r['met'] else 'NOT met'}; {r['rung']})")


def main(argv=None):
    args = parse(argv)
    require_gpu()
    started = time.perf_counter()
    run = Run(args.quick, args.repeat)
    name = "targets_quick" if args.quick else "targets"
    info = run.info
    progress(f"{info['name']}: copy {run.ceil['copy_gbps']:.0f} GB/s, FMA "
             f"{run.ceil['fma_gflops']:.0f} GFLOP/s; groups: {', '.join(args.groups)}")
    settings = {
        "quick": args.quick, "groups": args.groups, "sizes": run.size,
        "repeats": {g: run.repeat(g) for g in args.groups if g in LAB_REPEAT},
        "calls": f"per-call group: {run.size['calls']} calls a round "
                 f"({max(1, run.size['calls'] // 4)} with .item() or NumPy in)",
        "ceilings": {"copy_gbps": run.ceil["copy_gbps"], "fma_gflops": run.ceil["fma_gflops"]},
        "timing": "CUDA events around each call on device arrays (gl.bench): warm-up, then the "
                  "median; the L2 flushed before each repetition, ours and the peers', except "
                  "n-body (compute-bound, bodies in L2) and the per-call group (host "
                  "perf_counter around loops of calls)",
    }
    rows, errors, seconds = [], {}, {}
    for i, group in enumerate(args.groups, 1):
        t0 = time.perf_counter()
        try:
            got = GROUPS[group][0](run)
        except (Exception, SystemExit) as e:  # noqa: BLE001 (the rest still runs)
            traceback.print_exc()
            got, errors[group] = [], f"{type(e).__name__}: {e}"
        seconds[group] = round(time.perf_counter() - t0, 1)
        for r in got:
            r["group"] = group
        rows += got
        progress(f"[{i}/{len(args.groups)}] {group}: {seconds[group]} s, "
                 f"{time.perf_counter() - started:.0f} s in all")
        for r in got:
            progress("    " + show(r))
        if group in errors:
            progress(f"    FAILED: {errors[group]}")
        gl.release_memory()
        complete = i == len(args.groups) and set(args.groups) == set(GROUPS) and not errors
        save(name, {**settings, "complete": complete, "seconds": seconds},
             {"rows": rows, "errors": errors}, quiet=i < len(args.groups))
    met = sum(r["met"] for r in rows)
    print(gl.Table([{"figure": r["name"], "measured": r["figure"], "unit": r["ratio"] or r["unit"],
                     "target": f"{r['target']['op']} {r['target']['value']:g}",
                     "met": r["met"], "rung": r["rung"]} for r in rows]))
    print(f"{met} of {len(rows)} targets met in {time.perf_counter() - started:.0f} s"
          + (f"; groups that failed: {', '.join(errors)}" if errors else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
