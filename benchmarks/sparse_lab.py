"""The sparse lab's SpMV and SpMM ladders on the GPU, in one run, against cuSPARSE (spmv 7, spmm 2,
and CuPy's csr_matrix @ x / @ B) and torch.sparse (torch.mv / torch.mm on a sparse CSR tensor) on
the same arrays:

  * the 5-point Laplacian of a 4096 x 4096 grid (16.8 M rows, 84 M nonzeros);
  * the power-law matrix: 2^22 rows, lognormal row lengths of mean 15 (about 63 M nonzeros).

float32 values, int32 indices. GB/s under the byte model of benchmarks/NOTES.md ("Sparse lab"):
each variant's own bytes (gl.sparse.spmv_bytes: CSR's arrays, x and y once, plus what the
in-call ELL / SELL / COO conversion writes and then reads), and GFLOP/s at 2 flops a nonzero.
ELL and SELL variants are left out (and say so) where an ELL-sized scratch would pass a quarter
of the device's memory (the power-law matrix's longest row is about 1350 nonzeros: 45 GB). The
issue's targets: the best SpMV >= 1.1x cuSPARSE on the Laplacian and >= 1.2x on the power-law
matrix. GPU times are CUDA events on device arrays (gl.bench), L2 flushed before each
repetition.

SpMM: B of 8 and 32 columns (row-major), on both matrices, every CUDA variant; its byte model
(gl.sparse.spmm_bytes) reads A once, B once and writes C once. CG is not in this lab yet (a
later task).

    python benchmarks/sparse_lab.py [--repeat 10] [--quick]
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


def summarize(results):
    out = {}
    for name, res in results.items():
        if name == "spmm":
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
    args = ladder_args()
    settings = {"repeat": args.repeat, "poisson_n": 256 if args.quick else 4096,
                "powerlaw_rows": 2**14 if args.quick else 2**22, "powerlaw_mean": 15,
                "dtype": "float32"}
    ceilings = gl.ceilings()
    memory = gl.device_info()["total_memory"]
    print(gl.device_info()["name"], settings, "copy", ceilings["copy_gbps"], "GB/s")
    matrices = {
        "poisson2d": gl.sparse.poisson2d(settings["poisson_n"], dtype=np.float32),
        "powerlaw": gl.sparse.powerlaw(settings["powerlaw_rows"], settings["powerlaw_mean"],
                                       seed=0, dtype=np.float32),
    }
    results = {}
    for name, A in matrices.items():
        results[name] = ladder(name, A, args.repeat, memory)
        print(name, A, results[name]["advice"]["reason"])
        print(gl.Table(results[name]["ladder"]))
    results["spmm"] = [row for name, A in matrices.items()
                       for row in spmm_ladder(name, A, args.repeat)]
    print(gl.Table(results["spmm"]))
    summary = summarize(results)
    print(summary)
    save("sparse_lab", settings, {"copy_gbps": ceilings["copy_gbps"], "summary": summary,
                                  **results})


if __name__ == "__main__":
    main()
