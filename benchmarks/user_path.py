"""The table users read: every op's default call (no variant=) on each container a user passes,
host wall-clock from the call to the result where the input was, beside the peer's natural call
on the same data and the best rung on the benchmark path (gpulab/user_path.py says how each is
timed), then the named cases users hit: spmv on a cupyx matrix (5-point Laplacian 4096^2 float64,
an R-MAT graph of scale 22, gl.sparse.powerlaw), cg per iteration against cupyx's cg, gl.jacobi
against a CuPy ElementwiseKernel sweep, gl.multi.jacobi on 2 GPUs against gl.jacobi on one.

Without a GPU it runs the CPU paths (NumPy and scipy.sparse inputs against NumPy/SciPy) at the
ops' CPU demo sizes and saves user_path_cpu.json; --quick saves user_path[_cpu]_quick.json: a
CPU or quick run never overwrites the GPU table that docs/labs/README.md points at.

    python benchmarks/user_path.py [--quick] [--budget 1.0] [--ops spmv,cg]
"""

import argparse
import os
import statistics

import numpy as np

import gpulab as gl
from common import progress, save
from gpulab import user_path as up
from gpulab._op import OPS


def rmat(scale, edge_factor, a, b, c, seed):
    """The Graph500 R-MAT generator in CuPy (gl.sparse.rmat's stand-in where it is missing):
    each edge picks a quadrant per bit of its row and column; duplicates summed, values 1."""
    import cupy
    import cupyx.scipy.sparse as cs
    rng = cupy.random.default_rng(seed)
    m = edge_factor << scale
    rows, cols = cupy.zeros(m, cupy.int64), cupy.zeros(m, cupy.int64)
    for bit in range(scale):
        r = rng.random(m, dtype=cupy.float32)
        down = r >= a + b  # quadrants c and d: the row's bit is set
        right = ((r >= a) & (r < a + b)) | (r >= a + b + c)  # quadrants b and d
        rows |= down.astype(cupy.int64) << bit
        cols |= right.astype(cupy.int64) << bit
    ones = cupy.ones(m, cupy.float32)
    return cs.coo_matrix((ones, (rows, cols)), shape=(1 << scale, 1 << scale)).tocsr()


def cupyx_of(A):
    return up.to_container(A, "cupyx")


def spmv_case(label, A_cx, rows, budget):
    """gl.spmv on the cupyx matrix against A @ x, both wall-clock on CuPy's stream."""
    import cupy
    x = cupy.asarray(np.random.default_rng(5).standard_normal(A_cx.shape[1]), A_cx.dtype)
    ours = up.wall_ms(lambda: gl.spmv(A_cx, x), up.finisher("cupy"), budget)
    peer = up.wall_ms(lambda: A_cx @ x, up.peer_finisher("cupy"), budget)
    rows.append({"case": label, "container": "cupyx", "nnz": int(A_cx.nnz),
                 "default_ms": ours["median_ms"], "peer": "cupyx", "peer_how": "A @ x",
                 "peer_ms": peer["median_ms"], "peer_over_ours": peer["median_ms"] /
                 ours["median_ms"]})
    progress(rows[-1])


def named_cases(budget, quick):
    import cupy
    rows, notes = [], {}
    side = 256 if quick else 4096
    lap = gl.sparse.poisson2d(side, dtype=np.float64)
    lap_cx = cupyx_of(lap)
    spmv_case(f"spmv 5-point Laplacian {side}^2 float64", lap_cx, rows, budget)
    scale = 12 if quick else 22
    if hasattr(gl.sparse, "rmat"):
        graph = cupyx_of(gl.sparse.rmat(scale, 16, 0.57, 0.19, 0.19, 1))
        notes["rmat"] = "gl.sparse.rmat"
    else:
        graph = rmat(scale, 16, 0.57, 0.19, 0.19, 1)
        notes["rmat"] = "built in benchmarks/user_path.py with CuPy (gl.sparse.rmat missing)"
    spmv_case(f"spmv R-MAT scale {scale}, edge factor 16, float32", graph, rows, budget)
    rows_pl = 1 << (10 if quick else 22)  # the sparse lab's power-law matrix: mean 15 a row
    spmv_case(f"spmv gl.sparse.powerlaw {rows_pl} rows, mean 15, float32",
              cupyx_of(gl.sparse.powerlaw(rows_pl, 15, seed=1, dtype=np.float32)), rows, budget)
    # cg: fixed iterations (rtol = atol = 0), times per iteration
    iters = 10 if quick else 50
    b = cupy.asarray(np.random.default_rng(6).standard_normal(lap.shape[0]))
    cupy_cg = OPS["cg"].__gpulab_op__.peers["cupy"]
    lap_dev = lap.to_device()
    for M in (None, "jacobi"):
        ours = up.wall_ms(lambda: gl.cg(lap_cx, b, rtol=0.0, atol=0.0, maxiter=iters, M=M),
                          up.finisher("cupy"), budget)
        peer = up.wall_ms(cupy_cg(lap_dev, gl.from_dlpack(b), rtol=0.0, atol=0.0, maxiter=iters,
                                  M=M), up.peer_finisher("cupy"), budget)
        rows.append({"case": f"cg M={M} Laplacian {side}^2 float64, per iteration",
                     "container": "cupyx", "default_ms": ours["median_ms"] / iters,
                     "peer": "cupyx", "peer_how": up.DEVICE_PEER_NOTES[("cg", "cupy")] +
                     ("" if M else " (M=None)"), "peer_ms": peer["median_ms"] / iters,
                     "peer_over_ours": peer["median_ms"] / ours["median_ms"]})
        progress(rows[-1])
    jacobi_cases(rows, budget, quick)
    return rows, notes


def jacobi_cases(rows, budget, quick):
    import cupy
    side, sweeps = (256, 20) if quick else (4096, 200)
    f = np.random.default_rng(7).standard_normal((side, side)).astype(np.float32)
    fc, fd = cupy.asarray(f), gl.to_device(f)
    peer = OPS["jacobi"].__gpulab_op__.peers["cupy"](fd, None, 1.0, sweeps)
    ours = up.wall_ms(lambda: gl.jacobi(fc, iters=sweeps), up.finisher("cupy"), budget)
    theirs = up.wall_ms(peer, up.peer_finisher("cupy"), budget)
    rows.append({"case": f"jacobi {side}^2 float32, {sweeps} sweeps", "container": "cupy",
                 "default_ms": ours["median_ms"], "peer": "cupy",
                 "peer_how": up.DEVICE_PEER_NOTES[("jacobi", "cupy")],
                 "peer_ms": theirs["median_ms"],
                 "peer_over_ours": theirs["median_ms"] / ours["median_ms"]})
    progress(rows[-1])
    if len(gl.devices()) < 2 or not hasattr(gl, "multi") or not hasattr(gl.multi, "jacobi"):
        return
    side = 1024 if quick else 16384
    f = np.random.default_rng(8).standard_normal((side, side)).astype(np.float32)
    for kind in ("gpulab", "cupy", "numpy"):
        fk = up.to_container(f, kind)
        finish = up.finisher(kind)
        row = {"case": f"multi.jacobi 2 GPUs {side}^2 float32, {sweeps} sweeps",
               "container": kind, "peer": "gl.jacobi on one GPU",
               "peer_how": "gl.jacobi(f, iters=...)"}
        timings = []
        # a NumPy call takes 0.1-0.8 s: 3 s gives it the 3 samples a median needs
        each = budget if quick or kind != "numpy" else max(budget, 3.0)

        def two_gpus():
            result = gl.multi.jacobi(fk, iters=sweeps, gpus=[0, 1])
            timings.append(result.timing)
            return result

        try:
            two = up.wall_ms(two_gpus, finish, each, cold_ok=False)
            one = up.wall_ms(lambda: gl.jacobi(fk, iters=sweeps), finish, each, cold_ok=False)
            row.update(default_ms=two["median_ms"], peer_ms=one["median_ms"],
                       peer_over_ours=one["median_ms"] / two["median_ms"],
                       timing_ms=parts_of(timings[1:]))  # the first call is the warm-up
            if kind == "numpy":
                row["one_gpu_copies_ms"] = host_copies_ms(f, each)
        except Exception as e:  # noqa: BLE001 (a failing call is a finding of the table)
            row["default_error"] = f"{type(e).__name__}: {e}"
        row["host_load_1min"] = os.getloadavg()[0]
        rows.append(row)
        progress(rows[-1])


def parts_of(timings):
    """The medians of gl.multi.jacobi's timing parts (call, upload, scatter, solve, gather,
    download) over the timed calls: where a whole call's time went."""
    keys = ("call_ms", "upload_ms", "scatter_ms", "total_ms", "gather_ms", "download_ms")
    return {k: statistics.median(t[k] for t in timings) for k in keys
            if timings and all(k in t for t in timings)}


def host_copies_ms(f, budget):
    """What gl.jacobi's NumPy call spends copying on one GPU: f up (gl.to_device, waited for)
    and a fresh result down (.get()), wall-clock medians."""
    up_ms = up.wall_ms(lambda: gl.to_device(f), up.finisher("gpulab"), budget / 2,
                       cold_ok=False)
    d = gl.to_device(f)
    down_ms = up.wall_ms(lambda: d.get(), None, budget / 2, cold_ok=False)
    return {"upload_ms": up_ms["median_ms"], "download_ms": down_ms["median_ms"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes (a check of the script, not a measurement)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds per op, shared by its measurements (default 1.5; "
                             "--quick 0.1)")
    parser.add_argument("--ops", help="comma-separated ops (default: all)")
    args = parser.parse_args(argv)
    gpu = gl.cuda_available()
    ops = args.ops.split(",") if args.ops else list(OPS)
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        parser.error(f"unknown ops {unknown}; known: {list(OPS)}")
    budget = args.budget or (0.1 if args.quick else 1.5)
    scale = 1 / 256 if args.quick else 1.0
    progress("user path on the GPU" if gpu else f"user path on the CPU: {gl.gpu_status()}")
    name = "user_path" + ("" if gpu else "_cpu") + ("_quick" if args.quick else "")
    settings = {"gpu": gpu, "quick": args.quick, "budget_s_per_op": budget, "scale": scale,
                "ops": ops,
                "timing": "host perf_counter from the call until the result is available: "
                          "NumPy results on return; device inputs: gpulab's stream "
                          "synchronized (the result is a DeviceArray on it, ordered after the "
                          "container library's stream); peers: CuPy's current stream or "
                          "torch.cuda.synchronize(); the first call "
                          "of each is a warm-up, not a sample (except a host call slower than "
                          "the budget: cold). best_ms: gl.bench of the op's best rung on "
                          "DeviceArray inputs (CUDA events, L2 flushed); gap = default_ms / "
                          "best_ms"}
    # the named cases first (the targets), then every op; saved after each, marked complete
    # at the end, so a run cut short leaves what it measured
    cases, notes = named_cases(budget / 4, args.quick) if gpu else ([], {})
    settings["notes"] = notes
    if cases:
        print(gl.Table([{k: r.get(k) for k in ("case", "container", "default_ms", "peer",
                                               "peer_ms", "peer_over_ours")} for r in cases]))
    rows = []
    for op in ops:
        rows += up.user_path_rows([op], gpu, budget, scale, progress)
        save(name, {**settings, "complete": False}, {"ops": rows, "cases": cases}, quiet=True)
    print(up.table(rows))
    return save(name, {**settings, "complete": True}, {"ops": rows, "cases": cases})


if __name__ == "__main__":
    main()
