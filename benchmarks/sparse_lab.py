"""The sparse lab's SpMV and SpMM ladders on the GPU, in one run, against cuSPARSE (spmv 7, spmm 2,
and CuPy's csr_matrix @ x / @ B) and torch.sparse (torch.mv / torch.mm on a sparse CSR tensor) on
the same arrays:

  * the 5-point Laplacian of a 4096 x 4096 grid (16.8 M rows, 84 M nonzeros);
  * the power-law matrix: 2^22 rows, lognormal row lengths of mean 15 (about 63 M nonzeros).

float32 values, int32 indices. GB/s under the lab's byte model (docs/labs/sparse.md): each variant's
own bytes (gl.sparse.spmv_bytes: CSR's arrays, x and y once, plus what the in-call ELL / SELL / COO
conversion writes and then reads), and GFLOP/s at 2 flops a nonzero. csr_subwarp runs once with its
lanes rule and once with each lanes value (rows with "lanes"). ELL and SELL variants are left out
(and say so) where an ELL-sized scratch would pass a quarter of the device's memory (the power-law
matrix's longest row is about 1350 nonzeros: 45 GB). The targets: the best SpMV >= 1.1x cuSPARSE on
the Laplacian and >= 1.2x on the power-law matrix. GPU times are CUDA events on device arrays
(gl.bench), L2 flushed before each repetition.

SpMM: B of 8 and 32 columns (row-major), on both matrices, every CUDA variant; its byte model
(gl.sparse.spmm_bytes) reads A once, B once and writes C once.

CG: the 5-point Laplacian of 4096 x 4096 in float64, every CUDA variant with and without Jacobi and
cupyx.scipy.sparse.linalg.cg (Jacobi as a LinearOperator) in the same run: rtol = 0 and maxiter
fixed (200; 20 with --quick), so every solver runs the same iterations, and the time per iteration
is the whole call's wall time over its iterations (the median of --repeat calls; setup included, 1-2
iterations' worth). GB/s under gl.sparse.cg_iteration_bytes. Then one call per variant with
phases=True: the operator / reductions / updates split per iteration (those calls end each iteration
with a host wait, so their total is not the untimed one). The target: the best variant <= 0.5x
cupy's time per iteration (time_over_cupy), with x within rounding of cupy's. dia_fused's GB/s count
its own bytes (its diagonals and 9 vector passes, 11 with Jacobi).

    python benchmarks/sparse_lab.py [--repeat 10] [--quick] [--cg-only]
"""

import numpy as np

import gpulab as gl
from common import ladder_args, save


def row(r, matrix, A, **extra):
    peers = {name: p["median_ms"] for name, p in (r.peers or {}).items()}
    return {**extra, "matrix": matrix, "rows": A.shape[0], "nnz": A.nnz, "variant": r.variant_name,
            "id": r.variant, "median_ms": r.median_ms, "min_ms": r.min_ms, "max_ms": r.max_ms,
            "bytes": gl.sparse.spmv_bytes(A, r.variant), "gbps": r.gbps, "gflops": r.gflops,
            "frac_copy": r.frac_copy, "peers_ms": peers,
            **{f"over_{name}": ms / r.median_ms for name, ms in peers.items()}}


def ladder(name, A, repeat, memory_bytes):
    rng = np.random.default_rng(3)
    dA = A.to_device()
    x = gl.to_device(rng.standard_normal(A.shape[1]).astype(A.dtype))
    advice = gl.sparse_format_advice(A)
    rows, skipped = [], []
    for v in gl.variants("spmv"):
        if v.backend != "cuda":
            continue
        ell_bytes = A.shape[0] * A.max_row * (A.index_dtype.itemsize + A.dtype.itemsize)
        if v.name in ("ell_column_major", "ell_row_major", "sell_c_sigma") and \
                ell_bytes > memory_bytes / 4:
            skipped.append({"variant": v.name, "reason": f"ELL-sized scratch of "
                            f"{ell_bytes / 2**30:.1f} GiB (max row {A.max_row})"})
            continue
        r = gl.bench(gl.spmv, dA, x, variant=v.id, repeat=repeat, peers=v.name == "cusparse")
        rows.append(row(r, name, A))
        # csr_subwarp (8): the row above is its lanes rule's choice; then each lanes value, the
        # sweep that tests the rule (docs/labs/sparse.md)
        for lanes in v.tunables.get("lanes", {}).get("values", []):
            r = gl.bench(gl.spmv, dA, x, variant=v.id, lanes=lanes, repeat=repeat)
            rows.append(row(r, name, A, lanes=lanes))
    return {"advice": advice, "ladder": rows, "skipped": skipped}


def spmm_ladder(name, A, repeat):
    rng = np.random.default_rng(4)
    dA = A.to_device()
    rows = []
    for k in (8, 32):
        B = gl.to_device(rng.standard_normal((A.shape[1], k)).astype(A.dtype))
        for v in gl.variants("spmm"):
            if v.backend != "cuda":
                continue
            r = gl.bench(gl.spmm, dA, B, variant=v.id, repeat=repeat, peers=v.name == "cusparse")
            peers = {p: q["median_ms"] for p, q in (r.peers or {}).items()}
            rows.append({"matrix": name, "k": k, "variant": r.variant_name, "id": r.variant,
                         "median_ms": r.median_ms, "bytes": gl.sparse.spmm_bytes(A, k),
                         "gbps": r.gbps, "gflops": r.gflops, "peers_ms": peers})
    return rows


def wall_ms(call, repeat):
    """Median wall milliseconds of call() (which returns when the work is done) over repeat
    calls, after one warm-up."""
    import time
    call()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def cupy_cg(A, b, iterations, jacobi):
    """A zero-argument call of cupyx.scipy.sparse.linalg.cg on A's device arrays (rtol = 0,
    `iterations` iterations) that returns x once the device is done; None without CuPy."""
    try:
        import cupy
        import cupyx.scipy.sparse.linalg as csl
    except ImportError:
        return None
    m = gl.sparse._cupy_matrix(A)
    cb = cupy.asarray(b)
    pre = None
    if jacobi:
        inv = 1.0 / m.diagonal()
        pre = csl.LinearOperator(m.shape, matvec=lambda v: inv * v, dtype=m.dtype)
    try:
        csl.cg(m, cb, rtol=0.0, atol=0.0, maxiter=1, M=pre)
        kw = {"rtol": 0.0}
    except TypeError:
        kw = {"tol": 0.0}

    def call():
        x, _ = csl.cg(m, cb, atol=0.0, maxiter=iterations, M=pre, **kw)
        cupy.cuda.get_current_stream().synchronize()
        return x
    return call


def cg_ladder(A, iterations, repeat):
    rng = np.random.default_rng(5)
    dA = A.to_device()
    b_host = rng.standard_normal(A.shape[0]).astype(A.dtype)
    b = gl.to_device(b_host)
    rows = []
    for M in (None, "jacobi"):
        peer = cupy_cg(A, b_host, iterations, M == "jacobi")
        peer_ms = wall_ms(peer, repeat) / iterations if peer else None
        x_peer = peer().get() if peer else None
        for v in gl.variants("cg"):
            if v.backend != "cuda":
                continue
            per_iteration_bytes = gl.sparse.cg_iteration_bytes(A, M == "jacobi", v.id)
            res = gl.cg(dA, b, rtol=0.0, maxiter=iterations, M=M, variant=v.id)
            assert res.iterations == iterations, (v.name, res.iterations)
            ms = wall_ms(lambda: gl.cg(dA, b, rtol=0.0, maxiter=iterations, M=M,
                                       variant=v.id), repeat) / iterations
            timed = gl.cg(dA, b, rtol=0.0, maxiter=iterations, M=M, variant=v.id, phases=True)
            x = res.x.get()
            diff = (float(np.linalg.norm(x - x_peer) / np.linalg.norm(x_peer))
                    if x_peer is not None else None)
            rows.append({"M": M or "none", "variant": v.name, "id": v.id,
                         "ms_per_iteration": ms, "gbps": per_iteration_bytes / ms / 1e6,
                         "bytes_per_iteration": per_iteration_bytes,
                         "phases_ms_per_iteration": {k: t / iterations
                                                     for k, t in timed.phases.items()},
                         "residual": float(res.residuals[-1]),
                         "cupy_ms_per_iteration": peer_ms,
                         "over_cupy": peer_ms / ms if peer_ms else None,
                         "time_over_cupy": ms / peer_ms if peer_ms else None,
                         "x_rel_diff_vs_cupy": diff})
    return rows


def summarize(results):
    out = {}
    for name, res in results.items():
        if name in ("spmm", "cg"):
            continue
        by = {r["variant"]: r for r in res["ladder"]}
        ref = by.get("cusparse")
        hand = [r for r in res["ladder"] if r["variant"] != "cusparse"]
        best = min(hand, key=lambda r: r["median_ms"]) if hand else None
        out[name] = {"best": best and best["variant"],
                     "best_over_cusparse": ref and best and ref["median_ms"] / best["median_ms"],
                     "peers_ms": ref and ref["peers_ms"]}
    return out


def main():
    args = ladder_args(extra=lambda p: p.add_argument(
        "--cg-only", action="store_true", help="the cg ladder alone, into sparse_lab_cg.json"))
    settings = {"repeat": args.repeat, "poisson_n": 256 if args.quick else 4096,
                "powerlaw_rows": 2**14 if args.quick else 2**22, "powerlaw_mean": 15,
                "dtype": "float32"}
    ceilings = gl.ceilings()
    memory = gl.device_info()["total_memory"]
    print(gl.device_info()["name"], settings, "copy", ceilings["copy_gbps"], "GB/s")
    matrices = {} if args.cg_only else {
        "poisson2d": gl.sparse.poisson2d(settings["poisson_n"], dtype=np.float32),
        "powerlaw": gl.sparse.powerlaw(settings["powerlaw_rows"], settings["powerlaw_mean"],
                                       seed=0, dtype=np.float32),
    }
    results = {}
    for name, A in matrices.items():
        results[name] = ladder(name, A, args.repeat, memory)
        print(name, A, results[name]["advice"]["reason"])
        print(gl.Table(results[name]["ladder"]))
    if not args.cg_only:
        results["spmm"] = [row for name, A in matrices.items()
                           for row in spmm_ladder(name, A, args.repeat)]
        print(gl.Table(results["spmm"]))
    n = 256 if args.quick else 4096
    iterations = 20 if args.quick else 200
    settings.update(cg_n=n, cg_iterations=iterations, cg_dtype="float64")
    results["cg"] = cg_ladder(gl.sparse.poisson2d(n), iterations, args.repeat)
    print(gl.Table([{k: v for k, v in r.items() if k != "phases_ms_per_iteration"}
                    for r in results["cg"]]))
    summary = summarize(results)
    if results.get("cg"):
        best = min(results["cg"], key=lambda r: r["ms_per_iteration"])
        summary["cg"] = {"best": f"{best['variant']} M={best['M']}",
                         "best_ms_per_iteration": best["ms_per_iteration"],
                         "best_over_cupy": best["over_cupy"],
                         "best_time_over_cupy": best["time_over_cupy"]}
    print(summary)
    save("sparse_lab_cg" if args.cg_only else "sparse_lab", settings, {"copy_gbps": ceilings["copy_gbps"], "summary": summary,
                                  **results})


if __name__ == "__main__":
    main()
